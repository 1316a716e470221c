"""The far side's cost and verdicts (issue 46): the suite's reference replay and wrong replay run through the command
line twice each, with the jails here and with them behind `ssh` to an sshd on 127.0.0.1 (started here, as
tests/test_far.py starts it), one after the other; the verdicts (143/143 and 0/143 expected) and the wall times side
by side. Not a test (minutes): `nice -n 10 .venv/bin/python tests/benches/bench_far.py [--replays wrong.jsonl] [--at-once]`;
`--jails`: a jail's life and a cell alone, here and through the link, instead."""
import json
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
from test_far import sshd  # noqa: E402


def run(replay: str, out: Path, extra: list[str]) -> subprocess.Popen:
    """One replay run, started."""
    return subprocess.Popen([sys.executable, str(ROOT / "pybench.py"), "--replay", str(ROOT / "checks" / replay), "--out", str(out),
                             "--no-report", *extra], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def outcome(run: subprocess.Popen, out: Path, started: float) -> tuple[int, int, float]:
    """(passed, attempts, wall seconds) of a replay run, once it has ended."""
    _, errors = run.communicate()
    seconds = time.monotonic() - started
    if run.returncode != 0:
        raise SystemExit(f"{out.name}: exit {run.returncode}: {errors.strip()[-500:]}")
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return sum(result["passed"] for result in results), len(results), seconds


def jail_lives(command: list[str], rounds: int = 10) -> None:
    """A jail's whole life (opened, one cell, killed) and one cell alone, here and through the link, interleaved so that
    the machine's load hits both alike: medians."""
    import statistics

    from kit import far, sandbox

    work = Path(tempfile.mkdtemp(prefix="pybench-bench-far-jails-"))
    times = {side: {"life": [], "cell": []} for side in ("here", "ssh")}
    far.use(shlex.join(command))  # one link, kept, as in a run
    for _ in range(rounds):
        for side in ("here", "ssh"):
            sandbox.far_jail = far.FarJail if side == "ssh" else None
            began = time.monotonic()
            jail = sandbox.new_jail("bench", [], sandbox.JailLimits(), work)
            jail.run("x = 1")
            cell = time.monotonic()
            jail.run("print(x)")
            times[side]["cell"].append(time.monotonic() - cell)
            jail.kill()
            times[side]["life"].append(time.monotonic() - began)
    far.close_links()
    for side, measured in times.items():
        print(f"a jail's life {side:5} {statistics.median(measured['life']):6.3f} s, a cell {1000 * statistics.median(measured['cell']):7.2f} ms "
              f"(median of {rounds})", flush=True)


def main(argv: list[str]) -> None:
    """--replays NAME,...: which of checks/ (default reference.jsonl,wrong.jsonl); --at-once: both sides of a replay run
    at the same time (the same load for both, on a machine others share); the rest goes to every run."""
    replays = ["reference.jsonl", "wrong.jsonl"]
    if "--replays" in argv:
        at = argv.index("--replays")
        replays, argv = argv[at + 1].split(","), argv[:at] + argv[at + 2:]
    at_once = "--at-once" in argv
    argv = [word for word in argv if word != "--at-once"]
    work = Path(tempfile.mkdtemp(prefix="pybench-bench-far-"))
    with sshd(work) as command:
        if "--jails" in argv:
            return jail_lives(command)
        for replay in replays:
            results, pending = {}, []
            for label, extra in (("here", []), ("ssh 127.0.0.1", ["--far", shlex.join(command)])):
                out = work / f"{replay}-{label.split()[0]}"
                started = (run(replay, out, extra + argv), out, time.monotonic())
                if at_once:
                    pending.append((label, started))
                else:
                    results[label] = outcome(*started)
            results |= {label: outcome(*started) for label, started in pending}
            for label, (passed, attempts, seconds) in results.items():
                print(f"{replay:16} jails {label:14} {passed:3}/{attempts} passed  {seconds:7.1f} s"
                      f"{' (both sides at once)' if at_once else ''}", flush=True)
        side = json.loads((work / f"{replays[0]}-ssh" / "manifest.json").read_text())["jail_side"]
    print(f"far side in the manifest: {side}")


if __name__ == "__main__":
    main(sys.argv[1:])
