"""The chart checks' time per check, this tree's checks against another tree's (main, before the picture checks).

    .venv/bin/python tests/benches/bench_chart_checks.py OTHER_TREE [--repeat 3]

Each chart task's reference solution is run once, outside any jail, by the suite's jail interpreter with this tree's
figure recorder (jailed.figure_recorder), leaving its ./output and figures.json in a scratch folder; then each tree's
check (OTHER_TREE/checks and this tree's checks, each in its own process) is timed on those same files, `--repeat`
times, best kept. Prints per task both times and the ratio, and the totals. Not a CI test: it measures.
"""
import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".jail" / "suite" / "bin" / "python"

MAKE = r'''
import json, os, sys
sys.path.insert(0, {root!r})
import matplotlib; matplotlib.use("Agg")
from kit import jailed
import matplotlib.figure, matplotlib.pyplot as plt
patches = jailed.figure_recorder()
patches["matplotlib.figure"](matplotlib.figure); patches["matplotlib.pyplot"](plt)
os.chdir({work!r})
scope = {{}}
for cell in json.loads(open("cells.json").read()):
    exec(cell, scope)
open("figures.json", "w").write(patches["take"]() or "[]")
'''

TIME = r'''
import importlib, json, sys, time
from pathlib import Path
sys.path.insert(0, {checks!r})
out = {{}}
for task_id, work, check, answer in json.loads(sys.stdin.read()):
    module, function = check.split(":")
    check_function = getattr(importlib.import_module(module), function)
    best, verdict = None, None
    for _ in range({repeat}):
        started = time.perf_counter()
        try:
            check_function(answer, Path(work) / "output", Path(work) / "data")
            verdict = "pass"
        except AssertionError as error:
            verdict = "fail: " + str(error)[:80]
        seconds = time.perf_counter() - started
        best = seconds if best is None else min(best, seconds)
    out[task_id] = (best, verdict)
print(json.dumps(out))
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    tasks = [json.loads(line) for line in (ROOT / "tasks.jsonl").read_text().splitlines() if line.strip()]
    chart_checks = {"charts:" + name for name in re.findall(r"^def (\w+)\(answer", (ROOT / "checks" / "charts.py").read_text(), re.M)
                    if re.search(rf"def {name}\(answer.*?(?=\ndef |\Z)", (ROOT / "checks" / "charts.py").read_text(), re.S).group(0).count("figure")}
    chart_checks |= {"audio:loudest_second", "audio:waveform_plot", "audio:chirp_spectrogram", "text:review_rating_chart", "maths:ode_oscillator"}
    references = {}
    for line in (ROOT / "checks" / "reference.jsonl").read_text().splitlines():
        record = json.loads(line)
        references.setdefault(record["id"], record["replies"])
    scratch = Path(tempfile.mkdtemp(prefix="bench-charts-"))
    jobs = []
    for task in tasks:
        if task["check"] not in chart_checks or task["id"] not in references:
            continue
        work = scratch / task["id"]
        (work / "output").mkdir(parents=True)
        (work / "data").mkdir()
        for name in task.get("files", []):
            shutil.copy(ROOT / "files" / name, work / "data" / Path(name).name)  # checks refuse links
        cells = [m for reply in references[task["id"]] for m in re.findall(r"```python\n(.*?)```", reply, re.S)]
        (work / "cells.json").write_text(json.dumps(cells))
        made = subprocess.run([str(PYTHON), "-c", MAKE.format(root=str(ROOT), work=str(work))], capture_output=True, text=True)
        if made.returncode:
            print(f"{task['id']}: its reference did not run here ({made.stderr.strip().splitlines()[-1:]})")
            continue
        jobs.append((task["id"], str(work), task["check"], references[task["id"]][-1]))
    timed = {}
    for tree in (args.other.resolve(), ROOT):
        done = subprocess.run([str(PYTHON), "-c", TIME.format(checks=str(tree / "checks"), repeat=args.repeat)], input=json.dumps(jobs),
                              capture_output=True, text=True, cwd=str(tree / "checks"))
        if done.returncode:
            sys.exit(f"bench: the checks of {tree} did not run: {done.stderr.strip()[-300:]}")
        timed[tree] = json.loads(done.stdout)
    other, this = timed[args.other.resolve()], timed[ROOT]
    print(f"{'task':<12} {'other s':>8} {'this s':>8} {'ratio':>6}  verdicts (other / this)")
    for task_id, *_ in jobs:
        (a, va), (b, vb) = other[task_id], this[task_id]
        print(f"{task_id:<12} {a:8.3f} {b:8.3f} {b / a if a else float('nan'):6.2f}  {va[:30]} / {vb[:60]}")
    total_a, total_b = sum(v[0] for v in other.values()), sum(v[0] for v in this.values())
    print(f"{'total':<12} {total_a:8.3f} {total_b:8.3f} {total_b / total_a:6.2f}  ({len(jobs)} chart checks, best of {args.repeat})")


if __name__ == "__main__":
    main()
