"""An original PyBench checkout, run offline and jailed: our own fixture in the original's layout (tests/fixtures)."""
import json
import shutil

import yaml

from conftest import ROOT, code, read_results, run_pybench, write_jsonl

CHECKOUT = ROOT / "tests" / "fixtures" / "pybench_checkout"
TRAJECTORIES = ROOT / "tests" / "fixtures" / "pybench_trajectories.jsonl"


def test_saved_trajectories_are_re_executed_and_scored_by_the_checkouts_tests(tmp_path):
    out = tmp_path / "run"
    finished = run_pybench("--tasks", CHECKOUT, "--replay", TRAJECTORIES, "--out", out)
    assert finished.returncode == 0, finished.stderr
    results = read_results(out)
    assert {task_id for task_id, r in results.items() if r["passed"]} == {"2", "52", "78", "134", "140"}
    assert "NameError" in results["11"]["reason"] and results["11"]["caveats"], results["11"]
    assert "original way: 5/6" in finished.stdout and "honest way:   5/5" in finished.stdout
    assert [results[i]["category"] for i in ("2", "52", "78", "134", "140")] == ["chart", "text", "image_audio", "math", "software"]
    messages = results["2"]["messages"]
    config = yaml.safe_load((CHECKOUT / "config" / "llama3.yaml").read_text())
    assert messages[0] == {"role": "system", "content": config["system_prompt_template"]}
    assert messages[1] == {"role": "user", "content": "[INFO]The data is uploaded to ./data/sales records.csv"}
    assert messages[2]["content"].startswith("Remove the duplicated rows")
    assert [m["role"] for m in messages[3:]] == ["assistant", "user", "assistant", "user", "assistant"]
    assert messages[4]["content"].startswith("[INFO]This is a Code Interpreter Message:\n10 rows, 2 duplicated")
    assert results["11"]["messages"][1]["content"] == "[INFO]The data is uploaded to ./data/temperatures.csv,./data/stations.csv"
    assert (out / "outputs" / "140").is_dir() and (out / "outputs" / "2" / "2.csv").is_file()
    report = run_pybench("report", out)
    assert report.returncode == 0, report.stderr
    assert "original way: 5/6" in report.stdout and "honest way:   5/5" in report.stdout and (out / "report" / "report.html").is_file()


def test_turn_limit_leaves_the_interpreter_message_last_and_the_agent_cannot_read_the_tests(tmp_path):
    replies = [code("print(open('./data/unit_test/tests.py').read())"), code("print(3 ** 40)"), "never reached"]
    replay = write_jsonl(tmp_path / "replay.jsonl", [{"id": "134", "replies": replies}])
    out = tmp_path / "run"
    finished = run_pybench("--tasks", CHECKOUT, "--replay", replay, "--only", "134", "--max-turns", "2", "--out", out)
    assert finished.returncode == 0, finished.stderr
    result = read_results(out)["134"]
    assert result["ended_by"] == "turn limit" and result["turns"] == 2
    assert "FileNotFoundError" in result["messages"][4]["content"]
    last = result["messages"][-1]
    assert last["role"] == "user" and last["content"] == f"[INFO]This is a Code Interpreter Message:\n{3 ** 40}\n"  # print's newline, as the original kept it
    assert result["passed"], "test_task_134 reads trajectory[-1], which here is the interpreter's message holding 3**40"


def test_config_sets_turns_and_sampling_and_flags_win(tmp_path):
    out = tmp_path / "run"
    assert run_pybench("--tasks", CHECKOUT, "--replay", TRAJECTORIES, "--only", "52", "--out", out).returncode == 0
    flags = json.loads((out / "manifest.json").read_text())["flags"]
    assert (flags["temperature"], flags["top_p"], flags["max_tokens"], flags["max_turns"]) == (0.2, 0.85, 1000, 10)
    out2 = tmp_path / "run2"
    assert run_pybench("--tasks", CHECKOUT, "--replay", TRAJECTORIES, "--only", "52", "--temperature", "0.5", "--out", out2).returncode == 0
    assert json.loads((out2 / "manifest.json").read_text())["flags"]["temperature"] == 0.5


def test_missing_inputs_are_marked_not_fatal(tmp_path):
    checkout = tmp_path / "checkout"
    shutil.copytree(CHECKOUT, checkout)
    (checkout / "data" / "评论.txt").unlink()
    out = tmp_path / "run"
    finished = run_pybench("--tasks", checkout, "--replay", TRAJECTORIES, "--out", out)
    assert finished.returncode == 0, finished.stderr
    result = read_results(out)["52"]
    assert any("评论.txt" in caveat and "missing" in caveat for caveat in result["caveats"])
    assert "FileNotFoundError" in result["messages"][4]["content"]  # the replayed code ran without its input
    assert "honest way:   4/4" in finished.stdout  # 11 (defective test) and 52 (missing input) set aside


def test_bad_config_and_bad_checkout_are_usage_errors(tmp_path):
    missing = run_pybench("--tasks", CHECKOUT, "--replay", TRAJECTORIES, "--pybench-config", "config/absent.yaml", "--out", tmp_path / "a")
    assert missing.returncode == 2 and "config/absent.yaml" in missing.stderr
    checkout = tmp_path / "checkout"
    shutil.copytree(CHECKOUT, checkout)
    (checkout / "config" / "evaluator.yaml").write_text("system_prompt: judge\nuser_prompt: '{line}'\n")
    judge = run_pybench("--tasks", checkout, "--replay", TRAJECTORIES, "--pybench-config", "config/evaluator.yaml", "--out", tmp_path / "b")
    assert judge.returncode == 2 and "not an agent config" in judge.stderr
    (checkout / "data" / "meta" / "task.json").write_text("[{\"index\": \"999\", \"user\": \"x\"}]")
    bad = run_pybench("--tasks", checkout, "--replay", TRAJECTORIES, "--out", tmp_path / "c")
    assert bad.returncode == 2 and "999" in bad.stderr
    empty = run_pybench("--tasks", tmp_path, "--out", tmp_path / "d")
    assert empty.returncode == 2 and "not a PyBench checkout" in empty.stderr
    assert not any((tmp_path / name).exists() for name in "abcd")
