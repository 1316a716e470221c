"""llama.cpp's threads: today's setting (os.cpu_count(), every core of the machine) beside the kit's (--threads'
default, sandbox.usable_cpus(): the CPUs this process may use), in tokens/s of LlamaModel.reply with the embedded
SmolLM2, while a competing CPU-bound process runs (as a jail's cell does beside the model). Not a test: run it with
`.venv/bin/python tests/benches/bench_threads.py [ROUNDS]`; compare the ratios (this machine is shared).

  a job's share   the model process and the competitor confined to half the machine's CPUs (at least one), as
                  taskset, a container's cpuset or a Slurm job confines them: today's setting runs more threads
                  than there are CPUs
  whole machine   nothing confined, the competitor anywhere: both settings are the same number (the control)

Each measurement is a fresh process (model load not timed), the settings interleaved round by round.
"""
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOKENS = 96
MEASURE = f"""
import os, sys, time
sys.path.insert(0, {str(ROOT)!r})
import pybench
from kit import engine, sandbox
threads = os.cpu_count() if sys.argv[1] == "today" else sandbox.usable_cpus()[0]
model = engine.LlamaModel(pybench.default_model_path(), 0, 1024, 0, 0.0, 1.0, {TOKENS}, threads=threads)
model.open(1, 1)
session = model.attempt("bench", 0)
messages = [{{"role": "user", "content": "Write a long Python module with many small functions about dates."}}]
start = time.perf_counter()
session.reply(messages)
print(threads, model.generated / (time.perf_counter() - start))
"""


def measure(setting: str, cpus: set[int] | None) -> tuple[int, float]:
    confine = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    done = subprocess.run([sys.executable, "-c", MEASURE, setting], capture_output=True, text=True, check=True, preexec_fn=confine)
    threads, rate = done.stdout.split()
    return int(threads), float(rate)


def scenario(name: str, cpus: set[int] | None, rounds: int) -> None:
    confine = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    competitor = subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=confine)
    try:
        rates: dict[str, list[float]] = {"today": [], "kit": []}
        threads = {}
        for _ in range(rounds):
            for setting in rates:
                threads[setting], rate = measure(setting, cpus)
                rates[setting].append(rate)
    finally:
        competitor.kill()
        competitor.wait()
    today, kit = (statistics.median(rates[setting]) for setting in ("today", "kit"))
    where = f"CPUs {sorted(cpus)} of {os.cpu_count()}" if cpus else f"all {os.cpu_count()} CPUs"
    print(f"{name:<14} ({where}, one competing CPU-bound process): today n_threads={threads['today']} {today:6.1f} tokens/s, "
          f"kit n_threads={threads['kit']} {kit:6.1f} tokens/s: kit/today {kit / today:.2f}x "
          f"(medians of {rounds}; today {', '.join(f'{r:.1f}' for r in rates['today'])}; kit {', '.join(f'{r:.1f}' for r in rates['kit'])})")


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    allowed = sorted(os.sched_getaffinity(0))
    scenario("a job's share", set(allowed[:max(1, len(allowed) // 2)]), rounds)
    scenario("whole machine", None, rounds)


if __name__ == "__main__":
    main()
