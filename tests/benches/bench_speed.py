"""Speed of the harness beside its baselines, measured side by side in one run (this machine is shared: compare the
ratios, not the absolute times). Not a test: run it with `.venv/bin/python tests/benches/bench_speed.py`.

  jail start        a jail with its worker ready        beside  plain `python -I -c pass` (and a Jupyter kernel, if installed)
  cell round-trip   jail.run("pass")                      beside  a pipe round-trip to a plain child process
  environments      jail start and cells in each jail environment (our suite's, the original's with its kernel
                    display) beside plain `python -I -c pass`; the first shown value imports IPython's pretty printer
  model             tokens/s of LlamaModel.reply in a task beside raw llama-cpp-python on the same messages
  figure record     jail start and a savefig cell with the figure recorder beside the same worker without it
  estimate          `--estimate 2,5 [--busy]`: the first estimate of a run of the embedded model on N tasks beside its
                    wall time (with --busy, beside a process spinning on a CPU, `python3 -c 'while 1: pass'`), alone
"""
import importlib.util
import os
import py_compile
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kit import engine  # noqa: E402
from kit import harness  # noqa: E402
from kit import jailed  # noqa: E402
import pybench  # noqa: E402
from kit import sandbox  # noqa: E402


def median_ms(samples):
    return 1000 * statistics.median(samples)


def timed(action):
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def bench_jail(rounds: int = 40, cells: int = 300):
    work = Path(tempfile.mkdtemp(prefix="pybench-bench-"))
    (work / "output").mkdir()
    os.chmod(work / "output", 0o777)
    binds = [(str(work / "output"), f"{sandbox.JAIL_ROOT}/output", True)]
    plain, jailed, uncgrouped = [], [], []
    with_cgroups = sandbox.cgroup_settings
    for round_number in range(rounds):  # interleaved, so drift hits all alike
        plain.append(timed(lambda: subprocess.run([sys.executable, "-I", "-c", "pass"], check=True)))
        for times, settings in ((jailed, with_cgroups), (uncgrouped, lambda limits: {})):
            with mock.patch.object(sandbox, "cgroup_settings", settings):  # put back on the way out, whatever happens
                jail = sandbox.Jail(f"bench{round_number}", binds, sandbox.JailLimits(), work)
                times.append(timed(jail.start))
                jail.kill()
    jail = sandbox.Jail("bench-cells", binds, sandbox.JailLimits(), work)
    jail.start()
    round_trips = [timed(lambda: jail.run("pass")) for _ in range(cells)]
    restart = [timed(lambda: jail.restart(sandbox.BoundedOutput(1024), "bench")) for _ in range(5)]
    kit_calls = [timed(lambda: jail.call("probe_imports", libraries=["json"], nltk_resources=[])) for _ in range(20)]  # as a check is called
    jail.kill()
    plain_dir, tmpfs_dir = [], []
    for _ in range(20):  # ./output/ per attempt: a plain folder, or (as root) a tmpfs kept on disk when the attempt ends
        folder = work / "attempt"
        plain_dir.append(timed(lambda: (folder.mkdir(), (folder / "out.csv").write_text("a\n"), sandbox.remove_tree(folder))))
        tmpfs_dir.append(timed(lambda: (folder.mkdir(), sandbox.mount_output(folder, sandbox.JailLimits()), (folder / "out.csv").write_text("a\n"),
                                        sandbox.keep_output(folder, 2**20), sandbox.remove_tree(folder))))
    echo = subprocess.Popen([sys.executable, "-I", "-c", "import sys\nfor line in sys.stdin: print(line, end='', flush=True)"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    pipe = []
    for _ in range(cells):
        pipe.append(timed(lambda: (echo.stdin.write("x\n"), echo.stdin.flush(), echo.stdout.readline())))
    echo.stdin.close()
    echo.wait()
    print(f"plain python -I -c pass    {median_ms(plain):7.1f} ms (median of {rounds})")
    print(f"jail start, worker ready   {median_ms(jailed):7.1f} ms   ratio {statistics.median(jailed) / statistics.median(plain):.2f}x plain python")
    print(f"  the same without cgroups {median_ms(uncgrouped):7.1f} ms   ratio {statistics.median(uncgrouped) / statistics.median(plain):.2f}x "
          "(the difference: the kernel attaching a process to a new cgroup)")
    print(f"cell round-trip (pass)     {median_ms(round_trips):7.2f} ms (median of {cells}); plain pipe round-trip {median_ms(pipe):.2f} ms")
    print(f"worker restart             {median_ms(restart):7.1f} ms (median of 5)")
    print(f"a kit call (arguments as data) {median_ms(kit_calls):5.2f} ms (median of 20; beside the round-trip of `pass`)")
    print(f"./output/ as a tmpfs       {median_ms(tmpfs_dir):7.2f} ms per attempt (mount, one file, copy to disk, unmount) beside "
          f"{median_ms(plain_dir):.2f} ms for a plain folder{'' if os.geteuid() == 0 else ' (not root: no tmpfs, both plain)'}")


def bench_figures(rounds: int = 10):
    """What the figure record costs: worker start, and a cell that draws and saves a chart, with and without it."""
    work = Path(tempfile.mkdtemp(prefix="pybench-bench-"))
    (work / "output").mkdir()
    os.chmod(work / "output", 0o777)
    binds = [(str(work / "output"), f"{sandbox.JAIL_ROOT}/output", True)]
    recording = sandbox.worker_folder()
    bare = Path(tempfile.mkdtemp(prefix="pybench-bench-worker-"))  # the same worker without the hook: a copy of jailed.py
    source = Path(jailed.__file__).read_text()
    assert "    take_figures = figure_hook()\n" in source
    (bare / "jailed.py").write_text(source.replace("    take_figures = figure_hook()\n", "    take_figures = lambda: ''  # noqa: E731\n"))
    py_compile.compile(str(bare / "jailed.py"), cfile=importlib.util.cache_from_source(str(bare / "jailed.py")),
                       dfile=f"{jailed.JAIL_FOLDER}/jailed.py", invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    bare.chmod(0o755)
    chart = ("fig, ax = plt.subplots(); ax.bar(range(40), range(40)); ax.plot(np.arange(20000.0), color='red')\n"
             "fig.savefig('output/bench.png'); plt.close(fig)")
    times = {"with": ([], []), "without": ([], [])}
    for round_number in range(rounds):  # interleaved, so drift hits both alike
        for label, folder in (("with", recording), ("without", bare)):
            with mock.patch.object(sandbox, "worker_folder", lambda folder=folder: folder):  # put back on the way out, whatever happens
                jail = sandbox.Jail(f"bench-fig{round_number}", binds, sandbox.JailLimits(), work)
                times[label][0].append(timed(jail.start))
                jail.run("import numpy as np, matplotlib.pyplot as plt\n" + chart)  # imports and the first draw, not timed
                times[label][1].append(timed(lambda: jail.run(chart)))
                jail.kill()
    (start, cell), (bare_start, bare_cell) = times["with"], times["without"]
    print(f"jail start with recorder   {median_ms(start):7.1f} ms   without {median_ms(bare_start):.1f} ms   "
          f"ratio {statistics.median(start) / statistics.median(bare_start):.2f}x")
    print(f"savefig cell with record   {median_ms(cell):7.1f} ms   without {median_ms(bare_cell):.1f} ms   "
          f"ratio {statistics.median(cell) / statistics.median(bare_cell):.2f}x (median of {rounds})")


def bench_environments(rounds: int = 20, cells: int = 200):
    """Each jail environment, interleaved round by round: start, a cell, a cell whose value is shown, the first shown value."""
    work = Path(tempfile.mkdtemp(prefix="pybench-bench-"))
    plain = []
    starts = {name: [] for name in sandbox.JAIL_ENVIRONMENTS}
    first_value = {name: [] for name in sandbox.JAIL_ENVIRONMENTS}
    value = "{'a' * 30: 1, 'b' * 30: 2, 'c' * 30: (1, 2, 3)}"
    for round_number in range(rounds):
        plain.append(timed(lambda: subprocess.run([sys.executable, "-I", "-c", "pass"], check=True)))
        for name in sandbox.JAIL_ENVIRONMENTS:
            jail = sandbox.Jail(f"env-{name}-{round_number}", [], sandbox.JailLimits(), work, environment=name)
            starts[name].append(timed(jail.start))
            first_value[name].append(timed(lambda: jail.run(value)))
            jail.kill()
    print(f"plain python -I -c pass    {median_ms(plain):7.1f} ms (median of {rounds})")
    for name in sandbox.JAIL_ENVIRONMENTS:
        jail = sandbox.Jail(f"env-{name}-cells", [], sandbox.JailLimits(), work, environment=name)
        jail.start()
        jail.run(value)
        passes = [timed(lambda: jail.run("pass")) for _ in range(cells)]
        shown = [timed(lambda: jail.run(value)) for _ in range(cells)]
        jail.kill()
        print(f"{name + ' environment:':22s} jail start {median_ms(starts[name]):6.1f} ms ({statistics.median(starts[name]) / statistics.median(plain):.2f}x "
              f"plain python); cell 'pass' {median_ms(passes):.2f} ms; a shown value {median_ms(shown):.2f} ms; the first shown "
              f"value {median_ms(first_value[name]):.1f} ms")


def bench_jupyter(rounds: int = 5):
    """A Jupyter kernel start, as the original harness makes one per task; only where jupyter_client and ipykernel are installed."""
    import importlib.util

    if not (importlib.util.find_spec("jupyter_client") and importlib.util.find_spec("ipykernel")):
        print("jupyter kernel start        not measured (jupyter_client and ipykernel are not installed)")
        return
    from jupyter_client.manager import start_new_kernel

    starts = []
    for _ in range(rounds):
        start = time.perf_counter()
        manager, client = start_new_kernel(kernel_name="python3")
        starts.append(time.perf_counter() - start)
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    print(f"jupyter kernel start       {median_ms(starts):7.1f} ms (median of {rounds})")


def bench_model(max_tokens: int = 128, rounds: int = 3):
    import llama_cpp

    path = pybench.default_model_path()
    task = harness.Task("bench", "math", "Compute the sum of the squares of the integers from 1 to 100 with Python.", {}, [], "x", "y", Path("."))
    messages = harness.TaskRun(task, Path("."), 10, None, harness.Conversation()).messages
    ours = engine.LlamaModel(path, -1, 8192, 0, 0.2, 0.85, max_tokens)
    ours.open(1, 1)  # one sequence, as --parallel 1
    raw = llama_cpp.Llama(model_path=str(path), n_ctx=8192, seed=0, n_threads=os.cpu_count(), verbose=False)
    loop_rates, raw_rates = [], []
    for _ in range(rounds):
        session = ours.attempt("bench", 0)
        start = time.perf_counter()
        reply = session.reply(messages)
        session.close()
        loop_rates.append(reply.completion_tokens / (time.perf_counter() - start))
        raw.reset()
        start = time.perf_counter()
        response = raw.create_chat_completion(messages=engine.merge_consecutive_roles(messages), temperature=0.2, top_p=0.85,
                                              max_tokens=max_tokens, seed=0)
        raw_rates.append(response["usage"]["completion_tokens"] / (time.perf_counter() - start))
    print(f"model {path.name}: {statistics.median(loop_rates):.1f} tokens/s in the loop, {statistics.median(raw_rates):.1f} raw "
          f"llama-cpp-python (ratio {statistics.median(loop_rates) / statistics.median(raw_rates):.2f}; prompt {reply.prompt_tokens} tokens, "
          f"{reply.completion_tokens} generated)")


def bench_estimate(counts: list[int], busy: bool):
    """pybench.py --limit N with the embedded model, its first estimate's seconds beside the whole command's wall time
    (model load and probes included), the load average before and after."""
    import re
    import shutil

    for count in counts:
        spinner = subprocess.Popen([sys.executable, "-c", "while 1: pass"]) if busy else None
        out = Path(tempfile.mkdtemp(prefix="pybench-estimate-"))
        load = os.getloadavg()[0]
        start = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, str(pybench.HERE / "pybench.py"), "--limit", str(count), "--out", str(out / "run"),
                                   "--no-report"], capture_output=True, text=True)
        finally:
            if spinner:
                spinner.kill()
        wall = time.perf_counter() - start
        shutil.rmtree(out, ignore_errors=True)
        line = next((line for line in done.stdout.splitlines() if "should take" in line), done.stderr[-300:])
        said = re.search(r"should take ~(?:(\d+) h )?(\d+) (s|min)", line)
        seconds = said and (int(said[1] or 0) * 3600 + int(said[2]) * (60 if said[3] == "min" else 1))
        print(f"estimate, {count} task(s){' beside a busy process' if busy else ''}: said {seconds} s, took {wall:.0f} s "
              f"({wall / seconds:.2f}x)" if seconds else f"estimate: no estimate line: {line}", f"load {load:.1f} -> {os.getloadavg()[0]:.1f}")
        print(f"  {line}")


if __name__ == "__main__":
    if "--estimate" in sys.argv:
        bench_estimate([int(n) for n in sys.argv[sys.argv.index("--estimate") + 1].split(",")], "--busy" in sys.argv)
        sys.exit(0)
    bench_jail()
    bench_figures()
    bench_environments()
    bench_jupyter()
    bench_model()
