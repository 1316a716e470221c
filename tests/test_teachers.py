"""Teachers' commands: `validate` proves a suite (inputs, checks, docstrings, reference replays pass, wrong ones fail),
`grade --task` grades students' notebooks and replay lines against one task as a class of one each, in the real
jail with the real check."""
import base64
import csv
import html
import io
import json
import re

import pytest
import nbformat

from conftest import run_pybench, write_jsonl

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
                [{"id": "square", "expect": "pass", "kind": "in words", "replies": ["Finished: one hundred and forty-four, 144"]},
                 {"id": "square", "expect": "pass", "kind": "mis-added", "replies": [REFERENCE[0]["replies"][0], "144, and twice that is 298"]}])
    proven = run_pybench("validate", tasks_path, "--keep", tasks_path.parent / "kept")
    assert proven.returncode == 0, proven.stdout + proven.stderr
    lines = [line.split() for line in proven.stdout.splitlines() if line.startswith(("ok", "FAIL"))]
    assert [(line[0], line[1], line[2]) for line in lines] == [("ok", "square", "4"), ("ok", "total", "2")]
    assert "2 of 2 task(s) proven" in proven.stdout
    assert "note  square: solutions/suite.jsonl:2 [mis-added] states 298, which none of its cells printed" in proven.stdout.splitlines()
    verdicts = [json.loads(line) for line in (tasks_path.parent / "kept" / "validate.jsonl").read_text().splitlines()]
    assert len(verdicts) == 6 and {"id": "square", "replay": "checks/wrong.jsonl:1", "kind": "wrong", "expect": "fail", "got": "fail",
                                   "reason": "the answer does not say 144", "unprinted_numbers": []} in verdicts


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


def test_grade_task_grades_files_as_a_class_of_one_each_through_the_class_grader(make_suite, tmp_path):
    tasks_path = suite_with_replays(make_suite, TASKS, REFERENCE, WRONG)
    alice = notebook(tmp_path / "alice.ipynb", [("markdown", "My work"), ("code", "numbers = open('./data/numbers.txt').read().split()"),
                                               ("code", "open('./output/total.txt', 'w').write(str(sum(map(int, numbers))))"),
                                               ("markdown", "The total is 10.")])
    broken = tmp_path / "broken.ipynb"
    broken.write_text('{"cells": [')
    bob = notebook(tmp_path / "bob.ipynb", [("code", "open('./output/total.txt', 'w').write('1234')"), ("markdown", "Done")])
    carol = write_jsonl(tmp_path / "carol.jsonl", [{"replies": [SUM, "Finished"]}])
    roster = tmp_path / "roster.csv"
    roster.write_text("email,student\na@x,alice\nb@x,bob\nc@x,carol\nd@x,=dave\n")
    (tasks_path.parent / "overrides.csv").write_text("student,task,points,why\nBob,total,0.5,the sum was right on paper\nzed,total,1,x\n")
    out = tmp_path / "graded"
    graded = run_pybench("grade", "--tasks", tasks_path, "--task", "total", alice, broken, bob, carol, "--roster", roster, "--out", out)
    assert graded.returncode == 0, graded.stdout + graded.stderr
    lines = {line.split(": ", 1)[0]: line for line in graded.stdout.splitlines() if ": " in line}
    assert lines["alice.ipynb"] == "alice.ipynb: pass 1/1" and lines["carol.jsonl"] == "carol.jsonl: pass 1/1"
    assert lines["bob.ipynb"].startswith("bob.ipynb: fail 0/1") and "'1234', not 10" in lines["bob.ipynb"]
    assert lines["broken.ipynb"].startswith("broken.ipynb: fail 0/1: not graded: the file is not JSON")
    assert lines["not on the roster"] == "not on the roster: broken, graded under that name"
    with open(out / "grades.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    assert "override from overrides.csv: bob, total: 0.5 points (the sum was right on paper)" in graded.stdout.splitlines()
    assert "override from overrides.csv not applied: no student zed in this class" in graded.stdout.splitlines()
    assert rows == [["student", "total", "total points"], ["alice", "1", "1"], ["bob", "0.5", "0.5"], ["carol", "1", "1"],
                    ["'=dave", "0", "0"], ["broken", "0", "0"]]
    results = {result["submission"]: result for result in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert set(results) == {"alice.ipynb", "broken.ipynb", "bob.ipynb", "carol.jsonl"} and results["alice.ipynb"]["task"] == "total"
    assert results["alice.ipynb"]["messages"][-1]["content"] == "The total is 10." and results["alice.ipynb"]["cells"] == 2
    assert sorted(page.name for page in (out / "feedback").iterdir()) == ["alice.html", "bob.html", "broken.html", "carol.html", "dave.html"]
    overview = (out / "overview.html").read_text()
    assert "not on the roster: broken, graded under that name" in overview and "1 &times; no submission" in overview
    assert "set by your teacher: the sum was right on paper" in (out / "feedback" / "bob.html").read_text()
    unknown = run_pybench("grade", "--tasks", tasks_path, "--task", "absent", alice, "--out", tmp_path / "x")
    assert unknown.returncode == 2 and "no task with id 'absent'" in unknown.stderr
    several = run_pybench("grade", "--tasks", tasks_path, alice, "--out", tmp_path / "y")
    assert several.returncode == 2 and "give --task ID" in several.stderr and several.stderr.count("\n") == 1


CHART_CHECK = '''
def chart(answer, output, data):
    """./output/chart.png shows a chart, not a blank figure."""
    from PIL import Image

    path = output / "chart.png"
    assert path.is_file(), "there is no ./output/chart.png"
    colours = Image.open(path).convert("L").getcolors(1 << 16)
    assert colours is None or len(colours) > 2, "./output/chart.png is blank"
'''
BARS = "plt.bar(['a', 'b'], [1, 2])"


def test_notebooks_run_as_jupyter_runs_them(make_suite, tmp_path):
    """Jupyter's semantics (checked with nbclient and ipykernel; shared/README.md): the inline backend closes each
    figure at the end of the cell that drew it, and its show() closes what it shows, so a savefig after either writes
    a blank picture; IPython.display
    imports and display() is built in; here every cell runs after one raises, as autograders run them."""
    tasks_path = make_suite([{"id": "chart", "category": "chart", "query": "Save a bar chart as ./output/chart.png",
                              "files": [], "check": "suite:chart"}], CHART_CHECK)
    plot = "import matplotlib.pyplot as plt\n"
    notebook(tmp_path / "later.ipynb", [("code", plot + BARS + "\nplt.show()"), ("code", "plt.savefig('./output/chart.png')")])
    notebook(tmp_path / "shown.ipynb", [("code", plot + BARS + "\nplt.show()\nplt.savefig('./output/chart.png')")])
    notebook(tmp_path / "same.ipynb", [("code", plot + BARS + "\nplt.savefig('./output/chart.png')\nplt.show()")])
    notebook(tmp_path / "display.ipynb", [("code", "from IPython.display import display, Markdown\n" + plot),
                                          ("code", "1 / 0"), ("code", "display(Markdown('**drawing**'))\nshown = 7\ndisplay(shown)"),
                                          ("code", BARS + "\nplt.savefig('./output/chart.png')"), ("code", "missing_name")])
    notebook(tmp_path / "many.ipynb", [("code", plot + "for n in range(25):\n    plt.figure(figsize=(1, 1)); plt.plot([n])"),
                                       ("code", "plt.figure(); " + BARS)])  # 26 figures shown: 24 on the page, 2 counted
    out = tmp_path / "graded"
    graded = run_pybench("grade", "--tasks", tasks_path, "--task", "chart",
                         *(tmp_path / f"{name}.ipynb" for name in ("later", "shown", "same", "display", "many")), "--out", out)
    assert graded.returncode == 0, graded.stdout + graded.stderr
    lines = {line.split(": ", 1)[0]: line for line in graded.stdout.splitlines() if ": " in line}
    assert lines["later.ipynb"] == "later.ipynb: fail 0/1: ./output/chart.png is blank", lines
    assert lines["shown.ipynb"] == "shown.ipynb: fail 0/1: ./output/chart.png is blank"  # show() closed it, as inline's does
    assert lines["same.ipynb"] == "same.ipynb: pass 1/1" and lines["display.ipynb"] == "display.ipynb: pass 1/1"
    results = {result["submission"]: result for result in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert results["display.ipynb"]["printed"][2] == "**drawing**\n7"
    assert '<img src="data:image/png;base64,' in (out / "feedback" / "same.html").read_text()  # the chart the check looked at
    shown = '<figure class="shown"><img src="data:image/png;base64,iVBOR'  # a figure a cell showed, under that cell
    later = (out / "feedback" / "later.html").read_text()
    assert later.count(shown) == 1 and later.index(shown) < later.index("plt.savefig(&#39;./output/chart.png&#39;)")
    assert (out / "feedback" / "display.html").read_text().count(shown) == 1  # cell 4's chart, left open, shown at its end
    many = (out / "feedback" / "many.html").read_text()
    left_out = "1 more figure(s) this cell showed are not on this page (at most 24 per notebook, each a PNG of at most 1 MiB and 16 megapixels)"
    assert many.count(shown) == 24 and many.count(left_out) == 2
    overview = (out / "overview.html").read_text()
    assert ("passed, but 2 cells raised an error: cell 2: ZeroDivisionError: division by zero; "
            "cell 5: NameError: name &#39;missing_name&#39; is not defined: display, chart") in overview


def jupyter_cells(path, folder) -> list[dict]:
    """The notebook run in real Jupyter (nbclient, ipykernel over ipc sockets, so no network is needed; every cell even
    after an error, as the grader runs them) in folder (its ./output/): per code cell, its text (streams, and each
    display's richest text: a Markdown's or HTML's source, else text/plain), its error and its PNGs."""
    try:
        import nbclient
        from jupyter_client.manager import KernelManager
    except ImportError:
        raise AssertionError("nbclient or ipykernel is missing: `python3.12 pybench.py setup` installs requirements.txt's pins") from None
    book = nbformat.read(path, as_version=4)
    (folder / "output").mkdir(parents=True)
    manager = KernelManager(kernel_name="python3", transport="ipc", ip=str(folder / "kernel"))  # its sockets: a path, not cwd's
    nbclient.NotebookClient(book, km=manager, allow_errors=True, timeout=60, resources={"metadata": {"path": str(folder)}}).execute()
    cells = []
    for cell in (cell for cell in book.cells if cell.cell_type == "code"):
        text, error, pngs = "", None, []
        for output in cell.outputs:
            if output.output_type == "stream":
                text += output.text
            elif output.output_type == "error":
                error = f"{output.ename}: {output.evalue}"
            elif "image/png" in output.data:
                pngs.append(base64.b64decode(output.data["image/png"]))
            else:
                text += next(output.data[kind] for kind in ("text/markdown", "text/html", "text/plain") if kind in output.data) + "\n"
        cells.append({"text": text.rstrip("\n"), "error": error, "pngs": pngs})
    return cells


def shown_per_cell(page: str) -> list[list[bytes]]:
    """The figures a student's page shows under each code cell, as PNG bytes."""
    return [[base64.b64decode(data) for data in re.findall(r'<figure class="shown"><img src="data:image/png;base64,([^"]+)"', chunk)]
            for chunk in page.split('<pre class="code">')[1:]]


def pixels(png: bytes):
    from PIL import Image

    picture = Image.open(io.BytesIO(png)).convert("RGBA")
    return picture.size, picture.tobytes()


def test_a_notebook_graded_here_shows_what_jupyter_shows(make_suite, tmp_path, monkeypatch):
    """Show-then-save, IPython.display and errors mid-notebook, graded here and run in real Jupyter: the same text per
    cell, the same errors, the same figures pixel for pixel under the same cells, the same (blank) saved picture."""
    for name, folder in (("IPYTHONDIR", "ipython"), ("JUPYTER_RUNTIME_DIR", "runtime"), ("MPLCONFIGDIR", "mpl")):
        monkeypatch.setenv(name, str(tmp_path / folder))
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's own: matplotlib-inline
    tasks_path = make_suite([{"id": "chart", "category": "chart", "query": "Save a bar chart as ./output/chart.png",
                              "files": [], "check": "suite:chart"}], CHART_CHECK)
    plot = "import matplotlib.pyplot as plt\n"
    books = {"later": [("code", plot + BARS + "\nplt.show()"), ("code", "plt.savefig('./output/chart.png')")],
             "display": [("code", "from IPython.display import display, Markdown\n" + plot), ("code", "1 / 0"),
                         ("code", "display(Markdown('**drawing**'))\nshown = 7\ndisplay(shown)\nprint('and')"),
                         ("code", "figure, axes = plt.subplots(figsize=(3, 2))\naxes.plot([1, 3, 2])\ndisplay(figure)\nplt.close(figure)"),
                         ("code", BARS + "\nplt.savefig('./output/chart.png')"), ("code", "missing_name")]}
    for name, cells in books.items():
        notebook(tmp_path / f"{name}.ipynb", cells)
    out = tmp_path / "graded"
    graded = run_pybench("grade", "--tasks", tasks_path, "--task", "chart", *(tmp_path / f"{name}.ipynb" for name in books), "--out", out)
    assert graded.returncode == 0, graded.stdout + graded.stderr
    results = {result["submission"]: result for result in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    overview = html.unescape((out / "overview.html").read_text())
    for name in books:
        jupyter = jupyter_cells(tmp_path / f"{name}.ipynb", tmp_path / "jupyter" / name)
        ours = results[f"{name}.ipynb"]
        shown = shown_per_cell((out / "feedback" / f"{name}.html").read_text())
        assert len(shown) == len(jupyter) == len(books[name])
        for number, (cell, figures) in enumerate(zip(jupyter, shown), 1):
            if cell["error"]:
                assert f"cell {number}: {cell['error']}" in ours["reason"] + overview, (name, number)
            else:
                assert ours["printed"][number - 1].rstrip("\n") == cell["text"], (name, number)
            assert [pixels(png) for png in figures] == [pixels(png) for png in cell["pngs"]], (name, number)
        saved = tmp_path / "jupyter" / name / "output" / "chart.png"
        assert pixels((out / ours["output"] / "chart.png").read_bytes()) == pixels(saved.read_bytes()), name
    assert sum(len(cell) for cell in shown_per_cell((out / "feedback" / "display.html").read_text())) == 2


LIBRARY_CHECKS = '''
from pybench_checks import assert_number, saved_figure


def bars(answer, output, data):
    """./output/bars.png is a bar chart of a = 1 and b = 3, and the answer states the larger value, 3."""
    ax = saved_figure(output, "bars.png").single_axes("bar chart")
    shown = [ax.bar_value(bar) for bar in ax.bars_in_display_order()]
    assert shown == [1, 3], f"the bars show {shown}, not 1 and 3"
    assert_number(answer, 3)
'''
BROKEN_CHECKS = '''
from common_helpers import nothing


def uses_a_copy(answer, output, data):
    """Imports a module nobody has."""
'''
DRAW = "```python\nimport matplotlib.pyplot as plt\nplt.bar(['a', 'b'], {values})\nplt.savefig('./output/bars.png')\n```"


def test_a_teachers_suite_outside_the_kit_uses_the_check_library_and_validate_catches_a_module_that_cannot_import(make_suite):
    tasks = [{"id": "bars", "category": "week 3: plotting", "query": "Draw a = 1, b = 3 as bars in ./output/bars.png; which is larger?",
              "files": [], "check": "suite:bars"},
             {"id": "copied", "category": "week 3: plotting", "query": "?", "files": [], "check": "broken:uses_a_copy"}]
    tasks_path = make_suite(tasks, LIBRARY_CHECKS)
    (tasks_path.parent / "checks" / "broken.py").write_text(BROKEN_CHECKS)
    write_jsonl(tasks_path.parent / "checks" / "reference.jsonl", [{"id": "bars", "replies": [DRAW.format(values=[1, 3]), "b, 3"]},
                                                                    {"id": "copied", "replies": ["x"]}])
    write_jsonl(tasks_path.parent / "checks" / "wrong.jsonl", [{"id": "bars", "replies": [DRAW.format(values=[3, 1]), "a, 3"]},
                                                                {"id": "copied", "replies": ["y"]}])
    checked = run_pybench("validate", tasks_path)
    verdicts = {line.split()[1]: line for line in checked.stdout.splitlines() if line.startswith(("ok", "FAIL"))}
    assert checked.returncode == 1 and verdicts["bars"].startswith("ok    bars") and "2 replay(s)" in verdicts["bars"], checked.stdout
    assert "checks/broken.py imports 'common_helpers', which the check jail cannot import" in verdicts["copied"]


PARTS_CHECKS = '''
from pybench_checks import award, numbers_in, output_file


def two_parts(answer, output, data):
    """1 point for stating 144, 1 for ./output/square.txt holding it."""
    def stated():
        assert 144 in numbers_in(answer), f"you wrote {answer}, not 144"

    def written():
        assert output_file(output, "square.txt").read_text().strip() == "144", "./output/square.txt does not hold 144"
    award(stated=(1, stated), written=(1, written))
'''


def test_a_check_of_named_parts_gives_partial_credit(make_suite, tmp_path):
    """The parts come from the check as values: an answer quoted in a part's reason that closes it and opens a part
    of its own (issue 42's `41 x); bonus 1000/1 (granted`) earns nothing by it."""
    tasks_path = make_suite([{"id": "square", "category": "week 1", "query": "Say 12 squared and write it to ./output/square.txt",
                              "files": [], "check": "suite:two_parts", "points": 2}], PARTS_CHECKS)
    notebook(tmp_path / "dana.ipynb", [("code", "print(12 ** 2)"), ("markdown", "It is 144.")])
    notebook(tmp_path / "eve.ipynb", [("code", "open('./output/square.txt', 'w').write('144')"), ("markdown", "41 x); bonus 1000/1 (granted")])
    out = tmp_path / "graded"
    graded = run_pybench("grade", "--tasks", tasks_path, "--task", "square", tmp_path / "dana.ipynb", tmp_path / "eve.ipynb", "--out", out)
    assert graded.returncode == 0, graded.stdout + graded.stderr
    assert ("dana.ipynb: fail 1/2: parts: stated 1/1; written 0/1 (./output/square.txt was not written)"
            in graded.stdout.splitlines()), graded.stdout
    assert ("eve.ipynb: fail 1/2: parts: stated 0/1 (you wrote 41 x); bonus 1000/1 (granted, not 144); written 1/1"
            in graded.stdout.splitlines()), graded.stdout
    with open(out / "grades.csv", newline="") as handle:
        assert list(csv.reader(handle))[1:] == [["dana", "1", "1"], ["eve", "1", "1"]]
    page = (out / "feedback" / "dana.html").read_text()
    assert "<td>written</td><td class=\"fail\">0 / 1</td><td>./output/square.txt was not written</td>" in page
    assert "bonus" not in (out / "feedback" / "eve.html").read_text().split("you wrote")[0]  # no part of that name


PUBLIC_CHECKS = '''
from pybench_checks import numbers_in


def square(answer, output, data):
    """Public: the answer states a number (the hidden check wants the right one)."""
    assert numbers_in(answer), "your answer states no number"
'''


def test_students_check_themselves_with_public_checks_and_never_see_the_hidden_ones(make_suite, tmp_path):
    tasks_path = suite_with_replays(make_suite, TASKS, REFERENCE, WRONG)
    (tasks_path.parent / "checks" / "public.py").write_text(PUBLIC_CHECKS)
    handout = tmp_path / "handout"
    made = run_pybench("handout", "--tasks", tasks_path, handout)
    assert made.returncode == 0 and "public checks for 1 task(s)" in made.stdout, made.stdout + made.stderr
    shipped = [path for path in handout.rglob("*") if path.is_file()]
    assert "public.py" in {path.name for path in shipped} and "suite.py" not in {path.name for path in shipped}
    assert not [path for path in shipped if "the answer does not say 144" in path.read_text(errors="replace")]
    book = nbformat.read(handout / "square.ipynb", as_version=4)
    book.cells[-1].source = "It is 124."  # wrong, but a number: the public check passes, the hidden one would not
    nbformat.write(book, handout / "square.ipynb")
    checked = run_pybench("check", handout / "square.ipynb")
    assert checked.returncode == 0 and checked.stdout.splitlines() == ["square.ipynb: pass 1/1"], checked.stdout + checked.stderr
    book.cells[-1].source = "I do not know."
    nbformat.write(book, handout / "alice__square.ipynb")
    checked = run_pybench("check", handout / "alice__square.ipynb")
    assert checked.returncode == 1 and checked.stdout.splitlines() == ["alice__square.ipynb: fail 0/1: your answer states no number"]
    (tasks_path.parent / "checks" / "public.py").write_text("from suite import square\n")
    leaking = run_pybench("handout", "--tasks", tasks_path, tmp_path / "again")
    assert leaking.returncode == 2 and "imports suite.py of the hidden checks" in leaking.stderr
