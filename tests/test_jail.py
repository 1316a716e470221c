"""The jail, attacked through the real loop: replayed agent cells run in real nsjail jails."""
import os
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from conftest import ROOT, code, read_results, run_pybench, write_jsonl

pytestmark = pytest.mark.slow  # every test here starts jails, models or whole runs

CHECKS = '''
from pathlib import Path

def wrote_after(answer: str, output: Path, data: Path) -> None:
    """Verifies: the cell after the attacks ran and wrote output/after.txt."""
import pytest
    assert (output / "after.txt").read_text() == "ok", "after.txt missing"

def total(answer: str, output: Path, data: Path) -> None:
    """Verifies: the answer states 10, the sum of numbers.csv."""
    assert "10" in answer.split(), "the answer should state 10"
'''


def observations(result: dict) -> list[str]:
    """The interpreter's answer to each assistant reply that ran code, in order."""
    messages = result["messages"]
    return [messages[i + 1]["content"] for i, m in enumerate(messages[:-1]) if m["role"] == "assistant"]


def test_hostile_cells_are_contained_and_the_run_goes_on(make_suite, tmp_path):
    secret = Path.home() / f".pybench-secret-{os.getpid()}"
    secret.write_text("host secret")
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    accepted = []
    threading.Thread(target=lambda: accepted.append(_accept(listener)), daemon=True).start()
    tasks = make_suite(
        [{"id": "hostile", "category": "software", "query": "attack", "files": ["numbers.csv"], "check": "suite:wrote_after"},
         {"id": "next", "category": "math", "query": "Sum ./data/numbers.csv", "files": ["numbers.csv"], "check": "suite:total"}],
        CHECKS, {"numbers.csv": b"a,b\n1,2\n3,4\n"})
    probe = "def probe(label, action):\n    try:\n        action()\n        print(label, 'OPEN')\n    except Exception as error:\n        print(label, 'BLOCKED', type(error).__name__)\n"
    hostile = [
        code("x = 1\n" + probe),
        code(f"import socket\nprobe('tcp', lambda: socket.create_connection(('127.0.0.1', {port}), timeout=2))\n"
             "probe('dns', lambda: socket.getaddrinfo('pypi.org', 443))"),
        code("probe('root', lambda: open('/escape', 'w'))\nprobe('cwd', lambda: open('/task/escape', 'w'))\n"
             "probe('data-new', lambda: open('data/new.csv', 'w'))\nprobe('data-edit', lambda: open('data/numbers.csv', 'a'))\n"
             f"probe('host-path', lambda: open('{ROOT}/escape', 'w'))"),
        code(f"probe('secret', lambda: open('{secret}').read())\nprobe('checks', lambda: open('{ROOT}/checks/common.py').read())\n"
             "probe('checks-mount', lambda: open('/checks/suite.py').read())\nimport os\nprint('home', os.path.exists(os.path.expanduser('~') + '/.bashrc'))"),
        code("a = []\nwhile True:\n    a.append(bytearray(50 * 2**20))"),
        code("a = None\nprint('alive after memory bomb')"),
        code("while True:\n    pass"),
        code("print('alive after loop', x)"),
        code("import signal, subprocess\nsubprocess.Popen(['sleep', '4242'], start_new_session=True)\n"
             "signal.signal(signal.SIGINT, signal.SIG_IGN)\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass"),
        code("open('output/after.txt', 'w').write('ok')\nprint('alive after kill')"),
        "All attacks done.",
    ]
    replay = write_jsonl(tmp_path / "replay.jsonl", [
        {"id": "hostile", "replies": hostile},
        {"id": "next", "replies": [code("import pandas as pd\nint(pd.read_csv('data/numbers.csv').values.sum())"), "The sum is 10"]}])
    out = tmp_path / "run"
    try:
        finished = run_pybench("--tasks", tasks, "--replay", replay, "--out", out, "--memory", "1", "--cell-timeout", "3", "--max-turns", "20")
    finally:
        secret_after = secret.read_text()
        secret.unlink()
        listener.close()
    assert finished.returncode == 0, finished.stderr
    results = read_results(out)
    seen = observations(results["hostile"])
    assert "tcp BLOCKED" in seen[1] and "dns BLOCKED" in seen[1], seen[1]
    assert accepted == [None], "the jail reached a port listening on the host's loopback"
    for label in ("root", "cwd", "data-new", "data-edit"):
        assert f"{label} BLOCKED" in seen[2], seen[2]
    # host-path may "open" when the project sits under /tmp: it then lands in the jail's private /tmp, never on the host
    assert not (ROOT / "escape").exists()
    for label in ("secret", "checks", "checks-mount"):
        assert f"{label} BLOCKED" in seen[3], seen[3]
    assert "home False" in seen[3]
    assert "MemoryError" in seen[4] or "restarted" in seen[4], seen[4]
    assert "alive after memory bomb" in seen[5]
    assert "interrupted" in seen[6] and "alive after loop 1" in seen[7], seen[6:8]
    assert "killed and restarted" in seen[8] and "alive after kill" in seen[9], seen[8:10]
    assert results["hostile"]["passed"] and results["hostile"]["worker_restarts"] >= 1
    assert results["next"]["passed"], results["next"]["reason"]
    assert secret_after == "host secret"
    assert subprocess.run(["pgrep", "-f", "sleep 4242"], capture_output=True).returncode == 1, "a process the task started outlived it"
    assert not (ROOT / "escape").exists()


def _accept(listener):
    try:
        connection, _ = listener.accept()
        connection.close()
        return "connected"
    except OSError:
        return None
