"""The device check: on a machine with an NVIDIA GPU, one command without network (under 10 minutes once built) whose
output can be pasted into an issue:

    python3.12 tests/benches/bench_gpu.py --wheels DIR                 # build the CUDA wheel from DIR, then measure
    python3.12 tests/benches/bench_gpu.py --python .venv-cuda/bin/python   # measure with a venv built before

1. build    kit/gpu.py's build of llama-cpp-python at requirements.txt's pin into .venv-cuda (--venv), pip reading DIR alone
            (--no-index --find-links: the sdist, its build requirements, llama-cpp-python's and gguf's wheels; docs/gpu.md
            says how to fill it); the wheel is cached in ~/.cache/pybench/wheels and not rebuilt. For CUDA CMAKE_ARGS
            defaults to -DCMAKE_CUDA_ARCHITECTURES=native (this GPU only: minutes, not tens)
2. models   tests/benches/make_gguf.py's random Q4_0 models in real shapes (--shapes; default SmolLM2-135M's, a 1.5B and
            a 7B Qwen2.5's), made on the machine in seconds to a minute; or --model FILE
3. device   what ggml sees: the backends, each GPU with its free memory
4. decode   for each model: the layers llama.cpp offloaded; raw llama.cpp (its low-level API, bench_parallel.raw_batched)
            and the kit (LlamaModel) side by side at K = 1, 4, 8, 16, greedy, every reply --tokens long (a random model
            never stops early), the kit with and without the shared prefix (the system prompt evaluated once, its KV
            cells copied on the device): tokens/s and prompt tokens evaluated, and whether the kit's replies are the
            same at every K and both ways; then the kit at K=1 on the GPU against --n-gpu-layers 0 (this machine's CPU)
5. largest  for the last model: --parallel auto's choice from the device's free memory at --ctx 8192; a typical
            attempt measured (a --prompt-tokens prompt, --turns turns of --turn-tokens new tokens, a cell output of
            --observation-tokens between them); the model under a forced budget (PYBENCH_GPU_MEMORY_GIB: 1 GiB plus 60% of
            the model) loaded with fewer layers
Each line is printed as soon as it is measured, so a run cut off still reports what it got. Steps 2-5 run in the built
venv (this script calls itself there with --measure); with --python they run in that venv (.venv, the CPU build, and
.venv-vulkan on lavapipe are how tests/test_gpu.py runs them, at the tiny shape).
"""
import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
GIB = 2**30


# --- build: the GPU wheel from a local folder, into a venv of its own ------------------------------------------

def build(backend: str, wheels: Path | None, venv: Path) -> Path:
    """A venv with llama-cpp-python built with `backend` (pip reading `wheels` alone where given) and gguf."""
    from kit import gpu
    from kit.harness import requirement_pins
    import pybench

    pins = requirement_pins()
    python = venv / "bin" / "python"
    if backend == "cuda":
        os.environ.setdefault("CMAKE_ARGS", "-DCMAKE_CUDA_ARCHITECTURES=native")
    began = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    try:
        wheel, facts = gpu.build_wheel(backend, f"llama-cpp-python=={pins['llama-cpp-python']}", python, pybench.install_system_packages,
                                       wheels)
    except gpu.BuildError as error:
        sys.exit(f"error: {error}")
    offline = ["--no-index", "--find-links", str(wheels)] if wheels else []
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *offline, "--force-reinstall", str(wheel),
                    f"gguf=={pins['gguf']}"], check=True)
    print(f"build: llama.cpp with {facts['cmake_args']} (compiled once, in {facts['build_seconds']} s: {wheel.parent}), {venv} ready in "
          f"{time.monotonic() - began:.0f} s", flush=True)
    return python


# --- decoding: raw llama.cpp beside the kit, at each K, with and without the shared prefix ------------------------

def suite_prompts(count: int, cut: int | None) -> list[list[dict]]:
    """The opening messages of the first `count` suite tasks (bench_parallel's), each message cut to `cut` characters
    where given (the tests, on lavapipe: a few tokens each)."""
    import bench_parallel

    return [[message | {"content": message["content"][:cut]} for message in messages] for messages in bench_parallel.chat_prompts(count)]


def decoding(path: Path, tokens: int, ks: list[int], prompts: int, cut: int | None) -> None:
    import bench_parallel
    from kit import engine

    messages = suite_prompts(prompts, cut)
    kit = engine.LlamaModel(path, -1, bench_parallel.CTX, 0, 0.0, 1.0, tokens)
    ids = [kit.render(engine.merge_consecutive_roles(m), 0).prompt for m in messages]
    print(f"model: {path.name} ({path.stat().st_size / 2**20:.0f} MiB) on {kit.device}", flush=True)
    bench_parallel.kit_batched(kit, messages[:1], 1)  # warm-up: the backend's first kernels, outside the figures
    print(f"  {len(ids)} prompts of {min(map(len, ids))}-{max(map(len, ids))} tokens ({sum(map(len, ids))} in all), {tokens} new tokens "
          f"each, greedy, {kit.threads} threads\n     K  raw tokens/s  kit tokens/s  kit/raw  shared tokens/s  shared/raw  kit K / kit 1"
          "  prompt tokens evaluated (shared / not)  new tokens raw/kit/shared", flush=True)
    replies, first = set(), None
    for k in ks:
        generated, seconds = {}, {}
        generated["raw"], seconds["raw"] = bench_parallel.on_a_thread(lambda: bench_parallel.raw_batched(path, ids, k, tokens))
        evaluated = {}
        for shared in (False, True):
            kit.shared_prefix = shared
            generated[shared], seconds[shared], texts, evaluated[shared] = bench_parallel.kit_batched(kit, messages, k)
            replies.add(tuple(texts))
        rate = {kind: generated[kind] / seconds[kind] for kind in generated}
        first = first or rate[False]
        print(f"  {k:4d} {rate['raw']:13.1f} {rate[False]:13.1f} {rate[False] / rate['raw']:8.2f} {rate[True]:16.1f} {rate[True] / rate['raw']:11.2f} "
              f"{rate[False] / first:14.2f}  {evaluated[True]:6d} / {evaluated[False]:6d}        "
              f"{generated['raw']}/{generated[False]}/{generated[True]}", flush=True)
    print(f"  kit replies identical at K={', '.join(map(str, ks))}, with and without the shared prefix: {len(replies) == 1}", flush=True)
    kit.shared_prefix = True
    gpu_against_cpu(path, kit, messages[:2], tokens)
    release(kit)


def gpu_against_cpu(path: Path, kit, messages: list[list[dict]], tokens: int) -> None:
    """The kit at K=1 on the device it loaded on and with --n-gpu-layers 0, on the same prompts."""
    import bench_parallel
    from kit import engine

    on_cpu = engine.LlamaModel(path, 0, bench_parallel.CTX, 0, 0.0, 1.0, tokens)
    bench_parallel.kit_batched(on_cpu, messages[:1], 1)  # warm-up, as the device's
    rates = [generated / seconds for generated, seconds, _, _ in (bench_parallel.kit_batched(model, messages, 1) for model in (kit, on_cpu))]
    print(f"  kit K=1, {len(messages)} prompts: {rates[0]:.1f} tokens/s on {kit.device.split(':')[0]}, {rates[1]:.1f} tokens/s with "
          f"--n-gpu-layers 0 ({on_cpu.threads} threads): {rates[0] / rates[1]:.2f}x", flush=True)
    release(on_cpu)


def release(model) -> None:
    """Free a LlamaModel's context and weights (the device's memory, before the next model is measured)."""
    model.close()
    model.llm.close()


# --- the largest model: --parallel auto, a typical attempt, a forced budget -----------------------------------------

def parallel_auto(path: Path, ctx: int) -> None:
    from kit import engine

    model = engine.LlamaModel(path, -1, ctx, 0, 0.0, 1.0, 16)
    slots = model.open(None, 100)
    print(f"parallel auto: {path.name} at --ctx {model.n_ctx}, 100 attempts: {slots} at once ({model.choice})", flush=True)
    release(model)


def filler(model, count: int, offset: int = 0) -> str:
    """Text of `count` tokens of this model, cut from the suite's words (offset: where in them to start)."""
    import make_gguf

    words = make_gguf.suite_words()
    text = "".join(words[(offset + n) % len(words)] for n in range(4 * count)).replace(make_gguf.SPACE, " ")
    ids = model.llm.tokenize(text.encode(), add_bos=False)
    return model.llm.detokenize(ids[:count]).decode(errors="ignore")


def typical_attempt(path: Path, prompt_tokens: int, turns: int, turn_tokens: int, observation_tokens: int, cut: int | None) -> None:
    """One attempt as the kit runs it: the opening prompt (the suite's system prompt and a first task, filled up to
    prompt_tokens), then `turns` replies of turn_tokens each, a cell output of observation_tokens after each."""
    from kit import engine

    model = engine.LlamaModel(path, -1, 8192, 0, 0.0, 1.0, turn_tokens)
    model.open(1, 1)
    session = model.attempt("typical", 0)
    messages = suite_prompts(1, cut)[0]
    opening = len(model.render(engine.merge_consecutive_roles(messages), 0).prompt)
    messages = messages + [{"role": "user", "content": filler(model, max(0, prompt_tokens - opening - 2))}]
    began, evaluated, generated = time.perf_counter(), 0, 0
    print(f"typical attempt: {path.name} on {model.device}, a {len(model.render(engine.merge_consecutive_roles(messages), 0).prompt)}-token "
          f"prompt, {turns} turns of {turn_tokens} new tokens, {observation_tokens} tokens of cell output between them", flush=True)
    for turn in range(1, turns + 1):
        start = time.perf_counter()
        reply = session.reply(messages)
        evaluated, generated = evaluated + reply.prompt_evaluated, generated + reply.completion_tokens
        print(f"  turn {turn:2d}: {reply.prompt_evaluated:5d} prompt tokens evaluated, {reply.completion_tokens} generated in "
              f"{time.perf_counter() - start:.2f} s", flush=True)
        messages = messages + [{"role": "assistant", "content": reply.text}, {"role": "user", "content": filler(model, observation_tokens, turn)}]
    print(f"  the attempt: {time.perf_counter() - began:.1f} s, {evaluated} prompt tokens evaluated, {generated} generated", flush=True)
    session.close()
    release(model)


def forced_budget(path: Path) -> None:
    from kit import engine

    os.environ[engine.BUDGET_VARIABLE] = f"{1 + 0.6 * path.stat().st_size / GIB:.9f}"  # 1 GiB is kept for the KV cache
    try:
        model = engine.LlamaModel(path, -1, 2048, 0, 0.0, 1.0, 16)
        print(f"budget {engine.BUDGET_VARIABLE}={os.environ[engine.BUDGET_VARIABLE]}: {path.name} on {model.device}", flush=True)
        release(model)
    finally:
        del os.environ[engine.BUDGET_VARIABLE]


def measure(options: argparse.Namespace) -> None:
    from kit import engine
    import make_gguf

    began = time.monotonic()
    models = options.model or [make_gguf.make(name, options.models) for name in options.shapes.split(",")]
    print(f"device: llama.cpp backends {', '.join(engine.backends())}; " + ("; ".join(map(str, engine.gpus())) or f"no GPU: {engine.why_no_gpu()}"),
          flush=True)
    for path in models:
        decoding(path, options.tokens, [int(k) for k in options.ks.split(",")], options.prompts, options.cut)
    parallel_auto(models[-1], 8192)
    typical_attempt(models[-1], options.prompt_tokens, options.turns, options.turn_tokens, options.observation_tokens, options.cut)
    forced_budget(models[-1])
    print(f"measured in {time.monotonic() - began:.0f} s", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=("cuda", "vulkan"), default="cuda")
    parser.add_argument("--wheels", type=Path, help="the folder pip reads alone for the build (no package index)")
    parser.add_argument("--venv", type=Path, help="the venv to build (default: .venv-cuda, .venv-vulkan)")
    parser.add_argument("--python", type=Path, help="measure with this venv's python (built before): no build")
    parser.add_argument("--shapes", default="smollm2-135m,qwen2.5-1.5b,qwen2.5-7b", help="make_gguf.py's shapes, comma-separated")
    parser.add_argument("--model", type=Path, action="append", help="a GGUF file to measure instead of made ones (repeatable)")
    parser.add_argument("--models", type=Path, default=ROOT / "runs" / "models", help="where the made models are kept")
    parser.add_argument("--tokens", type=int, default=64, help="new tokens per reply in the decoding benchmark")
    parser.add_argument("--ks", default="1,4,8,16")
    parser.add_argument("--prompts", type=int, default=16, help="suite prompts in the decoding benchmark")
    parser.add_argument("--cut", type=int, help="cut each prompt message to this many characters (the tests, on lavapipe)")
    parser.add_argument("--prompt-tokens", type=int, default=1500)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--turn-tokens", type=int, default=300)
    parser.add_argument("--observation-tokens", type=int, default=100, help="the cell output between two turns")
    parser.add_argument("--measure", action="store_true", help="(internal) steps 2-5, in this interpreter")
    options = parser.parse_args()
    if options.measure:
        measure(options)
    else:
        began = time.monotonic()
        python = options.python or build(options.backend, options.wheels, options.venv or ROOT / f".venv-{options.backend}")
        subprocess.run([str(python), "-u", __file__, "--measure", *sys.argv[1:]], check=True)
        print(f"device check done in {time.monotonic() - began:.0f} s", flush=True)
