"""The GPU path on a real Vulkan device: llama.cpp's Vulkan backend on Mesa's lavapipe (a conformant Vulkan driver that
runs on the CPU), through the kit's own code, in the Vulkan build's venv (.venv-vulkan, made by
`python3.12 pybench.py setup --gpu vulkan --venv .venv-vulkan`; .ci/run makes it). Each test runs the kit or
tests/gpu_worker.py as a child process with that venv's python, so the CPU venv the other tests use is untouched.

lavapipe decodes SmolLM2 at about 0.3-1.6 tokens/s and evaluates prompts at about 1-5 tokens/s on this 2-core
machine: the tests generate 12 tokens in all, evaluate short prompts, and stop kit runs once their first line is out.
ggml-vulkan skips CPU-type devices unless GGML_VK_VISIBLE_DEVICES names them: it is set to 0 (lavapipe) here.
The device check (tests/benches/bench_gpu.py) runs here at its tiny shape, on lavapipe and on the CPU build (the one
test that needs no Vulkan build, with the test of its offline build's refusal).
"""
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

VULKAN_PYTHON = ROOT / ".venv-vulkan" / "bin" / "python"
LAVAPIPE = {"GGML_VK_VISIBLE_DEVICES": "0"}
FIRST_TASK = json.loads((ROOT / "tasks.jsonl").read_text().splitlines()[0])["id"]
GIB, MIB = 2**30, 2**20

pytestmark = pytest.mark.slow
vulkan = pytest.mark.skipif(not VULKAN_PYTHON.exists(), reason="no Vulkan build of llama.cpp here: "
                            "python3.12 pybench.py setup --gpu vulkan --venv .venv-vulkan (.ci/run makes it)")


def environment(**extra) -> dict:
    return {key: value for key, value in os.environ.items() if key not in ("GGML_VK_VISIBLE_DEVICES", "PYBENCH_GPU_MEMORY_GIB")} | extra


def worker(python, job: dict, tmp_path, **extra) -> subprocess.CompletedProcess:
    path = tmp_path / "job.json"
    path.write_text(json.dumps(job))
    return subprocess.run([str(python), str(ROOT / "tests" / "gpu_worker.py"), str(path)], capture_output=True, text=True, timeout=900,
                          cwd=ROOT, env=environment(**extra))


def found(finished: subprocess.CompletedProcess) -> dict:
    assert finished.returncode == 0, finished.stderr[-3000:]
    return json.loads(finished.stdout.splitlines()[-1])


def model_path() -> str:
    return subprocess.run([str(VULKAN_PYTHON), "-c", "import pybench; print(pybench.default_model_path())"], capture_output=True,
                          text=True, cwd=ROOT, check=True).stdout.strip()


def first_line_of_run(tmp_path, **extra) -> tuple[str, dict]:
    """The kit's first line and its manifest, for one task on the embedded model (named with --model, so that the
    first line is the model line); the run is interrupted once that line is out (the attempt would evaluate a
    suite prompt of hundreds of tokens on lavapipe)."""
    out = tmp_path / "run"
    run = subprocess.Popen([str(VULKAN_PYTHON), str(ROOT / "pybench.py"), "--model", model_path(), "--only", FIRST_TASK, "--max-turns", "1",
                            "--max-tokens", "2", "--ctx", "2048", "--parallel", "1", "--out", str(out)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=environment(**extra))
    try:
        line = run.stdout.readline().strip()
    finally:
        run.send_signal(signal.SIGINT)
        try:
            run.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            run.kill()
            run.communicate()
    return line, json.loads((out / "manifest.json").read_text())


@vulkan
def test_doctor_names_the_vulkan_backend_and_the_lavapipe_device():
    doctor = subprocess.run([str(VULKAN_PYTHON), str(ROOT / "pybench.py"), "doctor"], capture_output=True, text=True, timeout=600,
                            cwd=ROOT, env=environment(**LAVAPIPE))
    assert "llama.cpp built with the Vulkan and CPU backend(s) (setup --gpu vulkan: CMAKE_ARGS=\"-DGGML_VULKAN=on\"" in doctor.stdout
    device = next(line for line in doctor.stdout.splitlines() if line.startswith("ok   GPU "))
    assert device.startswith("ok   GPU Vulkan0 (llvmpipe") and "MiB free of" in device
    # without GGML_VK_VISIBLE_DEVICES, ggml-vulkan skips lavapipe (a CPU-type device) and the kit says why it sees no GPU
    why = subprocess.run([str(VULKAN_PYTHON), "-c", "from kit import engine; print(engine.gpus(), engine.why_no_gpu())"], capture_output=True,
                         text=True, cwd=ROOT, env=environment())
    assert why.stdout.startswith("[] the Vulkan backend sees no GPU") and "GGML_VK_VISIBLE_DEVICES" in why.stdout


@vulkan
def test_every_layer_is_offloaded_and_the_first_line_and_manifest_name_the_device(tmp_path):
    line, manifest = first_line_of_run(tmp_path, **LAVAPIPE)
    # llama.cpp's own count (its loader's log): SmolLM2's 30 blocks and its output layer
    assert line.startswith("model: SmolLM2-135M-Instruct.Q4_1.gguf on GPU Vulkan0 (llvmpipe (LLVM"), line
    assert ": 31 of 31 layers offloaded;" in line
    assert "1 at once (--parallel 1; 2.0 GiB GPU memory free" in line  # the KV cache is planned on the device
    assert manifest["device"] == line.split(" on ", 1)[1].split("; 1 task(s)")[0]
    backend = manifest["llama_cpp_backend"]
    assert backend["backends"] == ["Vulkan", "CPU"] and manifest["gpu_offload"] is True
    assert backend["gpus"][0]["name"] == "Vulkan0" and backend["gpus"][0]["description"].startswith("llvmpipe")
    assert backend["build"]["backend"] == "vulkan" and backend["build"]["cmake_args"] == "-DGGML_VULKAN=on"
    assert backend["build"]["patch"] == "ggml-vulkan-headers-before-1.3.261.patch"  # Debian 12's headers are 1.3.239


@vulkan
def test_greedy_replies_agree_with_the_cpu_build_up_to_near_ties(tmp_path):
    """Greedy replies of two turns (6 tokens each), one sequence whose KV cache carries over between turns, on the
    Vulkan device and on the CPU build. They are not guaranteed to be equal: ggml-vulkan's kernels compute in other
    orders and precisions (f16 accumulators) than the CPU's, so where two tokens' logits nearly tie the other one can
    win, and the texts go their own ways from there. Measured here: the first turn agrees for 3 tokens ("Two and two"),
    then Vulkan picks " is" where the CPU picks " equals", 0.33 below the CPU's top logit. What is checked is what the
    arithmetic guarantees: each build's every greedy token is the other build's top choice or within 1.0 of it when its
    tokens are fed to the other (the CPU's first reply only, on Vulkan), and the replies begin alike."""
    job = {"do": "replies", "turns": ["What is 2+2?", "And times 3?"], "max_tokens": 6}
    on_vulkan = found(worker(VULKAN_PYTHON, job, tmp_path, **LAVAPIPE))
    on_cpu = found(worker(ROOT / ".venv" / "bin" / "python", job, tmp_path))
    assert on_vulkan["device"].endswith("31 of 31 layers offloaded") and on_cpu["device"].startswith("CPU")
    vulkan_replies, cpu_replies = on_vulkan["replies"], on_cpu["replies"]
    assert all(len(reply["ids"]) == 6 for reply in vulkan_replies + cpu_replies)
    assert vulkan_replies[0]["prompt_ids"] == cpu_replies[0]["prompt_ids"]  # the same prompt, token for token
    vulkan_below_cpu = found(worker(ROOT / ".venv" / "bin" / "python", {"do": "margins", "replies": vulkan_replies}, tmp_path))["margins"]
    # the other way round for the first turn only (the same prompt in both; lavapipe is slow at scoring every position)
    cpu_below_vulkan = found(worker(VULKAN_PYTHON, {"do": "margins", "replies": cpu_replies[:1]}, tmp_path, **LAVAPIPE))["margins"]
    print(f"Vulkan: {[reply['text'] for reply in vulkan_replies]}, its tokens below the CPU's top logit: {vulkan_below_cpu}; "
          f"CPU: {[reply['text'] for reply in cpu_replies]}, below Vulkan's: {cpu_below_vulkan}")
    assert max(map(max, vulkan_below_cpu + cpu_below_vulkan)) < 1.0
    first_vulkan, first_cpu = vulkan_replies[0]["ids"], cpu_replies[0]["ids"]
    agree = next((at for at, (ours, theirs) in enumerate(zip(first_vulkan, first_cpu)) if ours != theirs), len(first_vulkan))
    assert agree >= 3
    # while they agree, each token is the CPU's top choice, or a hair below it: the margins come from scoring the whole
    # reply in one pass, whose sums run in another order than token-by-token decoding (0.0131 seen on 2026-12-06)
    assert max(vulkan_below_cpu[0][:agree]) < 0.05, vulkan_below_cpu[0][:agree]
    if agree < len(first_vulkan):
        assert vulkan_below_cpu[0][agree] > 0 and cpu_below_vulkan[0][agree] > 0  # a near tie, each build's top its own


@vulkan
def test_parallel_auto_takes_k_from_the_device_memory(tmp_path):
    """--parallel auto on the device: as many KV caches of --ctx as fit in half the device's free memory (lavapipe
    says 2048 MiB), then under a 1 GiB budget (PYBENCH_GPU_MEMORY_GIB); the KV cache llama.cpp allocates is on
    Vulkan0 and holds exactly that many sequences."""
    result = found(worker(VULKAN_PYTHON, {"do": "open", "parallel": None, "attempts": 100, "ctx": 8192, "budgets": [None, 1.0]},
                          tmp_path, **LAVAPIPE))
    free = sum(device["free"] for device in result["gpus"])
    assert free > GIB
    for opened, memory in zip(result["opened"], (free, GIB)):
        kv = opened["kv_per_sequence"]
        assert kv == 30 * 3 * (64 + 64) * 2 * 8192  # layers x KV heads x (key + value dims) x f16 x tokens
        assert opened["slots"] == min(16, memory // 2 // kv) and opened["slots"] >= 1
        assert opened["choice"].startswith(f"auto: {memory / GIB:.1f} GiB GPU memory free, 180 MiB of KV cache each, at most 16")
        assert opened["buffers"]["Vulkan0 KV"] == opened["slots"] * kv / MIB
    assert result["opened"][0]["slots"] > result["opened"][1]["slots"]


@vulkan
def test_a_model_that_does_not_fit_the_budget_loads_fewer_layers(tmp_path):
    """Under a budget of 1.05 GiB (1 GiB kept for the KV cache and buffers) 51 MiB are left for the weights: the
    whole layers that fit in it are offloaded, the rest stay on the CPU, and the first line says how many."""
    line, manifest = first_line_of_run(tmp_path, PYBENCH_GPU_MEMORY_GIB="1.05", **LAVAPIPE)
    size = os.path.getsize(model_path())
    fitting = int((1.05 * GIB - GIB) / (size / 30))
    assert 0 < fitting < 30
    assert "on GPU Vulkan0 (llvmpipe (LLVM" in line and f": {fitting} of 31 layers offloaded; the model (0.1 GiB) does not fit" in line
    assert f"so {fitting} layers are offloaded" in line
    assert manifest["llama_cpp_backend"]["gpu_memory_budget_gib"] == "1.05"


@vulkan
def test_a_failed_allocation_is_retried_with_fewer_sequences(tmp_path):
    """--parallel 16 at 8192 tokens asks for 2880 MiB of KV cache; with ggml-vulkan's buffer limit forced to 800 MiB
    (GGML_VK_FORCE_MAX_BUFFER_SIZE, as a device with a small maxBufferSize has) llama.cpp cannot allocate 16 or 8
    sequences (its KV buffers are cut at 1 GiB), and the kit halves until 4 (720 MiB) fit."""
    result = found(worker(VULKAN_PYTHON, {"do": "open", "parallel": 16, "attempts": 100, "ctx": 8192}, tmp_path,
                          GGML_VK_FORCE_MAX_BUFFER_SIZE=str(800 * MIB), **LAVAPIPE))
    opened, = result["opened"]
    assert opened["slots"] == 4
    assert opened["choice"].endswith("llama.cpp could not allocate that, so 8; llama.cpp could not allocate that, so 4")
    assert opened["buffers"]["Vulkan0 KV"] == 4 * opened["kv_per_sequence"] / MIB


@vulkan
@pytest.mark.parametrize("how", ["ggml_assert", "cxx_exception"])
def test_a_failure_inside_the_backend_is_one_line(tmp_path, how):
    """With the model loaded on the device, a ggml abort inside ggml-vulkan (a GGML_ASSERT, the path CUDA errors take
    too) and an uncaught C++ exception (the way ggml-vulkan reports a lost device) each end the process with the
    kit's one line and exit status 4: no Python traceback, no C backtrace."""
    finished = worker(VULKAN_PYTHON, {"do": "fail", "how": how}, tmp_path, **LAVAPIPE)
    assert finished.returncode == 4, finished.stderr[-2000:]
    assert "survived" not in finished.stdout
    ours = [line for line in finished.stderr.splitlines() if line.startswith("error: ")]
    assert len(ours) == 1 and ours[0] == finished.stderr.strip().splitlines()[-1]
    assert ours[0].startswith("error: llama.cpp failed: ") and "--n-gpu-layers 0 runs on the CPU" in ours[0]
    if how == "ggml_assert":
        assert "ggml-vulkan.cpp" in ours[0] and "GGML_ASSERT(device < " in ours[0]
    else:
        assert "uncaught C++ exception (std::runtime_error)" in ours[0]
    assert "Traceback" not in finished.stderr and "terminate called" not in finished.stderr and "#0 " not in finished.stderr


# The device check's every step, at the tiny shape (2 blocks of 64), with prompts cut to a few tokens: what it prints on a
# real GPU is docs/gpu.md's; here it proves that each step runs and prints, on the CPU build and on a Vulkan device.
DEVICE_CHECK = ["--shapes", "tiny", "--ks", "1,2", "--prompts", "2", "--tokens", "2", "--cut", "40", "--prompt-tokens", "0", "--turns", "2",
                "--turn-tokens", "2", "--observation-tokens", "8"]


@pytest.mark.parametrize("build", ["cpu", pytest.param("lavapipe", marks=vulkan)])
def test_the_device_check_runs_every_step_at_the_tiny_shape(tmp_path, build):
    python = VULKAN_PYTHON if build == "lavapipe" else ROOT / ".venv" / "bin" / "python"
    check = subprocess.run([str(python), str(ROOT / "tests" / "benches" / "bench_gpu.py"), "--python", str(python), "--models", str(tmp_path),
                            *DEVICE_CHECK], capture_output=True, text=True, timeout=900, cwd=ROOT,
                           env=environment(**(LAVAPIPE if build == "lavapipe" else {})))
    assert check.returncode == 0, check.stderr[-3000:]
    lines = check.stdout.splitlines()
    print(check.stdout)
    line = lambda start: next(line for line in lines if line.startswith(start))  # noqa: E731
    if build == "lavapipe":
        assert line("device: ").startswith("device: llama.cpp backends Vulkan, CPU; Vulkan0 (llvmpipe")
        where, budget = "GPU Vulkan0 (llvmpipe (LLVM", ": 1 of 3 layers offloaded; the model (0.0 GiB) does not fit the GPU's 1.0 GiB free"
        assert line("model: ").endswith("): 3 of 3 layers offloaded")  # the 2 blocks and the output layer
        assert "16 at once (auto: 2.0 GiB GPU memory free" in line("parallel auto: ")
    else:
        assert line("device: ") == "device: llama.cpp backends CPU; no GPU: this llama.cpp build has no GPU backend"
        where = budget = "CPU (this llama.cpp build has no GPU backend)"
        assert "2 at once (auto: " in line("parallel auto: ") and "GiB RAM free" in line("parallel auto: ")
    assert line("made tiny-random-llama.Q4_0.gguf: 0 MiB in ")
    assert line("model: ").startswith(f"model: tiny-random-llama.Q4_0.gguf (0 MiB) on {where}")
    table = lines.index(line("     K  raw tokens/s"))
    rows = [row.split() for row in lines[table + 1:table + 3]]
    assert [row[0] for row in rows] == ["1", "2"] and all(float(figure) > 0 for row in rows for figure in row[1:7])
    # the system prompt is evaluated once with the shared prefix; every reply has its 2 tokens (a random model never stops)
    assert all(row[7:] == [row[7], "/", "126", "4/4/4"] and int(row[7]) < 126 for row in rows), rows
    assert "  kit replies identical at K=1, 2, with and without the shared prefix: True" in lines
    assert line("  kit K=1, 2 prompts: ").endswith("x")
    turns = [line for line in lines if line.startswith("  turn ")]
    assert len(turns) == 2 and all(", 2 generated in " in turn for turn in turns)
    assert line("  the attempt: ").endswith("prompt tokens evaluated, 4 generated")
    assert line("budget PYBENCH_GPU_MEMORY_GIB=").split(" on ", 1)[1].startswith(where) and budget in line("budget ")
    assert lines[-1].startswith("device check done in ")


def test_the_build_reads_the_given_folder_alone(tmp_path, monkeypatch):
    """gpu.build_wheel with a folder (the device check's --wheels): pip reads that folder and no package index, so a
    folder without llama-cpp-python's source is one sentence naming the folder and what to put there, not a download.
    (Metal: the backend whose build needs no toolkit check before the download.)"""
    from kit import gpu

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # no wheel built before
    monkeypatch.delenv("CMAKE_ARGS", raising=False)
    (tmp_path / "wheels").mkdir()
    with pytest.raises(gpu.BuildError) as refused:
        gpu.build_wheel("metal", "llama-cpp-python==0.3.36", Path(sys.executable), None, tmp_path / "wheels")
    assert str(refused.value) == (f"pip found no source of llama-cpp-python==0.3.36 in {tmp_path / 'wheels'}: put its sdist there (pip "
                                  "download --no-deps --no-binary :all: llama-cpp-python==0.3.36) with its build requirements")
