"""engine: llama.cpp through llama-cpp-python, serving several attempts at once; and the model seam every model meets.

The harness talks to a model only through `Model` and `Attempt` below: `model.open(K, n)` sizes it for K attempts in
flight, `model.attempt(task_id, seed)` starts one attempt's session, whose `reply(messages)` gives the next `Reply` and
whose `close()` ends it. `LlamaModel` is the one real backend; the replays in harness.py and the benchmarks meet the
same protocol. This module imports nothing of the kit's: a new backend is one class with these members.
"""

import contextlib
import ctypes
import functools
import itertools
import os
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

__all__ = ["ModelError", "Reply", "Attempt", "Model", "LlamaModel", "LlamaAttempt", "Request", "gguf_facts", "merge_consecutive_roles",
           "pieces", "parallel_plan", "ram_free_bytes", "BUDGET_VARIABLE", "backends", "gpu_backends", "gpus", "why_no_gpu", "llama_log", "device_buffers"]


class ModelError(Exception):
    """The model could not be loaded or sized (a damaged file, a KV cache that does not fit): one line for the user."""


# --- the model seam: what every model offers the harness -----------------------------------------------------------

@dataclass
class Reply:
    text: str | None           # None: the model has nothing more to say (a replay ran out)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    stop: str = ""             # why generation ended: "stop", "length", or an error for the results
    prompt_evaluated: int = 0  # prompt tokens llama.cpp decoded for this reply (the rest was in the KV cache already)
    prompt_shared: int = 0     # prompt tokens copied from a shared prefix another attempt evaluated (see LlamaModel)


class Attempt(Protocol):
    """One attempt's session on a model: the replies of one trajectory, in order."""

    def reply(self, messages: list[dict]) -> Reply:
        """The model's next reply to the whole message list so far (Reply(None, ...) when it has nothing more)."""

    def close(self) -> None:
        """The attempt is over: what it held on the model (a KV sequence) is free for the next one."""


class Model(Protocol):
    """What the harness needs of a model: facts for the manifest and the first line, sizing, sessions, stopping."""
    name: str                        # for the run directory and the report
    device: str                      # where it runs, in words (the run's first line)
    offload: bool                    # built with GPU offload
    llama_cpp_version: str | None
    n_ctx: int | None                # context window per attempt
    generated: int                   # tokens generated so far, all attempts together (the progress line's tokens/s)
    choice: str                      # set by open(): why it chose its number of attempts at once, in words

    def open(self, wanted: int | None, attempts: int) -> int:
        """Get ready for `wanted` attempts at once (None: as many as fit), `attempts` in all; the number it will take."""

    def attempt(self, task_id: str, seed: int) -> Attempt:
        """A new attempt at a task, sampled with this seed."""

    def stop(self, reason: str) -> None:
        """End every reply in progress, and every later one, with Reply(None, stop=reason): for Ctrl-C."""

    def close(self) -> None:
        """The run is over: free what open() took."""


# --- llama.cpp: one model, several attempts in flight, batched -----------------------------------------------------

def gguf_facts(path: Path) -> dict:
    """A GGUF file's name, architecture, quantisation and trained context length ({} if its header does not parse)."""
    import gguf

    try:
        fields = gguf.GGUFReader(path).fields
    except (ValueError, OSError, IndexError, KeyError):
        return {}
    value = lambda key: fields[key].contents() if key in fields else None  # noqa: E731
    architecture, file_type = value("general.architecture"), value("general.file_type")
    known = file_type is not None and file_type in gguf.LlamaFileType._value2member_map_
    return {"name": value("general.name"), "architecture": architecture, "context_length": value(f"{architecture}.context_length"),
            "quantization": gguf.LlamaFileType(file_type).name if known else file_type}


class LlamaModel:
    """One llama.cpp model for the whole run, serving up to `slots` attempts at once: one context, one sequence of
    its KV cache per attempt (one stream each, kv_unified=False), and one engine thread that runs a single llama_decode
    per step for every sequence evaluating a prompt or generating (continuous batching); each attempt's thread calls
    reply() and waits. A reply is what create_chat_completion would give on one Llama (the model's own chat handler,
    captured). A sequence keeps its KV cache between an attempt's turns and is cleared when an attempt starts; a
    shared prefix (up to the end of the system message, and of the opening messages with several samples) is
    evaluated once and its cells copied (llama_memory_seq_cp). A prompt is always evaluated in the same pieces, so
    greedy replies are the same at any K and with shared_prefix off (docs/parallel.md)."""

    N_BATCH = 512  # tokens per llama_decode, as Llama's default

    def __init__(self, path: Path, n_gpu_layers: int, n_ctx: int, seed: int, temperature: float, top_p: float, max_tokens: int,
                 threads: int | None = None, shared_prefix: bool = True, grammar: str | None = None, samples: int = 1):
        import llama_cpp

        stop_on_backend_failure()  # before llama.cpp's first call: its backends start up in it
        self.threads = threads or os.cpu_count()  # llama.cpp's threads; a run passes --threads (the CPUs it may use)
        self.offload = bool(llama_cpp.llama_supports_gpu_offload())
        trained = gguf_facts(path).get("context_length")
        self.n_ctx = min(n_ctx, trained) if trained else n_ctx  # past its trained context a model only degrades
        n_gpu_layers, self.gpu_note = fit_gpu_layers(path, n_gpu_layers) if self.offload and n_gpu_layers != 0 else (n_gpu_layers, "")
        while True:  # the Llama object holds the weights, the vocabulary and the chat handler; its own context is tiny
            try:
                with llama_log() as load_log:  # llama.cpp's own count of the layers it offloaded
                    self.llm = llama_cpp.Llama(model_path=str(path), n_gpu_layers=n_gpu_layers if self.offload else 0, n_ctx=256,
                                               n_batch=self.N_BATCH, seed=seed, n_threads=self.threads, verbose=False)
                break
            except ValueError as error:  # llama.cpp could not load it: truncated, unknown architecture, too big
                if not (self.offload and n_gpu_layers != 0):
                    raise ModelError(f"--model: llama.cpp could not load {path} ({error})") from None
                layers = gguf_layers(path)
                n_gpu_layers = 0 if n_gpu_layers < 0 and not layers else (layers if n_gpu_layers < 0 else n_gpu_layers) // 2
                self.gpu_note = f"; it did not load with more layers on the GPU, so {n_gpu_layers} are offloaded"
        self.name = path.name
        self.llama_cpp_version = llama_cpp.llama_cpp.llama_version().decode()
        self.temperature, self.top_p, self.max_tokens = temperature, top_p, max_tokens
        self.grammar = grammar  # GBNF (rule "root") every reply is held to: the judge's verdict format; None for a run
        self.kv_on_gpu = self.offload and n_gpu_layers != 0
        if self.kv_on_gpu:
            layers = self.llm.metadata.get(f"{self.llm.metadata.get('general.architecture', '')}.block_count", "?")
            self.device = gpu_device_text(load_log, n_gpu_layers, layers) + self.gpu_note
        else:
            self.device = "CPU (--n-gpu-layers 0)" + self.gpu_note if self.offload else f"CPU ({why_no_gpu()})"
        self.ctx = None
        self.slots: list[Sequence] = []
        self.slot_of: dict[object, Sequence] = {}   # attempt session -> its sequence
        self.lock = threading.Condition()
        self.generated = 0                       # tokens generated so far, all sequences together
        self.stopped, self.closed = "", False
        self.shared_prefix = shared_prefix
        self.samples = samples  # attempts per task: with more than one, their opening messages are a shared prefix too
        self.prefixes: dict[tuple, list[int]] = {}  # see opening_prompt
        self.probe: tuple | None = None  # measure_speed's work for the engine thread, and the Future of its outcome

    def kv_bytes_per_sequence(self) -> int:
        """KV cache of one sequence of n_ctx tokens (f16 keys and values, every layer)."""
        import llama_cpp

        model = self.llm.model
        metadata, architecture = self.llm.metadata, self.llm.metadata.get("general.architecture", "")
        head = llama_cpp.llama_model_n_embd(model) // max(1, llama_cpp.llama_model_n_head(model))
        key = int(metadata.get(f"{architecture}.attention.key_length", head))
        value = int(metadata.get(f"{architecture}.attention.value_length", head))
        per_token = llama_cpp.llama_model_n_layer(model) * llama_cpp.llama_model_n_head_kv(model) * (key + value) * 2
        return per_token * self.n_ctx

    def open(self, wanted: int | None, attempts: int) -> int:
        """Make the context for `wanted` sequences (None: as many as fit, see parallel_plan), at most one per attempt;
        self.choice says why, in words. A context llama.cpp cannot allocate is retried with half the sequences."""
        import llama_cpp

        slots, why = parallel_plan(wanted, attempts, self.kv_bytes_per_sequence(), self.kv_on_gpu, self.threads)
        while True:
            params = llama_cpp.llama_context_params.from_buffer_copy(self.llm.context_params)  # Llama's own settings
            params.n_ctx, params.n_seq_max, params.kv_unified = self.n_ctx * slots, slots, False
            params.n_batch = params.n_ubatch = self.N_BATCH
            self.ctx = llama_cpp.llama_init_from_model(self.llm.model, params)
            self.closed = False
            if self.ctx or slots == 1:
                break
            slots, why = slots // 2, f"{why}; llama.cpp could not allocate that, so {slots // 2}"
        if not self.ctx:
            raise ModelError(f"--ctx {self.n_ctx}: llama.cpp could not allocate the KV cache of one sequence; lower --ctx")
        self.n_ctx = llama_cpp.llama_n_ctx_seq(self.ctx)
        self.memory = llama_cpp.llama_get_memory(self.ctx)
        self.vocab = llama_cpp.llama_model_get_vocab(self.llm.model)
        self.batch = llama_cpp.llama_batch_init(self.N_BATCH, 0, 1)
        self.slots, self.slot_of = [Sequence(number) for number in range(slots)], {}
        threading.Thread(target=self.serve, name="llama-engine", daemon=True).start()
        self.choice = why
        return slots

    def attempt(self, task_id: str, seed: int) -> "LlamaAttempt":
        """A new attempt: a session that takes a sequence of its own, emptied (the engine clears the KV cells)."""
        if self.ctx is None:  # used without the scheduler: one sequence
            self.open(1, 1)
        session = LlamaAttempt(self, seed)
        with self.lock:
            self.claim(session)
        return session

    def answer(self, request: "Request", owner: object) -> Reply:
        """Hand a rendered request to the engine, on the owner's sequence, and wait for its reply."""
        with self.lock:
            if self.stopped:
                return Reply(None, stop=self.stopped)
            sequence = self.claim(owner)
            sequence.request = request
            self.lock.notify_all()
            while not request.reply:
                self.lock.wait()
        return request.reply

    def release(self, owner: object) -> None:
        """The owner's attempt is over: its sequence is free for the next one."""
        with self.lock:
            self.slot_of.pop(owner, None)
            self.lock.notify_all()

    def stop(self, reason: str) -> None:
        """End every reply in progress or asked for later with Reply(None, reason): for Ctrl-C."""
        with self.lock:
            self.stopped = reason
            for sequence in self.slots:
                if sequence.request and not sequence.request.reply:
                    sequence.request.reply = Reply(None, stop=reason)
            self.lock.notify_all()

    def close(self) -> None:
        """Free the context (its KV cache) once the replies in progress are answered; the weights stay loaded."""
        with self.lock:
            self.closed = True
            self.lock.notify_all()
            while self.ctx is not None:
                self.lock.wait()

    def claim(self, owner: object) -> "Sequence":
        """The owner's sequence (an attempt's session). One without takes a free one, else the one idle longest (whose
        owner, on its next turn, takes another and evaluates its prompt afresh); the lock is held."""
        while owner not in self.slot_of:
            free = [sequence for sequence in self.slots if sequence not in self.slot_of.values()]  # by identity
            idle = sorted((sequence for sequence in self.slots if sequence.request is None), key=lambda sequence: sequence.used)
            if free or idle:
                sequence = (free or idle)[0]
                self.slot_of = {holder: slot for holder, slot in self.slot_of.items() if slot is not sequence} | {owner: sequence}
                sequence.fresh = True  # its cells are another attempt's: only a shared prefix of them may be kept
            else:
                self.lock.wait()
        sequence = self.slot_of[owner]
        sequence.used = time.monotonic()
        return sequence

    def render(self, messages: list[dict], seed: int) -> "Request | Reply":
        """The prompt tokens and the completion settings exactly as create_chat_completion would pass them on: its
        chat handler is called with a stand-in for the Llama object that records the create_completion call."""
        capture = CompletionCapture(self.llm)
        try:
            type(self.llm).create_chat_completion(capture, messages=messages, temperature=self.temperature, top_p=self.top_p,
                                                  max_tokens=self.max_tokens, seed=seed)
        except CompletionCapture.Captured:
            pass
        except ValueError as error:  # the chat template refused these messages
            return Reply(None, stop=f"the chat template failed ({error})")
        settings = capture.settings
        prompt = list(settings["prompt"])
        if len(prompt) >= self.n_ctx:
            return Reply(None, stop=f"context window full (Requested tokens ({len(prompt)}) exceed context window of {self.n_ctx})")
        stop = settings.get("stop") or []
        return Request(prompt, settings, max_tokens=min(settings.get("max_tokens") or self.n_ctx, self.n_ctx - len(prompt)),
                       stops=[text.encode() for text in ([stop] if isinstance(stop, str) else stop)],
                       ends=self.prefix_ends(messages, prompt, seed))

    def prefix_ends(self, messages: list[dict], prompt: list[int], seed: int) -> list[int]:
        """Where the prompt's shared prefixes end: after its system message(s), and, when a task has several samples,
        after its opening messages (those before the first assistant reply), each the rendered prompt of those messages
        alone, less its last token (whatever follows, a prompt goes on from there the same way); never at the prompt's
        own last token. Each end costs a llama_decode of its own, so an opening nobody else shares is not cut."""
        system = next((number for number, message in enumerate(messages) if message["role"] != "system"), len(messages))
        opening = next((number for number, message in enumerate(messages) if message["role"] == "assistant"), len(messages))
        ends = set()
        for count in {system, opening if self.samples > 1 else 0} - {0}:
            rendered = self.opening_prompt(messages[:count], seed) if count < len(messages) else prompt
            ends.add(min(len(os.path.commonprefix([rendered[:-1], prompt])), len(prompt) - 1))
        return sorted(ends - {0})

    def opening_prompt(self, messages: list[dict], seed: int) -> list[int]:
        """The rendered prompt of some opening messages alone (rendered once per run; [] if the template refuses them)."""
        key = tuple((message["role"], message["content"]) for message in messages)
        if key not in self.prefixes:
            rendered = self.render(messages, seed)
            self.prefixes[key] = rendered.prompt if isinstance(rendered, Request) else []
        return self.prefixes[key]

    def sampler(self, settings: dict):
        """The sampler chain Llama builds for these settings (Llama._init_sampler, without mirostat; the model's grammar
        where it has one, in Llama's place for it: after the penalties)."""
        import llama_cpp

        chain = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
        add = lambda sampler: llama_cpp.llama_sampler_chain_add(chain, sampler)  # noqa: E731
        add(llama_cpp.llama_sampler_init_penalties(self.llm.n_vocab(), self.llm.last_n_tokens_size, settings.get("repeat_penalty", 1.0),
                                                   settings.get("frequency_penalty", 0.0), settings.get("presence_penalty", 0.0)))
        if self.grammar:
            add(llama_cpp.llama_sampler_init_grammar(self.vocab, self.grammar.encode(), b"root"))
        temperature, seed = settings.get("temperature", 0.8), settings["seed"]  # reply() always passes a seed
        if temperature == 0:
            add(llama_cpp.llama_sampler_init_greedy())
        else:
            if temperature > 0:
                add(llama_cpp.llama_sampler_init_top_k(settings.get("top_k", 40)))
                add(llama_cpp.llama_sampler_init_typical(settings.get("typical_p", 1.0), 1))
                add(llama_cpp.llama_sampler_init_top_p(settings.get("top_p", 0.95), 1))
                add(llama_cpp.llama_sampler_init_min_p(settings.get("min_p", 0.05), 1))
                add(llama_cpp.llama_sampler_init_temp(temperature))
            add(llama_cpp.llama_sampler_init_dist(seed))
        return chain

    # the engine thread: the only one that touches the context

    def serve(self) -> None:
        import llama_cpp

        prefilling: list[Sequence] = []  # in arrival order
        while True:
            with self.lock:
                while self.probe is None and not any(sequence.request and not sequence.request.reply for sequence in self.slots):
                    if self.closed:
                        llama_cpp.llama_batch_free(self.batch)
                        llama_cpp.llama_free(self.ctx)
                        self.ctx = None
                        self.lock.notify_all()
                        return
                    self.lock.wait()
                probe, self.probe = self.probe, None
                for sequence in self.slots:
                    if sequence.request and not sequence.request.started and not sequence.request.reply and self.admit(sequence, prefilling):
                        prefilling.append(sequence)
            if probe:  # measure_speed's decodes, on this thread: close() cannot free the context under them
                work, outcome = probe
                try:
                    outcome.set_result(work())
                except Exception as error:  # raised again on measure_speed's thread
                    outcome.set_exception(error)
            else:
                self.step(prefilling, llama_cpp)

    def admit(self, sequence: "Sequence", prefilling: list["Sequence"]) -> bool:
        """Start a request on its sequence: keep the cells it can reuse, drop the rest, and cut what is left of the
        prompt into the pieces to evaluate. The attempt's own next turn keeps the longest common prefix of what its
        sequence holds and the new prompt (as Llama.generate does); a new attempt keeps, or copies from another
        sequence, the longest shared prefix computed in the pieces of its own (see the class). False: another
        sequence is evaluating a longer shared prefix of this prompt right now; the request waits for it."""
        import llama_cpp

        request, prompt = sequence.request, sequence.request.prompt
        if not sequence.fresh:
            kept, donor = min(len(os.path.commonprefix([sequence.tokens, prompt])), len(prompt) - 1), sequence
        else:
            fresh = set(pieces(0, len(prompt), request.ends, self.N_BATCH))
            reusable = lambda holder, end: holder.tokens[:end] == prompt[:end] and {cut for cut in holder.cuts if cut <= end} == {  # noqa: E731
                cut for cut in fresh if cut <= end}
            kept, donor = 0, sequence
            for end in request.ends if self.shared_prefix else []:
                holder = next((holder for holder in [sequence, *self.slots] if reusable(holder, end)), None)
                if holder:
                    kept, donor = end, holder
                elif any(len(other.tokens) < end and other.request.prompt[:end] == prompt[:end] and
                         [cut for cut in other.request.ends if cut <= end] == [cut for cut in request.ends if cut <= end]
                         for other in prefilling):
                    return False  # being evaluated: wait for it rather than evaluate it twice
        if donor is not sequence:
            llama_cpp.llama_memory_seq_cp(self.memory, donor.number, sequence.number, -1, -1)  # the whole stream, at the next decode
            sequence.tokens, sequence.cuts = list(donor.tokens), set(donor.cuts)
        request.shared = kept if sequence.fresh else 0
        llama_cpp.llama_memory_seq_rm(self.memory, sequence.number, kept, -1)
        sequence.tokens, sequence.cuts, sequence.fresh = sequence.tokens[:kept], {cut for cut in sequence.cuts if cut <= kept}, False
        request.cuts = pieces(kept, len(prompt), request.ends, self.N_BATCH)
        request.chain = self.sampler(request.settings)
        request.started = True
        return True

    def step(self, prefilling: list["Sequence"], llama_cpp) -> None:
        """One llama_decode: the next piece of one prompt (cut by pieces()) while any is waiting, else the last sampled
        token of every generating sequence. Prompts first, so that the generating sequences decode together, in one
        llama_decode per step (on a CPU every llama_decode reads all the weights). Prompt chunks never share a
        llama_decode with other sequences: with three or more sequences of unequal token counts in one batch, the
        pinned llama.cpp gave a prompt other logits than alone (seen with SmolLM2; single tokens of many sequences
        and one sequence's chunk alone give bit-identical logits)."""
        batch, entries, members = self.batch, [], {}

        def add(sequence, token, logits):
            members[sequence.number] = sequence
            at = batch.n_tokens
            batch.token[at], batch.pos[at], batch.n_seq_id[at] = token, len(sequence.tokens), 1
            batch.seq_id[at][0], batch.logits[at] = sequence.number, logits
            batch.n_tokens += 1
            sequence.tokens.append(token)
            if logits:
                entries.append((sequence, at))

        batch.n_tokens = 0
        prefilling[:] = [sequence for sequence in prefilling if not sequence.request.reply]  # stop() may have ended some
        if prefilling:
            sequence = prefilling[0]
            request = sequence.request
            end = request.cuts.pop(0)
            for position in range(len(sequence.tokens), end):
                add(sequence, request.prompt[position], position == len(request.prompt) - 1)
            sequence.cuts.add(end)
            request.evaluated += batch.n_tokens
            if not request.cuts:
                prefilling.pop(0)
        else:
            generating = [sequence for sequence in self.slots if sequence.request and sequence.request.started
                          and not sequence.request.reply and sequence.request.next_token is not None]
            for sequence in generating:
                add(sequence, sequence.request.next_token, True)
                sequence.request.next_token = None
                sequence.cuts.add(len(sequence.tokens))
        if batch.n_tokens == 0:
            return
        status = llama_cpp.llama_decode(self.ctx, batch)
        finished = []
        try:
            if status != 0:
                raise RuntimeError(f"llama_decode failed (status {status})")
            for sequence, at in entries:
                token = llama_cpp.llama_sampler_sample(sequence.request.chain, self.ctx, at)
                reply = sequence.request.take(token, self, sequence.tokens)
                if reply:
                    finished.append((sequence, reply))
            self.generated += len(entries)
        except Exception as error:  # no room in the KV cache, a backend failure: these replies end, their sequences are emptied
            for sequence in members.values():
                llama_cpp.llama_memory_seq_rm(self.memory, sequence.number, 0, -1)
                sequence.tokens, sequence.cuts = [], set()
                if sequence in prefilling:
                    prefilling.remove(sequence)
                if all(done is not sequence for done, _ in finished):
                    finished.append((sequence, Reply(None, stop=f"the model failed: {error}")))
        if finished:
            with self.lock:
                for sequence, reply in finished:
                    llama_cpp.llama_sampler_free(sequence.request.chain)
                    if not sequence.request.reply:  # stop() may have answered it already
                        sequence.request.reply = reply
                    sequence.request = None
                self.lock.notify_all()

    def piece(self, token: int) -> bytes:
        import llama_cpp

        buffer = ctypes.create_string_buffer(64)
        size = llama_cpp.llama_token_to_piece(self.vocab, token, buffer, 64, 0, False)
        if size < 0:
            buffer = ctypes.create_string_buffer(-size)
            size = llama_cpp.llama_token_to_piece(self.vocab, token, buffer, -size, 0, False)
        return buffer.raw[:size]

    def measure_speed(self, prompt_tokens: int = 1024, steps: int = 8, warm_up: int = 4) -> tuple[float, float]:
        """This machine's speed with this model, before the first attempt (open() first; the engine is idle): a prompt
        of prompt_tokens evaluated in llama_decode pieces of N_BATCH, copied to every sequence, then decode steps of one
        token for every sequence at once from there, at the context a reply generates at (attention's work grows with
        it: a probe at position 0 gave a first estimate 5 times short, issue 44); warm_up steps go first, untimed. The
        tokens are one ordinary token repeated; the sequences' cells are emptied before and after. (prompt tokens/s,
        tokens/s generated in all.) The engine thread decodes them, as every llama_decode (libgomp: docs/parallel.md).
        """
        from concurrent.futures import Future

        import llama_cpp

        token = self.llm.tokenize(b" the", add_bos=False, special=False)[0]
        batch, context = self.batch, min(prompt_tokens, self.n_ctx - warm_up - steps - 1)

        def decode(entries: list[tuple[int, int]]) -> float:
            batch.n_tokens = 0
            for number, position in entries:
                at = batch.n_tokens
                batch.token[at], batch.pos[at], batch.n_seq_id[at], batch.seq_id[at][0] = token, position, 1, number
                batch.logits[at] = position == entries[-1][1]
                batch.n_tokens += 1
            began = time.perf_counter()
            if llama_cpp.llama_decode(self.ctx, batch) != 0:
                raise ModelError("llama.cpp could not decode the speed probe's tokens")
            return time.perf_counter() - began

        def empty() -> None:
            for sequence in self.slots:
                llama_cpp.llama_memory_seq_rm(self.memory, sequence.number, 0, -1)
                sequence.tokens = []

        def probe() -> tuple[float, list[float]]:
            empty()
            prompt = sum(decode([(0, position) for position in range(start, min(start + self.N_BATCH, context))])
                         for start in range(0, context, self.N_BATCH))
            for sequence in self.slots[1:]:
                llama_cpp.llama_memory_seq_cp(self.memory, 0, sequence.number, -1, -1)
            timings = [decode([(sequence.number, context + step) for sequence in self.slots]) for step in range(warm_up + steps)]
            empty()
            return prompt, timings

        outcome = Future()
        with self.lock:  # the engine thread runs it (see run_probe)
            self.probe = (probe, outcome)
            self.lock.notify_all()
        prompt, timings = outcome.result()
        return context / prompt, len(self.slots) * steps / sum(timings[warm_up:])


class LlamaAttempt:
    """One attempt's session on a LlamaModel: its replies come from a sequence of the batched context that it holds
    (or, if another attempt took it while this one was idle, from another one, with its prompt evaluated afresh)."""

    def __init__(self, model: LlamaModel, seed: int):
        self.model, self.seed = model, seed

    def reply(self, messages: list[dict]) -> Reply:
        request = self.model.render(merge_consecutive_roles(messages), self.seed)
        return request if isinstance(request, Reply) else self.model.answer(request, self)

    def close(self) -> None:
        self.model.release(self)


@dataclass(eq=False)  # compared by identity
class Sequence:
    """One sequence of the batched context: the tokens its KV cells hold, and the request it is serving."""
    number: int
    tokens: list[int] = field(default_factory=list)
    cuts: set[int] = field(default_factory=set)        # where the pieces its cells were evaluated in end (see admit)
    fresh: bool = False                                # taken by a new attempt: the tokens are the last one's
    request: "Request | None" = None
    used: float = 0.0


@dataclass(eq=False)  # compared by identity
class Request:
    """One reply being generated, with the stopping rules of Llama._create_completion."""
    prompt: list[int]
    settings: dict
    max_tokens: int
    stops: list[bytes]
    ends: list[int] = field(default_factory=list)      # where its shared prefixes end (see prefix_ends)
    cuts: list[int] = field(default_factory=list)      # where the pieces still to evaluate end (see pieces)
    evaluated: int = 0                                 # prompt tokens decoded
    shared: int = 0                                    # prompt tokens copied from another sequence
    completion: list[int] = field(default_factory=list)
    text: bytearray = field(default_factory=bytearray)
    next_token: int | None = None                      # sampled, to be evaluated in the next step
    multibyte: int = 0
    chain: object = None
    started: bool = False
    reply: Reply | None = None

    def take(self, token: int, model: LlamaModel, evaluated: list[int]) -> Reply | None:
        """A sampled token: the finished reply, or None to go on (the token is then evaluated next step)."""
        import llama_cpp
        import numpy

        criteria = self.settings.get("stopping_criteria")
        if (criteria is not None and criteria(numpy.asarray(evaluated, dtype=numpy.intc), None)
                or llama_cpp.llama_vocab_is_eog(model.vocab, token)):
            return self.finish("stop")
        self.completion.append(token)
        piece = model.piece(token)
        if len(self.completion) == 1 and token == model.llm.token_bos() and piece.startswith(b" "):
            piece = piece[1:]
        self.text += piece
        for k, char in enumerate(self.text[-3:]):  # a UTF-8 character still incomplete: no stop check yet
            k = 3 - k
            for num, pattern in ((2, 192), (3, 224), (4, 240)):
                if num > k and pattern & char == pattern:
                    self.multibyte = num - k
        if self.multibyte > 0:
            self.multibyte -= 1
        else:
            found = [stop for stop in self.stops if stop in self.text]
            if found:
                del self.text[self.text.index(found[0]):]
                return self.finish("stop")
            if len(self.completion) >= self.max_tokens:
                return self.finish("length")
        if len(evaluated) >= model.n_ctx:  # no cell left for this token
            return self.finish("length")
        self.next_token = token
        return None

    def finish(self, reason: str) -> Reply:
        return Reply(bytes(self.text).decode("utf-8", errors="ignore"), len(self.prompt), len(self.completion), reason, self.evaluated,
                     self.shared)


class CompletionCapture:
    """Stands in for a Llama object before its chat handler: tokenize() is the model's, create_completion() records
    what it was asked and stops the handler there."""

    class Captured(Exception):
        pass

    def __init__(self, llm):
        self.llm, self.settings = llm, {}

    def __getattr__(self, name):
        return getattr(self.llm, name)

    def create_completion(self, **settings):
        self.settings = settings
        raise self.Captured()


def pieces(start: int, stop: int, ends: list[int], size: int) -> list[int]:
    """Where the llama_decode pieces of prompt[start:stop] end: at every shared-prefix end, and every `size` tokens
    after the previous cut (as Llama.eval cuts a prompt into n_batch chunks)."""
    cuts, at = [], start
    for end in [end for end in ends if start < end < stop] + [stop]:
        while at < end:
            at = min(at + size, end)
            cuts.append(at)
    return cuts


def merge_consecutive_roles(messages: list[dict]) -> list[dict]:
    """Many chat templates insist that user and assistant alternate; the protocol sends the file list and the
    query as two user messages, so they are joined (with a blank line) only for the template."""
    return [{"role": role, "content": "\n\n".join(message["content"] for message in group)}
            for role, group in itertools.groupby(messages, key=lambda message: message["role"])]


# --- where the KV caches and the layers fit ------------------------------------------------------------------------

def parallel_plan(wanted: int | None, attempts: int, kv_per_sequence: int, on_gpu: bool, cpus: int | None = None) -> tuple[int, str]:
    """How many sequences the context gets, and why in words: --parallel K as asked, or (auto) as many KV caches of
    --ctx tokens as fit in half the free memory where the KV cache lives, at most 16 on a GPU, on a CPU 8 and cpus
    (--threads); never more than the attempts (docs/parallel.md). Each gets the whole --ctx: no reply depends on K."""
    free = gpu_free_bytes() if on_gpu else ram_free_bytes()
    where = f"{free / 2**30:.1f} GiB {'GPU memory' if on_gpu else 'RAM'} free, {kv_per_sequence / 2**20:.0f} MiB of KV cache each"
    if wanted is None:
        fits = int(free // 2 // max(kv_per_sequence, 1)) if free else 1
        cap = 16 if on_gpu else min(8, max(1, cpus or 8))
        slots = max(1, min(cap, fits, attempts))
        return slots, (f"auto: {where}, at most {cap}{' (--threads)' if not on_gpu and cap < 8 else ''}"
                       f"{', ' + str(attempts) + ' attempt(s) to run' if attempts < min(cap, fits) else ''}")
    slots = max(1, min(wanted, attempts))
    return slots, f"--parallel {wanted}{f', {attempts} attempt(s) to run' if attempts < wanted else ''}; {where}"


BUDGET_VARIABLE = "PYBENCH_GPU_MEMORY_GIB"  # at most this much GPU memory is counted as free (a shared or smaller GPU)


def ram_free_bytes() -> int:
    found = re.search(r"^MemAvailable:\s+(\d+)", Path("/proc/meminfo").read_text(), re.MULTILINE)
    return int(found[1]) * 1024 if found else 0


def gpu_free_bytes() -> int:
    """Free memory of the GPUs llama.cpp sees, through ggml's device API (0 if there is none), at most the budget
    PYBENCH_GPU_MEMORY_GIB where it is set (a GPU shared with other work, or a smaller GPU to plan for)."""
    value = os.environ.get(BUDGET_VARIABLE)
    try:
        budget = int(float(value) * 2**30) if value else None
    except ValueError:
        raise ModelError(f"{BUDGET_VARIABLE}={value!r} is not a number of GiB") from None
    free = sum(device.free for device in gpus())
    return free if budget is None else min(free, budget)


def gpu_device_text(load_log: list[str], n_gpu_layers: int, layers) -> str:
    """'GPU Vulkan0 (llvmpipe (LLVM 15.0.6, 256 bits)): 31 of 31 layers offloaded', the count being llama.cpp's own."""
    buffers = device_buffers(load_log)
    used = [device for device in gpus() if f"{device.name} model" in buffers] or gpus()
    counted = re.search(r"offloaded (\d+)/(\d+) layers to GPU", "".join(load_log))  # its loader's own count
    shown = f"{counted[1]} of {counted[2]}" if counted else f"{'all' if n_gpu_layers < 0 else n_gpu_layers} of {layers}"
    return f"GPU {', '.join(f'{device.name} ({device.description})' for device in used)}: {shown} layers offloaded"


def gguf_layers(path: Path) -> int:
    import gguf

    try:
        fields = gguf.GGUFReader(path).fields
        architecture = fields["general.architecture"].contents()
        return int(fields[f"{architecture}.block_count"].contents())
    except (ValueError, OSError, IndexError, KeyError):
        return 0


def fit_gpu_layers(path: Path, n_gpu_layers: int) -> tuple[int, str]:
    """The layers to offload: as asked where the weights fit in the GPU's free memory with 1 GiB to spare (for the
    KV cache and compute buffers), else as many whole layers as do (the pinned llama.cpp has no llama_params_fit)."""
    free, size, layers = gpu_free_bytes(), path.stat().st_size, gguf_layers(path)
    wanted = layers if n_gpu_layers < 0 else min(n_gpu_layers, layers or n_gpu_layers)
    if not free or not layers or size * wanted / layers <= free - 2**30:
        return n_gpu_layers, ""
    fitting = max(0, int((free - 2**30) / (size / layers)))
    return fitting, f"; the model ({size / 2**30:.1f} GiB) does not fit the GPU's {free / 2**30:.1f} GiB free, so {fitting} layers are offloaded"


# --- the devices llama.cpp sees (ggml's device API), its log of an offload, a backend's failure ---------------------------------------------

@dataclass
class Device:
    name: str          # ggml's name: Vulkan0, CUDA0, ...
    description: str   # the driver's: "NVIDIA GeForce RTX 4060 Laptop GPU", "llvmpipe (LLVM 15.0.6, 256 bits)"
    kind: str          # cpu, gpu, igpu, accel
    free: int
    total: int

    def __str__(self) -> str:
        return f"{self.name} ({self.description}, {self.free / 2**20:.0f} MiB free of {self.total / 2**20:.0f} MiB)"


@functools.cache
def ggml():
    """libggml of the installed llama-cpp-python, with the prototypes used here."""
    import llama_cpp

    lib = ctypes.CDLL(str(Path(llama_cpp.__file__).parent / "lib" / "libggml.so"))
    pointer, text, size = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t
    for name, restype, argtypes in (("ggml_backend_reg_count", size, []), ("ggml_backend_reg_get", pointer, [size]),
                                    ("ggml_backend_reg_name", text, [pointer]), ("ggml_backend_dev_count", size, []),
                                    ("ggml_backend_dev_get", pointer, [size]), ("ggml_backend_dev_name", text, [pointer]),
                                    ("ggml_backend_dev_description", text, [pointer]), ("ggml_backend_dev_type", ctypes.c_int, [pointer]),
                                    ("ggml_backend_dev_memory", None, [pointer, ctypes.POINTER(size), ctypes.POINTER(size)])):
        function = getattr(lib, name)
        function.restype, function.argtypes = restype, argtypes
    return lib


def backends() -> list[str]:
    """The ggml backends this llama.cpp was built with (CPU always; Vulkan, CUDA, Metal...)."""
    lib = ggml()
    return [lib.ggml_backend_reg_name(lib.ggml_backend_reg_get(number)).decode() for number in range(lib.ggml_backend_reg_count())]


def gpu_backends() -> list[str]:
    """The GPU backends among them (none in a CPU build)."""
    return [name for name in backends() if name not in ("CPU", "BLAS", "RPC")]


def gpus() -> list[Device]:
    """The GPUs (discrete or integrated) ggml's device API lists."""
    lib, found = ggml(), []
    for number in range(lib.ggml_backend_dev_count()):
        device = lib.ggml_backend_dev_get(number)
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        lib.ggml_backend_dev_memory(device, ctypes.byref(free), ctypes.byref(total))
        kind = {0: "cpu", 1: "gpu", 2: "igpu", 3: "accel"}.get(lib.ggml_backend_dev_type(device), "other")
        if kind in ("gpu", "igpu"):
            found.append(Device(lib.ggml_backend_dev_name(device).decode(),
                                lib.ggml_backend_dev_description(device).decode(), kind, free.value, total.value))
    return found


def why_no_gpu() -> str:
    """Why llama.cpp offloads nothing here, in words."""
    built = gpu_backends()
    if not built:
        return "this llama.cpp build has no GPU backend"
    if "Vulkan" in built and "GGML_VK_VISIBLE_DEVICES" not in os.environ:
        return ("the Vulkan backend sees no GPU (it skips CPU-type Vulkan devices such as lavapipe unless "
                "GGML_VK_VISIBLE_DEVICES names them, e.g. GGML_VK_VISIBLE_DEVICES=0)")
    return f"the {'/'.join(built)} backend sees no GPU (check the driver: nvidia-smi, vulkaninfo --summary)"


@contextlib.contextmanager
def llama_log():
    """llama.cpp's and ggml's log lines while the block runs (a list of str), whatever the verbosity; its own
    callback (llama-cpp-python's, which prints only errors when verbose=False) is put back afterwards."""
    import llama_cpp
    import llama_cpp._logger

    lines: list[str] = []

    @llama_cpp.llama_log_callback
    def keep(level, text, user_data):
        lines.append(text.decode("utf-8", errors="replace"))
        llama_cpp._logger.llama_log_callback(level, text, user_data)  # errors still reach stderr as before

    llama_cpp.llama_log_set(keep, ctypes.c_void_p(0))
    try:
        yield lines
    finally:
        llama_cpp.llama_log_set(llama_cpp._logger.llama_log_callback, ctypes.c_void_p(0))


def device_buffers(log: list[str]) -> dict[str, float]:
    """MiB per buffer llama.cpp allocated, as its log names them ("Vulkan0 model buffer size = 74.59 MiB")."""
    return {f"{name} {what}": float(mib) for name, what, mib in
            re.findall(r"(\S+) (model|KV|compute) buffer size =\s*([\d.]+) MiB", "".join(log))}


FAILURE_EXIT = 4
_keep_alive = []  # the ctypes callbacks must outlive every call into llama.cpp


def stop_on_backend_failure() -> None:
    """From now on a failure inside llama.cpp ends the process with one line on stderr and exit status 4, instead of
    ggml's C backtrace: a ggml abort (GGML_ASSERT; CUDA errors take this path) through ggml's abort callback, an
    uncaught C++ exception (ggml-vulkan throws vk::DeviceLostError, vk::OutOfDeviceMemoryError) through
    std::terminate. Nothing of llama.cpp is called from here, as it may be what failed."""
    def stop(what: str) -> None:
        sys.stdout.flush()
        print(f"error: llama.cpp failed: {what}. The run stops; finished attempts are kept in results.jsonl and the same command "
              f"resumes; on a GPU, --n-gpu-layers 0 runs on the CPU (docs/gpu.md)", file=sys.stderr, flush=True)
        os._exit(FAILURE_EXIT)

    abort_callback = ctypes.CFUNCTYPE(None, ctypes.c_char_p)(lambda message: stop(message.decode(errors="replace").strip()))
    ggml().ggml_set_abort_callback.argtypes = [ctypes.c_void_p]
    ggml().ggml_set_abort_callback(ctypes.cast(abort_callback, ctypes.c_void_p))
    cxx = ctypes.CDLL("libstdc++.so.6")
    cxx.__cxa_current_exception_type.restype = ctypes.c_void_p
    cxx.__cxa_demangle.restype = ctypes.c_char_p
    cxx.__cxa_demangle.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]

    def terminate() -> None:
        exception = cxx.__cxa_current_exception_type()  # a std::type_info: its second word is the mangled name
        mangled = ctypes.cast(exception + ctypes.sizeof(ctypes.c_void_p), ctypes.POINTER(ctypes.c_char_p))[0] if exception else None
        name = cxx.__cxa_demangle(mangled.lstrip(b"*"), None, None, ctypes.byref(ctypes.c_int())) if mangled else None
        stop(f"an uncaught C++ exception{' (' + name.decode() + ')' if name else ''} in its backend; the ggml line above, if any, says more")

    terminate_handler = ctypes.CFUNCTYPE(None)(terminate)
    cxx._ZSt13set_terminatePFvvE.argtypes = [ctypes.c_void_p]
    cxx._ZSt13set_terminatePFvvE(ctypes.cast(terminate_handler, ctypes.c_void_p))
    _keep_alive[:] = [abort_callback, terminate_handler]
