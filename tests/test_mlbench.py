"""ML-Bench: a split in ML-Bench's fields (our own fixture of tiny repositories), its static checks, replay of its output
format, execution pass / fail / timeout in the real jail, an agent run that writes run.sh, and bad input."""
import pytest
import json
import os
import shutil
from pathlib import Path

from conftest import ROOT, run_pybench, write_jsonl
from tiny_gguf import write_tiny_gguf

from kit import judge, mlbench
from kit.report import read_run

pytestmark = pytest.mark.slow  # every test here starts jails, models or whole runs

FIXTURE = ROOT / "tests" / "fixtures" / "mlbench"
SPLIT = FIXTURE / "split.jsonl"
REPOS = FIXTURE / "repos"


def results_of(run_dir):
    return {(r["id"], r["sample"]): r for r in map(json.loads, (run_dir / "results.jsonl").read_text().split("\n")[:-1])}


def bash(source):
    return f"Let me look.\n```bash\n{source}\n```"


def python(source):
    return f"Now write it.\n```python\n{source}\n```"


def test_static_checks_are_ml_benchs():
    arguments = {"dataset": "Cora", "epochs": 3, "lr": 0.05}
    assert mlbench.static_verdict("python train.py --dataset cora --epochs 3 --lr 0.05", arguments, "Bash Script")[0]
    assert mlbench.static_verdict("python train.py --DATASET CORA --EPOCHS 3 --LR 0.05", arguments, "Bash Script")[0]  # values: any case
    assert not mlbench.static_verdict("PYTHON TRAIN.PY --DATASET CORA --EPOCHS 3 --LR 0.05", arguments, "Bash Script")[0]  # '.py ': exact
    passed, reason = mlbench.static_verdict("python train.py --dataset cora --lr 0.05", arguments, "Bash Script")
    assert not passed and "'3'" in reason
    # the type rule is '.sh ' or '.py ' with the space: a script named last, or followed by a newline, is no call
    assert not mlbench.static_verdict("cora 3 0.05 python train.py", arguments, "Bash Script")[0]
    assert not mlbench.static_verdict("cora 3 0.05 python train.py\n", arguments, "Bash Script")[0]
    assert mlbench.static_verdict("bash run.sh cora 3 0.05", arguments, "Bash Script")[0]
    assert not mlbench.static_verdict("import os; os.system('python train.py cora 3 0.05')", arguments, "Python Code")[0]
    assert mlbench.static_verdict("from graphkit import train\ntrain('Cora', 3, 0.05)", arguments, "Python Code")[0]
    assert mlbench.static_verdict("train(lr=0.050)", {"lr": 0.05}, "Python Code")[0]  # str(0.05) occurs in it: a substring rule
    assert mlbench.static_verdict("anything", {}, "Python Code")[0]


def test_code_block_extraction_prefers_python_then_bash_then_script_then_bare():
    assert mlbench.extract_answer("```bash\nls\n```\n```python\n\nprint(1)\n\n```") == "print(1)"
    assert mlbench.extract_answer("```\nbare\n```\n```script\nrun it\n```") == "run it"
    assert mlbench.extract_answer("```\n\npython a.py --x 1\n```") == "python a.py --x 1"
    assert mlbench.extract_answer("python a.py --x 1") == ""  # no block: an empty answer
    assert mlbench.extract_answer("```python\nunclosed") == ""


def test_the_split_becomes_tasks_and_a_failing_reference_is_marked():
    tasks = {task.id: task for task in mlbench.load_split(SPLIT)}
    assert sorted(tasks) == ["1-1", "1-2", "1-3", "5-1", "9-1"]
    assert tasks["1-1"].category == "graphkit" and tasks["1-1"].folder == "examples/gcn" and tasks["9-1"].folder == ""
    assert tasks["1-1"].arguments == {"dataset": "citeseer", "epochs": 3}
    assert tasks["1-3"].caveats and not any(tasks[i].caveats for i in ("1-1", "1-2", "5-1", "9-1"))


def test_prompts_in_each_setting_and_from_an_ml_bench_checkout(tmp_path):
    task = {task.id: task for task in mlbench.load_split(SPLIT)}["1-2"]
    oracle = mlbench.Setup("oracle").prompt(task)
    assert task.query in oracle and task.record["oracle"] in oracle
    assert task.record["oracle"] not in mlbench.Setup("instruction").prompt(task)
    bm25 = mlbench.Setup("bm25", repos=REPOS).prompt(task)
    assert "--lr to set the learning rate" in bm25 and "# graphkit" not in bm25  # a window of the README, not all of it
    assert "# graphkit" in mlbench.Setup("readme", repos=REPOS).prompt(task)
    scripts = tmp_path / "ML-Bench" / "scripts" / "api"
    scripts.mkdir(parents=True)
    (scripts / "litellm_api.py").write_text("import fire\nTASK1_PROMPT = 'T1: {} / {}'\nTASK2_PROMPT = 'T2: {} / {}'\n"
                                            "TASK3_PROMPT = 'T3: {} / {}'\nTASK4_PROMPT = 'T4: {}'\nfire.Fire(print)\n")
    templates = mlbench.checkout_templates(tmp_path / "ML-Bench")
    assert mlbench.Setup("oracle", templates).prompt(task) == f"T3: {task.query} / {task.record['oracle']}"
    assert mlbench.Setup("instruction", templates).prompt(task) == f"T4: {task.query}"


def test_output_format_replay_is_scored_as_ml_bench_scores_it(tmp_path):
    replay = write_jsonl(tmp_path / "answers.jsonl", [
        {"github_id": 1, "id": 1, "output": ["python train.py --dataset citeseer", "python train.py --dataset CITESEER --epochs 3",
                                             "```bash\npython train.py --dataset citeseer --epochs 3\n```", "", "x"]},
        {"github_id": 9, "id": 1, "output": ["from attnlib import TinyAttention\nTinyAttention(dim=8)"] * 5},
        {"github_id": 9, "id": 1, "output": ["ignored: the first line for a record wins"] * 5},
        {"github_id": 77, "id": 1, "output": ["a record the split does not have"] * 5}])
    out = tmp_path / "run"
    finished = run_pybench("--tasks", SPLIT, "--replay", replay, "--out", out)
    assert finished.returncode == 0, finished.stderr
    results = results_of(out)
    assert sorted({task for task, _ in results}) == ["1-1", "9-1"]  # only the records the file holds
    assert [results["1-1", s]["passed"] for s in range(5)] == [False, True, True, False, False]  # the fenced one as it stands
    assert results["1-1", 2]["mlbench"]["answer"].startswith("```bash")
    assert all(results["9-1", s]["passed"] for s in range(5))
    overall = next(line for line in finished.stdout.splitlines() if line.startswith("overall "))
    assert overall.split()[1:5] == ["2", "50.0", "100.0", "100.0"]  # pass@1 50: only 9-1's first sample passes
    assert "name no record of the split" in finished.stderr
    report = run_pybench("report", out)
    assert report.returncode == 0, report.stderr
    page = (out / "report" / "report.html").read_text()
    assert "ML-Bench: pass@k (%) per repository" in page and "graphkit" in page


def test_shards_resume_and_refusal_to_mix_settings(tmp_path):
    replay = write_jsonl(tmp_path / "answers.jsonl", [{"github_id": r["github_id"], "id": r["id"], "output": [r["output"]] * 5}
                                                      for r in map(json.loads, SPLIT.read_text().strip().split("\n"))])
    out = tmp_path / "run"
    for shard in ("1/2", "2/2"):
        finished = run_pybench("--tasks", SPLIT, "--replay", replay, "--shard", shard, "--out", out)
        assert finished.returncode == 0, finished.stderr
    assert len(results_of(out)) == 25
    again = run_pybench("--tasks", SPLIT, "--replay", replay, "--out", out)
    assert again.returncode == 0 and "0 to run (25 already done)" in again.stdout
    other = run_pybench("--tasks", SPLIT, "--replay", replay, "--mlbench-setting", "instruction", "--out", out)
    assert other.returncode == 2 and "mlbench_setting" in other.stderr
    overall = next(line for line in again.stdout.splitlines() if line.startswith("overall "))
    honest = next(line for line in again.stdout.splitlines() if line.startswith("overall, honest"))
    assert overall.split()[1:3] == ["5", "80.0"] and honest.split()[2:4] == ["4", "100.0"]  # 1-3's reference fails: set aside


def test_a_replay_with_fewer_than_five_samples_is_left_out_of_ml_benchs_count(tmp_path):
    replay = write_jsonl(tmp_path / "answers.jsonl", [{"github_id": 1, "id": 1, "output": ["python train.py --dataset citeseer --epochs 3"]},
                                                      {"github_id": 1, "id": 2, "output": ["python train.py --dataset cora --lr 0.05"] * 5}])
    finished = run_pybench("--tasks", SPLIT, "--replay", replay, "--out", tmp_path / "run")
    assert finished.returncode == 0, finished.stderr
    overall = next(line for line in finished.stdout.splitlines() if line.startswith("overall "))
    assert overall.split()[1] == "1" and "hold other than 5 samples" in finished.stdout


def test_execute_passes_fails_and_times_out_in_the_jail(tmp_path):
    replay = write_jsonl(tmp_path / "answers.jsonl", [
        {"github_id": 1, "id": 1, "output": ["python train.py --dataset citeseer --epochs 3",
                                             "python train.py --dataset CiteSeer --epochs 3 --bad-flag",
                                             "python train.py --epochs 3",
                                             "python train.py --dataset citeseer --epochs 3 && touch ../../README.md",
                                             "python train.py --dataset citeseer --epochs 3 && curl -s http://example.com || exit 7"]},
        {"github_id": 5, "id": 1, "output": ["python slow.py --frames 12"] * 5},
        {"github_id": 9, "id": 1, "output": ["from attnlib import TinyAttention\nprint(open('setup.log').read().strip(), TinyAttention(dim=8).shape_of(2))"] * 5}])
    out = tmp_path / "run"
    finished = run_pybench("--tasks", SPLIT, "--replay", replay, "--execute", "--repos", REPOS, "--only", "1-1,5-1,9-1",
                           "--samples", "5", "--out", out)
    assert finished.returncode == 0, finished.stderr
    results = results_of(out)
    outcomes = [results["1-1", s]["mlbench"].get("outcome") for s in range(5)]
    assert outcomes[0] == "exit 0" and outcomes[1] == "exit 2" and outcomes[2] is None  # not run: it failed the static check
    assert outcomes[3] not in (None, "exit 0", "timeout")  # the checkout is read-only outside the private copy of the task folder
    assert outcomes[4] not in (None, "exit 0", "timeout")  # no network
    assert "trained on citeseer for 3 epochs" in results["1-1", 0]["mlbench"]["run_output"]
    assert (out / results["1-1", 0]["output"] / "out.txt").read_text() == "citeseer 3 0.01\n"  # written in the private copy
    assert not (REPOS / "graphkit" / "examples" / "gcn" / "out.txt").exists()  # and not in the user's checkout
    slow = results["5-1", 0]
    assert slow["mlbench"]["outcome"] == "timeout" and slow["mlbench"]["mlbench_passed"] and not slow["passed"]
    assert 3.5 < slow["seconds"] < 30  # ML-Bench's 4 s limit for github_id 5
    attention = results["9-1", 0]
    assert attention["passed"] and "ready (2, 8)" in attention["mlbench"]["run_output"]  # prefix_code ran first, in the task folder
    ours = finished.stdout.split("ours (exit 0, and the task's own script traced exiting 0):")[1]
    assert next(line for line in ours.splitlines() if line.startswith("slowvid")).split()[2] == "0.0"
    theirs = finished.stdout.split("ours (exit 0, and the task's own script traced exiting 0):")[0]
    assert next(line for line in theirs.splitlines() if line.startswith("slowvid")).split()[2] == "100.0"


def test_large_files_are_linked_read_only_into_the_private_copy(tmp_path):
    repos = tmp_path / "repos"
    shutil.copytree(REPOS, repos)
    weights = repos / "graphkit" / "examples" / "gcn" / "weights.bin"
    weights.write_bytes(b"w" * (1 << 20))
    weights.chmod(0o644)
    replay = write_jsonl(tmp_path / "answers.jsonl", [{"github_id": 1, "id": 1, "output": [
        "python train.py --dataset citeseer --epochs 3 && test $(wc -c < weights.bin) = 1048576",
        "python train.py --dataset citeseer --epochs 3 && echo changed >> weights.bin",
        "python train.py --dataset citeseer --epochs 3 && rm weights.bin && echo new > weights.bin && cat weights.bin"]}])
    out = tmp_path / "run"
    finished = run_pybench("--tasks", SPLIT, "--replay", replay, "--execute", "--repos", repos, "--samples", "3", "--out", out)
    assert finished.returncode == 0, finished.stderr
    results = results_of(out)
    assert [results["1-1", s]["mlbench"]["outcome"] for s in range(3)] == ["exit 0", "exit 1", "exit 0"]
    assert weights.read_bytes() == b"w" * (1 << 20)  # the user's file, unchanged


def test_repo_python_and_model_cache_reach_the_jail(tmp_path):
    import subprocess
    import sys

    environment = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(environment)], check=True)
    site = next(environment.glob("lib/python*/site-packages"))
    (site / "graphdeps.py").write_text("VERSION = '1.0'\n")
    replay = write_jsonl(tmp_path / "answers.jsonl", [{"github_id": 1, "id": 1, "output": [
        "python -c 'import graphdeps' && python train.py --dataset citeseer --epochs 3 && grep -q weights ~/.cache/hub/marker"] * 5}])
    (tmp_path / "cache" / "hub").mkdir(parents=True)
    (tmp_path / "cache" / "hub" / "marker").write_text("weights\n")
    runs = {}
    for name, extra in (("without", ["--model-cache", tmp_path / "cache"]),
                        ("with", ["--repo-python", f"graphkit={environment / 'bin' / 'python'}", "--model-cache", tmp_path / "cache"])):
        finished = run_pybench("--tasks", SPLIT, "--replay", replay, "--execute", "--repos", REPOS, "--samples", "1",
                               "--out", tmp_path / name, *extra)
        assert finished.returncode == 0, finished.stderr
        runs[name] = results_of(tmp_path / name)["1-1", 0]
    assert runs["with"]["passed"] and not runs["without"]["passed"]


def test_an_agent_run_from_a_replay_leaves_run_sh_and_is_judged_in_a_fresh_jail(tmp_path):
    replay = write_jsonl(tmp_path / "agent.jsonl", [
        {"id": "1-1", "replies": [bash("ls; python train.py --help | head -1; pwd"),
                                  python("open('run.sh', 'w').write('python train.py --dataset citeseer --epochs 3\\n')"), "run.sh is written."]},
        {"id": "1-2", "replies": [bash("echo 'python train.py --dataset cora --lr 0.05 --oops' > run.sh"), "Done."]},
        {"id": "9-1", "replies": ["I cannot do this."]}])
    out = tmp_path / "run"
    finished = run_pybench("--tasks", SPLIT, "--replay", replay, "--mlbench-agent", "--repos", REPOS, "--only", "1-1,1-2,9-1", "--out", out)
    assert finished.returncode == 0, finished.stderr
    results = results_of(out)
    first = results["1-1", 0]
    assert first["passed"] and first["mlbench"]["outcome"] == "exit 0" and first["turns"] == 3 and first["ended_by"] == "final answer"
    assert "usage: train.py" in first["messages"][3]["content"] and "/repo/graphkit/examples/gcn" in first["messages"][3]["content"]
    assert first["code"][0].startswith("%%bash") and first["code"][2] is None
    assert "trained on citeseer" in first["mlbench"]["run_output"]
    assert (out / first["output"] / "run.sh").is_file() and not (REPOS / "graphkit" / "examples" / "gcn" / "run.sh").exists()
    assert results["1-2", 0]["mlbench"]["outcome"] == "exit 2" and not results["1-2", 0]["passed"]
    assert results["9-1", 0]["mlbench"]["outcome"] == "no run.sh" and not results["9-1", 0]["passed"]
    assert len(results) == 3  # one attempt per task by default, as ML-Agent-Bench makes
    verdicts = write_jsonl(tmp_path / "verdicts.jsonl", [{"id": task, "replies": ["Verdict: PASS\nReason: run.sh is there."]}
                                                          for task in ("1-1", "1-2", "9-1")])
    judged = run_pybench("judge", out, "--judge-replay", verdicts)  # the judge's column reads an agent's trajectory too
    assert judged.returncode == 0, judged.stderr
    assert "agreement over 3 attempts: both pass 1, judge only 2, check only 0, both fail 0" in judged.stdout
    prompt = judge.material_of(next(result for result in read_run(out)[0] if result.id == "1-1")).prompt(None)
    assert "usage: train.py" in prompt and "run.sh is written." in prompt and "run.sh (text" in prompt


def test_a_live_model_is_asked_in_ml_benchs_setting(tmp_path):
    model = write_tiny_gguf(tmp_path / "tiny.gguf")
    out = tmp_path / "run"
    finished = run_pybench("--tasks", SPLIT, "--model", model, "--only", "1-1", "--samples", "2", "--max-tokens", "8",
                           "--ctx", "2048", "--out", out)
    assert finished.returncode == 0, finished.stderr
    results = results_of(out)
    assert len(results) == 2 and results["1-1", 0]["messages"][0]["content"].count("citeseer") >= 1
    assert results["1-1", 0]["mlbench"]["answer"] == mlbench.extract_answer(results["1-1", 0]["messages"][1]["content"])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["flags"]["temperature"] == 1.0 and manifest["flags"]["samples"] == 2


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    partial = tmp_path / "repos"
    shutil.copytree(REPOS / "graphkit", partial / "graphkit")
    replay = write_jsonl(tmp_path / "answers.jsonl", [{"github_id": 5, "id": 1, "output": ["python slow.py"] * 5}])
    finished = run_pybench("--tasks", SPLIT, "--replay", replay, "--execute", "--repos", partial, "--out", tmp_path / "a")
    errors = [line for line in finished.stderr.splitlines() if line.startswith("error:")]
    assert finished.returncode == 2 and len(errors) == 1 and "slowvid" in errors[0] and "Traceback" not in finished.stderr
    finished = run_pybench("--tasks", SPLIT, "--execute", "--out", tmp_path / "b")
    assert finished.returncode == 2 and "--repos" in finished.stderr
    finished = run_pybench("--replay", ROOT / "checks" / "reference.jsonl", "--execute", "--repos", REPOS, "--out", tmp_path / "b2")
    assert finished.returncode == 2 and "apply to an ML-Bench split only" in finished.stderr
    elsewhere = write_jsonl(tmp_path / "elsewhere.jsonl", [{"github_id": 77, "id": 1, "output": ["x"] * 5}])
    finished = run_pybench("--tasks", SPLIT, "--replay", elsewhere, "--out", tmp_path / "b3")
    assert finished.returncode == 2 and "no line for any selected record" in finished.stderr

    import pyarrow
    import pyarrow.parquet

    records = [json.loads(line) for line in SPLIT.read_text().strip().split("\n")]
    table = pyarrow.Table.from_pylist([{key: value for key, value in record.items() if key != "arguments"} for record in records])
    pyarrow.parquet.write_table(table, tmp_path / "split.parquet")
    finished = run_pybench("--tasks", tmp_path / "split.parquet", "--out", tmp_path / "c")
    assert finished.returncode == 2 and "no column arguments" in finished.stderr and finished.stderr.count("\n") == 1

    records[2]["arguments"] = "{'dataset': __import__('os').getcwd()}"
    bad = write_jsonl(tmp_path / "bad.jsonl", records)
    finished = run_pybench("--tasks", bad, "--out", tmp_path / "d")
    assert finished.returncode == 2 and "bad.jsonl, line 3: field 'arguments'" in finished.stderr
    records[2]["arguments"], records[3]["type"] = "{}", "Shell"
    finished = run_pybench("--tasks", write_jsonl(tmp_path / "bad.jsonl", records), "--out", tmp_path / "e")
    assert finished.returncode == 2 and "line 4: field 'type'" in finished.stderr


EXEC_FIXTURE = ROOT / "tests" / "fixtures" / "mlexec"  # shared leftovers, prefix_code's export, >64 KiB output, exit 124,
MLBENCH_CHECKOUT = Path(os.environ.get("MLBENCH_CHECKOUT", "/tmp/mlbench/ML-Bench"))  # threads, awk, /tmp


def ml_benchs_exec_verdicts(tmp_path, monkeypatch) -> tuple[dict, dict]:
    """ML-Bench's own utils/exec.py (from the user's checkout, functions defined as they stand, not copied) run on the
    fixture's answers, in the answers file's order, in one writable copy of the repositories as ML-Bench's repos/:
    the verdict of each sample, and assess_output's (pass@1, pass@2, pass@5) of each record."""
    pytest.importorskip("psutil")  # exec.py's terminate_process_tree needs it
    if not (MLBENCH_CHECKOUT / "utils" / "exec.py").is_file():
        pytest.skip(f"no ML-Bench checkout at {MLBENCH_CHECKOUT} (set MLBENCH_CHECKOUT)")
    import logging
    import subprocess
    import sys
    import typing

    import ast

    import psutil

    namespace = {"subprocess": subprocess, "psutil": psutil, "logging": logging,
                 **{name: getattr(typing, name) for name in ("List", "Dict", "Tuple", "Any", "Optional")}}
    source = MLBENCH_CHECKOUT / "utils" / "exec.py"
    wanted = {"terminate_process_tree", "run_python_code", "run_bash_script", "validate_arguments", "validate_output_type",
              "execute_output", "assess_output"}
    body = [node for node in ast.parse(source.read_text(), str(source)).body  # those functions and the constants they read
            if isinstance(node, ast.FunctionDef) and node.name in wanted or isinstance(node, (ast.Assign, ast.AnnAssign))]
    exec(compile(ast.Module(body=body, type_ignores=[]), str(source), "exec"), namespace)
    assert wanted <= namespace.keys() and namespace["EXEC_TIME"] == mlbench.EXEC_SECONDS
    ran = []
    their_execute = namespace["execute_output"]

    def execute_output(output, *args):
        ran.append(their_execute(output, *args))
        return ran[-1]
    namespace["execute_output"] = execute_output
    shutil.copytree(EXEC_FIXTURE / "repos", tmp_path / "ML-Bench" / "repos")
    monkeypatch.chdir(tmp_path / "ML-Bench")
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    records = {(r["github_id"], r["id"]): r for r in map(json.loads, (EXEC_FIXTURE / "split.jsonl").read_text().splitlines())}
    samples, records_passed = {}, {}
    for line in map(json.loads, (EXEC_FIXTURE / "answers.jsonl").read_text().splitlines()):
        record = records[line["github_id"], line["id"]]
        task_id, repo = f"{line['github_id']}-{line['id']}", record["github"].rsplit("/", 1)[-1]
        for sample, output in enumerate(line["output"]):  # the samples assess_output will execute: the static ones
            del ran[:]
            namespace["assess_output"]([output], "./repos/" + repo + record["path"][1:], "fixture_DS", record["arguments"],
                                       record["type"], record["github_id"], record["id"])
            samples[task_id, sample] = bool(ran and ran[0])
        records_passed[task_id] = tuple(int(any(samples[task_id, s] for s in range(k))) for k in (1, 2, 5))
    return samples, records_passed


def test_ml_benchs_count_for_execute_is_what_its_own_exec_py_gives(tmp_path, monkeypatch):
    theirs, their_records = ml_benchs_exec_verdicts(tmp_path / "theirs", monkeypatch)
    out = tmp_path / "run"
    finished = run_pybench("--tasks", EXEC_FIXTURE / "split.jsonl", "--replay", EXEC_FIXTURE / "answers.jsonl", "--execute",
                           "--repos", EXEC_FIXTURE / "repos", "--out", out)
    assert finished.returncode == 0, finished.stderr
    results = results_of(out)
    assert {key: result["mlbench"]["mlbench_passed"] for key, result in results.items()} == theirs
    assert {task: tuple(int(any(results[task, s]["mlbench"]["mlbench_passed"] for s in range(k))) for k in (1, 2, 5))
            for task in their_records} == their_records
    ours = {key: result["passed"] for key, result in results.items()}
    assert [ours["5-1", s] for s in range(5)] == [False, False, False, True, False]  # >64 KiB then exit 1, a timeout, a sibling's
    assert [theirs["5-1", s] for s in range(5)] == [True, True, True, True, False]   # folder, exit 124: ML-Bench passes 3 more
    assert [ours["1-1", s] for s in range(5)] == [True, False, False, True, True]    # leftovers of earlier samples; awk; 2 threads
    assert [theirs["1-1", s] for s in range(5)] == [True] * 5
    assert [ours["1-2", s] for s in range(5)] == [True, False, True, False, False]   # temp.py's leftover; 300 MiB in /tmp
    assert [theirs["1-2", s] for s in range(5)] == [True, True, True, False, False]
    assert all(ours["1-3", s] and not theirs["1-3", s] for s in range(5))  # prefix_code's export: ours runs it, ML-Bench does not
    assert not (EXEC_FIXTURE / "repos" / "toolkit" / "examples" / "run" / "left.txt").exists()  # the shared tree is a copy
    assert (out / "mlbench-tree" / "repos" / "toolkit" / "examples" / "run" / "sibling.txt").is_file()


def test_the_agent_as_openhands_runs_it_and_counts_exit_124(tmp_path):
    replay = write_jsonl(tmp_path / "agent.jsonl", [
        {"id": "1-1", "replies": ["I will look first.", bash("echo 'python train.py --dataset citeseer --epochs 3; exit 124' > run.sh"),
                                  "<finish></finish>"]},
        {"id": "9-1", "replies": ["Thinking.", "Still thinking.", "And more."]}])
    out = tmp_path / "run"
    finished = run_pybench("--tasks", SPLIT, "--replay", replay, "--mlbench-agent", "--as-openhands", "--repos", REPOS,
                           "--only", "1-1,9-1", "--max-turns", "3", "--out", out)
    assert finished.returncode == 0, finished.stderr
    results = results_of(out)
    first = results["1-1", 0]
    assert first["messages"][2]["content"] == "I will look first." and first["messages"][3]["content"] == mlbench.OPENHANDS_GO_ON
    assert first["mlbench"]["outcome"] == "exit 124" and first["mlbench"]["mlbench_passed"] and not first["passed"]
    assert first["ended_by"] == "final answer" and first["turns"] == 3
    second = results["9-1", 0]
    assert "```bash\necho ready > setup.log\n```" in second["messages"][1]["content"]  # OpenHands shows the prefix_code
    assert second["ended_by"] == "turn limit" and second["turns"] == 3 and second["mlbench"]["outcome"] == "no run.sh"


def test_ml_bench_jails_give_repository_code_debians_etc_the_cpu_time_of_its_wall_limit_and_a_big_tmp(tmp_path):
    from kit.sandbox import Jail, JailLimits, repository_limits, usable_cpus

    probe = ("awk 'BEGIN { print 6 * 7 }' && which python > /dev/null && head -c 300M /dev/zero > /tmp/big && rm /tmp/big && "
             "python -c 'import resource; print(\"cpu\", resource.getrlimit(resource.RLIMIT_CPU)[0])'")
    outcomes = {}
    for name, limits in (("cell", JailLimits()), ("repository", repository_limits(JailLimits(), 120))):
        jail = Jail(name, [], limits, tmp_path)
        try:
            cell = jail.call("run_bash", script=probe, cwd=None, seconds=60)
        finally:
            jail.kill()
        outcomes[name] = (mlbench.outcome_of(cell), cell.output)
    assert outcomes["cell"][0] == "exit 127"  # a data-science cell's jail: no /etc/alternatives, so no awk
    outcome, output = outcomes["repository"]
    assert outcome == "exit 0" and "42" in output, output
    assert int(output.split("cpu ")[1].split()[0]) >= 120 * usable_cpus()[0]  # all the CPUs busy for the whole wall limit
    assert repository_limits(JailLimits(), 10, tmp_mib=512).tmp_mib == 512 and JailLimits().tmp_mib < 300


def test_mlbench_tmp_sizes_the_jails_tmp_and_ml_benchs_count_drops_a_record_short_of_five_samples(tmp_path):
    fill = "python train.py --dataset citeseer --epochs 3 && head -c 100M /dev/zero > /tmp/fill"
    replay = write_jsonl(tmp_path / "answers.jsonl", [{"github_id": 1, "id": 1, "output": [fill] * 5},
                                                      {"github_id": 1, "id": 2, "output": ["python train.py --dataset cora --lr 0.05"]}])
    outcomes = {}
    for name, extra in (("small", ["--mlbench-tmp", "64"]), ("default", [])):
        finished = run_pybench("--tasks", SPLIT, "--replay", replay, "--execute", "--repos", REPOS, "--samples", "1",
                               "--out", tmp_path / name, *extra)
        assert finished.returncode == 0, finished.stderr
        results = results_of(tmp_path / name)
        outcomes[name] = [(results[task, 0]["mlbench"].get("outcome"), results[task, 0]["mlbench"].get("mlbench_outcome"))
                          for task in ("1-1", "1-2")]
    assert outcomes["small"][0] == ("exit 1", "exit 1") and outcomes["default"][0] == ("exit 0", "exit 0")
    assert outcomes["default"][1] == ("exit 0", None)  # ours runs it; ML-Bench's evaluator drops the record unrun


def test_ours_passes_only_when_the_tasks_own_script_ran_with_the_records_arguments_and_exited_0(tmp_path):
    citeseer = "python train.py --dataset citeseer --epochs 3"
    replay = write_jsonl(tmp_path / "answers.jsonl", [
        {"github_id": 1, "id": 1, "output": [citeseer, f"{citeseer} --bad-flag || echo done", f"{citeseer} --bad-flag; exit 0",
                                             f"echo {citeseer}", "python train.py --dataset cora --epochs 3  # citeseer"]},
        {"github_id": 9, "id": 1, "output": ["from attnlib import TinyAttention\nprint(TinyAttention(dim=8).shape_of(2))"] * 5}])
    out = tmp_path / "run"
    finished = run_pybench("--tasks", SPLIT, "--replay", replay, "--execute", "--repos", REPOS, "--only", "1-1,9-1", "--out", out)
    assert finished.returncode == 0, finished.stderr
    results = results_of(out)
    assert [results["1-1", s]["mlbench"]["outcome"] for s in range(5)] == ["exit 0"] * 5  # each exits 0 ...
    assert [results["1-1", s]["mlbench"]["mlbench_passed"] for s in range(5)] == [True] * 5  # ... and ML-Bench passes each
    assert [results["1-1", s]["passed"] for s in range(5)] == [True, False, False, False, False]  # ours: only the honest one
    assert "runs of the task's script failed: python train.py --dataset citeseer" in results["1-1", 1]["reason"]
    assert "(exit 2)" in results["1-1", 2]["reason"] and "no run of the task's script" in results["1-1", 3]["reason"]
    assert results["1-1", 0]["mlbench"]["task_runs"]["shown"] == [{"command": citeseer, "status": 0, "started": True}]
    assert all(results["9-1", s]["passed"] for s in range(5))  # a Python Code answer: the kit's own `python temp.py`


def test_ours_fails_every_way_of_naming_the_script_without_running_it(tmp_path):
    """Issue 30, point 5: each answer exits 0 and names train.py with the record's arguments, but train.py never runs
    as the script (each adds --bad-flag, which train.py refuses, where it would run): the honest column fails them all,
    the honest answers beside them pass. tests/test_tracer.py has the same routes on the host, usercustomize included
    (a jail's venv has no user site)."""
    citeseer, cora = "train.py --dataset citeseer --epochs 3 --bad-flag", "train.py --dataset cora --lr 0.05"
    exits = "import os; os._exit(0)"
    replay = write_jsonl(tmp_path / "answers.jsonl", [
        {"github_id": 1, "id": 1, "output": [
            f"python -c 'print(1)' {citeseer}",
            f"python -m this {citeseer}",
            f"mkdir -p /tmp/sc && echo '{exits}' > /tmp/sc/sitecustomize.py && PYTHONPATH=/tmp/sc python {citeseer}",
            f"mkdir -p /tmp/fake && printf '#!/bin/sh\\nexit 0\\n' > /tmp/fake/python && chmod +x /tmp/fake/python && "
            f"PATH=${{PATH%%:*}}:/tmp/fake:${{PATH#*:}} python {citeseer}",  # found after the tracing wrapper
            f"echo '{exits}' > /tmp/startup.py && PYTHONSTARTUP=/tmp/startup.py python -i - {citeseer} < /dev/null"]},
        {"github_id": 1, "id": 2, "output": [
            f"python {cora}",
            f"python -c 'import sys; del sys.argv[1]; exec(open(\"train.py\").read())' {cora}",  # trains, but not as the script
            f"printf 'import os\\nos._exit(0)\\n' > sitecustomize.py && PYTHONPATH=. python {cora} --bad-flag",
            f"printf 'python {cora}\\n' > run.sh && bash run.sh",
            f"printf 'exit 0\\n' > env.sh && BASH_ENV=env.sh bash -c 'python {cora} --bad-flag' && BASH_ENV=env.sh bash run.sh"]}])
    out = tmp_path / "run"
    finished = run_pybench("--tasks", SPLIT, "--replay", replay, "--execute", "--repos", REPOS, "--only", "1-1,1-2", "--out", out)
    assert finished.returncode == 0, finished.stderr
    results = results_of(out)
    assert [results["1-1", s]["mlbench"]["outcome"] for s in range(5)] == ["exit 0"] * 5, [results["1-1", s]["mlbench"] for s in range(5)]
    assert [results["1-1", s]["passed"] for s in range(5)] == [False] * 5, [results["1-1", s]["reason"] for s in range(5)]
    assert [results["1-2", s]["mlbench"]["outcome"] for s in range(5)] == ["exit 0"] * 5, [results["1-2", s]["mlbench"] for s in range(5)]
    assert [results["1-2", s]["passed"] for s in range(5)] == [True, False, False, True, False], [results["1-2", s]["reason"] for s in range(5)]
    assert "its script never seen starting inside the interpreter" in results["1-1", 2]["reason"], results["1-1", 2]["reason"]
    assert "no run of the task's script" in results["1-1", 0]["reason"] and "no run of the task's script" in results["1-1", 1]["reason"]


def test_ours_fails_an_agents_run_sh_that_runs_nothing_of_the_task(tmp_path):
    replay = write_jsonl(tmp_path / "agent.jsonl", [
        {"id": "1-1", "replies": [bash("echo 'echo python train.py --dataset citeseer --epochs 3' > run.sh"), "Done."]},
        {"id": "1-2", "replies": [bash("printf 'cd .\\nbash -c \"python train.py --dataset cora --lr 0.05\"\\n' > run.sh"), "Done."]}])
    out = tmp_path / "run"
    finished = run_pybench("--tasks", SPLIT, "--replay", replay, "--mlbench-agent", "--repos", REPOS, "--only", "1-1,1-2", "--out", out)
    assert finished.returncode == 0, finished.stderr
    results = results_of(out)
    nothing, honest = results["1-1", 0], results["1-2", 0]
    assert nothing["mlbench"]["outcome"] == "exit 0" and nothing["mlbench"]["mlbench_passed"] and not nothing["passed"]
    assert honest["passed"] and (honest["mlbench"]["task_runs"]["runs"], honest["mlbench"]["task_runs"]["seen"]) == (1, 2)  # its python; the bash -c around it names no script


def test_with_repo_python_the_agents_python_turns_run_in_the_repositorys_interpreter(tmp_path):
    import subprocess
    import sys

    environment = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(environment)], check=True)
    (next(environment.glob("lib/python*/site-packages")) / "graphdeps.py").write_text("VERSION = '1.0'\n")
    replay = write_jsonl(tmp_path / "agent.jsonl", [{"id": "1-1", "replies": [
        python("import graphdeps, sys\nprint('in', sys.prefix, graphdeps.VERSION)"),
        python("open('run.sh', 'w').write('python train.py --dataset citeseer --epochs 3\\n')"), "Done."]}])
    out = tmp_path / "run"
    finished = run_pybench("--tasks", SPLIT, "--replay", replay, "--mlbench-agent", "--repos", REPOS, "--only", "1-1",
                           "--repo-python", f"graphkit={environment / 'bin' / 'python'}", "--out", out)
    assert finished.returncode == 0, finished.stderr
    first = results_of(out)["1-1", 0]
    assert f"in {environment} 1.0" in first["messages"][3]["content"] and first["passed"]
