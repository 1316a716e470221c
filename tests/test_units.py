"""The fast tier's pure functions, in process: the worker channel's frames, the result record, task lines, output
links, the Wilson interval, the registry's choice of benchmark, the jailed module's kit calls."""
import json
import os
from pathlib import Path

import pytest

from kit import harness
from kit import jailed
from kit import sandbox
from kit import suite
from kit import untrusted
from conftest import ROOT


def test_a_frame_round_trips_and_a_broken_one_is_refused():
    message = jailed.frame("token", "print('é')", "")
    fields, rest = sandbox.parse_frame(message + b"tail")
    assert fields == ["token", "print('é')", ""] and rest == b"tail"
    assert sandbox.parse_frame(message[:-1]) is None  # not all there yet
    assert sandbox.parse_frame((33).to_bytes(4, "big")) == "bad"  # more fields than any message has
    assert sandbox.parse_frame((1).to_bytes(4, "big") + (1 << 25).to_bytes(4, "big")) == "bad"  # a field past 16 MiB


def test_the_result_record_names_its_fields_once_and_round_trips():
    result = harness.Result("t1", "math", 0, 0, True, "", [], 2, "final answer", 1, 0, 1.5, 10, 5, "outputs/t1", [],
                            [{"role": "user", "content": "q"}], ["print(1)", None], ["1", None])
    line = result.to_json()
    assert list(line) == [key for key in harness.Result.KEY_ORDER if key in line]
    assert "corrected" not in line and "mlbench" not in line and "run_dir" not in line  # unset optional fields are not written
    assert harness.Result.from_json(json.loads(json.dumps(line))) == result
    with pytest.raises(harness.UsageError, match="not a result line"):
        harness.Result.from_json({"passed": True}, "x.jsonl, line 1")
    own = harness.Result("t2", "math", own={"mlbench": {"outcome": "exit 0"}, "task": "mean"})  # a benchmark's own fields
    line = own.to_json()
    assert line["mlbench"] == {"outcome": "exit 0"} and line["task"] == "mean" and "own" not in line and list(line)[-2:] == ["mlbench", "task"]
    again = harness.Result.from_json(json.loads(json.dumps(line)))
    assert again == own and again.get("task") == "mean" and again.get("category") == "math" and again.get("corrected") is None


def test_results_are_read_whole_lines_only_and_a_u2028_stays_inside_its_string(tmp_path):
    path = tmp_path / "results.jsonl"
    first = harness.Result("t1", "math", 0, 0, False, "a\u2028b", [], 1, "x", 0, 0, 0.0, 0, 0, "o", [], [], [])
    harness.append_line(path, first.to_json())
    path.write_text(path.read_text() + '{"id": "torn')  # a crash mid-line
    results = harness.read_results(path)
    assert [result.reason for result in results] == ["a\u2028b"]


@pytest.mark.parametrize("field, value, words", [
    ("category", "", "category"), ("files", ["../x"], "inside"), ("check", "nomodule", "module:function"),
    ("id", "a b", "letters"),
])
def test_a_bad_task_line_names_its_field(field, value, words):
    record = {"id": "t1", "category": "math", "query": "q", "files": [], "check": "maths:qa_total"} | {field: value}
    with pytest.raises(harness.UsageError, match=words):
        suite.task_from_record(record, "tasks.jsonl, line 1", ROOT / "tasks.jsonl", {})


@pytest.mark.parametrize("target, depth, inside", [
    ("a.csv", 0, True), ("sub/a.csv", 0, True), ("../a.csv", 1, True), ("../a.csv", 0, False), ("/etc/passwd", 3, False),
    ("a/../../b", 2, False), ("", 0, False),
])
def test_output_links_stay_inside(target, depth, inside):
    assert sandbox.link_stays_inside(target, depth) is inside


@pytest.mark.parametrize("passed, total", [(0, 3), (0, 24), (3, 3), (13, 13), (25, 25), (7, 10)])
def test_the_wilson_interval_holds_its_estimate(passed, total):
    low, high = harness.wilson(passed, total)
    assert 0 <= low <= passed / total <= high <= 1


def test_the_registry_picks_the_benchmark_from_tasks(tmp_path):
    import pybench

    (tmp_path / "split.jsonl").write_text(json.dumps({"github_id": 1, "arguments": "{}", "instruction": "i", "type": "Bash Script"}) + "\n")
    assert pybench.benchmark_for(ROOT / "tasks.jsonl").name == "suite"
    assert pybench.benchmark_for(tmp_path).name == "original"
    assert pybench.benchmark_for(tmp_path / "split.jsonl").name == "mlbench"
    assert pybench.benchmark_for(Path("anything.parquet")).name == "mlbench"


def test_the_jails_code_is_a_module_of_its_own_with_its_calls_as_data():
    assert set(jailed.KIT_CALLS) == {"check", "probe_imports", "run_bash", "run_as_mlbench"}
    assert "{" not in jailed.WORKER_BOOT.replace("{JAIL_FOLDER", "")  # nothing spliced into it but the folder
    assert (sandbox.worker_folder() / "jailed.py").read_text() == Path(jailed.__file__).read_text()


def test_the_figure_recorder_warns_as_when_it_was_sent_as_text():
    import warnings

    def recorder():
        def inner():
            warnings.warn("a masked element", UserWarning)
        inner()

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        jailed.as_its_own_text(recorder)()
    assert seen[0].filename == "<string>" and seen[0].lineno == 3  # the third line of its own text


def test_the_top_level_is_the_design_cards():
    """pybench.py, tasks.jsonl, files/, checks/, tests/, requirements.txt, LICENSE, README.md, docs/ and one folder of
    the kit's own (kit/); nothing else is tracked at the top."""
    import subprocess

    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, text=True, check=True).stdout.split("\0")
    top = {name.split("/")[0] for name in tracked if name and not name.startswith(".")}
    assert top <= {"pybench.py", "tasks.jsonl", "files", "checks", "tests", "requirements.txt", "LICENSE", "README.md", "docs", "kit"}


def test_importing_the_kit_makes_nothing_and_help_is_quick(tmp_path):
    """Importing pybench (and so every module of kit/) creates no file or folder under TMPDIR and starts no process;
    `--help` answers without a jail, a model or a cgroup."""
    import subprocess
    import sys
    import time

    probe = ("import os, pybench; from kit import sandbox, harness, report, classroom, mlbench, airgap, gpu; "
             "print(len(os.listdir(os.environ['TMPDIR'])))")
    environment = {**__import__("os").environ, "TMPDIR": str(tmp_path)}
    made = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, env=environment, timeout=60)
    assert made.returncode == 0 and made.stdout.strip() == "0", made.stderr[-2000:]
    assert not list(tmp_path.iterdir())
    started = time.monotonic()
    helped = subprocess.run([sys.executable, str(ROOT / "pybench.py"), "--help"], capture_output=True, text=True, cwd=ROOT,
                            env=environment, timeout=60)
    assert helped.returncode == 0 and "usage" in helped.stdout.lower() and not list(tmp_path.iterdir())
    assert time.monotonic() - started < 5  # well under a second on a quiet machine; the bound leaves room for a busy one


def test_category_selects_whatever_categories_the_tasks_have():
    """--category is not PyBench's five: a benchmark's own categories select, an unknown one names those it has."""
    tasks = [harness.Task(f"t{number}", category, "q", {}, [], "m", "f", ROOT) for number, category in enumerate(["week 1", "week 2", "week 1"])]
    assert [task.id for task in harness.select_tasks(tasks, None, "week 1", None)] == ["t0", "t2"]
    with pytest.raises(harness.UsageError, match="week 1, week 2"):
        harness.select_tasks(tasks, None, "chart", None)


def test_the_workers_parts_run_a_cell_show_its_value_and_report_a_failure_bounded(capfd):
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    assert jailed.run_cell("x = 6\nx * 7", "<cell 1>", "", namespace, None, os.getpid()) is None
    assert capfd.readouterr().out == "42\n" and namespace["x"] == 6
    assert jailed.run_cell("None", "<cell 2>", "", namespace, None, os.getpid()) is None and capfd.readouterr().out == ""
    sources = {"<cell 3>": "def f():\n    return 1 / 0\n", "<cell 4>": "f()"}
    jailed.run_cell(sources["<cell 3>"], "<cell 3>", "", namespace, None, os.getpid())
    error = jailed.run_cell(sources["<cell 4>"], "<cell 4>", "", namespace, None, os.getpid())
    report = jailed.failure_report(error, sources)
    assert report["status"] == "error" and report["type"] == "ZeroDivisionError" and report["message"] == "division by zero"
    assert "<cell 3>" in report["trace"] and "return 1 / 0" in report["trace"] and "jailed.py" not in report["trace"]
    assert jailed.failure_report(jailed.run_cell("raise KeyboardInterrupt", "<cell 5>", "", namespace, None, os.getpid()),
                                 {})["status"] == "interrupted"
    assert isinstance(jailed.run_cell("raise SystemExit(3)", "<cell 6>", "", namespace, None, os.getpid()), SystemExit)


def test_bounded_cuts_the_middle_and_names_an_unprintable_exception():
    assert jailed.bounded(lambda: "abc", 10) == "abc"
    cut = jailed.bounded(lambda: "a" * 50 + "b" * 50, 20)
    assert cut.startswith("a" * 10) and cut.endswith("b" * 10) and "[... 80 characters cut ...]" in cut

    class Unprintable(Exception):
        def __str__(self):
            raise RuntimeError("no")

    assert jailed.bounded(lambda: str(Unprintable()), 100) == "<unprintable: RuntimeError>"


WORKER_CHANNEL_PROBE = """
import os, sys
sys.path.insert(0, sys.argv[1])
from kit import jailed, sandbox
command_read, command_write = os.pipe()
result_read, result_write = os.pipe()
receive, send = jailed.worker_channel(command_read, result_write)
assert not os.get_inheritable(command_read) and not os.get_inheritable(result_write)
os.write(command_write, jailed.frame("token", "print(1)", "marker", "5", ""))
assert receive() == ["token", "print(1)", "marker", "5", ""]
send("token", status="ok")
assert sandbox.parse_frame(os.read(result_read, 1000)) == (["token", "status", "ok"], b"")
child = os.fork()
if child == 0:  # a process a cell forks holds neither end
    closed = []
    for fd in (command_read, result_write):
        try:
            os.fstat(fd)
        except OSError:
            closed.append(fd)
    os._exit(0 if len(closed) == 2 else 1)
assert os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) == 0
os.fstat(command_read)  # the worker's own ends stay open
print("ok")
"""


def test_the_worker_channel_carries_a_command_and_a_result_and_no_child_holds_it():
    import subprocess
    import sys

    probe = subprocess.run([sys.executable, "-c", WORKER_CHANNEL_PROBE, str(ROOT)], capture_output=True, text=True, timeout=60)
    assert probe.stdout == "ok\n", probe.stderr


def test_one_rule_names_every_file_the_kit_makes():
    assert untrusted.file_name("sub/dir/chart 1.png", ascii_only=True) == "sub_dir_chart_1.png"
    assert untrusted.file_name("José.mean", ascii_only=True) == "Jos_.mean" and untrusted.file_name("José.mean") == "José.mean"
    assert untrusted.file_name(".hidden") == "hidden" and untrusted.file_name("..") == "_" and untrusted.file_name("nul.txt") == "nul_.txt"
    long = untrusted.file_name("李" * 100, limit=120)
    assert len(long.encode()) <= 120 and long.endswith("李") and long != untrusted.file_name("李" * 101, limit=120)
    taken: set[str] = set()
    assert [untrusted.file_name(name, taken) for name in ("a", "A", "a")] == ["a", "A-2", "a-3"]


def test_the_figure_records_pieces_read_numbers_colours_texts_and_bars():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    values = jailed.value_readers(2000)
    assert values["colour"]((1, 0, 0.5, 1)) == "#ff0080ff" and values["colour"]("not a colour") == ""
    assert values["numbers"]([1, "x", 2.5, 4], 3) == [1.0, None, 2.5] and jailed.value_readers(2)["numbers"]([1, 2, 3]) == [1.0, 2.0] and values["colours"]([(0, 0, 0, 1)] * 5) == ["#000000ff"]
    renderer, place = [None], [None]
    texts = jailed.text_readers(values, renderer, place)
    figure, ax = plt.subplots()
    ax.bar(["a", "b"], [3, 5], color="#336699")
    ax.set_title("Sales")
    figure.canvas.draw()
    renderer[0], place[0] = figure.canvas.get_renderer(), (figure.dpi, 0.0, float(figure.get_size_inches()[1]))
    [title] = texts["marks_of"]([ax.title])
    assert title["text"] == "Sales" and title["box"] is not None
    entry = jailed.artist_readers(2000, values, texts)["axes_of"](ax)
    [bars] = entry["bars"]
    assert entry["title"] == "Sales" and [bar["height"] for bar in bars["bars"]] == [3.0, 5.0]
    assert {bar["color"] for bar in bars["bars"]} == {"#336699ff"}
    plt.close(figure)


def test_a_lock_is_held_by_one_process_until_it_dies(tmp_path):
    """The one file lock (a run directory's, the judge's): a second process on the same file is refused with the holder's pid, and the lock
    is free again once the holder is killed (kill -9: nothing of the holder's own tidies up)."""
    import signal
    import subprocess
    import sys

    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from pathlib import Path; from kit import harness; "
                               f"harness.hold_lock(Path({str(tmp_path / 'lock')!r}), str); print('held', flush=True); time.sleep(60)"],
                              cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(harness.UsageError, match=rf"^busy {holder.pid}$"):
            harness.hold_lock(tmp_path / "lock", lambda pid: f"busy {pid}")
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    lock = harness.hold_lock(tmp_path / "lock", str)  # this process holds it now, until it closes it
    assert (tmp_path / "lock").read_text() == f"{os.getpid()}\n"
    os.close(lock)
    harness.hold_lock(tmp_path / "lock", str)
    assert (tmp_path / "lock").read_text() == f"{os.getpid()}\n"


def test_json_errors_say_where_in_plain_words(tmp_path):
    """json's own messages may end in 'at' ('Unterminated string starting at'): the place is said once, not 'at at'."""
    from kit import classroom
    book = tmp_path / "cut.ipynb"
    book.write_text('{"cells": [{"source": "unterminated', encoding="utf-8")
    with pytest.raises(classroom.Unreadable) as refused:
        classroom.notebook_cells(book)
    assert "starting at line 1" in str(refused.value) and "at at" not in str(refused.value)
    broken = tmp_path / "results.jsonl"
    broken.write_text('{"id": "x\n', encoding="utf-8")
    with pytest.raises(harness.UsageError, match=r"starting at column \d") as refused:
        harness.jsonl_records(broken)
    assert "at at" not in str(refused.value)


def test_the_original_checkouts_three_figures_keep_a_space_after_each_label():
    from kit import original_pybench
    results = [harness.Result(str(number), "math", passed=number % 2 == 0) for number in range(4)]
    lines = original_pybench.tables(results, [{"suite_size": 4}]).text.splitlines()
    assert [line.split(":", 1)[0] for line in lines[:3]] == ["original way", "honest way", "corrected way"]
    assert all(line.split(":", 1)[1].startswith(" ") for line in lines[:3]), lines
