"""The original checkout three ways: our corrected checks (checks/original.py) replace the tests we know to be defective,
each proven by correct solutions that pass and wrong ones that fail: in CI on our own fixture in the original's layout
(extended here with two tasks whose tests are defective the way the original's are), and on a real checkout when the
machine has one (PYBENCH_ORIGINAL, default /tmp/orig/PyBench)."""
import json
import os
import shutil
from pathlib import Path

import pytest

from kit import suite
from conftest import ROOT, read_results, run_pybench, write_jsonl

pytestmark = pytest.mark.slow  # every test here starts jails, models or whole runs

CHECKOUT = ROOT / "tests" / "fixtures" / "pybench_checkout"
TRAJECTORIES = ROOT / "tests" / "fixtures" / "pybench_trajectories.jsonl"
SOLUTIONS = [json.loads(line) for line in (ROOT / "tests" / "fixtures" / "original_corrected_solutions.jsonl").read_text().splitlines() if line]
REAL = Path(os.environ.get("PYBENCH_ORIGINAL", "/tmp/orig/PyBench"))
DEFECTIVE_TESTS = '''

def test_task_82(trajectory):
    # Defective the way the original's is: it reads another task's output.
    assert os.path.exists('./output/81.png')


def test_task_139(trajectory):
    # Defective the way the original's is: almost any answer passes.
    assert 'x' in trajectory[-1]['content']
'''


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """Our fixture checkout plus task 82 (turn a picture upside down) and task 139 (a second derivative)."""
    from PIL import Image

    folder = tmp_path_factory.mktemp("checkout") / "pybench"
    shutil.copytree(CHECKOUT, folder)
    records = json.loads((folder / "data" / "meta" / "task.json").read_text())
    records += [{"index": "82", "category1": "图像与音频", "user": "Turn this picture upside down and save it to ./output/82.png",
                 "file_paths": ["./data/82.png"], "attachments": []},
                {"index": "139", "category1": "数学", "user": "Find the second derivative: y = 2x + 1 + 1/(x+1)", "file_paths": [], "attachments": []}]
    (folder / "data" / "meta" / "task.json").write_text(json.dumps(records, ensure_ascii=False, indent=1))
    picture = Image.linear_gradient("L").resize((48, 32)).convert("RGB")
    picture.paste((200, 30, 30), (0, 0, 16, 8))                     # a red corner: no flip looks like another
    picture.save(folder / "data" / "82.png")
    with open(folder / "data" / "unit_test" / "tests.py", "a") as tests:
        tests.write(DEFECTIVE_TESTS)
    return folder


def replay_rounds(checkout: Path, records: list[dict], out: Path) -> list[tuple[dict, dict]]:
    """Each solution replayed on the checkout, round by round (suite.solution_rounds): (solution, its result)."""
    outcomes = []
    for number, chosen in enumerate(suite.solution_rounds(records)):
        replay = write_jsonl(out / f"round{number}.jsonl", [{"id": r["id"], "replies": r["replies"]} for r in chosen])
        finished = run_pybench("--tasks", checkout, "--replay", replay, "--only", ",".join(r["id"] for r in chosen), "--out", out / f"run{number}")
        assert finished.returncode == 0, finished.stderr
        results = read_results(out / f"run{number}")
        outcomes += [(record, results[record["id"]]) for record in chosen]
    return outcomes


def wrongly_judged(outcomes) -> list[str]:
    return [f"{r['id']} [{r['kind']}] expected {r['expect']}, corrected check gave {got.get('corrected')}"
            for r, got in outcomes if not got.get("corrected") or got["corrected"]["passed"] != (r["expect"] == "pass")]


def test_corrected_checks_are_proven_on_our_fixture(checkout, tmp_path):
    ids = {record["index"] for record in json.loads((checkout / "data" / "meta" / "task.json").read_text())}
    chosen = [record for record in SOLUTIONS if record["id"] in ids]
    assert {record["id"] for record in chosen} == {"11", "82", "139"} and len(chosen) >= 12
    outcomes = replay_rounds(checkout, chosen, tmp_path)
    assert not wrongly_judged(outcomes), "\n".join(wrongly_judged(outcomes))
    defective = {r["id"]: got["passed"] for r, got in outcomes if r["kind"] in ("mirrored left to right", "a wrong power")}
    assert defective == {"82": False, "139": True}, "the defective tests are what the corrected checks replace"


def test_three_figures_in_the_summary_and_on_the_first_screen(checkout, tmp_path):
    replay = tmp_path / "replay.jsonl"
    lines = TRAJECTORIES.read_text().splitlines()
    replay.write_text("\n".join(lines + [json.dumps({"id": "139", "replies": ["Finished: y'' = 2/(x+1)^3"]}),
                                         json.dumps({"id": "82", "replies": ["Finished: I could not open it."]})]) + "\n")
    out = tmp_path / "run"
    finished = run_pybench("--tasks", checkout, "--replay", replay, "--out", out)
    assert finished.returncode == 0, finished.stderr
    # published: 2 52 67 78 134 140 pass, and 68 (67's output) and 139 by their defective tests: 8/10;
    # honest: 11 68 82 139 set aside: 6/6; corrected: 11 (joined table), 68 and 139 pass our checks, 82 fails: 9/10
    assert "original way:  8/10 = 80.0% (95% 49.0-94.3" in finished.stdout
    assert "honest way:    6/6 = 100.0% (95% 61.0-100.0" in finished.stdout
    assert "corrected way: 9/10 = 90.0% (95% 59.6-98.2" in finished.stdout
    built = run_pybench("report", out)
    assert built.returncode == 0, built.stderr
    assert "corrected way: 9/10" in built.stdout
    first_screen = (out / "report" / "report.html").read_text().split("<h2>Table 3")[0]
    for name, figure, interval in (("published", "80.0%", "49.0-94.3"), ("honest", "100.0%", "61.0-100.0"), ("corrected", "90.0%", "59.6-98.2")):
        assert f'<div class="note">{name}</div><div class="score small">{figure}</div>' in first_screen and interval in first_screen
    page = (out / "report" / "tasks" / "139.html").read_text()
    assert "Our corrected check (original:task_139)" in page


@pytest.mark.skipif(not (REAL / "data" / "meta" / "task.json").is_file(), reason="no real PyBench checkout on this machine")
def test_corrected_checks_are_proven_on_the_real_checkout(tmp_path):
    outcomes = replay_rounds(REAL, SOLUTIONS, tmp_path)
    assert len(outcomes) == len(SOLUTIONS) and not wrongly_judged(outcomes), "\n".join(wrongly_judged(outcomes))
