"""The classroom: notebooks read as students write them (never trusted), magics run as a kernel would, an assignment's
points, the handout; and, in the slow tier, a class of 30 graded in one command in the real jail, its grades.csv,
its feedback pages and overview opened in headless Chromium."""
import csv
import html
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from kit import classroom
from kit import untrusted
from conftest import CHROMIUM, ROOT, chromium, run_pybench
from kit.harness import UsageError
from kit.suite import load_tasks

COURSE = ROOT / "tests" / "fixtures" / "classroom" / "tasks.jsonl"


def pybench_in_process(argv: list[str]) -> tuple[int, str, str]:
    """pybench.py's command line in this process, its status and what it printed (stdout, stderr)."""
    import contextlib
    import io
    import pybench

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = pybench.cli(argv)
    return status, out.getvalue(), err.getvalue()


def notebook(path: Path, cells: list[tuple[str, str]]) -> Path:
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell(text) if kind == "code" else nbformat.v4.new_markdown_cell(text) for kind, text in cells]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(book, path)
    return path


def unreadable(path: Path, **options) -> str:
    with pytest.raises(classroom.Unreadable) as caught:
        classroom.notebook_cells(path, **options)
    assert "\n" not in str(caught.value)
    return str(caught.value)


# --- fast: reading notebooks, magics, points, the handout ----------------------------------------------------------

def test_every_malformed_notebook_is_a_one_line_reason(tmp_path):
    cases = {"text.ipynb": b"{not json", "latin.ipynb": b"\xff\xfe{}", "list.ipynb": b"[1, 2]",
             "deep.ipynb": ('{"cells": ' + "[" * 100_000 + "]" * 100_000 + "}").encode(), "nocells.ipynb": b'{"metadata": {}}',
             "nosource.ipynb": json.dumps({"cells": [{"cell_type": "code", "outputs": []}]}).encode(),
             "odd.ipynb": json.dumps({"cells": [{"cell_type": "widget\n", "source": "x"}]}).encode(),
             "badsource.ipynb": json.dumps({"cells": [{"cell_type": "code", "source": 42}]}).encode(),
             "big.ipynb": b" " * (2 * 2**20)}
    reasons = {}
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        reasons[name] = unreadable(tmp_path / name, max_mib=1)
    assert "not JSON" in reasons["text.ipynb"] and "not UTF-8" in reasons["latin.ipynb"] and "JSON list" in reasons["list.ipynb"]
    assert "nested too deeply" in reasons["deep.ipynb"] and "no list of 'cells'" in reasons["nocells.ipynb"]
    assert reasons["nosource.ipynb"] == "cell 1 has no 'source' field" and "'widget\\x0a'" in reasons["odd.ipynb"]
    assert "not text" in reasons["badsource.ipynb"] and "over the 1 MiB" in reasons["big.ipynb"]
    assert "cannot be read" in unreadable(tmp_path / "absent.ipynb")


def test_cells_are_read_without_their_saved_outputs_and_the_answer_rule(tmp_path):
    book = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print(2 + 2)")
    cell.outputs = [nbformat.v4.new_output("stream", text="a saved output the grader must not trust\n")]
    book.cells = [nbformat.v4.new_markdown_cell("# My name"), cell, nbformat.v4.new_markdown_cell("")]
    raw = json.loads(nbformat.writes(book))
    for item in raw["cells"]:
        item.pop("id")  # as older Jupyter wrote them: nbformat would warn (MissingIDFieldWarning)
    (tmp_path / "old.ipynb").write_text(json.dumps(raw))
    cells = classroom.notebook_cells(tmp_path / "old.ipynb")
    assert cells == [("markdown", "# My name"), ("code", "print(2 + 2)"), ("markdown", "")]
    assert classroom.notebook_answer(cells) is None  # a markdown cell before the last code cell is no answer
    assert classroom.notebook_answer(cells + [("markdown", "It is 4.")]) == "It is 4."
    assert classroom.notebook_answer([("markdown", "Answer: 3")]) == "Answer: 3"
    marked = nbformat.v4.new_markdown_cell("The mean is 72.5.", metadata=classroom.ANSWER_MARK)
    book.cells = [marked, nbformat.v4.new_code_cell("print('exploring')"), nbformat.v4.new_markdown_cell("Notes")]
    nbformat.write(book, tmp_path / "marked.ipynb")
    cells = classroom.notebook_cells(tmp_path / "marked.ipynb")
    assert classroom.notebook_answer(cells) == "The mean is 72.5."  # the marked cell, wherever it sits
    assert classroom.notebook_answer([("answer", classroom.ANSWER_PLACEHOLDER), ("code", "print(4)")]) is None  # left as handed out
    messages = [{}, {}, {}, {"role": "assistant", "content": "x"},
                {"role": "user", "content": "Output:\n[grader] `%matplotlib inline` not needed\n4"}]
    assert classroom.printed_answer(messages) == "4"


def test_magics_and_shell_escapes_become_python_a_kernel_would_run():
    source = ("%matplotlib inline\nimport os\n%time x = 1 + 1\n!pip install seaborn\nfiles = !ls\n"
              "for name in ['a']:\n    %timeit len(name)\n    !echo {name}\n%load_ext autoreload\n%pwd\ny = 10 % 3\n")
    plain = classroom.kernel_source(source)
    compile(plain, "<cell>", "exec")  # never a SyntaxError for the whole cell
    assert "x = 1 + 1" in plain and "    len(name)" in plain and "y = 10 % 3" in plain
    assert "no network here" in plain and "`%matplotlib inline` not needed" in plain and "`%load_ext` skipped" in plain
    assert "files = __import__(\"subprocess\").run('ls'" in plain
    timed = classroom.kernel_source("%%time\ntotal = sum(range(10))")
    assert timed == "total = sum(range(10))"
    written = classroom.kernel_source("%%writefile ./output/a.txt\nhello")
    compile(written, "<cell>", "exec")
    assert "open('./output/a.txt', 'w').write('hello\\n')" == written
    for cell in ("%%javascript\nalert(1)", "%%bash\npip install x"):
        compile(classroom.kernel_source(cell), "<cell>", "exec")
    assert classroom.kernel_source("print(1)\nprint('%d' % 2)") == "print(1)\nprint('%d' % 2)"


def test_a_notebooks_jail_has_ipython_display_and_a_builtin_display_as_a_kernel_has():
    shim = ("import sys\nsys.path.insert(0, 'kit')\nimport jailed\nend_of_cell = jailed.as_in_a_notebook()\ndisplay(72.5, 'a')\n"
            "from IPython.display import display as shown, Markdown, HTML, Image\nimport IPython\n"
            "shown(Markdown('**x**'), HTML('<b>y</b>'), Image(filename='a.png'))\nprint(IPython.get_ipython())\nend_of_cell()")
    done = subprocess.run([sys.executable, "-I", "-S", "-c", shim], capture_output=True, text=True, cwd=ROOT)
    assert done.stdout == "72.5\n'a'\n**x**\n<b>y</b>\n<IPython.core.display.Image object>\nNone\n", done.stderr


def test_figures_a_notebook_shows_become_the_inline_backends_pictures_and_are_capped():
    shim = ("import sys, json\nsys.path.insert(0, 'kit')\nimport jailed\nend_of_cell = jailed.as_in_a_notebook(max_shown=3)\n"
            "import matplotlib.pyplot as plt\ncells = []\n"
            "plt.plot([1, 2]); plt.show(); plt.figure(figsize=(2, 1)); plt.bar(['a'], [1]); plt.figure()\n"  # shown, left open, empty
            "cells.append(end_of_cell())\nfigure = plt.figure(); plt.plot([3])\ndisplay(figure)\ncells.append(end_of_cell())\n"
            "for n in range(5): plt.figure(); plt.plot([n])\n"
            "cells.append(end_of_cell()); cells.append(end_of_cell()); print(json.dumps(cells))")
    done = subprocess.run([sys.executable, "-I", "-c", shim], capture_output=True, text=True, cwd=ROOT, env={**os.environ, "MPLBACKEND": "Agg"})
    empty, sent = done.stdout.splitlines()
    assert empty == "<Figure size 640x480 with 0 Axes>"  # no picture: its text, as Jupyter shows it
    cells = [json.loads(text) if text else None for text in json.loads(sent)]
    assert [(len(cell["png"]), cell["left_out"]) for cell in cells[:3]] == [(2, 0), (1, 1), (0, 5)] and cells[3] is None, done.stderr
    from PIL import Image
    import base64
    import io

    sizes = [Image.open(io.BytesIO(base64.b64decode(png))).size for png in cells[0]["png"]]
    assert 500 < sizes[0][0] <= 640 and sizes[1][0] < 250 and sizes[1][1] < 150  # as shown: the tight box at the figure's dpi
    huge = base64.b64decode(cells[0]["png"][1])
    huge = base64.b64encode(huge[:16] + (60_000).to_bytes(4, "big") * 2 + huge[24:]).decode()  # a header claiming 60,000² pixels
    room = classroom.shown_pictures(json.dumps({"png": [huge] + cells[0]["png"] + ["bm90IGEgcG5n", 7], "left_out": 2}), room=1)
    assert len(room["uris"]) == 1 and room["uris"][0].startswith("data:image/png;base64,iVBOR") and room["left_out"] == 6
    assert room["uris"][0] == "data:image/png;base64," + cells[0]["png"][0]
    assert classroom.shown_pictures("[not json", 24) == classroom.shown_pictures("", 24) == {"uris": [], "left_out": 0}


def test_points_default_to_1_and_are_validated(make_suite):
    check = 'def answer(answer, output, data):\n    """It says 1."""\n    assert "1" in answer\n'
    line = {"id": "a", "category": "math", "query": "?", "files": [], "check": "suite:answer"}
    tasks_path = make_suite([line, line | {"id": "b", "points": 2.5}], check)
    assert [task.own["points"] for task in load_tasks(tasks_path)] == [1.0, 2.5]
    for bad in (0, -1, "2", True, None):
        tasks_path.write_text(json.dumps(line | {"points": bad}) + "\n")
        with pytest.raises(UsageError, match="field 'points'"):
            load_tasks(tasks_path)


def test_handout_writes_starter_notebooks_and_inputs_and_nothing_of_the_checks(tmp_path):
    out = tmp_path / "handout"
    made = run_pybench("handout", "--tasks", COURSE, out, timeout=120)
    assert made.returncode == 0, made.stderr
    assert sorted(path.name for path in out.iterdir()) == ["data", "mean.ipynb", "plot.ipynb", "total.ipynb"]
    assert sorted(path.name for path in (out / "data").iterdir()) == ["numbers.txt", "scores.csv"]
    secrets = checks_text()
    for task in load_tasks(COURSE):
        book = nbformat.read(out / f"{task.id}.ipynb", as_version=4)
        nbformat.validate(book)
        text = (out / f"{task.id}.ipynb").read_text()
        assert book.metadata.kernelspec.name == "python3" and f"`<your name>/{task.id}.ipynb`" in book.cells[0].source
        assert task.query in book.cells[1].source and all(path in book.cells[1].source for path in task.paths)
        assert book.cells[-1].metadata == classroom.ANSWER_MARK
        assert ("`./output/scores.png` as the task asks" in book.cells[1].source) == (task.id == "plot")
        assert not [secret for secret in secrets if secret in text]
    again = run_pybench("handout", "--tasks", COURSE, out, timeout=120)
    assert again.returncode == 2 and "not an empty folder" in again.stderr


def test_grade_refuses_a_missing_folder_in_one_line(tmp_path):
    graded = run_pybench("grade", "--tasks", COURSE, tmp_path / "absent", timeout=120)
    assert graded.returncode == 2 and graded.stderr.count("\n") == 1 and "is not a folder of notebooks" in graded.stderr


def checks_text() -> list[str]:
    """What a student must never see: the lines of the checks' code and of the reference and wrong replays (but
    those a student's own notebook holds too, such as an import)."""
    checks = ROOT / "tests" / "fixtures" / "classroom" / "checks"
    lines = (checks / "course.py").read_text().splitlines()
    for name in ("reference.jsonl", "wrong.jsonl"):
        lines += [line for record in map(json.loads, (checks / name).read_text().splitlines()) for reply in record["replies"]
                  for line in reply.splitlines()]
    own = {line.strip() for source in (MEAN, TOTAL, PLOT) for line in source.splitlines()}
    return [line.strip() for line in lines if len(line.strip()) > 12 and not line.startswith("```") and line.strip() not in own]


# --- fast: the gradebook safe to open, names, the class list -------------------------------------------------------

def test_formula_cells_of_the_gradebook_are_quoted(tmp_path):
    tasks = load_tasks(COURSE)
    book = [classroom.Graded(name, name, {task.id: 1.0 for task in tasks}, 3.0, {task.id: None for task in tasks})
            for name in ("=HYPERLINK(\"http://x\")", "+1", "-2+3", "@SUM(A1)", "\tTab", "\rReturn", "alice", "50-50")]
    classroom.write_grades(tmp_path / "grades.csv", tasks, book, [])  # names from submissions: no roster
    with open(tmp_path / "grades.csv", newline="", encoding="utf-8") as handle:
        names = [row[0] for row in csv.reader(handle)][1:]
    assert names == ["'=HYPERLINK(\"http://x\")", "'+1", "'-2+3", "'@SUM(A1)", "\\x09Tab", "\\x0dReturn", "alice", "50-50"]


def test_names_are_compared_after_nfc_and_pages_have_readable_names(tmp_path):
    taken: set[str] = set()
    names = [untrusted.file_name(name, taken, empty="student", limit=60)
             for name in ("José", "Jose\u0301", "李雷", "", "../..", "Alice", "alice", "CON", "a/b")]
    assert names == ["José", "José-2", "李雷", "student", "student-2", "Alice", "alice-2", "CON_", "a_b"]
    assert untrusted.name_key("Jose\u0301") == untrusted.name_key("josé")


def test_two_files_of_one_student_and_task_grade_the_newer_and_name_the_other(tmp_path):
    tasks = load_tasks(COURSE)
    old = notebook(tmp_path / "José" / "mean.ipynb", [("code", "print(1)")])
    new = notebook(tmp_path / "Jose\u0301__mean.ipynb", [("code", "print(2)")])
    notebook(tmp_path / "alice__mean.ipynb", [("code", "print(3)")])
    os.utime(old, (1_000_000, 1_000_000))
    found, unmatched = classroom.folder_submissions(tmp_path, tasks)
    submissions, students, unrostered = classroom.one_each(found, ["Alice", "José", "Bob"])
    assert students == ["Alice", "José", "Bob"] and unrostered == [] and not unmatched
    jose = next(submission for submission in submissions if submission.student == "José")
    assert jose.path == new and jose.older == ["José/mean.ipynb"] and len(submissions) == 2
    notes = classroom.class_notes(unmatched, submissions, unrostered)
    assert notes == ["duplicate: José handed in mean more than once: graded the newer Jose\u0301__mean.ipynb, not José/mean.ipynb"]


def test_a_roster_is_lines_or_an_lms_csv_with_a_student_column(tmp_path):
    (tmp_path / "lines.txt").write_text("alice\n\nJose\u0301\n", encoding="utf-8")
    (tmp_path / "lms.csv").write_text("\ufeffEmail,Student,Group\na@x,alice,1\nb@x,bob,2\n", encoding="utf-8")
    (tmp_path / "twice.txt").write_text("alice\nALICE\n")
    assert classroom.read_roster(tmp_path / "lines.txt") == ["alice", "Jose\u0301"]  # as the roster spells it
    assert classroom.read_roster(tmp_path / "lms.csv") == ["alice", "bob"]
    with pytest.raises(UsageError, match="lists 'alice' twice"):
        classroom.read_roster(tmp_path / "twice.txt")


def test_a_missing_roster_is_one_line_naming_the_flag(tmp_path):
    status, _, error = pybench_in_process(["grade", "--roster", str(tmp_path / "class.txt"), str(tmp_path)])
    assert status == 2 and error.strip() == f"error: grade --roster {tmp_path / 'class.txt'}: no such file: give the class list's path (one student a line)"


def test_a_cell_cut_at_its_timeout_is_named_first():
    """The jail's words for a cell it cut (interrupted at the timeout, or killed and restarted past it) name the cell
    first on the terminal line; a student's own TimeoutError does not."""
    from kit.sandbox import CellResult

    conversation = classroom.NotebookConversation()
    for cell in (CellResult("", "trace", "ValueError", "bad", "error"), CellResult("", "trace", "TimeoutError", "cell ran past 2 s", "interrupted"),
                 CellResult("", "trace", "TimeoutError", "mine", "error"),
                 CellResult("", "n", "WorkerRestarted", "The cell ran past 2 s and did not stop when interrupted", "restarted")):
        conversation.printed(cell)
    assert conversation.timed_out == ["cell 2 timed out", "cell 4 timed out"] and len(conversation.failed) == 4


def test_a_notebook_of_absurd_cell_count_is_refused_in_seconds(tmp_path):
    old = {"nbformat": 3, "nbformat_minor": 0, "metadata": {},
           "worksheets": [{"cells": [{"cell_type": "code", "input": "x = 1", "language": "python", "outputs": []}] * 20_000}]}
    (tmp_path / "old.ipynb").write_text(json.dumps(old))
    began = time.monotonic()
    assert "20000 cells, over the 2000" in unreadable(tmp_path / "old.ipynb")
    assert time.monotonic() - began < 5


def test_a_students_markdown_is_rendered_under_a_size_and_time_bound():
    budget = untrusted.MarkdownBudget(seconds=1.0)
    began = time.monotonic()
    pages = [budget("a_" * 5000) for _ in range(200)]
    assert time.monotonic() - began < 3
    assert "<p>" in pages[0] and pages[-1].startswith('<pre class="as-text">a_a_')  # the rest as text
    long = untrusted.MarkdownBudget()("**bold** " + "x" * 30_000)
    assert "<strong>bold</strong>" in long and long.endswith("x</pre>")


def test_a_replay_is_a_notebook_its_code_blocks_cells_its_final_answer_markdown():
    cells = classroom.replay_cells(["Let me look.\n```python\nprint(1)\n```", "```python\nx = 2\n```", "The answer is 2.", "never"])
    assert cells == [("code", "print(1)\n"), ("code", "x = 2\n"), ("markdown", "The answer is 2.")]


# --- slow: a class of 30 in the real jail ---------------------------------------------------------------------------

MEAN = "import csv\nrows = list(csv.DictReader(open('./data/scores.csv')))\nmean_score = sum(float(r['score']) for r in rows) / len(rows)"
TOTAL = "numbers = open('./data/numbers.txt').read().split()\nwith open('./output/total.txt', 'w') as f:\n    f.write(str(sum(map(int, numbers))))"
PLOT = ("import pandas as pd\nimport matplotlib.pyplot as plt\nframe = pd.read_csv('./data/scores.csv')\n"
        "frame.plot.bar(x='name', y='score')\nplt.savefig('./output/scores.png')")
NEWLINE_NAME = "mallory\ns01__mean.ipynb: pass 1 point"


def write_class(folder: Path) -> dict[str, dict[str, int]]:
    """30 students' notebooks; returns the points each must get. 20 ordinary (some tasks wrong), 5 with magics and
    shell escapes, 5 hostile."""
    expected = {}
    for number in range(1, 21):
        student = f"s{number:02d}"
        right = {"mean": number % 3 != 0, "total": number % 4 != 1, "plot": number % 5 != 2}
        answer = "The mean is 72.5." if right["mean"] else "The mean is 70."
        if number == 5:
            answer = "<script>document.title = 'pwned'</script> **The mean is 72.5**"
        layout = (lambda task: folder / student / f"{task}.ipynb") if number % 2 else (lambda task: folder / f"{student}__{task}.ipynb")
        notebook(layout("mean"), [("markdown", f"# {student}"), ("code", MEAN), ("markdown", answer)])
        notebook(layout("total"), [("code", TOTAL if right["total"] else "open('./output/total.txt', 'w').write('24')")])
        notebook(layout("plot"), [("code", PLOT if right["plot"] else "print('I forgot to save it')"), ("markdown", "Saved.")])
        expected[student] = {"mean": right["mean"] * 1, "total": right["total"] * 2, "plot": right["plot"] * 3}
    magics = ["%matplotlib inline\n", "%time ", "!ls ./data\n", "!pip install seaborn\n", "%%time\n"]
    for number, magic in enumerate(magics, 1):
        student = f"magic{number}"
        shown = "display(mean_score)" if number == 1 else "print(f'The mean is {mean_score}')"  # a printed (displayed) answer
        notebook(folder / student / "mean.ipynb", [("code", magic + MEAN), ("code", shown)])
        notebook(folder / student / "total.ipynb", [("code", magic + TOTAL), ("markdown", "Done.")])
        notebook(folder / student / "plot.ipynb", [("code", "%matplotlib inline"), ("code", PLOT), ("markdown", "Saved.")])
        expected[student] = {"mean": 1, "total": 2, "plot": 3}
    for student in ("badjson", "deep", "slow", NEWLINE_NAME, "nosource"):
        for task, code in (("mean", MEAN + "\nprint(mean_score)"), ("total", TOTAL), ("plot", PLOT)):
            notebook(folder / student / f"{task}.ipynb", [("code", code)])
        expected[student] = {"mean": 1, "total": 2, "plot": 3}
    (folder / "badjson" / "mean.ipynb").write_text('{"cells": [')
    (folder / "deep" / "mean.ipynb").write_text('{"cells": ' + "[" * 50_000 + "]" * 50_000 + "}")
    notebook(folder / "slow" / "total.ipynb", [("code", "import time\ntime.sleep(600)")] * 12)
    broken = json.loads((folder / "nosource" / "plot.ipynb").read_text())
    del broken["cells"][0]["source"]
    (folder / "nosource" / "plot.ipynb").write_text(json.dumps(broken))
    expected["badjson"]["mean"] = expected["deep"]["mean"] = expected["slow"]["total"] = expected["nosource"]["plot"] = 0
    return expected


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    folder = tmp_path_factory.mktemp("class")
    expected = write_class(folder / "submissions")
    began = time.monotonic()
    graded = run_pybench("grade", "--tasks", COURSE, folder / "submissions", "--out", folder / "out", "--cell-timeout", 10,
                         "--budget", 15, timeout=900)
    seconds = time.monotonic() - began
    print(f"graded a class of 30 (90 notebooks) in {seconds:.0f} s")
    return graded, expected, folder / "out", seconds


@pytest.mark.slow
def test_a_class_of_30_is_graded_in_one_command(graded_class):
    graded, expected, out, seconds = graded_class
    assert graded.returncode == 0, graded.stdout + graded.stderr
    assert "Traceback" not in graded.stderr and "Warning" not in graded.stderr, graded.stderr
    lines = graded.stdout.splitlines()
    verdicts = [line for line in lines if re.match(r"[^ ]+\.ipynb: (pass|fail) ", line)]
    assert len(verdicts) == 90 and len(lines) == 92, graded.stdout  # a line each, the newline in a name escaped
    assert "mallory\\x0as01__mean.ipynb: pass 1 point/mean.ipynb: pass 1/1" in lines
    with open(out / "grades.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["student", "mean", "total", "plot", "total points"] and len(rows) == 31
    got = {row[0]: {"mean": int(row[1]), "total": int(row[2]), "plot": int(row[3]), "sum": int(row[4])} for row in rows[1:]}
    escaped = {name.replace("\n", "\\x0a"): points for name, points in expected.items()}
    assert {name: {k: v for k, v in row.items() if k != "sum"} for name, row in got.items()} == escaped
    assert all(row["sum"] == row["mean"] + row["total"] + row["plot"] for row in got.values())
    reason = {line.split(": ", 1)[0]: line for line in verdicts}
    assert "not graded: the file is not JSON" in reason["badjson/mean.ipynb"]
    manifest = json.loads((out / "manifest.json").read_text())  # harness.make_manifest, as a run's
    assert manifest["grade"]["submissions"] == 90 and manifest["flags"]["budget"] == 15 and manifest["python"].startswith("3.12")
    assert manifest["packages"]["llama-cpp-python"] == "0.3.36" and manifest["jail_environment"]["name"] == "suite"
    assert manifest["os"] and manifest["jail_limits"]["cell_timeout"] == 10 and manifest["finished"]
    assert "not graded: the file is JSON nested too deeply" in reason["deep/mean.ipynb"]
    assert "cell 1 has no 'source' field" in reason["nosource/plot.ipynb"]
    assert "time budget of 15 s spent after 2 of 12 code cells" in reason["slow/total.ipynb"]
    assert "TimeoutError: cell ran past 10 s" in reason["slow/total.ipynb"]
    assert reason["slow/total.ipynb"].startswith("slow/total.ipynb: fail 0/2: cell 1 timed out, cell 2 timed out; ")  # the cell that timed out, first
    assert "s03/mean.ipynb: fail 0/1: your answer does not state the mean score" in lines
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(results) == 90 and {result["task"] for result in results} == {"mean", "total", "plot"}
    pip = next(result for result in results if result["submission"] == "magic4/mean.ipynb")
    assert "no network here" in pip["printed"][0] and pip["messages"][-1]["content"] == "The mean is 72.5"
    slow = next(result for result in results if result["submission"] == "slow/total.ipynb")
    assert slow["seconds"] < 15 + 10 + 10  # the budget, then one cell cut at its timeout, with its grace


@pytest.mark.slow
def test_a_graded_class_is_judged_beside_its_checks(graded_class, tmp_path):
    """A teacher's view of the judge's column: every graded notebook gets a verdict (here a replay saying PASS to
    all), the notebooks that were not graded have no request to judge, and the failed ones are listed beside the
    checks' reasons."""
    _, _, out, _ = graded_class
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text("".join(json.dumps({"id": Path(result["output"]).name, "replies": ["Verdict: PASS\nReason: It looks done."]}) + "\n"
                                for result in results))
    judged = run_pybench("judge", out, "--judge-replay", verdicts)
    assert judged.returncode == 0, judged.stderr
    records = [json.loads(line) for line in (out / "judge.jsonl").read_text().splitlines()]
    graded = [result for result in results if not result["reason"].startswith("not graded")]
    assert sorted(record["id"] for record in records) == sorted(result["id"] for result in graded)
    assert f"{len(results) - len(graded)} without a request, not judged" in judged.stdout
    failed = sum(not result["passed"] for result in graded)
    assert f"judge only {failed}, check only 0, both fail 0" in judged.stdout
    s03 = next(result for result in results if result["submission"] == "s03/mean.ipynb")
    assert any(line.startswith(f"  {s03['id']}: check fail (") and line.endswith("| judge PASS (It looks done.)")
               for line in judged.stdout.splitlines()), judged.stdout


def page_texts(pages: list[Path], scratch: Path) -> list[dict]:
    """Each page opened in headless Chromium: its title, how many scripts it holds, and its body's text."""
    frames = "".join(f'<iframe src="{page.as_uri()}"></iframe>' for page in pages)
    checker = scratch / "checker.html"
    checker.write_text(f"""<!doctype html><html><body>{frames}<pre id="result">page did not load</pre><script>
window.addEventListener("load", () => {{
  const pages = [...document.querySelectorAll("iframe")].map(frame => {{
    const page = frame.contentDocument;
    return {{title: page.title, scripts: page.querySelectorAll("script").length, text: page.body.innerText,
             rows: [...page.querySelectorAll("table tr")].length}};
  }});
  document.getElementById("result").textContent = JSON.stringify(pages);
}});
</script></body></html>""")
    command = chromium(scratch / "profile", "--allow-file-access-from-files", "--dump-dom", checker.as_uri())
    dom = subprocess.run(command, capture_output=True, text=True, timeout=120).stdout
    found = re.search(r'<pre id="result">(.*?)</pre>', dom, re.DOTALL)
    assert found, f"no result from Chromium: {dom[-500:]}"
    return json.loads(html.unescape(found.group(1)))


@pytest.mark.slow
def test_feedback_and_overview_show_points_reasons_and_work_in_chromium(graded_class, tmp_path):
    assert CHROMIUM, "Chromium is missing: `python3.12 pybench.py setup --tests` installs Debian's chromium"
    _, _, out, _ = graded_class
    student, hostile, overview = page_texts([out / "feedback" / "s05.html", out / "feedback" / "nosource.html", out / "overview.html"], tmp_path)
    assert student["title"] == "Feedback for s05: 4 of 6 points" and student["scripts"] == 0
    assert "mean\t1 / 1\tpassed" in student["text"] and "plot\t3 / 3\tpassed" in student["text"]
    assert "total\t0 / 2\t./output/total.txt does not hold the right sum" in student["text"]
    assert "<script>document.title = 'pwned'</script> The mean is 72.5" in student["text"]  # the tag as text, the bold rendered
    assert "<strong>The mean is 72.5</strong>" in (out / "feedback" / "s05.html").read_text()
    assert MEAN.splitlines()[1] in student["text"] and "frame.plot.bar(x='name', y='score')" in student["text"]
    assert "not graded: cell 1 has no 'source' field" in hostile["text"] and hostile["title"] == "Feedback for nosource: 3 of 6 points"
    assert overview["title"] == "Class overview: 30 students, 3 tasks" and overview["scripts"] == 0
    expected = graded_class[1]
    plot_failed = sum(not points["plot"] for points in expected.values())
    assert f"plot\t{plot_failed} of 30\t4 × there is no ./output/scores.png" in overview["text"]
    full = sum(sum(points.values()) == 6 for points in expected.values())
    assert f"\n6\t{full}\t" in overview["text"]  # the distribution of totals
    assert "s05\t1\t0\t3\t4" in overview["text"] and "mallory\\x0as01__mean.ipynb: pass 1 point\t1\t2\t3\t6" in overview["text"]
    for page in (out / "feedback" / "s05.html", out / "overview.html"):  # and as a person sees them: a screenshot each
        shot = tmp_path / f"{page.stem}.png"
        subprocess.run(chromium(tmp_path / "shots", "--window-size=1200,1400", f"--screenshot={shot}", page.as_uri()),
                       capture_output=True, timeout=120)
        from PIL import Image

        colours = Image.open(shot).convert("L").getcolors(maxcolors=1 << 16)
        assert colours and len(colours) > 20, f"{shot} shows an empty page"  # text and tables, not a blank window


@pytest.mark.slow
def test_a_students_page_holds_nothing_of_the_checks_or_the_others(graded_class):
    _, expected, out, _ = graded_class
    secrets = checks_text()
    assert len(secrets) > 10 and any("expected" in secret for secret in secrets)
    pages = sorted((out / "feedback").glob("*.html"))
    assert len(pages) == 30
    for page in pages:
        text = html.unescape(page.read_text())
        assert not [secret for secret in secrets if secret in text], page.name
        assert "course.py" not in text and "course:" not in text
    for student in ("s01", "s05", "magic4"):
        text = html.unescape((out / "feedback" / f"{student}.html").read_text())
        assert [name for name in expected if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text)] == [student]


def test_a_students_markdown_is_rendered_and_its_html_shown_as_text():
    page = untrusted.markdown_html("# Result\n**−9.99** and `code`\n\n<script>alert(1)</script> [x](javascript:alert(1)) <img src=x onerror=y>")
    assert "<h1>Result</h1>" in page and "<strong>−9.99</strong>" in page and "<code>code</code>" in page
    assert "<script" not in page and "<img" not in page and 'href="javascript' not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_names_show_their_bidi_controls_on_every_page_and_grades_csv_keeps_the_rosters_spelling(tmp_path):
    """A right-to-left override in a student's name is shown as <U+202E> in every page's text (the overview, the
    student's page, its title); grades.csv writes a roster's name exactly as the roster spells it (the school's import
    matches on it) and a name that came from a submission with its controls made visible."""
    tasks = load_tasks(COURSE)
    task = tasks[0]
    rostered, handed_in = "Zo\u00eb \u202eevil", "mal\u202elory\nx"
    book = []
    for student in (rostered, handed_in):
        submission = classroom.Submission(student, f"{student}/{task.id}.ipynb", task, tmp_path / "none.ipynb", label=untrusted.file_name(student))
        result = classroom.Result(submission.label, task.category, passed=False, reason=f"said \u202e{student}", output=f"outputs/{submission.label}")
        book.append(classroom.Graded(student, submission.label, {t.id: 0 for t in tasks}, 0,
                                     {t.id: (submission, result) if t is task else None for t in tasks}, student == rostered))
    classroom.write_pages(tmp_path, tasks, book, [f"not on the roster: {untrusted.for_terminal(handed_in)}, graded under that name"])
    pages = [tmp_path / "overview.html", *(tmp_path / "feedback").glob("*.html")]
    assert len(pages) == 3
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert not untrusted.BIDI.search(text) and "<U+202E>" in html.unescape(text), page
    classroom.write_grades(tmp_path / "grades.csv", tasks, book, [rostered])
    with open(tmp_path / "grades.csv", newline="", encoding="utf-8") as handle:
        names = [row[0] for row in csv.reader(handle)][1:]
    assert names == [rostered, "mal<U+202E>lory\\x0ax"]
