"""Containment: hostile agent cells, each run as an agent cell through the real harness (pybench.py with the replay
model, real nsjail jails), and what must hold after each one.

Every attack is one task of a throwaway suite, played as four replies:

    1. a cell that prints the start time (T0) and sets up what the attack needs,
    2. the hostile cell,
    3. a follow-up cell that prints the time (T1), writes output/after.txt and prints "ALIVE <attack>",
    4. a final answer.

Each attack task is followed in the same run by a canary task (`<attack>-next`) that must pass. For every attack
the tests assert that
    (1) the specific escape did not happen (per attack, below),
    (2) the observation after the hostile cell says what happened (error, timeout, restart, what the probe saw),
    (3) the follow-up cell ran: its marker is in its observation,
    (4) the next task in the run ran and passed,
    (5) results.jsonl is intact: one valid JSON line per task, in order,
    (6) the host is unchanged: planted secret, input files, no stray files, no leftover processes
        (per attack where it is specific, and once for the whole module in test_host_is_unchanged).
"Seconds" is T1 - T0: from the start of the hostile cell until the next cell runs (the kill and the restart
included). `pytest -s` prints a table of the attacks, what the harness did, those seconds and the test's verdict.

Design choices this suite fixes (the harness must meet them; each is asserted where it applies):
  * OUTPUT CAP: a task's output/ may hold at most 2 GiB (the sum of the files' apparent sizes, so sparse files
    count at their full length) and 10,000 entries. A cell that goes past either has its worker killed and is
    told so (the observation names output/ and the limit), and what went past the cap is not kept: the run
    directory's outputs/<id>/ stays within the cap.
  * STDOUT FLOOD: a cell that prints 1 GiB is dealt with within its cell timeout (here 3 s, plus 1.5 s slack):
    the harness either drains it that fast or stops the cell; either way the observation says output was cut.
  * SYMLINKS: after a task, outputs/<id>/ holds no symbolic link whose target lies outside outputs/<id>/ (the
    harness removes or neutralises them), so nobody browsing the run directory is led to host files.
  * MUTE WORKER: a cell that closes its stdout/stderr (fds 1 and 2) must not leave the task mute: the next cell's
    print reaches the model (the worker restores its streams, or the harness restarts it).
"""
import functools
import hashlib
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kit import sandbox
from conftest import ROOT, code, write_jsonl

pytestmark = pytest.mark.slow  # every test here starts jails, models or whole runs

CELL_TIMEOUT = 3          # --cell-timeout for every run here
MEMORY_GIB = 1            # --memory for every run here
GRACE = sandbox.INTERRUPT_GRACE  # what docs/jail.md promises between SIGINT and the kill
SLACK = 1.5               # seconds of harness overhead allowed on top of a deadline
OUTPUT_CAP_BYTES = sandbox.JailLimits().output_mib * 2**20
OUTPUT_CAP_ENTRIES = sandbox.JailLimits().output_files
FILE_LIMIT = sandbox.JailLimits().file_mib * 2**20  # the jail's largest file
JAIL_USER = 65534         # the jail's uid (nobody)
TOKEN = secrets.token_hex(6)
# Unique durations, so that pgrep / a /proc scan can tell our orphans from anything else on the machine.
SLEEP_SETSID = f"4243.{int(TOKEN[:5], 16)}"
SLEEP_DOUBLE_FORK = f"4244.{int(TOKEN[:5], 16)}"
SLEEP_SENTINEL = f"4245.{int(TOKEN[:5], 16)}"

# What the harness must say when output/ goes past its cap: output/ named on the same line as a limit.
TOLD_OUTPUT_CAP = r"(?i)\boutput\b[^\n]*\b(cap|limit|at most|more than|exceed\w*|too (many|much|large|big))\b"
CLEAN_ERROR = r"(?m)^\w+(\.\w+)*(Error|Exception)\b|restarted"


# --- the suite: checks, probes and the attacks ----------------------------------------------------------------

CHECKS = '''# {check_token}: the agent must never be able to read this line.
import os
from pathlib import Path


def after_written(answer: str, output: Path, data: Path) -> None:
    """Verifies: the cell after the attack ran and wrote output/after.txt."""
    assert (output / "after.txt").read_text() == "ok", "output/after.txt is not 'ok'"


def answered(answer: str, output: Path, data: Path) -> None:
    """Verifies: the task reached its final answer (for attacks that may leave the interpreter unable to write)."""
    assert "DONE" in answer, "no final answer"


def total(answer: str, output: Path, data: Path) -> None:
    """Verifies: the answer states 10, the sum of numbers.csv."""
    assert "10" in answer.split(), "the answer should state 10"


def nothing_read_through_links(answer: str, output: Path, data: Path) -> None:
    """Verifies: a naive check that reads every file it finds in output/ (following links) reads nothing but
    after.txt: the links the agent left point at nothing the check jail can see."""
    read = []
    for name in sorted(os.listdir(output)):
        path = output / name
        if name != "after.txt" and path.is_file():
            read.append(f"{{name}}: {{path.read_text(errors='replace')[:100]!r}}")
    assert not read, "read through links: " + "; ".join(read)
    after_written(answer, output, data)


def libraries_are_real(answer: str, output: Path, data: Path) -> None:
    """Verifies: numpy, pandas and this suite's helpers module are the real ones, not the agent's output/numpy.py,
    output/pandas.py or output/helpers.py."""
    import helpers
    import numpy
    import pandas

    for module in (numpy, pandas, helpers):
        assert "/output/" not in (module.__file__ or ""), f"{{module.__name__}} was imported from {{module.__file__}}"
    assert helpers.ORIGIN == "checks", "helpers is the agent's"
    assert int(numpy.arange(5).sum()) == 10 and pandas.DataFrame({{"a": [1, 2]}}).a.sum() == 3
    after_written(answer, output, data)
'''

PROBE = '''
def probe(label, action):
    try:
        value = action()
    except BaseException as error:
        print(label, "BLOCKED", type(error).__name__)
    else:
        print(label, "OPEN", repr(value)[:160])
'''

CANARY = code("rows = open('data/numbers.csv').read().split()[1:]\nprint(sum(int(v) for row in rows for v in row.split(',')))")


@dataclass
class Attack:
    name: str
    group: str                 # attacks of one group share one pybench run
    cell: str                  # the hostile cell
    said: str | None           # regex the hostile cell's observation must match (None: anything)
    check: str = "after_written"
    prepare: str = ""          # runs in the cell before the attack
    after: str = ""            # runs in the follow-up cell, before it writes after.txt and prints its marker
    clean_error_ok: bool = False   # the follow-up may end in a clean error instead (interpreter-state attacks)

    def replies(self) -> list[str]:
        return [code(f"import time\nprint('T0', repr(time.time()))\n{self.prepare}"),
                code(self.cell),
                code(f"import time\nprint('T1', repr(time.time()))\n{self.after}\n"
                     f"open('/task/output/after.txt', 'w').write('ok')\nprint('ALIVE', {self.name!r})"),
                "All done. DONE"]


def cell(source: str, **values) -> str:
    """A cell's source, dedented; every NAME given in values is replaced by repr(value)."""
    text = textwrap.dedent(source).strip()
    for name in sorted(values, key=len, reverse=True):  # SECRET_RELATIVE before SECRET
        text = text.replace(name, repr(values[name]))
    return text


ORPHAN_VISIBLE = '''
    import os, time
    time.sleep(0.5)
    def cmdline(pid):
        try:
            return open(f'/proc/{pid}/cmdline', 'rb').read()
        except OSError:
            return b''
    print('orphan visible', any(DURATION in cmdline(p) for p in os.listdir('/proc') if p.isdigit()))
'''


def attacks(host: "Host") -> list[Attack]:
    secret = str(host.secret)
    suite_checks = str(host.suite_dir / "checks")
    return [
        # -- limits: CPU, signals, memory, processes, threads ----------------------------------------------------
        Attack("cpu_burn", "limits", cell("""
            while True:
                pass
            """), said=r"interrupted", prepare="kept = 42", after="print('kept', kept)"),
        Attack("sigint_ignored", "limits", cell("""
            import signal
            for sig in (signal.SIGINT, signal.SIGXCPU, signal.SIGTERM):
                signal.signal(sig, signal.SIG_IGN)
            while True:
                try:
                    pass
                except BaseException:
                    pass
            """), said=r"restarted"),
        Attack("memory_list", "limits", cell("""
            def bomb():
                hoard = []
                while True:
                    hoard.append([0] * 2**20)
            bomb()
            """), said=r"MemoryError|memory|interrupted"),
        Attack("memory_numpy", "limits", cell("""
            import numpy as np
            def bomb():
                hoard = []
                while True:
                    hoard.append(np.ones(2**24))
            bomb()
            """), said=r"MemoryError|memory|interrupted"),
        Attack("fork_bomb", "limits", cell("""
            import os, signal
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            while True:
                try:
                    os.fork()
                except BaseException:
                    pass
            """), said=r"restarted|BlockingIOError|Resource temporarily unavailable",
            after="import os\nprint('processes', len([p for p in os.listdir('/proc') if p.isdigit()]))"),
        Attack("thread_bomb", "limits", cell("""
            import threading, time
            for _ in range(100_000):
                threading.Thread(target=time.sleep, args=(4246,), daemon=True).start()
            """), said=r"can't start new thread|RuntimeError|restarted",
            after="import threading\nprint('threads', threading.active_count())"),
        # -- output: stdout floods, disk -------------------------------------------------------------------------
        Attack("stdout_flood_write", "output", cell("""
            import sys
            chunk = 'x' * 2**20
            for _ in range(1024):
                sys.stdout.write(chunk)
            print('flood done')
            """), said=r"\bcut\b"),
        Attack("stdout_flood_oswrite", "output", cell("""
            import os
            chunk = b'y' * 2**20
            for _ in range(1024):
                os.write(1, chunk)
            print('flood done')
            """), said=r"\bcut\b"),
        Attack("disk_output_huge", "output", cell("""
            block = b'z' * 2**24
            with open('output/huge.bin', 'wb') as f:
                while True:
                    f.write(block)
            """), said=r"File too large|\blimit\b|interrupted|restarted", after=cell("""
            import os
            huge = '/task/output/huge.bin'
            print('size', os.path.getsize(huge) if os.path.exists(huge) else 0)
            os.path.exists(huge) and os.remove(huge)
            """)),
        Attack("disk_output_sparse", "output", cell("""
            for i in range(3):
                with open(f'output/sparse-{i}.bin', 'wb') as f:
                    f.truncate(2**30 - 1)
            print('3 GiB of sparse files')
            """), said=TOLD_OUTPUT_CAP),
        Attack("disk_output_many", "output", cell("""
            import os
            os.mkdir('output/many')
            for i in range(20_000):    # os.open: one cheap syscall a file, so the cap is passed well within the timeout
                os.close(os.open(f'output/many/{i}', os.O_CREAT | os.O_WRONLY, 0o644))
            print('20000 files')
            """), said=TOLD_OUTPUT_CAP),
        Attack("disk_tmp", "output", cell("""
            def fill(path):
                try:
                    with open(path, 'wb') as f:
                        while True:
                            f.write(b't' * 2**20)
                except OSError as error:
                    print(path, 'full:', error)
            fill(TMP_FILL)
            fill(SHM_FILL)
            """, TMP_FILL=f"/tmp/fill-{TOKEN}", SHM_FILL=f"/dev/shm/fill-{TOKEN}"), said=r"No space left on device", after=cell("""
            import os
            print('sizes', [os.path.getsize(p) for p in (TMP_FILL, SHM_FILL) if os.path.exists(p)])
            for p in (TMP_FILL, SHM_FILL):
                os.path.exists(p) and os.remove(p)
            """, TMP_FILL=f"/tmp/fill-{TOKEN}", SHM_FILL=f"/dev/shm/fill-{TOKEN}")),
        # -- escapes: network, host files, environment, links, data/, orphans, signals, shadowed modules ----------
        Attack("tcp_loopback", "escape", cell("""
            import socket
            probe('tcp', lambda: socket.create_connection(('127.0.0.1', PORT), timeout=2).close())
            probe('tcp6', lambda: socket.create_connection(('::1', PORT), timeout=2).close())
            print('interfaces', [name for _, name in socket.if_nameindex()])
            """, PORT=host.tcp_port), said=r"tcp BLOCKED", prepare=PROBE),
        Attack("udp_loopback", "escape", cell("""
            import socket
            sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            probe('udp', lambda: [sender.sendto(b'pybench-udp', ('127.0.0.1', PORT)) for _ in range(20)])
            probe('udp-out', lambda: sender.sendto(b'x', ('1.1.1.1', 53)))
            """, PORT=host.udp_port), said=r"udp (BLOCKED|OPEN)", prepare=PROBE),
        Attack("dns", "escape", cell("""
            import socket
            probe('dns', lambda: socket.getaddrinfo('pypi.org', 443))
            probe('resolv', lambda: open('/etc/resolv.conf').read())
            probe('raw', lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW))
            """), said=r"dns BLOCKED", prepare=PROBE),
        Attack("read_shadow", "escape", cell("""
            import hashlib
            probe('shadow', lambda: open('/etc/shadow').read())
            probe('shadow-via-proc', lambda: open('/proc/1/root/etc/shadow').read())
            probe('passwd', lambda: hashlib.sha256(open('/etc/passwd', 'rb').read()).hexdigest())
            """), said=r"shadow BLOCKED", prepare=PROBE),
        Attack("read_home", "escape", cell("""
            import os
            probe('secret', lambda: open(SECRET).read())
            probe('home', lambda: os.listdir(HOME))
            probe('home-dirs', lambda: os.listdir('/home'))
            """, SECRET=secret, HOME=str(Path.home())), said=r"secret BLOCKED", prepare=PROBE),
        Attack("read_checks", "escape", cell("""
            import os
            probe('project-checks', lambda: open(PROJECT_CHECK).read())
            probe('suite-checks', lambda: open(SUITE_CHECK).read())
            probe('checks-mount', lambda: open('/checks/suite.py').read())
            probe('checks-list', lambda: os.listdir('/checks'))
            """, PROJECT_CHECK=str(ROOT / "checks" / "common.py"), SUITE_CHECK=f"{suite_checks}/suite.py"),
            said=r"checks BLOCKED", prepare=PROBE),
        Attack("read_env", "escape", cell("""
            import os
            def environ(pid):
                try:
                    return open(f'/proc/{pid}/environ', 'rb').read()
                except OSError:
                    return b''
            leaked = [pid for pid in os.listdir('/proc') if pid.isdigit() and b'PYBENCH_TEST_SECRET' in environ(pid)]
            print('environ', 'LEAKED' if 'PYBENCH_TEST_SECRET' in os.environ else 'clean', sorted(os.environ))
            print('proc-environ', 'LEAKED' if leaked else 'clean')
            """), said=r"environ (clean|LEAKED)"),
        Attack("symlinks_out", "escape", cell("""
            import os
            links = {'passwd': '/etc/passwd', 'shadow': '/etc/shadow', 'secret': SECRET, 'secret-relative': SECRET_RELATIVE,
                     'common.py': PROJECT_CHECK, 'suite.py': SUITE_CHECK, 'numbers.csv': INPUT, 'up': '../../'}
            for name, target in links.items():
                os.symlink(target, f'output/{name}')
            print('links made', sorted(os.listdir('output')))
            """, SECRET=secret, SECRET_RELATIVE="../" * 16 + secret.lstrip("/"), PROJECT_CHECK=str(ROOT / "checks" / "common.py"),
            SUITE_CHECK=f"{suite_checks}/suite.py", INPUT=str(host.suite_dir / "files" / "numbers.csv")),
            said=r"links made", check="nothing_read_through_links"),
        Attack("write_data", "escape", cell("""
            import os
            probe('append', lambda: open('data/numbers.csv', 'a').write('9,9\\n'))
            probe('create', lambda: open('data/new.csv', 'w').write('x'))
            probe('remove', lambda: os.remove('data/numbers.csv'))
            probe('rename', lambda: os.rename('data/numbers.csv', 'data/moved.csv'))
            probe('chmod', lambda: os.chmod('data/numbers.csv', 0o777))
            probe('utime', lambda: os.utime('data/numbers.csv', (0, 0)))
            probe('truncate', lambda: os.truncate('data/numbers.csv', 0))
            probe('mkdir', lambda: os.mkdir('data/sub'))
            probe('symlink', lambda: os.symlink('/etc/passwd', 'data/link'))
            probe('root', lambda: open('/escape', 'w'))
            probe('task', lambda: open('/task/escape', 'w'))
            probe('project', lambda: open(PROJECT_FILE, 'w'))
            """, PROJECT_FILE=str(ROOT / f"escape-{TOKEN}")), said=r"append BLOCKED", prepare=PROBE),
        Attack("orphan_setsid", "escape", cell("""
            import subprocess
            subprocess.Popen(['sleep', DURATION], start_new_session=True,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            print('spawned')
            """, DURATION=SLEEP_SETSID), said=r"spawned", after=cell(ORPHAN_VISIBLE, DURATION=SLEEP_SETSID.encode())),
        Attack("orphan_double_fork", "escape", cell("""
            import os
            pid = os.fork()
            if pid == 0:
                os.setsid()
                if os.fork() == 0:
                    os.execvp('sleep', ['sleep', DURATION])
                os._exit(0)
            os.waitpid(pid, 0)
            print('daemonized')
            """, DURATION=SLEEP_DOUBLE_FORK), said=r"daemonized", after=cell(ORPHAN_VISIBLE, DURATION=SLEEP_DOUBLE_FORK.encode())),
        Attack("kill_all", "escape", cell("""
            import os, signal
            me = os.getpid()
            pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
            print('visible', pids, 'me', me, 'parent', os.getppid())
            for target in (-1, 1, os.getppid(), *[pid for pid in pids if pid != me]):
                try:
                    os.kill(target, signal.SIGKILL)
                    print('kill', target, 'sent')
                except OSError as error:
                    print('kill', target, type(error).__name__)
            print('still here')
            """), said=None),
        Attack("shadow_modules", "escape", cell("""
            fakes = {
                'numpy': 'raise RuntimeError("SHADOW numpy imported")',
                'pandas': 'read_csv = DataFrame = None',
                'helpers': 'ORIGIN = "agent"',
                'suite': 'raise RuntimeError("SHADOW suite imported")',
                'sitecustomize': 'raise RuntimeError("SHADOW sitecustomize imported")',
                'usercustomize': 'raise RuntimeError("SHADOW usercustomize imported")',
                'pathlib': 'raise RuntimeError("SHADOW pathlib imported")',
            }
            for name, source in fakes.items():
                open(f'output/{name}.py', 'w').write(source)
            print('fakes written', sorted(fakes))
            """), said=r"fakes written", check="libraries_are_real"),
        # -- the worker's channel and the interpreter's own state --------------------------------------------------
        Attack("channel_close_fds", "channel", cell("""
            import os
            for fd in range(3, 11):
                try:
                    os.close(fd)
                except OSError:
                    pass
            print('closed 3..10')
            """), said=r"restarted|died"),
        Attack("channel_garbage", "channel", cell("""
            import os
            for name in os.listdir('/proc/self/fd'):
                if int(name) > 2:
                    try:
                        os.write(int(name), b'\\xff\\xff\\xff\\xffGARBAGE' + os.urandom(64))
                    except OSError:
                        pass
            print('garbage written')
            """), said=r"restarted|died"),
        Attack("channel_fake_stdout", "channel", cell("""
            import json, struct, sys
            out = sys.stdout.buffer
            for message in ({'error': None}, {'ready': True}, {'dead': True}):    # length-prefixed JSON
                payload = json.dumps(message).encode()
                out.write(struct.pack('!I', len(payload)) + payload)
            out.write((1).to_bytes(4, 'big') + (2).to_bytes(4, 'big') + b'ok')      # a framed "ok"
            out.write(b'\\x00pybench-' + b'0' * 32 + b'\\x00')                      # shaped like the end-of-cell marker
            out.flush()
            print('after fake')
            """), said=r"after fake"),
        Attack("channel_close_stdout", "channel", cell("""
            import os
            os.close(1)
            os.close(2)
            """), said=None),
        Attack("interp_cwd", "channel", cell("""
            import os
            os.makedirs('/tmp/gone', exist_ok=True)
            os.chdir('/tmp/gone')
            os.rmdir('/tmp/gone')
            print('cwd removed')
            """), said=r"cwd removed", clean_error_ok=True),
        Attack("interp_syspath", "channel", cell("""
            import sys
            for name in ('traceback', 'linecache', 'json', 'struct', 'ast', 'time'):
                open(f'/tmp/{name}.py', 'w').write(f'raise ImportError("hijacked {name}")')
                sys.modules.pop(name, None)
            sys.path.insert(0, '/tmp')
            raise ValueError('after the hijack')
            """), said=r"ValueError|hijacked|restarted|died", clean_error_ok=True),
        Attack("interp_builtins", "channel", cell("""
            import builtins
            builtins.print = None
            builtins.len = None
            builtins.open = None
            builtins.__import__ = None
            """), said=None, check="answered", clean_error_ok=True),
    ]


GROUPS = ("limits", "output", "escape", "channel")


# --- the host: what the tests plant and watch -----------------------------------------------------------------

@dataclass(repr=False)  # keeps pytest's failure reports short
class Host:
    suite_dir: Path
    secret: Path
    secret_text: str
    env_secret: str
    tcp_port: int = 0
    udp_port: int = 0
    tcp_connections: list = field(default_factory=list)
    udp_datagrams: list = field(default_factory=list)
    sentinel: subprocess.Popen | None = None
    before_root: set = field(default_factory=set)
    before_tmp: set = field(default_factory=set)
    data_state: tuple = ()


def file_state(path: Path) -> tuple:
    stat = path.stat()
    return hashlib.sha256(path.read_bytes()).hexdigest(), stat.st_mode, stat.st_uid, stat.st_mtime_ns


def project_paths() -> set[Path]:
    skip = {".git", ".venv", ".jail", ".pytest_cache", "__pycache__", "runs"}
    found = set()
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in skip]
        found.update(Path(folder) / name for name in dirs + files)
    return found


def tmp_entries() -> set[Path]:
    return {path for top in (Path("/tmp"), Path("/dev/shm")) for path in top.iterdir()}


def processes() -> dict[int, bytes]:
    """Every host process's command line (NULs between the arguments)."""
    found = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                found[int(name)] = Path(f"/proc/{name}/cmdline").read_bytes()
            except OSError:
                pass
    return found


class Monitor(threading.Thread):
    """Watches the host while the runs go: when each watched command line was first and last seen, and when each
    task's results line appeared."""

    def __init__(self, needles: list[str]):
        super().__init__(daemon=True)
        self.needles = [needle.encode() for needle in needles]
        self.first: dict[str, float] = {}
        self.last: dict[str, float] = {}
        self.written: dict[str, float] = {}
        self.results: Path | None = None
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.poll()
            self.stop.wait(0.05)

    def poll(self):
        now = time.monotonic()
        for command in processes().values():
            for needle in self.needles:
                if needle in command:
                    self.first.setdefault(needle.decode(), now)
                    self.last[needle.decode()] = now
        now = time.monotonic()  # read after the scan: a line seen now was written after the processes above were seen
        results = self.results
        if results is not None and results.exists():
            text = results.read_text(errors="replace")
            for line in text[:text.rfind("\n") + 1].splitlines():
                try:
                    self.written.setdefault(json.loads(line)["id"], now)
                except (ValueError, KeyError, TypeError):
                    pass


def _serve_tcp(listener: socket.socket, seen: list, stop: threading.Event):
    listener.settimeout(0.2)
    while not stop.is_set():
        try:
            connection, peer = listener.accept()
            seen.append(peer)
            connection.close()
        except OSError:
            pass


def _serve_udp(receiver: socket.socket, seen: list, stop: threading.Event):
    receiver.settimeout(0.2)
    while not stop.is_set():
        try:
            seen.append(receiver.recvfrom(4096))
        except OSError:
            pass


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    """Plants a secret in the host's home, opens TCP and UDP listeners on the host's 127.0.0.1, starts a sentinel
    process as the jail's own uid, and records the project dir and /tmp, all before any jail runs."""
    base = tmp_path_factory.mktemp("containment")
    secret = Path.home() / f".pybench-containment-secret-{TOKEN}"
    secret_text = f"host secret {secrets.token_hex(16)}"
    secret.write_text(secret_text)
    secret.chmod(0o600)
    state = Host(suite_dir=base / "suite", secret=secret, secret_text=secret_text, env_secret=f"env-secret-{secrets.token_hex(16)}")
    stop = threading.Event()
    tcp = socket.create_server(("127.0.0.1", 0))
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    state.tcp_port, state.udp_port = tcp.getsockname()[1], udp.getsockname()[1]
    servers = [threading.Thread(target=_serve_tcp, args=(tcp, state.tcp_connections, stop), daemon=True),
               threading.Thread(target=_serve_udp, args=(udp, state.udp_datagrams, stop), daemon=True)]
    for server in servers:
        server.start()
    if os.geteuid() == 0:  # a host process of the jail's own uid: kill(-1) inside the jail must not reach it
        state.sentinel = subprocess.Popen(["sleep", SLEEP_SENTINEL], user=JAIL_USER, group=JAIL_USER)
    state.before_root, state.before_tmp = project_paths(), tmp_entries()
    try:
        yield state
    finally:
        stop.set()
        for server in servers:
            server.join()
        tcp.close()
        udp.close()
        if state.sentinel is not None:
            state.sentinel.kill()
            state.sentinel.wait()
        secret.unlink(missing_ok=True)


# --- the runs -------------------------------------------------------------------------------------------------

@dataclass(repr=False)
class Run:
    group: str
    out: Path
    task_ids: list[str]
    returncode: int
    stderr: str
    lines: list[str]
    results: dict[str, dict]
    seconds: float


@dataclass(repr=False)
class Runs:
    host: Host
    attacks: dict[str, Attack]
    runs: dict[str, Run]
    monitor: Monitor
    after_processes: dict[int, bytes]
    total_seconds: float

    def of(self, name: str) -> Run:
        return self.runs[self.attacks[name].group]


def build_suite(host: Host, attack_list: list[Attack]) -> None:
    (host.suite_dir / "files").mkdir(parents=True)
    (host.suite_dir / "checks").mkdir()
    (host.suite_dir / "files" / "numbers.csv").write_text("a,b\n1,2\n3,4\n")
    (host.suite_dir / "checks" / "suite.py").write_text(CHECKS.format(check_token=f"CHECK-TOKEN-{TOKEN}"))
    (host.suite_dir / "checks" / "helpers.py").write_text('ORIGIN = "checks"\n')
    tasks = []
    for attack in attack_list:
        tasks.append({"id": attack.name, "category": "software", "query": f"attack: {attack.name}", "files": ["numbers.csv"],
                      "check": f"suite:{attack.check}"})
        tasks.append({"id": f"{attack.name}-next", "category": "math", "query": "Sum the numbers in ./data/numbers.csv.",
                      "files": ["numbers.csv"], "check": "suite:total"})
    write_jsonl(host.suite_dir / "tasks.jsonl", tasks)
    host.data_state = file_state(host.suite_dir / "files" / "numbers.csv")


def run_group(host: Host, group: str, attack_list: list[Attack], base: Path, monitor: Monitor) -> Run:
    chosen = [attack for attack in attack_list if attack.group == group]
    task_ids = [task_id for attack in chosen for task_id in (attack.name, f"{attack.name}-next")]
    replay = write_jsonl(base / f"replay-{group}.jsonl",
                         [record for attack in chosen for record in ({"id": attack.name, "replies": attack.replies()},
                                                                     {"id": f"{attack.name}-next", "replies": [CANARY, "The sum is 10"]})])
    out = base / f"run-{group}"
    monitor.results = out / "results.jsonl"
    env = {**os.environ, "PYBENCH_TEST_SECRET": host.env_secret}
    started = time.monotonic()
    finished = subprocess.run([sys.executable, str(ROOT / "pybench.py"), "--tasks", str(host.suite_dir / "tasks.jsonl"),
                               "--replay", str(replay), "--only", ",".join(task_ids), "--out", str(out),
                               "--memory", str(MEMORY_GIB), "--cell-timeout", str(CELL_TIMEOUT),
                               "--parallel", "1"],  # one at a time: each attack, then the task after it, in that order
                              capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    seconds = time.monotonic() - started
    monitor.poll()
    path = out / "results.jsonl"
    lines = path.read_text(errors="replace").splitlines() if path.exists() else []
    results = {}
    for line in lines:
        try:
            record = json.loads(line)
            results[record["id"]] = record
        except (ValueError, KeyError, TypeError):
            pass
    return Run(group, out, task_ids, finished.returncode, finished.stderr, lines, results, seconds)


@pytest.fixture(scope="module")
def runs(host):
    """Every group's pybench run, one after the other (so that CPU-bound attacks do not slow the timed ones);
    at the end of the module, the table of attacks."""
    base = host.suite_dir.parent
    attack_list = attacks(host)
    build_suite(host, attack_list)
    monitor = Monitor([SLEEP_SETSID, SLEEP_DOUBLE_FORK, SLEEP_SENTINEL])
    monitor.start()
    started = time.monotonic()
    try:
        done = {group: run_group(host, group, attack_list, base, monitor) for group in GROUPS}
    finally:
        monitor.stop.set()
        monitor.join()
    total = time.monotonic() - started
    time.sleep(0.2)
    everything = Runs(host, {attack.name: attack for attack in attack_list}, done, monitor, processes(), total)
    yield everything
    print_table(everything)


# --- reading a run --------------------------------------------------------------------------------------------

def observations(result: dict) -> list[str]:
    """The interpreter's answer to each assistant reply that ran code, in order."""
    messages = result["messages"]
    return [messages[i + 1]["content"] for i, m in enumerate(messages[:-1]) if m["role"] == "assistant" and messages[i + 1]["role"] == "user"]


@dataclass(repr=False)
class Seen:
    """One attack task as the results record it."""
    result: dict
    next_result: dict | None
    before: str        # observation of the cell before the attack (T0)
    attack: str        # observation of the hostile cell
    followup: str      # observation of the cell after it
    seconds: float | None


def seen(runs: Runs, name: str) -> Seen:
    run = runs.of(name)
    assert name in run.results, (f"no results line for {name} (pybench exit {run.returncode}); "
                                 f"stderr tail: {run.stderr[-1500:]}")
    result = run.results[name]
    said = observations(result)
    assert len(said) >= 3, f"{name}: expected 3 observations, got {len(said)}: {said}"
    start = re.search(r"T0 ([\d.]+)", said[0])
    end = re.search(r"T1 ([\d.]+)", said[2])
    seconds = float(end.group(1)) - float(start.group(1)) if start and end else None
    return Seen(result, run.results.get(f"{name}-next"), said[0], said[1], said[2], seconds)


def handled(runs: Runs, name: str) -> Seen:
    """The checks every attack shares: (2) the observation says what happened, (3) the next cell ran, (4) the next
    task ran and passed, (5) results.jsonl is intact, and the attack task itself ran to its end and passed."""
    attack, run = runs.attacks[name], runs.of(name)
    assert_results_intact(run)
    task = seen(runs, name)
    if attack.said:
        assert re.search(attack.said, task.attack), f"{name}: the observation does not say what happened ({attack.said!r}): {task.attack[:600]!r}"
    alive = f"ALIVE {name}" in task.followup
    if attack.clean_error_ok:
        assert alive or re.search(CLEAN_ERROR, task.followup), f"{name}: the next cell neither ran nor got a clean error: {task.followup[:600]!r}"
    else:
        assert alive, f"{name}: the next cell did not run: {task.followup[:600]!r}"
    assert task.result["ended_by"] == "final answer", f"{name}: the task ended by {task.result['ended_by']!r}"
    assert task.result["passed"], f"{name}: the attack task failed its check: {task.result['reason']}"
    assert task.next_result is not None, f"{name}: the next task did not run"
    assert task.next_result["passed"], f"{name}: the next task failed: {task.next_result['reason']}"
    return task


def assert_results_intact(run: Run) -> None:
    assert run.returncode == 0, f"pybench exited {run.returncode} in run {run.group}: {run.stderr[-1500:]}"
    assert len(run.lines) == len(run.task_ids), f"{len(run.lines)} results lines for {len(run.task_ids)} tasks"
    for line, task_id in zip(run.lines, run.task_ids):
        record = json.loads(line)
        assert isinstance(record, dict) and record.get("id") == task_id, f"results line for {task_id} is {line[:200]!r}"
        assert len(line) < 256 * 1024, f"results line for {task_id} is {len(line)} bytes"


def outcome(text: str) -> str:
    """What the harness did with the hostile cell, in a few words."""
    if re.search(TOLD_OUTPUT_CAP, text):
        return "told: output cap"
    if "restarted" in text:
        return "worker restarted"
    if "interrupted" in text:
        return "interrupted"
    errors = re.findall(r"(?m)^(?:\w+\.)*(\w+(?:Error|Exception|Interrupt|Exit))\b", text)
    if errors:
        return errors[-1]
    if "No space left on device" in text:
        return "ENOSPC (caught by the cell)"
    if "BLOCKED" in text:
        return f"{text.count(' BLOCKED')} probes blocked" + (", " + f"{text.count(' OPEN')} open" if " OPEN" in text else "")
    return "ran, no error"


VERDICTS: dict[str, str] = {}


def attack_test(name: str):
    """Marks a test as attack `name`'s: its verdict goes into the table (FAIL if any of the attack's tests fails)."""
    def wrap(test):
        @functools.wraps(test)
        def run(*args, **kwargs):
            earlier = VERDICTS.get(name, "pass")
            VERDICTS[name] = "FAIL"
            test(*args, **kwargs)
            VERDICTS[name] = earlier
        return run
    return wrap


def print_table(runs: Runs) -> None:
    rows = []
    for name, attack in runs.attacks.items():
        try:
            task = seen(runs, name)
            rows.append((name, outcome(task.attack), "-" if task.seconds is None else f"{task.seconds:.2f}"))
        except AssertionError:
            rows.append((name, "no result", "-"))
    print(f"\n\n{'attack':<22} {'outcome':<28} {'seconds':>8}  test")
    for name, what, seconds in rows:
        print(f"{name:<22} {what:<28} {seconds:>8}  {VERDICTS.get(name, 'not run')}")
    print("runs: " + ", ".join(f"{run.group} {run.seconds:.1f} s" for run in runs.runs.values()) + f"; all {runs.total_seconds:.1f} s")


def probes(text: str) -> dict[str, str]:
    """label -> BLOCKED/OPEN, from the probe lines of an observation."""
    return dict(re.findall(r"(?m)^([\w.-]+) (BLOCKED|OPEN)\b", text))


def assert_blocked(task: Seen, *labels: str) -> None:
    found = probes(task.attack)
    for label in labels:
        assert found.get(label) == "BLOCKED", f"probe {label!r} was not blocked: {task.attack[:800]!r}"


def run_files(run: Run):
    """Every regular file of a run directory, without following links."""
    for folder, dirs, files in os.walk(run.out):
        for name in files:
            path = Path(folder) / name
            if not path.is_symlink() and path.is_file():
                yield path


# --- limits -----------------------------------------------------------------------------------------------------

@attack_test("cpu_burn")
def test_cpu_burn_is_interrupted_and_keeps_variables(runs):
    task = handled(runs, "cpu_burn")
    assert "kept 42" in task.followup, "an interrupted cell should keep the variables"
    assert task.seconds <= CELL_TIMEOUT + SLACK, f"took {task.seconds:.2f} s"


@attack_test("sigint_ignored")
def test_loop_ignoring_sigint_and_sigxcpu_is_killed(runs):
    task = handled(runs, "sigint_ignored")
    assert task.result["worker_restarts"] >= 1
    assert task.seconds <= CELL_TIMEOUT + GRACE + SLACK, f"took {task.seconds:.2f} s"


@attack_test("memory_list")
def test_memory_bomb_with_lists(runs):
    task = handled(runs, "memory_list")
    assert task.seconds <= CELL_TIMEOUT + GRACE + SLACK, f"took {task.seconds:.2f} s"


@attack_test("memory_numpy")
def test_memory_bomb_with_numpy(runs):
    task = handled(runs, "memory_numpy")
    assert task.seconds <= CELL_TIMEOUT + GRACE + SLACK, f"took {task.seconds:.2f} s"


@attack_test("fork_bomb")
def test_fork_bomb_is_capped_and_cleared(runs):
    task = handled(runs, "fork_bomb")
    processes_left = int(re.search(r"processes (\d+)", task.followup).group(1))
    assert processes_left <= 2, f"{processes_left} processes still in the jail after the fork bomb"
    assert task.seconds <= CELL_TIMEOUT + GRACE + SLACK, f"took {task.seconds:.2f} s"


@attack_test("thread_bomb")
def test_thread_bomb_is_capped(runs):
    task = handled(runs, "thread_bomb")
    threads = int(re.search(r"threads (\d+)", task.followup).group(1))
    assert threads <= sandbox.JailLimits().processes, f"{threads} threads: the process cap did not hold"


# --- output -----------------------------------------------------------------------------------------------------

@attack_test("stdout_flood_write")
def test_stdout_flood_through_sys_stdout(runs):
    task = handled(runs, "stdout_flood_write")
    assert task.seconds <= CELL_TIMEOUT + SLACK, f"a 1 GiB flood took {task.seconds:.2f} s to contain (cell timeout {CELL_TIMEOUT} s)"


@attack_test("stdout_flood_oswrite")
def test_stdout_flood_through_os_write(runs):
    task = handled(runs, "stdout_flood_oswrite")
    assert task.seconds <= CELL_TIMEOUT + SLACK, f"a 1 GiB flood took {task.seconds:.2f} s to contain (cell timeout {CELL_TIMEOUT} s)"


@attack_test("disk_output_huge")
def test_one_huge_file_in_output_stops_at_the_file_limit(runs):
    task = handled(runs, "disk_output_huge")
    size = int(re.search(r"size (\d+)", task.followup).group(1))
    assert size <= FILE_LIMIT, f"output/huge.bin reached {size} bytes"


def output_footprint(folder: Path) -> tuple[int, int]:
    """(entries, apparent bytes) of a kept outputs/<id>/, links not followed."""
    entries = size = 0
    for current, dirs, files in os.walk(folder):
        for name in dirs + files:
            entries += 1
            size += os.lstat(Path(current) / name).st_size
    return entries, size


@attack_test("disk_output_sparse")
def test_output_cap_on_bytes(runs):
    """Assumption OUTPUT CAP: output/ holds at most 2 GiB; 3 GiB of sparse files kill the worker, it is told so,
    and the kept outputs/<id>/ stays within the cap."""
    task = handled(runs, "disk_output_sparse")
    assert task.result["worker_restarts"] >= 1, "the worker was not killed for going past the output cap"
    entries, size = output_footprint(runs.of("disk_output_sparse").out / "outputs" / "disk_output_sparse")
    assert size <= OUTPUT_CAP_BYTES, f"outputs/disk_output_sparse keeps {size / 2**30:.2f} GiB"


@attack_test("disk_output_many")
def test_output_cap_on_entries(runs):
    """Assumption OUTPUT CAP: output/ holds at most 10,000 entries; 20,000 files kill the worker, it is told so,
    and the kept outputs/<id>/ stays within the cap."""
    task = handled(runs, "disk_output_many")
    assert task.result["worker_restarts"] >= 1, "the worker was not killed for going past the output cap"
    entries, size = output_footprint(runs.of("disk_output_many").out / "outputs" / "disk_output_many")
    assert entries <= OUTPUT_CAP_ENTRIES, f"outputs/disk_output_many keeps {entries} entries"


@attack_test("disk_tmp")
def test_filling_tmp_and_dev_shm_stays_in_the_jail(runs):
    task = handled(runs, "disk_tmp")
    assert task.attack.count("No space left on device") == 2, task.attack
    sizes = [int(n) for n in re.findall(r"\d+", re.search(r"sizes \[([\d, ]*)\]", task.followup).group(1))]
    assert sizes and max(sizes) <= sandbox.JailLimits().tmp_mib * 2**20, f"the jail's /tmp and /dev/shm held {sizes}"
    stray = [path for path in tmp_entries() if TOKEN in path.name]
    assert not stray, f"the fill reached the host: {stray}"


# --- escapes ------------------------------------------------------------------------------------------------------

@attack_test("tcp_loopback")
def test_tcp_to_the_hosts_loopback(runs):
    task = handled(runs, "tcp_loopback")
    assert_blocked(task, "tcp", "tcp6")
    assert "interfaces ['lo']" in task.attack, task.attack
    assert runs.host.tcp_connections == [], f"the host's listener was reached: {runs.host.tcp_connections}"


@attack_test("udp_loopback")
def test_udp_to_the_hosts_loopback(runs):
    task = handled(runs, "udp_loopback")
    assert_blocked(task, "udp-out")
    assert runs.host.udp_datagrams == [], f"the host's UDP socket received {runs.host.udp_datagrams[:3]}"


@attack_test("dns")
def test_dns_lookup(runs):
    task = handled(runs, "dns")
    assert_blocked(task, "dns", "resolv", "raw")


@attack_test("read_shadow")
def test_reading_etc_shadow(runs):
    task = handled(runs, "read_shadow")
    assert_blocked(task, "shadow", "shadow-via-proc")
    host_passwd = hashlib.sha256(Path("/etc/passwd").read_bytes()).hexdigest()
    assert host_passwd not in task.attack, "the jail read the host's /etc/passwd"


@attack_test("read_home")
def test_reading_the_hosts_home(runs):
    task = handled(runs, "read_home")
    assert_blocked(task, "secret")
    assert runs.host.secret.name not in task.attack, "the jail listed the host's home"
    assert runs.host.secret_text not in task.attack


@attack_test("read_checks")
def test_reading_the_checks(runs):
    task = handled(runs, "read_checks")
    assert_blocked(task, "project-checks", "suite-checks", "checks-mount", "checks-list")
    assert f"CHECK-TOKEN-{TOKEN}" not in json.dumps(task.result), "the agent read the check module"


@attack_test("read_env")
def test_reading_the_harness_environment(runs):
    task = handled(runs, "read_env")
    assert "environ clean" in task.attack and "proc-environ clean" in task.attack, task.attack
    for run in runs.runs.values():
        assert runs.host.env_secret not in "\n".join(run.lines), f"the harness's environment reached run {run.group}"


@attack_test("symlinks_out")
def test_links_in_output_are_not_followed(runs):
    """The check reads every file in output/ (a naive check): it must read nothing through the links; the
    harness's result collection must not copy what they point at into the run directory."""
    task = handled(runs, "symlinks_out")
    assert runs.host.secret_text not in task.result["reason"]
    for path in run_files(runs.of("symlinks_out")):
        if path.stat().st_size < 50 * 2**20:
            assert runs.host.secret_text.encode() not in path.read_bytes(), f"the secret was copied into {path}"
    assert file_state(runs.host.secret)[:3] == (hashlib.sha256(runs.host.secret_text.encode()).hexdigest(), 0o100600, os.getuid())


@attack_test("symlinks_out")
def test_no_link_out_of_output_is_kept(runs):
    """Assumption SYMLINKS: after the task, outputs/<id>/ holds no link whose target is outside it."""
    folder = runs.of("symlinks_out").out / "outputs" / "symlinks_out"
    pointing_out = []
    for current, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(current) / name
            if path.is_symlink():
                target = (path.parent / os.readlink(path)).resolve()
                if not target.is_relative_to(folder.resolve()):
                    pointing_out.append(f"{path.name} -> {os.readlink(path)}")
    assert not pointing_out, f"links out of the run directory kept: {pointing_out}"


@attack_test("write_data")
def test_writing_into_data(runs):
    task = handled(runs, "write_data")
    assert_blocked(task, "append", "create", "remove", "rename", "chmod", "utime", "truncate", "mkdir", "symlink", "root", "task")
    # 'project' may "open" when the project sits under /tmp: the write lands in the jail's private /tmp, and
    # test_host_is_unchanged checks that the project itself gained no file.
    assert file_state(runs.host.suite_dir / "files" / "numbers.csv") == runs.host.data_state, "the input file changed on the host"
    assert sorted(p.name for p in (runs.host.suite_dir / "files").iterdir()) == ["numbers.csv"]
    assert not (ROOT / f"escape-{TOKEN}").exists()


def assert_orphan_gone(runs: Runs, name: str, duration: str) -> None:
    task = handled(runs, name)
    assert "orphan visible True" in task.followup, f"the orphan never ran, so this test proves nothing: {task.followup!r}"
    monitor = runs.monitor
    assert duration in monitor.last, "the monitor never saw the orphan on the host"
    assert monitor.last[duration] < monitor.written[name], \
        f"`sleep {duration}` was still alive {monitor.last[duration] - monitor.written[name]:.2f} s after its task ended"
    assert duration.encode() not in b"\n".join(runs.after_processes.values()), f"`sleep {duration}` outlived the run"


@attack_test("orphan_setsid")
def test_orphan_in_a_new_session_dies_with_the_task(runs):
    assert_orphan_gone(runs, "orphan_setsid", SLEEP_SETSID)


@attack_test("orphan_double_fork")
def test_double_forked_daemon_dies_with_the_task(runs):
    assert_orphan_gone(runs, "orphan_double_fork", SLEEP_DOUBLE_FORK)


@attack_test("kill_all")
def test_killing_every_visible_process(runs):
    handled(runs, "kill_all")
    sentinel = runs.host.sentinel
    if sentinel is not None:
        assert sentinel.poll() is None, "a host process of the jail's uid was killed from inside the jail"
        assert SLEEP_SENTINEL in runs.monitor.last


@attack_test("shadow_modules")
def test_modules_in_output_do_not_shadow_the_checks_imports(runs):
    task = handled(runs, "shadow_modules")
    assert "SHADOW" not in task.result["reason"] and "agent" not in task.result["reason"]


# --- the channel and the interpreter --------------------------------------------------------------------------------

@attack_test("channel_close_fds")
def test_closing_the_channel_fds(runs):
    task = handled(runs, "channel_close_fds")
    assert task.result["worker_restarts"] >= 1


@attack_test("channel_garbage")
def test_garbage_on_every_fd(runs):
    task = handled(runs, "channel_garbage")
    assert task.result["worker_restarts"] >= 1


@attack_test("channel_fake_stdout")
def test_fake_protocol_messages_on_stdout(runs):
    task = handled(runs, "channel_fake_stdout")
    assert "restarted" not in task.attack and not re.search(CLEAN_ERROR, task.attack), f"a print passed for a result: {task.attack[:400]!r}"
    assert "after fake" not in task.followup and "T1 " in task.followup, "the next cell got an earlier cell's output"
    assert task.result["worker_restarts"] == 0


@attack_test("channel_close_stdout")
def test_closing_stdout_does_not_leave_the_task_mute(runs):
    """Assumption MUTE WORKER: after a cell closes fds 1 and 2, the next cell's print still reaches the model."""
    handled(runs, "channel_close_stdout")


@attack_test("interp_cwd")
def test_removed_cwd(runs):
    handled(runs, "interp_cwd")


@attack_test("interp_syspath")
def test_hijacked_sys_path(runs):
    task = handled(runs, "interp_syspath")
    assert "ALIVE interp_syspath" in task.followup, "a builtin-only follow-up cell should run after sys.path is hijacked"


@attack_test("interp_builtins")
def test_broken_builtins(runs):
    handled(runs, "interp_builtins")


# --- the host, once for everything ------------------------------------------------------------------------------

def test_host_is_unchanged(runs):
    host = runs.host
    assert host.secret.read_text() == host.secret_text and file_state(host.secret)[1:3] == (0o100600, os.getuid()), "the planted secret changed"
    for run in runs.runs.values():
        assert host.secret_text not in "\n".join(run.lines), f"the planted secret is in run {run.group}'s results"
        assert host.env_secret not in "\n".join(run.lines)
    stray = [path for path in project_paths() - host.before_root
             if path.exists() and (path.lstat().st_uid == JAIL_USER or TOKEN in path.name or path.name == "escape")]
    assert not stray, f"the jail left files in the project: {stray}"
    stray_tmp = [path for path in tmp_entries() - host.before_tmp if path.lstat().st_uid == JAIL_USER or TOKEN in path.name]
    assert not stray_tmp, f"the jail left files in the host's /tmp or /dev/shm: {stray_tmp}"
    left = [f"{pid}: {command[:120]!r}" for pid, command in runs.after_processes.items()
            if any(str(run.out).encode() in command for run in runs.runs.values())
            or any(needle.encode() in command for needle in (SLEEP_SETSID, SLEEP_DOUBLE_FORK))]
    assert not left, f"processes outlived the runs: {left}"
    assert not jailed_orphans(), "processes outlived their jail"
    assert host.tcp_connections == [] and host.udp_datagrams == []


def jailed_orphans() -> list[str]:
    """Processes in an nsjail cgroup (NSJAIL.<worker pid>) whose worker is gone: they outlived their jail."""
    found = []
    for pid in processes():
        try:
            groups = Path(f"/proc/{pid}/cgroup").read_text()
        except OSError:
            continue
        match = re.search(r"NSJAIL\.(\d+)", groups)
        if match and not Path(f"/proc/{match.group(1)}").exists():
            found.append(f"{pid} (jail of worker {match.group(1)})")
    return found
