"""harness: what every benchmark of the kit shares. A task, the agent loop (the paper's protocol, turn by turn in a
jail), checks in a jail of their own, one result record per attempt, the run directory and its resume, the
scheduler that keeps several attempts in flight on one model, and the Benchmark record through which pybench.py
runs each benchmark (one module per benchmark beside this one, each ending in its BENCHMARK).
"""

import ast
import difflib
import fcntl
import functools
import hashlib
import importlib.metadata
import json
import math
import os
import platform
import queue
import re
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kit.engine import Model, Reply
from kit.jailed import SHOWN_PIXELS, SHOWN_PNG_BYTES
from kit.sandbox import (JAIL_ENVIRONMENTS, JAIL_ROOT, ROOT, CellResult, Jail, JailLimits, cgroup_version, check_limits,
                         keep_output, mount_output, new_jail, remove_tree, tidy_output, usable_cpus)
from kit.settings import Settings
from kit.untrusted import cut, for_jsonl, for_record

__all__ = ["Benchmark", "CATEGORIES", "Conversation", "FIGURE_BYTES", "NO_OUTPUT", "PACK_STAMP", "Prepared",
           "Progress", "ReplayModel", "Result", "TASK_ID", "Tables", "Task", "TaskRun", "UsageError", "Verdict",
           "Z95", "append_line", "attempts_by_task", "check_in_jail", "check_modules", "check_output_folder",
           "check_verdict", "converse", "drop_torn_line", "first_attempts", "functions_defined_in", "hold_lock",
           "imported_names", "is_replay_line", "json_error_place", "jsonl_records", "make_manifest", "newest_figures", "open_run_dir",
           "pass_at_k", "percent_interval", "PICTURE_BYTES", "PICTURE_PIXELS",
           "picture_refusal", "read_manifest", "read_results", "requirement_pins", "run_attempts",
           "run_check", "awarded_parts", "run_one", "select_tasks", "sha256_of", "shard_of", "suite_digest", "wilson",
           "write_manifest"]


# --- tasks ---------------------------------------------------------------------------------------------------------

class UsageError(Exception):
    """Bad input from the user: printed as one line, exit status 2, nothing written."""


CATEGORIES = ("chart", "text", "image_audio", "math", "software")


@dataclass
class Task:
    id: str
    category: str
    query: str
    inputs: dict[str, Path]    # path in the task's cwd ("data/sales.csv") -> host file, mounted read-only
    paths: list[str]           # the input paths as the file message names them ("./data/sales.csv")
    check_module: str
    check_function: str
    checks_dir: Path
    caveats: list[str] = field(default_factory=list)  # why the task cannot fairly count (set aside in the honest figure)
    environment: str = "suite"  # which of sandbox.JAIL_ENVIRONMENTS its cells and its check run in
    own: dict = field(default_factory=dict)  # what its benchmark alone knows of it (an original task's test, e.g.)

    def input_binds(self) -> list[tuple[str, str, bool]]:
        """The inputs as read-only jail binds, at their paths in the task's cwd."""
        return [(str(host), f"{JAIL_ROOT}/{relative}", False) for relative, host in self.inputs.items()]


TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")


def jsonl_records(path: Path, finished_only: bool = False, advice: str = "") -> list[tuple[str, object]]:
    """(where: "FILE, line N", parsed JSON) per non-blank line, split on "\n" only (splitlines() cuts at U+2028 too); a
    line that is not JSON is a UsageError. finished_only: a file the kit appends to, maybe absent, its unfinished last
    line left out."""
    if finished_only and not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8").split("\n")
    records = []
    for number, line in enumerate(lines[:-1] if finished_only else lines, 1):
        where = f"{path}, line {number}"
        try:
            if line.strip():
                records.append((where, json.loads(line)))
        except json.JSONDecodeError as error:
            raise UsageError(f"{where}: not valid JSON: {json_error_place(error, 'column', error.colno)}{advice}") from None
    return records


def json_error_place(error: json.JSONDecodeError, unit: str, number: int) -> str:
    """json's message and where: 'Expecting value at line 3', 'Unterminated string starting at column 5' (json's own
    message may already end in 'at')."""
    return f"{error.msg} {unit} {number}" if error.msg.endswith(" at") else f"{error.msg} at {unit} {number}"


def functions_defined_in(module_path: Path) -> dict[str, str | None]:
    """The top-level functions of a check module and their docstrings, read without running it on the host."""
    if not module_path.is_file():
        return {}
    try:
        tree = ast.parse(module_path.read_text(encoding="utf-8"), str(module_path))
    except SyntaxError as error:
        raise UsageError(f"{module_path}, line {error.lineno}: the check module does not parse ({error.msg})") from None
    return {node.name: ast.get_docstring(node) for node in tree.body if isinstance(node, ast.FunctionDef)}


def numbered(task_id: str) -> str:
    """A task id with its numbers as numbers: tables-1 and tables-01 are the same."""
    return re.sub(r"\d+", lambda number: str(int(number[0])), task_id.lower())


def select_tasks(tasks: list[Task], only: str | None, category: str | None, limit: int | None) -> list[Task]:
    if only:
        wanted = [part.strip() for part in only.split(",") if part.strip()]
        known = {task.id for task in tasks}
        if unknown := [task_id for task_id in wanted if task_id not in known]:
            near = sorted({close for task_id in unknown for close in [known_id for known_id in known if numbered(known_id) == numbered(task_id)]
                           or difflib.get_close_matches(task_id, known, n=3)})
            raise UsageError(f"--only: no task with id {', '.join(unknown)} in the tasks file"
                             + (f" (did you mean {', '.join(near)}?)" if near else ""))
        tasks = [task for task in tasks if task.id in wanted]
    if category:
        categories = sorted({task.category for task in tasks})
        if category not in categories:
            raise UsageError(f"--category: no task of category {category!r} in the tasks file (it has {', '.join(categories)})")
        tasks = [task for task in tasks if task.category == category]
    return tasks[:limit] if limit else tasks


# --- replays: recorded replies instead of a model ------------------------------------------------------------------

class ReplayModel:
    """Replies read from a JSONL file of {"id": TASK_ID, "replies": [...]}, returned in order: each task's cells are
    run in the jail and scored as a model's would be. A benchmark whose own files hold replies in another shape (an
    original PyBench trajectory file) reads them through replies_of()."""

    def __init__(self, path: Path, task_ids: set[str]):
        if not path.is_file():
            raise UsageError(f"--replay: {path} does not exist")
        self.replies: dict[str, list[str]] = {}
        for where, record in jsonl_records(path):
            record = self.replies_of(record)
            if not is_replay_line(record):
                raise UsageError(f"{where}: expected {self.EXPECTED}")
            if record["id"] not in task_ids:
                raise UsageError(f"{where}: task id {record['id']!r} is not in the tasks file")
            self.replies[record["id"]] = record["replies"]
        self.name, self.device, self.offload, self.llama_cpp_version, self.n_ctx = f"replay:{path.name}", "none (replay)", False, None, None
        self.generated, self.stopped, self.choice = 0, "", ""

    EXPECTED = '{"id": TASK_ID, "replies": ["...", ...]}'

    def replies_of(self, record):
        """One line of the file as {"id", "replies"} (here: as it stands)."""
        return record

    def open(self, wanted: int | None, attempts: int) -> int:
        """A replay costs nothing but its cells and checks: by default as many attempts at once as there are cores."""
        self.choice = f"--parallel {wanted}" if wanted else "auto: one per usable CPU"
        return max(1, min(wanted or usable_cpus()[0], attempts))

    def attempt(self, task_id: str, seed: int) -> "ReplayAttempt":
        return ReplayAttempt(self, task_id)

    def stop(self, reason: str) -> None:
        self.stopped = reason

    def close(self) -> None:
        pass


def is_replay_line(record) -> bool:
    """Whether a parsed line of a replay file is {"id": TASK_ID, "replies": ["...", ...]} (ReplayModel.EXPECTED)."""
    return (isinstance(record, dict) and isinstance(record.get("id"), str) and isinstance(record.get("replies"), list)
            and all(isinstance(reply, str) for reply in record["replies"]))


@dataclass
class ReplayAttempt:
    """One attempt replayed: the turn is the number of replies already in the messages, so attempts of the same
    task can run at once."""
    replay: ReplayModel
    task_id: str

    def reply(self, messages: list[dict]) -> Reply:
        replies = self.replay.replies.get(self.task_id, [])
        turn = sum(message["role"] == "assistant" for message in messages)
        if self.replay.stopped:
            return Reply(None, stop=self.replay.stopped)
        if turn >= len(replies):
            return Reply(None, stop="replay ran out" if replies else "no replay for this task")
        return Reply(replies[turn], stop="stop")

    def close(self) -> None:
        pass


# --- agent loop: the paper's protocol, one TaskRun per attempt -----------------------------------------------------

SYSTEM_PROMPT = """You are an expert data analyst and Python programmer. You solve the user's task by writing Python code that runs in a persistent Python interpreter: variables, imports and files stay from one reply to the next, as in a Jupyter notebook.

How to work:
- To run code, put it in a fenced python block, like this:
```python
import pandas as pd
print(pd.read_csv("./data/example.csv").head())
```
  Only the first python block of a reply runs.
- After each reply with code you see what it printed, the value of its last line, or the error it raised. Then continue.
- Uploaded files are in ./data/ (read-only). Save every file the user asks for under ./output/ with exactly the name asked for.
- Look at the data before you rely on it (column names, types, encodings). There is no internet access; do not try to install packages.
- Keep each step small and check its result.
- When the task is done, reply with the final answer in plain words and no code block. That reply ends the task, so state the result (numbers, names, file paths) in it."""


CODE_BLOCK = re.compile(r"```(?:python|py|python3)[ \t]*\r?\n(.*?)(?:```|\Z)", re.DOTALL | re.IGNORECASE)
OBSERVATION_CHARS = 3000   # what the model sees of one cell's output: the head and the tail
NO_OUTPUT = "The code ran without output."
FIGURES_KEPT = 64          # figure records kept per attempt (the newest): what a check can see of the saved charts
FIGURE_BYTES = 4 * 1024 * 1024  # and at most this much of them, as JSON (the newest first; checks read no more)


@dataclass
class Conversation:
    """The paper's protocol for one benchmark: how a task's messages are worded and where a reply's code is. Ours, or
    an original checkout's config, whose rule is the original's (the code runs from the first code_start to the next
    code_end; unclosed is no code) and whose interpreter messages carry its prefix and an error's name and message
    (error_format) instead of a traceback."""
    system_prompt: str = SYSTEM_PROMPT
    code_start: str = ""       # "": our rule, the first ```python block, closed or not
    code_end: str = ""
    uploaded_prefix: str = ""  # "": our own wording of the file list
    interpreter_prefix: str = "Output:\n"
    error_format: str = ""     # with code_start: how an error reads, from {name} and {message}
    max_turns: int | None = None
    sampling: dict = field(default_factory=dict)
    prelude: str = ""          # code run in the jail before the first turn (ML-Bench's agent: the task's folder, its PATH)

    def opening(self, task: Task) -> list[dict]:
        """The messages before the first reply: the system prompt, the files uploaded, the query."""
        return [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": self.uploaded(task)},
                {"role": "user", "content": task.query}]

    def uploaded(self, task: Task) -> str:
        if self.uploaded_prefix:
            return self.uploaded_prefix + ",".join(task.paths)
        return f"I have uploaded these files: {', '.join(task.paths)}" if task.paths else "No files are uploaded for this task."

    def code_in(self, reply: str) -> str | None:
        if not self.code_start:
            match = CODE_BLOCK.search(reply)
            return match.group(1) if match else None
        start = reply.find(self.code_start)
        end = reply.find(self.code_end, start + len(self.code_start)) if start >= 0 else -1
        code = reply[start + len(self.code_start):end].strip() if end >= 0 else ""
        return code or None

    def printed(self, cell: CellResult) -> str:
        """What a cell showed, as the interpreter's answer holds it after its prefix: its output, then the error; ours
        cut to a fixed size, an original checkout's as streamed (uncut) with its error wording. "" for nothing."""
        if self.code_start:
            error = self.error_format.format(name=cell.error_type, message=cell.error_message) if cell.status == "error" else cell.error
            return cell.output + (error or "")
        text = cell.output.rstrip()
        if cell.error:
            text = (text + "\n" if text else "") + cell.error.rstrip()
        return cut(text, OBSERVATION_CHARS)

    def go_on(self, reply: str) -> str | None:
        """What the user says to a reply without code, if the task goes on (None: that reply is the final answer)."""
        return None

    def turn(self, jail: Jail, code: str) -> tuple[CellResult, str, str]:
        """Run a reply's code: its cell, what it showed (see printed) and the interpreter's answer to it."""
        cell = jail.run(code)
        printed = self.printed(cell)
        return cell, printed, self.answer_to(printed)

    def observation(self, cell: CellResult) -> str:
        """The interpreter's answer to a cell, as the model reads it: the prefix, then what the cell showed."""
        return self.answer_to(self.printed(cell))

    def answer_to(self, printed: str) -> str:
        return NO_OUTPUT if not printed and not self.code_start else self.interpreter_prefix + printed


def newest_figures(records: list[dict]) -> list[dict]:
    """The newest figure records that fit FIGURES_KEPT and FIGURE_BYTES (they come from the agent's own process)."""
    kept, size = [], 0
    for record in reversed(records[-FIGURES_KEPT:]):
        size += len(json.dumps(record, default=str)) + 1
        if size > FIGURE_BYTES:
            break
        kept.append(record)
    return kept[::-1]


@dataclass
class TaskRun:
    """Everything one attempt needs while it runs, so that several can be in flight on one model."""
    task: Task
    output_dir: Path
    max_turns: int
    jail: Jail
    conversation: Conversation
    messages: list[dict] = field(default_factory=list)
    code: list[str | None] = field(default_factory=list)     # per reply, the code that ran (None: none ran)
    printed: list[str | None] = field(default_factory=list)  # per reply, what its cell showed (Conversation.printed)
    ended_by: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_evaluated: int = 0   # prompt tokens llama.cpp decoded (the rest was in its KV cache, or copied from a shared prefix)
    prompt_shared: int = 0      # prompt tokens copied from a shared prefix
    restarts: int = 0
    figures: list[dict] = field(default_factory=list)  # the figure records of the attempt's cells, the newest FIGURES_KEPT
    parts: list[list] = field(default_factory=list)     # a partial-credit check's parts, [name, earned, possible, why] (awarded_parts)
    started: float = field(default_factory=time.monotonic)

    def __post_init__(self):
        self.messages = self.conversation.opening(self.task)

    @property
    def turns(self) -> int:
        return len(self.code)  # one entry per assistant reply

    @property
    def answer(self) -> str:
        """The final assistant reply (the last one, if the turn limit ended the task)."""
        return next((message["content"] for message in reversed(self.messages) if message["role"] == "assistant"), "")

    def take(self, reply: Reply) -> None:
        """Add the model's reply; run its code and add the interpreter's answer, or end the task."""
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens
        self.prompt_evaluated += reply.prompt_evaluated
        self.prompt_shared += reply.prompt_shared
        if reply.text is None:
            self.ended_by = reply.stop or "no reply"
            return
        self.messages.append({"role": "assistant", "content": reply.text})
        code = self.conversation.code_in(reply.text)
        self.code.append(code)
        if code is None:  # the user's answer: go_on's, or none (the reply is the final answer)
            printed, answer = None, self.conversation.go_on(reply.text)
        else:
            cell, printed, answer = self.conversation.turn(self.jail, code)
            self.restarts += cell.status == "restarted"
            self.figures = newest_figures(self.figures + cell.figures)
        self.printed.append(printed)
        if answer is None:
            self.ended_by = "final answer"
            return
        self.messages.append({"role": "user", "content": answer})
        if self.turns >= self.max_turns:
            self.ended_by = "turn limit"


def converse(run: TaskRun, model: Model, seed: int) -> TaskRun:
    """The agent loop, every benchmark's: the model's replies and their cells in the run's jail until the task ends."""
    session = model.attempt(run.task.id, seed)
    try:
        run.jail.start()
        if run.conversation.prelude:
            run.jail.run(run.conversation.prelude)
        while not run.ended_by:
            run.take(session.reply(run.messages))
    finally:
        session.close()
        run.jail.kill()
    return run


# --- checks: each in a fresh jail given the check's modules as text, seeing the inputs and outputs read-only -------

KIT_CHECKS = ROOT / "checks"  # the kit's checks: its library, pybench_checks, serves any suite


def check_modules(checks_dir: Path, module: str, library: Path | None = KIT_CHECKS) -> dict[str, Path]:
    """The files a check jail is given as text, by name: the check's module and the modules it imports, transitively, from
    checks_dir or else from the kit's check library (pybench_checks and what it imports); never the replays, the
    other groups' modules or anything else in the folder."""
    shared = check_modules(library, "pybench_checks", None) if library else {}
    found, pending = {}, [module]
    while pending:
        name = f"{pending.pop()}.py"
        path = checks_dir / name if (checks_dir / name).is_file() else shared.get(name)
        if name in found or path is None:
            continue
        found[name] = path
        pending += imported_names(path)
    return found


@functools.cache
def imported_names(module_path: Path) -> tuple[str, ...]:
    """The top-level names a Python file imports (absolute imports, wherever they sit in it); read once a run."""
    names = []
    for node in ast.walk(ast.parse(module_path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module.split(".")[0])
    return tuple(names)


def run_check(task: Task, run: TaskRun, log_dir: Path) -> tuple[bool, str]:
    """(passed, reason). Our checks: the module and those of checks/ it imports are given to a new jail as text (no
    file of the jail holds them, so nothing an attempt leaves can read a hidden check's source back into its reason),
    imported there and called with the final answer; AssertionError fails the task with its message, a crash or a
    hang fails it too, with that."""
    modules = check_modules(task.checks_dir, task.check_module)
    # The figure records, kept with the jails' logs, lie beside output/ as figures.json in the check's jail (read-only).
    record = log_dir / f"{run.output_dir.name}.figures.json"
    record.write_text(json.dumps(run.figures), encoding="utf-8")
    binds = task.input_binds() + [(str(run.output_dir), f"{JAIL_ROOT}/output", False), (str(record), f"{JAIL_ROOT}/figures.json", False)]
    cell = check_in_jail(task, run, log_dir, binds, path="", answer=run.answer, output=f"{JAIL_ROOT}/output", data=f"{JAIL_ROOT}/data",
                         sources={name.removesuffix(".py"): path.read_text(encoding="utf-8") for name, path in modules.items()})
    if cell.status == "error" and cell.error_type == "PartsAwarded":  # checks/common.py's award: its parts as values
        run.parts = awarded_parts(cell.error_message)
        if not run.parts:
            return False, (f"the check {task.check_module}.{task.check_function} reported parts that are not (name, earned, "
                           "possible) with 0 <= earned <= possible: a teacher's error in the check")
        return False, "parts: " + "; ".join(f"{name} {earned:g}/{possible:g}" + (f" ({why})" if why else "")
                                            for name, earned, possible, why in run.parts)
    return check_verdict(cell, lambda cell: cell.error_message or "the check's assertion failed" if cell.error_type == "AssertionError"
                         else f"the check crashed: {cell.error_type}: {cell.error_message}")


def awarded_parts(message: str) -> list[list]:
    """A partial-credit check's parts as the check jail sent them (jailed.PartsAwarded: JSON, never a reason's text):
    [[name, earned, possible, why], ...], or [] where they are not that, each earned between 0 and its possible."""
    try:
        rows = json.loads(message)
    except ValueError:
        return []
    def number(value) -> bool:
        return type(value) in (int, float) and math.isfinite(value)
    sound = isinstance(rows, list) and rows and all(isinstance(row, list) and len(row) == 4 and isinstance(row[0], str)
                                                   and isinstance(row[3], str) and number(row[1]) and number(row[2])
                                                   and 0 <= row[1] <= row[2] for row in rows)
    return rows if sound and sum(row[2] for row in rows) > 0 else []


def check_verdict(cell: CellResult, failure: Callable[[CellResult], str]) -> tuple[bool, str]:
    """(passed, reason) of a check's cell, for every benchmark: it passed, it did not finish (timed out, its jail
    restarted or dead), or it raised, in the words failure gives."""
    if cell.status == "ok":
        return True, ""
    if cell.status in ("interrupted", "restarted", "dead"):
        return False, f"the check did not finish: {cell.error_message}"
    return False, failure(cell)


def check_in_jail(task: Task, run: TaskRun, log_dir: Path, binds: list[tuple[str, str, bool]], **call) -> CellResult:
    """A task's check function called in a jail of its own (the task's environment, the check's limits, these
    read-only binds); the call's cell, whatever became of it."""
    jail = new_jail(f"{run.output_dir.name}.check", binds, check_limits(), log_dir, environment=task.environment)
    try:
        return jail.call("check", module=task.check_module, function=task.check_function, **call)
    finally:
        jail.kill()


# --- one attempt: the agent, then the check; one result ------------------------------------------------------------

@dataclass
class Verdict:
    """What a benchmark's scoring of one attempt decided."""
    passed: bool
    reason: str = ""
    caveats: list[str] = field(default_factory=list)  # why this attempt cannot fairly count, beyond its task's
    own: dict = field(default_factory=dict)            # the benchmark's own fields for the result line (see Result.own)


@dataclass
class Result:
    """One finished attempt: one line of results.jsonl, written by every benchmark and read by the report and grade
    (docs/runs.md names its fields). Fields an older or hand-made line lacks take their defaults; the optional fields
    at the end are written only when set; a benchmark's own fields, keys of the same line after the core's, are read
    back into `own` (every key the core does not name)."""
    id: str
    category: str = ""                # absent in the oldest runs: counted overall, in a column of its own
    sample: int = 0
    seed: int = 0
    passed: bool = False
    reason: str = ""
    caveats: list[str] = field(default_factory=list)
    turns: int = 0
    ended_by: str = ""
    cells: int = 0
    worker_restarts: int = 0
    seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    output: str = ""                  # the attempt's output folder, relative to the run directory (default outputs/<id>)
    removed_from_output: list[str] = field(default_factory=list)
    messages: list[dict] = field(default_factory=list)
    code: list[str | None] | None = None     # per reply, the code that ran (None: none)
    printed: list[str | None] | None = None  # per reply, what its cell showed (None: no code); absent in older runs
    prompt_tokens_evaluated: int | None = None  # a model run: prompt tokens llama.cpp decoded (the others were in its KV cache)
    prompt_tokens_shared: int | None = None     # ... and those copied from a shared prefix (what sharing saved)
    own: dict = field(default_factory=dict)  # the benchmark's own fields (see above)
    run_dir: Path | None = None       # the run directory it was read from (the report's; never written)

    def __post_init__(self):
        self.output = self.output or f"outputs/{self.id}"

    KEY_ORDER = ("id", "category", "sample", "seed", "passed", "reason", "caveats", "turns", "ended_by", "cells",
                 "worker_restarts", "seconds", "prompt_tokens", "completion_tokens", "prompt_tokens_evaluated",
                 "prompt_tokens_shared", "output", "removed_from_output", "messages", "code", "printed")

    def to_json(self) -> dict:
        values = vars(self)
        core = {key: values[key] for key in self.KEY_ORDER if values[key] is not None}
        return core | {key: value for key, value in self.own.items() if key not in core and value is not None}

    @classmethod
    def from_json(cls, record: dict, where: str = "results.jsonl") -> "Result":
        known = {name: record[name] for name in cls.KEY_ORDER if name in record}
        own = {name: value for name, value in record.items() if name not in cls.KEY_ORDER and name not in ("own", "run_dir")}
        try:
            return cls(**known, own=own)
        except TypeError as error:
            raise UsageError(f"{where}: not a result line of pybench ({error})") from None

    def get(self, name: str, default=None):
        """A field by name, the core's or the benchmark's own, for the report's templates."""
        value = self.own.get(name) if name in self.own else getattr(self, name, default)
        return default if value is None else value


def run_one(task: Task, sample: int, samples: int, seed: int, model: Model, conversation: Conversation, run_dir: Path,
            limits: JailLimits, max_turns: int, score=None, agent_done: threading.Event | None = None) -> Result:
    """One attempt at a task: the agent in its jail, then its check in another. score(task, run, log_dir) -> Verdict
    is a benchmark's own scoring (default: the task's check); agent_done is set once the agent's part is over."""
    output = Path("outputs") / (task.id if samples == 1 else f"{task.id}.s{sample}")
    output_dir = run_dir / output
    if output_dir.exists() or output_dir.is_symlink():  # left by an attempt that was killed before its result was written
        remove_tree(output_dir)
    output_dir.mkdir(parents=True)
    if os.geteuid() == 0 and not mount_output(output_dir, limits):
        os.chown(output_dir, 65534, 65534)  # the jail's user writes here
    log_dir = run_dir / "jails"
    binds = task.input_binds() + [(str(output_dir), f"{JAIL_ROOT}/output", True)]
    try:  # the jail is named after the attempt (task.id, or task.id.sN with --samples): attempts of one task may run at once
        jail = new_jail(output_dir.name, binds, limits, log_dir, output_dir, task.environment)
        run = converse(TaskRun(task, output_dir, max_turns, jail, conversation), model, seed)
        removed = tidy_output(output_dir)
    finally:
        keep_output(output_dir, limits.output_mib * 2**20)  # the agent is done: its ./output/ goes onto the disk for the checks
        if agent_done is not None:
            agent_done.set()
    verdict = score(task, run, log_dir) if score else Verdict(*run_check(task, run, log_dir))
    cells = sum(code is not None for code in run.code)
    return Result(task.id, task.category, sample, seed, verdict.passed, for_record(verdict.reason, 2000), task.caveats + verdict.caveats,
                  run.turns, run.ended_by, cells, run.restarts, round(time.monotonic() - run.started, 3), run.prompt_tokens,
                  run.completion_tokens, str(output), removed, run.messages, run.code, run.printed,
                  own=({"parts": run.parts} if run.parts else {}) | verdict.own, prompt_tokens_evaluated=run.prompt_evaluated or None,
                  prompt_tokens_shared=run.prompt_shared if run.prompt_evaluated else None)


# --- results: a manifest, then one JSON line per finished attempt, written as soon as it ends ----------------------

def append_line(path: Path, record: dict) -> None:
    """A JSON line in a single write, on disk (fsync'd) before it returns: results.jsonl's and judge.jsonl's."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(for_jsonl(record))
        handle.flush()
        os.fsync(handle.fileno())


def read_results(path: Path) -> list[Result]:
    """The finished attempts in a results.jsonl; a last line still being written, or cut short by a crash, is left
    out (jsonl_records' finished lines)."""
    results = []
    for where, record in jsonl_records(path, finished_only=True):
        if not isinstance(record, dict):
            raise UsageError(f"{where}: not a result line of pybench (expected a JSON object)")
        results.append(Result.from_json(record, where))
    return results


def drop_torn_line(path: Path) -> None:
    """Cut a last line that a crash left unfinished, so that the next result starts a line of its own."""
    data = path.read_bytes() if path.exists() else b""
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as handle:
            handle.truncate(data.rfind(b"\n") + 1)


def sha256_of(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def suite_digest(root: Path, listed: list[Path], tasks: list[Task]) -> str:
    """sha256 over the files that define a suite (listed: its tasks file, or an original checkout's task.json and
    config), every input file the tasks use, and every check module; paths relative to the suite's root."""
    inputs = sorted({path for task in tasks for path in task.inputs.values()})
    checks = sorted({path for task in tasks for path in task.checks_dir.glob("*.py")})
    digest = hashlib.sha256()
    for path in listed + inputs + checks:
        digest.update(f"{path.relative_to(root)}:{sha256_of(path)}".encode())
    return digest.hexdigest()


def check_output_folder(folder: Path, flag: str) -> None:
    """Refuse (a UsageError naming the folder and what to do), before anything is loaded or written, an output folder
    (named by flag: --out, report --out, ...) that cannot be made or written to: a file, a link to nothing, a path
    below a file, a place where no folder can be made (/proc, a read-only disk, no permission; tried in the nearest)."""
    folder = Path(os.path.abspath(folder))
    existing = next(path for path in (folder, *folder.parents) if os.path.lexists(path))
    if existing.is_symlink() and not existing.exists():
        raise UsageError(f"{flag} {folder}: {existing} is a link to {os.readlink(existing)}, which does not exist: make that "
                         f"folder, or give {flag} a folder elsewhere")
    if not existing.is_dir():
        where = "is a file" if existing == folder else f"lies below {existing}, which is a file"
        raise UsageError(f"{flag} {folder} {where}: give {flag} a folder (a new one, or one the kit wrote before)")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".pybench-", dir=existing))
    except OSError as error:
        raise UsageError(f"{flag} {folder}: no folder can be made in {existing} ({error.strerror}): give {flag} a folder you "
                         "may write to") from None


def open_run_dir(run_dir: Path, manifest: dict, force: bool) -> None:
    """Create the run directory, or resume one whose manifest matches on its resume_keys (--force resumes one that
    does not)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    hold_lock(run_dir / "lock", lambda pid: f"--out {run_dir} is in use by another pybench run (pid {pid}); wait for it to "
              "end, or choose another --out")  # held until the run's process ends
    if earlier := read_manifest(run_dir):
        changed = [key for key in manifest["resume_keys"] if earlier.get(key) != manifest.get(key)]
        if changed and not force:
            raise UsageError(f"--out {run_dir} holds a run with different {', '.join(changed)}: choose another --out, "
                             "or add --force to resume it anyway")
        manifest["started"] = earlier.get("started", manifest["started"])
        manifest["resumed"] = earlier.get("resumed", []) + [time.strftime("%Y-%m-%dT%H:%M:%S%z")]
    (run_dir / "jails").mkdir(parents=True, exist_ok=True)
    write_manifest(run_dir, manifest)


def hold_lock(path: Path, busy: Callable[[str], str]) -> int:
    """The one file lock: an flock on path, held until its descriptor (returned) is closed or this process ends (kill -9
    included, so a restart after a crash finds it free). A second holder stops with busy(the holder's pid)."""
    lock = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(lock, 64).decode(errors="replace").strip() or "unknown"
        os.close(lock)
        raise UsageError(busy(holder)) from None
    os.ftruncate(lock, 0)
    os.write(lock, f"{os.getpid()}\n".encode())
    return lock


def read_manifest(run_dir: Path) -> dict:
    """The one reader of a run directory's manifest.json: {} where there is none."""
    path = run_dir / "manifest.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


PACK_STAMP = "pybench-pack.json"  # in .venv after `setup --from PACK`: which pack set this checkout up (make_manifest reads it)


def requirement_pins() -> dict[str, str]:
    """requirements.txt as name: version (its one reader: setup, pack and a run's manifest); a pin's platform marker
    (`; sys_platform == "linux"`) is not read."""
    requirements = (line.split("#")[0].split(";")[0] for line in (ROOT / "requirements.txt").read_text().splitlines())
    return {name.strip(): version.strip() for name, version in (line.split("==") for line in requirements if line.strip())}


def make_manifest(benchmark: str, tasks_path: Path, suite_sha256: str, tasks: list[Task], limits: JailLimits, flags: dict,
                  **facts) -> dict:
    """Everything a run (or a class's grading) depends on, so that a result can be traced to its suite, settings, jail,
    installed packages and machine; facts: what the caller adds (the model and its device, slurm's job)."""
    packages = {}
    for name in requirement_pins():
        try:
            packages[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            packages[name] = None
    environment = tasks[0].environment
    requirements = JAIL_ENVIRONMENTS[environment].requirements
    stamp = Path(sys.prefix) / PACK_STAMP  # in the venv running this, written by `setup --from PACK`
    return facts | {
        "llama_cpp_python": packages.get("llama-cpp-python"), "flags": flags, "benchmark": benchmark, "suite": str(tasks_path),
        "suite_size": len(tasks), "suite_sha256": suite_sha256, "jail_limits": vars(limits),
        "jail_environment": {"name": environment, "requirements": requirements, "sha256": sha256_of(ROOT / requirements)},
        "cgroups": cgroup_version() or "none (rlimits)", "python": sys.version.split()[0], "packages": packages,
        "setup": json.loads(stamp.read_text()) if stamp.is_file() else {"from": "online"}, "os": platform.platform(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "finished": None}


def write_manifest(run_dir: Path, manifest: dict) -> None:
    temporary = run_dir / "manifest.json.tmp"
    temporary.write_text(json.dumps(for_record(manifest), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(temporary, run_dir / "manifest.json")


def shard_of(tasks: list[Task], shard: str | None) -> list[Task]:
    """--shard K/N: every N-th task of the suite, starting at the K-th (1-based): the same slices on every machine."""
    if not shard:
        return tasks
    number, _, count = shard.partition("/")
    if not (number.isdigit() and count.isdigit() and 1 <= int(number) <= int(count)):
        raise UsageError(f"--shard {shard!r} must be K/N with 1 <= K <= N, e.g. 2/8")
    return tasks[int(number) - 1::int(count)]


# --- scheduler: several attempts in flight on one model, each in a thread of its own -------------------------------

def run_attempts(attempts: list, parallel: int, model, attempt, tick):
    """Yield (task, sample, result, attempts still in flight) as attempts finish, `parallel` of them in flight at once:
    each thread takes the next attempt when its last one is done (one thread per model sequence), so while one
    attempt runs a cell or its check, the others go on generating. tick(in_flight) is called twice a second. Ctrl-C (or
    an error in an attempt) ends the replies in progress, kills the cells running, and drops the unfinished attempts:
    they are run again on resume."""
    todo, finished, stopping = queue.SimpleQueue(), queue.SimpleQueue(), threading.Event()
    for item in attempts:
        todo.put(item)
    busy: set[int] = set()  # the threads now in an attempt

    def work():
        while not stopping.is_set():
            try:
                task, sample = todo.get_nowait()
            except queue.Empty:
                return
            busy.add(threading.get_ident())
            try:
                finished.put((task, sample, attempt(task, sample), None))
            except BaseException as error:  # noqa: B036 (handed to the main thread, which raises it)
                finished.put((task, sample, None, error))
            busy.discard(threading.get_ident())

    threads = [threading.Thread(target=work, name=f"attempt-{number}", daemon=True) for number in range(parallel)]
    for thread in threads:
        thread.start()
    try:
        for _ in attempts:
            while True:
                try:
                    task, sample, result, error = finished.get(timeout=0.5)
                    break
                except queue.Empty:
                    tick(len(busy))
            if error is not None:
                raise error
            yield task, sample, result, len(busy)
    except BaseException:
        stopping.set()
        model.stop("interrupted")
        Jail.kill_workers()
        deadline = time.monotonic() + 10
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        raise


@dataclass
class Progress:
    """What the progress line knows while a run goes on; eta() is the time left, estimated from the first tokens."""
    elapsed: float            # seconds since this session's attempts began
    generated: int            # tokens the model generated in that time, every attempt together (Model.generated)
    tokens_per_second: float  # the pace of generation, every attempt together (run_suite: since the first token)
    finished: list[int]       # the completion tokens of each finished attempt of the run, earlier sessions' too
    finished_now: list[int]   # those of the attempts finished in this session (their tokens are in `generated`)
    in_flight: int            # attempts running now
    waiting: int              # attempts not started yet
    parallel: int             # attempts at once
    prior: float              # the tokens an attempt is guessed to take before any has ended (run_suite: half its most)
    speed: float = 0.0        # tokens/s generating `parallel` attempts at once, as a probe measured it before the first

    def eta(self) -> float | None:
        """Seconds left, or None before anything can be measured: docs/runs.md's estimate (its progress line and ETA),
        from the tokens each attempt left is expected to take, at tokens_per_second (before the first tokens, the
        probe's speed); a replay: the seconds per finished attempt so far."""
        left = self.in_flight + self.waiting
        if left == 0:
            return 0.0
        if not self.generated and not self.speed:  # a replay, or no token yet
            return self.elapsed / len(self.finished_now) * left if self.finished_now else None
        rate = self.tokens_per_second or self.speed
        if rate <= 0:
            return None
        in_flight_tokens = max(0, self.generated - sum(self.finished_now))
        expected = (self.prior + sum(self.finished)) / (1 + len(self.finished))
        if self.in_flight:
            expected = max(expected, in_flight_tokens / self.in_flight)
        tokens_left = self.waiting * expected + max(0.0, self.in_flight * expected - in_flight_tokens)
        return tokens_left / rate * self.parallel / min(self.parallel, left)


# --- figures: intervals and pass@k, for the report and the benchmarks' own tables --------------------------------

Z95 = 1.959963984540054            # the normal quantile of a two-sided 95% interval


def wilson(passed: int, total: int) -> tuple[float, float]:
    """Wilson's score interval (95%) for passed/total, as fractions; (0, 1) when total is 0. Its bounds are clamped
    to hold the estimate: at 0/n and n/n rounding leaves a bound a hair (1e-17) on the wrong side of it."""
    if total == 0:
        return 0.0, 1.0
    share, z2 = passed / total, Z95 ** 2
    centre = (share + z2 / (2 * total)) / (1 + z2 / total)
    half = Z95 * math.sqrt(share * (1 - share) / total + z2 / (4 * total ** 2)) / (1 + z2 / total)
    return max(0.0, min(centre - half, share)), min(1.0, max(centre + half, share))


def percent_interval(interval: tuple[float, float] | None) -> str:
    return "" if interval is None else f"{100 * interval[0]:.1f}-{100 * interval[1]:.1f}"


def pass_at_k(n: int, c: int, k: int) -> float:
    """Chance that at least one of k attempts drawn from n (c of them passed) passes: 1 - C(n-c, k) / C(n, k)."""
    return 1 - math.comb(n - c, k) / math.comb(n, k)


def attempts_by_task(results: list[Result]) -> dict[str, list[Result]]:
    tasks: dict[str, list[Result]] = {}
    for result in results:
        tasks.setdefault(result.id, []).append(result)
    return tasks


def first_attempts(results: list[Result]) -> dict[str, Result]:
    """Each task's first attempt (its lowest sample)."""
    return {task: min(attempts, key=lambda result: result.sample) for task, attempts in attempts_by_task(results).items()}


# --- benchmarks: the record each benchmark module ends in, and what it hands the flow and the report -------------

@dataclass
class Tables:
    """A benchmark's own figures for one run, as data: the report renders them on the first page and the terminal
    prints text. A section is {"heading", "cards": [{"name", "rate", "passed", "total", "interval", "note"}]} or
    {"heading", "corner", "columns", "rows": [(label, cells, highlighted)]}, either with "notes"."""
    text: str
    sections: list[dict] = field(default_factory=list)
    replaces_table3: bool = False  # True: the paper's Table 3 is not this benchmark's measure, so it is not shown
    title: str = "PyBench"         # the report's heading: "<title> run: <model>"


@dataclass
class Prepared:
    """One benchmark ready for a run: what Benchmark.prepare made of --tasks and the flags."""
    tasks: list[Task]                        # the whole suite, before --only/--category/--limit/--shard
    defaults: dict                           # sampling and turn defaults (temperature, top_p, max_tokens, samples, max_turns)
    root: Path                               # what the defining files' paths are relative to, for the suite's digest
    defining_files: list[Path]               # the files that define the suite (its tasks file, a checkout's task.json and config)
    replay: Callable[[Path, set[str]], Model]  # --replay FILE as a model
    attempts: Callable[..., Callable[[Task, int], Result]]  # attempts(settings, model, run_dir, limits, todo) -> attempt(task, sample)
    to_run: Callable[[list[Task], Model], list[Task]] = lambda tasks, model: tasks  # the selected tasks this run scores


@dataclass(frozen=True)
class Benchmark:
    """One benchmark of the kit: a module beside pybench.py ends in one of these, and pybench.BENCHMARKS lists it."""
    name: str                                 # recorded in the manifest as "benchmark"
    claims: Callable[[Path], bool]            # --tasks PATH holds this benchmark
    prepare: Callable[[Settings, Path], Prepared]
    tables: Callable[[list[Result], list[dict]], Tables]  # its figures for a run's results and manifests
    made: Callable[[list[Result], list[dict]], bool]      # a run directory without "benchmark" in its manifest was made by it
    flags: tuple[str, ...] = ()                           # its own flags (Settings' fields): refused with another benchmark
    given_elsewhere: str = ""                             # how the refusal ends: what to give instead

    def refuse_flags(self, settings: Settings) -> None:
        """This benchmark's flags given for another one: say so rather than ignore them."""
        defaults = Settings()
        given = [f"--{name.replace('_', '-')}" for name in self.flags if getattr(settings, name) != getattr(defaults, name)]
        if given:
            raise UsageError(f"{', '.join(given)} apply to {self.given_elsewhere}")


# --- files: what kind a file is, from its first bytes -----------------------------------------------------------------

MAGIC = ((b"\x89PNG\r\n\x1a\n", "png"), (b"\xff\xd8\xff", "jpeg"), (b"GIF87a", "gif"), (b"GIF89a", "gif"), (b"%PDF", "pdf"),
         (b"PK\x03\x04", "zip"), (b"ID3", "mp3"), (b"\x1a\x45\xdf\xa3", "matroska"), (b"GGUF", "gguf"), (b"\x80", "pickle"))
RIFF_KINDS = {b"WAVE": "wav", b"WEBP": "webp", b"AVI ": "avi"}  # a RIFF container's form, its bytes 8 to 12


def file_kind(head: bytes) -> str:
    """What a file is by its first bytes (the first 12 tell every kind here): png, jpeg, gif, webp, pdf, zip, mp3,
    matroska, wav, avi, mp4, gguf or pickle; "" for none of them. Nothing past these bytes is parsed: a file an agent
    wrote is never handed to an image or table library on the host."""
    if kind := next((kind for magic, kind in MAGIC if head.startswith(magic)), ""):
        return kind
    if head[:4] == b"RIFF" and head[8:12] in RIFF_KINDS:
        return RIFF_KINDS[head[8:12]]
    if head[4:8] == b"ftyp":
        return "mp4"
    return "mp3" if len(head) > 1 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0 else ""  # an MPEG audio frame's sync bits


def image_size(head: bytes) -> tuple[int, int] | None:
    """(width, height) as a picture's header states them: a PNG's IHDR, a GIF's screen, a JPEG's frame (SOF) marker,
    a WebP's VP8/VP8L/VP8X chunk; None for another kind, or a head too short to say. Nothing is decoded."""
    kind = file_kind(head)
    if kind == "png" and len(head) >= 24:
        return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    if kind == "gif" and len(head) >= 10:
        return int.from_bytes(head[6:8], "little"), int.from_bytes(head[8:10], "little")
    if kind == "jpeg":
        at = 2
        while at + 9 <= len(head) and head[at] == 0xFF:
            marker, length = head[at + 1], int.from_bytes(head[at + 2:at + 4], "big")
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):  # a start of frame: height, then width
                return int.from_bytes(head[at + 7:at + 9], "big"), int.from_bytes(head[at + 5:at + 7], "big")
            at += 2 + length
    if kind == "webp" and len(head) >= 30:
        chunk = head[12:16]
        if chunk == b"VP8 ":
            return int.from_bytes(head[26:28], "little") & 0x3FFF, int.from_bytes(head[28:30], "little") & 0x3FFF
        if chunk == b"VP8L":
            bits = int.from_bytes(head[21:25], "little")
            return 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
        if chunk == b"VP8X":
            return 1 + int.from_bytes(head[24:27], "little"), 1 + int.from_bytes(head[27:30], "little")
    return None


# The one limit on a picture the kit embeds in a page or opens on the host (a student's saved outputs and shown
# figures, a report's output images): the jail's own for the figures a notebook shows, so that one limit holds for all.
PICTURE_BYTES = SHOWN_PNG_BYTES
PICTURE_PIXELS = SHOWN_PIXELS
PICTURE_KINDS = ("png", "jpeg", "gif", "webp")


def picture_refusal(data: bytes, kinds: tuple[str, ...] = PICTURE_KINDS) -> str:
    """Why a file's bytes are not shown as a picture ("" when they may be): not one of kinds, over PICTURE_BYTES, or
    over PICTURE_PIXELS (or of no size) as its header states it, read before anything decodes it."""
    kind, size = file_kind(data), image_size(data)
    if kind not in kinds:
        return f"not a {', '.join(kind.upper() for kind in kinds)} picture"
    if len(data) > PICTURE_BYTES:
        return f"{len(data) / 2**20:.1f} MiB, over the {PICTURE_BYTES / 2**20:g} MiB a picture may have here"
    if not size or size[0] * size[1] > PICTURE_PIXELS or not all(size):
        return (f"its header states {size[0]}x{size[1]} pixels, over the {PICTURE_PIXELS / 1e6:g} megapixels a picture may have here"
                if size else "its header does not state its size")
    return ""
