"""The suite proves itself, through `validate`: every reference solution passes its check, every near-miss wrong one
fails it, and every solution in checks/solutions/<module>.jsonl gets the verdict it says it should ("expect": "pass"
or "fail"), each replayed through the real jail and the real check. The test run proves every task with its
reference and wrong replays; the proof (marker `proof`, `pytest -m proof tests`) replays every solution, 1,334 of them.
The coverage of those files is checked beforehand, in the fast tier, with the kit's own readers."""
from collections import defaultdict

import pytest

from kit import suite
from conftest import ROOT, part_of_suite, run_pybench

TASKS = suite.load_tasks(ROOT / "tasks.jsonl")
SOLUTION_FILES = sorted((ROOT / "checks" / "solutions").glob("*.jsonl"))


def test_every_task_has_a_reference_and_a_wrong_solution():
    ids = sorted(task.id for task in TASKS)
    for name, expect in (("reference.jsonl", "pass"), ("wrong.jsonl", "fail")):
        replayed = sorted(record["id"] for record in suite.read_replays(ROOT / "checks" / name, expect))
        assert replayed == ids, f"checks/{name} does not cover exactly the tasks"


def test_every_task_has_alternative_correct_and_several_wrong_solutions():
    expected = defaultdict(lambda: {"pass": 0, "fail": 0})
    for path in SOLUTION_FILES:
        for record in suite.read_replays(path, None):
            assert record["kind"] != path.stem, f"{record['source']}: a solution says what kind of answer it is ('kind')"
            expected[record["id"]][record["expect"]] += 1
    short = {task.id: dict(expected[task.id]) for task in TASKS if expected[task.id]["pass"] < 2 or expected[task.id]["fail"] < 3}
    assert not short, f"{len(short)} task(s) lack 2 alternative correct or 3 wrong solutions: {short}"


def test_the_validity_table_counts_the_solution_files():
    """docs/checks.md's table: per check module its tasks, correct and wrong solutions, and how many were written blind
    ("author": "blind", the only author a solution may name: someone who read only the query and the input files)."""
    rows = {}
    for line in (ROOT / "docs" / "checks.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 5 and cells[1].isdigit():
            rows[cells[0]] = tuple(int(c) for c in cells[1:])
    counted = {}
    for path in SOLUTION_FILES:
        records = suite.read_replays(path, None)
        assert all(record.get("author", "blind") == "blind" for record in records), f"{path.name}: an author other than 'blind'"
        counted[path.stem] = (sum(task.check_module == path.stem for task in TASKS), sum(r["expect"] == "pass" for r in records),
                              sum(r["expect"] == "fail" for r in records), sum(r.get("author") == "blind" for r in records))
    assert rows == counted


def proven(*validate_arguments) -> None:
    """validate, run as a user runs it, says every task of the suite it was given is proven."""
    finished = run_pybench("validate", *validate_arguments, timeout=3600)
    assert finished.returncode == 0, finished.stdout[-5000:] + finished.stderr[-2000:]
    failing = [line for line in finished.stdout.splitlines() if line.startswith("FAIL")]
    assert not failing, "\n".join(failing)
    assert f"validate: {len(TASKS)} of {len(TASKS)} task(s) proven" in finished.stdout


@pytest.mark.slow
def test_validate_proves_every_task_with_its_reference_and_wrong_replays(tmp_path):
    tasks, count = part_of_suite(tmp_path / "suite")
    assert count == len(TASKS)
    proven(tasks)


@pytest.mark.slow
@pytest.mark.proof
def test_validate_proves_the_whole_suite(tmp_path):
    proven("--keep", tmp_path / "proof")
