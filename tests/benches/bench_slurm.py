"""`pybench.py slurm` against one process, side by side: the same tasks replayed (checks/reference.jsonl, --limit N)
as one run on this machine, then as a 4-shard array (one CPU an element) and its merge job on a single-node Slurm
started here (tests/slurm_cluster.py, as root). Prints the cluster's start time, both wall times and their ratio
(tests/test_slurm.py prints the requeue's delay).

    .venv/bin/python tests/benches/bench_slurm.py [TASKS]      # default 16
"""
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
import slurm_cluster  # noqa: E402

tasks = int(sys.argv[1]) if len(sys.argv) > 1 else 16
if why := slurm_cluster.why_not_here():
    sys.exit(f"no cluster here: {why}")
folder = Path(tempfile.mkdtemp(prefix="pybench-slurm-"))
folder.chmod(0o755)
kit = [str(ROOT / ".venv" / "bin" / "python"), str(ROOT / "pybench.py")]
replay = ["--replay", str(ROOT / "checks" / "reference.jsonl"), "--limit", str(tasks)]
try:
    began = time.monotonic()
    environment = slurm_cluster.start(folder)
    print(f"cluster up in {time.monotonic() - began:.1f} s")

    began = time.monotonic()
    subprocess.run([*kit, *replay, "--out", str(folder / "one"), "--no-report"], check=True, capture_output=True)
    one = time.monotonic() - began

    def state(job: str) -> str:
        shown = subprocess.run(["scontrol", "-o", "show", "job", job], capture_output=True, text=True, env=environment).stdout
        return (re.search(r"JobState=(\S+)", shown) or [None, "GONE"])[1]

    began = time.monotonic()
    submitted = subprocess.run([*kit, "slurm", "--shards", "4", *replay, "--out", str(folder / "array"), "--", "--cpus-per-task=1"],
                               check=True, capture_output=True, text=True, env=environment).stdout
    array, merge = re.search(r"array job (\d+) .* merge job (\d+)", submitted).groups()
    while state(array) not in ("COMPLETED", "FAILED", "CANCELLED", "GONE"):
        time.sleep(0.2)
    shards = time.monotonic() - began
    while state(merge) not in ("COMPLETED", "FAILED", "CANCELLED"):
        time.sleep(0.2)
    merged = time.monotonic() - began
    lines = sum(len((folder / "array" / f"shard-{k}" / "results.jsonl").read_text().splitlines()) for k in range(1, 5))
    print(f"{tasks} tasks: one process {one:.1f} s; the array {shards:.1f} s ({shards / one:.2f}x), with its merge job "
          f"{merged:.1f} s ({merged / one:.2f}x); {lines} result lines")

finally:
    slurm_cluster.stop(folder)
    shutil.rmtree(folder, ignore_errors=True)
