"""The benchmark seam: a new benchmark is one module ending in its BENCHMARK record, plus one line in
pybench.BENCHMARKS. Shown with a toy benchmark ("the answer is the sum") written to a temporary module: it runs
through the kit's own flow (selection, replay, jail, results, resume keys, its own tables) and its report."""
import json
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, read_results, write_jsonl

TOY = textwrap.dedent('''
    """toybench: each line of a .toy file is "a b"; the task asks for a + b, and the final answer must be that number."""
    from pathlib import Path

    from kit.harness import Benchmark, Conversation, Prepared, ReplayModel, Tables, Task, Verdict, run_one


    def load(path: Path) -> list[Task]:
        pairs = [line.split() for line in path.read_text().splitlines() if line.strip()]
        return [Task(f"sum-{number}", "math", f"What is {a} + {b}? Reply with the number only.", {}, [], "toy", "sum", path)
                for number, (a, b) in enumerate(pairs, 1)]


    def prepare(args, path: Path) -> Prepared:
        tasks = load(path)
        expected = {task.id: str(sum(map(int, task.query.split("?")[0].split()[2::2]))) for task in tasks}

        def attempts(args, model, run_dir, limits, todo):
            def score(task, run, log_dir):
                answer = run.answer.strip()
                return Verdict(answer == expected[task.id], "" if answer == expected[task.id] else f"{answer!r} is not the sum")
            return lambda task, sample: run_one(task, sample, args.samples, args.seed + sample, model, Conversation(), run_dir,
                                                limits, args.max_turns, score=score)
        return Prepared(tasks, {"temperature": 0.0, "top_p": 1.0, "max_tokens": 50, "samples": 1, "max_turns": 2}, path.parent,
                        [path], ReplayModel, attempts)


    def tables(results, manifests) -> Tables:
        right = sum(result.passed for result in results)
        return Tables(f"toy: {right} of {len(results)} sums right", [{"heading": "Toy sums", "corner": "task", "columns": ["verdict"],
                      "rows": [(result.id, ["right" if result.passed else "wrong"], result.passed) for result in results],
                      "notes": []}], replaces_table3=True, title="Toy")


    BENCHMARK = Benchmark("toy", claims=lambda path: path.suffix == ".toy", prepare=prepare, tables=tables,
                          made=lambda results, manifests: False)
''')

# The one registry line, as a driver that runs pybench's own main.
DRIVER = "import sys, pybench, toybench; pybench.BENCHMARKS = (toybench.BENCHMARK,) + pybench.BENCHMARKS; sys.exit(pybench.cli(sys.argv[1:]))"


@pytest.mark.slow
def test_a_toy_benchmark_is_one_module_and_one_registry_line(tmp_path):
    (tmp_path / "toybench.py").write_text(TOY)
    suite = tmp_path / "sums.toy"
    suite.write_text("2 3\n10 -4\n")
    replay = write_jsonl(tmp_path / "answers.jsonl", [{"id": "sum-1", "replies": ["5"]}, {"id": "sum-2", "replies": ["14"]}])
    out = tmp_path / "run"
    environment = {"PYTHONPATH": f"{ROOT}:{tmp_path}", "PATH": "/usr/bin:/bin"}

    def pybench(*args):
        return subprocess.run([sys.executable, "-c", DRIVER, *map(str, args)], capture_output=True, text=True, env=environment,
                              cwd=tmp_path, timeout=600)

    finished = pybench("--tasks", suite, "--replay", replay, "--out", out)
    assert finished.returncode == 0, finished.stderr
    assert "toy: 1 of 2 sums right" in finished.stdout and "paper: GPT-4o" not in finished.stdout  # its table, not Table 3
    results = read_results(out)
    assert results["sum-1"]["passed"] and not results["sum-2"]["passed"]
    assert results["sum-2"]["reason"] == "'14' is not the sum"
    assert json.loads((out / "manifest.json").read_text())["benchmark"] == "toy"
    report = pybench("report", out)
    assert report.returncode == 0, report.stderr
    page = (out / "report" / "report.html").read_text()
    assert "Toy run:" in page and "Toy sums" in page and "Table 3" not in page
    refused = pybench("--tasks", suite, "--replay", replay, "--out", tmp_path / "other", "--repos", tmp_path)
    assert refused.returncode == 2 and "apply to an ML-Bench split only" in refused.stderr  # other benchmarks' flags are refused
