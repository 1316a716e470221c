"""Several attempts in flight on one model: the same replies as one at a time, cells overlapped, Ctrl-C and resume.
The model tests use the embedded SmolLM2 (real llama.cpp); the scheduler tests use replays in real jails."""
import json
import signal
import subprocess
import sys
import threading
import time

import pytest

from kit import engine
from kit import suite
import pybench
from conftest import ROOT, code, hearing_ctrl_c, read_results, run_pybench, write_jsonl

TASK_IDS = [task.id for task in suite.load_tasks(ROOT / "tasks.jsonl")]


@pytest.fixture(scope="module")
def smollm():
    model = engine.LlamaModel(pybench.default_model_path(), -1, 2048, 0, 0.2, 0.85, 40)
    yield model
    model.close()


def conversation(model, question: str, seed: int, turns: int = 2) -> list[str]:
    """A short chat of `turns` replies in one attempt (its own sequence of the model)."""
    messages = [{"role": "system", "content": "You write short Python."}, {"role": "user", "content": question}]
    session = model.attempt(question, seed)
    replies = []
    for _ in range(turns):
        reply = session.reply(messages)
        replies.append(reply.text)
        messages += [{"role": "assistant", "content": reply.text}, {"role": "user", "content": "Output:\nok"}]
    session.close()
    return replies


QUESTIONS = ["Add 2 and 3 in Python.", "Print the first five primes.", "Sort [3, 1, 2].", "Read data.csv with pandas.",
             "Reverse a string.", "Count words in a sentence.", "Square the numbers 1 to 5.", "Print today's date."]


@pytest.mark.slow
def test_replies_are_what_create_chat_completion_gives(smollm):
    """Same template rendering, sampler chain, seed and prefix reuse as llama-cpp-python's own chat completion on one
    Llama, over two turns (the second evaluated after the common prefix)."""
    import llama_cpp

    smollm.open(1, 1)
    ours = conversation(smollm, QUESTIONS[1], seed=5)
    smollm.close()
    raw = llama_cpp.Llama(model_path=str(pybench.default_model_path()), n_ctx=2048, seed=0, n_threads=2, verbose=False)
    messages = [{"role": "system", "content": "You write short Python."}, {"role": "user", "content": QUESTIONS[1]}]
    theirs = []
    for _ in range(2):
        text = raw.create_chat_completion(messages=messages, temperature=0.2, top_p=0.85, max_tokens=40, seed=5)["choices"][0]["message"]["content"]
        theirs.append(text)
        messages += [{"role": "assistant", "content": text}, {"role": "user", "content": "Output:\nok"}]
    assert ours == theirs


@pytest.mark.slow
def test_a_sampled_reply_depends_only_on_its_seed_not_on_the_batch(smollm):
    smollm.open(1, 1)
    alone = {seed: conversation(smollm, QUESTIONS[0], seed) for seed in (1, 2)}
    smollm.close()
    smollm.open(8, 8)
    together = {}

    def chat(number):
        question, seed = (QUESTIONS[0], number) if number in (1, 2) else (QUESTIONS[number], 0)
        together[number] = conversation(smollm, question, seed)

    threads = [threading.Thread(target=chat, args=(number,)) for number in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    smollm.close()
    assert together[1] == alone[1] and together[2] == alone[2]
    assert all(replies[0] for replies in together.values())


@pytest.mark.slow
def test_greedy_trajectories_are_identical_at_parallel_1_and_8(tmp_path):
    runs = {}
    for parallel in ("1", "8"):
        out = tmp_path / f"k{parallel}"
        finished = run_pybench("--limit", "8", "--max-turns", "2", "--max-tokens", "40", "--ctx", "2048", "--temperature", "0",
                               "--parallel", parallel, "--out", out)
        assert finished.returncode == 0, finished.stderr
        assert f"{parallel} at once (--parallel {parallel}" in finished.stdout
        assert json.loads((out / "manifest.json").read_text())["parallel"]["attempts_at_once"] == int(parallel)
        runs[parallel] = {task_id: (r["messages"], r["passed"]) for task_id, r in read_results(out).items()}
    assert sorted(runs["1"]) == sorted(runs["8"]) == sorted(TASK_IDS[:8])
    assert runs["1"] == runs["8"]


def sleepy_suite(make_suite, tmp_path, count: int, seconds: float):
    """`count` tasks whose one cell prints when it starts and ends, sleeping between; a replay for them."""
    tasks = make_suite([{"id": f"t{n}", "category": "math", "query": "wait", "files": [], "check": "suite:ok"} for n in range(count)],
                       "def ok(answer, output, data):\n    pass\n")
    cell = f"import time\nprint('start', time.time())\ntime.sleep({seconds})\nprint('end', time.time())"
    replay = write_jsonl(tmp_path / "replay.jsonl", [{"id": f"t{n}", "replies": [code(cell), "done"]} for n in range(count)])
    return tasks, replay


@pytest.mark.slow
def test_a_replay_at_parallel_4_runs_cells_of_different_tasks_at_the_same_time(make_suite, tmp_path):
    tasks, replay = sleepy_suite(make_suite, tmp_path, 4, 1.5)
    out = tmp_path / "run"
    finished = run_pybench("--tasks", tasks, "--replay", replay, "--parallel", "4", "--out", out)
    assert finished.returncode == 0, finished.stderr
    results = read_results(out)
    assert sorted(results) == ["t0", "t1", "t2", "t3"] and all(r["passed"] for r in results.values())
    spans = []
    for result in results.values():
        words = result["messages"][4]["content"].split()
        spans.append((float(words[words.index("start") + 1]), float(words[words.index("end") + 1])))
    latest_start, earliest_end = max(start for start, _ in spans), min(end for _, end in spans)
    assert latest_start < earliest_end, f"the four cells did not overlap: {spans}"


@pytest.mark.slow
def test_ctrl_c_stops_the_attempts_in_flight_and_the_same_command_resumes(make_suite, tmp_path):
    tasks, replay = sleepy_suite(make_suite, tmp_path, 3, 60)
    out = tmp_path / "run"
    command = [sys.executable, str(ROOT / "pybench.py"), "--tasks", str(tasks), "--replay", str(replay), "--parallel", "2",
               "--cell-timeout", "100", "--out", str(out)]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=hearing_ctrl_c)  # a shell's background job (CI under nohup) ignores SIGINT
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(list((out / "jails").glob("t*.cfg"))) < 2:
        time.sleep(0.1)
    time.sleep(1.5)  # both cells are sleeping now
    interrupted = time.monotonic()
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert time.monotonic() - interrupted < 20, "Ctrl-C waited for the sleeping cells"
    assert "interrupted" in stderr and "resumes" in stderr
    assert not (out / "results.jsonl").exists() or (out / "results.jsonl").read_text() == ""
    fast = write_jsonl(tmp_path / "replay.jsonl", [{"id": f"t{n}", "replies": [code("print(1)"), "done"]} for n in range(3)])
    resumed = subprocess.run(command + ["--force"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert fast.exists() and sorted(read_results(out)) == ["t0", "t1", "t2"]


def test_parallel_must_be_auto_or_a_positive_number(tmp_path):
    for bad in ("0", "two", "-3"):
        finished = run_pybench("--replay", ROOT / "checks" / "reference.jsonl", "--parallel", bad, "--out", tmp_path / "x")
        assert finished.returncode == 2 and "--parallel" in finished.stderr


def test_auto_fits_the_kv_caches_into_free_memory():
    slots, why = engine.parallel_plan(None, 100, 2**30, on_gpu=False)
    free = engine.ram_free_bytes()
    assert 1 <= slots <= 8 and slots <= max(1, free // 2 // 2**30) and "auto" in why and "RAM" in why
    assert engine.parallel_plan(None, 3, 1, on_gpu=False)[0] == 3  # never more than the attempts
    assert engine.parallel_plan(None, 100, free * 10, on_gpu=False)[0] == 1  # one always runs
    assert engine.parallel_plan(5, 100, 1, on_gpu=False)[0] == 5
