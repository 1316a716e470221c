"""gpu: building llama-cpp-python with a ggml GPU backend (setup's side; what the build sees at run time, its devices,
its load log and its failures, is engine.py's). `setup --gpu cuda|vulkan|metal`: docs/gpu.md.

build_wheel() compiles llama-cpp-python at requirements.txt's pin into a wheel folder keyed by backend, pin and flags
(~/.cache/pybench/wheels/; pip's cache keeps the CPU wheel), which a second setup reuses.

Only the standard library is imported at the top: setup runs it before the venv exists.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

__all__ = ["BuildError", "machine_gpu", "backend_named_in", "build_wheel", "installed_metadata", "installed_from", "installed_build"]

HERE = Path(__file__).resolve().parent
BACKENDS = {"cuda": "-DGGML_CUDA=on", "vulkan": "-DGGML_VULKAN=on", "metal": "-DGGML_METAL=on"}
# Debian/Ubuntu packages a Vulkan build needs: the loader and headers, the shader compilers, SPIR-V headers; Mesa's
# drivers (radv for AMD, anv for Intel, lavapipe on the CPU) and vulkaninfo, to see what the machine offers.
VULKAN_PACKAGES = ["libvulkan-dev", "glslc", "glslang-tools", "spirv-headers", "mesa-vulkan-drivers", "vulkan-tools"]
# ggml-vulkan as vendored by llama-cpp-python 0.3.36 configures the validation layer through VK_EXT_layer_settings,
# whose C++ types arrived with Vulkan headers 1.3.261; Debian 12 ships 1.3.239. The patch puts that block under
# `#if VK_HEADER_VERSION >= 261`, so it changes nothing where the headers are newer (and nothing in a CUDA build).
OLD_HEADERS_PATCH = HERE / "patches" / "ggml-vulkan-headers-before-1.3.261.patch"
LAYER_SETTINGS_HEADERS = 261
BUILD_FILE = "pybench-build.json"            # beside each wheel: how it was built


class BuildError(Exception):
    """A GPU build that cannot go ahead: one sentence saying what to do."""


# PCI vendors of the display controllers (PCI class 0x03) llama.cpp has a backend for; a server's BMC (ASPEED) or a
# virtual machine's VGA (QEMU, VMware, virtio) is none of them
GPU_VENDORS = {"0x10de": ("an NVIDIA GPU", "cuda"), "0x1002": ("an AMD GPU", "vulkan"), "0x8086": ("an Intel GPU", "vulkan")}


def machine_gpu(root: Path = Path("/")) -> tuple[str, str] | None:
    """A GPU of this machine, seen without llama.cpp (whose CPU-only build sees none): (what it is, the --gpu backend
    that uses it), from the kernel's PCI devices under root; Apple's GPU on macOS (Metal); None where there is none."""
    if sys.platform == "darwin":
        return "Apple's GPU", "metal"
    for device in sorted((root / "sys" / "bus" / "pci" / "devices").glob("*")):
        try:
            kind, vendor = (device / "class").read_text().strip(), (device / "vendor").read_text().strip()
        except OSError:
            continue
        if kind.startswith("0x03") and vendor in GPU_VENDORS:
            return GPU_VENDORS[vendor]
    return None


def backend_named_in(cmake_args: str) -> str | None:
    """The backend whose flag CMAKE_ARGS holds (-DGGML_CUDA=on: cuda), or None."""
    given = cmake_args.lower().split()
    return next((backend for backend, flag in BACKENDS.items() if flag.lower() in given), None)


def vulkan_header_version() -> int | None:
    """VK_HEADER_VERSION of the vulkan_core.h the compiler finds ($VULKAN_SDK/include first, as CMake looks), or None."""
    compiler = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if not compiler:
        return None
    include = [f"-I{os.environ['VULKAN_SDK']}/include"] if os.environ.get("VULKAN_SDK") else []
    probe = subprocess.run([compiler, "-E", "-x", "c++", *include, "-"], input="#include <vulkan/vulkan_core.h>\nVK_HEADER_VERSION\n",
                           capture_output=True, text=True)
    last = probe.stdout.strip().splitlines()[-1:] if probe.returncode == 0 else []
    return int(last[0]) if last and last[0].isdigit() else None


def build_wheel(backend: str, pin: str, pip_python: Path, install_packages, find_links: Path | None = None) -> tuple[Path, dict]:
    """The wheel of `pin` (llama-cpp-python==X) built with `backend`, from the cache or compiled now, and its build
    facts. install_packages(packages, why, present) installs system packages (pybench.install_system_packages). With
    find_links, pip reads that folder alone (its sdist and build requirements), no package index."""
    cmake_args = " ".join([BACKENDS[backend], *(arg for arg in os.environ.get("CMAKE_ARGS", "").split()  # the user's flags
                                                if arg.lower() != BACKENDS[backend].lower())])  # go after the backend's
    patched, headers = False, None
    if backend == "vulkan":
        install_packages(VULKAN_PACKAGES, "llama.cpp's Vulkan backend is built against them",
                         lambda: vulkan_header_version() is not None and shutil.which("glslc"))
        headers = vulkan_header_version()
        if headers is None:
            raise BuildError("no C++ compiler finds the Vulkan headers (vulkan/vulkan_core.h): install build-essential and "
                             "libvulkan-dev (or set VULKAN_SDK) and run setup again")
        patched = headers < LAYER_SETTINGS_HEADERS
    elif backend == "cuda" and not (shutil.which("nvcc") or os.environ.get("CUDACXX") or Path("/usr/local/cuda/bin/nvcc").exists()):
        raise BuildError("--gpu cuda needs NVIDIA's CUDA toolkit (nvcc on PATH, or CUDACXX): install it and run setup again")
    facts = {"backend": backend, "package": pin, "cmake_args": cmake_args, "vulkan_headers": headers,
             "patch": OLD_HEADERS_PATCH.name if patched else None}
    key = hashlib.sha256(json.dumps(facts, sort_keys=True).encode() + (OLD_HEADERS_PATCH.read_bytes() if patched else b"")).hexdigest()[:12]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pybench" / "wheels"
    folder = cache / f"{backend}-{pin.replace('==', '-')}-{key}"
    built = sorted(folder.glob("*.whl"))
    if built and (folder / BUILD_FILE).is_file():
        print(f"setup: the {backend} build of {pin} from {folder} (built before; delete the folder to build again)", flush=True)
        return built[0], json.loads((folder / BUILD_FILE).read_text())
    if patched:
        install_packages(["patch"], f"the Vulkan headers here are 1.3.{headers}, older than 1.3.261: setup patches ggml-vulkan",
                         lambda: shutil.which("patch"))
    with tempfile.TemporaryDirectory(prefix="pybench-gpu-build-") as scratch:
        pip = [str(pip_python), "-m", "pip", "--disable-pip-version-check"]
        offline = ["--no-index", "--find-links", str(find_links)] if find_links else []
        if subprocess.run(pip + ["download", "--no-deps", "--no-binary", ":all:", "-q", "-d", scratch, *offline, pin]).returncode:
            raise BuildError(f"pip found no source of {pin} in {find_links}: put its sdist there (pip download --no-deps --no-binary "
                             f":all: {pin}) with its build requirements" if find_links else f"pip could not download the source of {pin}")
        archive, = Path(scratch).glob("*.tar.gz")
        with tarfile.open(archive) as sdist:
            sdist.extractall(scratch, filter="data")
        source, = (path for path in Path(scratch).iterdir() if path.is_dir())
        if patched:
            subprocess.run(["patch", "-p1", "--forward", "--batch", "-i", str(OLD_HEADERS_PATCH)], cwd=source, check=True)
        print(f"setup: building {pin} with CMAKE_ARGS=\"{cmake_args}\"{' and ' + OLD_HEADERS_PATCH.name if patched else ''} "
              f"(llama.cpp compiles from source: minutes)", flush=True)
        began = time.monotonic()
        subprocess.run(pip + ["wheel", "--no-deps", *offline, "-w", str(Path(scratch) / "wheel"), str(source)], check=True,
                       env={**os.environ, "CMAKE_ARGS": cmake_args})
        facts["build_seconds"] = round(time.monotonic() - began)
        wheel, = (Path(scratch) / "wheel").glob("*.whl")
        folder.mkdir(parents=True, exist_ok=True)
        shutil.move(wheel, folder / wheel.name)
        (folder / BUILD_FILE).write_text(json.dumps(facts, indent=1) + "\n")  # written last: a folder without it is rebuilt
    print(f"setup: built in {facts['build_seconds'] // 60} min {facts['build_seconds'] % 60} s: {folder / wheel.name}", flush=True)
    return folder / wheel.name, facts


def installed_metadata(name: str, python: Path | None = None) -> str:
    """A file of llama-cpp-python's .dist-info (pip's direct_url.json, RECORD; "" where there is none), in this
    interpreter or in the venv of `python` (its site-packages read with importlib.metadata, nothing run)."""
    import importlib.metadata

    site = [str(folder) for folder in python.parent.parent.glob("lib/python3*/site-packages")] if python else sys.path
    distribution = next(iter(importlib.metadata.distributions(name="llama-cpp-python", path=site)), None)
    return (distribution.read_text(name) if distribution else None) or ""


def installed_from(python: Path | None = None) -> Path | None:
    """The local file pip installed llama-cpp-python from (direct_url.json, PEP 610: setup --gpu installs build_wheel's
    wheel), None for a registry's build."""
    import urllib.parse

    url = json.loads(installed_metadata("direct_url.json", python) or "{}").get("url", "")
    return Path(urllib.parse.unquote(urllib.parse.urlparse(url).path)) if url.startswith("file://") else None


def installed_build(python: Path | None = None) -> dict | None:
    """How the llama-cpp-python of this interpreter (or of the venv of `python`) was built, when it came from build_wheel
    (the build facts lie in the wheel folder it was installed from); None for a registry build."""
    wheel = installed_from(python)
    facts = wheel.parent / BUILD_FILE if wheel else None
    return json.loads(facts.read_text()) if facts and facts.is_file() else None
