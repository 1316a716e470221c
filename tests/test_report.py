"""The HTML report: built from a small replay run and from hand-made shards with three samples each; every page
escaped, nothing followed out of an output folder, every image loaded in headless Chromium, pass@k unbiased."""
import html
import os
import json
import re
import subprocess
from pathlib import Path

import pytest

from kit import harness
from kit import report as pybench_report
from conftest import CHROMIUM, ROOT, chromium, run_pybench, write_jsonl

TASKS = [record for _, record in harness.jsonl_records(ROOT / "tasks.jsonl")]
PNG_TASKS = [task["id"] for task in TASKS if re.search(r"\./output/\S+\.png", task["query"])]
OTHER_TASKS = [task["id"] for task in TASKS if task["id"] not in PNG_TASKS]
PAPER_ROWS = "GPT-4o,Llama3-Instruct 8B"
# An agent that writes markup into its replies, its output and its file names, links an output to a host file and
# leaves a FIFO named like an image: the report must show all of it as text and open none of it.
HOSTILE = [
    "Looking. <script>document.title = 'pwned'</script>\n```python\nimport os\n"
    "open('./output/<b>bold<i>.png', 'wb').write(b'not an image')\n"
    "os.symlink('/etc/hostname', './output/link.png')\nos.mkfifo('./output/fifo.png')\n"
    "print('<img src=x onerror=\"document.title=1\"><script>document.title=2</script>')\n```",
    "Done. </pre></div><script>document.title = 'pwned'</script><img src=x onerror=\"document.title='pwned'\">",
]


def replies(name: str) -> dict[str, list[str]]:
    return {record["id"]: record["replies"] for _, record in harness.jsonl_records(ROOT / "checks" / name)}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """A replay run of four tasks (two passing with PNG outputs, one near-miss, one hostile) and its report."""
    folder = tmp_path_factory.mktemp("report")
    chosen = {PNG_TASKS[0]: replies("reference.jsonl")[PNG_TASKS[0]], PNG_TASKS[1]: replies("reference.jsonl")[PNG_TASKS[1]],
              PNG_TASKS[2]: replies("wrong.jsonl")[PNG_TASKS[2]], OTHER_TASKS[0]: HOSTILE}
    replay = write_jsonl(folder / "replay.jsonl", [{"id": task_id, "replies": texts} for task_id, texts in chosen.items()])
    run = run_pybench("--replay", replay, "--only", ",".join(chosen), "--out", folder / "run", timeout=600)
    assert run.returncode == 0, run.stderr
    built = run_pybench("report", folder / "run", "--out", folder / "html", "--paper-rows", PAPER_ROWS, timeout=300)
    assert built.returncode == 0, built.stderr
    results = {result.id: result.to_json() for result in harness.read_results(folder / "run" / "results.jsonl")}
    assert [results[task_id]["passed"] for task_id in chosen] == [True, True, False, False]
    return folder / "html", list(chosen)


@pytest.mark.slow
def test_report_has_table3_a_page_and_a_notebook_per_attempt(report):
    import nbformat

    html_dir, task_ids = report
    overview = (html_dir / "report.html").read_text()
    assert "paper: GPT-4o" in overview and "79.7" in overview and "paper: Llama3-Instruct 8B" in overview and "49.7" in overview
    assert "50.0%" in overview and "2 of 4 attempts passed" in overview
    for task_id in task_ids:
        assert f'href="tasks/{task_id}.html"' in overview
        page = (html_dir / "tasks" / f"{task_id}.html").read_text()
        assert "Trajectory" in page and "notebook (.ipynb)" in page
        notebook = nbformat.read(html_dir / "notebooks" / f"{task_id}.ipynb", as_version=4)
        nbformat.validate(notebook)
        assert notebook.cells[0].cell_type == "markdown" and any(cell.cell_type == "code" for cell in notebook.cells)
    assert list((html_dir / "tasks" / task_ids[0]).glob("*.png")), "the passing PNG task's image was not copied"


@pytest.mark.slow
def test_report_escapes_agent_text_and_opens_no_link_or_fifo(report):
    html_dir, task_ids = report
    for page in [html_dir / "report.html", *(html_dir / "tasks").glob("*.html")]:
        text = page.read_text()
        assert "<script" not in text.lower() and "<img src=x" not in text.lower(), page
        for source in re.findall(r'<img src="([^"]+)"', text):
            image = (page.parent / html.unescape(source)).resolve()
            assert image.is_file() and image.is_relative_to(html_dir), (page, source)
    hostile = (html_dir / "tasks" / f"{task_ids[3]}.html").read_text()
    assert "&lt;script&gt;document.title = &#39;pwned&#39;&lt;/script&gt;" in hostile
    outputs = hostile.split("<h2>Outputs</h2>")[1]
    assert "&lt;b&gt;bold&lt;i&gt;.png" in outputs  # listed as a file, not shown as an image
    assert "link.png" not in outputs and "fifo.png" not in outputs
    made = [path for path in (html_dir.parent / "run" / "outputs" / task_ids[3]).iterdir() if path.is_symlink() or not path.is_file()]
    skipped = f"{len(made)} entries that are not regular files were" if len(made) > 1 else "1 entry that is not a regular file was"
    assert not made or f"{skipped} skipped" in outputs  # what the jail let the cell make
    assert not (html_dir / "tasks" / task_ids[3]).exists(), "something of the hostile task was copied"


def images_in_chromium(pages: list[Path], scratch: Path) -> list[dict]:
    """Open each page in headless Chromium (in iframes of a checker page the test writes; the report itself has no
    script) and return, per page, its title, how many scripts it holds and, per <img>, its naturalWidth."""
    frames = "".join(f'<iframe src="{page.as_uri()}"></iframe>' for page in pages)
    checker = scratch / "checker.html"
    checker.write_text(f"""<!doctype html><html><body>{frames}<pre id="result">page did not load</pre><script>
window.addEventListener("load", () => {{
  const pages = [...document.querySelectorAll("iframe")].map(frame => {{
    const page = frame.contentDocument;
    return {{src: frame.src, title: page.title, scripts: page.querySelectorAll("script").length,
             images: [...page.images].map(image => ({{src: image.getAttribute("src"), width: image.complete ? image.naturalWidth : -1}}))}};
  }});
  document.getElementById("result").textContent = JSON.stringify(pages);
}});
</script></body></html>""")
    command = chromium(scratch / "profile", "--allow-file-access-from-files", "--dump-dom", checker.as_uri())
    dom = subprocess.run(command, capture_output=True, text=True, timeout=120).stdout
    found = re.search(r'<pre id="result">(.*?)</pre>', dom, re.DOTALL)
    assert found, f"no result from Chromium: {dom[-500:]}"
    return json.loads(html.unescape(found.group(1)))


@pytest.mark.slow
def test_report_renders_in_chromium_with_every_image_loaded(report, tmp_path):
    assert CHROMIUM, "Chromium is missing: `python3.12 pybench.py setup --tests` installs Debian's chromium"
    html_dir, task_ids = report
    pages = [html_dir / "report.html"] + [html_dir / "tasks" / f"{task_id}.html" for task_id in task_ids]  # every page
    overview, image_page, _, _, hostile = images_in_chromium(pages, tmp_path)
    assert len(overview["images"]) == 3 and len(image_page["images"]) >= 1 and hostile["images"] == []
    for page in images_in_chromium(pages, tmp_path):
        assert page["scripts"] == 0, page
        assert all(image["width"] > 0 for image in page["images"]), f"an image did not load: {page}"
    assert overview["title"].startswith("PyBench run") and hostile["title"] == f"{task_ids[3]}: failed"


def fake_attempt(task_id: str, category: str, sample: int, passed: bool, output: str, reason: str = "") -> dict:
    messages = [{"role": "system", "content": "system prompt"}, {"role": "user", "content": "No files are uploaded for this task."},
                {"role": "user", "content": f"Solve {task_id}."}, {"role": "assistant", "content": "Plot it.\n```python\nprint(6 * 7)\n```"},
                {"role": "user", "content": "Output:\n42"}, {"role": "assistant", "content": "It is 42."}]
    return {"id": task_id, "category": category, "sample": sample, "seed": sample, "passed": passed, "reason": reason or ("" if passed else "wrong"),
            "turns": 2, "ended_by": "final answer", "cells": 1, "worker_restarts": 0, "seconds": 1.5, "prompt_tokens": 300,
            "completion_tokens": 40, "output": output, "messages": messages}


def fake_shard(run_dir: Path, shard: str, attempts: list[dict]) -> None:
    run_dir.mkdir(parents=True)
    write_jsonl(run_dir / "results.jsonl", attempts)
    (run_dir / "manifest.json").write_text(json.dumps({
        "model": {"file": "m.gguf", "name": "Tiny", "quantization": "Q4_1", "architecture": "llama", "size": 1000, "sha256": "ab" * 32},
        "flags": {"max_turns": 10, "samples": 3, "seed": 0, "shard": shard}, "suite_sha256": "cd" * 32, "device": "CPU",
        "gpu_offload": False, "llama_cpp_python": "0.3.36", "started": "2026-01-02T10:00:00+0000", "finished": "2026-01-02T10:30:00+0000"}))


@pytest.mark.slow
def test_report_merges_shards_with_samples_and_keeps_to_the_output_folders(tmp_path):
    from PIL import Image

    # four tasks x three samples; passed per sample: A 0 0 1, B 1 1 1 (shard 1); C 0 0 0, D 1 1 0 (shard 2)
    pattern = {"A": (0, 0, 1), "B": (1, 1, 1), "C": (0, 0, 0), "D": (1, 1, 0)}
    shard = {task: [fake_attempt(task, "chart", sample, bool(passed), f"outputs/{task}.s{sample}") for sample, passed in enumerate(passes)]
             for task, passes in pattern.items()}
    shard["D"][0]["output"] = "../../.."                                         # outside the run directory: not read
    shard["C"].append(fake_attempt("C", "chart", 0, False, "outputs/C.s0", "the rerun's reason"))  # the last line wins
    fake_shard(tmp_path / "one", "1/2", shard["A"] + shard["B"])
    fake_shard(tmp_path / "two", "2/2", shard["C"] + shard["D"])
    images = tmp_path / "one" / "outputs" / "A.s2"
    (images / "plots").mkdir(parents=True)
    Image.new("RGB", (40, 30), "red").save(images / "plots" / "a b.png")
    (images / "fake.png").write_text("not a png")
    (images / "huge.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(6 * 2**20))
    (images / "outside.png").symlink_to(tmp_path / "one" / "outputs" / "A.s2" / "plots" / "a b.png")
    (tmp_path / "one" / "outputs" / "B.s0").symlink_to(images)                 # a linked output folder: not read

    built = run_pybench("report", tmp_path / "one", tmp_path / "two", "--out", tmp_path / "html", "--paper-rows", "gpt-4o")
    assert built.returncode == 0, built.stderr
    html_dir = tmp_path / "html"
    assert sorted(path.name for path in (html_dir / "tasks").glob("*.html")) == [f"{task}.s{k}.html" for task in "ABCD" for k in range(3)]
    assert sorted(path.name for path in (html_dir / "tasks" / "A.s2").iterdir()) == ["plots_a_b.png"]
    page = (html_dir / "tasks" / "A.s2.html").read_text()
    assert "fake.png" in page and "huge.png" in page and "outside.png" not in page
    assert "No output folder" in (html_dir / "tasks" / "B.s0.html").read_text()
    assert "No output folder" in (html_dir / "tasks" / "D.s0.html").read_text()
    assert "the rerun&#39;s reason" in (html_dir / "tasks" / "C.s0.html").read_text()
    overview = (html_dir / "report.html").read_text()
    # pass@1 = (1/3 + 1 + 0 + 2/3) / 4; pass@3 = 3/4; pass^3 = 1/4 (only B passed all three)
    for row, figure in (("this run pass@1", "50.0"), ("this run pass@3", "75.0"), ("this run pass^3", "25.0")):
        assert re.search(rf'<td>{re.escape(row)}</td><td class="n">{figure}<span class="ci">', overview), row
    pass_k = re.sub(r" \(\d+\.\d-\d+\.\d\)", "", overview)  # each figure followed by its interval
    assert "pass@k (%, 95% interval): k=1 50.0, k=2 66.7, k=3 75.0" in pass_k and "pass^k (%, 95% interval): k=1 50.0, k=2 33.3, k=3 25.0" in pass_k
    assert "k=3 25.0 (0.0-75.0)" in overview  # pass^3 per task: 0, 1, 0, 0
    assert "shards 1/2, 2/2" in overview and "4 tasks" in overview and "12 attempts" in overview


def test_pass_at_k_and_the_terminal_table():
    assert harness.pass_at_k(3, 1, 2) == pytest.approx(2 / 3) and harness.pass_at_k(3, 0, 3) == 0 and harness.pass_at_k(5, 5, 1) == 1
    assert pybench_report.pass_hat_k(3, 2, 2) == pytest.approx(1 / 3) and pybench_report.pass_hat_k(4, 4, 4) == 1
    results = [harness.Result(f"t{i}", category, passed=passed, turns=3)
               for i, (category, passed) in enumerate([("chart", True), ("chart", False), ("math", True), ("text", False)])]
    table = pybench_report.table3_text(results, 10, ["GPT-4o"])
    ours = next(line for line in table.splitlines() if line.startswith("this run")).split()
    assert ours[2:] == ["50.0", "0.0", "-", "100.0", "-", "50.0", "6.50"]  # avg turns: (3 + 10 + 3 + 10) / 4
    assert "paper: GPT-4o" in table and "79.7" in table and "1/2" in table
    with pytest.raises(pybench_report.UsageError, match="no row 'GPT-5'"):
        pybench_report.table3_text(results, 10, ["GPT-5"])


def one_attempt_run(tmp_path, **changes):
    """A run directory of one failed attempt T, its output folder made and empty; returns that folder."""
    attempt = fake_attempt("T", "chart", 0, False, "outputs/T") | changes
    fake_shard(tmp_path / "run", "", [attempt])
    folder = tmp_path / "run" / "outputs" / "T"
    folder.mkdir(parents=True)
    return folder


def report_page(tmp_path) -> str:
    built = run_pybench("report", tmp_path / "run", "--out", tmp_path / "html")
    assert built.returncode == 0, built.stderr
    return (tmp_path / "html" / "tasks" / "T.s0.html").read_text(encoding="utf-8")  # fake_shard says 3 samples


@pytest.mark.slow
def test_report_shows_control_bytes_and_lone_surrogates_visibly(tmp_path):
    one_attempt_run(tmp_path, reason="bad \ud800 surrogate and \x1b[31mred")
    results = tmp_path / "run" / "results.jsonl"
    attempt = json.loads(results.read_text())
    attempt["messages"][4]["content"] = "Output:\n\x1b[31mred\x1b[0m, a NUL \x00 and a bell \x07"
    results.write_text(json.dumps(attempt) + "\n")  # ensure_ascii: the lone surrogate is kept as \ud800
    page = report_page(tmp_path)
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f]", page), "a raw control character reached the page"
    assert "␛[31mred␛[0m, a NUL ␀ and a bell ␇" in page and "bad \\ud800 surrogate and ␛[31mred" in page
    notebook = (tmp_path / "html" / "notebooks" / "T.s0.ipynb").read_text(encoding="utf-8")
    assert "␛[31mred" in notebook and "\\u001b" not in notebook  # shown as on the page (untrusted.visible), not raw


@pytest.mark.slow
def test_report_lists_output_names_that_are_not_utf8(tmp_path):
    from PIL import Image

    folder = one_attempt_run(tmp_path)
    Image.new("RGB", (20, 20), "blue").save(folder / "blue.png")
    os.rename(folder / "blue.png", os.fsencode(folder) + b"/bad\xff<i>.png")
    (folder / "plain.txt").write_bytes(b"x")
    os.rename(folder / "plain.txt", os.fsencode(folder) + b"/\xfe\xfd.txt")
    page = report_page(tmp_path)
    assert "bad\\xff&lt;i&gt;.png" in page and "\\xfe\\xfd.txt" in page
    assert [path.name for path in (tmp_path / "html" / "tasks" / "T.s0").iterdir()] == ["bad__i_.png"]  # shown, safely named


@pytest.mark.slow
def test_report_survives_a_tree_deeper_than_a_copy_name_and_past_path_max(tmp_path):
    from PIL import Image

    folder = one_attempt_run(tmp_path)
    deep = folder.joinpath(*(f"level_{level:08d}" for level in range(20)))   # 20 x 15 bytes: a flattened name past 255
    deep.mkdir(parents=True)
    Image.new("RGB", (20, 20), "red").save(deep / "deep.png")
    descriptor = os.open(deep, os.O_RDONLY)
    for level in range(300):                                               # 300 x 18 bytes more: past PATH_MAX (4096)
        os.mkdir(f"deeper_{level:04d}_level", dir_fd=descriptor)
        inner = os.open(f"deeper_{level:04d}_level", os.O_RDONLY, dir_fd=descriptor)
        os.close(descriptor)
        descriptor = inner
    os.close(os.open("bottom.txt", os.O_WRONLY | os.O_CREAT, dir_fd=descriptor))
    os.close(descriptor)
    try:
        page = report_page(tmp_path)
    finally:
        remove_chain(deep, 300)  # pytest's own clean-up recurses, and 300 levels are too deep for it
    copies = [path.name for path in (tmp_path / "html" / "tasks" / "T.s0").iterdir()]
    assert len(copies) == 1 and len(copies[0].encode()) <= 255 and copies[0].endswith("deep.png"), copies
    assert "deep.png" in page and "bottom.txt" in page  # reached through 320 folders, by descriptors


def remove_chain(top, levels):
    """Remove the chain of folders deeper_NNNN_level under top, bottom first, through descriptors."""
    descriptors = [os.open(top, os.O_RDONLY)]
    for level in range(levels):
        descriptors.append(os.open(f"deeper_{level:04d}_level", os.O_RDONLY, dir_fd=descriptors[-1]))
    os.unlink("bottom.txt", dir_fd=descriptors[-1])
    for level in reversed(range(levels)):
        os.close(descriptors.pop())
        os.rmdir(f"deeper_{level:04d}_level", dir_fd=descriptors[-1])
    os.close(descriptors.pop())


@pytest.mark.slow
def test_two_runs_are_compared_with_flips_a_paired_interval_and_mcnemar(tmp_path):
    # run A passes tasks 0-4, run B passes 2-8: 2 tasks pass only in A, 4 only in B
    for name, passing in (("a", range(0, 5)), ("b", range(2, 9))):
        attempts = [fake_attempt(f"t{i}", "chart" if i < 6 else "math", 0, i in passing, f"outputs/t{i}") for i in range(10)]
        fake_shard(tmp_path / name, "", attempts)
        manifest = json.loads((tmp_path / name / "manifest.json").read_text())
        manifest["model"]["name"], manifest["model_sha256"], manifest["flags"]["samples"] = f"Model-{name.upper()}", name * 64, 1
        (tmp_path / name / "manifest.json").write_text(json.dumps(manifest))
    built = run_pybench("report", tmp_path / "a", tmp_path / "b", "--out", tmp_path / "html")
    assert built.returncode == 0, built.stderr
    assert "Model-B minus Model-A: +20.0 points" in built.stdout
    assert "4 pass only in the second, 2 only in the first; McNemar exact p = 0.688" in built.stdout   # 2 * (1 + 6 + 15) / 64
    rows = [line for line in built.stdout.splitlines() if line.startswith(("Model-A", "Model-B"))]
    assert [line.split()[6] for line in rows[:2]] == ["50.0", "70.0"]
    overview = (tmp_path / "html" / "report.html").read_text()
    assert "PyBench comparison: 2 runs" in overview and "0.688" in overview and "+20.0" in overview
    flips = overview.split("<h2>Tasks that flip</h2>")[1].split("<h2>")[0]
    assert sorted(re.findall(r"<tr><td>(t\d)</td>", flips)) == ["t0", "t1", "t5", "t6", "t7", "t8"]
    assert 'href="tasks/r1_t0.html"' in overview and 'href="tasks/r2_t0.html"' in overview
    assert (tmp_path / "html" / "tasks" / "r2_t9.html").is_file() and (tmp_path / "html" / "comparison.png").is_file()
    low, high = re.search(r'<td class="n">\+20\.0</td><td class="n">([-+]\d+\.\d) to ([-+]\d+\.\d)</td>', overview).groups()
    assert float(low) < 0 < 20 < float(high)  # 6 discordant tasks of 10: not a significant difference
    if CHROMIUM:
        (page,) = images_in_chromium([tmp_path / "html" / "report.html"], tmp_path)
        assert page["scripts"] == 0 and [image["src"] for image in page["images"]] == ["comparison.png"] and page["images"][0]["width"] > 0


def test_intervals_against_known_values():
    assert harness.wilson(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert harness.wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert harness.wilson(81, 263) == pytest.approx((0.2553, 0.3662), abs=1e-4)  # Newcombe (1998), example (a)
    assert pybench_report.mcnemar(2, 4) == pytest.approx(44 / 64) and pybench_report.mcnemar(0, 6) == pytest.approx(2 / 64)
    assert pybench_report.mcnemar(3, 3) == 1.0
    even = pybench_report.paired_difference([True] * 5 + [False] * 5, [False] * 5 + [True] * 5)  # equal flips: a centred interval
    assert even["difference"] == 0 and even["low"] == pytest.approx(-even["high"]) and even["mcnemar_p"] == 1.0
    same = pybench_report.paired_difference([True, False] * 10, [True, False] * 10)
    assert same["difference"] == 0 and same["low"] <= 0 <= same["high"] and same["only_first"] == same["only_second"] == 0
    assert pybench_report.bootstrap([1.0] * 20) == (1.0, 1.0)
    low, high = pybench_report.bootstrap([0.0, 1.0] * 50)
    assert 0.39 < low < 0.45 and 0.55 < high < 0.61  # about 0.5 +- 1.96 * 0.05
    table = pybench_report.table3_text([harness.Result(f"t{i}", "chart", passed=i < 5, turns=3) for i in range(10)], 10, [])
    assert "95% interval" in table and "23.7-76.3" in table


def test_table3_groups_by_the_categories_of_the_results():
    teacher = [harness.Result(task, category, passed=passed, turns=3) for task, category, passed in
               [("a", "pandas", True), ("b", "Charts", False), ("c", "pandas", False), ("d", "images", True), ("e", "Charts", True)]]
    table = pybench_report.table3_text(teacher, 10, ["GPT-4o"])
    lines = table.splitlines()
    assert lines[0].split() == ["Charts", "images", "pandas", "Overall", "Avg", "turns"]  # the suite's own, sorted
    assert lines[1].split()[2:] == ["50.0", "100.0", "50.0", "60.0", "5.80"]  # avg turns: (3 * 3 + 2 * 10) / 5
    assert next(line for line in lines if line.startswith("paper: GPT-4o")).split()[2:] == ["-", "-", "-", "79.7", "4.3"]
    assert "1/2" in lines[3] and "3/5" in lines[3]
    page = pybench_report.templates().from_string('{% from "macros.html" import table3 %}{{ table3(table, 10) }}').render(
        table=pybench_report.table3([("this run", teacher, 10)], []))
    headings = re.findall(r'<th class="n">([^<]*)</th>', page)
    assert headings == ["Charts", "images", "pandas", "Overall", "Avg turns"] and "Chart<" not in page and "Software" not in page
    pybench = [harness.Result("t", "math", passed=True, turns=2)]  # a PyBench run keeps the paper's five, in its order
    assert pybench_report.table3([("this run", pybench, 10)], [])["columns"] == pybench_report.TABLE3_COLUMNS
    assert pybench_report.table3_text(pybench, 10, []).splitlines()[0].split()[:5] == ["Chart", "Text", "Image", "Math", "Software"]
