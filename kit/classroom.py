"""classroom: a teacher's assignment (a suite's tasks, each worth its points) graded for a whole class in one command,
with a gradebook (grades.csv), a feedback page per student and an overview for the teacher; and the handout students
get (a starter notebook per task and its input files).

A submission is a notebook as students write it: it is read here, never trusted. A file that is not a notebook, too
large, nested too deeply or malformed is that student's failure with a one-line reason; its code cells run in the
jail (saved outputs ignored), IPython magics and shell escapes turned into plain Python as a kernel would run them
or skipped with a printed note, each cell under a timeout and the whole notebook under a time budget.
"""

import argparse
import csv
import json
import re
import shutil
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from kit.harness import (NO_OUTPUT, Conversation, Reply, Result, Task, UsageError, append_result, run_attempts, run_one, suite_digest,
                     write_manifest)
from kit.harness import check_output_folder
from kit.sandbox import JailError, JailLimits, safe_text, terminal_text, usable_cpus
from kit.suite import load_tasks

HERE = Path(__file__).resolve().parent  # the kit's folder: templates/
ROOT = Path(__file__).resolve().parent.parent  # the checkout: requirements.txt, tasks.jsonl, .venv, .jail, runs
CELL_TIMEOUT = 60.0       # seconds per cell (a student's loop is cut there, the notebook goes on)
BUDGET = 600.0            # seconds per submission: no cell starts past it
NOTEBOOK_MIB = 20.0       # a larger file is not read
NOTE = "[grader] "        # how a note of the grader's starts, in a cell's output
CSP = "default-src 'none'; style-src 'unsafe-inline'"


# --- a notebook, read as a student may have written it -----------------------------------------------------------

class Unreadable(Exception):
    """A submission that cannot be graded: its message is the student's one-line reason."""


def notebook_cells(path: Path, max_mib: float = NOTEBOOK_MIB) -> list[tuple[str, str]]:
    """(cell type, source) per cell of a Jupyter notebook, its saved outputs ignored; Unreadable with the reason for
    anything that is not a notebook Jupyter would open."""
    try:
        size = path.stat().st_size
        if size > max_mib * 2**20:
            raise Unreadable(f"the file is {size / 2**20:.1f} MiB, over the {max_mib:g} MiB a notebook may be")
        text = path.read_bytes().decode("utf-8")
    except OSError as error:
        raise Unreadable(f"the file cannot be read ({error.strerror or error})") from None
    except UnicodeDecodeError:
        raise Unreadable("the file is not UTF-8 text, so not a notebook") from None
    try:
        book = json.loads(text)
    except RecursionError:
        raise Unreadable("the file is JSON nested too deeply to read, not a notebook") from None
    except ValueError as error:
        raise Unreadable(f"the file is not JSON ({getattr(error, 'msg', error)} at line {getattr(error, 'lineno', '?')}): "
                         "not a notebook, or one cut short") from None
    if not isinstance(book, dict):
        raise Unreadable(f"the file holds a JSON {type(book).__name__}, not a notebook")
    if isinstance(book.get("nbformat"), int) and book["nbformat"] < 4:  # an old notebook: nbformat converts it
        import nbformat

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                book = json.loads(nbformat.writes(nbformat.reads(text, as_version=4)))
        except Exception as error:  # nbformat raises many kinds for a broken old notebook
            raise Unreadable(f"an nbformat {book['nbformat']} notebook nbformat cannot convert ({type(error).__name__})") from None
    cells = book.get("cells")
    if not isinstance(cells, list):
        raise Unreadable("the notebook has no list of 'cells'")
    found = []
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict):
            raise Unreadable(f"cell {number} is not a JSON object")
        kind = cell.get("cell_type")
        if kind not in ("code", "markdown", "raw"):
            raise Unreadable(f"cell {number} has cell type '{terminal_text(str(kind), 40)}', not code, markdown or raw")
        if "source" not in cell:
            raise Unreadable(f"cell {number} has no 'source' field")
        source = cell["source"]
        if isinstance(source, list) and all(isinstance(line, str) for line in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise Unreadable(f"cell {number}'s 'source' is not text")
        found.append((kind, source.encode("utf-8", "replace").decode("utf-8")))  # a lone surrogate becomes '?'
    return found


def notebook_answer(cells: list[tuple[str, str]]) -> str | None:
    """The answer rule: the last non-empty markdown cell after the last code cell; None when there is none (then the
    answer is what the last code cell printed)."""
    answer = None
    for kind, source in cells:
        if kind == "code" and source.strip():
            answer = None
        elif kind == "markdown" and source.strip():
            answer = source
    return answer


# --- IPython's syntax, as a kernel would run it ------------------------------------------------------------------

SHELL = '__import__("subprocess").run({command!r}, shell=True, capture_output=True, text=True)'
INSTALLERS = re.compile(r"(pip3?|conda|mamba|apt(-get)?|python3? -m pip)\s+install\b")
SKIPPED_MAGICS = ("load_ext", "reload_ext", "config", "autoreload", "who", "whos", "reset", "env", "precision", "pylab",
                  "store", "run", "load", "history", "notebook", "xmode", "debug", "pdb", "lsmagic")


def note(text: str) -> str:
    return f"print({NOTE + text!r})"


def shell_line(command: str) -> str:
    command = command.strip()
    if INSTALLERS.match(command):
        return note(f"`{command}` skipped: no network here, nothing can be installed; the grader's packages are there")
    return f"_pybench_shell = {SHELL.format(command=command)}; print(_pybench_shell.stdout + _pybench_shell.stderr, end='')"


def line_magic(magic: str, rest: str) -> str:
    if magic == "matplotlib":
        return note(f"`%matplotlib {rest}` not needed: figures are kept as a kernel would keep them")
    if magic in ("time", "timeit"):
        return rest or "pass"  # the statement runs once, untimed
    if magic in ("pip", "conda"):
        return shell_line(f"{magic} {rest}")
    if magic in ("sx", "system", "ls", "cat", "mkdir", "rm", "cp", "mv"):
        return shell_line(rest if magic in ("sx", "system") else f"{magic} {rest}")
    if magic == "cd":
        return f"__import__('os').chdir({rest.strip() or '.'!r})"
    if magic == "pwd":
        return "print(__import__('os').getcwd())"
    return note(f"`%{magic}` skipped: the grader runs plain Python" if magic in SKIPPED_MAGICS else
                f"`%{magic} {rest}`".rstrip() + " skipped: not a magic the grader knows")


MAGIC_LINE = re.compile(r"(\s*)(?:(?P<name>[A-Za-z_]\w*)\s*=\s*)?(?:!(?P<shell>.*)|%(?P<magic>[A-Za-z]\w*)(?P<rest>.*))\Z")


def kernel_source(source: str) -> str:
    """A cell's source as plain Python: its magics (%name, %%name) and shell escapes (!command, x = !command) as
    IPython would run them, or replaced by a printed note saying why they were skipped (an install: no network)."""
    lines = source.split("\n")
    first = lines[0].strip()
    if first.startswith("%%"):
        magic, _, rest = first[2:].partition(" ")
        body = "\n".join(lines[1:])
        if magic in ("time", "timeit", "capture"):
            lines = lines[1:]
        elif magic == "writefile":
            name = rest.replace("-a", "").strip()
            return f"open({name!r}, {'a' if '-a' in rest.split() else 'w'!r}).write({body + chr(10)!r})"
        elif magic in ("bash", "sh", "script"):
            return shell_line(body) if not INSTALLERS.search(body) else note("the shell cell's install skipped: no network here")
        else:
            return note(f"cell magic %%{magic} skipped: the grader runs plain Python")
    plain = []
    for line in lines:
        found = MAGIC_LINE.match(line)
        if not found:
            plain.append(line)
            continue
        indent, name = found[1], found["name"]
        if found["shell"] is not None:
            statement = (f"{name} = {SHELL.format(command=found['shell'].strip())}.stdout.splitlines()" if name
                         else shell_line(found["shell"]))
        else:
            statement = line_magic(found["magic"], found["rest"].strip())
            if name:
                statement = f"{name} = None; " + statement
        plain.append(indent + statement)
    return "\n".join(plain)


DISPLAY = ('__import__("builtins").display = getattr(__import__("builtins"), "display", None) or '
           '(lambda *values, **options: print(*map(repr, values), sep="\\n"))  # a kernel\'s display(), as text')


def uses_display(code: list[str]) -> bool:
    """Whether a notebook calls IPython's display() without importing it (a kernel has it built in; the jail has no IPython)."""
    text = "\n".join(code)
    return bool(re.search(r"\bdisplay\(", text)) and not re.search(r"import[^\n]*\bdisplay\b|def display\b|\bdisplay\s*=", text)


# --- the cells as an attempt's replies, under a time budget ------------------------------------------------------

CODE_REPLY = re.compile(r"```python\n(.*)\n```", re.DOTALL)


@dataclass
class NotebookConversation(Conversation):
    """The protocol for a notebook: a reply is a code cell only as the grader wrote it (a final answer holding a code
    block stays an answer); it notes the first cell that failed, for the student's reason."""
    first_error: str = ""
    cells_run: int = 0

    def code_in(self, reply: str) -> str | None:
        found = CODE_REPLY.fullmatch(reply)
        return found.group(1) if found else None

    def printed(self, cell) -> str:
        self.cells_run += 1
        if cell.status != "ok" and not self.first_error:
            message = (cell.error_message or "").strip().splitlines()
            self.first_error = f"cell {self.cells_run}: {cell.error_type or cell.status}" + (f": {message[-1]}" if message else "")
        return super().printed(cell)


@dataclass
class Submission:
    """One notebook of one student for one task."""
    student: str
    name: str              # the file, relative to the submissions folder
    task: Task
    label: str             # the run's id for it: a jail name, a folder name
    cells: list[tuple[str, str]] = field(default_factory=list)
    problem: str = ""      # why it cannot be graded ("" when it can)

    @property
    def code(self) -> list[str]:
        return [source for kind, source in self.cells if kind == "code" and source.strip()]


class NotebookModel:
    """The 'model' of a class's grading: each submission's code cells are its replies, then its answer (the answer
    rule); past the budget no further cell is sent."""

    def __init__(self, submissions: dict[str, Submission], budget: float):
        self.submissions, self.budget, self.stopped = submissions, budget, ""

    def open(self, wanted: int | None, attempts: int) -> int:
        """By default as many submissions at once as this process may use CPUs (as a replay)."""
        return max(1, min(wanted or usable_cpus()[0], attempts))

    def attempt(self, task_id: str, seed: int) -> "NotebookAttempt":
        return NotebookAttempt(self, self.submissions[task_id])

    def stop(self, reason: str) -> None:
        self.stopped = reason

    def close(self) -> None:
        pass


@dataclass
class NotebookAttempt:
    model: NotebookModel
    submission: Submission
    started: float = field(default_factory=time.monotonic)

    def reply(self, messages: list[dict]) -> Reply:
        code = self.submission.code
        turn = sum(message["role"] == "assistant" for message in messages)
        if self.model.stopped:
            return Reply(None, stop=self.model.stopped)
        if turn < len(code):
            if turn and time.monotonic() - self.started > self.model.budget:
                return Reply(None, stop=f"time budget of {self.model.budget:g} s spent after {turn} of {len(code)} code cells")
            source = kernel_source(code[turn])
            if turn == 0 and uses_display(code):
                source = f"{DISPLAY}\n{source}"
            return Reply(f"```python\n{source}\n```", stop="stop")
        if turn == len(code):
            answer = notebook_answer(self.submission.cells)
            return Reply(answer if answer is not None else printed_answer(messages), stop="stop")
        return Reply(None, stop="notebook done")

    def close(self) -> None:
        pass


def printed_answer(messages: list[dict]) -> str:
    """What the last code cell printed, the grader's notes left out: the answer of a notebook without a closing
    markdown cell."""
    last = messages[-1]["content"] if len(messages) > 3 and messages[-1]["role"] == "user" else ""
    last = "" if last == NO_OUTPUT else last.removeprefix(Conversation.interpreter_prefix)
    return "\n".join(line for line in last.splitlines() if not line.startswith(NOTE))


# --- the class: submissions matched to tasks ----------------------------------------------------------------------

def label_of(text: str, taken: set[str]) -> str:
    label = re.sub(r"[^A-Za-z0-9._-]", "_", text).strip("._-")[:60] or "student"
    unique, number = label, 1
    while unique in taken:
        number += 1
        unique = f"{label}-{number}"
    taken.add(unique)
    return unique


def find_submissions(folder: Path, tasks: list[Task], max_mib: float) -> tuple[list[Submission], list[str], list[str]]:
    """(submissions, students in order, files matched to no task) of a folder. The naming rule: one task,
    `<student>.ipynb`; several, `<student>/<task-id>.ipynb` or `<student>__<task-id>.ipynb`."""
    by_id = {task.id: task for task in tasks}
    found, students, unmatched, taken = [], [], [], set()
    for path in sorted(folder.rglob("*.ipynb")):
        relative = path.relative_to(folder)
        if any(part.startswith(".") for part in relative.parts) or not (path.is_file() or path.is_symlink()):
            continue  # .ipynb_checkpoints and the like
        if len(relative.parts) == 2 and relative.stem in by_id:
            student, task = relative.parts[0], by_id[relative.stem]
        elif len(relative.parts) == 1 and "__" in relative.stem and relative.stem.rsplit("__", 1)[1] in by_id:
            student, task_id = relative.stem.rsplit("__", 1)
            task = by_id[task_id]
        elif len(relative.parts) == 1 and len(tasks) == 1:
            student, task = relative.stem, tasks[0]
        else:
            unmatched.append(str(relative))
            continue
        if student not in students:
            students.append(student)
        submission = Submission(student, str(relative), task, label_of(f"{student}.{task.id}", taken))
        if path.is_symlink():
            submission.problem = "the file is a symbolic link, not a notebook"
        else:
            try:
                submission.cells = notebook_cells(path, max_mib)
            except Unreadable as error:
                submission.problem = str(error)
        found.append(submission)
    return found, students, unmatched


def grade_submission(submission: Submission, model: NotebookModel, run_dir: Path, limits: JailLimits) -> Result:
    """One notebook in the jail, then its task's check: a Result whose id is the submission's label. Whatever the
    notebook holds, a failure with a reason, never an exception (only a jail that cannot start at all raises)."""
    task = submission.task
    if not submission.problem:
        conversation = NotebookConversation()
        try:
            result = run_one(replace(task, id=submission.label), 0, 1, 0, model, conversation, run_dir, limits, len(submission.code) + 1)
        except JailError:
            raise
        except Exception as error:  # a notebook the grader could not run: that student's failure, the class goes on
            submission.problem = f"the grader could not run this notebook ({type(error).__name__}: {str(error)[:200]})"
        else:
            why = [part for part in (result.reason, result.ended_by if result.ended_by.startswith("time budget") else "",
                                     conversation.first_error) if part]
            result.reason = "" if result.passed else safe_text("; ".join(why), 2000)
            result.task, result.submission = task.id, submission.name
            return result
    return Result(submission.label, task.category, passed=False, reason=safe_text(f"not graded: {submission.problem}", 2000),
                  ended_by="not graded", task=task.id, submission=submission.name)


def grade_class(argv: list[str]) -> int:
    """`pybench.py grade --tasks TASKS.jsonl SUBMISSIONS/`: every notebook of the folder graded against its task, a
    line each, then grades.csv, results.jsonl and the feedback pages. 0 when every submission was graded."""
    parser = argparse.ArgumentParser(prog="pybench.py grade", description="Grade a class: every notebook of SUBMISSIONS "
                                     "(<student>.ipynb for a one-task assignment; <student>/<task-id>.ipynb or <student>__<task-id>.ipynb) "
                                     "run in the jail and checked, then grades.csv, results.jsonl and feedback pages. (One task, "
                                     "any files: grade --task ID FILE...)")
    parser.add_argument("--tasks", type=Path, required=True, help="the assignment: a tasks.jsonl (files/ and checks/ beside it); "
                        "a task's 'points' is what passing it is worth (default 1)")
    parser.add_argument("submissions", type=Path, metavar="SUBMISSIONS", help="the folder of the students' notebooks")
    parser.add_argument("--out", type=Path, help="where grades.csv, results.jsonl and the pages go (default runs/class-<time>)")
    parser.add_argument("--parallel", type=int, help="notebooks graded at once (default: one per core)")
    parser.add_argument("--cell-timeout", type=float, default=CELL_TIMEOUT, help=f"seconds a cell may run, then it is cut "
                        f"and the notebook goes on (default {CELL_TIMEOUT:g})")
    parser.add_argument("--budget", type=float, default=BUDGET, help=f"seconds per notebook: no cell starts past it "
                        f"(default {BUDGET:g}; a cell already running ends by --cell-timeout)")
    parser.add_argument("--memory", type=float, default=4.0, help="GiB of memory per notebook (default 4)")
    parser.add_argument("--max-notebook-mib", type=float, default=NOTEBOOK_MIB, help=f"larger files are not read (default {NOTEBOOK_MIB:g})")
    options = parser.parse_args(argv)
    for flag, value in (("--parallel", options.parallel), ("--cell-timeout", options.cell_timeout), ("--budget", options.budget),
                        ("--memory", options.memory), ("--max-notebook-mib", options.max_notebook_mib)):
        if value is not None and value <= 0:
            raise UsageError(f"grade {flag} must be positive, not {value:g}")
    if options.out:
        check_output_folder(options.out, "grade --out")
    tasks_path = options.tasks.resolve()
    tasks = load_tasks(tasks_path)
    folder = options.submissions.resolve()
    if not folder.is_dir():
        raise UsageError(f"grade: {folder} is not a folder of notebooks (for single files: grade --task ID FILE...)")
    submissions, students, unmatched = find_submissions(folder, tasks, options.max_notebook_mib)
    if not submissions:
        raise UsageError(f"grade: no notebook in {folder} matches a task of {tasks_path.name} "
                         "(<student>.ipynb for one task; <student>/<task-id>.ipynb or <student>__<task-id>.ipynb)")
    run_dir = (options.out or ROOT / "runs" / f"class-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    if run_dir.exists() and any(run_dir.iterdir()):
        raise UsageError(f"grade --out {run_dir} is not empty: give a new folder")
    (run_dir / "jails").mkdir(parents=True, exist_ok=True)
    run_dir.chmod(0o755)
    for name in unmatched:
        print(f"skipped {terminal_text(name)}: its name matches no task (<student>/<task-id>.ipynb or <student>__<task-id>.ipynb)")
    limits = JailLimits(memory_gib=options.memory, cell_timeout=options.cell_timeout)
    by_label = {submission.label: submission for submission in submissions}
    model = NotebookModel(by_label, options.budget)
    parallel = model.open(options.parallel, len(submissions))
    manifest = {"model": {"replay": "notebooks"}, "model_sha256": None, "device": "none (grading)", "suite": str(tasks_path),
                "suite_size": len(tasks), "suite_sha256": suite_digest(tasks_path.parent, [tasks_path], tasks),
                "flags": {"cell_timeout": options.cell_timeout, "budget": options.budget, "parallel": parallel, "samples": 1},
                "grade": {"tasks": [task.id for task in tasks], "students": len(students), "submissions": len(submissions)},
                "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "finished": None}
    write_manifest(run_dir, manifest)
    print(f"grading {len(submissions)} notebook(s) of {len(students)} student(s) over {len(tasks)} task(s), {parallel} at once; "
          f"cells cut at {options.cell_timeout:g} s, {options.budget:g} s per notebook", flush=True)
    began = time.monotonic()
    results: dict[str, Result] = {}

    def attempt(task: Task, sample: int) -> Result:
        return grade_submission(by_label[task.id], model, run_dir, limits)
    todo = [(replace(submission.task, id=submission.label), 0) for submission in submissions]
    for task, _, result, _ in run_attempts(todo, parallel, model, attempt, lambda in_flight: None):
        submission = by_label[task.id]
        results[submission.label] = result
        append_result(run_dir / "results.jsonl", result)
        points = submission.task.points
        print(f"{terminal_text(submission.name)}: {'pass' if result.passed else 'fail'} {points if result.passed else 0:g}/{points:g}"
              f"{': ' + terminal_text(result.reason, 300) if result.reason else ''}", flush=True)
    manifest["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    write_manifest(run_dir, manifest)
    book = gradebook(students, tasks, submissions, results)
    write_grades(run_dir / "grades.csv", tasks, book)
    write_pages(run_dir, tasks, book)
    print(f"graded {len(results)} notebook(s) in {time.monotonic() - began:.0f} s; grades: {run_dir / 'grades.csv'}; "
          f"feedback: {run_dir / 'feedback'}; overview: {run_dir / 'overview.html'}")
    return 0


# --- the gradebook and the pages ----------------------------------------------------------------------------------

@dataclass
class Graded:
    """One student's row of the gradebook: per task, the points and the submission (None: none handed in)."""
    student: str
    label: str
    points: dict[str, float]
    total: float
    work: dict[str, tuple[Submission, Result] | None]

    @property
    def shown(self) -> str:
        """The name on one line, its control characters (a newline) as escapes."""
        return terminal_text(self.student, 200)


def gradebook(students: list[str], tasks: list[Task], submissions: list[Submission], results: dict[str, Result]) -> list[Graded]:
    taken: set[str] = set()
    rows = []
    for student in students:
        work = {task.id: None for task in tasks}
        for submission in submissions:
            if submission.student == student:
                work[submission.task.id] = (submission, results[submission.label])
        points = {task.id: task.points if work[task.id] and work[task.id][1].passed else 0.0 for task in tasks}
        rows.append(Graded(student, label_of(student, taken), points, sum(points.values()), work))
    return rows


def write_grades(path: Path, tasks: list[Task], book: list[Graded]) -> None:
    """grades.csv: a header line (student, a column per task, total), then a row per student; Moodle's grade import
    (CSV file) maps the student column to a user field and each other column to a grade item."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student"] + [task.id for task in tasks] + ["total points"])
        for row in book:
            writer.writerow([row.shown] + [f"{row.points[task.id]:g}" for task in tasks] + [f"{row.total:g}"])


def templates():
    """The jinja2 environment of templates/ for the classroom's pages: autoescape on, every value made safe text; the
    `markdown` filter renders a student's Markdown."""
    import jinja2
    import markupsafe

    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True, undefined=jinja2.StrictUndefined,
                                     finalize=lambda value: value if isinstance(value, markupsafe.Markup) else
                                     safe_text(value) if isinstance(value, str) else value, trim_blocks=True, lstrip_blocks=True)
    environment.filters["markdown"] = markdown_html
    return environment


def markdown_html(text: str):
    """A student's Markdown as HTML (markdown-it-py, CommonMark) with raw HTML off, so a <script> or any other tag a
    student wrote is shown as text, and links only where markdown-it allows them (never javascript:, vbscript:,
    file: or data: but images); the pages' policy allows no script anyway."""
    import markupsafe
    from markdown_it import MarkdownIt

    return markupsafe.Markup(MarkdownIt("commonmark", {"html": False}).render(safe_text(text)))


def student_cells(submission: Submission, result: Result) -> list[dict]:
    """The student's cells as handed in, each code cell with what it printed when the grader ran it."""
    printed = [text for code, text in zip(result.code or [], result.printed or []) if code is not None]
    cells, number = [], 0
    for kind, source in submission.cells:
        if kind == "code" and source.strip():
            cells.append({"kind": "code", "source": source, "output": printed[number] if number < len(printed) else None})
            number += 1
        elif kind != "code" and source.strip():
            cells.append({"kind": kind, "source": source, "output": None})
    return cells


def write_pages(run_dir: Path, tasks: list[Task], book: list[Graded]) -> None:
    """feedback/<student>.html: a student's own work, points and reasons (nothing of the checks, the references or
    the others); overview.html: the teacher's view of the class."""
    environment = templates()
    (run_dir / "feedback").mkdir(exist_ok=True)
    possible = sum(task.points for task in tasks)
    for row in book:
        work = [{"task": task, "points": row.points[task.id], "submission": row.work[task.id][0] if row.work[task.id] else None,
                 "result": row.work[task.id][1] if row.work[task.id] else None,
                 "cells": student_cells(*row.work[task.id]) if row.work[task.id] else []} for task in tasks]
        page = environment.get_template("classroom_student.html").render(csp=CSP, student=row.shown, total=row.total,
                                                                         possible=possible, work=work)
        (run_dir / "feedback" / f"{row.label}.html").write_text(page, encoding="utf-8", errors="backslashreplace")
    totals = Counter(row.total for row in book)
    failed = []
    for task in tasks:
        reasons = Counter((row.work[task.id][1].reason if row.work[task.id] else "no notebook handed in")
                          for row in book if not row.points[task.id])
        failed.append({"task": task, "failed": sum(reasons.values()), "reasons": reasons.most_common(3)})
    failed.sort(key=lambda item: -item["failed"])
    page = environment.get_template("classroom_overview.html").render(
        csp=CSP, tasks=tasks, book=book, possible=possible, distribution=sorted(totals.items()),
        most=max(totals.values(), default=1), failed=[item for item in failed if item["failed"]])
    (run_dir / "overview.html").write_text(page, encoding="utf-8", errors="backslashreplace")


# --- the handout ---------------------------------------------------------------------------------------------------

def handout(argv: list[str]) -> int:
    """`pybench.py handout --tasks TASKS.jsonl DIR`: a starter notebook per task and the input files under DIR/data/,
    nothing of the checks or their replays."""
    import nbformat

    parser = argparse.ArgumentParser(prog="pybench.py handout", description="Write what students get: a starter notebook per "
                                     "task (its query, its input files' paths) and the input files under DIR/data/; nothing of the checks.")
    parser.add_argument("--tasks", type=Path, required=True, help="the assignment's tasks.jsonl")
    parser.add_argument("out", type=Path, metavar="DIR", help="the folder to write (new or empty)")
    options = parser.parse_args(argv)
    tasks = load_tasks(options.tasks.resolve())
    out = options.out.resolve()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"handout: {out} is not an empty folder: give a new one")
    (out / "data").mkdir(parents=True)
    for task in tasks:
        for relative, host in task.inputs.items():
            shutil.copyfile(host, out / relative)
        files = "\n".join(f"- `{path}`" for path in task.paths) or "- none"
        book = nbformat.v4.new_notebook()
        book.cells = [nbformat.v4.new_markdown_cell(f"# {task.id} ({task.points:g} point{'s' if task.points != 1 else ''})\n\n"
                                                    f"{task.query}\n\nInput files:\n{files}\n\nSave the files asked for under "
                                                    "`./output/`. End with a markdown cell giving your answer in words "
                                                    "(without one, what your last code cell prints is your answer)."),
                      nbformat.v4.new_code_cell("import os\nos.makedirs('./output', exist_ok=True)\n"
                                                + "".join(f"# {path}\n" for path in task.paths)),
                      nbformat.v4.new_markdown_cell("Your answer: ...")]
        nbformat.validate(book)
        nbformat.write(book, out / f"{task.id}.ipynb")
        print(f"{out / (task.id + '.ipynb')}")
    print(f"handout: {len(tasks)} notebook(s) and {sum(len(task.inputs) for task in tasks)} input file(s) in {out}; "
          f"students hand in <student>/<task-id>.ipynb (or <student>.ipynb for a one-task assignment)")
    return 0
