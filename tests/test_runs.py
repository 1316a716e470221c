"""Runs you can trust: a manifest, resume after SIGKILL, refusal to mix settings, samples, shards, determinism."""
import pytest
import json
import signal
import subprocess
import sys
import time

from conftest import ROOT, read_results, run_pybench
from tiny_gguf import write_tiny_gguf

pytestmark = pytest.mark.slow  # every test here starts jails, models or whole runs

REFERENCE = ROOT / "checks" / "reference.jsonl"
TASK_IDS = [json.loads(line)["id"] for line in (ROOT / "tasks.jsonl").read_text().splitlines() if line.strip()]


def test_manifest_records_model_suite_and_settings(tmp_path):
    out = tmp_path / "run"
    finished = run_pybench("--replay", REFERENCE, "--limit", "2", "--out", out)
    assert finished.returncode == 0, finished.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(manifest["suite_sha256"]) == 64 and len(manifest["model_sha256"]) == 64
    assert manifest["flags"]["temperature"] == 0.2 and manifest["flags"]["max_turns"] == 10
    assert manifest["jail_limits"]["memory_gib"] == 4.0 and manifest["packages"]["llama-cpp-python"] == "0.3.36"
    assert manifest["started"] and manifest["finished"] and manifest["python"].startswith("3.12")


def test_model_manifest_has_the_gguf_facts(tmp_path):
    model = write_tiny_gguf(tmp_path / "tiny.gguf")
    out = tmp_path / "run"
    finished = run_pybench("--model", model, "--only", TASK_IDS[0], "--max-tokens", "8", "--ctx", "2048", "--out", out)
    assert finished.returncode == 0, finished.stderr
    facts = json.loads((out / "manifest.json").read_text())["model"]
    assert facts["file"] == "tiny.gguf" and facts["architecture"] == "llama" and facts["size"] == model.stat().st_size
    assert len(facts["sha256"]) == 64 and facts["quantization"]


def test_a_run_killed_with_sigkill_resumes_without_loss_or_duplicates(tmp_path):
    out = tmp_path / "run"
    command = [sys.executable, str(ROOT / "pybench.py"), "--replay", str(REFERENCE), "--limit", "10", "--out", str(out)]
    for wanted in (1, 4):  # kill it twice, at different points
        process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            results = out / "results.jsonl"
            if results.exists() and results.read_text().count("\n") >= wanted:
                time.sleep(0.3)  # somewhere inside the next attempt
                break
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait()
    finished = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stderr
    assert "already done" in finished.stdout
    lines = (out / "results.jsonl").read_text().splitlines()
    ids = [json.loads(line)["id"] for line in lines]  # every line whole
    assert sorted(ids) == sorted(TASK_IDS[:10]), "lost or duplicated attempts"
    assert all(json.loads(line)["passed"] for line in lines)
    assert len(json.loads((out / "manifest.json").read_text()).get("resumed", [])) == 2


def test_resume_refuses_a_run_with_other_settings(tmp_path):
    out = tmp_path / "run"
    assert run_pybench("--replay", REFERENCE, "--limit", "1", "--out", out).returncode == 0
    refused = run_pybench("--replay", REFERENCE, "--limit", "1", "--out", out, "--temperature", "0.7")
    assert refused.returncode == 2 and "temperature" in refused.stderr and "--force" in refused.stderr
    forced = run_pybench("--replay", REFERENCE, "--limit", "2", "--out", out, "--temperature", "0.7", "--force")
    assert forced.returncode == 0, forced.stderr
    assert [r["id"] for r in read_results(out).values()] == TASK_IDS[:2]


def test_samples_and_shards(tmp_path):
    out = tmp_path / "run"
    finished = run_pybench("--replay", REFERENCE, "--limit", "6", "--shard", "2/3", "--samples", "2", "--out", out)
    assert finished.returncode == 0, finished.stderr
    lines = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted((r["id"], r["sample"], r["seed"]) for r in lines) == [  # finished in any order
        (TASK_IDS[1], 0, 0), (TASK_IDS[1], 1, 1), (TASK_IDS[4], 0, 0), (TASK_IDS[4], 1, 1)]
    assert all((out / r["output"]).is_dir() and r["output"].endswith(f".s{r['sample']}") for r in lines)
    bad = run_pybench("--replay", REFERENCE, "--shard", "4/3", "--out", tmp_path / "bad")
    assert bad.returncode == 2 and "--shard" in bad.stderr


def test_same_model_seed_and_flags_give_identical_trajectories(tmp_path):
    model = write_tiny_gguf(tmp_path / "tiny.gguf")
    common = ["--model", model, "--limit", "3", "--max-tokens", "48", "--ctx", "2048", "--temperature", "0.8"]
    runs = {}
    for name, seed in (("a", "7"), ("b", "7"), ("c", "8")):
        finished = run_pybench(*common, "--seed", seed, "--out", tmp_path / name)
        assert finished.returncode == 0, finished.stderr
        runs[name] = {task_id: r["messages"] for task_id, r in read_results(tmp_path / name).items()}
    assert runs["a"] == runs["b"]
    assert runs["a"] != runs["c"], "a different seed should change a sampled trajectory"
