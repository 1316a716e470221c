"""classroom: a teacher's assignment (a suite's tasks, each worth its points) graded for a whole class in one command
(grades.csv, a feedback page per student, an overview for the teacher), and the handout students get.

A submission is a notebook as students write it: it is read here, never trusted. A file that is not a notebook, too
large, nested too deeply or malformed is that student's failure with a one-line reason; its code cells run in the
jail (saved outputs ignored), IPython magics and shell escapes turned into plain Python as a kernel would run them
or skipped with a printed note, each cell under a timeout and the whole notebook under a time budget.
"""

import argparse
import base64
import csv
import json
import re
import shutil
import tempfile
import time
import unicodedata
import warnings
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from kit.harness import (NO_OUTPUT, PICTURE_BYTES, PICTURE_PIXELS, Conversation, Reply, Result, Task, UsageError, append_line,
                         check_modules, check_output_folder, file_kind, functions_defined_in, json_error_place, make_manifest,
                         picture_refusal, run_attempts, run_one, suite_digest, write_manifest)
from kit import report
from kit.jailed import SHOWN_FIGURES
from kit.sandbox import ROOT, JailError, JailLimits, usable_cpus
from kit.settings import OneLineParser, add_flags
from kit.untrusted import MarkdownBudget, data_uri, file_name, for_record, for_terminal, name_key, write_csv
from kit.suite import load_tasks, read_replays

__all__ = ["ANSWER_MARK", "ANSWER_PLACEHOLDER", "Graded", "NotebookModel", "Unreadable", "class_notes",
           "folder_submissions", "grade_class", "handout", "kernel_source", "notebook_answer", "notebook_cells",
           "one_each", "printed_answer", "read_roster", "replay_cells", "self_check", "shown_pictures",
           "write_grades"]

CELL_TIMEOUT = 60.0       # seconds per cell (a student's loop is cut there, the notebook goes on)
BUDGET = 600.0            # seconds per submission: no cell starts past it
NOTEBOOK_MIB = 20.0       # a larger file is not read
NOTEBOOK_CELLS = 2000     # a notebook with more cells is not run (nor converted from nbformat 3)
NOTE = "[grader] "        # how a note of the grader's starts, in a cell's output


# --- a notebook, read as a student may have written it -----------------------------------------------------------

class Unreadable(Exception):
    """A submission that cannot be graded: its message is the student's one-line reason."""


def notebook_cells(path: Path, max_mib: float = NOTEBOOK_MIB) -> list[tuple[str, str]]:
    """(cell type, source) per cell of a Jupyter notebook (saved outputs ignored; the marked answer cell typed
    "answer"); Unreadable with the reason for anything that is not a notebook Jupyter would open."""
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
    except json.JSONDecodeError as error:
        raise Unreadable(f"the file is not JSON ({json_error_place(error, 'line', error.lineno)}): "
                         "not a notebook, or one cut short") from None
    if not isinstance(book, dict):
        raise Unreadable(f"the file holds a JSON {type(book).__name__}, not a notebook")
    sheets = book.get("worksheets") if book.get("cells") is None else [book]  # before any conversion
    count = sum(len(sheet["cells"]) for sheet in (sheets if isinstance(sheets, list) else [])
                if isinstance(sheet, dict) and isinstance(sheet.get("cells"), list))
    if count > NOTEBOOK_CELLS:
        raise Unreadable(f"the notebook has {count} cells, over the {NOTEBOOK_CELLS} a notebook may have")
    if isinstance(book.get("nbformat"), int) and book["nbformat"] < 4:  # an old notebook: nbformat converts it
        import nbformat

        try:
            with warnings.catch_warnings(action="ignore"):
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
            raise Unreadable(f"cell {number} has cell type '{for_terminal(str(kind), 40)}', not code, markdown or raw")
        if "source" not in cell:
            raise Unreadable(f"cell {number} has no 'source' field")
        source = cell["source"]
        if isinstance(source, list) and all(isinstance(line, str) for line in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise Unreadable(f"cell {number}'s 'source' is not text")
        mark = cell.get("metadata", {}).get("pybench") if isinstance(cell.get("metadata"), dict) else None  # as ANSWER_MARK
        marked = kind == "markdown" and isinstance(mark, dict) and mark.get("answer") is True
        found.append(("answer" if marked else kind, source.encode("utf-8", "replace").decode("utf-8")))  # a lone surrogate becomes '?'
    return found


ANSWER_MARK = {"pybench": {"answer": True}}  # a handout's answer cell carries this in its metadata, as nbgrader marks its cells
ANSWER_PLACEHOLDER = "Your answer: ..."     # its text in the handout: left as it is, it is no answer


def notebook_answer(cells: list[tuple[str, str]]) -> str | None:
    """The answer rule: the marked answer cell, once written; else the last non-empty markdown cell after the last code
    cell; else None (the answer is then what the last code cell printed)."""
    marked = [source for kind, source in cells if kind == "answer" and source.strip() not in ("", ANSWER_PLACEHOLDER)]
    if marked:
        return marked[-1]
    written = [(kind, source) for kind, source in cells if kind in ("code", "markdown") and source.strip()]
    return written[-1][1] if written and written[-1][0] == "markdown" else None


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
        return note(f"`%matplotlib {rest}` not needed: figures are shown and closed at each cell's end, as the inline backend does")
    if magic in ("time", "timeit"):
        return rest or "pass"  # the statement runs once, untimed
    if magic in ("sx", "system", "pip", "conda", "ls", "cat", "mkdir", "rm", "cp", "mv"):
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
    return "\n".join(magic_statement(found) if (found := MAGIC_LINE.match(line)) else line for line in lines)


def magic_statement(found: re.Match) -> str:
    """A line's shell escape or line magic (MAGIC_LINE), its indent kept, as Python."""
    name = found["name"]
    if found["shell"] is None:
        return found[1] + (f"{name} = None; " if name else "") + line_magic(found["magic"], found["rest"].strip())
    shell = found["shell"]
    return found[1] + (f"{name} = {SHELL.format(command=shell.strip())}.stdout.splitlines()" if name else shell_line(shell))


# --- the cells as an attempt's replies, under a time budget ------------------------------------------------------

CODE_REPLY = re.compile(r"```python\n(.*)\n```", re.DOTALL)


@dataclass
class NotebookConversation(Conversation):
    """The protocol for a notebook: a reply is a code cell only as the grader wrote it (a final answer holding a code
    block stays an answer); it notes each cell that failed, for the student's page and the teacher's overview."""
    failed: list[str] = field(default_factory=list)
    timed_out: list[str] = field(default_factory=list)  # the cells cut at the cell timeout, each also among failed
    shown: list[dict] = field(default_factory=list)  # per cell run, the figures it displayed (shown_pictures)

    def code_in(self, reply: str) -> str | None:
        found = CODE_REPLY.fullmatch(reply)
        return found.group(1) if found else None

    def printed(self, cell) -> str:
        self.shown.append(shown_pictures(cell.shown, SHOWN_FIGURES - sum(len(each["uris"]) for each in self.shown)))
        if cell.status != "ok":
            message = (cell.error_message or "").strip().splitlines()
            self.failed.append(f"cell {len(self.shown)}: {cell.error_type or cell.status}" + (f": {message[-1][:200]}" if message else ""))
            cut_off = cell.status == "restarted" and "ran past" in cell.error_message  # killed past the timeout
            if (cell.status, cell.error_type) == ("interrupted", "TimeoutError") or cut_off:
                self.timed_out.append(f"cell {len(self.shown)} timed out")  # the jail's own words, never a student's
        return super().printed(cell)


def shown_pictures(text: str, room: int) -> dict:
    """The figures a cell displayed, as its worker sent them, never trusted: {"uris": at most `room` data: URIs, each
    a PNG within the one picture limit (harness.picture_refusal: a huge image stalls a browser), "left_out": how many more}."""
    try:
        sent = json.loads(text) if text else {}
    except ValueError:
        sent = {}
    sent = sent if isinstance(sent, dict) else {}
    pictures = sent.get("png") if isinstance(sent.get("png"), list) else []
    left_out = min(sent["left_out"], 10**9) if isinstance(sent.get("left_out"), int) and sent["left_out"] > 0 else 0
    uris = []
    for picture in pictures:
        try:
            data = base64.b64decode(picture, validate=True) if isinstance(picture, str) else b""
        except ValueError:
            data = b""
        if not picture_refusal(data, ("png",)) and len(uris) < room:
            uris.append(data_uri("png", data))
    return {"uris": uris, "left_out": left_out + len(pictures) - len(uris)}


@dataclass
class Submission:
    """One file (or one replay line) of one student for one task."""
    student: str
    name: str              # the file as the teacher gave it, or relative to the submissions folder
    task: Task
    path: Path
    label: str = ""        # the run's id for it: a jail name, a folder name
    cells: list[tuple[str, str]] = field(default_factory=list)
    problem: str = ""      # why it cannot be graded ("" when it can)
    older: list[str] = field(default_factory=list)  # other files of the same student for the same task, not graded
    failed: list[str] = field(default_factory=list)  # the cells that raised an error when graded, as "cell N: Error: message"
    parts: list[tuple[str, float, float, str]] = field(default_factory=list)  # a partial-credit check's (name, earned, possible, why)
    shown: list[dict] = field(default_factory=list)  # per code cell run, the figures it displayed (shown_pictures)

    @property
    def code(self) -> list[str]:
        return [source for kind, source in self.cells if kind == "code" and source.strip()]


class NotebookModel:
    """The 'model' of a class's grading: a submission's code cells are its replies, then its answer (within budget)."""

    def __init__(self, submissions: dict[str, Submission], budget: float):
        self.submissions, self.budget, self.stopped = submissions, budget, ""

    def open(self, wanted: int | None, attempts: int) -> int:
        """By default as many submissions at once as this process may use CPUs (as a replay)."""
        return max(1, min(wanted or usable_cpus()[0], attempts))

    def attempt(self, task_id: str, seed: int) -> "NotebookAttempt":
        return NotebookAttempt(self, self.submissions[task_id])

    def stop(self, reason: str) -> None:
        self.stopped = reason


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
            return Reply(f"```python\n{kernel_source(code[turn])}\n```", stop="stop")
        if turn == len(code):
            answer = notebook_answer(self.submission.cells)
            return Reply(answer if answer is not None else printed_answer(messages), stop="stop")
        return Reply(None, stop="notebook done")

    def close(self) -> None:
        pass


def printed_answer(messages: list[dict]) -> str:
    """What the last code cell printed, the grader's notes left out: a notebook's answer without a markdown ending."""
    last = messages[-1]["content"] if len(messages) > 3 and messages[-1]["role"] == "user" else ""
    last = "" if last == NO_OUTPUT else last.removeprefix(Conversation.interpreter_prefix)
    return "\n".join(line for line in last.splitlines() if not line.startswith(NOTE))


# --- the class: submissions matched to students and tasks --------------------------------------------------------

def folder_submissions(folder: Path, tasks: list[Task]) -> tuple[list[Submission], list[str]]:
    """(submissions, files matched to no task) of a folder. The naming rule: one task, `<student>.ipynb`; several,
    `<student>/<task-id>.ipynb` or `<student>__<task-id>.ipynb`."""
    by_id = {task.id: task for task in tasks}
    found, unmatched = [], []
    for path in sorted(folder.rglob("*.ipynb")):
        relative = path.relative_to(folder)
        if any(part.startswith(".") for part in relative.parts) or not (path.is_file() or path.is_symlink()):
            continue  # .ipynb_checkpoints and the like
        student, named, task_id = relative.stem.rpartition("__")
        if len(relative.parts) == 2 and relative.stem in by_id:
            student, task = relative.parts[0], by_id[relative.stem]
        elif len(relative.parts) == 1 and named and task_id in by_id:
            task = by_id[task_id]
        elif len(relative.parts) == 1 and len(tasks) == 1:
            student, task = relative.stem, tasks[0]
        else:
            unmatched.append(str(relative))
            continue
        found.append(Submission(student, str(relative), task, path))
    return found, unmatched


def file_submissions(paths: list[Path], task: Task) -> list[Submission]:
    """A submission per file: a notebook, `<student>.ipynb`'s; a replay (.jsonl), one per line (id: the task's)."""
    found = []
    for path in paths:
        if not (path.is_file() or path.is_symlink()):
            raise UsageError(f"grade: {path} is not a file (give one folder of notebooks, or files with --task)")
        if path.suffix not in (".jsonl", ".json") or path.is_symlink():
            found.append(Submission(path.stem, path.name, task, path))
            continue
        try:
            records = read_replays(path, "pass", task.id)
        except UsageError as error:
            found.append(Submission(path.stem, path.name, task, path, problem=f"not replay lines: {error}"))
            continue
        for record in records:
            line = record["source"].rsplit(":", 1)[1]
            name, student = (path.name, path.stem) if len(records) == 1 else (f"{path.name}:{line}", f"{path.stem}:{line}")
            found.append(Submission(student, name, task, path, cells=replay_cells(record["replies"])))
    return found


def replay_cells(replies: list[str]) -> list[tuple[str, str]]:
    """A replay's replies as notebook cells: each one's code block a code cell, up to the first without (markdown)."""
    cells = []
    for reply in replies:
        code = Conversation().code_in(reply)
        cells.append(("code", code) if code is not None else ("markdown", reply))
        if code is None:
            break
    return cells


def read_roster(path: Path) -> list[str]:
    """The class list: one student a line, or a CSV with a `student` column (as an LMS exports it); each name as the
    roster spells it (a school's import matches on it), compared with others by untrusted.name_key."""
    if not path.is_file():
        raise UsageError(f"grade --roster {path}: no such file: give the class list's path (one student a line)")
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"grade --roster {path} cannot be read as UTF-8 text ({error}): give a class list") from None
    header = [name.strip().casefold() for name in next(csv.reader(lines[:1]), [])]
    if "student" in header:
        column = header.index("student")
        lines = [row[column] for row in csv.reader(lines[1:]) if len(row) > column]
    names = [line.strip() for line in lines if line.strip()]
    twice = [name for name, count in Counter(map(name_key, names)).items() if count > 1]
    if not names or twice:
        raise UsageError(f"grade --roster {path} " + (f"lists {twice[0]!r} twice" if twice else "lists no student") +
                         ": give one student a line (or a CSV with a 'student' column)")
    return names


def one_each(submissions: list[Submission], roster: list[str]) -> tuple[list[Submission], list[str], list[str]]:
    """(submissions, students, unrostered): names spelled as the roster spells them (else as first seen), and one
    submission per (student, task), the newest file; the others are named in its `older`."""
    spelled = {name_key(name): name for name in roster}
    kept: dict[tuple[str, str], Submission] = {}
    for submission in submissions:
        submission.student = spelled.setdefault(name_key(submission.student), unicodedata.normalize("NFC", submission.student))
        key = (submission.student, submission.task.id)
        if key in kept:
            newer, older = sorted((kept[key], submission), key=lambda each: -modified(each.path))
            newer.older += [older.name, *older.older]
            submission = newer
        kept[key] = submission
    students = list(dict.fromkeys([*roster, *(submission.student for submission in kept.values())]))
    return list(kept.values()), students, students[len(roster):] if roster else []


def modified(path: Path) -> float:
    try:
        return path.lstat().st_mtime
    except OSError:
        return 0.0


def read_notebooks(submissions: list[Submission], max_mib: float) -> None:
    """Each notebook's cells read, or its problem noted; every submission gets its label."""
    taken: set[str] = set()
    for submission in submissions:
        submission.label = file_name(f"{submission.student}.{submission.task.id}", taken, ascii_only=True, empty="student", limit=60)
        if submission.cells or submission.problem:
            continue
        try:
            if submission.path.is_symlink():
                raise Unreadable("the file is a symbolic link, not a notebook")
            submission.cells = notebook_cells(submission.path, max_mib)
        except Unreadable as error:
            submission.problem = str(error)


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
            submission.failed, submission.shown = conversation.failed, conversation.shown
            submission.parts = [tuple(part) for part in result.own.get("parts", [])]  # the check's values (harness.awarded_parts)
            why = [part for part in (", ".join(conversation.timed_out), result.reason,
                                     result.ended_by if result.ended_by.startswith("time budget") else "",
                                     failed_cells(conversation.failed)) if part]
            result.reason = "" if result.passed else for_record("; ".join(why), 2000)
            result.own |= {"task": task.id, "submission": submission.name}
            return result
    return Result(submission.label, task.category, passed=False, reason=for_record(f"not graded: {submission.problem}", 2000),
                  ended_by="not graded", own={"task": task.id, "submission": submission.name})


def failed_cells(failed: list[str]) -> str:
    """The cells that raised, for a reason: every cell runs even after one raises, as autograders run them."""
    shown = "; ".join(failed[:5]) + (f"; and {len(failed) - 5} more" if len(failed) > 5 else "")
    return f"{'a cell' if len(failed) == 1 else f'{len(failed)} cells'} raised an error: {shown}" if failed else ""


def grade_options(argv: list[str]) -> argparse.Namespace:
    parser = OneLineParser(prog="pybench.py grade", description="Grade a class: every notebook of SUBMISSIONS "
                                     "(<student>.ipynb for a one-task assignment; <student>/<task-id>.ipynb or <student>__<task-id>.ipynb) "
                                     "run in the jail and checked, then grades.csv, results.jsonl and feedback pages. With --task, "
                                     "SUBMISSIONS may be files instead, each a student's: notebooks or replay lines (.jsonl).")
    parser.add_argument("--tasks", type=Path, default=ROOT / "tasks.jsonl", help="the assignment: a tasks.jsonl (files/ and checks/ "
                        "beside it; default the kit's suite); a task's 'points' is what passing it is worth (default 1)")
    parser.add_argument("--task", help="grade this task only (its id); then SUBMISSIONS may be files, each a class of one")
    parser.add_argument("submissions", type=Path, nargs="+", metavar="SUBMISSIONS", help="the folder of the students' notebooks "
                        "(or, with --task, notebook and replay files)")
    parser.add_argument("--roster", type=Path, help="the class list: one student a line, or a CSV with a 'student' column; "
                        "every student on it gets a row")
    parser.add_argument("--overrides", type=Path, help="the teacher's overrides, a CSV of student, task, points, why, applied by "
                        "every grade (default overrides.csv beside the tasks file, where there is one)")
    parser.add_argument("--out", type=Path, help="where grades.csv, results.jsonl and the pages go (default runs/class-<time>)")
    parser.add_argument("--parallel", type=int, help="notebooks graded at once (default: one per core)")
    parser.add_argument("--cell-timeout", type=float, default=CELL_TIMEOUT, help=f"seconds a cell may run, then it is cut "
                        f"and the notebook goes on (default {CELL_TIMEOUT:g})")
    parser.add_argument("--budget", type=float, default=BUDGET, help=f"seconds per notebook: no cell starts past it "
                        f"(default {BUDGET:g}; a cell already running ends by --cell-timeout)")
    add_flags(parser, "memory")  # the run's --memory: the same default, per notebook
    parser.add_argument("--max-notebook-mib", type=float, default=NOTEBOOK_MIB, help=f"larger files are not read (default {NOTEBOOK_MIB:g})")
    options = parser.parse_args(argv)
    for flag in ("parallel", "cell_timeout", "budget", "memory", "max_notebook_mib"):
        if (value := getattr(options, flag)) is not None and value <= 0:
            raise UsageError(f"grade --{flag.replace('_', '-')} must be positive, not {value:g}")
    if options.out:
        check_output_folder(options.out, "grade --out")
    return options


def grade_class(argv: list[str]) -> int:
    """`pybench.py grade [--tasks TASKS.jsonl] [--task ID] SUBMISSIONS...`: every notebook (or, for one task, file)
    graded, a line each, then grades.csv, results.jsonl and the pages; 0 when every submission was graded."""
    options = grade_options(argv)
    tasks_path = options.tasks.resolve()
    tasks = load_tasks(tasks_path)
    if options.task is not None:
        tasks = [task for task in tasks if task.id == options.task]
        if not tasks:
            raise UsageError(f"grade --task: no task with id {options.task!r} in {tasks_path}")
    roster = read_roster(options.roster) if options.roster else []
    overrides_path = options.overrides or tasks_path.parent / "overrides.csv"
    overrides = read_overrides(overrides_path, tasks) if options.overrides or overrides_path.is_file() else {}
    paths = [path.resolve() for path in options.submissions]  # a folder (the naming rule), or files
    if len(paths) == 1 and paths[0].is_dir():
        found, unmatched = folder_submissions(paths[0], tasks)
    elif len(tasks) != 1:
        raise UsageError(f"grade: {paths[0]} is not a folder of notebooks; to grade files, give --task ID (the task they answer)")
    else:
        found, unmatched = file_submissions(paths, tasks[0]), []
    submissions, students, unrostered = one_each(found, roster)
    if not submissions and not roster:
        raise UsageError(f"grade: no notebook in {options.submissions[0]} matches a task of {tasks_path.name} "
                         "(<student>.ipynb for one task; <student>/<task-id>.ipynb or <student>__<task-id>.ipynb)")
    read_notebooks(submissions, options.max_notebook_mib)
    run_dir = (options.out or ROOT / "runs" / f"class-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    if run_dir.exists() and any(run_dir.iterdir()):
        raise UsageError(f"grade --out {run_dir} is not empty: give a new folder")
    notes = class_notes(unmatched, submissions, unrostered)
    for line in notes:
        print(line)
    began = time.monotonic()
    results = grade_all(submissions, options, run_dir, tasks_path, tasks, len(students))
    book = gradebook(students, tasks, submissions, results, unrostered, overrides)
    write_grades(run_dir / "grades.csv", tasks, book, roster)
    applied = override_notes(book, overrides, overrides_path)
    for line in applied:
        print(line)
    write_pages(run_dir, tasks, book, notes + applied)
    print(f"graded {len(results)} notebook(s) in {time.monotonic() - began:.0f} s; grades: {run_dir / 'grades.csv'}; "
          f"feedback: {run_dir / 'feedback'}; overview: {run_dir / 'overview.html'}")
    return 0


def class_notes(unmatched: list[str], submissions: list[Submission], unrostered: list[str]) -> list[str]:
    """What the teacher must know beside the grades, a line each: unmatched files, duplicates, names off the roster."""
    return ([f"skipped {for_terminal(name)}: its name matches no task (<student>/<task-id>.ipynb or <student>__<task-id>.ipynb)"
             for name in unmatched] +
            [f"duplicate: {for_terminal(submission.student)} handed in {submission.task.id} more than once: graded the newer "
             f"{for_terminal(submission.name)}, not {', '.join(map(for_terminal, submission.older))}"
             for submission in submissions if submission.older] +
            [f"not on the roster: {for_terminal(student)}, graded under that name" for student in unrostered])


def grade_all(submissions: list[Submission], options: argparse.Namespace, run_dir: Path, tasks_path: Path, tasks: list[Task],
              students: int, quiet: bool = False) -> dict[str, Result]:
    """Every submission in the jail, as many at once as --parallel says, a line each as it ends: results by label."""
    (run_dir / "jails").mkdir(parents=True, exist_ok=True)
    run_dir.chmod(0o755)
    limits = JailLimits(memory_gib=options.memory, cell_timeout=options.cell_timeout, notebook=True)
    by_label = {submission.label: submission for submission in submissions}
    model = NotebookModel(by_label, options.budget)
    parallel = model.open(options.parallel, max(1, len(submissions)))
    flags = {"cell_timeout": options.cell_timeout, "budget": options.budget, "parallel": parallel, "samples": 1}
    manifest = make_manifest("suite", tasks_path, suite_digest(tasks_path.parent, [tasks_path], tasks), tasks, limits, flags,
                             model={"replay": "notebooks"}, model_sha256=None, device="none (grading)",
                             grade={"tasks": [task.id for task in tasks], "students": students, "submissions": len(submissions)})
    write_manifest(run_dir, manifest)
    if not quiet:
        print(f"grading {len(submissions)} notebook(s) of {students} student(s) over {len(tasks)} task(s), {parallel} at once; "
              f"cells cut at {options.cell_timeout:g} s, {options.budget:g} s per notebook", flush=True)
    results: dict[str, Result] = {}
    todo = [(replace(submission.task, id=submission.label), 0) for submission in submissions]
    for task, _, result, _ in run_attempts(todo, parallel, model, lambda task, _: grade_submission(by_label[task.id], model, run_dir, limits),
                                           lambda in_flight: None):
        submission = by_label[task.id]
        results[submission.label] = result
        append_line(run_dir / "results.jsonl", result.to_json())
        points = submission.task.own["points"]
        print(f"{for_terminal(submission.name)}: {'pass' if result.passed else 'fail'} {earned(submission.task, (submission, result)):g}/{points:g}"
              f"{': ' + for_terminal(result.reason, 300) if result.reason else ''}", flush=True)
    manifest["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    write_manifest(run_dir, manifest)
    return results


# --- the gradebook and the pages ----------------------------------------------------------------------------------

@dataclass
class Graded:
    """One student's row of the gradebook: per task, the points and the submission (None: none handed in)."""
    student: str
    label: str             # the feedback page's name
    points: dict[str, float]
    total: float
    work: dict[str, tuple[Submission, Result] | None]
    rostered: bool = True
    overridden: dict[str, str] = field(default_factory=dict)  # task id: why the teacher set its points

    @property
    def shown(self) -> str:
        """The name on one line: its control characters (a newline) as escapes, its bidi controls as <U+202E> (untrusted.for_terminal)."""
        return for_terminal(self.student, 200)


def gradebook(students: list[str], tasks: list[Task], submissions: list[Submission], results: dict[str, Result],
              unrostered: list[str], overrides: dict[tuple[str, str], tuple[float, str]]) -> list[Graded]:
    """A row per student: the points each task's verdict gives, or the teacher's override of them."""
    taken: set[str] = set()
    rows = []
    for student in students:
        work = {task.id: None for task in tasks} | {submission.task.id: (submission, results[submission.label])
                                                    for submission in submissions if submission.student == student}
        points = {task.id: earned(task, work[task.id]) for task in tasks}
        overridden = {task.id: overrides[name_key(student), task.id] for task in tasks if (name_key(student), task.id) in overrides}
        points |= {task_id: given for task_id, (given, _) in overridden.items()}
        rows.append(Graded(student, file_name(student, taken, empty="student", limit=60), points, sum(points.values()), work, student not in unrostered,
                           {task_id: why for task_id, (_, why) in overridden.items()}))
    return rows


def earned(task: Task, work: tuple[Submission, Result] | None) -> float:
    """A task's points: all for a pass, none for a fail, the parts' share of them where its check awards parts (each
    part's earned at most its possible, harness.awarded_parts: never more than the task's points)."""
    if not work:
        return 0.0
    possible, points = sum(part[2] for part in work[0].parts), task.own["points"]
    return points if work[1].passed else min(points, points * sum(part[1] for part in work[0].parts) / possible) if possible else 0.0


def read_overrides(path: Path, tasks: list[Task]) -> dict[tuple[str, str], tuple[float, str]]:
    """The teacher's overrides, a CSV of student, task, points, why: {(student key, task id): (points, why)}."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            rows = list(csv.DictReader(handle))
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise UsageError(f"grade --overrides {path} cannot be read ({error}): give a CSV with columns student, task, points, why") from None
    ids = {task.id for task in tasks}
    found = {}
    for number, row in enumerate(rows, 2):
        student, task_id, points, why = (str(row.get(column) or "").strip() for column in ("student", "task", "points", "why"))
        try:
            given = float(points)
        except ValueError:
            given = -1.0
        if not student or task_id not in ids or not 0 <= given <= 10_000 or not why:
            raise UsageError(f"grade --overrides {path}, line {number}: give a student, one of the tasks ({', '.join(sorted(ids))}), "
                             "points (a number from 0) and why")
        found[name_key(student), task_id] = (given, why)
    return found


def override_notes(book: list[Graded], overrides: dict, path: Path) -> list[str]:
    """A line per override of the teacher's: applied (whose, which task, the points, why), or naming no student here."""
    applied = [f"override from {for_terminal(path.name)}: {row.shown}, {task_id}: {row.points[task_id]:g} points ({for_terminal(why)})"
               for row in book for task_id, why in row.overridden.items()]
    students = {name_key(row.student) for row in book}
    return applied + [f"override from {for_terminal(path.name)} not applied: no student {for_terminal(key)} in this class"
                      for key, _ in overrides if key not in students]


def write_grades(path: Path, tasks: list[Task], book: list[Graded], roster: list[str]) -> None:
    """grades.csv: a header line (student, a column per task, total), then a row per student, as Moodle's grade import
    maps them. A name on the roster as the roster spells it (the import matches on it); one from a submission (a folder
    or file name) on one line with its controls and bidi controls made visible (Graded.shown)."""
    rostered = set(roster)
    write_csv(path, [["student"] + [task.id for task in tasks] + ["total points"]]
              + [[row.student if row.student in rostered else row.shown] + [f"{row.points[task.id]:g}" for task in tasks]
                 + [f"{row.total:g}"] for row in book], reveal=False)


PICTURE = re.compile(r"\./output/([\w./-]*\.(?:png|jpe?g|gif|webp))", re.IGNORECASE)


def output_images(run_dir: Path, task: Task, result: Result) -> list[dict]:
    """The pictures the task's query asks for, as the notebook left them in ./output/: each a data: URI if a regular
    file within harness.picture_refusal's limit (read from its header before anything decodes it), else why not."""
    folder = run_dir / result.output
    shown = []
    for name in dict.fromkeys(PICTURE.findall(task.query)):
        path = folder / name
        if ".." in Path(name).parts or path.is_symlink() or not path.is_file():
            continue
        with open(path, "rb") as handle:
            data = handle.read(PICTURE_BYTES + 1)
        refusal = picture_refusal(data, ("png", "jpeg", "gif"))
        shown.append({"name": f"./output/{name}", "uri": None if refusal else data_uri(file_kind(data), data), "left_out": refusal})
    return shown


def write_pages(run_dir: Path, tasks: list[Task], book: list[Graded], notes: list[str]) -> None:
    """feedback/<student>.html: a student's own work, points and reasons (nothing of the checks, the references or
    the others); overview.html: the teacher's view of the class, with the notes (duplicates, names off the roster)."""
    (run_dir / "feedback").mkdir(exist_ok=True)
    possible = sum(task.own["points"] for task in tasks)
    for row in book:
        report.write_page(run_dir / "feedback" / f"{row.label}.html", report.render(
            "classroom_student.html", student=row.shown, total=row.total, possible=possible, row=row, tasks=tasks,
            images=lambda task, result: output_images(run_dir, task, result), markdown=MarkdownBudget(),
            figures_cap=SHOWN_FIGURES, png_mib=PICTURE_BYTES / 2**20, megapixels=PICTURE_PIXELS / 1e6))
    # a note per notebook that passed although a cell raised an error (autograders run on; a teacher looks)
    notes = notes + [f"passed, but {failed_cells(work[0].failed)}: {row.shown}, {task_id}" for row in book
                     for task_id, work in row.work.items() if work and work[1].passed and work[0].failed]
    failed = [(task, Counter(row.work[task.id][1].reason if row.work[task.id] else "no submission" for row in book if not row.points[task.id]))
              for task in tasks]
    report.write_page(run_dir / "overview.html", report.render(
        "classroom_overview.html", tasks=tasks, book=book, possible=possible, totals=Counter(row.total for row in book),
        failed=sorted((item for item in failed if item[1]), key=lambda item: -item[1].total()), notes=notes))


# --- the handout ---------------------------------------------------------------------------------------------------

PUBLIC = "public"  # checks/public.py: a task's public check is the function named as its hidden one


def public_suite(tasks: list[Task], tasks_path: Path, folder: Path) -> int:
    """The students' self-checks as a suite under folder: each task whose check has a namesake in checks/public.py,
    checked by it; only public.py and the kit's check library go in. Returns how many tasks have a public check."""
    checks_dir = tasks_path.parent / "checks"
    if not (checks_dir / f"{PUBLIC}.py").is_file():
        return 0
    public = functions_defined_in(checks_dir / f"{PUBLIC}.py")
    modules = check_modules(checks_dir, PUBLIC)
    hidden = [name for name, path in modules.items() if name != f"{PUBLIC}.py" and path.parent == checks_dir]
    if hidden:
        raise UsageError(f"handout: {checks_dir / (PUBLIC + '.py')} imports {', '.join(hidden)} of the hidden checks: "
                         "a public check may import only pybench_checks")
    chosen = [task for task in tasks if task.check_function in public]
    (folder / "checks").mkdir(parents=True)
    (folder / "files").mkdir()
    for name, path in modules.items():
        shutil.copyfile(path, folder / "checks" / name)
    for task in chosen:
        for relative, host in task.inputs.items():
            shutil.copyfile(host, folder / "files" / Path(relative).name)
    (folder / "tasks.jsonl").write_text("".join(json.dumps({"id": task.id, "category": task.category, "query": task.query,
                                                            "files": [Path(name).name for name in task.inputs],
                                                            "check": f"{PUBLIC}:{task.check_function}", "points": task.own["points"]},
                                                           ensure_ascii=False) + "\n" for task in chosen), encoding="utf-8")
    return len(chosen)


def self_check(argv: list[str]) -> int:
    """`pybench.py check NOTEBOOK`: a notebook run in the jail, held to its task's public checks; 0 if they pass."""
    parser = OneLineParser(prog="pybench.py check", description="Check your notebook before handing it in: it runs in "
                                     "the jail, offline, and the task's public checks (from the handout) say pass or fail and why.")
    parser.add_argument("notebook", type=Path, metavar="NOTEBOOK", help="your notebook (<task-id>.ipynb as the handout named it)")
    parser.add_argument("--tasks", type=Path, help="the public checks' tasks.jsonl (default selfcheck/tasks.jsonl beside the notebook)")
    parser.add_argument("--task", help="the task it answers (default: from the file name, <task-id>.ipynb or <name>__<task-id>.ipynb)")
    options = parser.parse_args(argv)
    notebook = options.notebook.resolve()
    tasks_path = (options.tasks or notebook.parent / "selfcheck" / "tasks.jsonl").resolve()
    if not tasks_path.is_file():
        raise UsageError(f"check: no public checks at {tasks_path}: run it beside the handout's notebooks, or give --tasks")
    task_id = options.task or notebook.stem.rsplit("__", 1)[-1]
    task = next((task for task in load_tasks(tasks_path) if task.id == task_id), None)
    if task is None:
        raise UsageError(f"check: task {task_id!r} has no public check in {tasks_path} (give --task ID)")
    grading = grade_options(["--task", task.id, str(notebook)])
    submissions = file_submissions([notebook], task)
    read_notebooks(submissions, grading.max_notebook_mib)
    with tempfile.TemporaryDirectory(prefix="pybench-check-", ignore_cleanup_errors=True) as run_dir:
        results = grade_all(submissions, grading, Path(run_dir), tasks_path, [task], 1, quiet=True)
    return 0 if all(result.passed for result in results.values()) else 1


def starter_notebook(task: Task, tasks: int):
    """A task's starter notebook: the naming rule first, the task, a code cell, and the answer cell marked as such;
    kernel metadata (python3) so that JupyterLab and VS Code open it without asking for a kernel."""
    import nbformat

    files = "\n".join(f"- `{path}`" for path in task.paths) or "- none"
    name = "`<your name>.ipynb`" if tasks == 1 else f"`<your name>/{task.id}.ipynb` or `<your name>__{task.id}.ipynb`"
    saves, points = re.findall(r"\./output/[\w./-]*\w", task.query), task.own["points"]
    answer = (f"Save {', '.join(f'`{path}`' for path in dict.fromkeys(saves))} as the task asks: that file is graded. Write a "
              "word or two in the answer cell at the end if you like." if saves else
              "Write your answer in words in the answer cell at the end (it is marked as the answer: keep it, wherever "
              "it ends up).")
    book = nbformat.v4.new_notebook(metadata=report.NOTEBOOK_METADATA)
    book.cells = [nbformat.v4.new_markdown_cell(f"**Hand in** this notebook as {name} (your name as the class list spells it)."),
                  nbformat.v4.new_markdown_cell(f"# {task.id} ({points:g} point{'s' if points != 1 else ''})\n\n"
                                                f"{report.notebook_text(task.query)}\n\nInput files:\n{files}\n\n{answer}"),
                  nbformat.v4.new_code_cell("import os\nos.makedirs('./output', exist_ok=True)\n"
                                            + "".join(f"# {path}\n" for path in task.paths)),
                  nbformat.v4.new_markdown_cell(ANSWER_PLACEHOLDER, metadata=ANSWER_MARK)]
    nbformat.validate(book)
    return book


def handout(argv: list[str]) -> int:
    """`pybench.py handout --tasks TASKS.jsonl DIR`: a starter notebook per task and the input files, no check."""
    import nbformat

    parser = OneLineParser(prog="pybench.py handout", description="Write what students get: a starter notebook per "
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
        nbformat.write(starter_notebook(task, len(tasks)), out / f"{task.id}.ipynb")
        print(out / f"{task.id}.ipynb")
    public = public_suite(tasks, options.tasks.resolve(), out / "selfcheck")
    print(f"handout: {len(tasks)} notebook(s) and {sum(len(task.inputs) for task in tasks)} input file(s) in {out}"
          + (f", public checks for {public} task(s) (`pybench.py check NOTEBOOK`)" if public else "")
          + "; students hand in <student>/<task-id>.ipynb (or <student>.ipynb for a one-task assignment)")
    return 0
