"""The device check: on a machine with an NVIDIA GPU, one command (under 10 minutes) whose output can be pasted:

    python3.12 tests/benches/bench_gpu.py [--backend cuda|vulkan] [--tokens 64] [--tasks 10]

1. build   `pybench.py setup --gpu cuda --venv .venv-cuda` (its wheel is cached in ~/.cache/pybench/wheels; for CUDA
           CMAKE_ARGS defaults to -DCMAKE_CUDA_ARCHITECTURES=native, which compiles for this GPU only: minutes, not tens)
2. device  what ggml sees: backends, each GPU with its free memory
3. decode  tests/benches/bench_parallel.py's decoding benchmark at K = 1, 4, 8, 16 (raw llama.cpp beside the kit, all layers
           offloaded), the kit with and without the shared prefix (the prompts' system prompt evaluated once and its KV
           cells copied on the GPU; the prompt tokens evaluated each way), then the kit at K=1 with --n-gpu-layers 0
           for the GPU/CPU ratio
4. tasks   the embedded model over the first 10 suite tasks (`pybench.py --limit 10`, --parallel auto): wall time per
           task, the tokens/s of the run
Steps 2-4 run in the built venv (this script calls itself there with --measure). Setup needs the package registries
(PyPI) unless the venv is already set up; the rest is offline.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def build(backend: str) -> Path:
    venv = ROOT / f".venv-{backend}"
    environment = dict(os.environ)
    if backend == "cuda":
        environment.setdefault("CMAKE_ARGS", "-DCMAKE_CUDA_ARCHITECTURES=native")
    began = time.monotonic()
    subprocess.run([sys.executable, str(ROOT / "pybench.py"), "setup", "--gpu", backend, "--venv", str(venv)], check=True, env=environment)
    print(f"build: setup --gpu {backend} in {time.monotonic() - began:.0f} s (a cached wheel is not rebuilt)", flush=True)
    return venv / "bin" / "python"


def measure(tokens: int, tasks: int) -> None:
    import bench_parallel
    from kit import engine
    import pybench

    print(f"device: llama.cpp backends {', '.join(engine.backends())}; " + ("; ".join(map(str, engine.gpus())) or f"no GPU: {engine.why_no_gpu()}"),
          flush=True)
    bench_parallel.bench_decoding(tokens, (1, 4, 8, 16))
    gpu_kit = engine.LlamaModel(pybench.default_model_path(), -1, bench_parallel.CTX, 0, 0.0, 1.0, tokens)
    cpu_kit = engine.LlamaModel(pybench.default_model_path(), 0, bench_parallel.CTX, 0, 0.0, 1.0, tokens)
    messages = bench_parallel.chat_prompts(8)
    rates = {}
    for name, kit in (("GPU", gpu_kit), ("CPU", cpu_kit)):
        generated, seconds, _, _ = bench_parallel.kit_batched(kit, messages, 1)
        rates[name] = generated / seconds
    print(f"kit K=1, 8 prompts: {rates['GPU']:.1f} tokens/s on {gpu_kit.device}, {rates['CPU']:.1f} tokens/s on the CPU "
          f"({os.cpu_count()} threads): GPU/CPU {rates['GPU'] / rates['CPU']:.2f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="pybench-bench-gpu-") as scratch:
        out = Path(scratch) / "run"
        began = time.monotonic()
        run = subprocess.run([sys.executable, str(ROOT / "pybench.py"), "--limit", str(tasks), "--out", str(out)], capture_output=True,
                             text=True)
        wall = time.monotonic() - began
        if run.returncode != 0:
            print(f"tasks: pybench.py --limit {tasks} failed (exit {run.returncode}): {run.stderr.strip().splitlines()[-1:]}")
            return
        model_line = next(line for line in run.stdout.splitlines() if line.startswith("model: "))
        results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
        generated = sum(result.get("completion_tokens", 0) for result in results)
        print(f"tasks: {model_line}")
        print(f"tasks: {len(results)} attempts in {wall:.1f} s wall ({wall / max(len(results), 1):.1f} s per task), "
              f"{generated} tokens generated ({generated / wall:.1f} tokens/s over the whole run), passed "
              f"{sum(result['passed'] for result in results)}")
        for result in results:
            print(f"  {result['id']:<40} {result['seconds']:7.1f} s  {result['turns']:2d} turn(s)  {result.get('completion_tokens', 0):6d} tokens")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=("cuda", "vulkan"), default="cuda")
    parser.add_argument("--tokens", type=int, default=64, help="new tokens per reply in the decoding benchmark")
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--measure", action="store_true", help="(internal) steps 2-4, in the built venv")
    options = parser.parse_args()
    if options.measure:
        sys.path.insert(0, str(ROOT / "tests" / "benches"))
        measure(options.tokens, options.tasks)
    else:
        began = time.monotonic()
        python = build(options.backend)
        subprocess.run([str(python), __file__, "--measure", "--tokens", str(options.tokens), "--tasks", str(options.tasks)], check=True)
        print(f"device check done in {time.monotonic() - began:.0f} s", flush=True)
