"""Several attempts in flight on one model, beside raw llama.cpp, measured side by side in one run (the machine is
shared: compare the ratios, not the absolute figures). Not a test: `.venv/bin/python tests/benches/bench_parallel.py [TOKENS]`.

  decoding   total tokens/s for the same 8 chat prompts (greedy, up to TOKENS new tokens each) at K = 1, 4, 8:
             (a) raw llama.cpp batched decoding of K sequences through llama-cpp-python's low-level API, no harness,
             (b) the kit's LlamaModel serving K threads at once (--parallel K) with --no-shared-prefix: the same
             prompt tokens evaluated as raw, (c) the kit sharing the prompts' common prefix (their system prompt,
             evaluated once); and the prompt tokens the kit evaluated each way
  workloads  wall time of 30 attempts at --parallel 1 and 8 (run in the order 1, 8, 8, 1), the replies being the reference solutions (real cells in
             real jails, real checks), with the model's work done two ways:
             written   the model writes each reference reply: its tokens go through the kit's engine one decode step
                       each, the model's choice replaced by the reply's next token (teacher forcing), so the model's
                       work and KV cache per turn are those of a model that wrote that reply, as in a real run;
             prompted  before each reply the model generates up to TOKENS tokens for the same messages, and the
                       reference reply then reaches it as part of the next prompt (most of the work is prompt
                       evaluation, which batching cannot speed up on a CPU)
"""
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kit import engine  # noqa: E402
from kit import harness  # noqa: E402
import pybench  # noqa: E402
from kit import sandbox  # noqa: E402
from kit import suite  # noqa: E402

CTX = 2048


def chat_prompts(count: int) -> list[list[dict]]:
    """The first message list of `count` suite tasks, as the agent loop builds it."""
    tasks = suite.load_tasks(pybench.HERE / "tasks.jsonl")[:count]
    return [harness.TaskRun(task, Path("."), 10, None, harness.Conversation()).messages for task in tasks]


def raw_batched(path: Path, prompts: list[list[int]], k: int, tokens: int) -> tuple[int, float]:
    """Greedy decoding of the prompts k at a time in one llama.cpp context (n_seq_max=k, kv_unified=False), one
    llama_decode per step for all sequences: (tokens generated, seconds)."""
    import llama_cpp

    holder = llama_cpp.Llama(model_path=str(path), n_gpu_layers=-1, n_ctx=256, n_threads=os.cpu_count(), verbose=False)  # weights and settings only
    model = holder.model
    vocab = llama_cpp.llama_model_get_vocab(model)
    params = llama_cpp.llama_context_params.from_buffer_copy(holder.context_params)  # the same settings the kit uses
    params.n_ctx, params.n_seq_max, params.kv_unified = CTX * k, k, False
    params.n_batch = params.n_ubatch = 512
    ctx = llama_cpp.llama_init_from_model(model, params)
    memory = llama_cpp.llama_get_memory(ctx)
    batch = llama_cpp.llama_batch_init(512, 0, 1)
    samplers = [llama_cpp.llama_sampler_init_greedy() for _ in range(k)]
    generated = 0
    start = time.perf_counter()
    for wave in range(0, len(prompts), k):
        group = prompts[wave:wave + k]
        for seq in range(k):
            llama_cpp.llama_memory_seq_rm(memory, seq, 0, -1)
        tokens_in, counts = [None] * len(group), [0] * len(group)
        for seq, prompt in enumerate(group):  # each prompt in chunks of its own, as llama.cpp's batched example does
            for begin in range(0, len(prompt), 512):
                chunk = prompt[begin:begin + 512]
                batch.n_tokens = len(chunk)
                for number, token in enumerate(chunk):
                    batch.token[number], batch.pos[number], batch.n_seq_id[number] = token, begin + number, 1
                    batch.seq_id[number][0], batch.logits[number] = seq, begin + number == len(prompt) - 1
                assert llama_cpp.llama_decode(ctx, batch) == 0
            token = llama_cpp.llama_sampler_sample(samplers[seq], ctx, len(chunk) - 1)
            if not llama_cpp.llama_vocab_is_eog(vocab, token):
                tokens_in[seq], counts[seq] = token, 1
        position = [len(prompt) for prompt in group]
        while True:  # then one llama_decode per step for every sequence still generating
            alive = [seq for seq in range(len(group)) if tokens_in[seq] is not None and counts[seq] < tokens]
            if not alive:
                break
            batch.n_tokens = len(alive)
            for at, seq in enumerate(alive):
                batch.token[at], batch.pos[at], batch.n_seq_id[at], batch.seq_id[at][0], batch.logits[at] = tokens_in[seq], position[seq], 1, seq, True
                position[seq] += 1
            assert llama_cpp.llama_decode(ctx, batch) == 0
            for at, seq in enumerate(alive):
                token = llama_cpp.llama_sampler_sample(samplers[seq], ctx, at)
                if llama_cpp.llama_vocab_is_eog(vocab, token):
                    tokens_in[seq] = None
                else:
                    tokens_in[seq], counts[seq] = token, counts[seq] + 1
        generated += sum(counts)
    seconds = time.perf_counter() - start
    for sampler in samplers:
        llama_cpp.llama_sampler_free(sampler)
    llama_cpp.llama_batch_free(batch)
    llama_cpp.llama_free(ctx)
    return generated, seconds


def on_a_thread(work):
    """work() on a thread of its own that ends with it, as the kit decodes on its engine thread: raw llama.cpp's decodes
    on the main thread would slow the kit's after them in this process (libgomp, see LlamaModel.measure_speed)."""
    out = []
    thread = threading.Thread(target=lambda: out.append(work()))
    thread.start()
    thread.join()
    return out[0]


def kit_batched(model: "engine.LlamaModel", messages: list[list[dict]], k: int) -> tuple[int, float, list[str], int]:
    """The same prompts through LlamaModel with k threads, each taking the next prompt (continuous batching):
    (tokens generated, seconds, the replies, prompt tokens llama.cpp evaluated)."""
    model.open(k, k)
    todo, replies = list(enumerate(messages)), {}
    lock = threading.Lock()

    def work():
        while True:
            with lock:
                if not todo:
                    return
                number, prompt = todo.pop(0)
            session = model.attempt(str(number), 0)
            replies[number] = session.reply(prompt)
            session.close()

    start = time.perf_counter()
    threads = [threading.Thread(target=work) for _ in range(k)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - start
    model.close()
    return (sum(reply.completion_tokens for reply in replies.values()), seconds, [replies[n].text for n in sorted(replies)],
            sum(reply.prompt_evaluated for reply in replies.values()))


def bench_decoding(tokens: int, ks: tuple[int, ...] = (1, 4, 8), rounds: int = 2) -> None:
    """Raw llama.cpp, the kit with --no-shared-prefix (the same work as raw) and the kit sharing the prompts' common
    prefix (the system prompt), at each K in the order raw, off, on, on, off, raw (`rounds` halves of it), so that
    drift on the shared machine weighs on all three alike; the ratios are of the summed times."""
    path = pybench.default_model_path()
    messages = chat_prompts(max(8, *ks))
    kit = engine.LlamaModel(path, -1, CTX, 0, 0.0, 1.0, tokens)
    prompts = [kit.render(engine.merge_consecutive_roles(m), 0).prompt for m in messages]
    rows, texts, evaluated = {}, {}, {}
    for k in ks:
        seconds, generated = {"raw": 0.0, "off": 0.0, "on": 0.0}, {}
        for half in range(rounds):
            for kind in ("raw", "off", "on")[::-1 if half % 2 else 1]:
                if kind == "raw":
                    generated[kind], spent = on_a_thread(lambda: raw_batched(path, prompts, k, tokens))
                else:
                    kit.shared_prefix = kind == "on"
                    generated[kind], spent, texts[k, kind], evaluated[k, kind] = kit_batched(kit, messages, k)
                seconds[kind] += spent
        rows[k] = {kind: generated[kind] * rounds / seconds[kind] for kind in seconds} | {"tokens": generated}
    print(f"decoding: {path.name} on {kit.device}, {len(prompts)} prompts of {min(map(len, prompts))}-{max(map(len, prompts))} tokens "
          f"({sum(map(len, prompts))} in all), up to {tokens} new tokens each, greedy, {os.cpu_count()} threads, {rounds} runs of each")
    print("   K  raw tokens/s  kit tokens/s  kit/raw  shared tokens/s  shared/raw  kit K / kit 1  raw K / raw 1  prompt tokens evaluated"
          "  tokens raw/kit/shared")
    for k, row in rows.items():
        print(f"{k:4d} {row['raw']:13.1f} {row['off']:13.1f} {row['off'] / row['raw']:8.2f} {row['on']:16.1f} {row['on'] / row['raw']:11.2f} "
              f"{row['off'] / rows[ks[0]]['off']:14.2f} {row['raw'] / rows[ks[0]]['raw']:14.2f}   {evaluated[k, 'on']:6d} shared / "
              f"{evaluated[k, 'off']:6d} not    {'/'.join(str(row['tokens'][kind]) for kind in ('raw', 'off', 'on'))}")
    same = all(texts[k, kind] == texts[ks[0], "off"] for k in ks for kind in ("off", "on"))
    print(f"kit replies identical at K={', '.join(map(str, ks))}, with and without the shared prefix: {same}")


@dataclass(eq=False)
class ForcedRequest(engine.Request):
    """A request whose tokens are given: each step's sampled token is replaced by the next given one."""
    forced: list = field(default_factory=list)

    def take(self, token, model, evaluated):
        if not self.forced:
            return self.finish("stop")
        return super().take(self.forced.pop(0), model, evaluated)


class WritingModel(engine.LlamaModel):
    """The kit's engine made to write given replies (see "written" above); the rest is LlamaModel's."""

    def write(self, messages: list[dict], seed: int, text: str, owner: object) -> None:
        request = self.render(engine.merge_consecutive_roles(messages), seed)
        if isinstance(request, engine.Reply):
            return
        forced = self.llm.tokenize(text.encode(), add_bos=False, special=False)
        request = ForcedRequest(**{name: getattr(request, name) for name in request.__dataclass_fields__},
                                forced=forced)
        request.max_tokens = max(request.max_tokens, len(forced))
        self.answer(request, owner)


class ReplayPlusModel:
    """The reference replies, each with the model's work done first: a WritingModel writes the reply, another
    LlamaModel generates up to max_tokens tokens for the same messages."""

    def __init__(self, replay: "harness.ReplayModel", llama: "engine.LlamaModel"):
        self.replay, self.llama = replay, llama
        self.name, self.device = "replay+model", llama.device

    def __getattr__(self, name):  # open, stop, close, generated, choice: the model's
        return getattr(self.llama, name)

    def attempt(self, task_id: str, seed: int) -> "ReplayPlusAttempt":
        return ReplayPlusAttempt(self, self.replay.attempt(task_id, seed), self.llama.attempt(task_id, seed), seed)


@dataclass
class ReplayPlusAttempt:
    model: ReplayPlusModel
    replayed: "harness.ReplayAttempt"
    generating: "engine.LlamaAttempt"
    seed: int

    def reply(self, messages):
        reply = self.replayed.reply(messages)
        if not isinstance(self.model.llama, WritingModel):
            self.generating.reply(messages)
        elif reply.text:
            self.model.llama.write(messages, self.seed, reply.text, self.generating)
        return reply

    def close(self):
        self.replayed.close()
        self.generating.close()


def bench_workload(kind: str, tokens: int, attempts: int = 30) -> float:
    every = suite.load_tasks(pybench.HERE / "tasks.jsonl")
    tasks = every[:attempts]
    replay = harness.ReplayModel(pybench.HERE / "checks" / "reference.jsonl", {task.id for task in every})
    model_class = WritingModel if kind == "written" else engine.LlamaModel
    llama = model_class(pybench.default_model_path(), -1, CTX, 0, 0.0, 1.0, CTX // 2 if kind == "written" else tokens)
    model = ReplayPlusModel(replay, llama)
    walls, passes = {1: 0.0, 8: 0.0}, {}
    for k in (1, 8, 8, 1):  # ABBA: a drift of the shared machine's speed during the run weighs on both alike
        run_dir = Path(tempfile.mkdtemp(prefix=f"pybench-bench-parallel-{k}-"))
        (run_dir / "jails").mkdir()
        parallel = model.open(k, len(tasks))
        attempt = lambda task, sample: harness.run_one(task, sample, 1, 0, model, harness.Conversation(), run_dir,  # noqa: E731
                                                       sandbox.JailLimits(), 10)
        before, start = llama.generated, time.perf_counter()
        results = [result for _, _, result, _ in harness.run_attempts([(task, 0) for task in tasks], parallel, model, attempt, lambda n: None)]
        walls[k] += time.perf_counter() - start
        passes.setdefault(k, []).append((time.perf_counter() - start, sum(result.passed for result in results), llama.generated - before))
        model.close()
    how = "the model writes each reference reply" if kind == "written" else f"up to {tokens} model tokens before each reference reply"
    print(f"workload '{kind}': {attempts} attempts, real jails and checks, {how}")
    for k in walls:
        shown = ", ".join(f"{wall:.1f} s ({passed} passed, {generated} tokens)" for wall, passed, generated in passes[k])
        print(f"  --parallel {k}: {shown}; tokens are those through the model's decode steps")
    print(f"  wall time at K=8 / K=1 (both runs of each): {walls[8] / walls[1]:.2f}")
    return walls[8] / walls[1]


if __name__ == "__main__":
    tokens = int(sys.argv[1]) if len(sys.argv) > 1 else 32
    only = sys.argv[2:] or ["decoding", "written", "prompted"]
    if "decoding" in only:
        bench_decoding(tokens)
    for kind in ("written", "prompted"):
        if kind in only:
            bench_workload(kind, tokens)
