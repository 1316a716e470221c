"""Every check is proven by the mistakes it rejects and the right answers it accepts: each task's solutions in
checks/solutions/<module>.jsonl say what they should get ("expect": "pass" or "fail") and what kind of answer
they are ("kind"); each is replayed through the real jail and the real check, and must get exactly that."""
import json
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

import pytest

import suite
from conftest import ROOT, read_results, run_pybench, write_jsonl

TASKS = [json.loads(line) for line in (ROOT / "tasks.jsonl").read_text().splitlines() if line.strip()]
SOLUTION_FILES = sorted((ROOT / "checks" / "solutions").glob("*.jsonl"))


def solutions(path):
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for number, record in enumerate(records, 1):
        assert set(record) >= {"id", "expect", "kind", "replies"}, f"{path.name}, line {number}: needs id, expect, kind, replies"
        assert record["expect"] in ("pass", "fail"), f"{path.name}, line {number}: expect is pass or fail"
    return records


def test_every_task_has_alternative_correct_and_several_wrong_solutions():
    expected = defaultdict(lambda: {"pass": 0, "fail": 0})
    for path in SOLUTION_FILES:
        for record in solutions(path):
            expected[record["id"]][record["expect"]] += 1
    short = {task["id"]: dict(expected[task["id"]]) for task in TASKS
             if expected[task["id"]]["pass"] < 2 or expected[task["id"]]["fail"] < 3}
    assert not short, f"{len(short)} task(s) lack 2 alternative correct or 3 wrong solutions: {short}"


@pytest.mark.parametrize("path", SOLUTION_FILES, ids=[path.stem for path in SOLUTION_FILES])
def test_solutions_get_the_verdict_they_expect(path, tmp_path):
    # Round r replays the r-th solution of every task that has one (as `validate` does); two rounds at a time (one per core).
    rounds = suite.solution_rounds(solutions(path))

    def replay(number):
        records = rounds[number]
        replay_file = write_jsonl(tmp_path / f"round{number}.jsonl", [{"id": r["id"], "replies": r["replies"]} for r in records])
        run_dir = tmp_path / f"run{number}"
        finished = run_pybench("--replay", replay_file, "--only", ",".join(r["id"] for r in records), "--out", run_dir)
        assert finished.returncode == 0, finished.stderr
        results = read_results(run_dir)
        return [(r, results[r["id"]]) for r in records]

    with ThreadPoolExecutor(2) as pool:
        outcomes = [pair for pairs in pool.map(replay, range(len(rounds))) for pair in pairs]
    wrong = [f"{r['id']} [{r['kind']}] expected {r['expect']}, got {'pass' if got['passed'] else 'fail'}: {got['reason']}"
             for r, got in outcomes if got["passed"] != (r["expect"] == "pass")]
    assert not wrong, "\n".join(wrong)
