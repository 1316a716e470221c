"""A shared prefix (system prompt; system prompt and query for the samples of a task) is evaluated once and copied
into each attempt's KV sequence: the replies are the tokens a fresh evaluation gives. Real llama.cpp, tiny GGUF."""
import threading

import pytest

from kit import engine
from tiny_gguf import write_tiny_gguf

SYSTEM = {"role": "system", "content": "You are a careful Python programmer. " * 12}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return write_tiny_gguf(tmp_path_factory.mktemp("tiny") / "tiny.gguf", seed=0)


def replies(path, shared: bool, queries: list[str], together: bool, samples: int = 2) -> list[engine.Reply]:
    """One reply per query, each its own attempt: one after another on one sequence, or all at once on their own."""
    model = engine.LlamaModel(path, 0, 512, 0, 0.0, 1.0, 16, threads=1, shared_prefix=shared, samples=samples)
    model.open(len(queries) if together else 1, len(queries))
    answers: dict[int, engine.Reply] = {}

    def ask(number):
        session = model.attempt(str(number), 0)
        answers[number] = session.reply([SYSTEM, {"role": "user", "content": queries[number]}])
        session.close()

    if together:
        threads = [threading.Thread(target=ask, args=(number,)) for number in range(len(queries))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    else:
        for number in range(len(queries)):
            ask(number)
    model.close()
    return [answers[number] for number in range(len(queries))]


@pytest.mark.parametrize("together", [False, True], ids=["one-sequence", "copied-across-sequences"])
def test_a_shared_prefix_gives_the_tokens_of_a_fresh_evaluation(tiny, together):
    queries = ["print the sum", "print the sum", "import the data"]  # the second: a sample of the first
    shared, fresh = replies(tiny, True, queries, together), replies(tiny, False, queries, together)
    assert [reply.text for reply in shared] == [reply.text for reply in fresh] and all(reply.text for reply in shared)
    assert [reply.prompt_evaluated for reply in fresh] == [reply.prompt_tokens for reply in fresh]
    assert [reply.prompt_shared for reply in fresh] == [0, 0, 0]
    assert all(reply.prompt_evaluated + reply.prompt_shared == reply.prompt_tokens for reply in shared)
    first, sample, other = shared
    if together:  # the threads reach the model in any order and times: one evaluates the system prompt, the others copy it
        assert [reply.prompt_shared == 0 for reply in shared].count(True) == 1
        assert all(reply.prompt_shared > 60 for reply in shared if reply.prompt_shared)
        return
    assert first.prompt_shared == 0
    assert other.prompt_shared > 60
    assert sample.prompt_shared == sample.prompt_tokens - 1 and sample.prompt_evaluated == 1  # only its last token


def test_prefix_pieces_are_cut_at_the_shared_ends_then_every_batch():
    assert engine.pieces(0, 1200, [300, 700], 512) == [300, 700, 1200]
    assert engine.pieces(0, 1300, [100], 512) == [100, 612, 1124, 1300]
    assert engine.pieces(300, 400, [300, 350], 512) == [350, 400]


def test_the_run_card_shows_the_prompt_tokens_evaluated_and_what_sharing_saved():
    from kit.harness import Result
    from kit.report import prompt_tokens_fact

    results = [Result(f"t{n}", "math", prompt_tokens=400, prompt_tokens_evaluated=100, prompt_tokens_shared=300) for n in range(3)]
    [(label, text)] = prompt_tokens_fact(results, [{}])
    assert label == "Prompt tokens" and "300 evaluated" in text and "900 copied" in text and "sharing saved 75%" in text and "1,200 in all" in text
    off = [Result("t0", "math", prompt_tokens=400, prompt_tokens_evaluated=400, prompt_tokens_shared=0)]
    assert "off (--no-shared-prefix)" in prompt_tokens_fact(off, [{"no_shared_prefix": True}])[0][1]
    assert prompt_tokens_fact([Result("t0", "math")], [{}]) == []  # a replay evaluates nothing


def test_an_opening_is_a_shared_prefix_only_when_a_task_has_samples(tiny):
    """Every prefix end costs a llama_decode of its own: with one sample a task's opening messages are not cut."""
    first, sample, other = replies(tiny, True, ["print the sum", "print the sum", "import the data"], False, samples=1)
    assert sample.prompt_shared == other.prompt_shared > 60  # the system prompt only, not the sample's query
    assert sample.prompt_evaluated == sample.prompt_tokens - sample.prompt_shared > 1


def test_no_llama_decode_runs_on_the_callers_thread(tiny, monkeypatch):
    """libgomp keeps an OpenMP pool for every thread that ran a parallel region and, once its pools hold more threads
    than the machine has CPUs, stops spinning in every team: a probe decoded on the main thread halved the engine
    thread's speed on 2 cores. The probe and the replies all decode on the engine thread; the caller's never does."""
    import llama_cpp

    decoded_on, real = set(), llama_cpp.llama_decode
    monkeypatch.setattr(llama_cpp, "llama_decode", lambda ctx, batch: decoded_on.add(threading.get_ident()) or real(ctx, batch))
    model = engine.LlamaModel(tiny, 0, 512, 0, 0.0, 1.0, 4, threads=2)
    model.open(1, 1)
    prompt_speed, speed = model.measure_speed(prompt_tokens=8, steps=2, warm_up=1)
    session = model.attempt("t", 0)
    assert session.reply([SYSTEM, {"role": "user", "content": "print the sum"}]).text is not None
    session.close()
    model.close()
    assert prompt_speed > 0 and speed > 0 and len(decoded_on) == 1 and threading.get_ident() not in decoded_on

