"""llama.cpp on a GPU: building llama-cpp-python with a ggml GPU backend, and what that build sees at run time.

    python3.12 pybench.py setup --gpu cuda                          # NVIDIA
    python3.12 pybench.py setup --gpu vulkan                        # AMD, Intel (and any Vulkan driver)
    python3.12 pybench.py setup --gpu vulkan --venv .venv-vulkan    # a second venv beside the CPU one (the GPU tests)

build_wheel() compiles llama-cpp-python at requirements.txt's pin with one backend into a wheel folder of its own,
keyed by backend, pin and build flags (~/.cache/pybench/wheels/): pip's own cache, which keeps the CPU wheel, never
hands out one for the other, and a second setup reuses the GPU wheel instead of compiling again.

At run time: devices() lists the devices ggml sees (ggml's backend device API), llama_log() captures llama.cpp's own
account of an offload, and stop_on_backend_failure() turns a failure inside a backend (a ggml abort such as a CUDA
error, or an uncaught C++ exception such as Vulkan's DeviceLostError) into one line instead of a C backtrace.
Only the standard library is imported at the top: setup runs it before the venv exists.
"""

import contextlib
import ctypes
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

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
BUDGET_VARIABLE = "PYBENCH_GPU_MEMORY_GIB"  # at most this much GPU memory is counted as free (a shared or smaller GPU)
BUILD_FILE = "pybench-build.json"            # beside each wheel: how it was built


class BuildError(Exception):
    """A GPU build that cannot go ahead: one sentence saying what to do."""


def wheel_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pybench" / "wheels"


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


def build_wheel(backend: str, pin: str, pip_python: Path, install_packages) -> tuple[Path, dict]:
    """The wheel of `pin` (llama-cpp-python==X) built with `backend`, from the cache or compiled now, and its build
    facts. install_packages(packages, why, present) installs system packages (pybench.install_system_packages)."""
    extra = " ".join(arg for arg in os.environ.get("CMAKE_ARGS", "").split()  # the user's own flags (e.g. CUDA architectures)
                     if arg.lower() != BACKENDS[backend].lower())                 # go after the backend's
    cmake_args = " ".join(filter(None, [BACKENDS[backend], extra]))
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
    folder = wheel_cache() / f"{backend}-{pin.replace('==', '-')}-{key}"
    built = sorted(folder.glob("*.whl"))
    if built and (folder / BUILD_FILE).is_file():
        print(f"setup: the {backend} build of {pin} from {folder} (built before; delete the folder to build again)", flush=True)
        return built[0], json.loads((folder / BUILD_FILE).read_text())
    if patched:
        install_packages(["patch"], f"the Vulkan headers here are 1.3.{headers}, older than 1.3.261: setup patches ggml-vulkan",
                         lambda: shutil.which("patch"))
    with tempfile.TemporaryDirectory(prefix="pybench-gpu-build-") as scratch:
        pip = [str(pip_python), "-m", "pip", "--disable-pip-version-check"]
        subprocess.run(pip + ["download", "--no-deps", "--no-binary", ":all:", "-q", "-d", scratch, pin], check=True)
        archive, = Path(scratch).glob("*.tar.gz")
        with tarfile.open(archive) as sdist:
            sdist.extractall(scratch, filter="data")
        source, = (path for path in Path(scratch).iterdir() if path.is_dir())
        if patched:
            subprocess.run(["patch", "-p1", "--forward", "--batch", "-i", str(OLD_HEADERS_PATCH)], cwd=source, check=True)
        print(f"setup: building {pin} with CMAKE_ARGS=\"{cmake_args}\"{' and ' + OLD_HEADERS_PATCH.name if patched else ''} "
              f"(llama.cpp compiles from source: minutes)", flush=True)
        began = time.monotonic()
        subprocess.run(pip + ["wheel", "--no-deps", "-w", str(Path(scratch) / "wheel"), str(source)], check=True,
                       env={**os.environ, "CMAKE_ARGS": cmake_args})
        facts["build_seconds"] = round(time.monotonic() - began)
        wheel, = (Path(scratch) / "wheel").glob("*.whl")
        folder.mkdir(parents=True, exist_ok=True)
        shutil.move(wheel, folder / wheel.name)
        (folder / BUILD_FILE).write_text(json.dumps(facts, indent=1) + "\n")  # written last: a folder without it is rebuilt
    print(f"setup: built in {facts['build_seconds'] // 60} min {facts['build_seconds'] % 60} s: {folder / wheel.name}", flush=True)
    return folder / wheel.name, facts


def installed_build() -> dict | None:
    """How the llama-cpp-python of this interpreter was built, when it came from build_wheel (pip's record of the
    wheel it installed points into the wheel folder, where the build facts lie); None for a registry build."""
    import importlib.metadata
    import urllib.parse

    try:
        record = importlib.metadata.distribution("llama-cpp-python").read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        return None
    url = json.loads(record).get("url", "") if record else ""
    if not url.startswith("file://"):
        return None
    facts = Path(urllib.parse.unquote(urllib.parse.urlparse(url).path)).parent / BUILD_FILE
    return json.loads(facts.read_text()) if facts.is_file() else None


# --- run time: ggml's devices, llama.cpp's log, a backend's failure ---------------------------------------------

@dataclass
class Device:
    name: str          # ggml's name: Vulkan0, CUDA0, ...
    description: str   # the driver's: "NVIDIA GeForce RTX 4060 Laptop GPU", "llvmpipe (LLVM 15.0.6, 256 bits)"
    kind: str          # cpu, gpu, igpu, accel
    free: int
    total: int

    def __str__(self) -> str:
        return f"{self.name} ({self.description}, {self.free / 2**20:.0f} MiB free of {self.total / 2**20:.0f} MiB)"


@functools.cache
def ggml():
    """libggml of the installed llama-cpp-python, with the prototypes used here."""
    import llama_cpp

    lib = ctypes.CDLL(str(Path(llama_cpp.__file__).parent / "lib" / "libggml.so"))
    pointer, text, size = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t
    for name, restype, argtypes in (("ggml_backend_reg_count", size, []), ("ggml_backend_reg_get", pointer, [size]),
                                    ("ggml_backend_reg_name", text, [pointer]), ("ggml_backend_dev_count", size, []),
                                    ("ggml_backend_dev_get", pointer, [size]), ("ggml_backend_dev_name", text, [pointer]),
                                    ("ggml_backend_dev_description", text, [pointer]), ("ggml_backend_dev_type", ctypes.c_int, [pointer]),
                                    ("ggml_backend_dev_memory", None, [pointer, ctypes.POINTER(size), ctypes.POINTER(size)])):
        function = getattr(lib, name)
        function.restype, function.argtypes = restype, argtypes
    return lib


def backends() -> list[str]:
    """The ggml backends this llama.cpp was built with (CPU always; Vulkan, CUDA, Metal...)."""
    lib = ggml()
    return [lib.ggml_backend_reg_name(lib.ggml_backend_reg_get(number)).decode() for number in range(lib.ggml_backend_reg_count())]


def devices() -> list[Device]:
    lib, found = ggml(), []
    for number in range(lib.ggml_backend_dev_count()):
        device = lib.ggml_backend_dev_get(number)
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        lib.ggml_backend_dev_memory(device, ctypes.byref(free), ctypes.byref(total))
        kind = {0: "cpu", 1: "gpu", 2: "igpu", 3: "accel"}.get(lib.ggml_backend_dev_type(device), "other")
        found.append(Device(lib.ggml_backend_dev_name(device).decode(), lib.ggml_backend_dev_description(device).decode(),
                            kind, free.value, total.value))
    return found


def gpus() -> list[Device]:
    return [device for device in devices() if device.kind in ("gpu", "igpu")]


def memory_budget() -> int | None:
    """PYBENCH_GPU_MEMORY_GIB in bytes, or None when unset."""
    value = os.environ.get(BUDGET_VARIABLE)
    if not value:
        return None
    try:
        return int(float(value) * 2**30)
    except ValueError:
        raise ValueError(f"{BUDGET_VARIABLE}={value!r} is not a number of GiB") from None


def why_no_gpu() -> str:
    """Why llama.cpp offloads nothing here, in words."""
    built = [name for name in backends() if name not in ("CPU", "BLAS", "RPC")]
    if not built:
        return 'this llama.cpp build has no GPU backend; rebuild it: python3.12 pybench.py setup --gpu cuda (or vulkan)'
    if "Vulkan" in built and "GGML_VK_VISIBLE_DEVICES" not in os.environ:
        return ("the Vulkan backend sees no GPU (it skips CPU-type Vulkan devices such as lavapipe unless "
                "GGML_VK_VISIBLE_DEVICES names them, e.g. GGML_VK_VISIBLE_DEVICES=0)")
    return f"the {'/'.join(built)} backend sees no GPU (check the driver: nvidia-smi, vulkaninfo --summary)"


@contextlib.contextmanager
def llama_log():
    """llama.cpp's and ggml's log lines while the block runs (a list of str), whatever the verbosity; its own
    callback (llama-cpp-python's, which prints only errors when verbose=False) is put back afterwards."""
    import llama_cpp
    import llama_cpp._logger

    lines: list[str] = []

    @llama_cpp.llama_log_callback
    def keep(level, text, user_data):
        lines.append(text.decode("utf-8", errors="replace"))
        llama_cpp._logger.llama_log_callback(level, text, user_data)  # errors still reach stderr as before

    llama_cpp.llama_log_set(keep, ctypes.c_void_p(0))
    try:
        yield lines
    finally:
        llama_cpp.llama_log_set(llama_cpp._logger.llama_log_callback, ctypes.c_void_p(0))


def offloaded_layers(log: list[str]) -> tuple[int, int] | None:
    """(layers offloaded, layers in all) as llama.cpp's loader reported them ("offloaded 31/31 layers to GPU")."""
    found = re.search(r"offloaded (\d+)/(\d+) layers to GPU", "".join(log))
    return (int(found[1]), int(found[2])) if found else None


def device_buffers(log: list[str]) -> dict[str, float]:
    """MiB per buffer llama.cpp allocated, as its log names them ("Vulkan0 model buffer size = 74.59 MiB")."""
    return {f"{name} {what}": float(mib) for name, what, mib in
            re.findall(r"(\S+) (model|KV|compute) buffer size =\s*([\d.]+) MiB", "".join(log))}


FAILURE_EXIT = 4
_keep_alive = []  # the ctypes callbacks must outlive every call into llama.cpp


def stop_on_backend_failure() -> None:
    """From now on a failure inside llama.cpp ends the process with one line on stderr and exit status 4, instead of
    ggml's C backtrace: a ggml abort (GGML_ASSERT; CUDA errors take this path) through ggml's abort callback, an
    uncaught C++ exception (ggml-vulkan throws vk::DeviceLostError, vk::OutOfDeviceMemoryError) through
    std::terminate. Nothing of llama.cpp is called from here, as it may be what failed."""
    def stop(what: str) -> None:
        sys.stdout.flush()
        print(f"error: llama.cpp failed: {what}. The run stops; finished attempts are kept in results.jsonl and the same command "
              f"resumes; on a GPU, --n-gpu-layers 0 runs on the CPU (docs/gpu.md)", file=sys.stderr, flush=True)
        os._exit(FAILURE_EXIT)

    abort_callback = ctypes.CFUNCTYPE(None, ctypes.c_char_p)(lambda message: stop(message.decode(errors="replace").strip()))
    ggml().ggml_set_abort_callback.argtypes = [ctypes.c_void_p]
    ggml().ggml_set_abort_callback(ctypes.cast(abort_callback, ctypes.c_void_p))
    cxx = ctypes.CDLL("libstdc++.so.6")
    cxx.__cxa_current_exception_type.restype = ctypes.c_void_p
    cxx.__cxa_demangle.restype = ctypes.c_char_p
    cxx.__cxa_demangle.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]

    def terminate() -> None:
        exception = cxx.__cxa_current_exception_type()  # a std::type_info: its second word is the mangled name
        mangled = ctypes.cast(exception + ctypes.sizeof(ctypes.c_void_p), ctypes.POINTER(ctypes.c_char_p))[0] if exception else None
        name = cxx.__cxa_demangle(mangled.lstrip(b"*"), None, None, ctypes.byref(ctypes.c_int())) if mangled else None
        stop(f"an uncaught C++ exception{' (' + name.decode() + ')' if name else ''} in its backend; the ggml line above, if any, says more")

    terminate_handler = ctypes.CFUNCTYPE(None)(terminate)
    cxx._ZSt13set_terminatePFvvE.argtypes = [ctypes.c_void_p]
    cxx._ZSt13set_terminatePFvvE(ctypes.cast(terminate_handler, ctypes.c_void_p))
    _keep_alive[:] = [abort_callback, terminate_handler]
