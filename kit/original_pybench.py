"""original: the original PyBench (arXiv 2407.16732), run from the user's own checkout (its task.json, config,
tests.py and data/), and its saved runs replayed, behaving as the original harness did: its prompts and
interpreter messages, its Jupyter kernel's display (jailed.original_kernel, in the jail environment of its
versions), its tests scored over one shared ./output/, and its score three ways (published, honest, corrected).
Nothing of the checkout is copied into this project.
"""

import json
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from kit.harness import (TASK_ID, Benchmark, Conversation, Prepared, ReplayModel, Result, Tables, Task, TaskRun, UsageError,
                     Verdict, check_in_jail, check_verdict, first_attempts, functions_defined_in, percent_interval, run_check, run_one,
                     wilson)
from kit.settings import PAPER_DEFAULTS, Settings
from kit.sandbox import ROOT, JAIL_ROOT, JailLimits, remove_tree
from kit.untrusted import for_record, for_terminal

__all__ = ["BENCHMARK", "ORIGINAL_TASKS", "ORIGINAL_INTERPRETER", "SavedRun", "load_original"]


# --- the original PyBench, read from the user's own checkout -------------------------------------------------------

ORIGINAL_TASKS = "data/meta/task.json"
ORIGINAL_TESTS = "data/unit_test/tests.py"
ORIGINAL_RANGES = {"chart": [(2, 51), (60, 73)], "text": [(52, 59), (74, 77), (121, 133)], "image_audio": [(78, 120), (144, 152)],
                   "math": [(134, 139)], "software": [(140, 143)]}   # the paper's categories by task index

ORIGINAL_CAVEATS = {  # known defects of the published benchmark (../shared/README.md); such tasks are set aside in the honest figure
    "11": "its test can never pass (a DataFrame inside assert)", "20": "its test can never pass (an undefined name)",
    "146": "its test reads a file that no commit has", "63": "its test asserts nothing",
    "138": "its test passes almost any answer", "139": "its test passes almost any answer",
    "68": "its test checks task 67's output", "82": "its test checks task 81's output",
    "59": "its test checks a different file type than the query asks for", "74": "its test checks a different file type than the query asks for",
    "128": "it needs the internet", "129": "it needs the internet",
    "14": "its test compares an unstable sort with itself: the verdict depends on the numpy/pandas versions and the CPU's SIMD sort"}

# Our corrected checks (checks/original.py, task_<index>) for the tasks whose test is defective, each used only when the
# checkout's query names what the check reads (spaces ignored): a checkout whose task asks something else keeps its test.
ORIGINAL_READS_OTHERS = {"68": {"67"}, "82": {"81"}}  # read in its tests.py: the only tests scored from another task's output

ORIGINAL_CORRECTED = {"11": "./output/11.xlsx", "20": "./output/20.png", "59": "./output/59.txt", "63": "./output/63.png",
                      "68": "./output/68.png", "74": "./output/74.xlsx", "82": "./output/82.png", "138": "x^3+2x^2+3x+4",
                      "139": "y=2x+1+1/(x+1)", "146": "./output/146.mp3"}

# The original harness's message prefixes, format facts kept so that its saved trajectories and tests line up.
ORIGINAL_UPLOADED = "[INFO]The data is uploaded to "
ORIGINAL_INTERPRETER = "[INFO]This is a Code Interpreter Message:\n"
ORIGINAL_ERROR = "There are some errors in the code. All variable in this cell should be redefined,Please Debug:\nError: {name}\n{message}\n"


def original_category(index: str) -> str | None:
    number = int(index) if index.isdigit() else -1
    return next((name for name, spans in ORIGINAL_RANGES.items() if any(low <= number <= high for low, high in spans)), None)


def load_original(checkout: Path) -> list[Task]:
    """Every record of the checkout's task.json as a Task: id = its index, inputs at the same relative paths, scored by
    test_task_<index> of its tests.py. A task missing an input runs, as in the original; the honest figure drops it."""
    path = checkout / ORIGINAL_TASKS
    if not path.is_file():
        raise UsageError(f"--tasks {checkout} is a folder but not a PyBench checkout (it has no {ORIGINAL_TASKS})")
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise UsageError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(records, list):
        raise UsageError(f"{path}: expected a JSON array of task records")
    tests = functions_defined_in(checkout / ORIGINAL_TESTS)
    # its tests run with the cwd laid out as they expect: the checkout's data/ and ref/, read-only (./output/ is added)
    binds = [(str(checkout / name), f"{JAIL_ROOT}/{name}", False) for name in ("data", "ref", "gpt4_output") if (checkout / name).is_dir()]
    tasks = []
    for number, record in enumerate(records, 1):
        where = f"{path}, record {number}"
        if not isinstance(record, dict) or not isinstance(record.get("index"), str) or not isinstance(record.get("user"), str):
            raise UsageError(f"{where}: expected an object with string fields 'index' and 'user'")
        index = record["index"]
        if not TASK_ID.fullmatch(index) or (category := original_category(index)) is None:
            raise UsageError(f"{where}: index {index!r} is not a PyBench task index (2..152)")
        paths = record.get("file_paths", record.get("file_path", []))
        paths = [paths] if isinstance(paths, str) else paths
        inputs, caveats = {}, [ORIGINAL_CAVEATS[index]] if index in ORIGINAL_CAVEATS else []
        for written in paths:
            relative = Path(os.path.normpath(str(written).removeprefix("./")))
            if relative.is_absolute() or relative.parts[:1] != ("data",) or relative.parts[1:2] == ("unit_test",):
                caveats.append(f"its input {for_terminal(written)} is not an input under ./data/, so it is not given to the agent")
            elif (checkout / relative).is_file():
                inputs[str(relative)] = checkout / relative
            else:
                caveats.append(f"its input {for_terminal(written)} is missing from the checkout")
        if f"test_task_{index}" not in tests:
            caveats.append(f"{ORIGINAL_TESTS} has no test_task_{index}")
        guard = ORIGINAL_CORRECTED.get(index)
        corrected = f"task_{index}" if guard and guard in re.sub(r"\s", "", record["user"]) else None
        tasks.append(Task(index, category, record["user"], inputs, paths, "tests", f"test_task_{index}", checkout / "data/unit_test",
                          caveats=caveats, environment="original", own={"test_binds": binds, "corrected": corrected}))
    if not tasks:
        raise UsageError(f"{path} holds no tasks")
    return tasks


def original_conversation(checkout: Path, config_name: str) -> tuple[Conversation, dict]:
    """System prompt and code tokens from the checkout's config yaml, and its turn limit and sampling as the run's
    defaults (llm.args' secrets unread)."""
    import yaml

    path = checkout / config_name
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"--pybench-config: {path} does not exist (the checkout's config/ holds the choices)") from None
    except yaml.YAMLError as error:
        raise UsageError(f"--pybench-config: {path} is not valid YAML ({str(error).splitlines()[0]})") from None
    if not (isinstance(config, dict) and isinstance(config.get("system_prompt_template"), str) and config.get("code_start_token")):
        raise UsageError(f"--pybench-config: {path} is not an agent config (no system_prompt_template and code_start_token)")
    args = (config.get("llm") or {}).get("args") or {}
    sampling_source = args.get("model_args", args) if isinstance(args, dict) else {}
    sampling = {key: sampling_source[key] for key in ("temperature", "top_p", "max_tokens") if isinstance(sampling_source.get(key), (int, float))}
    conversation = Conversation(config["system_prompt_template"], str(config["code_start_token"]), str(config.get("code_end_token", "```")),
                                uploaded_prefix=ORIGINAL_UPLOADED, interpreter_prefix=ORIGINAL_INTERPRETER, error_format=ORIGINAL_ERROR)
    return conversation, PAPER_DEFAULTS | sampling | {"max_turns": int(config.get("max_turns", PAPER_DEFAULTS["max_turns"]))}


# --- a saved run of the original, replayed -------------------------------------------------------------------------

@dataclass
class SavedRecord:
    """What an original saved run holds for one task when it is not a plain list of messages."""
    caveat: str
    tested: bool = True            # False: the original's scorer fails the task without running its test
    stand_in: list | None = None   # the messages its test is given instead of the re-executed ones


ORIGINAL_STAND_IN = [{"role": "", "content": "error"}]  # the one message the original's scorer tests a record without messages with


class SavedRun(ReplayModel):
    """A replay for an original checkout: {"id", "replies"} lines, or an original PyBench trajectory file whose
    assistant messages are replayed, re-executed and scored again. What a record holds beyond replies is in `saved`."""

    EXPECTED = ('{"id": TASK_ID, "replies": ["...", ...]} or an original PyBench trajectory line with "index" and "messages"')

    def __init__(self, path: Path, task_ids: set[str]):
        self.saved: dict[str, SavedRecord] = {}  # an original trajectory file's records that are not a plain run
        self.trajectories = False
        super().__init__(path, task_ids)
        if self.trajectories:  # the original's scorer fails a task its trajectory file lacks, without running its test
            for task_id in task_ids - self.replies.keys():
                self.saved[task_id] = SavedRecord("the saved run has no record of this task (the original fails it untested)", tested=False)

    def replies_of(self, record):
        """An original trajectory line as {"id", "replies"}: its assistant messages. A line without a message list is
        scored as the original's scorer scores it, on a one-message stand-in; a line with an "error" field keeps a caveat."""
        if not (isinstance(record, dict) and "index" in record):
            return record
        self.trajectories = True
        task_id, messages = str(record["index"]), record.get("messages")
        if not isinstance(messages, list):
            self.saved[task_id] = SavedRecord("the saved run holds no messages for this task (the original scores a one-message "
                                              "stand-in, which fails)", stand_in=ORIGINAL_STAND_IN)
            return {"id": task_id, "replies": []}
        if record.get("error"):
            self.saved[task_id] = SavedRecord(f"the saved run recorded an error for this task: {for_terminal(record['error'], 200)}")
        return {"id": task_id, "replies": [str(message.get("content") or "") for message in messages
                                           if isinstance(message, dict) and message.get("role") == "assistant"]}


# --- scored as the original scored ---------------------------------------------------------------------------------

def shared_output(own: Path, into: Path, only: set[str] | None = None) -> Path:
    """The one ./output/ the original scored every task over (68 reads 67's output), as hard links in `into`: every
    other task's output of this run and sample (with only, just those tasks'; later over earlier), then its own over
    them. Agent jails never see it: each has only its own ./output/."""
    suffix = own.name[len(own.name.split(".s")[0]):]  # "" or ".s<k>"
    others = [folder for folder in own.parent.iterdir() if folder != own and folder.is_dir() and folder.name.endswith(suffix)
              and (suffix or ".s" not in folder.name) and (only is None or folder.name.split(".")[0] in only)]
    others.sort(key=lambda folder: (int(folder.name.split(".")[0]) if folder.name.split(".")[0].isdigit() else -1, folder.name))
    if into.exists() or into.is_symlink():
        remove_tree(into)
    into.mkdir(parents=True)
    for source in others + [own]:
        for parent, directories, files in os.walk(source):
            target = into / Path(parent).relative_to(source)
            for name in directories + files:
                path, link = Path(parent) / name, target / name
                try:  # what cannot be linked (a path too long, a name taken by a folder) is left out, as a check would miss it
                    if name in directories:
                        link.mkdir(exist_ok=True)
                        continue
                    if link.is_dir() and not link.is_symlink():
                        remove_tree(link)
                    elif link.is_symlink() or link.exists():
                        link.unlink()
                    os.link(path, link, follow_symlinks=False)
                except OSError:
                    continue
    return into


def run_test(task: Task, run: TaskRun, log_dir: Path, trajectory: list | None, output_dir: Path) -> tuple[bool, str]:
    """(passed, reason) of the checkout's test_task_<index>(trajectory; None: the run's messages), run as its tests.py
    expects: the checkout's data/, ref/, gpt4_output/ and output_dir as ./output/, read-only; an exception fails it."""
    binds = task.own["test_binds"] + [(str(output_dir), f"{JAIL_ROOT}/output", False)]
    cell = check_in_jail(task, run, log_dir, binds, path=f"{JAIL_ROOT}/data/unit_test",
                         trajectory=run.messages if trajectory is None else trajectory)
    return check_verdict(cell, lambda cell: f"{cell.error_type}: {cell.error_message}" if cell.error_message else cell.error_type)


def score(task: Task, run: TaskRun, log_dir: Path, saved: SavedRecord | None, earlier_agents: list[threading.Event]) -> Verdict:
    """The published verdict: its test over the shared ./output/ once the earlier agents are done (a saved record's
    stand-in as the trajectory; a task the saved run lacks fails untested). own_output: the same test over the task's
    own ./output/ (and ORIGINAL_READS_OTHERS'), where that differs. corrected: our check for a defective test."""
    own_output = None
    if saved and not saved.tested:
        passed, reason = False, saved.caveat
    else:
        for event in earlier_agents:
            event.wait()
        stand_in = saved.stand_in if saved else None
        scored = shared_output(run.output_dir, log_dir / f"{run.output_dir.name}.output")
        alone = shared_output(run.output_dir, log_dir / f"{run.output_dir.name}.own", ORIGINAL_READS_OTHERS.get(task.id, set()))
        try:
            passed, reason = run_test(task, run, log_dir, stand_in, scored)
            if entries(alone) != entries(scored):  # the honest figures' verdict: the test sees this task's output alone
                own_passed, own_reason = run_test(task, run, log_dir, stand_in, alone)
                own_output = {"passed": own_passed, "reason": for_record(own_reason, 2000)}
        finally:
            remove_tree(scored)
            remove_tree(alone)
    corrected = None
    if task.own["corrected"]:  # the corrected figure: our own check in place of the original's defective test
        ours = Task(task.id, task.category, task.query, task.inputs, task.paths, "original", task.own["corrected"], ROOT / "checks")
        corrected_passed, corrected_reason = (False, reason) if saved and not saved.tested else run_check(ours, run, log_dir)
        corrected = {"passed": corrected_passed, "reason": for_record(corrected_reason, 2000), "check": f"original:{task.own['corrected']}",
                     "caveats": [caveat for caveat in task.caveats if caveat != ORIGINAL_CAVEATS.get(task.id)]}
    fields = {"corrected": corrected, "own_output": own_output}
    return Verdict(passed, reason, [saved.caveat] if saved else [], {name: value for name, value in fields.items() if value})


def entries(folder: Path) -> set[str]:
    """Every path under folder, relative to it."""
    return {str(Path(parent, name).relative_to(folder)) for parent, folders, files in os.walk(folder) for name in folders + files}


def attempts(settings: Settings, model, run_dir: Path, limits: JailLimits, todo: list, conversation: Conversation,
             saved_run: list):
    """attempt(task, sample) for the scheduler. A check reads the run's shared ./output/, so it waits for the agents
    of the attempts of the same sample before it in the run's order, as the original scored only once every task had run."""
    agents_done = {(task.id, sample): threading.Event() for task, sample in todo}
    order = list(agents_done)
    saved = saved_run[0].saved if saved_run else {}

    def attempt(task: Task, sample: int) -> Result:
        key = (task.id, sample)
        earlier = [agents_done[other] for other in order[:order.index(key)] if other[1] == sample]
        return run_one(task, sample, settings.samples, settings.seed + sample, model, conversation, run_dir, limits, settings.max_turns,
                       score=lambda task, run, log_dir: score(task, run, log_dir, saved.get(task.id), earlier),
                       agent_done=agents_done[key])
    return attempt


def prepare(settings: Settings, checkout: Path) -> Prepared:
    tasks = load_original(checkout)
    conversation, defaults = original_conversation(checkout, settings.pybench_config)
    saved_run: list[SavedRun] = []  # the replay, once made: what its records hold beyond replies decides some verdicts

    def replay(path: Path, task_ids: set[str]) -> SavedRun:
        saved_run.append(SavedRun(path, task_ids))
        return saved_run[-1]
    return Prepared(tasks, defaults, checkout, [checkout / ORIGINAL_TASKS, checkout / settings.pybench_config], replay,
                    lambda *given: attempts(*given, conversation, saved_run))


# --- its figures: the score three ways ------------------------------------------------------------------------------

def own(result: Result) -> bool:
    """An original task's verdict with its test seeing its own ./output/ only (see score)."""
    return result.own["own_output"]["passed"] if result.own.get("own_output") else result.passed


def figures(results: list[Result], suite_size: int) -> list[dict]:
    """An original checkout's score three ways, each with a Wilson interval: published, honest (the tasks with caveats
    set aside) and corrected (checks/original.py for the defective tests), as docs/original.md tells; each task's first
    attempt counts."""
    results = list(first_attempts(results).values())
    passed = sum(result.passed for result in results)
    fair = [result for result in results if not result.caveats]
    corrected = [(result.own["corrected"]["passed"] if result.own.get("corrected") else own(result))
                 for result in results if not (result.own["corrected"]["caveats"] if result.own.get("corrected") else result.caveats)]
    rows = [("original way", "published", passed, suite_size, "the original's tests over all its tasks, over one shared ./output/"),
            ("honest way", "honest", sum(map(own, fair)), len(fair),
             f"{len(results) - len(fair)} task(s) set aside, not counted as model failures"),
            ("corrected way", "corrected", sum(map(bool, corrected)), len(corrected),
             f"our corrected checks for {sum(bool(result.own.get('corrected')) for result in results)} defective test(s); "
             f"{len(results) - len(corrected)} task(s) still set aside")]
    return [{"label": label, "name": name, "passed": count, "total": total, "rate": 100 * count / max(total, 1),
             "interval": percent_interval(wilson(count, total)), "note": note} for label, name, count, total, note in rows]


def tables(results: list[Result], manifests: list[dict]) -> Tables:
    """The three figures as cards, and as text lines followed by the tasks set aside and why."""
    size = max((manifest.get("suite_size") or 0 for manifest in manifests), default=0) or len({result.id for result in results})
    cards = figures(results, size)
    lines = [f"{(figure['label'] + ':').ljust(15)}{figure['passed']}/{figure['total']} = {figure['rate']:.1f}% "
             f"(95% {figure['interval']}; {figure['note']})" for figure in cards]
    aside = [f"  {result.id}: {'; '.join(result.caveats)}"
             + (f" [corrected check: {'pass' if result.own['corrected']['passed'] else 'fail'}]" if result.own.get("corrected") else "")
             for result in results if result.caveats]
    return Tables("\n".join(lines + aside), [{"heading": "The original checkout, three ways", "cards": cards}])


def made(results: list[Result], manifests: list[dict]) -> bool:
    """A run of an original checkout: its suite is a folder (ours is a tasks.jsonl), or its results carry caveats."""
    return (any(manifest.get("suite") and Path(str(manifest["suite"])).is_dir() for manifest in manifests)
            or any(result.caveats or result.own.get("corrected") for result in results))


BENCHMARK = Benchmark("original", claims=Path.is_dir, prepare=prepare, tables=tables, made=made)
