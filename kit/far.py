"""far: the jails on a far side, a Linux machine reached through one link (`--far "ssh HOST"`, `--far "limactl shell
NAME"`): for a host that cannot run nsjail (a Mac) or may not (no user namespaces). The far side runs this kit's own
sandbox.Jail, unchanged, in a server (`pybench.py far-serve`, started by the host through the link's command, once per
attempt thread, for the whole run); the host's FarJail has Jail's interface and forwards each call. Every limit is
enforced by the far side's jail; the host never runs a cell.

The link is one byte stream each way, in frames; the jail's read-only binds go there as a tar in "open", its output/
comes back as a tar in "close", never a shared mount (docs/jail.md, "On a far side"). A far side that goes away,
garbles a frame or stops answering ends the attempt with one line (a JailError); the run is resumable. Of the kit's
own it imports sandbox (the jail, the output walks), settings (the parser) and untrusted.
"""

import atexit
import io
import json
import os
import select
import shlex
import shutil
import stat
import subprocess
import tarfile
import tempfile
import threading
import time
from pathlib import Path

from kit import sandbox
from kit.sandbox import ROOT, INTERRUPT_GRACE, WORKER_START, CellResult, Jail, JailError, JailLimits
from kit.settings import OneLineParser
from kit.untrusted import cut, for_record

__all__ = ["HEADER_MAX", "LINK_SLACK", "LinkLost", "send", "receive", "Link", "FarJail", "use", "jail_side", "resume_note",
           "pack", "unpack", "FOLDER_PREFIX", "sweep_leftovers", "serve", "serve_command"]


# --- frames: a JSON header and a payload, each length-prefixed -----------------------------------------------------

HEADER_MAX = 64 * 2**20     # bytes of a frame's JSON header (a cell's result is bounded far below it)
LINK_SLACK = 30.0           # seconds the link may add to what the far side's jail may take (a cell's time, a restart)


class LinkLost(Exception):
    """The far side went away, garbled a frame or stopped answering."""


def send(fd: int, header: dict, payload: bytes = b"") -> None:
    """One frame: 4 bytes of header length, the header as JSON, 8 bytes of payload length, the payload."""
    data = json.dumps(header, ensure_ascii=False).encode()
    message = memoryview(b"".join([len(data).to_bytes(4, "big"), data, len(payload).to_bytes(8, "big"), payload]))
    try:
        while message:
            message = message[os.write(fd, message):]
    except OSError as error:
        raise LinkLost(f"the link broke while sending ({error.strerror})") from None


def receive(fd: int, payload_max: int, seconds: float | None = None) -> tuple[dict, bytes]:
    """One whole frame, within seconds (None: however long it takes); LinkLost if the link closes, stalls past its time,
    or sends what cannot be a frame (a header past HEADER_MAX, a payload past payload_max, a header that is no JSON
    object)."""
    deadline = None if seconds is None else time.monotonic() + seconds
    size = int.from_bytes(read_exactly(fd, 4, deadline), "big")
    if size > HEADER_MAX:
        raise LinkLost(f"the far side sent a garbled frame (a header of {size} bytes)")
    try:
        header = json.loads(read_exactly(fd, size, deadline))
    except ValueError:
        header = None
    if not isinstance(header, dict):
        raise LinkLost("the far side sent a garbled frame (its header is no JSON object)")
    size = int.from_bytes(read_exactly(fd, 8, deadline), "big")
    if size > payload_max:
        raise LinkLost(f"the far side sent {size} bytes where at most {payload_max} may come")
    return header, read_exactly(fd, size, deadline)


def read_exactly(fd: int, count: int, deadline: float | None) -> bytes:
    data = bytearray()
    while len(data) < count:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise LinkLost("the far side stopped answering")
        chunk = os.read(fd, min(count - len(data), 1 << 20))
        if not chunk:
            raise LinkLost("the link closed" + (" in the middle of a frame" if data else ""))
        data += chunk
    return bytes(data)


# --- files in the link: a tar of the binds going there, of output/ coming back -------------------------------------

def pack(sources: list[Path], budget: int, names: list[str] | None = None) -> bytes:
    """A tar of these files and folders, the i-th named "i" or names[i] (a folder's entries "i/...", "./..." for a
    folder named "." whose entries go straight into the folder it is unpacked in): walked as sandbox walks
    output/ (by fd, no link followed, any depth), links kept as links, at most budget bytes of file data (a file past
    it is cut)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for source, root in zip(sources, names or map(str, range(len(sources)))):
            if not source.is_dir():
                with open(source, "rb") as handle:
                    budget -= add_member(tar, root, handle, budget)
                continue
            if root != ".":
                tar.addfile(directory_member(root))
            for fd, name, info, parts in sandbox.walk_tree(source):
                budget -= add_entry(tar, fd, name, info, "/".join([root, *parts]), budget)
    return buffer.getvalue()


def directory_member(name: str) -> tarfile.TarInfo:
    member = tarfile.TarInfo(name)
    member.type, member.mode = tarfile.DIRTYPE, 0o755
    return member


def add_entry(tar: tarfile.TarFile, fd: int, name: str, info: os.stat_result, path: str, budget: int) -> int:
    """One entry of a walked folder into tar: a folder, a link, a regular file (nothing else); the data bytes added."""
    if stat.S_ISDIR(info.st_mode):
        tar.addfile(directory_member(path))
    elif stat.S_ISLNK(info.st_mode):
        member = tarfile.TarInfo(path)
        member.type, member.linkname = tarfile.SYMTYPE, os.readlink(name, dir_fd=fd)
        tar.addfile(member)
    elif stat.S_ISREG(info.st_mode):
        try:
            handle = os.fdopen(os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd), "rb")
        except OSError:
            return 0
        with handle:
            return add_member(tar, path, handle, budget)
    return 0


def add_member(tar: tarfile.TarFile, path: str, handle, budget: int) -> int:
    member, info = tarfile.TarInfo(path), os.fstat(handle.fileno())
    member.size, member.mode, member.mtime = max(0, min(info.st_size, budget)), info.st_mode & 0o755, int(info.st_mtime)
    tar.addfile(member, handle)
    return member.size


def unpack(data: bytes, into: Path) -> list[str]:
    """Extract a tar from the other side into the folder into, member by member through tarfile's "data" filter (no
    absolute path, no "..", no link leading out, no device, no setuid): a member it refuses, or that cannot be
    written (a path past PATH_MAX), is left out and named in what this returns."""
    refused = []
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        for member in tar:
            try:
                tar.extract(member, into, filter="data")
            except (tarfile.TarError, OSError) as error:
                refused.append(f"{for_record(member.name, 300)} ({type(error).__name__})")
    return refused


# --- the host's side: one link per attempt thread, a FarJail per jail -----------------------------------------------

class Link:
    """One link to a far side's server: the frames go on fds (a process's pipes, or, in tests, a thread's)."""

    def __init__(self, to_far: int, from_far: int, process: subprocess.Popen | None = None, errors=None):
        self.to_far, self.from_far, self.process, self.errors = to_far, from_far, process, errors

    @classmethod
    def spawn(cls, command: list[str]) -> "Link":
        """The far side's server through command (ssh HOST, limactl shell NAME): the command, and this checkout's server
        at the same path there, unless the command names the server itself (`... pybench.py far-serve`)."""
        server = [] if "far-serve" in command else [str(ROOT / ".venv" / "bin" / "python"), str(ROOT / "pybench.py"), "far-serve"]
        errors = tempfile.TemporaryFile()
        try:
            # in the run's process group: Ctrl-C ends the link too, so the far cells in flight end with it (Jail.kill_workers)
            process = subprocess.Popen([*command, *map(shlex.quote, server)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=errors)
        except OSError as error:
            raise JailError(f"--far {shlex.join(command)}: {error.strerror}: name a command that reaches a Linux far side") from None
        return cls(process.stdin.fileno(), process.stdout.fileno(), process, errors)

    def ask(self, header: dict, payload: bytes = b"", seconds: float = LINK_SLACK, payload_max: int = 0) -> tuple[dict, bytes]:
        """Send a request and wait for its answer; LinkLost if the far side went away, garbled it or stopped answering."""
        send(self.to_far, header, payload)
        return receive(self.from_far, payload_max, seconds)

    def last_words(self) -> str:
        """The last line the far side's command wrote on its stderr (ssh's own reason, a server's traceback)."""
        if self.errors is None:
            return ""
        self.errors.seek(0)
        lines = [line for line in self.errors.read().decode(errors="replace").splitlines() if line.strip()]
        return cut(lines[-1], 300) if lines else ""

    def close(self) -> None:
        if self.process is None:  # a thread's link (tests): its end of the pipes
            for fd in (self.to_far, self.from_far):
                os.close(fd)
            return
        for pipe in (self.process.stdin, self.process.stdout):
            pipe.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.errors.close()


class FarJail:
    """sandbox.Jail's stand-in on the host: the same calls (start, run, call, kill), forwarded to a Jail on the far side.
    A link is taken from the idle ones (or opened) when the jail opens and handed back when it is killed."""

    command: list[str] = []          # the far side's command (use sets it)
    opener = staticmethod(Link.spawn)  # how a new link is opened (tests open in-process ones)
    idle: list[Link] = []
    lock = threading.Lock()

    def __init__(self, name: str, binds: list[tuple[str, str, bool]], limits: JailLimits, log_dir: Path,
                 output_dir: Path | None = None, environment: str = "suite"):
        self.name, self.binds, self.limits, self.log_dir = name, binds, limits, log_dir
        self.output_dir, self.environment, self.link = output_dir, environment, None

    def start(self) -> None:
        self.ask({"op": "start"}, seconds=WORKER_START + LINK_SLACK)

    def run(self, code: str, timeout: float | None = None, call: str = "") -> CellResult:
        """A cell (or a kit call) run by the far side's jail, which enforces its time; the link gets its own slack."""
        timeout = timeout or self.limits.cell_timeout
        answer, _ = self.ask({"op": "run", "code": code, "timeout": timeout, "call": call},
                             seconds=timeout + INTERRUPT_GRACE + WORKER_START + LINK_SLACK)
        return CellResult(**{key: answer[key] for key in vars(CellResult("")) if key in answer})

    call = Jail.call

    def kill(self) -> None:
        """End the far jail; its output/ comes back into output_dir, its log into log_dir."""
        if self.link is None:
            return
        # a tar of output/ may take its cap, and room for every entry's headers
        budget = self.limits.output_mib * 2**20 + (self.limits.output_files + 16) * 3 * 512 if self.output_dir else 0
        answer, payload = self.ask({"op": "close"}, payload_max=budget)
        link, self.link = self.link, None
        with FarJail.lock:
            FarJail.idle.append(link)
        (self.log_dir / f"{self.name}.log").write_text(answer.get("log", ""), encoding="utf-8")
        if self.output_dir and payload:
            unpack(payload, self.output_dir)

    def ask(self, header: dict, payload: bytes = b"", seconds: float = LINK_SLACK,
            payload_max: int = 0) -> tuple[dict, bytes]:
        """A request to this jail's far side (opened first). A lost link (closed; the run is resumable) or a refusal
        (a jail that cannot start there, files it cannot unpack) ends the attempt with one line, JailError."""
        if self.link is None:
            self.open()
        try:
            answer, payload = self.link.ask(header, payload, seconds, payload_max)
        except LinkLost as lost:
            link, self.link = self.link, None
            said = link.last_words()
            link.close()
            raise JailError(f"the far side ({shlex.join(self.command)}) was lost during {self.name}: {lost}"
                            f"{f' ({said})' if said else ''}; finished attempts are kept and the same command "
                            "resumes the run")
        if "refused" in answer:
            raise JailError(f"on the far side ({shlex.join(self.command)}): {cut(str(answer['refused']), 1000)}")
        return answer, payload

    def open(self) -> None:
        with FarJail.lock:
            self.link = FarJail.idle.pop() if FarJail.idle else None
        self.link = self.link or self.opener(self.command)
        readable = [Path(host) for host, _, writable in self.binds if not writable]
        header = {"op": "open", "name": self.name, "limits": vars(self.limits), "environment": self.environment,
                  "binds": [[inside, writable, host == str(self.output_dir)] for host, inside, writable in self.binds]}
        size = sum(sandbox.folder_usage(path, 10**9)[0] if path.is_dir() else path.stat().st_size for path in readable)
        self.ask(header, pack(readable, size), seconds=LINK_SLACK)


def use(far: str | None) -> dict:
    """Where a run's jails run: here (far None), or through this command (a link is opened and asked what it is).
    The manifest's "jail_side": the command, the far side's machine architecture and name."""
    if not far:
        sandbox.far_jail = None
        return jail_side()
    FarJail.command = shlex.split(far)
    link = FarJail.opener(FarJail.command)
    try:
        answer, _ = link.ask({"op": "hello"})
    except LinkLost as lost:
        said = link.last_words()
        link.close()
        raise JailError(f"--far {far}: no far side answered ({lost}{f': {said}' if said else ''}); "
                        "check that the command reaches a Linux machine holding this checkout (docs/macos.md)") from None
    with FarJail.lock:
        FarJail.idle.append(link)
    atexit.register(close_links)
    sandbox.far_jail = FarJail
    return {"far": far} | {key: answer.get(key) for key in ("machine", "node", "system")}


def jail_side() -> dict:
    """This machine as a jail side: what "hello" answers on a far side."""
    return {"far": None, "machine": os.uname().machine, "node": os.uname().nodename, "system": os.uname().sysname}


def close_links() -> None:
    with FarJail.lock:
        links, FarJail.idle[:] = list(FarJail.idle), []
    for link in links:
        link.close()


def resume_note(earlier: dict, now: dict) -> str:
    """A line where a run resumes with its jails on another side than it began with ("" where the same)."""
    before, after = earlier.get("jail_side"), now.get("jail_side")
    if not earlier or before == after:
        return ""
    def said(side):
        return "unknown" if not side else f"{side.get('far') or 'here'} ({side.get('node')}, {side.get('machine')})"
    return f"note: this run began with its jails on {said(before)} and resumes with them on {said(after)}"


# --- the far side: a server holding one jail at a time, for the link it was started on -----------------------------

FOLDER_PREFIX = "pybench-far-"  # a far jail's folder in the temp folder: pybench-far-<server pid>-XXXX


def sweep_leftovers() -> None:
    """Remove the folders (and their ./output/ mounts) of servers that died without cleaning up (killed, or their
    machine stopped): any whose server pid is no longer running."""
    for folder in Path(tempfile.gettempdir()).glob(f"{FOLDER_PREFIX}*-*"):
        pid = folder.name.removeprefix(FOLDER_PREFIX).split("-")[0]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            for entry in folder.iterdir():
                sandbox.remove_tree(entry)  # a mount of ours is unmounted first
            folder.rmdir()


class FarSide:
    """The far side's state: the jail now open, in a private folder of its own (inputs, output/, logs)."""

    def __init__(self):
        self.jail, self.folder, self.output = None, None, None

    def hello(self, header: dict, payload: bytes) -> tuple[dict, bytes]:
        return jail_side() | {"pid": os.getpid()}, b""

    def open(self, header: dict, payload: bytes) -> tuple[dict, bytes]:
        """A jail of the host's limits and environment, its read-only binds from the tar, its writable ones empty."""
        self.close({}, b"")
        self.folder = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-"))
        (self.folder / "in").mkdir()
        (self.folder / "logs").mkdir()
        refused = unpack(payload, self.folder / "in")
        if refused:
            shutil.rmtree(self.folder, ignore_errors=True)
            return {"refused": f"the task's files could not be unpacked: {', '.join(refused[:5])}"}, b""
        binds, inputs, limits = [], iter(range(len(header["binds"]))), JailLimits(**header["limits"])
        for inside, writable, is_output in header["binds"]:
            if writable:
                source = self.folder / ("output" if is_output else f"w{len(binds)}")
                source.mkdir()
                if os.geteuid() == 0 and not sandbox.mount_output(source, limits):
                    os.chown(source, 65534, 65534)
                self.output = source if is_output else self.output
            else:
                source = self.folder / "in" / str(next(inputs))
            binds.append((str(source), inside, writable))
        self.jail = Jail(header["name"], binds, limits, self.folder / "logs", self.output, header["environment"])
        return {}, b""

    def start(self, header: dict, payload: bytes) -> tuple[dict, bytes]:
        self.jail.start()
        return {}, b""

    def run(self, header: dict, payload: bytes) -> tuple[dict, bytes]:
        return vars(self.jail.run(header["code"], header["timeout"], header["call"])), b""

    def close(self, header: dict, payload: bytes) -> tuple[dict, bytes]:
        """Kill the jail; its output/ (tidied as the host tidies it) and its log go back; the folder goes."""
        if self.jail is None:
            return {}, b""
        jail, self.jail = self.jail, None
        jail.kill()
        log, data = self.folder / "logs" / f"{jail.name}.log", b""
        answer = {"log": cut(log.read_text(errors="replace"), 100_000) if log.is_file() else ""}
        if self.output is not None:
            sandbox.tidy_output(self.output)
            data = pack([self.output], jail.limits.output_mib * 2**20, ["."])
            sandbox.remove_tree(self.output)
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder = self.output = None
        return answer, data


def serve(from_host: int, to_host: int) -> None:
    """Answer the host's frames until the link closes; then the open jail goes, with everything it started."""
    side = FarSide()
    try:
        while True:  # until the link is lost (receive, send)
            header, payload = receive(from_host, 2**31)
            handler = getattr(side, str(header.get("op")), None) if header.get("op") in OPERATIONS else None
            try:
                answer = handler(header, payload) if handler else ({"refused": f"no such request: {header.get('op')!r}"}, b"")
            except (JailError, OSError, KeyError, TypeError) as error:
                answer = {"refused": f"{type(error).__name__}: {error}"}, b""
            send(to_host, *answer)
    except LinkLost:
        return
    finally:
        side.close({}, b"")


OPERATIONS = ("hello", "open", "start", "run", "close")


def serve_command(argv: list[str]) -> int:
    """`pybench.py far-serve`: the far side of a link, on stdin and stdout. Nothing else may write on stdout, so the
    frames go on a copy of it and fd 1 is pointed at stderr."""
    OneLineParser(prog="pybench.py far-serve", description="The far side of --far: this checkout's jails, served on stdin "
                  "and stdout to the host that started it through its --far command (never by hand).").parse_args(argv)
    to_host = os.dup(1)
    os.dup2(2, 1)
    sweep_leftovers()
    serve(0, to_host)
    return 0
