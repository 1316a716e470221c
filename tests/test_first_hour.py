"""The first hour of a new user (issue 23): help that helps, README examples that run, honest errors for the
environment, reports that survive edge cases."""
import shlex
from pathlib import Path

import pytest

from conftest import ROOT, hearing_ctrl_c, run_pybench

SUBCOMMANDS = ("setup", "pack", "doctor", "report", "judge", "validate", "grade", "handout", "check", "slurm", "far-serve")


def readme_commands() -> list[list[str]]:
    """The arguments after `pybench.py` of every command line in the README's bash blocks."""
    commands, in_block = [], False
    for line in (ROOT / "README.md").read_text().splitlines():
        if line.startswith("```"):
            in_block = line.strip() == "```bash"
            continue
        if in_block and "pybench.py" in line:
            for part in line.split("&&"):
                words = shlex.split(part, comments=True)
                if "pybench.py" in words:
                    commands.append(words[words.index("pybench.py") + 1:])
    return commands


@pytest.fixture
def nothing_runs(monkeypatch):
    """Every subcommand's work replaced by a tripwire: a --help that goes on to work fails the test."""
    import pybench
    from kit import report
    from kit import suite

    def tripwire(*args, **kwargs):
        raise AssertionError("the subcommand ran instead of printing its help")

    from kit import classroom
    from kit import judge

    for owner, name in ((judge, "judge_run"), (pybench, "setup"), (pybench, "doctor"), (pybench, "run_suite"), (suite, "validate"), (classroom, "folder_submissions"), (classroom, "load_tasks"),
                        (classroom, "file_submissions"), (report, "build_report"), (report, "summary_text")):
        monkeypatch.setattr(owner, name, tripwire)


def test_help_lists_the_subcommands_one_line_each(nothing_runs, capsys):
    import pybench

    with pytest.raises(SystemExit) as stopped:
        pybench.main(["--help"])
    assert stopped.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    for name in SUBCOMMANDS:
        described = [line for line in lines if line.split()[:1] == [name] and len(line.split()) > 3]
        assert len(described) == 1, (name, lines[-8:])


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_every_subcommands_help_prints_its_help_and_does_nothing_else(name, nothing_runs, capsys):
    import pybench

    with pytest.raises(SystemExit) as stopped:
        pybench.main([name, "--help"])
    assert stopped.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: pybench.py {name}"), out
    assert "%%" not in out


def test_an_unknown_only_id_suggests_the_closest_ones():
    from kit import harness
    from kit import suite

    tasks = suite.load_tasks(ROOT / "tasks.jsonl")
    with pytest.raises(harness.UsageError, match=r"chart-01.*did you mean charts-01"):
        harness.select_tasks(tasks, "chart-01,text-03", None, None)
    with pytest.raises(harness.UsageError) as far:
        harness.select_tasks(tasks, "zzzzzz", None, None)
    assert "did you mean" not in str(far.value)


def test_the_readmes_commands_parse_and_name_real_tasks(nothing_runs, capsys):
    """Every README command line: a run's flags parse and its selection names tasks of the suite; a subcommand's
    flags are its own (its parser reaches --help without an error)."""
    from kit import harness
    import pybench
    from kit import suite

    commands = readme_commands()
    assert len([words for words in commands if not words or words[0] not in SUBCOMMANDS]) >= 4, commands
    assert {"setup", "report"} <= {words[0] for words in commands if words}
    tasks = suite.load_tasks(ROOT / "tasks.jsonl")
    for words in commands:
        if words and words[0] in SUBCOMMANDS:
            with pytest.raises(SystemExit) as stopped:
                pybench.main(words + ["--help"])
            assert stopped.value.code == 0, words
            continue
        args = pybench.parse_args(words)
        assert harness.select_tasks(tasks, args.only, args.category, args.limit), words


@pytest.mark.slow
def test_the_readmes_commands_run(tmp_path):
    """The README's run and report lines, run: a model becomes the reference replay, one task each; the report lines
    read the run those made."""
    commands = readme_commands()
    runs = [words for words in commands if not words or words[0] not in SUBCOMMANDS]
    made = []
    for number, words in enumerate(runs):
        args, skip = [], False
        for word in words:
            if skip:
                skip = False
            elif word in ("--model", "--replay", "--limit", "--out"):
                skip = True
            else:
                args.append(word)
        out = tmp_path / f"run-{number}"
        done = run_pybench(*args, "--replay", "checks/reference.jsonl", "--limit", "1", "--out", out)
        assert done.returncode == 0, (words, done.stderr[-2000:])
        assert (out / "results.jsonl").read_text().count("\n") == 1
        made.append(out)
    for number, words in enumerate(w for w in commands if w and w[0] == "report"):
        values = dict(zip(words[1:], words[2:]))
        run_dirs = [word for before, word in zip(words, words[1:]) if not word.startswith("--") and not before.startswith("--")]
        args = ["report", *made[:len(run_dirs)]] + (["--paper-rows", values["--paper-rows"]] if "--paper-rows" in values else [])
        done = run_pybench(*args, "--out", tmp_path / f"report-{number}")
        assert done.returncode == 0, (words, done.stderr[-2000:])
        assert (tmp_path / f"report-{number}" / "report.html").is_file()


# --- reports on honest edge cases ------------------------------------------------------------------------------------

def edge_run(run_dir, passing: list[bool], categories=("chart",), name="Tiny", samples=1):
    """A run directory of len(passing) attempts (task i passes when passing[i]), the tasks spread over categories."""
    import json

    from test_report import fake_attempt

    run_dir.mkdir(parents=True)
    attempts = [fake_attempt(f"t{i}", categories[i % len(categories)], 0, passed, f"outputs/t{i}") for i, passed in enumerate(passing)]
    (run_dir / "results.jsonl").write_text("".join(json.dumps(attempt) + "\n" for attempt in attempts))
    (run_dir / "manifest.json").write_text(json.dumps({
        "model": {"file": f"{name}.gguf", "name": name, "quantization": "Q4_1", "architecture": "llama", "size": 1000,
                  "sha256": name.encode().hex()[:64]}, "model_sha256": name.encode().hex()[:64],
        "flags": {"max_turns": 10, "samples": samples, "seed": 0}, "suite_sha256": "cd" * 32, "device": "CPU",
        "started": "2026-01-02T10:00:00+0000", "finished": "2026-01-02T10:30:00+0000"}))
    return run_dir


EDGES = {"none of 3": [False] * 3, "none of 14": [False] * 14, "all of 10": [True] * 10, "all of 13": [True] * 13,
         "one attempt that passed": [True], "one attempt that failed": [False]}


@pytest.mark.slow  # matplotlib's plots: a few seconds each
@pytest.mark.parametrize("edge", EDGES)
def test_a_report_of_an_edge_case_is_built_and_printed(edge, tmp_path):
    """0%, 100%, one attempt, and (with every task in one category) empty categories: the report is built."""
    import pybench
    from kit import report

    run = edge_run(tmp_path / "run", EDGES[edge])
    text = report.summary_text([run], ["GPT-4o"], pybench.tables_of)
    assert "this run" in text
    page = report.build_report([run], tmp_path / "html", ["GPT-4o"], pybench.tables_of)
    assert page.is_file() and all((tmp_path / "html" / name).stat().st_size for name in ("categories.png", "turns.png", "per_task.png"))


@pytest.mark.parametrize("first, second", [("none of 3", "all of 13"),  # the crash: in the fast tier
                                           pytest.param("none of 14", "none of 3", marks=pytest.mark.slow),
                                           pytest.param("all of 10", "one attempt that failed", marks=pytest.mark.slow)])
def test_a_comparison_of_edge_cases_is_built_and_printed(first, second, tmp_path):
    import pybench
    from kit import report

    runs = [edge_run(tmp_path / "a", EDGES[first], ("chart", "math"), "Alpha"), edge_run(tmp_path / "b", EDGES[second], ("text",), "Beta")]
    text = report.summary_text(runs, ["GPT-4o"], pybench.tables_of)
    assert "Beta minus Alpha" in text
    page = report.build_report(runs, tmp_path / "html", ["GPT-4o"], pybench.tables_of)
    assert page.is_file() and (tmp_path / "html" / "comparison.png").stat().st_size


def test_a_report_that_fails_leaves_nothing_and_the_rerun_builds_it(tmp_path):
    import pybench
    from kit import report

    run = edge_run(tmp_path / "run", [False, True])

    def broken_tables(results, manifests):
        raise RuntimeError("a benchmark's tables failed")

    out = tmp_path / "reports" / "html"
    with pytest.raises(RuntimeError):
        report.build_report([run], out, ["GPT-4o"], broken_tables)
    assert not out.exists() and list((tmp_path / "reports").iterdir()) == []
    assert report.build_report([run], out, ["GPT-4o"], pybench.tables_of) == out / "report.html"
    (out / "tasks" / "stale.html").write_text("a page of an earlier build")
    with pytest.raises(RuntimeError):
        report.build_report([run], out, ["GPT-4o"], broken_tables)
    assert (out / "tasks" / "stale.html").is_file() and sorted(path.name for path in (tmp_path / "reports").iterdir()) == ["html"]
    report.build_report([run], out, ["GPT-4o"], pybench.tables_of)
    assert not (out / "tasks" / "stale.html").exists() and (out / "report.html").is_file()
    assert sorted(path.name for path in (tmp_path / "reports").iterdir()) == ["html"]


# --- the user's environment: one line, exit 2 -------------------------------------------------------------------------

def confined(folder, how: str) -> list[str]:
    """The command prefix under which folder is read-only (how="ro") or a full disk (how="full"): as root, a tmpfs
    mounted there in a mount namespace of the child's own; otherwise (read-only only) the folder's permissions."""
    import os

    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        if how == "full":
            pytest.skip("a full disk is made with a tiny tmpfs: needs root")
        folder.chmod(0o555)
        return []
    options = "ro,size=1m" if how == "ro" else "size=48k"
    return ["unshare", "-m", "sh", "-c", f'mount -t tmpfs -o {options} tmpfs {shlex.quote(str(folder))} && exec "$@"', "sh"]


def run_confined(prefix: list[str], *args):
    import subprocess
    import sys

    return subprocess.run([*prefix, sys.executable, str(ROOT / "pybench.py"), *map(str, args)], capture_output=True, text=True,
                          timeout=600, cwd=ROOT)


def expect_one_line(done, *words):
    assert done.returncode == 2, done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr[-3000:]
    for word in words:
        assert word in lines[0], lines[0]


@pytest.mark.slow
def test_a_read_only_output_folder_is_one_line_for_every_command(tmp_path):
    folder = tmp_path / "locked"
    prefix = confined(folder, "ro")
    expect_one_line(run_confined(prefix, "--replay", "checks/reference.jsonl", "--limit", "1", "--out", folder / "run"),
                    str(folder / "run"), "give --out a folder you may write to")
    run = edge_run(tmp_path / "run", [True, False])
    expect_one_line(run_confined(prefix, "report", run, "--out", folder / "html"), str(folder), "report --out")
    submission = tmp_path / "answer.jsonl"
    submission.write_text(next(line for line in (ROOT / "checks" / "reference.jsonl").open() if '"charts-01"' in line))
    expect_one_line(run_confined(prefix, "grade", "--task", "charts-01", "--out", folder / "graded", submission),
                    str(folder / "graded"), "grade --out")
    expect_one_line(run_confined(prefix, "validate", "--keep", folder / "kept"), str(folder / "kept"), "validate --keep")


@pytest.mark.slow
def test_a_full_disk_stops_the_run_with_one_line_and_it_resumes_elsewhere(tmp_path):
    folder = tmp_path / "small"
    done = run_confined(confined(folder, "full"), "--replay", "checks/reference.jsonl", "--limit", "2", "--out", folder / "run")
    expect_one_line(done, "No space left on device", "--out", "resumes")


@pytest.mark.slow
def test_a_closed_stdout_is_a_quiet_exit_after_the_results_are_written(tmp_path):
    """`pybench.py ... | head -1`: head reads one line and goes; the run stops at its next line, quietly."""
    import subprocess
    import sys

    out = tmp_path / "run"
    process = subprocess.Popen([sys.executable, str(ROOT / "pybench.py"), "--replay", "checks/reference.jsonl", "--limit", "3",
                                "--parallel", "1", "--out", str(out)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout.readline().startswith("model: ")
    process.stdout.close()
    stderr = process.stderr.read()
    assert process.wait(timeout=300) == 141, stderr
    assert stderr == "", stderr
    assert 1 <= (out / "results.jsonl").read_text().count("\n") <= 3


# --- resume without --out --------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_ctrl_c_without_out_and_the_same_command_resumes_in_the_same_folder(make_suite, tmp_path):
    import re
    import shutil
    import signal
    import subprocess
    import sys
    import time

    from conftest import code, read_results, write_jsonl

    # the query names tmp_path: a suite of its own, so its run folder under runs/ is this test's alone
    tasks = make_suite([{"id": f"t{n}", "category": "math", "query": f"wait ({tmp_path.name})", "files": [], "check": "suite:ok"}
                        for n in range(3)], "def ok(answer, output, data):\n    pass\n")
    cells = ["print('quick')", "import time\ntime.sleep(6)\nprint('slept')", "import time\ntime.sleep(6)\nprint('slept')"]
    replay = write_jsonl(tmp_path / "replay.jsonl", [{"id": f"t{n}", "replies": [code(cell), "done"]} for n, cell in enumerate(cells)])
    command = [sys.executable, str(ROOT / "pybench.py"), "--tasks", str(tasks), "--replay", str(replay), "--parallel", "1"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=hearing_ctrl_c)  # a shell's background job (CI under nohup) ignores SIGINT
    run_dir = None
    try:
        run_dir = Path(re.search(r"results in (\S+)", process.stdout.readline()).group(1))
        assert run_dir.parent == ROOT / "runs" and run_dir.name.startswith("replay-replay-")
        deadline = time.monotonic() + 120
        results = run_dir / "results.jsonl"
        while time.monotonic() < deadline and not (results.is_file() and results.read_text()):
            time.sleep(0.1)
        time.sleep(1)  # t1's cell is sleeping now
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 130, stderr
        assert f"kept in {run_dir / 'results.jsonl'}; the same command resumes" in stderr
        assert sorted(read_results(run_dir)) == ["t0"]
        resumed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert resumed.returncode == 0, resumed.stderr
        assert "(1 already done)" in resumed.stdout and f"results in {run_dir}" in resumed.stdout
        assert sorted(read_results(run_dir)) == ["t0", "t1", "t2"]
        assert results.read_text().count("\n") == 3
    finally:
        process.kill()
        if run_dir is not None:
            shutil.rmtree(run_dir, ignore_errors=True)


# --- threads that fit the CPUs this process may use -------------------------------------------------------------------

def cgroup_tree(root, files: dict[str, str]):
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_usable_cpus_takes_the_tightest_of_affinity_cgroup_quota_and_slurm(tmp_path):
    import os

    from kit.sandbox import usable_cpus

    mask = len(os.sched_getaffinity(0))
    none = tmp_path / "none"
    assert usable_cpus(none / "cgroup", none, {}) == (mask, "its affinity mask")
    v2 = cgroup_tree(tmp_path / "v2", {"proc": "0::/job/step\n", "root/cpu.max": "max 100000\n",
                                      "root/job/cpu.max": "150000 100000\n", "root/job/step/cpu.max": "max 100000\n"})
    assert usable_cpus(v2 / "proc", v2 / "root", {}) == (1, "its cgroup's CPU quota of 1.5 CPUs") or mask == 1
    v1 = cgroup_tree(tmp_path / "v1", {"proc": "4:memory:/a\n2:cpu,cpuacct:/a/b\n0::/\n",
                                      "root/cpu,cpuacct/cpu.cfs_quota_us": "-1\n", "root/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
                                      "root/cpu,cpuacct/a/b/cpu.cfs_quota_us": "100000\n", "root/cpu,cpuacct/a/b/cpu.cfs_period_us": "100000\n"})
    assert usable_cpus(v1 / "proc", v1 / "root", {})[0] == 1
    container = cgroup_tree(tmp_path / "seen-from-a-container", {"proc": "0::/outside/our/view\n", "root/cpu.max": "100000 100000\n"})
    assert usable_cpus(container / "proc", container / "root", {})[0] == 1
    assert usable_cpus(none / "cgroup", none, {"SLURM_CPUS_PER_TASK": "1"}) == (1, "SLURM_CPUS_PER_TASK=1")
    assert usable_cpus(none / "cgroup", none, {"SLURM_CPUS_PER_TASK": "junk"})[0] == mask


def test_usable_cpus_follows_the_affinity_a_process_is_started_with():
    import subprocess
    import sys

    pinned = subprocess.run(["taskset", "-c", "0", sys.executable, "-c", "from kit import sandbox; print(sandbox.usable_cpus()[0])"],
                            cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert pinned.stdout.strip() == "1", pinned.stderr


def test_llama_cpp_gets_fewer_threads_beside_a_process_that_keeps_one_of_its_cpus_busy():
    """A spinning process pinned to one of this process's CPUs: model_threads leaves that CPU to it (llama.cpp's
    threads wait for each other every step, so one that shares a CPU holds them all up); --threads stays as given."""
    import os
    import subprocess
    import sys
    import time

    from kit.sandbox import model_threads, usable_cpus

    cpus = usable_cpus()[0]
    if cpus < 2:
        pytest.skip("one usable CPU: there is no thread to leave out")
    spinner = subprocess.Popen([sys.executable, "-c", "while 1: pass"])
    try:
        os.sched_setaffinity(spinner.pid, {min(os.sched_getaffinity(0))})
        time.sleep(0.2)
        threads, why = model_threads(None)
        assert threads <= cpus - 1 and "busy" in why and f"of {cpus} idle" in why, why
        assert model_threads(3) == (3, "--threads")
        assert model_threads(None, model=False) == (cpus, f"the CPUs this process may use: {usable_cpus()[1]}")  # a replay's
    finally:
        spinner.kill()
        spinner.wait()


def test_an_unreadable_proc_stat_leaves_every_usable_cpu(tmp_path):
    from kit.sandbox import model_threads, usable_cpus

    assert model_threads(None, stat=tmp_path / "no-stat", seconds=0.01) == (usable_cpus()[0], f"the CPUs this process may use: {usable_cpus()[1]}")


def test_threads_is_a_flag_of_at_least_one():
    import pybench

    assert pybench.parse_args(["--threads", "3"]).threads == 3 and pybench.parse_args([]).threads is None
    with pytest.raises(SystemExit):
        pybench.parse_args(["--threads", "0"])


def test_parallel_auto_on_a_cpu_takes_no_more_attempts_than_threads():
    from kit import engine

    assert engine.parallel_plan(None, 100, 1, on_gpu=False, cpus=1)[0] == 1
    assert engine.parallel_plan(None, 100, 1, on_gpu=False, cpus=3)[0] == 3
    assert engine.parallel_plan(None, 100, 1, on_gpu=False, cpus=64)[0] == 8
    assert engine.parallel_plan(5, 100, 1, on_gpu=False, cpus=1)[0] == 5  # --parallel K is taken as asked


@pytest.mark.slow
def test_threads_reach_llama_cpp_the_jails_the_first_line_and_the_manifest(tmp_path):
    import json
    import os
    import subprocess
    import sys

    from kit import engine
    from tiny_gguf import write_tiny_gguf

    model = engine.LlamaModel(write_tiny_gguf(tmp_path / "tiny.gguf"), 0, 512, 0, 0.2, 0.85, 8, threads=1)
    assert model.llm.context_params.n_threads == 1 and model.open(None, 10) == 1
    model.close()
    out = tmp_path / "run"
    done = run_pybench("--replay", "checks/reference.jsonl", "--limit", "1", "--threads", "1", "--out", out, report=True)
    assert done.returncode == 0, done.stderr
    assert "1 thread(s) (--threads)" in done.stdout.splitlines()[0]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["flags"]["threads"] == 1 and manifest["jail_limits"]["threads"] == 1 and manifest["threads"]["why"] == "--threads"
    (agent_jail,) = [path for path in (out / "jails").glob("*.cfg") if not path.name.endswith(".check.cfg")]
    assert 'OMP_NUM_THREADS=1"' in agent_jail.read_text()
    assert f"report: {out / 'report' / 'report.html'}" in done.stdout and (out / "report" / "report.html").is_file()  # every run's
    slurm = subprocess.run([sys.executable, str(ROOT / "pybench.py"), "--replay", "checks/reference.jsonl", "--limit", "1",
                            "--no-report", "--out", tmp_path / "slurm"], cwd=ROOT, capture_output=True, text=True, timeout=600,
                           env={**os.environ, "SLURM_CPUS_PER_TASK": "1"})
    assert "1 thread(s) (the CPUs this process may use: SLURM_CPUS_PER_TASK=1)" in slurm.stdout.splitlines()[0], slurm.stderr
    assert not (tmp_path / "slurm" / "report").exists() and "pybench.py report" in slurm.stdout


# --- report polish -------------------------------------------------------------------------------------------------

def test_an_attempt_page_shows_the_code_that_ran_without_its_fences():
    from kit import report

    messages = [{"role": "user", "content": "Sum it."}, {"role": "assistant", "content": "Summing.\n```python\nprint(1 + 1)\n```\nThat is all."},
                {"role": "user", "content": "2"}, {"role": "assistant", "content": "It is 2."}]
    _, _, steps = report.split_messages(messages, None)
    assert steps[0] == ("Summing.\n", "print(1 + 1)\n", "\nThat is all.", "2") and steps[1] == ("It is 2.", None, "", None)


@pytest.mark.slow
def test_the_report_is_titled_by_the_model_file_warns_of_the_default_model_and_reads_first_then_second(tmp_path):
    import json
    import re

    import pybench
    from kit import report

    run = edge_run(tmp_path / "run", [True, False, False], ("chart", "text"), "SmolLM2-135M-Instruct")
    manifest = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps(manifest | {"default_model": True}))
    page = report.build_report([run], tmp_path / "html", ["GPT-4o"], pybench.tables_of).read_text()
    assert "<h1>PyBench run: SmolLM2-135M-Instruct · Q4_1</h1>" in page
    assert "embedded default model" in page and "smoke test" in page
    assert re.findall(r'<td class="n">(\d+(?:\.\d+)?)</td><td class="n">1\.5</td>', page) == ["2", "2", "2"]  # turns, then seconds
    other = edge_run(tmp_path / "other", [True, True, True], ("chart", "text"), "Other")
    compared = report.build_report([run, other], tmp_path / "compared", ["GPT-4o"], pybench.tables_of).read_text()
    header = compared.split("<h2>Run against run</h2>")[1].split("</tr>")[0]
    assert header.index(">first<") < header.index(">second<") and "second − first" in header
    row = compared.split("<h2>Run against run</h2>")[1].split("</tr>")[1]
    assert row.index("SmolLM2") < row.index("Other") and "+66.7" in row


# --- the report's plots, read as matplotlib drew them ---------------------------------------------------------------

@pytest.fixture
def drawn(monkeypatch):
    """The figures the report saves, by file name, kept after they are written: their labels, limits and the places
    of their markers are those of the PNG."""
    from kit import report

    figures, save = {}, report.save_plot

    def keep(figure, path, description):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        saved = save(figure, path, description)
        FigureCanvasAgg(figure).draw()  # the closed figure drawn again as it was saved, for its renderer
        figures[path.name] = figure
        return saved

    monkeypatch.setattr(report, "save_plot", keep)
    return figures


def inside(box, frame, margin: float = 0.0) -> bool:
    return box.x0 >= frame.x0 + margin and box.x1 <= frame.x1 - margin and box.y0 >= frame.y0 + margin and box.y1 <= frame.y1 - margin


def test_the_per_task_plot_labels_each_bar_by_its_task(drawn, tmp_path):
    from kit import report

    run = edge_run(tmp_path / "run", [True, False, False, True, False], ("chart", "text"))
    results, _ = report.merge_runs([run])
    report.report_plots(results, ["GPT-4o"], 10, tmp_path)
    figure = drawn["per_task.png"]
    (bottom,) = [axes for axes in figure.axes if axes.get_ylabel() == "tokens"]
    labels = bottom.get_xticklabels()
    assert [label.get_text() for label in labels] == ["t0", "t2", "t4", "t1", "t3"]  # the table's order: chart, then text
    assert [label.get_position()[0] for label in labels] == [bar.get_x() + bar.get_width() / 2 for bar in bottom.patches[:5]]
    renderer, frame = figure.canvas.get_renderer(), figure.bbox
    assert all(inside(label.get_window_extent(renderer), frame) for label in labels)  # in the saved image, whole


def test_this_runs_values_are_written_on_its_category_bars(drawn, tmp_path):
    from kit import report

    run = edge_run(tmp_path / "run", [True, False, True, False], ("chart", "text"))  # chart 2/2, text 0/2
    results, _ = report.merge_runs([run])
    report.report_plots(results, ["GPT-4o"], 10, tmp_path)
    from matplotlib.container import BarContainer

    axes = drawn["categories.png"].axes[0]
    ours = [container for container in axes.containers if isinstance(container, BarContainer)][0]  # this run's, drawn first
    written = [text for text in axes.texts if text.get_text()]
    assert [text.get_text() for text in written] == ["100", "0", "50"]  # chart, text, overall; no figure for empty ones
    centres = [bar.get_x() + bar.get_width() / 2 for bar in ours.patches]
    assert [text.xy[0] for text in written] == [centres[0], centres[1], centres[5]]


def test_the_comparisons_axis_shows_a_0_and_a_100_percent_marker_whole(drawn, tmp_path):
    from kit import report

    runs = [("none", edge_run(tmp_path / "a", EDGES["none of 3"], name="Alpha")), ("all", edge_run(tmp_path / "b", EDGES["all of 13"], name="Beta"))]
    rows = report.table3([(name, report.merge_runs([run])[0], 10) for name, run in runs], ["GPT-4o"])["rows"]
    report.comparison_plot(rows, tmp_path)
    figure = drawn["comparison.png"]
    axes, renderer = figure.axes[0], figure.canvas.get_renderer()
    markers = [line for line in axes.lines if line.get_marker() == "o"]
    assert sorted(float(line.get_xdata()[0]) for line in markers) == [0.0, 79.7, 100.0]  # none, GPT-4o's row, all
    low, high = axes.get_xlim()
    assert low < 0 and high > 100
    frame = axes.get_window_extent(renderer)
    for line in markers:
        centre = axes.transData.transform((line.get_xdata()[0], line.get_ydata()[0]))
        radius = line.get_markersize() / 2 * figure.dpi / 72 + line.get_markeredgewidth() * figure.dpi / 72
        assert frame.x0 + 2 <= centre[0] - radius and centre[0] + radius <= frame.x1 - 2, (line.get_xdata(), centre, frame)


# --- a class's grading sized by the CPUs this process may use --------------------------------------------------------

def test_a_class_is_graded_on_as_many_jails_as_this_process_may_use_cpus(monkeypatch):
    import os

    from kit import classroom

    model = classroom.NotebookModel({}, 60.0)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)  # a big node, of which this job may use one CPU
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", "1")
    assert model.open(None, 5) == 1 and model.open(3, 5) == 3
    monkeypatch.delenv("SLURM_CPUS_PER_TASK")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert model.open(None, 5) == 2 and model.open(None, 1) == 1


# --- an ETA from the first tokens -------------------------------------------------------------------------------------

def test_the_eta_comes_from_the_first_tokens_and_counts_the_attempts_in_flight():
    from kit.harness import Progress

    # the first minute: no attempt has ended; 4 of 10 in flight on 4 slots have generated 600 tokens at 10 tokens/s;
    # an attempt is guessed at 1000 tokens (the prior): 6 waiting x 1000 + the 4000 - 600 the four have left = 9400
    # tokens at 10 tokens/s. Counted as not started, the four would make it 10 x 1000 / 10 = 1000 s; the old line had
    # no ETA until the first attempt ended.
    first_minute = Progress(elapsed=60, generated=600, tokens_per_second=10, finished=[], finished_now=[], in_flight=4, waiting=6,
                            parallel=4, prior=1000)
    assert first_minute.eta() == pytest.approx(940)
    # an earlier session's attempts (400 tokens each) weigh in beside the prior; their tokens are not this session's
    resumed = Progress(elapsed=20, generated=200, tokens_per_second=10, finished=[400, 400], finished_now=[], in_flight=2, waiting=2,
                       parallel=2, prior=1000)
    assert resumed.eta() == pytest.approx((2 * 600 + (2 * 600 - 200)) / 10)  # an attempt: (1000 + 400 + 400) / 3 = 600
    # the tail: one attempt left on 4 slots runs at a quarter of the 10 tokens/s the four made together
    tail = Progress(elapsed=160, generated=1600, tokens_per_second=10, finished=[400, 500, 600], finished_now=[400, 500, 600],
                    in_flight=1, waiting=0, parallel=4, prior=1000)
    assert tail.eta() == pytest.approx((625 - 100) / 10 * 4)  # an attempt: (1000 + 400 + 500 + 600) / 4 = 625
    # one in flight for longer than an attempt was expected to take: the waiting one is expected to take as long
    long = Progress(elapsed=120, generated=1200, tokens_per_second=10, finished=[100] * 3, finished_now=[100] * 3, in_flight=1,
                    waiting=1, parallel=1, prior=1000)
    assert long.eta() == pytest.approx(900 / 10)
    assert Progress(5, 0, 0.0, [], [], 4, 6, 4, 1000).eta() is None  # nothing measured yet
    assert Progress(5, 3, 0.0, [], [], 4, 6, 4, 1000).eta() is None  # the first tokens, no pace yet
    assert Progress(10, 0, 0.0, [0, 0], [0, 0], 2, 2, 2, 0).eta() == pytest.approx(20)  # a replay: seconds per finished attempt
    assert Progress(10, 500, 50.0, [250, 250], [250, 250], 0, 0, 2, 1000).eta() == 0


def test_the_time_left_reads_in_seconds_minutes_or_hours():
    import pybench

    assert [pybench.duration_text(seconds) for seconds in (40, 719, 7500)] == ["~40 s", "~12 min", "~2 h 05 min"]


@pytest.mark.slow
@pytest.mark.parametrize("signum", ["SIGTERM", "SIGHUP"])
def test_a_run_killed_by_sigterm_or_sighup_stops_as_ctrl_c_does(make_suite, tmp_path, signum):
    """`kill`, a batch system's time limit or a closed terminal: the attempts done are kept and no jail's mount is
    left behind under the run folder (before, the outputs of the attempts in flight stayed mounted)."""
    import signal
    import subprocess
    import sys
    import time

    from conftest import code, read_results, write_jsonl

    tasks = make_suite([{"id": f"t{n}", "category": "math", "query": "wait", "files": [], "check": "suite:ok"} for n in range(2)],
                       "def ok(answer, output, data):\n    pass\n")
    cells = ["print('quick')", "import time\ntime.sleep(30)\nprint('slept')"]
    replay = write_jsonl(tmp_path / "replay.jsonl", [{"id": f"t{n}", "replies": [code(cell), "done"]} for n, cell in enumerate(cells)])
    run_dir = tmp_path / "run"
    process = subprocess.Popen([sys.executable, str(ROOT / "pybench.py"), "--tasks", str(tasks), "--replay", str(replay),
                                "--parallel", "1", "--out", str(run_dir)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        results, deadline = run_dir / "results.jsonl", time.monotonic() + 120
        while time.monotonic() < deadline and not (results.is_file() and results.read_text()):
            time.sleep(0.1)
        time.sleep(1.5)  # t1's cell is sleeping in its jail now
        process.send_signal(getattr(signal, signum))
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 130 and "the same command resumes" in stderr, stderr
        assert sorted(read_results(run_dir)) == ["t0"]
        mounts = Path("/proc/self/mountinfo").read_text()
        assert str(run_dir) not in mounts
    finally:
        process.kill()


def test_the_first_estimate_counts_what_an_attempt_does_beside_generating_and_then_the_attempts_measured_time():
    """Before, the first estimate was the tokens at the probe's speed alone ("~31 s" for a run of 2 min 58 s): now each
    attempt not ended adds its time beside generation (prompt evaluation, two jails started, its cells: `overhead`,
    from the probes), and once attempts have ended the time left is theirs: the todo's attempts at their mean seconds,
    `parallel` at once, less the time gone."""
    import pybench

    progress = object.__new__(pybench.RunProgress)
    progress.todo, progress.parallel, progress.speed, progress.overhead = [("t", 0)] * 5, 2, 10.0, 6.0
    progress.expected, progress.finished_now, progress.seconds_now = {"tokens": 100}, [], []
    assert progress.eta(0.0, 0, 0.0, [], 0) == pytest.approx(5 * 100 / 10 + 5 * 6)  # 50 s generating, 30 s beside it
    progress.finished_now, progress.seconds_now = [120], [40.0]
    assert progress.eta(40.0, 220, 5.5, [], 2) == pytest.approx(5 * 40 / 2 - 40)  # 100 s for the five, 40 gone
    assert progress.eta(500.0, 220, 5.5, [], 1) == 0
