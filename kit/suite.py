"""suite: our own benchmark format, a tasks.jsonl with files/ and checks/ beside it (the kit's 143 tasks, or a
teacher's), and what teachers do with it: prove a suite (validate); the classroom grades students' work against it.
"""

import collections
import functools
import importlib.machinery
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from kit.harness import (CATEGORIES, TASK_ID, Benchmark, Conversation, Prepared, ReplayModel, Result, Tables, Task,
                         UsageError, append_line, check_modules, functions_defined_in, imported_names, is_replay_line, jsonl_records,
                         run_attempts, run_one)
from kit.settings import PAPER_DEFAULTS, Settings
from kit.sandbox import ROOT, JailLimits, jail_python
from kit.untrusted import for_terminal

__all__ = ["BENCHMARK", "load_tasks", "task_from_record", "read_replays", "solution_rounds", "validate"]


# --- the suite: a tasks.jsonl, its files/ and checks/ --------------------------------------------------------------

def load_tasks(tasks_path: Path) -> list[Task]:
    """Read and validate a tasks.jsonl; its files/ and checks/ folders sit beside it."""
    tasks, defined = {}, {}
    for where, record in task_records(tasks_path):
        task = task_from_record(record, where, tasks_path, defined)
        if task.id in tasks:
            raise UsageError(f"{where}: field 'id' {task.id!r} is used twice")
        tasks[task.id] = task
    if not tasks:
        raise UsageError(f"tasks file {tasks_path} holds no tasks")
    return list(tasks.values())


def task_records(tasks_path: Path, advice: str = "give --tasks a tasks.jsonl") -> list[tuple[str, object]]:
    """(where, parsed JSON) per non-blank line of a tasks.jsonl; advice: what to do when it is missing, in the words of
    the command that read it."""
    if not tasks_path.is_file():
        raise UsageError(f"tasks file {tasks_path} does not exist: {advice}")
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
    if not record["category"].strip() or len(record["category"]) > 60 or not record["category"].isprintable():
        raise UsageError(f"{where}: field 'category' {record['category']!r} must be a name on one line, at most 60 characters "
                         f"(the kit's suite uses the paper's five: {', '.join(CATEGORIES)})")
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
                own={"points": float(points)})  # what passing it is worth in a teacher's assignment


# --- teachers: prove a suite (validate) -------------------------------------------------------------------------

def read_replays(path: Path, expect: str | None, task_id: str | None = None) -> list[dict]:
    """Replay lines of a suite's checks/ folder: {"id", "replies"} in reference.jsonl and wrong.jsonl (expect given),
    {"id", "expect", "kind", "replies"} in solutions/*.jsonl; with task_id, lines of that task, whose "id" may be left out.
    Each gets its source for the verdict lines."""
    if not path.is_file():
        return []
    records = []
    for where, record in jsonl_records(path):
        number = where.rsplit(" ", 1)[1]
        if task_id and isinstance(record, dict) and record.setdefault("id", task_id) != task_id:
            raise UsageError(f"{where}: a replay for task {record['id']!r}, not for {task_id!r}")
        if not is_replay_line(record):
            raise UsageError(f"{where}: expected {ReplayModel.EXPECTED}")
        if record.setdefault("expect", expect) not in ("pass", "fail"):
            raise UsageError(f"{where}: field 'expect' must be \"pass\" or \"fail\"")
        records.append(record | {"source": f"{path.parent.name}/{path.name}:{number}", "kind": str(record.get("kind") or path.stem)})
    return records


def solution_rounds(records: list[dict]) -> list[list[dict]]:
    """Replays in rounds holding at most one per task (round r: every task's r-th replay), so that a round is one
    replay file and every attempt of a round has its own task."""
    rounds: dict[int, list[dict]] = collections.defaultdict(list)  # round r is made after round r - 1: in order
    seen = collections.Counter()
    for record in records:
        rounds[seen[record["id"]]].append(record)
        seen[record["id"]] += 1
    return list(rounds.values())


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


@functools.cache
def unimportable_in(checks_dir: Path, module: str, environment: str) -> tuple[str, ...]:
    """What a task's check modules import that its check jail could not: a name in none of the modules it mounts
    (checks/, the kit's library pybench_checks), the standard library or the jail's Python (when that is built)."""
    modules = check_modules(checks_dir, module)
    site = [str(folder) for folder in jail_python(environment).parent.parent.glob("lib/python3*/site-packages")]
    problems = []
    for name, path in modules.items():
        for imported in dict.fromkeys(imported_names(path)):
            if not (f"{imported}.py" in modules or imported in sys.stdlib_module_names or not site
                    or importlib.machinery.PathFinder.find_spec(imported, site)):
                problems.append(f"checks/{name} imports {imported!r}, which the check jail cannot import (not in checks/, "
                                "the kit's check library pybench_checks, or the jail's Python)")
    return tuple(problems)


def validate(tasks_path: Path, keep: Path | None, only: set[str] | None = None) -> int:
    """Prove a suite: every task's line parses, its input files exist, its check function exists and has a docstring,
    its reference replays pass and its wrong replays fail (checks/reference.jsonl, checks/wrong.jsonl and, where
    present, checks/solutions/*.jsonl beside the tasks file). One line per task; 1 if any task fails. only: these
    tasks alone (a new task proven without the rest), their replays, and the other lines left unread."""
    tasks_path = tasks_path.resolve()
    checks_dir = tasks_path.parent / "checks"
    problems: dict[str, list[str]] = {}
    tasks: dict[str, Task] = {}
    defined: dict = {}
    for where, record in task_records(tasks_path, "give validate the path of one (`pybench.py validate PATH/tasks.jsonl`)"):
        key = record["id"] if isinstance(record, dict) and isinstance(record.get("id"), str) else where
        if only and key not in only:
            continue
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
        found += unimportable_in(task.checks_dir, task.check_module, task.environment)
        tasks[task.id] = task
    records = read_replays(checks_dir / "reference.jsonl", "pass") + read_replays(checks_dir / "wrong.jsonl", "fail")
    records += [r for path in sorted((checks_dir / "solutions").glob("*.jsonl")) for r in read_replays(path, None)]
    if only:
        if unknown := sorted(only - set(problems)):
            raise UsageError(f"validate --only: no task {', '.join(map(repr, unknown))} in {tasks_path}")
        records = [record for record in records if record["id"] in only]
    for record in records:
        problems.setdefault(record["id"], [f"{record['source']}: a replay for a task that is not in {tasks_path.name}"])
    for task_id in tasks:
        for expect, where in (("pass", "reference.jsonl"), ("fail", "wrong.jsonl")):
            if not any(r["id"] == task_id and r["expect"] == expect for r in records):
                problems[task_id].append(f"no replay that should {expect} (checks/{where})")
    playable = [record for record in records if record["id"] in tasks]
    print(f"validate: {len(problems)} task(s), {len(playable)} replay(s) to run in the jail", flush=True)
    run_dir = keep.resolve() if keep else Path(tempfile.mkdtemp(prefix="pybench-validate-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    run_dir.chmod(0o755)
    results_path = run_dir / "validate.jsonl" if keep else ROOT / "runs" / f"validate-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
    results_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        counts = collections.Counter()
        for record, result in replay_records(tasks, playable, run_dir):
            counts[record["id"]] += 1
            if result.passed != (record["expect"] == "pass"):
                got = "passed" if result.passed else f"failed ({result.reason})"
                problems[record["id"]].append(f"{record['source']} [{record['kind']}] should {record['expect']} but {got}")
            unprinted = unprinted_numbers(result, tasks[record["id"]].query) if record["expect"] == "pass" and result.passed else []
            if unprinted:
                print(f"note  {record['id']}: {record['source']} [{for_terminal(record['kind'])}] states {', '.join(unprinted)}, which none of its cells printed")
            append_line(results_path, {"id": record["id"], "replay": record["source"], "kind": record["kind"], "expect": record["expect"],
                                       "got": "pass" if result.passed else "fail", "reason": result.reason, "unprinted_numbers": unprinted})
    finally:
        if not keep:
            shutil.rmtree(run_dir, ignore_errors=True)
    shown = {task_id: for_terminal(task_id) for task_id in problems}  # a line's id or kind may be any text
    width = max(map(len, shown.values()), default=0)
    for task_id, found in problems.items():
        print(f"FAIL  {shown[task_id].ljust(width)}  {'; '.join(for_terminal(problem, 1000) for problem in found)}" if found else
              f"ok    {shown[task_id].ljust(width)}  {counts.get(task_id, 0)} replay(s) got the verdict they expect")
    failed = sum(bool(found) for found in problems.values())
    print(f"validate: {len(problems) - failed} of {len(problems)} task(s) proven" + (f"; {failed} failed" if failed else "")
          + (f"; each replay's verdict and reason: {results_path}" if playable else ""))
    return 1 if failed else 0


NUMBER = re.compile(r"(?<![\w.])-?\d+(?:,\d{3})*(?:\.\d+)?")


def unprinted_numbers(result: Result, query: str) -> list[str]:
    """The numbers a passing replay's final answer states that none of its cells printed (nor its query holds),
    allowing for rounding to the decimals the answer gives and for a share written as a percentage: a total added
    up by hand and mis-added is caught here, where a check reading the answer with a tolerance may not catch it."""
    final = result.messages[-1]["content"] if result.messages and result.messages[-1]["role"] == "assistant" else ""
    seen = [float(text.replace(",", "")) for text in NUMBER.findall("\n".join(filter(None, result.printed or [])) + "\n" + query)]
    missing = []
    for text in dict.fromkeys(NUMBER.findall(final)):
        value, decimals = float(text.replace(",", "")), len(text.partition(".")[2])
        if not any(abs(shown * scale - value) <= 0.5 * 10 ** -decimals + 1e-9 for shown in seen for scale in (1, 100)):
            missing.append(text)
    return missing


# --- the benchmark record --------------------------------------------------------------------------------------------

def prepare(settings: Settings, tasks_path: Path) -> Prepared:
    return Prepared(load_tasks(tasks_path), PAPER_DEFAULTS, tasks_path.parent, [tasks_path], ReplayModel, attempts)


def attempts(settings: Settings, model, run_dir: Path, limits: JailLimits, todo: list):
    conversation = Conversation()
    return lambda task, sample: run_one(task, sample, settings.samples, settings.seed + sample, model, conversation, run_dir, limits,
                                        settings.max_turns)


BENCHMARK = Benchmark("suite", claims=lambda path: path.suffix == ".jsonl" or not path.exists(), prepare=prepare,
                      tables=lambda results, manifests: Tables(""), made=lambda results, manifests: True)
