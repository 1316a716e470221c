"""ML-Bench's tracer on its own (jailed.run_bash with trace_values; issue 30, point 5), on the host with Debian's own
python3 (not a venv, so its user site and usercustomize are live, as in a conda environment): every answer below exits
0 and names train.py with the record's values, and only those that run train.py itself pass the honest column."""
import json
import os
import tempfile

import pytest

from kit import jailed, mlbench

TRAIN = """import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--dataset", required=True)
parser.add_argument("--lr", type=float)
print("trained on", parser.parse_args().dataset)
"""
ARGS = "train.py --dataset cora --lr 0.05"
EXITS = "import os; os._exit(0)"
ANSWERS = {  # answer: whether the honest column passes it
    "the script": (f"python3 {ARGS}", True),
    "the script from a bash script": (f"printf 'python3 {ARGS}\\n' > run.sh && bash run.sh", True),
    "python -c reading the script": (f"python3 -c 'import sys; del sys.argv[1]; exec(open(\"train.py\").read())' {ARGS}", False),
    "python -m another module": (f"python3 -m this {ARGS}", False),
    "sitecustomize exiting first": (f"mkdir sc && echo '{EXITS}' > sc/sitecustomize.py && PYTHONPATH=sc python3 {ARGS} --bad", False),
    "usercustomize exiting first": (f"export HOME=$PWD/home && site=$(python3 -c 'import site; print(site.getusersitepackages())') && "
                                    f"mkdir -p $site && echo '{EXITS}' > $site/usercustomize.py && python3 {ARGS} --bad", False),
    "PYTHONSTARTUP": (f"echo '{EXITS}' > st.py && PYTHONSTARTUP=st.py python3 -i - {ARGS} < /dev/null", False),
    "an interpreter after the wrapper": ("mkdir fake && printf '#!/bin/sh\\nexit 0\\n' > fake/python3 && chmod +x fake/python3 && "
                                         f"PATH=${{PATH%%:*}}:$PWD/fake:${{PATH#*:}} python3 {ARGS}", False),
    "a script that never starts": ("python3 missing.py --dataset cora --lr 0.05; exit 0", False),
    "BASH_ENV exiting first": (f"printf 'python3 {ARGS} --bad\\n' > run.sh && printf 'exit 0\\n' > env.sh && "
                               "BASH_ENV=env.sh bash run.sh --dataset cora --lr 0.05", False),
    "bash -c naming the script": ("bash -c 'exit 0' run.sh --dataset cora --lr 0.05", False),
}


@pytest.mark.skipif(not os.access("/usr/bin/python3", os.X_OK), reason="no system python3")
@pytest.mark.parametrize("name", ANSWERS)
def test_only_a_run_of_the_script_itself_passes(tmp_path, monkeypatch, name):
    answer, honest = ANSWERS[name]
    (tmp_path / "train.py").write_text(TRAIN)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the tracing folder, as the jail's /tmp
    with pytest.raises(jailed.Outcome) as ended:
        jailed.run_bash(answer, str(tmp_path), 30, path_first="/usr/bin", trace_values=["cora", "0.05"])
    traced = json.loads(str(ended.value))
    assert traced["outcome"] == "exit 0", traced  # ML-Bench's count passes every one
    passed, reason = mlbench.honest_verdict(traced["outcome"], traced["task"], "executed")
    assert passed == honest, (reason, traced["task"])
    if not honest and traced["task"]["runs"]:
        assert "never seen starting" in reason or "exit 2" in reason, reason


def test_script_argument_reads_python_and_bash_command_lines():
    read = jailed.script_argument
    assert [read(argv.split()) for argv in ["python t.py -c x", "python -u -W ignore t.py", "python -uc x t.py", "python -mx t.py",
                                            "python - t.py", "python -X dev -- t.py", "bash -eo pipefail r.sh", "bash -xc r r.sh",
                                            "bash --rcfile x r.sh", "sh r.sh"]] == \
        ["t.py", "t.py", None, None, None, "t.py", "r.sh", None, "r.sh", "r.sh"]
