"""Real llama.cpp drives the loop: a tiny random GGUF (fast, always fails) and the embedded default model."""
import json
import re

import pytest

from conftest import ROOT, read_results, run_pybench
from tiny_gguf import write_tiny_gguf

pytestmark = pytest.mark.slow  # every test here starts jails, models or whole runs

FIRST_TASK = json.loads((ROOT / "tasks.jsonl").read_text().split("\n")[0])


def test_tiny_random_model_drives_a_task(tmp_path):
    model = write_tiny_gguf(tmp_path / "tiny.gguf")
    out = tmp_path / "run"
    finished = run_pybench("--model", model, "--only", FIRST_TASK["id"], "--max-tokens", "40", "--ctx", "2048", "--out", out)
    assert finished.returncode == 0, finished.stderr
    assert "model: tiny.gguf on CPU" in finished.stdout or "model: tiny.gguf on GPU" in finished.stdout
    result = read_results(out)[FIRST_TASK["id"]]
    assert result["passed"] is False and result["reason"]
    assert result["turns"] >= 1 and result["completion_tokens"] > 0 and result["prompt_tokens"] > 0
    roles = [message["role"] for message in result["messages"]]
    assert roles[:4] == ["system", "user", "user", "assistant"]
    assert result["messages"][2]["content"] == FIRST_TASK["query"]
    assert (out / "outputs" / FIRST_TASK["id"]).is_dir()
    assert "Overall" in finished.stdout and "paper: GPT-4o" in finished.stdout


def test_default_model_runs_a_task_end_to_end(tmp_path):
    out = tmp_path / "run"
    finished = run_pybench("--only", FIRST_TASK["id"], "--max-turns", "2", "--max-tokens", "160", "--out", out)
    assert finished.returncode == 0, finished.stderr
    assert "model: SmolLM2-135M-Instruct.Q4_1.gguf" in finished.stdout
    first = finished.stdout.splitlines()[:2]  # a newcomer is told what the embedded model is before it runs
    assert "135M-parameter smoke test" in first[0] and "about 0%" in first[0]
    assert "--model path/to/model.gguf" in first[1] and "--limit 5" in first[1]
    speed = next(line for line in finished.stdout.splitlines() if line.startswith("speed, measured now: "))  # the first ETA, from here
    assert re.search(r"\d+ tokens/s generated \(1 at once\), \d+ prompt tokens/s; the 1 attempt\(s\) should take ~\d+", speed), speed
    assert "rebuild" not in finished.stdout  # no GPU here: no GPU build to advise
    result = read_results(out)[FIRST_TASK["id"]]
    assert 1 <= result["turns"] <= 2 and result["completion_tokens"] > 0
    assert result["ended_by"] in ("final answer", "turn limit")
    assert result["messages"][3]["role"] == "assistant" and result["messages"][3]["content"].strip()
