"""suite: our own benchmark format, a tasks.jsonl with files/ and checks/ beside it (the kit's 143 tasks, or a
teacher's), and what teachers do with it: prove a suite (validate) and grade students' submissions (grade).
"""

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from kit.harness import (CATEGORIES, TASK_ID, Benchmark, Conversation, Prepared, ReplayModel, Result, Tables, Task, UsageError,
                     OneLineParser, append_result, check_output_folder, functions_defined_in, jsonl_records, run_attempts, run_one, suite_digest, write_manifest)
from kit.sandbox import JailLimits, terminal_text

ROOT = Path(__file__).resolve().parent.parent  # the checkout: requirements.txt, tasks.jsonl, .venv, .jail, runs
DEFAULTS = {"temperature": 0.2, "top_p": 0.85, "max_tokens": 1000, "samples": 1, "max_turns": 10}  # the paper's sampling


# --- the suite: a tasks.jsonl, its files/ and checks/ --------------------------------------------------------------

def load_tasks(tasks_path: Path) -> list[Task]:
    """Read and validate a tasks.jsonl; its files/ and checks/ folders sit beside it."""
    tasks, seen, defined = [], set(), {}
    for where, record in task_records(tasks_path):
        task = task_from_record(record, where, tasks_path, defined)
        if task.id in seen:
            raise UsageError(f"{where}: field 'id' {task.id!r} is used twice")
        seen.add(task.id)
        tasks.append(task)
    if not tasks:
        raise UsageError(f"tasks file {tasks_path} holds no tasks")
    return tasks


def task_records(tasks_path: Path) -> list[tuple[str, object]]:
    """(where, parsed JSON) per non-blank line of a tasks.jsonl."""
    if not tasks_path.is_file():
        raise UsageError(f"tasks file {tasks_path} does not exist: give --tasks a tasks.jsonl")
    return jsonl_records(tasks_path)


def task_from_record(record, where: str, tasks_path: Path, defined: dict) -> Task:
    """One line of a tasks.jsonl as a Task, its input files and check function found, or a UsageError naming the line."""
    files_dir, checks_dir = tasks_path.parent / "files", tasks_path.parent / "checks"
    if not isinstance(record, dict):
        raise UsageError(f"{where}: expected a JSON object")
    for key, kind in (("id", str), ("category", str), ("query", str), ("files", list), ("check", str)):
        if not isinstance(record.get(key), kind):
            raise UsageError(f"{where}: field '{key}' is missing or not a {kind.__name__}")
    task_id = record["id"]
    if not TASK_ID.fullmatch(task_id):
        raise UsageError(f"{where}: field 'id' {task_id!r} must be letters, digits, '.', '_' or '-'")
    if record["category"] not in CATEGORIES:
        raise UsageError(f"{where}: field 'category' is {record['category']!r}, not one of {', '.join(CATEGORIES)}")
    inputs = {}
    for name in record["files"]:
        path = files_dir / name if isinstance(name, str) else None
        if path is None or Path(name).is_absolute() or ".." in Path(name).parts:
            raise UsageError(f"{where}: field 'files' entry {name!r} must be a path inside {files_dir}")
        if not path.is_file():
            raise UsageError(f"{where}: field 'files': input file {path} does not exist")
        if f"data/{path.name}" in inputs:
            raise UsageError(f"{where}: field 'files' has two files named {path.name}; each must be unique under ./data/")
        inputs[f"data/{path.name}"] = path
    module, _, function = record["check"].partition(":")
    if not (module.isidentifier() and function.isidentifier()):
        raise UsageError(f"{where}: field 'check' {record['check']!r} must be 'module:function'")
    if module not in defined:
        defined[module] = functions_defined_in(checks_dir / f"{module}.py")
    if function not in defined[module]:
        raise UsageError(f"{where}: field 'check': no function {function}() in {checks_dir / (module + '.py')}")
    points = record.get("points", 1)
    if isinstance(points, bool) or not isinstance(points, (int, float)) or not 0 < points <= 10_000:
        raise UsageError(f"{where}: field 'points' {points!r} must be a number above 0 (what passing the task is worth; default 1)")
    return Task(task_id, record["category"], record["query"], inputs, [f"./{name}" for name in inputs], module, function, checks_dir,
                points=float(points))


# --- teachers: prove a suite (validate) and grade students' submissions against one task (grade) -------------------

def read_replays(path: Path, expect: str | None, task_id: str | None = None) -> list[dict]:
    """Replay lines of a suite's checks/ folder: {"id", "replies"} in reference.jsonl and wrong.jsonl (expect given),
    {"id", "expect", "kind", "replies"} in solutions/*.jsonl; with task_id, lines of that task, whose "id" may be left out.
    Each gets its source for the verdict lines."""
    if not path.is_file():
        return []
    records = []
    for where, record in jsonl_records(path):
        number = where.rsplit(" ", 1)[1]
        if task_id and isinstance(record, dict):
            if record.setdefault("id", task_id) != task_id:
                raise UsageError(f"{where}: a replay for task {record['id']!r}, not for {task_id!r}")
        if not (isinstance(record, dict) and isinstance(record.get("id"), str) and isinstance(record.get("replies"), list)
                and all(isinstance(reply, str) for reply in record["replies"])):
            raise UsageError(f"{where}: expected {{\"id\": TASK_ID, \"replies\": [\"...\", ...]}}")
        record.setdefault("expect", expect)
        if record["expect"] not in ("pass", "fail"):
            raise UsageError(f"{where}: field 'expect' must be \"pass\" or \"fail\"")
        records.append(record | {"source": f"{path.parent.name}/{path.name}:{number}", "kind": str(record.get("kind") or path.stem)})
    return records


def solution_rounds(records: list[dict]) -> list[list[dict]]:
    """Replays in rounds holding at most one per task (round r: every task's r-th replay), so that a round is one
    replay file and every attempt of a round has its own task."""
    rounds: list[list[dict]] = []
    seen: dict[str, int] = {}
    for record in records:
        number = seen[record["id"]] = seen.get(record["id"], -1) + 1
        if number == len(rounds):
            rounds.append([])
        rounds[number].append(record)
    return rounds


def replay_records(tasks: dict[str, Task], records: list[dict], run_dir: Path, max_turns: int = 10) -> list[tuple[dict, Result]]:
    """Every record replayed through the agent's jail and its task's check, round by round, the replays of a round
    (each of another task) as many at once as there are cores: (record, result)."""
    from tqdm import tqdm

    (run_dir / "jails").mkdir(parents=True, exist_ok=True)
    outcomes = []
    rounds = solution_rounds(records)
    interactive = sys.stderr.isatty()  # a bar on a terminal; in a log file, a line per round
    progress = tqdm(total=len(records), unit="replay", dynamic_ncols=True, disable=not interactive)
    for number, chosen in enumerate(rounds):
        if not interactive:
            print(f"round {number + 1}/{len(rounds)}: {len(chosen)} replay(s)", flush=True)
        replay = run_dir / f"round{number}.jsonl"
        replay.write_text("".join(json.dumps({"id": r["id"], "replies": r["replies"]}, ensure_ascii=False) + "\n" for r in chosen),
                          encoding="utf-8")
        model = ReplayModel(replay, set(tasks))
        by_task = {record["id"]: record for record in chosen}

        def attempt(task: Task, sample: int) -> Result:  # samples=len(rounds)+1 (never 1): each round's output folder is <id>.s<round>
            return run_one(task, sample, len(rounds) + 1, 0, model, Conversation(), run_dir, JailLimits(),
                           max(max_turns, len(by_task[task.id]["replies"])))
        todo = [(tasks[record["id"]], number) for record in chosen]
        for task, _, result, _ in run_attempts(todo, model.open(None, len(todo)), model, attempt, lambda in_flight: None):
            outcomes.append((by_task[task.id], result))
            progress.update(1)
    progress.close()
    return outcomes


def validate(tasks_path: Path, keep: Path | None) -> int:
    """Prove a suite: every task's line parses, its input files exist, its check function exists and has a docstring,
    its reference replays pass and its wrong replays fail (checks/reference.jsonl, checks/wrong.jsonl and, where
    present, checks/solutions/*.jsonl beside the tasks file). One line per task; 1 if any task fails."""
    tasks_path = tasks_path.resolve()
    checks_dir = tasks_path.parent / "checks"
    problems: dict[str, list[str]] = {}
    tasks: dict[str, Task] = {}
    defined: dict = {}
    for where, record in task_records(tasks_path):
        key = record["id"] if isinstance(record, dict) and isinstance(record.get("id"), str) else where
        found = problems.setdefault(key, [])
        try:
            task = task_from_record(record, where, tasks_path, defined)
        except UsageError as error:
            found.append(str(error))
            continue
        if task.id in tasks:
            found.append(f"{where}: the id is used twice")
            continue
        if not (defined[task.check_module][task.check_function] or "").strip():
            found.append(f"its check {task.check_module}:{task.check_function} has no docstring saying what it verifies")
        tasks[task.id] = task
    records = read_replays(checks_dir / "reference.jsonl", "pass") + read_replays(checks_dir / "wrong.jsonl", "fail")
    for path in sorted((checks_dir / "solutions").glob("*.jsonl")):
        records += read_replays(path, None)
    for record in records:
        if record["id"] not in problems:
            problems.setdefault(record["id"], []).append(f"{record['source']}: a replay for a task that is not in {tasks_path.name}")
    for task_id in tasks:
        for expect, where in (("pass", "reference.jsonl"), ("fail", "wrong.jsonl")):
            if not any(r["id"] == task_id and r["expect"] == expect for r in records):
                problems[task_id].append(f"no replay that should {expect} (checks/{where})")
    playable = [record for record in records if record["id"] in tasks]
    print(f"validate: {len(problems)} task(s), {len(playable)} replay(s) to run in the jail", flush=True)
    run_dir = keep.resolve() if keep else Path(tempfile.mkdtemp(prefix="pybench-validate-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    run_dir.chmod(0o755)
    try:
        counts: dict[str, int] = {}
        for record, result in replay_records(tasks, playable, run_dir):
            counts[record["id"]] = counts.get(record["id"], 0) + 1
            if result.passed != (record["expect"] == "pass"):
                got = "passed" if result.passed else f"failed ({result.reason})"
                problems[record["id"]].append(f"{record['source']} [{record['kind']}] should {record['expect']} but {got}")
    finally:
        if not keep:
            shutil.rmtree(run_dir, ignore_errors=True)
    width = max(map(len, problems), default=0)
    for task_id, found in problems.items():
        print(f"FAIL  {task_id.ljust(width)}  {'; '.join(found)}" if found else
              f"ok    {task_id.ljust(width)}  {counts.get(task_id, 0)} replay(s) got the verdict they expect")
    failed = sum(bool(found) for found in problems.values())
    print(f"validate: {len(problems) - failed} of {len(problems)} task(s) proven" + (f"; {failed} failed" if failed else ""))
    return 1 if failed else 0


def submission_replies(path: Path, task_id: str) -> list[tuple[str, list[str]]]:
    """(name, replies) per submission in a file: a Jupyter notebook (its code cells in order as the agent's cells, its
    last markdown cell as the final answer) or replay lines {"replies": [...]} (an "id", if any, must be the task's)."""
    if not path.is_file():
        raise UsageError(f"grade: submission {path} does not exist")
    if path.suffix == ".ipynb":
        import warnings

        import nbformat

        try:
            with warnings.catch_warnings():  # MissingIDFieldWarning and the like are nbformat's business, not the teacher's
                warnings.simplefilter("ignore")
                notebook = nbformat.read(path, as_version=4)
        except Exception as error:  # nbformat raises several kinds for a file that is not a notebook
            raise UsageError(f"grade: {path} is not a Jupyter notebook ({type(error).__name__}: {str(error)[:200]})") from None
        try:
            code = [cell.source for cell in notebook.cells if cell.cell_type == "code" and cell.source.strip()]
            markdown = [cell.source for cell in notebook.cells if cell.cell_type == "markdown" and cell.source.strip()]
        except (AttributeError, TypeError):  # a cell without a source or a type: grade a class (a folder) to go on past it
            raise UsageError(f"grade: {path} has a cell without a text 'source' or 'cell_type'") from None
        return [(path.name, [f"```python\n{source}\n```" for source in code] + [markdown[-1] if markdown else ""])]
    records = read_replays(path, "pass", task_id) if path.suffix in (".jsonl", ".json") else None
    if records is None:
        raise UsageError(f"grade: {path} is neither a notebook (.ipynb) nor replay lines (.jsonl)")
    if not records:
        raise UsageError(f"grade: {path} holds no replay line")
    return [(path.name if len(records) == 1 else f"{path.name}:{record['source'].rsplit(':', 1)[1]}", record["replies"]) for record in records]


def grade(argv: list[str]) -> Path:
    """Score submissions against one task, each in the jail with the task's check, as a run with a results file;
    one line per submission: its name, pass or fail, and the reason. Returns the run directory."""
    parser = OneLineParser(prog="pybench.py grade", description="Grade student submissions (Jupyter notebooks or "
                                     "replay lines) against one task of a suite, in the jail, with the task's check.")
    parser.add_argument("--tasks", type=Path, default=ROOT / "tasks.jsonl", help="the suite's tasks.jsonl (files/ and checks/ beside it)")
    parser.add_argument("--task", required=True, help="the task id the submissions answer")
    parser.add_argument("--out", type=Path, help="run directory (default runs/grade-<task>-<timestamp>)")
    parser.add_argument("--max-turns", type=int, default=10, help="at least this many cells run (more if a notebook has more)")
    parser.add_argument("submissions", type=Path, nargs="+", metavar="SUBMISSION")
    options = parser.parse_args(argv)
    if options.out:
        check_output_folder(options.out, "grade --out")
    tasks_path = options.tasks.resolve()
    task = next((task for task in load_tasks(tasks_path) if task.id == options.task), None)
    if task is None:
        raise UsageError(f"grade --task: no task with id {options.task!r} in {tasks_path}")
    submissions = [entry for path in options.submissions for entry in submission_replies(path, task.id)]
    run_dir = (options.out or ROOT / "runs" / f"grade-{task.id}-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    if run_dir.exists() and any(run_dir.iterdir()):
        raise UsageError(f"grade --out {run_dir} is not empty: give a new folder")
    (run_dir / "jails").mkdir(parents=True, exist_ok=True)
    labels: list[str] = []
    for name, _ in submissions:
        label = re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip("._-")[:70] or "submission"
        labels.append(label if label not in labels else f"{label}-{len(labels) + 1}")
    manifest = {"model": {"replay": "submissions"}, "model_sha256": None, "device": "none (grading)", "suite": str(tasks_path),
                "suite_size": 1, "suite_sha256": suite_digest(tasks_path.parent, [tasks_path], [task]),
                "flags": {"max_turns": options.max_turns, "samples": 1}, "grade": {"task": task.id, "submissions": labels},
                "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "finished": None}
    write_manifest(run_dir, manifest)
    records = [{"id": task.id, "replies": replies} for _, replies in submissions]
    for number, ((name, _), label, record) in enumerate(zip(submissions, labels, records)):
        replay = run_dir / f"submission{number}.jsonl"
        replay.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
        result = run_one(task, number, len(submissions) + 1, 0, ReplayModel(replay, {task.id}), Conversation(), run_dir, JailLimits(),
                         max(options.max_turns, len(record["replies"])))
        result.id, result.task, result.submission, result.sample = label, task.id, name, 0
        append_result(run_dir / "results.jsonl", result)
        print(f"{terminal_text(name)}: {'pass' if result.passed else 'fail'}{': ' + terminal_text(result.reason, 300) if result.reason else ''}",
              flush=True)
    manifest["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    write_manifest(run_dir, manifest)
    print(f"results: {run_dir / 'results.jsonl'}")
    return run_dir


# --- the benchmark record --------------------------------------------------------------------------------------------

def prepare(args: argparse.Namespace, tasks_path: Path) -> Prepared:
    return Prepared(load_tasks(tasks_path), DEFAULTS, tasks_path.parent, [tasks_path], ReplayModel, attempts)


def attempts(args: argparse.Namespace, model, run_dir: Path, limits: JailLimits, todo: list):
    conversation = Conversation()

    def attempt(task: Task, sample: int) -> Result:
        return run_one(task, sample, args.samples, args.seed + sample, model, conversation, run_dir, limits, args.max_turns)
    return attempt


BENCHMARK = Benchmark("suite", claims=lambda path: path.suffix == ".jsonl" or not path.exists(), prepare=prepare,
                      tables=lambda results, manifests: Tables(""), made=lambda results, manifests: True)
