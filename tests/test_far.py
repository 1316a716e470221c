"""The far side (issue 46): one conformance suite for every place a jail can run, and the link's own failures.

The same cells run against three sides (`side`, module-scoped, so each side's link is opened once and reused, as in a
run): the local jail (sandbox.Jail, as today), the jail behind a real `ssh` to an sshd this module starts on
127.0.0.1 (a free port, a throwaway host key and user key in a temp folder; skipped, visibly, only where sshd is not
installed: `setup --tests` installs openssh-server), and an in-process fake far side (far.serve in a thread, behind a
relay that can slow the link or cut it). Every side is the kit's own jail: the far sides run sandbox.Jail unchanged.

Then the link's failures without any jail (frames cut short, garbled, stalled; tars naming paths outside), and one
run through the command line whose far side is killed in the middle of a cell: one line, then the same command resumes.
"""
import contextlib
import getpass
import json
import os
import select
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from conftest import ROOT, code, read_results, write_jsonl
from kit import far, sandbox
from kit.sandbox import JailError, JailLimits

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
LIMITS = dict(cell_timeout=2.0, memory_gib=1.0)


# --- the in-process fake far side: far.serve in a thread, behind a relay that can slow or cut the link -------------

class Relay:
    """Host <-> relay <-> far.serve (a thread): each chunk waits `delay` seconds and goes on in pieces of `piece`
    bytes; kill() cuts both directions at once, as a far side killed (the host sees its link close)."""

    def __init__(self, delay: float = 0.0, piece: int = 1 << 20):
        self.delay, self.piece, self.killed = delay, piece, threading.Event()
        relay_in, self.from_host = os.pipe()
        server_in, relay_to_server = os.pipe()
        relay_from_server, server_out = os.pipe()
        self.to_host_read, relay_to_host = os.pipe()
        threading.Thread(target=self.serve, args=(server_in, server_out), daemon=True).start()
        for source, target in ((relay_in, relay_to_server), (relay_from_server, relay_to_host)):
            threading.Thread(target=self.carry, args=(source, target), daemon=True).start()

    def link(self) -> far.Link:
        return far.Link(self.from_host, self.to_host_read)

    @staticmethod
    def serve(from_host: int, to_host: int) -> None:
        try:
            far.serve(from_host, to_host)
        finally:
            os.close(from_host)
            os.close(to_host)

    def carry(self, source: int, target: int) -> None:
        try:
            while not self.killed.is_set():
                if not select.select([source], [], [], 0.05)[0]:
                    continue
                chunk = os.read(source, 65536)
                if not chunk:
                    break
                time.sleep(self.delay)
                for at in range(0, len(chunk), self.piece):
                    os.write(target, chunk[at:at + self.piece])
        except OSError:
            pass
        finally:
            os.close(source)
            os.close(target)


RELAYS: list[Relay] = []


def fake_opener(delay: float = 0.0, piece: int = 1 << 20):
    def open_link(command):
        RELAYS.append(Relay(delay, piece))
        return RELAYS[-1].link()
    return staticmethod(open_link)


# --- a real sshd on 127.0.0.1, for `ssh` as the far side's command ---------------------------------------------------

@contextlib.contextmanager
def sshd(folder: Path):
    """An sshd on a free port of 127.0.0.1 with a throwaway host key and user key in folder, for as long as the with
    block runs; yields the ssh command that reaches it (this user, no questions asked)."""
    for key in ("host_key", "user_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / key)], check=True)
    (folder / "authorized_keys").write_text((folder / "user_key.pub").read_text())
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (folder / "sshd_config").write_text(f"Port {port}\nListenAddress 127.0.0.1\nHostKey {folder / 'host_key'}\n"
                                        f"AuthorizedKeysFile {folder / 'authorized_keys'}\nPidFile {folder / 'sshd.pid'}\n"
                                        "UsePAM no\nStrictModes no\nPasswordAuthentication no\nPermitRootLogin prohibit-password\n")
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation folder
    with open(folder / "sshd.log", "wb") as log:
        daemon = subprocess.Popen([SSHD, "-D", "-e", "-f", str(folder / "sshd_config")], stderr=log)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield ["ssh", "-p", str(port), "-i", str(folder / "user_key"), "-o", "StrictHostKeyChecking=no", "-o",
               "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes", "-o", "LogLevel=ERROR", f"{getpass.getuser()}@127.0.0.1"]
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)


@pytest.fixture(scope="module")
def ssh_command(tmp_path_factory):
    if not os.path.exists(SSHD):
        pytest.skip("sshd is not installed: `pybench.py setup --tests` installs openssh-server (apt-get)")
    with sshd(tmp_path_factory.mktemp("sshd")) as command:
        yield command


@pytest.fixture(scope="module", params=["local", "fake", "ssh"])
def side(request):
    """Which side the jails of a test run on; the far ones through far.use, as a run's --far does."""
    patch = pytest.MonkeyPatch()
    if request.param == "fake":
        patch.setattr(far.FarJail, "opener", fake_opener())
    if request.param == "ssh":
        command = request.getfixturevalue("ssh_command")
        facts = far.use(shlex.join(command))
    else:
        facts = far.use("fake" if request.param == "fake" else None)
    assert facts["machine"] == os.uname().machine and facts["system"] == "Linux"
    yield request.param
    far.close_links()
    far.use(None)
    patch.undo()


def new_jail(tmp_path: Path, inputs: dict[str, Path] | None = None, **limits):
    """A jail as an attempt's: the inputs read-only at ./data/NAME, ./output/ writable (the host's tmp_path/output)."""
    output = tmp_path / "output"
    output.mkdir()
    if os.geteuid() == 0:
        os.chown(output, 65534, 65534)
    binds = [(str(path), f"{sandbox.JAIL_ROOT}/data/{name}", False) for name, path in (inputs or {}).items()]
    binds.append((str(output), f"{sandbox.JAIL_ROOT}/output", True))
    (tmp_path / "logs").mkdir()
    return sandbox.new_jail("conformance", binds, JailLimits(**(LIMITS | limits)), tmp_path / "logs", output), output


def ended(jail, output: Path) -> None:
    """The attempt is over: the jail goes and ./output/ is tidied, as harness.run_one does."""
    jail.kill()
    sandbox.tidy_output(output)


@contextlib.contextmanager
def attempt_jail(tmp_path: Path, inputs: dict[str, Path] | None = None, **limits):
    """new_jail for the length of a with block, ended however the block ends."""
    jail, output = new_jail(tmp_path, inputs, **limits)
    try:
        yield jail, output
    finally:
        ended(jail, output)


# --- the conformance suite: the same cells and the same answers on every side ------------------------------------------

@pytest.mark.slow
def test_state_across_turns_and_kit_calls(side, tmp_path):
    with attempt_jail(tmp_path) as (jail, output):
        jail.start()
        assert jail.run("x = 41").status == "ok"
        assert jail.run("print(x + 1)").output == "42\n"
        assert jail.call("probe_imports", libraries=["json", "no_such_library"], nltk_resources=[]).output.strip() \
            == "FAILED no_such_library ModuleNotFoundError No module named 'no_such_library'"


@pytest.mark.slow
def test_a_cell_past_its_time_is_interrupted_and_the_variables_kept(side, tmp_path):
    with attempt_jail(tmp_path, cell_timeout=1.0) as (jail, output):
        jail.run("y = 7")
        started = time.monotonic()
        cell = jail.run("import time\ntime.sleep(30)")
        assert cell.status == "interrupted" and cell.error_type == "TimeoutError"
        assert time.monotonic() - started < 1.0 + sandbox.INTERRUPT_GRACE
        assert jail.run("print(y)").output == "7\n"


@pytest.mark.slow
def test_memory_and_process_caps(side, tmp_path):
    with attempt_jail(tmp_path, processes=24) as (jail, output):
        assert jail.run("block = bytearray(3 * 2**30)").error_type == "MemoryError"
        cell = jail.run("import threading, time\nstarted = 0\ntry:\n    for _ in range(100):\n"
                        "        threading.Thread(target=time.sleep, args=(3,), daemon=True).start()\n        started += 1\n"
                        "except RuntimeError:\n    pass\nprint('started', started)")
        assert int(cell.output.split()[1]) < 24
        assert jail.run("print('next')").output == "next\n"


@pytest.mark.slow
def test_output_caps(side, tmp_path):
    with attempt_jail(tmp_path, output_mib=1) as (jail, output):
        printed = jail.run("print('x' * 1_000_000)").output
        assert "bytes of output cut" in printed and len(printed) < 200_000
        cell = jail.run("open('output/big', 'wb').write(b'x' * 3 * 2**20)\nimport time\ntime.sleep(0.5)")
        assert cell.status == "restarted" and "cap of 1 MiB" in cell.error
        jail.run("open('output/small.txt', 'w').write('kept')")
    assert sorted(path.name for path in output.iterdir()) == ["small.txt"]


@pytest.mark.slow
def test_files_in_and_out(side, tmp_path):
    source = tmp_path / "numbers.csv"
    source.write_text("a,b\n1,2\n3,4\n")
    folder = tmp_path / "images"
    (folder / "deep").mkdir(parents=True)
    (folder / "deep" / "one.txt").write_text("one")
    with attempt_jail(tmp_path, {"numbers.csv": source, "images": folder}) as (jail, output):
        cell = jail.run("import os\nprint(open('data/numbers.csv').read().count(','), open('data/images/deep/one.txt').read())\n"
                        "try:\n    open('data/numbers.csv', 'w')\nexcept OSError as error:\n    print('read-only', error.errno)\n"
                        "os.makedirs('output/sub/deeper')\nopen('output/sub/deeper/sum.txt', 'w').write('10')\n"
                        "os.symlink('/etc/shadow', 'output/escape')\nos.symlink('sub/deeper/sum.txt', 'output/inside')")
        assert cell.output.split()[:3] == ["3", "one", "read-only"]
    assert (output / "sub" / "deeper" / "sum.txt").read_text() == "10"
    assert os.readlink(output / "inside") == "sub/deeper/sum.txt" and not os.path.lexists(output / "escape")
    assert source.read_text() == "a,b\n1,2\n3,4\n"


@pytest.mark.slow
def test_the_hostile_classics_network_host_files_signals(side, tmp_path):
    with attempt_jail(tmp_path) as (jail, output):
        cell = jail.run("import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=2)")
        assert cell.status == "error" and "OSError" in cell.error_type + cell.error
        paths = ("/etc/passwd", "/etc/hostname", str(ROOT / "pybench.py"), str(tmp_path))
        seen = jail.run(f"import os\nprint([os.path.exists(p) for p in {paths!r}])")
        assert seen.output == "[False, False, False, False]\n"
        cell = jail.run("import os, signal\nfor target in (-1, 1, os.getppid()):\n    try:\n        os.kill(target, signal.SIGKILL)\n"
                        "    except OSError:\n        pass\nprint('still here')")
        assert cell.output == "still here\n"
        assert jail.run("print('alive')").output == "alive\n"


# --- the link's own failures ---------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_far_side_killed_mid_cell_is_one_line_and_the_next_jail_gets_a_new_link(side, tmp_path):
    if side == "local":
        pytest.skip("the local jail has no link")
    jail, output = new_jail(tmp_path)
    jail.run("pass")
    jailed = []
    if side == "ssh":
        pid = jail.link.ask({"op": "hello"})[0]["pid"]
        jailed = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()  # its jail's setpriv, then nsjail
        killer = threading.Timer(0.5, os.kill, (pid, signal.SIGKILL))  # the far side's server, on this machine
    else:
        killer = threading.Timer(0.5, RELAYS[-1].killed.set)
    killer.start()
    with pytest.raises(JailError) as lost:
        jail.run("import time\ntime.sleep(20)")
    assert "\n" not in str(lost.value) and "was lost during conformance" in str(lost.value) and "resumes" in str(lost.value)
    deadline = time.monotonic() + 5
    while any(Path(f"/proc/{child}").exists() for child in jailed) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert side == "fake" or jailed and not any(Path(f"/proc/{child}").exists() for child in jailed), "the far jail outlived its server"
    ended(jail, output)
    (tmp_path / "again").mkdir()
    again, output = new_jail(tmp_path / "again")
    try:
        assert again.run("print('fresh')").output == "fresh\n"
    finally:
        ended(again, output)
    if side == "ssh":  # the new link's server swept the dead one's folder and its ./output/ mount
        assert not list(Path(tempfile.gettempdir()).glob(f"{far.FOLDER_PREFIX}{pid}-*"))


@pytest.mark.slow
def test_a_slow_link_in_small_pieces_changes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(far.FarJail, "opener", fake_opener(delay=0.02, piece=7))
    monkeypatch.setattr(far.FarJail, "idle", [])
    monkeypatch.setattr(sandbox, "far_jail", far.FarJail)
    source = tmp_path / "in.txt"
    source.write_text("through a slow link")
    with attempt_jail(tmp_path, {"in.txt": source}) as (jail, output):
        jail.run("text = open('data/in.txt').read()")
        assert jail.run("print(text.upper())\n_ = open('output/out.txt', 'w').write(text)").output == "THROUGH A SLOW LINK\n"
        far.close_links()
    assert (output / "out.txt").read_text() == "through a slow link"


def broken_opener(answer: bytes):
    """A far side that reads one request, answers with these bytes (None: nothing, for 3 s) and closes (no jail behind it)."""
    def open_link(command):
        to_far_read, to_far = os.pipe()
        from_far, from_far_write = os.pipe()

        def answer_once():
            with os.fdopen(to_far_read, "rb", buffering=0), os.fdopen(from_far_write, "wb", buffering=0) as out:
                far.receive(to_far_read, 2**31)
                if answer is None:  # a far side that stops answering
                    time.sleep(3)
                out.write(answer or b"")
        threading.Thread(target=answer_once, daemon=True).start()
        return far.Link(to_far, from_far)
    return staticmethod(open_link)


@pytest.mark.parametrize("answer, reason", [(b"\x00\x00\x00\x10{\"op\"", "the link closed in the middle of a frame"),
                                            (b"\xff\xff\xff\xff", "garbled frame"),
                                            (b"\x00\x00\x00\x05hello\x00\x00\x00\x00\x00\x00\x00\x00", "garbled frame"),
                                            (None, "stopped answering"), (b"", "the link closed")])
def test_a_truncated_garbled_or_stalled_frame_ends_the_attempt_in_one_line(answer, reason, tmp_path, monkeypatch):
    monkeypatch.setattr(far.FarJail, "opener", broken_opener(answer))
    monkeypatch.setattr(far.FarJail, "idle", [])
    monkeypatch.setattr(far.FarJail, "command", ["ssh", "far.example"])
    monkeypatch.setattr(far, "LINK_SLACK", 0.5)
    jail = far.FarJail("attempt", [], JailLimits(), tmp_path)
    with pytest.raises(JailError) as lost:
        jail.run("print(1)")
    assert str(lost.value).startswith("the far side (ssh far.example) was lost during attempt: ") and reason in str(lost.value)
    assert "\n" not in str(lost.value) and jail.link is None


def test_no_far_side_answering_and_no_linux_are_refusals_in_one_line(monkeypatch, tmp_path):
    with pytest.raises(JailError, match=r"^--far false: no far side answered \(the link (closed|broke while sending)[^;]*\); check"):
        far.use("false")
    with pytest.raises(JailError, match="^--far /no/such/command: No such file or directory"):
        far.use("/no/such/command")
    monkeypatch.setattr(sandbox, "far_jail", None)
    monkeypatch.setattr(sys, "platform", "darwin")
    with pytest.raises(JailError, match=r"^nsjail runs only on Linux, and this is darwin: name a Linux far side with --far"):
        sandbox.new_jail("attempt", [], JailLimits(), tmp_path)


def test_tars_from_the_other_side_cannot_write_outside(tmp_path):
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, kind, target in (("../up.txt", tarfile.REGTYPE, ""), ("/abs.txt", tarfile.REGTYPE, ""),
                                   ("link", tarfile.SYMTYPE, "/etc/passwd"), ("ok.txt", tarfile.REGTYPE, ""),
                                   ("device", tarfile.CHRTYPE, "")):
            member = tarfile.TarInfo(name)
            member.type, member.linkname = kind, target
            tar.addfile(member, io.BytesIO(b""))
    into = tmp_path / "into"
    into.mkdir()
    refused = far.unpack(buffer.getvalue(), into)
    assert len(refused) == 3 and not (tmp_path / "up.txt").exists()
    assert sorted(path.name for path in into.iterdir()) == ["abs.txt", "ok.txt"]  # the data filter strips the leading /


def test_pack_keeps_links_and_caps_the_data(tmp_path):
    folder = tmp_path / "output"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "big").write_bytes(b"x" * 1000)
    os.symlink("sub/big", folder / "alias")
    into = tmp_path / "back"
    into.mkdir()
    assert far.unpack(far.pack([folder], 600), into) == []
    assert (into / "0" / "sub" / "big").read_bytes() == b"x" * 600 and os.readlink(into / "0" / "alias") == "sub/big"


def test_a_run_resumed_on_another_side_says_so():
    here = {"jail_side": far.jail_side()}
    there = {"jail_side": {"far": "limactl shell pybench", "node": "lima-pybench", "machine": "aarch64"}}
    assert far.resume_note({}, here) == "" and far.resume_note(here, here) == ""
    assert far.resume_note(here, there) == (f"note: this run began with its jails on here ({os.uname().nodename}, "
                                            f"{os.uname().machine}) and resumes with them on limactl shell pybench "
                                            "(lima-pybench, aarch64)")


# --- a run whose far side is killed mid-cell: one line; the same command resumes it --------------------------------------

DYING = r'''
import os, select, subprocess, sys, time
marker, server = sys.argv[1], sys.argv[2:]
child = subprocess.Popen(server, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
dies_at = None
while dies_at is None or time.monotonic() < dies_at:
    for fd in select.select([0, child.stdout.fileno()], [], [], 0.05)[0]:
        chunk = os.read(fd, 65536)
        if not chunk:
            sys.exit(0)
        (child.stdin if fd == 0 else sys.stdout.buffer).write(chunk)
        sys.stdout.flush()
        if fd == 0 and b"FAR-SIDE-DIES" in chunk and not os.path.exists(marker):
            open(marker, "w").close()
            dies_at = time.monotonic() + 1.0
child.kill()
'''

CHECKS = '''
def wrote(answer, output, data):
    """Verifies: output/sum.txt holds 10, the sum of numbers.csv."""
    assert (output / "sum.txt").read_text() == "10", "output/sum.txt should hold 10"
'''


@pytest.mark.slow
def test_a_run_whose_far_side_dies_mid_cell_stops_in_one_line_and_resumes(make_suite, tmp_path):
    tasks = make_suite([{"id": name, "category": "math", "query": "Sum ./data/numbers.csv into output/sum.txt.", "files": ["numbers.csv"],
                         "check": "suite:wrote"} for name in ("first", "second")], CHECKS, {"numbers.csv": b"a,b\n1,2\n3,4\n"})
    cell = "import pandas as pd\nopen('output/sum.txt', 'w').write(str(pd.read_csv('data/numbers.csv')['a'].sum() * 2 + 2))"
    dies = code("import time\ntime.sleep(3)  # FAR-SIDE-DIES\n" + cell)
    replay = write_jsonl(tmp_path / "replay.jsonl", [{"id": "first", "replies": [code(cell), "Done."]},
                                                     {"id": "second", "replies": [dies, "Done."]}])
    (tmp_path / "dying.py").write_text(DYING)
    server = [sys.executable, str(tmp_path / "dying.py"), str(tmp_path / "died"), str(ROOT / ".venv" / "bin" / "python"),
              str(ROOT / "pybench.py"), "far-serve"]
    command = [sys.executable, str(ROOT / "pybench.py"), "--tasks", str(tasks), "--replay", str(replay), "--out", str(tmp_path / "run"),
               "--parallel", "1", "--no-report", "--far", shlex.join(server)]
    first = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert first.returncode == 3, first.stderr
    assert first.stderr.count("\n") == 1 and "was lost during second" in first.stderr and "resumes the run" in first.stderr
    assert list(read_results(tmp_path / "run")) == ["first"]
    second = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr
    results = read_results(tmp_path / "run")
    assert {name: result["passed"] for name, result in results.items()} == {"first": True, "second": True}
    side = json.loads((tmp_path / "run" / "manifest.json").read_text())["jail_side"]
    assert side["far"] == shlex.join(server) and side["machine"] == os.uname().machine
