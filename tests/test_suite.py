"""The suite proves itself: every reference solution passes its check and every near-miss wrong one fails it."""
import json

from conftest import ROOT, read_results, run_pybench

TASKS = [json.loads(line) for line in (ROOT / "tasks.jsonl").read_text().splitlines() if line.strip()]


def test_every_task_has_a_reference_and_a_wrong_solution():
    ids = [task["id"] for task in TASKS]
    for name in ("reference.jsonl", "wrong.jsonl"):
        replayed = [json.loads(line)["id"] for line in (ROOT / "checks" / name).read_text().splitlines() if line.strip()]
        assert sorted(replayed) == sorted(ids), f"checks/{name} does not cover exactly the tasks"


def test_reference_replay_passes_every_task(tmp_path):
    finished = run_pybench("--replay", ROOT / "checks" / "reference.jsonl", "--out", tmp_path / "run")
    assert finished.returncode == 0, finished.stderr
    results = read_results(tmp_path / "run")
    assert len(results) == len(TASKS)
    failed = {task_id: result["reason"] for task_id, result in results.items() if not result["passed"]}
    assert not failed, failed


def test_wrong_replay_passes_no_task(tmp_path):
    finished = run_pybench("--replay", ROOT / "checks" / "wrong.jsonl", "--out", tmp_path / "run")
    assert finished.returncode == 0, finished.stderr
    results = read_results(tmp_path / "run")
    assert len(results) == len(TASKS)
    passed = [task_id for task_id, result in results.items() if result["passed"]]
    assert not passed, passed
    assert all(result["reason"] for result in results.values())
