"""Teachers' commands: `validate` proves a suite (inputs, checks, docstrings, reference replays pass, wrong ones fail),
`grade` scores students' notebooks and replay lines against one task, in the real jail with the real check."""
import pytest
import nbformat

from conftest import read_results, run_pybench, write_jsonl

pytestmark = pytest.mark.slow  # every test here starts jails, models or whole runs

CHECKS = '''
from pathlib import Path


def square(answer, output, data):
    """The answer gives 12 squared, 144."""
    assert "144" in answer, "the answer does not say 144"


def total(answer, output, data):
    """./output/total.txt holds the sum of the numbers in data/numbers.txt."""
    expected = sum(int(line) for line in (data / "numbers.txt").read_text().split())
    written = (output / "total.txt").read_text().strip() if (output / "total.txt").is_file() else None
    assert written == str(expected), f"./output/total.txt holds {written!r}, not {expected}"


def loose(answer, output, data):
    """Meant to check for 7, but any answer passes: its wrong replay proves it."""


def silent(answer, output, data):
    assert "7" in answer
'''
TASKS = [{"id": "square", "category": "math", "query": "What is 12 squared?", "files": [], "check": "suite:square"},
         {"id": "total", "category": "text", "query": "Add up the numbers in ./data/numbers.txt, write it to ./output/total.txt",
          "files": ["numbers.txt"], "check": "suite:total"}]
SUM = "```python\ntotal = sum(int(x) for x in open('./data/numbers.txt').read().split())\nopen('./output/total.txt', 'w').write(str(total))\n```"
REFERENCE = [{"id": "square", "replies": ["```python\nprint(12 ** 2)\n```", "Finished: 144"]},
             {"id": "total", "replies": [SUM, "Finished: written"]}]
WRONG = [{"id": "square", "replies": ["Finished: 124"]},
         {"id": "total", "replies": ["```python\nopen('./output/total.txt', 'w').write('6')\n```", "Finished: 6"]}]


def suite_with_replays(make_suite, tasks, reference, wrong, files=None):
    tasks_path = make_suite(tasks, CHECKS, files if files is not None else {"numbers.txt": b"1\n2\n3\n4\n"})
    write_jsonl(tasks_path.parent / "checks" / "reference.jsonl", reference)
    write_jsonl(tasks_path.parent / "checks" / "wrong.jsonl", wrong)
    return tasks_path


def test_validate_proves_a_good_suite(make_suite):
    tasks_path = suite_with_replays(make_suite, TASKS, REFERENCE, WRONG)
    (tasks_path.parent / "checks" / "solutions").mkdir()
    write_jsonl(tasks_path.parent / "checks" / "solutions" / "suite.jsonl",
                [{"id": "square", "expect": "pass", "kind": "in words", "replies": ["Finished: one hundred and forty-four, 144"]}])
    proven = run_pybench("validate", tasks_path)
    assert proven.returncode == 0, proven.stdout + proven.stderr
    lines = [line.split() for line in proven.stdout.splitlines() if line.startswith(("ok", "FAIL"))]
    assert [(line[0], line[1], line[2]) for line in lines] == [("ok", "square", "3"), ("ok", "total", "2")]
    assert "2 of 2 task(s) proven" in proven.stdout


def test_validate_names_every_broken_task_and_exits_1(make_suite):
    tasks = TASKS + [{"id": "loose", "category": "math", "query": "What is 3 + 4?", "files": [], "check": "suite:loose"},
                     {"id": "silent", "category": "math", "query": "What is 3 + 4?", "files": [], "check": "suite:silent"},
                     {"id": "nofile", "category": "text", "query": "Read ./data/absent.txt", "files": ["absent.txt"], "check": "suite:total"},
                     {"id": "nocheck", "category": "math", "query": "?", "files": [], "check": "suite:missing"}]
    reference = REFERENCE + [{"id": "loose", "replies": ["Finished: 7"]}, {"id": "silent", "replies": ["Finished: 7"]}]
    wrong = [WRONG[0], {"id": "total", "replies": [SUM, "Finished: done"]},              # a "wrong" replay that is right
             {"id": "loose", "replies": ["Finished: 8"]}]                              # passes a check that checks nothing
    checked = run_pybench("validate", suite_with_replays(make_suite, tasks, reference, wrong))
    assert checked.returncode == 1, checked.stdout + checked.stderr
    verdicts = {line.split()[1]: line for line in checked.stdout.splitlines() if line.startswith(("ok", "FAIL"))}
    assert verdicts["square"].startswith("ok")
    assert verdicts["total"].startswith("FAIL") and "wrong.jsonl:2 [wrong] should fail but passed" in verdicts["total"]
    assert verdicts["loose"].startswith("FAIL") and "should fail but passed" in verdicts["loose"]
    assert "has no docstring" in verdicts["silent"] and "no replay that should fail" in verdicts["silent"]
    assert "absent.txt does not exist" in verdicts["nofile"]
    assert "no function missing()" in verdicts["nocheck"]
    assert "1 of 6 task(s) proven; 5 failed" in checked.stdout


def notebook(path, cells):
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell(text) if kind == "code" else nbformat.v4.new_markdown_cell(text) for kind, text in cells]
    nbformat.write(book, path)
    return path


def test_grade_scores_notebooks_and_replay_lines_and_writes_a_run_and_a_report(make_suite, tmp_path):
    tasks_path = suite_with_replays(make_suite, TASKS, REFERENCE, WRONG)
    alice = notebook(tmp_path / "alice.ipynb", [("markdown", "My work"), ("code", "numbers = open('./data/numbers.txt').read().split()"),
                                               ("code", "open('./output/total.txt', 'w').write(str(sum(map(int, numbers))))"),
                                               ("markdown", "The total is 10.")])
    bob = notebook(tmp_path / "bob.ipynb", [("code", "open('./output/total.txt', 'w').write('1234')"), ("markdown", "Done")])
    carol = write_jsonl(tmp_path / "carol.jsonl", [{"replies": [SUM, "Finished"]}])
    out = tmp_path / "graded"
    graded = run_pybench("grade", "--tasks", tasks_path, "--task", "total", alice, bob, carol, "--out", out)
    assert graded.returncode == 0, graded.stderr
    lines = graded.stdout.splitlines()
    assert lines[0] == "alice.ipynb: pass" and lines[2] == "carol.jsonl: pass"
    assert lines[1].startswith("bob.ipynb: fail") and "'1234', not 10" in lines[1]
    results = read_results(out)
    assert set(results) == {"alice.ipynb", "bob.ipynb", "carol.jsonl"} and results["alice.ipynb"]["task"] == "total"
    assert results["alice.ipynb"]["messages"][-1]["content"] == "The total is 10." and results["alice.ipynb"]["cells"] == 2
    assert (out / "report" / "report.html").is_file() and (out / "report" / "tasks" / "bob.ipynb.html").is_file()
    unknown = run_pybench("grade", "--tasks", tasks_path, "--task", "absent", alice, "--out", tmp_path / "x")
    assert unknown.returncode == 2 and "no task with id 'absent'" in unknown.stderr
