"""Bad input: each mistake is one line naming what is wrong, exit status 2, and no run directory is written."""
import json

import pytest

from conftest import run_pybench, write_jsonl

CHECKS = 'def ok(answer, output, data):\n    """Verifies: nothing (a placeholder for input validation tests)."""\n'
GOOD = {"id": "t1", "category": "math", "query": "q", "files": ["in.csv"], "check": "suite:ok"}


def expect_usage_error(result, out, *words):
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    assert not out.exists(), "a run directory was written for bad input"


@pytest.mark.parametrize("tasks_line, words", [
    ("{not json", ["line 2", "not valid JSON"]),
    (json.dumps({**GOOD, "id": "t2", "category": "two\nlines"}), ["line 2", "category"]),
    (json.dumps({**GOOD, "id": "t2", "files": ["missing.csv"]}), ["line 2", "missing.csv", "does not exist"]),
    (json.dumps({**GOOD, "id": "t2", "check": "suite:absent"}), ["line 2", "absent", "suite.py"]),
    (json.dumps({**GOOD, "id": "t2", "check": "nomodule:ok"}), ["line 2", "nomodule.py"]),
    (json.dumps({k: v for k, v in GOOD.items() if k != "query"} | {"id": "t2"}), ["line 2", "'query'"]),
    (json.dumps(GOOD), ["line 2", "used twice"]),
])
def test_bad_tasks_line(make_suite, tmp_path, tasks_line, words):
    tasks = make_suite([GOOD], CHECKS, {"in.csv": b"a\n1\n"})
    tasks.write_text(tasks.read_text() + tasks_line + "\n")
    out = tmp_path / "run"
    expect_usage_error(run_pybench("--tasks", tasks, "--replay", tmp_path / "none.jsonl", "--out", out), out, str(tasks), *words)


def test_unknown_only_id(make_suite, tmp_path):
    tasks = make_suite([GOOD], CHECKS, {"in.csv": b"a\n1\n"})
    out = tmp_path / "run"
    expect_usage_error(run_pybench("--tasks", tasks, "--only", "t1,nope", "--out", out), out, "--only", "nope")


def test_missing_model_file(tmp_path):
    out = tmp_path / "run"
    expect_usage_error(run_pybench("--model", tmp_path / "absent.gguf", "--out", out), out, "--model", "absent.gguf", "does not exist")


def test_model_that_is_not_gguf(tmp_path):
    fake = tmp_path / "weights.gguf"
    fake.write_bytes(b"PK\x03\x04 this is a zip, not a model")
    out = tmp_path / "run"
    expect_usage_error(run_pybench("--model", fake, "--out", out), out, "--model", "weights.gguf", "not a GGUF")


def test_truncated_gguf(make_suite, tmp_path):
    tasks = make_suite([GOOD], CHECKS, {"in.csv": b"a\n1\n"})
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\x00" * 16)
    out = tmp_path / "run"
    expect_usage_error(run_pybench("--tasks", tasks, "--model", broken, "--out", out), out, "--model", "broken.gguf", "could not load")


def test_missing_tasks_file_and_bad_replay(make_suite, tmp_path):
    out = tmp_path / "run"
    expect_usage_error(run_pybench("--tasks", tmp_path / "nope.jsonl", "--out", out), out, "nope.jsonl", "does not exist")
    tasks = make_suite([GOOD], CHECKS, {"in.csv": b"a\n1\n"})
    replay = write_jsonl(tmp_path / "replay.jsonl", [{"id": "t1", "replies": ["x"]}, {"id": "ghost", "replies": []}])
    expect_usage_error(run_pybench("--tasks", tasks, "--replay", replay, "--out", out), out, "replay.jsonl", "line 2", "ghost")


def test_help_lists_every_flag_of_the_parser():
    import pybench

    flags = [option for action in pybench.run_parser()._actions for option in action.option_strings if option.startswith("--")]
    assert {"--parallel", "--samples", "--shard", "--mlbench-agent", "--repos"} <= set(flags)
    result = run_pybench("--help")
    assert result.returncode == 0
    missing = [flag for flag in flags if flag not in result.stdout]
    assert not missing, missing


def test_an_unknown_subcommand_lists_the_subcommands(tmp_path):
    """Before: `unrecognized arguments: reprot`, without a word of the subcommands."""
    import pybench

    out = tmp_path / "run"
    result = run_pybench("reprot", "runs/x", "--out", out)
    expect_usage_error(result, out, "'reprot'", "did you mean report?", *pybench.SUBCOMMANDS)


def test_validate_names_its_own_argument_for_a_missing_tasks_file(tmp_path):
    """Before: `give --tasks a tasks.jsonl`, a flag validate refuses."""
    out = tmp_path / "run"
    result = run_pybench("validate", tmp_path / "nope" / "tasks.jsonl")
    expect_usage_error(result, out, "nope/tasks.jsonl", "does not exist", "validate PATH/tasks.jsonl")
    assert "--tasks" not in result.stderr


def test_validate_only_an_unknown_id_is_one_line(make_suite, tmp_path):
    tasks = make_suite([GOOD], CHECKS, {"in.csv": b"a\n1\n"})
    expect_usage_error(run_pybench("validate", tasks, "--only", "t1,ghost"), tmp_path / "run", "--only", "'ghost'", str(tasks))


def test_help_names_the_categories_and_what_chart_holds():
    result = run_pybench("--help")
    text = " ".join(result.stdout.split())
    assert all(name in text for name in ("chart (Chart Analysis", "tables-*", "text (Text Analysis)", "image_audio", "software"))


def test_an_older_results_line_reads_with_the_defaults(tmp_path):
    """Before: `report` refused a line without `category` (Result.__init__() missing ... 'category'); docs/runs.md
    says missing fields take their defaults."""
    from kit import harness

    path = write_jsonl(tmp_path / "results.jsonl", [{"id": "charts-01", "passed": True, "turns": 3}, {"id": "text-01"}])
    first, second = harness.read_results(path)
    assert (first.category, first.passed, first.turns, first.output) == ("", True, 3, "outputs/charts-01")
    assert (second.category, second.passed, second.seconds, second.messages) == ("", False, 0.0, [])
    with pytest.raises(harness.UsageError, match="not a result line of pybench"):
        harness.read_results(write_jsonl(tmp_path / "bad.jsonl", [{"passed": True}]))
