"""The cost of the channel's checks (issue 24): a cell's round-trip with the host's checks (the marker after the result,
the worker seen waiting in /proc, leftover processes holding the pipes killed) beside the same worker with those
checks switched off, cells interleaved so that drift hits both alike; with no other process in the jail, and with
four sleeping children (each one's fds listed after every cell). Not a test: `.venv/bin/python tests/benches/bench_channel.py`."""
import statistics
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kit import sandbox  # noqa: E402


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main(cells: int = 400) -> None:
    work = Path(tempfile.mkdtemp(prefix="pybench-bench-channel-"))
    checked, unchecked = sandbox.Jail("checked", [], sandbox.JailLimits(), work), sandbox.Jail("unchecked", [], sandbox.JailLimits(), work)
    for jail in (checked, unchecked):
        jail.start()
    off = (mock.patch.object(unchecked, "worker_waiting", lambda: True), mock.patch.object(unchecked, "fence_leftovers", lambda: None))
    for patch in off:
        patch.start()
    try:
        for label, setup in (("no other process", "pass"),
                             ("4 sleeping children", "import subprocess\nsleepers = [subprocess.Popen(['sleep', '600']) for _ in range(4)]")):
            for jail in (checked, unchecked):
                assert jail.run(setup).status == "ok"
            times = {"checked": [], "unchecked": []}
            for _ in range(cells):
                times["checked"].append(timed(lambda: checked.run("pass")))
                times["unchecked"].append(timed(lambda: unchecked.run("pass")))
            on, without = statistics.median(times["checked"]), statistics.median(times["unchecked"])
            print(f"cell round-trip, {label:20} with the checks {1000 * on:6.3f} ms, without {1000 * without:6.3f} ms "
                  f"(median of {cells}): ratio {on / without:.2f}x, {1000 * (on - without):+.3f} ms per cell")
    finally:
        for patch in off:
            patch.stop()
        for jail in (checked, unchecked):
            jail.kill()


if __name__ == "__main__":
    main()
