"""The fast tier's pure functions, in process: the worker channel's frames, the result record, task lines, output
links, the Wilson interval, the registry's choice of benchmark, the jailed module's kit calls."""
import json
from pathlib import Path

import pytest

import harness
import jailed
import sandbox
import suite
from conftest import ROOT


def test_a_frame_round_trips_and_a_broken_one_is_refused():
    message = jailed.frame("token", "print('é')", "")
    fields, rest = sandbox.parse_frame(message + b"tail")
    assert fields == ["token", "print('é')", ""] and rest == b"tail"
    assert sandbox.parse_frame(message[:-1]) is None  # not all there yet
    assert sandbox.parse_frame((33).to_bytes(4, "big")) == "bad"  # more fields than any message has
    assert sandbox.parse_frame((1).to_bytes(4, "big") + (1 << 25).to_bytes(4, "big")) == "bad"  # a field past 16 MiB


def test_the_result_record_names_its_fields_once_and_round_trips():
    result = harness.Result("t1", "math", 0, 0, True, "", [], 2, "final answer", 1, 0, 1.5, 10, 5, "outputs/t1", [],
                            [{"role": "user", "content": "q"}], ["print(1)", None], ["1", None])
    line = result.to_json()
    assert list(line) == [key for key in harness.Result.KEY_ORDER if key in line]
    assert "corrected" not in line and "mlbench" not in line and "run_dir" not in line  # unset optional fields are not written
    assert harness.Result.from_json(json.loads(json.dumps(line))) == result
    with pytest.raises(harness.UsageError, match="not a result line"):
        harness.Result.from_json({"id": "t1"}, "x.jsonl, line 1")


def test_results_are_read_whole_lines_only_and_a_u2028_stays_inside_its_string(tmp_path):
    path = tmp_path / "results.jsonl"
    first = harness.Result("t1", "math", 0, 0, False, "a\u2028b", [], 1, "x", 0, 0, 0.0, 0, 0, "o", [], [], [])
    harness.append_result(path, first)
    path.write_text(path.read_text() + '{"id": "torn')  # a crash mid-line
    results = harness.read_results(path)
    assert [result.reason for result in results] == ["a\u2028b"]


@pytest.mark.parametrize("field, value, words", [
    ("category", "poetry", "category"), ("files", ["../x"], "inside"), ("check", "nomodule", "module:function"),
    ("id", "a b", "letters"),
])
def test_a_bad_task_line_names_its_field(field, value, words):
    record = {"id": "t1", "category": "math", "query": "q", "files": [], "check": "maths:qa_total"} | {field: value}
    with pytest.raises(harness.UsageError, match=words):
        suite.task_from_record(record, "tasks.jsonl, line 1", ROOT / "tasks.jsonl", {})


@pytest.mark.parametrize("target, depth, inside", [
    ("a.csv", 0, True), ("sub/a.csv", 0, True), ("../a.csv", 1, True), ("../a.csv", 0, False), ("/etc/passwd", 3, False),
    ("a/../../b", 2, False), ("", 0, False),
])
def test_output_links_stay_inside(target, depth, inside):
    assert sandbox.link_stays_inside(target, depth) is inside


@pytest.mark.parametrize("passed, total", [(0, 3), (0, 24), (3, 3), (13, 13), (25, 25), (7, 10)])
def test_the_wilson_interval_holds_its_estimate(passed, total):
    low, high = harness.wilson(passed, total)
    assert 0 <= low <= passed / total <= high <= 1


def test_the_registry_picks_the_benchmark_from_tasks(tmp_path):
    import pybench

    (tmp_path / "split.jsonl").write_text(json.dumps({"github_id": 1, "arguments": "{}", "instruction": "i", "type": "Bash Script"}) + "\n")
    assert pybench.benchmark_for(ROOT / "tasks.jsonl").name == "suite"
    assert pybench.benchmark_for(tmp_path).name == "original"
    assert pybench.benchmark_for(tmp_path / "split.jsonl").name == "mlbench"
    assert pybench.benchmark_for(Path("anything.parquet")).name == "mlbench"


def test_the_jails_code_is_a_module_of_its_own_with_its_calls_as_data():
    assert set(jailed.KIT_CALLS) == {"check", "probe_imports", "run_bash", "run_as_mlbench"}
    assert "{" not in jailed.WORKER_BOOT.replace("{JAIL_FOLDER", "")  # nothing spliced into it but the folder
    assert (sandbox.WORKER_FOLDER / "jailed.py").read_text() == Path(jailed.__file__).read_text()


def test_the_figure_recorder_warns_as_when_it_was_sent_as_text():
    import warnings

    def recorder():
        def inner():
            warnings.warn("a masked element", UserWarning)
        inner()

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        jailed.as_its_own_text(recorder)()
    assert seen[0].filename == "<string>" and seen[0].lineno == 3  # the third line of its own text
