"""A newcomer's first hour, round two (issue 35): stopping is always clean, every bad output folder is one line,
hints that can be pasted, an ETA from this machine, and the small things a new user trips on."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT

# --- stopping: two Ctrl-C's at any moment ------------------------------------------------------------------------------

def stopped_twice(tmp_path, name: str, after_model_line: bool, wait: float, gap: float) -> tuple[subprocess.Popen, str, Path]:
    """The embedded model's run of two tasks, started as from a terminal (a process group of its own, SIGINT at its
    default) and stopped as a terminal's Ctrl-C does (SIGINT to the whole group, nsjail included) twice, `gap` seconds
    apart, `wait` seconds after the start or after the first line (model loaded, attempts about to begin)."""
    out = tmp_path / name
    process = subprocess.Popen([sys.executable, str(ROOT / "pybench.py"), "--limit", "2", "--parallel", "2", "--out", str(out), "--no-report"],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        if after_model_line:
            for line in process.stdout:
                if line.startswith("model: "):
                    break
        time.sleep(wait)
        os.killpg(process.pid, signal.SIGINT)
        time.sleep(gap)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    return process, stderr, out


@pytest.mark.slow
@pytest.mark.parametrize("after_model_line, wait, gap", [(False, 0.3, 0.3), (False, 1.0, 0.3), (True, 0.1, 0.3), (True, 1.0, 0.3)])
def test_two_ctrl_cs_at_any_moment_end_with_one_line_and_130(tmp_path, after_model_line, wait, gap):
    """The second SIGINT once reached a stop already under way: raised inside it, the interpreter ended while llama.cpp
    was still evaluating a prompt in its engine thread, and freeing the model under it was a SIGSEGV (3 runs in 7).
    In the first second, a Ctrl-C inside the imports or the GGUF reader was a 35-line traceback."""
    process, stderr, out = stopped_twice(tmp_path, "run", after_model_line, wait, gap)
    assert process.returncode == 130, stderr[-3000:]
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("interrupted"), stderr[-3000:]
    assert str(out) not in Path("/proc/self/mountinfo").read_text()  # no jail's output folder left mounted


@pytest.mark.slow
def test_two_ctrl_cs_while_judging_end_with_one_line_and_130(tmp_path):
    """`judge` returned 130 on Ctrl-C without closing the model: the interpreter then ended while llama.cpp decoded a
    verdict's prompt in its engine thread (a SIGSEGV, seen twice). The verdicts so far stay, and judging resumes."""
    run = tmp_path / "replayed"
    subprocess.run([sys.executable, str(ROOT / "pybench.py"), "--replay", "checks/reference.jsonl", "--limit", "2", "--out", str(run),
                    "--no-report"], cwd=ROOT, check=True, capture_output=True)
    for wait in (0.5, 3.0):
        process = subprocess.Popen([sys.executable, str(ROOT / "pybench.py"), "judge", str(run), "--threads", "1", "--parallel", "1"],
                                   cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            for line in process.stdout:
                if line.startswith("judge: "):
                    break
            time.sleep(wait)
            os.killpg(process.pid, signal.SIGINT)
            time.sleep(0.3)
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGINT)
            _, stderr = process.communicate(timeout=60)
        finally:
            process.kill()
        lines = stderr.strip().splitlines()
        assert process.returncode in (0, 130) and len(lines) <= 1, stderr[-3000:]  # 0: it had judged both already
        assert process.returncode == 0 or lines[0].startswith("interrupted"), stderr[-3000:]


# --- every output folder that cannot be one: one line, exit 2 ------------------------------------------------------------

def output_commands(folder: Path) -> dict[str, list[str]]:
    """Each command that writes a folder the user names, with that folder."""
    return {"--out": ["--replay", "checks/reference.jsonl", "--out", str(folder)],
            "report --out": ["report", "runs/some-run", "--out", str(folder)],
            "grade --out": ["grade", "--task", "charts-01", "--out", str(folder), "checks/reference.jsonl"],
            "grade --out ": ["grade", "--tasks", "tasks.jsonl", "submissions", "--out", str(folder)],
            "validate --keep": ["validate", "--keep", str(folder)]}


def one_line_and_2(capsys, argv: list[str], *words: str) -> str:
    import pybench

    assert pybench.cli(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and captured.out == "", captured
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("case", ["under /proc", "below a file", "a file", "a link to nothing", "below a link to nothing"])
def test_an_output_folder_that_cannot_be_one_is_one_line_for_every_command(case, tmp_path, capsys):
    """Before, --out /proc/pybench-out and --out README.md/run were tracebacks (FileNotFoundError, NotADirectoryError)."""
    (tmp_path / "notes.txt").write_text("a file\n")
    (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
    folder, words = {"under /proc": (Path("/proc/pybench-out"), ["no folder can be made in /proc"]),
                     "below a file": (tmp_path / "notes.txt" / "run", ["notes.txt, which is a file"]),
                     "a file": (tmp_path / "notes.txt", ["is a file"]),
                     "a link to nothing": (tmp_path / "gone", ["a link to", "nowhere", "does not exist"]),
                     "below a link to nothing": (tmp_path / "gone" / "run", ["a link to", "does not exist"])}[case]
    for flag, argv in output_commands(folder).items():
        one_line_and_2(capsys, argv, str(folder), f"give {flag.strip()} a folder")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["gone", "notes.txt"]  # nothing made, no probe left behind
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("how", ["no permission", "read-only"])
def test_an_output_folder_without_permission_or_on_a_read_only_disk_is_one_line(how, tmp_path):
    """As root, without the capability that overrides permissions (setpriv); a read-only tmpfs in a mount namespace of
    the child's own (unshare). Otherwise the folder's permissions."""
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    prefix = []
    if os.geteuid() == 0:
        prefix = (["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-dac_override,-dac_read_search"]
                  if how == "no permission" else
                  ["unshare", "-m", "sh", "-c", f'mount -t tmpfs -o ro,size=1m tmpfs {folder} && exec "$@"', "sh"])
    elif how == "read-only":
        pytest.skip("a read-only mount needs root")
    done = subprocess.run([*prefix, sys.executable, str(ROOT / "pybench.py"), "--replay", "checks/reference.jsonl", "--out",
                           str(folder / "run")], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2, done.stderr[-3000:]
    expected = "Permission denied" if how == "no permission" else "Read-only file system"
    assert done.stderr.strip() == f"error: --out {folder / 'run'}: no folder can be made in {folder} ({expected}): give --out a " \
                                  "folder you may write to"


# --- hints a user can paste ----------------------------------------------------------------------------------------------

def test_printed_commands_use_the_interpreter_and_the_pybench_py_that_ran(monkeypatch, tmp_path):
    """Before, every hint said `python3.12`, which on a pyenv machine is a shim that fails without a selected version."""
    from kit import untrusted

    monkeypatch.chdir(ROOT)
    assert untrusted.command("setup") == f"{os.path.relpath(sys.executable, ROOT) if sys.executable.startswith(str(ROOT)) else sys.executable} pybench.py setup"
    assert untrusted.command("doctor", python=ROOT / ".venv" / "bin" / "python") == ".venv/bin/python pybench.py doctor"
    monkeypatch.chdir(tmp_path)
    assert untrusted.command("doctor", python=ROOT / ".venv" / "bin" / "python") == f"{ROOT}/.venv/bin/python {ROOT}/pybench.py doctor"


def test_setups_last_line_says_what_comes_next():
    """Before, `setup --tests` ended by advising `setup --tests`."""
    import pybench

    venv_python = ROOT / ".venv" / "bin" / "python"
    after_tests = pybench.setup_done_hint(venv_python, for_tests=True)
    assert "setup --tests" not in after_tests and "-m pytest -q " in after_tests and "pybench.py;" in after_tests
    assert "setup --tests" in pybench.setup_done_hint(venv_python, for_tests=False)


def test_after_setup_from_the_hint_names_only_what_the_pack_can_give():
    """Before, `setup --from` ended by advising `setup --tests`, which needs the network: offline the tests' packages
    come only from a pack made with `pack --tests`."""
    import types

    import pybench

    venv_python = ROOT / ".venv" / "bin" / "python"
    plain = types.SimpleNamespace(manifest={"flags": {"tests": False}}, source=Path("/media/usb/pack"))
    with_tests = types.SimpleNamespace(manifest={"flags": {"tests": True}}, source=Path("/media/usb/pack"))
    hint = pybench.setup_done_hint(venv_python, for_tests=False, pack=plain)
    assert "pack --tests" in hint and "setup --tests --from" in hint and "pybench.py setup --tests" not in hint
    assert "pybench.py setup --tests --from /media/usb/pack" in pybench.setup_done_hint(venv_python, for_tests=False, pack=with_tests)


def test_the_gpu_rebuild_hint_only_where_a_gpu_exists_that_the_build_cannot_use(tmp_path):
    """Before, every run's first line, doctor and the report said `rebuild it: python3.12 pybench.py setup --gpu cuda`
    on machines without any GPU."""
    from kit import engine, gpu

    def machine(*devices):
        root = tmp_path / str(len(list(tmp_path.iterdir())))
        for number, (kind, vendor) in enumerate(devices):
            folder = root / "sys" / "bus" / "pci" / "devices" / f"0000:00:0{number}.0"
            folder.mkdir(parents=True)
            (folder / "class").write_text(kind + "\n")
            (folder / "vendor").write_text(vendor + "\n")
        return root

    assert gpu.machine_gpu(machine(("0x060000", "0x8086"), ("0x020000", "0x1af4"))) is None  # a host bridge, a virtio NIC
    assert gpu.machine_gpu(machine(("0x030000", "0x1a03"))) is None  # a server's BMC (ASPEED)
    assert gpu.machine_gpu(machine(("0x060000", "0x8086"), ("0x030200", "0x10de"))) == ("an NVIDIA GPU", "cuda")
    assert gpu.machine_gpu(machine(("0x030000", "0x1002"))) == ("an AMD GPU", "vulkan")
    assert "rebuild" not in engine.why_no_gpu() and "python3.12" not in engine.why_no_gpu()


# --- the small ones ----------------------------------------------------------------------------------------------------

def test_a_misspelt_flag_is_one_line_naming_the_flag_meant(capsys):
    import pybench

    with pytest.raises(SystemExit) as stopped:
        pybench.parse_args(["--limt", "5"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--limt" in err and "did you mean --limit?" in err, err


def test_an_unknown_only_id_suggests_the_same_id_with_its_zeros():
    """Before, --only tables-1 suggested tables-19, tables-21, tables-31."""
    from kit import harness, suite

    tasks = suite.load_tasks(ROOT / "tasks.jsonl")
    with pytest.raises(harness.UsageError, match=r"tables-1 .*\(did you mean tables-01\?\)"):
        harness.select_tasks(tasks, "tables-1", None, None)


def test_a_missing_model_says_where_models_usually_are_and_the_flags_form(capsys, tmp_path):
    line = one_line_and_2(capsys, ["--model", str(tmp_path / "qwen.gguf")], "qwen.gguf does not exist", "--model ~/models/", "~/.cache/huggingface/hub")
    assert "give --model a GGUF file" in line
    one_line_and_2(capsys, ["--model", str(tmp_path)], "is a folder")


def test_a_broken_tasks_line_names_file_line_and_column(tmp_path):
    from kit import harness

    broken = tmp_path / "tasks.jsonl"
    broken.write_text('{"id": "t1"}\n{"id": "t2", "query": "an unterminated string}\n')
    with pytest.raises(harness.UsageError) as error:
        harness.jsonl_records(broken)
    assert str(error.value) == f"{broken}, line 2: not valid JSON: Unterminated string starting at column 23"
