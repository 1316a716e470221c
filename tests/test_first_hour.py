"""The first hour of a new user (issue 23): help that helps, README examples that run, honest errors for the
environment, reports that survive edge cases."""
import shlex

import pytest

from conftest import ROOT, run_pybench

SUBCOMMANDS = ("setup", "doctor", "report", "validate", "grade")


def readme_commands() -> list[list[str]]:
    """The arguments after `pybench.py` of every command line in the README's bash blocks."""
    commands, in_block = [], False
    for line in (ROOT / "README.md").read_text().splitlines():
        if line.startswith("```"):
            in_block = line.strip() == "```bash"
            continue
        if in_block and "pybench.py" in line:
            for part in line.split("&&"):
                words = shlex.split(part, comments=True)
                if "pybench.py" in words:
                    commands.append(words[words.index("pybench.py") + 1:])
    return commands


@pytest.fixture
def nothing_runs(monkeypatch):
    """Every subcommand's work replaced by a tripwire: a --help that goes on to work fails the test."""
    import pybench
    import report
    import suite

    def tripwire(*args, **kwargs):
        raise AssertionError("the subcommand ran instead of printing its help")

    for owner, name in ((pybench, "setup"), (pybench, "doctor"), (pybench, "run_suite"), (suite, "validate"),
                        (suite, "submission_replies"), (report, "build_report"), (report, "summary_text")):
        monkeypatch.setattr(owner, name, tripwire)


def test_help_lists_the_subcommands_one_line_each(nothing_runs, capsys):
    import pybench

    with pytest.raises(SystemExit) as stopped:
        pybench.main(["--help"])
    assert stopped.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    for name in SUBCOMMANDS:
        described = [line for line in lines if line.split()[:1] == [name] and len(line.split()) > 3]
        assert len(described) == 1, (name, lines[-8:])


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_every_subcommands_help_prints_its_help_and_does_nothing_else(name, nothing_runs, capsys):
    import pybench

    with pytest.raises(SystemExit) as stopped:
        pybench.main([name, "--help"])
    assert stopped.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: pybench.py {name}"), out
    assert "%%" not in out


def test_an_unknown_only_id_suggests_the_closest_ones():
    import harness
    import suite

    tasks = suite.load_tasks(ROOT / "tasks.jsonl")
    with pytest.raises(harness.UsageError, match=r"chart-01.*did you mean charts-01"):
        harness.select_tasks(tasks, "chart-01,text-03", None, None)
    with pytest.raises(harness.UsageError) as far:
        harness.select_tasks(tasks, "zzzzzz", None, None)
    assert "did you mean" not in str(far.value)


def test_the_readmes_commands_parse_and_name_real_tasks(nothing_runs, capsys):
    """Every README command line: a run's flags parse and its selection names tasks of the suite; a subcommand's
    flags are its own (its parser reaches --help without an error)."""
    import harness
    import pybench
    import suite

    commands = readme_commands()
    assert len([words for words in commands if not words or words[0] not in SUBCOMMANDS]) >= 4, commands
    assert {"setup", "report"} <= {words[0] for words in commands if words}
    tasks = suite.load_tasks(ROOT / "tasks.jsonl")
    for words in commands:
        if words and words[0] in SUBCOMMANDS:
            with pytest.raises(SystemExit) as stopped:
                pybench.main(words + ["--help"])
            assert stopped.value.code == 0, words
            continue
        args = pybench.parse_args(words)
        assert harness.select_tasks(tasks, args.only, args.category, args.limit), words


@pytest.mark.slow
def test_the_readmes_commands_run(tmp_path):
    """The README's run and report lines, run: a model becomes the reference replay, one task each; the report lines
    read the run those made."""
    commands = readme_commands()
    runs = [words for words in commands if not words or words[0] not in SUBCOMMANDS]
    made = []
    for number, words in enumerate(runs):
        args, skip = [], False
        for word in words:
            if skip:
                skip = False
            elif word in ("--model", "--replay", "--limit", "--out"):
                skip = True
            else:
                args.append(word)
        out = tmp_path / f"run-{number}"
        done = run_pybench(*args, "--replay", "checks/reference.jsonl", "--limit", "1", "--out", out)
        assert done.returncode == 0, (words, done.stderr[-2000:])
        assert (out / "results.jsonl").read_text().count("\n") == 1
        made.append(out)
    for number, words in enumerate(w for w in commands if w and w[0] == "report"):
        values = dict(zip(words[1:], words[2:]))
        run_dirs = [word for before, word in zip(words, words[1:]) if not word.startswith("--") and not before.startswith("--")]
        args = ["report", *made[:len(run_dirs)]] + (["--paper-rows", values["--paper-rows"]] if "--paper-rows" in values else [])
        done = run_pybench(*args, "--out", tmp_path / f"report-{number}")
        assert done.returncode == 0, (words, done.stderr[-2000:])
        assert (tmp_path / f"report-{number}" / "report.html").is_file()
