"""The worker channel (issue 24, point 3): a result for a cell is accepted only from the worker loop, never from the cell,
a thread it left running, or a process it left holding the pipes. Real jails, real cells."""
import pytest

from kit import sandbox

pytestmark = pytest.mark.slow  # every test here starts a jail

# Finds the worker loop's frame (the one holding `send` and this cell's `token`) from any thread of the worker.
FIND_WORKER = '''
import sys
def worker_frame(frames):
    for top in frames:
        f = top
        while f is not None:
            if callable(f.f_locals.get("send")) and isinstance(f.f_locals.get("token"), str):
                return f.f_locals
            f = f.f_back
'''

FORGE_OWN = FIND_WORKER + '''
worker = worker_frame([sys._getframe()])
worker["send"](worker["token"], status="ok")
raise ValueError("THE REAL ERROR")
'''

FORGE_WITH_MARKER = FIND_WORKER + '''
import os
worker = worker_frame([sys._getframe()])
worker["send"](worker["token"], status="ok")
os.write(1, worker["marker"].encode())
raise ValueError("THE REAL ERROR")
'''

THREAD_LEFT = FIND_WORKER + '''
import threading, time
first = worker_frame([sys._getframe()])["token"]
def answer_for_the_next_cell():
    while True:
        worker = worker_frame(list(sys._current_frames().values()))
        if worker and worker["token"] != first:
            worker["send"](worker["token"], status="ok")
            print("FORGED BY THE THREAD")
            return
        time.sleep(0.0005)
threading.Thread(target=answer_for_the_next_cell, daemon=True).start()
print("thread started")
'''

NEXT_CELL = "import time\ntime.sleep(0.5)\nraise ValueError('THE REAL ERROR')"

# A child made with libc's fork (so Python's at-fork hooks do not run) that keeps the pipes, steals the next command
# and answers it with "ok".
CHILD_LEFT = FIND_WORKER + '''
import ctypes, os
worker = worker_frame([sys._getframe()])
command_fd = worker["command_fd"]
if ctypes.CDLL(None).fork() == 0:
    def read(size):
        data = b""
        while len(data) < size:
            data += os.read(command_fd, size - len(data))
        return data
    count = int.from_bytes(read(4), "big")
    fields = [read(int.from_bytes(read(4), "big")).decode() for _ in range(count)]
    worker["send"](fields[0], status="ok")
    os.write(1, fields[2].encode())
    os._exit(0)
print("child left")
'''

REOPEN = '''
import subprocess, sys
probe = "import sys\\ntry:\\n    open('/proc/1/fd/' + sys.argv[1], 'wb')\\n    print('REOPENED')\\nexcept OSError as error:\\n    print('REFUSED', type(error).__name__)"
for fd in ("3", "4"):
    print(subprocess.run([sys.executable, "-c", probe, fd], capture_output=True, text=True).stdout.strip())
'''


@pytest.fixture
def jail(tmp_path):
    jail = sandbox.Jail("channel", [], sandbox.JailLimits(cell_timeout=20.0), tmp_path)
    yield jail
    jail.kill()


@pytest.mark.parametrize("attack", [FORGE_OWN, FORGE_WITH_MARKER], ids=["result", "result-and-marker"])
def test_a_cell_that_forges_its_own_result_is_not_believed(jail, attack):
    jail.run("kept = 1")
    cell = jail.run(attack)
    assert cell.status != "ok", cell
    assert cell.status == "restarted" and "Something other than the worker" in cell.error, cell
    after = jail.run("print('after', 'kept' in dir())")
    assert after.status == "ok" and "after False" in after.output, after  # a fresh worker, honestly said so


def test_a_thread_left_running_cannot_answer_for_a_later_cell(jail):
    first = jail.run(THREAD_LEFT)
    assert first.status == "ok" and "thread started" in first.output, first
    cell = jail.run(NEXT_CELL)
    assert cell.status != "ok", cell
    assert cell.status == "restarted" and "Something other than the worker" in cell.error, cell
    assert jail.run("1 + 1").output == "2\n"


def test_a_child_left_holding_the_pipes_is_killed_before_the_next_cell(jail):
    first = jail.run(CHILD_LEFT)
    assert first.status == "ok" and "child left" in first.output, first
    cell = jail.run(NEXT_CELL)
    assert cell.status == "error" and cell.error_message == "THE REAL ERROR", cell


def test_no_other_process_can_reopen_the_workers_pipes(jail):
    cell = jail.run(REOPEN)
    assert cell.output.split("\n")[:2] == ["REFUSED PermissionError"] * 2, cell


def test_honest_cells_keep_their_state_their_errors_and_their_children(jail):
    """Fidelity: state across cells, errors as errors, and a fork pool and a background program a cell started go on."""
    assert jail.run("import multiprocessing, subprocess\npool = multiprocessing.get_context('fork').Pool(2)\n"
                    "sleeper = subprocess.Popen(['sleep', '30'])\nx = 41").status == "ok"
    assert jail.run("raise KeyError('k')").error_type == "KeyError"
    cell = jail.run("print(x + 1, pool.map(abs, [-1, -2]), sleeper.poll())")
    assert cell.status == "ok" and cell.output == "42 [1, 2] None\n", cell
