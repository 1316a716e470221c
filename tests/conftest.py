"""Shared helpers: run pybench.py as a user would, and build small throwaway suites."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests that call the kit's functions directly import its modules from the project root


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: starts jails, models or whole runs (the fast tier is `pytest -m \"not slow\"`)")
    config.addinivalue_line("markers", "proof: the suite's proof, every solution replayed, and the SIMD baseline's (`pytest -m proof tests`)")


def pytest_collection_modifyitems(config, items):
    """The proof runs only when a -m expression names it: the README's (and CI's) one line leaves it out, for CI's 40
    minutes; it replays every alternative solution, and the numpy-heavy tasks' at numpy's SIMD baseline, where the test
    run replays every task's reference and wrong solution with numpy's dispatch as found."""
    if "proof" in (config.getoption("markexpr") or ""):
        return
    proofs = [item for item in items if item.get_closest_marker("proof")]
    if proofs:
        config.hook.pytest_deselected(items=proofs)
        items[:] = [item for item in items if not item.get_closest_marker("proof")]


def pytest_unconfigure(config):
    """llama-cpp-python opens os.devnull twice when it is imported (llama_cpp._utils, for its stdout/stderr silencer,
    which only loading a model uses) and never closes them: closed here, or the interpreter's teardown reports two
    ResourceWarnings after the tests' summary."""
    utils = sys.modules.get("llama_cpp._utils")
    if utils is not None:
        utils.outnull_file.close()
        utils.errnull_file.close()


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(profile: Path, *arguments: str) -> list[str]:
    """Headless Chromium as the tests run it: no sandbox (root), no GPU, nothing fetched in the background, a
    profile of its own; then the arguments (--dump-dom URL, --screenshot=FILE URL, ...)."""
    return [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync", "--disable-background-networking",
            "--disable-component-update", f"--user-data-dir={profile}", *arguments]


SUBCOMMANDS = {"setup", "pack", "doctor", "report", "judge", "validate", "grade", "handout", "check", "slurm", "far-serve"}


def run_pybench(*args, timeout=1800, report=False) -> subprocess.CompletedProcess:
    """pybench.py in a child process, exactly as from the command line. A run skips the report it builds at its end
    (--no-report: a few seconds a run) unless the test asks for it with report=True; the tests of the report build it
    with `report DIR`, which is the same code."""
    args = [str(arg) for arg in args]
    if not report and (not args or args[0] not in SUBCOMMANDS) and "--no-report" not in args and "--help" not in args:
        args.append("--no-report")
    return subprocess.run([sys.executable, str(ROOT / "pybench.py"), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def read_results(run_dir: Path) -> dict[str, dict]:
    """A run's results by task id, read by the kit's own reader, as the JSON lines hold them."""
    from kit import harness

    return {result.id: result.to_json() for result in harness.read_results(run_dir / "results.jsonl")}


def write_jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def code(source: str) -> str:
    """An assistant reply whose python block is source."""
    return f"Running this.\n```python\n{source}\n```"


def part_of_suite(folder: Path, modules: tuple[str, ...] | None = None, solutions_every: int = 0) -> tuple[Path, int]:
    """A copy of our suite in folder, cut to the tasks whose checks are in modules (all when None), with their reference
    and wrong replays and, when solutions_every is n, each task's 1st, (n+1)th, ... alternative solution (none when 0):
    (its tasks.jsonl, how many tasks)."""
    from kit import harness

    tasks = [record for _, record in harness.jsonl_records(ROOT / "tasks.jsonl") if modules is None or record["check"].split(":")[0] in modules]
    ids = {task["id"] for task in tasks}
    (folder / "checks" / "solutions").mkdir(parents=True)
    (folder / "files").symlink_to(ROOT / "files")
    write_jsonl(folder / "tasks.jsonl", tasks)
    for module in (ROOT / "checks").glob("*.py"):
        shutil.copyfile(module, folder / "checks" / module.name)
    for replays in [ROOT / "checks" / "reference.jsonl", ROOT / "checks" / "wrong.jsonl", *(ROOT / "checks" / "solutions").glob("*.jsonl")]:
        kept, ordinal = [], {}
        for _, record in harness.jsonl_records(replays):
            ordinal[record["id"]] = ordinal.get(record["id"], -1) + 1
            if record["id"] in ids and (replays.parent.name != "solutions" or solutions_every and ordinal[record["id"]] % solutions_every == 0):
                kept.append(record)
        write_jsonl(folder / "checks" / replays.relative_to(ROOT / "checks"), kept)
    return folder / "tasks.jsonl", len(ids)


@pytest.fixture
def make_suite(tmp_path):
    """make_suite(tasks, checks_source, files={name: bytes}) -> path of tasks.jsonl in a fresh suite folder."""

    def make(tasks: list[dict], checks_source: str, files: dict[str, bytes] | None = None) -> Path:
        suite = tmp_path / "suite"
        (suite / "files").mkdir(parents=True)
        (suite / "checks").mkdir()
        for name, content in (files or {}).items():
            (suite / "files" / name).write_bytes(content)
        (suite / "checks" / "suite.py").write_text(checks_source)
        return write_jsonl(suite / "tasks.jsonl", tasks)

    return make


def hearing_ctrl_c() -> None:
    """For a child that a test stops with SIGINT as Ctrl-C would: a shell starts its background jobs with SIGINT
    ignored, which their children inherit, so under `cmd &` or nohup the kit would never see the test's Ctrl-C."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
