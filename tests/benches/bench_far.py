"""The far side's cost and verdicts (issue 46): the suite's reference replay and wrong replay run through the command
line twice each, with the jails here and with them behind `ssh` to an sshd on 127.0.0.1 (started here, as
tests/test_far.py starts it), one after the other; the verdicts (143/143 and 0/143 expected) and the wall times side
by side. Not a test (minutes): `nice -n 10 .venv/bin/python tests/benches/bench_far.py [--parallel K]`."""
import json
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from test_far import sshd  # noqa: E402


def run(replay: str, out: Path, extra: list[str]) -> tuple[int, int, float]:
    """(passed, attempts, wall seconds) of one replay run."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(ROOT / "pybench.py"), "--replay", str(ROOT / "checks" / replay), "--out", str(out),
                           "--no-report", *extra], cwd=ROOT, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"{replay} {extra}: exit {done.returncode}: {done.stderr.strip()[-500:]}")
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return sum(result["passed"] for result in results), len(results), seconds


def main(argv: list[str]) -> None:
    work = Path(tempfile.mkdtemp(prefix="pybench-bench-far-"))
    with sshd(work) as command:
        far = ["--far", shlex.join(command)]
        rows = []
        for replay in ("reference.jsonl", "wrong.jsonl"):
            for label, extra in (("here", []), ("ssh 127.0.0.1", far)):
                passed, attempts, seconds = run(replay, work / f"{replay}-{label.split()[0]}", extra + argv)
                rows.append((replay, label, passed, attempts, seconds))
                print(f"{replay:16} jails {label:14} {passed:3}/{attempts} passed  {seconds:7.1f} s", flush=True)
    side = json.loads((work / "reference.jsonl-ssh" / "manifest.json").read_text())["jail_side"]
    print(f"far side in the manifest: {side}")


if __name__ == "__main__":
    main(sys.argv[1:])
