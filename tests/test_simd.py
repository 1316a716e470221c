"""The same verdict on every machine: numpy picks SIMD code paths (sorts, reductions, maths functions) by the CPU it
finds, so a check could give another verdict on a CPU without AVX-512 or AVX2. NPY_DISABLE_CPU_FEATURES, set for the
harness, reaches every jail (sandbox.jail_config); with it listing every feature this CPU has above numpy's baseline,
the jails run numpy's baseline code, as on the oldest CPU numpy supports."""
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, code, part_of_suite, read_results, write_jsonl

JAIL_PYTHON = ROOT / ".jail" / "suite" / "bin" / "python"
FEATURES = ("from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__\n"
            "print('SIMD in use:', sorted(f for f in __cpu_dispatch__ if __cpu_features__.get(f)))")


def features_above_baseline() -> list[str]:
    """The SIMD targets numpy (in the suite's jail environment) dispatches to on this CPU, beyond its baseline."""
    found = subprocess.run([str(JAIL_PYTHON), "-c", FEATURES], capture_output=True, text=True, check=True).stdout
    return json.loads(found.split(":", 1)[1].strip().replace("'", '"'))


def at_baseline() -> dict:
    return {**os.environ, "NPY_DISABLE_CPU_FEATURES": " ".join(features_above_baseline())}


@pytest.mark.slow
def test_the_jail_runs_numpy_at_the_baseline_when_asked(tmp_path):
    if not features_above_baseline():
        pytest.skip("this CPU has no SIMD feature above numpy's baseline: nothing to switch off")
    replay = write_jsonl(tmp_path / "replay.jsonl", [{"id": "math-06", "replies": [code(FEATURES), "done"]}])
    runs = {}
    for name, env in (("found", os.environ), ("baseline", at_baseline())):
        finished = subprocess.run([sys.executable, str(ROOT / "pybench.py"), "--replay", str(replay), "--only", "math-06",
                                   "--out", str(tmp_path / name)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
        assert finished.returncode == 0, finished.stderr
        runs[name] = "\n".join(str(m["content"]) for m in read_results(tmp_path / name)["math-06"]["messages"])
    assert "SIMD in use: []" in runs["baseline"], runs["baseline"][-400:]
    assert "SIMD in use: []" not in runs["found"], runs["found"][-400:]


NUMPY_HEAVY = ("tables", "maths")  # the check modules whose verdicts rest on numpy's sorts, reductions and maths


@pytest.mark.slow
@pytest.mark.proof
def test_validate_gives_the_same_verdicts_at_the_simd_baseline(tmp_path):
    """validate at the baseline, on the tasks whose checks rest on numpy (NUMPY_HEAVY: 37 tasks, their 74 reference and
    wrong replays and every 4th of their alternative solutions): every one gets the verdict it expects, the verdicts
    test_suite.py holds the same replays to with numpy's dispatch as found, so each gets the same verdict on both CPUs'
    paths. Part of the proof (`pytest -m proof`), for CI's 40 minutes: the test run holds the baseline's reach into the
    jail (above). The whole suite at the baseline was run by hand (docs/checks.md: its figures)."""
    tasks, count = part_of_suite(tmp_path / "suite", NUMPY_HEAVY, solutions_every=4)
    finished = subprocess.run([sys.executable, str(ROOT / "pybench.py"), "validate", str(tasks)], capture_output=True, text=True,
                              env=at_baseline(), cwd=ROOT, timeout=3600)
    failed = [line for line in finished.stdout.splitlines() if line.startswith("FAIL")]
    assert finished.returncode == 0 and not failed, "\n".join(failed[:20]) or finished.stderr[-2000:]
    assert f"validate: {count} of {count} task(s) proven" in finished.stdout
