"""mlbench: ML-Bench (arXiv 2311.09835) in pybench, from the user's own split file and repository checkouts.

A record holds an instruction and a repository; the model must answer with the command or script, with the right
arguments, that runs the repository's code. It is scored through pybench's tasks, jail, results, manifest, resume and
report: statically (ML-LLM-Bench's checks, static_verdict); with --execute a passing answer then runs in a jail over the
user's checkout (ours) and as ML-Bench's utils/exec.py runs it (SharedPass); with --mlbench-agent (ML-Agent-Bench) the
agent works in a private copy of the task folder, then `bash run.sh` runs in a fresh jail (docs/mlbench.md).

Nothing of ML-Bench is copied here: the split, the repositories and (with --mlbench-checkout) ML-Bench's own prompt
templates are read from the user's disk at run time.
"""

import ast
import contextlib
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from kit.harness import (NO_OUTPUT, TASK_ID, Benchmark, Conversation, Prepared, ReplayModel, Result, Tables, Task, TaskRun,
                     UsageError, attempts_by_task, converse, jsonl_records, pass_at_k)
from kit.engine import Reply
from kit.settings import Settings
from kit.sandbox import REPOSITORY_TMP_MIB, CellResult, Jail, JailLimits, new_jail, remove_tree, repository_limits, tidy_output
from kit.untrusted import cut, for_terminal

__all__ = ["BENCHMARK", "EXEC_SECONDS", "OPENHANDS_GO_ON", "Setup", "read_records", "parse_arguments", "load_split", "static_verdict",
           "extract_answer", "checkout_templates", "outcome_of", "honest_verdict"]

# --- the split: records in ML-Bench's fields, from the user's parquet or JSONL ----------------------------------

FIELDS = {"github_id": int, "github": str, "path": str, "arguments": str, "instruction": str, "oracle": str, "type": str,
          "id": int, "prefix_code": str, "output": str}
TYPES = ("Bash Script", "Python Code")
SAMPLES = 5                     # ML-LLM-Bench's n: pass@1, pass@2 and pass@5 come from the first 1, 2, 5 samples
PASS_AT = (1, 2, 5)
# ML-LLM-Bench's execution limits (utils/exec.py): seconds before a still-running answer counts as a pass, by github_id
EXEC_SECONDS = 10
EXEC_SECONDS_BY_REPO = {("Bash Script", 5): 4, ("Python Code", 5): 4, ("Python Code", 11): 7}
AGENT_SECONDS = 120             # ML-Agent-Bench: `bash run.sh` must exit 0 within this (a timeout counts there too)
REPO_ROOT = "/repo"             # where the checkout of the task's repository is mounted in the jail
JAIL_CACHE = "/tmp/.cache"      # the jail's ~/.cache (HOME is /tmp there): --model-cache is mounted here, read-only


@dataclass
class MLBenchTask(Task):
    """One record: id <github_id>-<id>, category = the repository's folder name (the last part of its GitHub URL,
    as in ML-Bench's repos/), query = the instruction."""
    record: dict = field(default_factory=dict)
    arguments: dict = field(default_factory=dict)
    repo: str = ""
    folder: str = ""            # the task folder inside the repository ("" for its root)


def is_split(path: Path) -> bool:
    """An ML-Bench split: a .parquet file, or a JSONL whose first record has ML-Bench's fields."""
    return path.suffix == ".parquet" or (isinstance(record := first_record(path), dict)
                                         and {"github_id", "arguments", "instruction", "type"} <= record.keys())


def first_record(path: Path) -> object:
    """The first line of a JSONL file as JSON, a look at its kind: None (never an error) for no file, line or JSON."""
    if path.is_file():
        with open(path, encoding="utf-8", errors="replace") as handle, contextlib.suppress(json.JSONDecodeError):
            return json.loads(next((line for line in handle if line.strip()), ""))
    return None


def read_records(path: Path) -> list[tuple[str, dict]]:
    """(where, record) per row, where = 'FILE, row N' or 'FILE, line N'."""
    if path.suffix == ".parquet":
        import pyarrow.parquet

        try:
            table = pyarrow.parquet.read_table(path)
        except Exception as error:  # pyarrow raises its own kinds for a damaged or foreign file
            raise UsageError(f"{path}: not a readable parquet file ({str(error).splitlines()[0]})") from None
        if missing := [name for name in FIELDS if name not in table.column_names]:
            raise UsageError(f"{path}: the parquet has no column {', '.join(missing)}; an ML-Bench split has {', '.join(FIELDS)}")
        return [(f"{path}, row {number}", record) for number, record in enumerate(table.select(list(FIELDS)).to_pylist(), 1)]
    return jsonl_records(path)


def parse_arguments(text: str, where: str) -> dict:
    """The `arguments` field, a dict literal (ML-Bench eval()s it; here ast.literal_eval reads it and runs nothing)."""
    try:
        arguments = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise UsageError(f"{where}: field 'arguments' is not a Python dict literal") from None
    if not isinstance(arguments, dict):
        raise UsageError(f"{where}: field 'arguments' holds a {type(arguments).__name__}, not a dict")
    return arguments


def load_split(path: Path) -> list[MLBenchTask]:
    """Every record as a task. A record whose own reference output fails ML-Bench's static check gets a caveat:
    it is set aside in the honest figure, as the original PyBench's defective tests are."""
    tasks: dict[str, MLBenchTask] = {}
    for where, record in read_records(path):
        if not isinstance(record, dict):
            raise UsageError(f"{where}: expected an object with ML-Bench's fields")
        if record.get("prefix_code") is None:
            record["prefix_code"] = ""
        for name, kind in FIELDS.items():
            if not isinstance(record.get(name), kind) or isinstance(record.get(name), bool):
                raise UsageError(f"{where}: field '{name}' is missing or not a{'n' if kind is int else ''} {kind.__name__}")
        if record["type"] not in TYPES:
            raise UsageError(f"{where}: field 'type' is {record['type']!r}, not one of {', '.join(map(repr, TYPES))}")
        arguments = parse_arguments(record["arguments"], where)
        repo = record["github"].rstrip("/").rsplit("/", 1)[-1]
        folder = record["path"][1:].strip("/")  # ML-Bench: repos/<repo> + path[1:], path being "./examples/x" or ""
        if not TASK_ID.fullmatch(repo) or ".." in Path(folder).parts or Path(record["path"]).is_absolute():
            raise UsageError(f"{where}: field '{'github' if not TASK_ID.fullmatch(repo) else 'path'}' does not name a "
                             "folder inside a repository checkout")
        task_id = f"{record['github_id']}-{record['id']}"
        if task_id in tasks:
            raise UsageError(f"{where}: (github_id, id) = ({record['github_id']}, {record['id']}) is used twice")
        caveats = [] if static_verdict(record["output"], arguments, record["type"])[0] else [
            "its reference output fails ML-Bench's own static check"]
        # checks_dir is the split file itself: it holds no check modules, so the suite's digest is the split's alone
        tasks[task_id] = MLBenchTask(task_id, repo, record["instruction"], {}, [], "mlbench", "static_verdict", path,
                                     caveats=caveats, record=record, arguments=arguments, repo=repo, folder=folder)
    if not tasks:
        raise UsageError(f"{path} holds no ML-Bench records")
    return list(tasks.values())


# --- the static checks, as ML-LLM-Bench's utils/exec.py makes them ----------------------------------------------

def is_script_call(answer: str) -> bool:
    """ML-Bench's test for a command line: '.sh ' or '.py ' (with the space) anywhere in the answer."""
    return ".sh " in answer or ".py " in answer


def static_verdict(answer: str, arguments: dict, kind: str) -> tuple[bool, str]:
    """(passed, reason) as ML-Bench checks: every argument's value, as str() writes it, occurs in the answer (ignoring
    case); then a Bash Script answer is a script call and a Python Code answer is not."""
    if missing := [str(value) for value in arguments.values() if str(value).lower() not in answer.lower()]:
        return False, f"arguments missing from the answer: {', '.join(map(repr, missing))}"
    if is_script_call(answer) != (kind == "Bash Script"):
        return False, ("a Bash Script answer must call a .sh or .py file ('.sh ' or '.py ')" if kind == "Bash Script" else
                       "a Python Code answer must not call a .sh or .py file (it holds '.sh ' or '.py ')")
    return True, ""


def extract_answer(reply: str) -> str:
    """The answer in a live model's reply, as ML-Bench's postprocess_output cuts it: the first ```python block, else
    ```bash, else ```script, else bare ``` block, without the newlines around it ("" for none)."""
    for tag in ("python", "bash", "script", ""):
        if match := re.search(rf"```{tag}\n*(.*?)\n*```", reply, re.DOTALL):
            return match.group(1)
    return ""


# --- prompts: ML-Bench's four settings, in ML-Bench's own wording when its checkout is given --------------------

TEMPLATE_NAMES = {"readme": "TASK1_PROMPT", "bm25": "TASK2_PROMPT", "oracle": "TASK3_PROMPT", "instruction": "TASK4_PROMPT"}
TEMPLATE_FILES = ("scripts/api/litellm_api.py", "scripts/api/azure_openai.py", "scripts/openai/call_openai.py")
ASK = ("You are a machine-learning engineer working in a GitHub repository. Write the command or script that does this "
       "task:\n{}\n\n")
ANSWER_FORMAT = "Answer with one fenced code block (```bash for a command line, ```python for a script) and nothing else."
OUR_TEMPLATES = {  # our wording: the instruction, then the setting's part of the README; one {} per part
    "oracle": ASK + "This part of the repository's README shows how its code is run; you may use it directly:\n{}\n\n" + ANSWER_FORMAT,
    "instruction": ASK + ANSWER_FORMAT,
    "bm25": ASK + "The passage of the repository's README that matches the task best:\n{}\n\n" + ANSWER_FORMAT,
    "readme": ASK + "The repository's README:\n{}\n\n" + ANSWER_FORMAT,
}


def checkout_templates(checkout: Path) -> dict[str, str]:
    """ML-Bench's prompt templates, read (not run) from its scripts: the string constants TASK1..4_PROMPT."""
    for path in filter(Path.is_file, (checkout / relative for relative in TEMPLATE_FILES)):
        constants = {node.targets[0].id: node.value.value for node in ast.parse(path.read_text(encoding="utf-8"), str(path)).body
                     if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                     and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}
        if all(name in constants for name in TEMPLATE_NAMES.values()):
            return {setting: constants[name] for setting, name in TEMPLATE_NAMES.items()}
    raise UsageError(f"--mlbench-checkout {checkout}: none of {', '.join(TEMPLATE_FILES)} defines ML-Bench's prompt templates "
                     f"({', '.join(TEMPLATE_NAMES.values())}); give the root of a checkout of github:gersteinlab/ML-Bench")


README_NAMES = ("README.md", "README.rst", "README.txt", "README", "readme.md", "Readme.md")
BM25_WINDOW = 10                # sentences per window, windows starting at every sentence (ML-Bench's merge.py)
BM25_MAX_SENTENCES = 1000


@functools.cache
def readme_of(repo_dir: Path) -> str:
    for name in README_NAMES:
        if (repo_dir / name).is_file():
            return (repo_dir / name).read_text(encoding="utf-8", errors="replace")
    raise UsageError(f"--repos: {repo_dir} has no README ({', '.join(README_NAMES[:4])}), which the bm25 and readme settings need")


@functools.cache
def bm25_passage(repo_dir: Path):
    """passage(instruction): the README window that BM25 (Okapi, rank-bm25, as ML-Bench uses) ranks first, over windows
    of 10 consecutive sentences, each a whitespace-split document. Sentences are cut at ., ! or ? before white space
    (ML-Bench uses nltk's punkt model, which needs a download; the windows may differ a little at abbreviations)."""
    from rank_bm25 import BM25Okapi

    sentences = [part for part in re.split(r"(?<=[.!?])\s+", readme_of(repo_dir).strip()) if part][:BM25_MAX_SENTENCES]
    documents = [" ".join(sentences[start:start + BM25_WINDOW]).split() for start in range(len(sentences))] or [[]]
    index = BM25Okapi(documents)
    return lambda instruction: " ".join(index.get_top_n(instruction.split(), documents, n=1)[0])


# --- the run's setup: what pybench's run_suite carries through as the protocol ----------------------------------

@dataclass
class Setup:
    """How ML-Bench records are asked and scored in this run."""
    setting: str = "oracle"
    templates: dict = field(default_factory=lambda: dict(OUR_TEMPLATES))
    repos: Path | None = None
    execute: bool = False
    agent: bool = False
    pythons: dict = field(default_factory=dict)   # repository folder name -> interpreter path
    cache: Path | None = None                     # the user's ~/.cache with downloaded weights, read-only in the jail
    output_replay: "OutputReplay | None" = None   # --replay in ML-Bench's output format: its samples are the answers
    shared: "SharedPass | None" = None            # --execute: ML-Bench's count, its samples run as utils/exec.py runs them
    tmp_mib: int = REPOSITORY_TMP_MIB             # --mlbench-tmp: the size of the jails' /tmp
    openhands: bool = False                       # --as-openhands: the agent is asked and answered as OpenHands does

    def prompt(self, task: MLBenchTask) -> str:
        context = {"oracle": lambda: [task.record["oracle"]], "instruction": list,
                   "bm25": lambda: [bm25_passage(self.repos / task.repo)(task.query)],
                   "readme": lambda: [readme_of(self.repos / task.repo)]}
        return self.templates[self.setting].format(task.query, *context[self.setting]())

    def path_first(self, repo: str) -> str:
        """The folder of the interpreter named for this repository, put first on PATH in its jails ("" for none)."""
        python = self.pythons.get(repo)
        return str(python.parent) if python else ""


def setup_from(settings: Settings) -> Setup:
    """The ML-Bench flags, checked: one sentence per mistake."""
    if settings.execute and settings.mlbench_agent:
        raise UsageError("--execute and --mlbench-agent are two different benchmarks: give one of them")
    needs_repos = settings.execute or settings.mlbench_agent or settings.mlbench_setting in ("bm25", "readme")
    if needs_repos and not settings.repos:
        why = "--execute" if settings.execute else "--mlbench-agent" if settings.mlbench_agent else f"--mlbench-setting {settings.mlbench_setting}"
        raise UsageError(f"{why} needs --repos DIR, the folder holding your checkouts of the repositories (ML-Bench's repos/)")
    repos = settings.repos.resolve() if settings.repos else None
    if repos and not repos.is_dir():
        raise UsageError(f"--repos {repos} is not a folder")
    pythons = {}
    for given in settings.repo_python or []:
        name, _, interpreter = given.partition("=")
        if not name or not interpreter:
            raise UsageError(f"--repo-python {given!r} must be NAME=PATH, e.g. esm=/opt/envs/esm/bin/python")
        if not Path(interpreter).is_file() or not os.access(interpreter, os.X_OK):
            raise UsageError(f"--repo-python {given!r}: {interpreter} is not an executable file")
        pythons[name] = Path(interpreter).absolute()
    templates = checkout_templates(settings.mlbench_checkout.resolve()) if settings.mlbench_checkout else dict(OUR_TEMPLATES)
    cache = settings.model_cache.resolve() if settings.model_cache else None
    if cache and not cache.is_dir():
        raise UsageError(f"--model-cache {cache} is not a folder")
    if settings.mlbench_tmp is not None and settings.mlbench_tmp < 16:
        raise UsageError(f"--mlbench-tmp {settings.mlbench_tmp}: give the size of the jails' /tmp in MiB, at least 16")
    if settings.as_openhands and not settings.mlbench_agent:
        raise UsageError("--as-openhands is a way to run the agent: give it with --mlbench-agent")
    return Setup(settings.mlbench_setting, templates, repos, settings.execute, settings.mlbench_agent, pythons, cache,
                 tmp_mib=settings.mlbench_tmp or REPOSITORY_TMP_MIB, openhands=settings.as_openhands)


# --- replay: ML-Bench's output format, each string scored as it stands -------------------------------------------

class OutputReplay(ReplayModel):
    """A file in ML-Bench's output format, lines {"github_id": N, "id": M, "output": ["sample 1", ...]}: sample k is
    output[k], as it stands; as in ML-Bench's evaluator, a record's first line wins and lines for no record of the split
    are left out. Scheduled as pybench's replays are, it plays no replies: run_one reads answer() through Setup."""

    def __init__(self, path: Path, task_ids: set[str]):
        self.answers: dict[str, list[str]] = {}
        unknown = 0
        for where, record in jsonl_records(path):
            if not (isinstance(record, dict) and isinstance(record.get("github_id"), int) and isinstance(record.get("id"), int)
                    and isinstance(record.get("output"), list) and all(isinstance(text, str) for text in record["output"])):
                raise UsageError(f"{where}: expected ML-Bench's output format {{\"github_id\": N, \"id\": M, \"output\": [\"...\", ...]}}")
            task_id = f"{record['github_id']}-{record['id']}"
            unknown += task_id not in task_ids
            if task_id in task_ids:
                self.answers.setdefault(task_id, record["output"])
        if unknown:
            print(f"note: {unknown} line(s) of {path} name no record of the split; left out, as ML-Bench's evaluator does",
                  file=sys.stderr)
        self.name, self.device, self.offload, self.llama_cpp_version, self.n_ctx = f"replay:{path.name}", "none (replay)", False, None, None
        self.replies, self.generated, self.stopped, self.choice = {}, 0, "", ""

    def answer(self, task_id: str, sample: int) -> str | None:
        outputs = self.answers.get(task_id, [])
        return outputs[sample] if sample < len(outputs) else None


def replay_model(path: Path, task_ids: set[str], setup: "Setup") -> ReplayModel:
    """ML-Bench's output format (kept as setup.output_replay), or pybench's own, played as the model's replies."""
    record = first_record(path)  # None where there is no file: ReplayModel says so
    if isinstance(record, dict) and "github_id" in record and "output" in record:
        setup.output_replay = OutputReplay(path, task_ids)
        return setup.output_replay
    return ReplayModel(path, task_ids)


def tasks_to_run(tasks: list[MLBenchTask], setup: Setup) -> list[MLBenchTask]:
    """The selected records that this run scores: a replay in ML-Bench's output format scores those it holds, as
    ML-Bench's evaluator does. Where the repositories are needed, each of them must be there."""
    if replay := setup.output_replay:
        if left := sum(task.id not in replay.answers for task in tasks):
            print(f"note: {left} selected record(s) have no line in the replay; they are not scored", file=sys.stderr)
        position = {task_id: number for number, task_id in enumerate(replay.answers)}  # ML-Bench's evaluator takes them so
        tasks = sorted((task for task in tasks if task.id in replay.answers), key=lambda task: position[task.id])
        if not tasks:
            raise UsageError("--replay holds no line for any selected record (lines are matched on github_id and id)")
    if setup.repos:
        for task in tasks:
            if not (setup.repos / task.repo / task.folder).is_dir():
                raise UsageError(f"task {task.id}: its folder {setup.repos / task.repo / task.folder} is missing: check out "
                                 f"{for_terminal(task.record['github'])} as {setup.repos / task.repo}, or leave the task out with --only")
    return tasks


# --- execution: a jail over the user's checkout, with a private writable copy of the task folder ----------------

LINK_BYTES = 1 << 20            # files this large (weights, data) are hard-linked into the private copy, not copied


def copy_for_jail(source: Path, target: Path) -> Path:
    """A copy of source at target owned by the jail's user (symlinks kept as links, .git left out). A file of
    LINK_BYTES or more that everyone may read and nobody else may write is a hard link where the file system allows:
    the jail can replace it, never change it (it stays the user's file), and weights are not copied once per sample."""
    linked = set()

    def place(source: str, target: str) -> str:
        info = os.stat(source)
        if info.st_size >= LINK_BYTES and info.st_mode & 0o004 and not info.st_mode & 0o022:
            with contextlib.suppress(OSError):  # another file system, or links forbidden: copy it
                os.link(source, target)
                linked.add(target)
                return target
        return shutil.copy2(source, target)

    shutil.copytree(source, target, symlinks=True, ignore=shutil.ignore_patterns(".git"), copy_function=place)
    if os.geteuid() == 0:
        for parent, directories, files in os.walk(target):
            for path in {os.path.join(parent, name) for name in [".", *directories, *files]} - linked:
                os.lchown(path, 65534, 65534)
    return target


def private_tree(task: MLBenchTask, setup: Setup, work: Path) -> tuple[list[tuple[str, str, bool]], str]:
    """A fresh copy of the task folder for one attempt (copy_for_jail) at work, and (the jail's binds: the checkout
    read-only at /repo/<name>, the copy writable over its task folder, environment_binds; the task folder there)."""
    if work.exists() or work.is_symlink():  # left by an attempt that was killed: the agent's tree, removed without recursion
        remove_tree(work)
    copy_for_jail(setup.repos / task.repo / task.folder, work)
    inside = f"{REPO_ROOT}/{task.repo}"
    folder = f"{inside}/{task.folder}" if task.folder else inside
    binds = [(str(setup.repos / task.repo), inside, False), (str(work), folder, True)]
    return binds + environment_binds(setup, [task.repo]), folder


def environment_binds(setup: Setup, repos: list[str]) -> list[tuple[str, str, bool]]:
    """--model-cache at the jail's ~/.cache, and the interpreters named for these repositories (each environment and the
    Python it was made from), read-only."""
    binds = [(str(setup.cache), JAIL_CACHE, False)] if setup.cache else []
    covered = {sys.prefix, sys.base_prefix, "/usr", "/bin", "/lib"}
    for python in filter(None, map(setup.pythons.get, repos)):
        for tree in dict.fromkeys([python.parent.parent, python.resolve().parent.parent]):
            if not any(str(tree) == top or str(tree).startswith(top + "/") for top in covered) and (str(tree), str(tree), False) not in binds:
                binds.append((str(tree), str(tree), False))
    return binds


def outcome_of(cell: CellResult) -> str:
    """'exit N' or 'timeout' from jailed.run_bash, or what stopped the cell itself."""
    if cell.error_type == "Outcome":
        return cell.error_message
    return f"not run: {cell.error_type}: {cell.error_message}".strip()


def traced_run(name: str, binds: list, limits: JailLimits, seconds: int, setup: Setup, log_dir: Path,
               **call) -> tuple[str, dict | None, str]:
    """A traced jailed.run_bash in a jail of its own, for `seconds`: (outcome, what the tracing wrappers saw of the
    task's runs: jailed.task_runs, what it printed: past 4000 characters, its head and tail)."""
    jail = new_jail(name, binds, repository_limits(limits, seconds, setup.tmp_mib), log_dir)
    try:
        cell = jail.call("run_bash", seconds=seconds, **call)
    finally:
        jail.kill()
    outcome, runs = outcome_of(cell), None
    if cell.error_type == "Outcome" and outcome.startswith("{"):
        traced = json.loads(outcome)
        outcome, runs = traced["outcome"], traced["task"]
    return outcome, runs, cut(cell.output, 4000)


def honest_verdict(outcome: str, runs: dict | None, what: str) -> tuple[bool, str]:
    """Ours: the command exited 0, the task's own script ran with the record's arguments (jailed.task_runs saw at
    least one such run), and every such run was seen starting its script and exited 0. (passed, reason)."""
    if outcome != "exit 0":
        return False, f"{what}: {outcome}"
    if runs is None or not runs["runs"]:
        return False, f"{what}: exit 0, but no run of the task's script with the record's arguments was seen"
    if runs["failed"]:
        failed = next(run for run in runs["shown"] if run["status"] != 0 or not run["started"])
        ended = ("still running" if failed["status"] is None else f"exit {failed['status']}") + (
            "" if failed["started"] else ", its script never seen starting inside the interpreter")
        return False, f"{what}: exit 0, but {runs['failed']} of {runs['runs']} runs of the task's script failed: {failed['command']} ({ended})"
    return True, ""


def exec_seconds(task: MLBenchTask, answer: str) -> int:
    kind = "Bash Script" if is_script_call(answer) else "Python Code"
    return EXEC_SECONDS_BY_REPO.get((kind, task.record["github_id"]), EXEC_SECONDS)


def execute(task: MLBenchTask, answer: str, setup: Setup, work: Path, limits: JailLimits, log_dir: Path,
            name: str) -> tuple[str, dict | None, str]:
    """Run one answer as ML-LLM-Bench does (a script call as a bash command line, any other as temp.py), prefix_code
    first, the interpreters it starts traced for the record's argument values: traced_run's (outcome, runs, output)."""
    binds, folder = private_tree(task, setup, work)
    if is_script_call(answer):
        script, values = answer, [str(value) for value in task.arguments.values()]
    else:
        (work / "temp.py").write_text(answer, encoding="utf-8")
        script, values = "python temp.py", ["temp.py"]  # the values were found in temp.py's text
    return traced_run(name, binds, limits, exec_seconds(task, answer), setup, log_dir, script=script, cwd=folder,
                      path_first=setup.path_first(task.repo), prefix=task.record["prefix_code"], trace_values=values)


# --- ML-Bench's count for --execute: the samples as utils/exec.py runs them, in one shared tree, one at a time -----

MLBENCH_ROOT = "/mlbench"       # where the shared tree is mounted: ML-Bench's checkout, with the repositories in repos/
CLEANUP_SECONDS = 5             # ML-Bench's terminate_process_tree waits this long before it kills what is left


class SharedPass:
    """ML-Bench's own execution of a run's samples, beside ours (docs/mlbench.md): one writable copy of the run's
    repositories, <run>/mlbench-tree/repos/<name>, and one jail over it for the whole run; samples run one at a time in
    ML-Bench's order (the attempts are queued so, each waiting for the ones before it), each seeing what earlier ones
    left. A resumed run goes on over the tree as it was left."""

    def __init__(self, setup: Setup, run_dir: Path, limits: JailLimits, todo: list):
        self.order = [(task.id, sample) for task, sample in todo]  # in ML-Bench's order: tasks_to_run put the tasks so
        self.repos = sorted({task.repo for task, _ in todo})
        self.setup, self.tree, self.limits, self.log_dir = setup, run_dir / "mlbench-tree", limits, run_dir / "jails"
        self.done: set = set()
        self.turns = threading.Condition()
        self.jail: Jail | None = None

    def start(self) -> Jail:
        for name in self.repos:
            if not (self.tree / "repos" / name).exists():
                copy_for_jail(self.setup.repos / name, self.tree / "repos" / name)
        if os.geteuid() == 0:
            os.lchown(self.tree, 65534, 65534)
            os.lchown(self.tree / "repos", 65534, 65534)
        binds = [(str(self.tree), MLBENCH_ROOT, True)] + environment_binds(self.setup, self.repos)
        return new_jail("mlbench-shared", binds, repository_limits(self.limits, EXEC_SECONDS, self.setup.tmp_mib), self.log_dir)

    def turn(self, task: MLBenchTask, sample: int, answer: str | None) -> str | None:
        """Wait for the samples before this one, then run the answer (None: not run, it failed the static check) as
        ML-Bench does; its outcome ('exit N', 'timeout', or what kept it from running)."""
        key = (task.id, sample)
        with self.turns:
            self.turns.wait_for(lambda: key not in self.order or set(self.order[:self.order.index(key)]) <= self.done)
        try:
            if answer is None:
                return None
            if self.jail is None:
                self.jail = self.start()
            seconds = exec_seconds(task, answer)
            cell = self.jail.call("run_as_mlbench", timeout=seconds + CLEANUP_SECONDS + 30, answer=answer,
                                  cwd=MLBENCH_ROOT, path=f"./repos/{task.repo}{task.record['path'][1:]}",
                                  seconds=seconds, path_first=self.setup.path_first(task.repo))
            return outcome_of(cell)
        finally:
            self.release(key)

    def release(self, key: tuple[str, int]) -> None:
        """This sample is done (or will not come): the next ones may run; after the last one the jail is stopped."""
        with self.turns:
            self.done.add(key)
            self.turns.notify_all()
            if self.done >= set(self.order) and self.jail is not None:
                self.jail.kill()
                self.jail = None


# --- ML-Agent-Bench: turns of python and bash in the private copy, then `bash run.sh` in a fresh jail -----------

AGENT_PROMPT = """You are a machine-learning engineer working inside a checkout of a GitHub repository, in the folder where the task is to be done. You work by writing code that runs right away:
- a fenced ```bash block runs with /bin/bash in the current folder;
- a fenced ```python block runs in a persistent Python interpreter (variables stay from one reply to the next).
Only the first code block of a reply runs; you then see what it printed, or its error. Read the repository's files (README, scripts, their argparse options) before you rely on them. There is no internet access and nothing can be installed.

Your goal: leave a file run.sh in the task folder that does the user's task when run as `bash run.sh` from there, with exactly the arguments the user asks for. When run.sh is written and checked, reply without a code block; that ends the task."""
# OpenHands' ML-Bench harness (evaluation/benchmarks/ml_bench/run_infer.py), in our words: its instruction names the
# repository, the task, run.sh, the task path and the record's prefix_code; a reply with no action is answered with a
# request to go on (its fake user, codeact_user_response) until the turn limit; the agent ends by finishing.
OPENHANDS_PROMPT = """You are a machine-learning engineer working inside a checkout of a GitHub repository, in the folder where the task is to be done. You act by writing code that runs right away:
- a fenced ```bash block runs with /bin/bash in the current folder;
- a fenced ```python block runs in a persistent Python interpreter.
Only the first code block of a reply runs; you then see what it printed, or its error. When the task is done, reply with <finish></finish>."""
OPENHANDS_GO_ON = ("Go on with the task in whatever way you think best. When it is done, reply with <finish></finish>. "
                   "Do not ask a person for help.")
OPENHANDS_FINISH = "<finish>"
# OpenHands runs `timeout 120s bash run.sh` and counts exit status 0 or 124 (timeout's own, or the script's) a success
AGENT_PASSES_OPENHANDS = ("exit 0", "exit 124", "timeout")


WORKER_PYTHON = (3, 10)          # the oldest Python that runs jailed.py, the jail's worker


@functools.cache
def hosts_worker(python: Path) -> bool:
    """Whether this interpreter is recent enough to run the jail's worker (an older one, e.g. a repository's conda
    environment of Python 3.8, leaves the agent's python turns in the kit's interpreter, with a note)."""
    try:
        found = subprocess.run([str(python), "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True,
                               timeout=60).stdout.split()
        recent = tuple(map(int, found)) >= WORKER_PYTHON
    except (OSError, ValueError, subprocess.TimeoutExpired):
        recent = False
    if not recent:
        print(f"note: {python} is not Python {'.'.join(map(str, WORKER_PYTHON))} or newer: the agent's python turns run in the "
              "kit's interpreter (its bash turns still find it first on PATH)", file=sys.stderr)
    return recent


def openhands_instruction(task: MLBenchTask, folder: str) -> str:
    prefix = f"The task's prefix code:\n```bash\n{task.record['prefix_code']}\n```\n\n" if task.record["prefix_code"] else ""
    return (f"Do this machine-learning task in the repository {task.repo}:\n\n{task.query}\n\nCreate a script named `run.sh` in "
            f"the task's folder of the repository that runs the task.\n\nThe task's folder: {folder}\n\n{prefix}"
            "Let any process you start end before you finish (wait for it).")


AGENT_BLOCK = re.compile(r"```(python|py|python3|bash|sh|shell)[ \t]*\r?\n(.*?)(?:```|\Z)", re.DOTALL | re.IGNORECASE)


@dataclass
class AgentConversation(Conversation):
    """ML-Bench's agent mode on the kit's agent loop: a reply's first python or bash block runs (bash through run_bash,
    its exit status told when not 0); as OpenHands, a reply without code is answered by its fake user until it ends."""
    opening_messages: list[dict] = field(default_factory=list)
    bash_seconds: float = 0.0
    openhands: bool = False

    def opening(self, task: Task) -> list[dict]:
        return list(self.opening_messages)

    def code_in(self, reply: str) -> str | None:
        """The reply's first python or bash block (a bash one marked BASH_CELL), or None."""
        block = AGENT_BLOCK.search(reply)
        return None if block is None else block[2] if block[1].lower().startswith("py") else f"{BASH_CELL}{block[2]}"

    def go_on(self, reply: str) -> str | None:
        return OPENHANDS_GO_ON if self.openhands and OPENHANDS_FINISH not in reply else None

    def turn(self, jail: Jail, code: str) -> tuple[CellResult, str, str]:
        if not code.startswith(BASH_CELL):
            return super().turn(jail, code)
        cell = jail.call("run_bash", timeout=self.bash_seconds + 30, script=code.removeprefix(BASH_CELL), cwd=None, seconds=self.bash_seconds)
        outcome = outcome_of(cell)
        observation = self.observation(CellResult(cell.output)) + ("" if outcome == "exit 0" else f"\n[bash: {outcome}]")
        return cell, "" if observation == NO_OUTPUT else observation.removeprefix(self.interpreter_prefix), observation


BASH_CELL = "%%bash\n"  # how a bash block is kept among the attempt's code


def run_agent(task: MLBenchTask, model, setup: Setup, work: Path, limits: JailLimits, max_turns: int, log_dir: Path, seed: int,
              name: str) -> tuple[TaskRun, str, dict | None, str]:
    """The agent's turns in one jail over its private copy; then run.sh, judged in a fresh jail: (the run, its
    outcome, the task's own script's traced runs, what run.sh printed)."""
    binds, folder = private_tree(task, setup, work)
    python, path_first = setup.pythons.get(task.repo), setup.path_first(task.repo)
    opening = ([{"role": "system", "content": OPENHANDS_PROMPT}, {"role": "user", "content": openhands_instruction(task, folder)}]
               if setup.openhands else
               [{"role": "system", "content": AGENT_PROMPT},
                {"role": "user", "content": f"Repository: {task.record['github']}, task folder: {task.record['path'] or './'}\n\n"
                                            f"Task: {task.query}"}])
    prelude = f"import os\nos.chdir({folder!r})\n" + (f"os.environ['PATH'] = {path_first!r} + ':' + os.environ['PATH']\n" if path_first else "")
    conversation = AgentConversation(prelude=prelude, opening_messages=opening, bash_seconds=limits.cell_timeout, openhands=setup.openhands)
    # the python turns in the repository's interpreter, where one is named and can run the worker, else the kit's
    jail = new_jail(name, binds, repository_limits(limits, AGENT_SECONDS, setup.tmp_mib), log_dir,
                environment=str(python) if python and hosts_worker(python) else "suite")
    run = converse(TaskRun(task, work, max_turns, jail, conversation), model, seed)
    if not (work / "run.sh").is_file() or (work / "run.sh").is_symlink():
        return run, "no run.sh", None, ""
    return run, *traced_run(f"{name}.run", binds, limits, AGENT_SECONDS, setup, log_dir, timeout=AGENT_SECONDS + 60,
                            script="/bin/bash run.sh", cwd=folder, path_first=path_first,
                            trace_values=[str(value) for value in task.arguments.values()])


# --- one attempt: asked (or replayed), checked statically, executed where asked; one results line ---------------

def run_one(task: MLBenchTask, sample: int, samples: int, seed: int, model, setup: Setup, run_dir: Path, limits: JailLimits,
            max_turns: int) -> Result:
    """One sample of one record, as a results line in pybench's fields plus an "mlbench" object: the answer, the
    static verdict, the execution outcome, and ML-Bench's verdict beside ours (ML-Bench counts a timeout as a pass)."""
    started = time.monotonic()
    name = task.id if samples == 1 else f"{task.id}.s{sample}"
    output = Path("outputs") / name
    work = run_dir / output
    log_dir = run_dir / "jails"
    facts: dict = {"setting": setup.setting, "type": task.record["type"], "repo": task.repo}
    usage, restarts = Reply(None), 0  # what the tokens are read from: the agent's run, or the model's one reply
    printed = None
    if setup.agent:
        run, outcome, runs, run_output = run_agent(task, model, setup, work, limits, max_turns, log_dir, seed, name)
        messages, code, printed, ended_by = run.messages, run.code, run.printed, run.ended_by
        usage, restarts = run, run.restarts
        passed, ours_reason = honest_verdict(outcome, runs, "bash run.sh")
        mlbench_passed = outcome in AGENT_PASSES_OPENHANDS
        facts |= {"outcome": outcome, "task_runs": runs, "run_output": run_output}
    else:
        if setup.output_replay:
            answer = setup.output_replay.answer(task.id, sample)
            messages, ended_by = [], "replayed" if answer is not None else "no sample in the replay"
            answer = answer or ""
            facts["samples_in_file"] = len(setup.output_replay.answers[task.id])
        else:
            messages = [{"role": "user", "content": setup.prompt(task)}]
            with contextlib.closing(model.attempt(task.id, seed)) as session:
                usage = session.reply(messages)
            if usage.text is not None:
                messages.append({"role": "assistant", "content": usage.text})
            answer, ended_by = extract_answer(usage.text or ""), usage.stop or "reply"
        code = [answer]
        static, ours_reason = static_verdict(answer, task.arguments, task.record["type"])
        facts |= {"answer": answer, "static": static}
        passed = mlbench_passed = static
        if setup.execute and static:
            outcome, runs, run_output = execute(task, answer, setup, work, limits, log_dir, name)
            passed, ours_reason = honest_verdict(outcome, runs, "executed")
            facts |= {"outcome": outcome, "task_runs": runs, "run_output": run_output}
        if setup.shared:  # ML-Bench's evaluator drops a record of other than 5 samples before it runs anything
            kept = facts.get("samples_in_file", SAMPLES) == SAMPLES
            facts["mlbench_outcome"] = theirs = setup.shared.turn(task, sample, answer if static and kept else None)
            mlbench_passed = theirs in ("exit 0", "timeout")
    facts["mlbench_passed"] = mlbench_passed
    removed = tidy_output(work) if work.is_dir() else []
    return Result(task.id, task.category, sample, seed, passed, ours_reason, task.caveats,
                  sum(message["role"] == "assistant" for message in messages) or 1, ended_by, sum(piece is not None for piece in code),
                  restarts, round(time.monotonic() - started, 3), usage.prompt_tokens, usage.completion_tokens,
                  str(output), removed, messages, code, printed, prompt_tokens_evaluated=usage.prompt_evaluated or None,
                  prompt_tokens_shared=usage.prompt_shared if usage.prompt_evaluated else None, own={"mlbench": facts})


# --- tables: ML-Bench's pass@1/2/5 and the unbiased pass@k, per repository and overall ---------------------------

def figures(attempts: list[list[Result]], key) -> list[str]:
    """For tasks given as lists of their attempts: ML-Bench's pass@1/2/5 (any of the first k samples passes) and the
    unbiased pass@1/2/5 (1 - C(n-c, k)/C(n, k), over the tasks with at least k samples), in % ("-" for no tasks)."""
    def percent(values: list) -> str:
        return f"{100 * sum(values) / len(values):.1f}" if values else "-"
    return ([percent([any(key(r) for r in task if r.sample < k) for task in attempts]) for k in PASS_AT]
            + [percent([pass_at_k(len(task), sum(map(key, task)), k) for task in attempts if len(task) >= k])
               for k in PASS_AT])


def table_blocks(results: list[Result]) -> tuple[list[tuple[str, list[str], list[tuple[str, list[str]]]]], list[str]]:
    """The ML-Bench tables, one per verdict (ML-Bench's; ours where answers ran): (title, columns, rows); the notes."""
    tasks = attempts_by_task(results)
    executed = any("outcome" in result.own.get("mlbench", {}) for result in results)
    groups = {}
    for attempts in tasks.values():
        groups.setdefault(attempts[0].category, []).append(attempts)
    fair = [attempts for attempts in tasks.values() if not attempts[0].caveats]
    chosen = [*sorted(groups.items()), ("overall", list(tasks.values())), ("overall, honest", fair)]
    # ML-Bench's evaluator drops a record of its output format that holds other than 5 samples: so does its count here
    counted = lambda attempts: attempts[0].own.get("mlbench", {}).get("samples_in_file", SAMPLES) == SAMPLES  # noqa: E731
    verdicts = [("ML-Bench's count" + (" (a timeout counts as a pass)" if executed else ""),
                 lambda r: bool(r.own.get("mlbench", {}).get("mlbench_passed", r.passed)),
                 [(label, [attempts for attempts in group if counted(attempts)]) for label, group in chosen])]
    if executed:
        verdicts.append(("ours (exit 0, and the task's own script traced exiting 0)", lambda r: bool(r.passed), chosen))
    columns = ["tasks"] + [f"pass@{k}" for k in PASS_AT] + [f"unbiased@{k}" for k in PASS_AT]
    blocks = [(title, columns, [(label, [str(len(group)), *figures(group, key)]) for label, group in rows])
              for title, key, rows in verdicts]
    notes = [f"pass@k: any of the first k samples passes, as ML-Bench counts it; unbiased@k: 1 - C(n-c,k)/C(n,k) over the tasks "
             f"with at least k samples. {max(map(len, tasks.values()), default=0)} sample(s) per task."]
    if dropped := sum(not counted(attempts) for attempts in tasks.values()):
        notes.append(f"{dropped} record(s) of the replay hold other than {SAMPLES} samples: ML-Bench's evaluator drops them, so its "
                     "count leaves them out" + ("; ours scores the samples they have (a missing one fails)." if len(verdicts) > 1 else "."))
    if aside := len(tasks) - len(fair):
        notes.append(f"overall, honest: {aside} task(s) set aside whose reference output fails ML-Bench's own static check.")
    if executed:
        outcomes = Counter(result.own.get("mlbench", {}).get("outcome", "not run (static check failed)") for result in results)
        notes.append("Outcomes of the samples: " + ", ".join(f"{name} {count}" for name, count in outcomes.most_common()))
    return blocks, notes


def tables(results: list[Result], manifests: list[dict]) -> Tables:
    """ML-Bench's tables replace the paper's Table 3 in the report and on the terminal."""
    blocks, notes = table_blocks(results)
    sections = [{"heading": f"ML-Bench: pass@k (%) per repository, {heading}", "corner": "repository", "columns": columns,
                 "rows": [(name, cells, name.startswith("overall")) for name, cells in rows], "notes": []} for heading, columns, rows in blocks]
    sections[-1]["notes"] = notes
    lines = []
    for title, columns, rows in blocks:
        width = max(len(name) for name, _ in rows)
        widths = [max(len(column), *(len(cells[i]) for _, cells in rows)) for i, column in enumerate(columns)]
        lines += [f"{title}:", "  ".join([" " * width, *(column.rjust(w) for column, w in zip(columns, widths))])]
        lines += ["  ".join([name.ljust(width), *(cell.rjust(w) for cell, w in zip(cells, widths))]) for name, cells in rows]
    return Tables("\n".join(lines + notes), sections, replaces_table3=True, title="ML-Bench")


# --- the benchmark record --------------------------------------------------------------------------------------------

def prepare(settings: Settings, split: Path) -> Prepared:
    tasks = load_split(split)
    setup = setup_from(settings)
    defaults = {"temperature": 1.0, "top_p": 1.0, "max_tokens": 1000, "samples": 1 if setup.agent else SAMPLES, "max_turns": 10}

    def attempts(settings: Settings, model, run_dir: Path, limits: JailLimits, todo: list):
        setup.shared = SharedPass(setup, run_dir, limits, todo) if setup.execute else None

        def attempt(task, sample):
            try:
                return run_one(task, sample, settings.samples, settings.seed + sample, model, setup, run_dir, limits, settings.max_turns)
            finally:
                if setup.shared:  # an attempt that failed must not hold up the samples after it
                    setup.shared.release((task.id, sample))
        return attempt
    return Prepared(tasks, defaults, split.parent, [split], lambda path, task_ids: replay_model(path, task_ids, setup), attempts,
                    to_run=lambda selected, model: tasks_to_run(selected, setup))


BENCHMARK = Benchmark("mlbench", claims=is_split, prepare=prepare, tables=tables,
                      made=lambda results, manifests: any("mlbench" in result.own for result in results),
                      flags=("mlbench_checkout", "repos", "repo_python", "model_cache", "execute", "mlbench_agent", "mlbench_setting",
                             "mlbench_tmp", "as_openhands"),
                      given_elsewhere="an ML-Bench split only: give one with --tasks SPLIT.parquet (or .jsonl)")
