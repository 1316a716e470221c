"""pybench's reports: Table 3 beside the paper's rows with 95% intervals, and static HTML pages (jinja2, templates/, no
script) of one run (or its shards) or of several runs compared, from run directories it never changes. It knows no
benchmark: a benchmark's own tables come as data (harness.Tables, from the tables_of that pybench.py hands it).

Every value shown in a page is escaped once, by jinja2, after the environment's finalize has made control
characters, NUL, ESC and lone surrogates visible (␀, ␛, \\xff).
"""
import functools
import json
import math
import os
import re
import shutil
import stat
import urllib.parse
from collections import Counter
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from kit.harness import (CATEGORIES, PICTURE_BYTES, Z95, Conversation, Result, UsageError, attempts_by_task,
                         first_attempts, jsonl_records, pass_at_k, percent_interval, picture_refusal, read_manifest, read_results,
                         wilson)
from kit.sandbox import walk_tree
from kit.settings import RESUME_FACTS, resume_keys
from kit.untrusted import file_name, for_page, for_terminal, visible

__all__ = ["JUDGE_FILE", "NOTEBOOK_METADATA", "PAPER_ROWS_SHOWN", "TABLE3_COLUMNS", "agreement", "attempt_output_dir",
           "bootstrap", "build_report", "cohen_kappa", "comparison_plot", "human_size", "judge_text", "mcnemar",
           "merge_runs", "notebook_text", "paired_difference", "pass_hat_k", "prompt_tokens_fact", "read_entry",
           "read_judgements", "read_run", "render", "report_plots", "run_max_turns", "save_plot", "split_messages", "summary_text",
           "table3", "table3_text", "templates", "write_page"]

HERE = Path(__file__).resolve().parent

# Table 3 of the paper (arXiv 2407.16732): unit-test pass rate (%) for Chart, Text, Image & Audio, Math, Software and
# Overall, and average turns. For 8 rows the categories do not add up to Overall: compare reproductions on Overall.
PAPER_TABLE3 = {
    "GPT-3.5 Turbo": (72.6, 60.9, 70.8, 100.0, 0.0, 62.9, 5.2),
    "GPT-4o": (80.6, 82.6, 77.1, 100.0, 100.0, 79.7, 4.3),
    "GPT-4o-mini": (77.4, 69.6, 87.5, 100.0, 100.0, 81.1, 4.5),
    "Llama3-Instruct 70B": (38.7, 34.8, 72.9, 33.3, 50.0, 78.3, 4.0),
    "CodeLlama-Instruct 70B": (24.2, 17.4, 41.7, 16.7, 0.0, 37.8, 7.5),
    "Deepseek-llm-chat 67B": (21.0, 17.4, 37.5, 33.3, 25.0, 26.6, 9.2),
    "Deepseek-coder-Instruct 33B": (22.6, 0.0, 4.2, 16.7, 0.0, 37.0, 6.7),
    "CodeLlama-Instruct 34B": (8.1, 13.0, 0.0, 16.7, 0.0, 6.3, 8.9),
    "Yi-1.5-Chat-16K 34B": (33.9, 34.8, 56.3, 50.0, 0.0, 41.3, 9.0),
    "Qwen-1.5-Chat 32B": (12.9, 39.1, 10.4, 50.0, 75.0, 19.6, 9.3),
    "Gemma-2-Instruct 27B": (58.1, 56.5, 87.5, 83.3, 75.0, 69.2, 5.0),
    "Llama3-Instruct 8B": (43.5, 26.1, 72.9, 66.7, 50.0, 49.7, 6.7),
    "Mistral-Instruct-v0.2 7B": (17.7, 17.4, 18.8, 16.7, 0.0, 17.5, 8.9),
    "Gemma-2-Instruct 9B": (37.1, 30.4, 70.1, 83.3, 50.0, 49.7, 7.2),
    "Qwen2-Instruct 7B": (59.7, 47.8, 58.3, 83.3, 75.0, 58.7, 5.9),
    "CodeQwen1.5-chat 7B": (48.4, 43.5, 66.7, 83.3, 25.0, 54.5, 7.9),
    "CodeActAgent-Llama2 7B": (16.1, 21.7, 20.8, 33.3, 0.0, 18.9, 8.1),
    "CodeActAgent-Mistral-v0.1 7B": (17.7, 4.3, 20.8, 16.7, 0.0, 16.1, 8.8),
    "OpenCodeInterpreter-DS 6.7B": (11.3, 21.7, 75.0, 66.7, 25.0, 51.7, 6.8),
    "InternLM2_5-chat 7B": (32.3, 13.0, 4.17, 50.0, 25.0, 20.27, 9.84),
    "PyLlama3 (w/o cpt) 8B": (58.0, 52.2, 73.0, 50.0, 50.0, 58.7, 6.3),
    "PyLlama3 8B": (62.9, 65.2, 56.3, 66.7, 50.0, 60.8, 6.1),
}
PAPER_ROWS_SHOWN = ("GPT-4o", "Llama3-Instruct 8B")  # beside ours, unless --paper-rows says otherwise
PAPER_TASKS = (62, 23, 48, 6, 4, 143)  # the paper's tasks per category, and in all
TABLE3_COLUMNS = ("Chart", "Text", "Image", "Math", "Software", "Overall", "Avg turns")
REPORT_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")
REPORT_FILES_LISTED = 200          # output files listed per page; the rest are counted
REPORT_NAME_BYTES = 120            # a flattened copy name longer than this keeps its tail behind a short digest
# Every page the kit writes (the report's, the classroom's) holds no script, and this policy would refuse one anyway:
# only inline styles, and images from disk or in the page (never from the network).
PAGE_CSP = "default-src 'none'; img-src 'self' data: file:; style-src 'unsafe-inline'"
SETTINGS_SHOWN = ("temperature", "top_p", "max_tokens", "max_turns", "ctx", "seed")  # on a run's first screen
BOOTSTRAP_DRAWS = 2000             # resamples over tasks for the intervals of pass@k (seeded: the same report twice)


# --- report: 95% intervals, Wilson for a proportion, a bootstrap over tasks for pass@k, paired for two runs ---

def bootstrap(per_task: list[float], draws: int = BOOTSTRAP_DRAWS, seed: int = 0) -> tuple[float, float]:
    """Percentile interval (95%) of the mean of per-task scores (at least one), resampling tasks with replacement."""
    import numpy as np

    values = np.asarray(per_task, dtype=float)
    means = np.random.default_rng(seed).choice(values, size=(draws, len(values)), replace=True).mean(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def paired_difference(first: list[bool], second: list[bool]) -> dict:
    """second's pass rate minus first's over the same tasks, Newcombe's score interval for paired proportions (his
    method 10), and McNemar's exact test on the discordant tasks. Fractions, not percents."""
    n, counts = len(first), Counter(zip(map(bool, first), map(bool, second)))
    both, only_first, only_second, neither = counts[True, True], counts[True, False], counts[False, True], counts[False, False]
    p1, p2 = (both + only_second) / max(n, 1), (both + only_first) / max(n, 1)   # second's rate, first's rate
    l1, u1 = wilson(both + only_second, n)
    l2, u2 = wilson(both + only_first, n)
    denominator = math.sqrt((both + only_second) * (neither + only_first) * (both + only_first) * (neither + only_second))
    phi = (both * neither - only_first * only_second) / denominator if denominator else 0.0
    low = (p1 - p2) - math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    high = (p1 - p2) + math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return {"tasks": n, "difference": p1 - p2, "low": low, "high": high, "only_first": only_first, "only_second": only_second,
            "mcnemar_p": mcnemar(only_first, only_second)}


def mcnemar(only_first: int, only_second: int) -> float:
    """McNemar's exact two-sided p-value: the discordant tasks as a binomial(b + c, 1/2)."""
    discordant = only_first + only_second
    if discordant == 0:
        return 1.0
    tail = sum(math.comb(discordant, i) for i in range(min(only_first, only_second) + 1)) / 2 ** discordant
    return min(1.0, 2 * tail)


# --- report: reading run directories; shards of one run merge, different runs are compared ---

def read_run(run_dir: Path) -> tuple[list[Result], dict]:
    """The finished attempts of one run directory (each given its run_dir; a torn last line left out), its manifest."""
    run_dir = results_file(run_dir).parent
    attempts = list(read_results(run_dir / "results.jsonl"))
    for result in attempts:
        result.run_dir = run_dir
    return attempts, read_manifest(run_dir)


def results_file(run_dir: Path) -> Path:
    path = run_dir.resolve() / "results.jsonl"
    if not path.is_file():
        raise UsageError(f"report: {path.parent} holds no results.jsonl: give run directories made by pybench.py")
    return path


def merge_runs(run_dirs: list[Path]) -> tuple[list[dict], list[dict]]:
    """Attempts of run directories (a run's shards), one per (id, sample), the last read winning; and the manifests."""
    attempts, manifests = {}, []
    for run_dir in run_dirs:
        results, manifest = read_run(run_dir)
        manifests.append(manifest)
        attempts |= {(result.id, result.sample): result for result in results}
    order = {category: number for number, category in enumerate(categories_of(attempts.values()))}
    return sorted(attempts.values(), key=lambda result: (order[result.category], result.id, result.sample)), manifests


def group_runs(run_dirs: list[Path]) -> list[list[Path]]:
    """The run directories grouped into runs, in the order first given: shards and resumed parts share their manifest's
    resume keys; a directory without a manifest is a run of its own."""
    groups: dict[tuple, list[Path]] = {}
    for run_dir in run_dirs:
        results_file(run_dir)
        manifest, key = read_manifest(run_dir), ("directory", str(run_dir.resolve()))
        if manifest:
            names = manifest.get("resume_keys", resume_keys(""))
            key = tuple(json.dumps(manifest.get(name), sort_keys=True) for name in names)
        groups.setdefault(key, []).append(run_dir)
    return list(groups.values())


def run_max_turns(manifests: list[dict]) -> int:
    return max((manifest.get("flags", {}).get("max_turns") or 10 for manifest in manifests), default=10)


# --- report: Table 3 with intervals ---

def pass_hat_k(n: int, c: int, k: int) -> float:
    """Chance that all k attempts drawn from n (c of them passed) pass: C(c, k) / C(n, k)."""
    return math.comb(c, k) / math.comb(n, k)


def tally(results: list[dict]) -> dict[str, tuple[str, int, int]]:
    """Task id -> (category, attempts, passed attempts)."""
    counts: dict[str, tuple[str, int, int]] = {}
    for result in results:
        _, n, c = counts.get(result.id, (result.category, 0, 0))
        counts[result.id] = (result.category, n + 1, c + bool(result.passed))
    return counts


def most_samples(results: list[Result]) -> int:
    return max((n for _, n, _ in tally(results).values()), default=1)


def categories_of(results) -> tuple[str, ...]:
    """The categories Table 3 groups by: PyBench's five in the paper's order if they hold every result, else theirs."""
    present = {result.category for result in results}
    return CATEGORIES if present <= set(CATEGORIES) else tuple(sorted(present, key=lambda category: (category.casefold(), category)))


def table3_row(results: list[dict], max_turns: int, categories: tuple[str, ...], score=pass_at_k,
               k: int = 1) -> tuple[list[float | None], list[tuple | None]]:
    """A row of Table 3 and its 95% intervals (Wilson's for one attempt per task, else a bootstrap): score (%) per
    category and overall over the tasks with k attempts or more (None for none), then average turns, the paper's way."""
    tasks = tally(results).values()
    single = all(n == 1 for _, n, _ in tasks) and k == 1
    scores = [[score(n, c, k) for task_category, n, c in tasks if n >= k and category in (None, task_category)]
              for category in (*categories, None)]
    figures = [100 * sum(each) / len(each) if each else None for each in scores]
    intervals = [None if not each else wilson(round(sum(each)), len(each)) if single else bootstrap(each) for each in scores]
    turns = [result.turns if result.passed else max_turns for result in results]
    return figures + [sum(turns) / len(turns) if turns else None], intervals + [None]


def our_rows(results: list[dict], max_turns: int, name: str = "this run", categories: tuple[str, ...] | None = None) -> list[tuple[str, list, list]]:
    """A run's rows of Table 3 (name, figures, intervals), by categories (default: its own, categories_of): pass rate;
    with K attempts per task, pass@1, pass@K, pass^K. Overall is the last figure but one, average turns the last."""
    categories = categories or categories_of(results)
    samples = most_samples(results)
    rows = [(f"{name} pass@1" if samples > 1 else name, *table3_row(results, max_turns, categories))]
    for label, score in ((f"pass@{samples}", pass_at_k), (f"pass^{samples}", pass_hat_k)) if samples > 1 else ():
        figures, intervals = table3_row(results, max_turns, categories, score, samples)
        rows.append((f"{name} {label}", figures[:-1] + [None], intervals))
    return rows


def paper_row_names(names: list[str]) -> list[str]:
    """Rows of the paper's Table 3, named case-insensitively."""
    known = {name.lower(): name for name in PAPER_TABLE3}
    unknown = [name for name in names if name.strip().lower() not in known]
    if unknown:
        raise UsageError(f"--paper-rows: no row {', '.join(map(repr, unknown))} in the paper's Table 3; "
                         f"its rows are: {', '.join(PAPER_TABLE3)}")
    return [known[name.strip().lower()] for name in names]


def pass_at_k_lines(results: list[dict]) -> list[str]:
    """pass@k and pass^k overall for k = 1..K, when some task has more than one attempt."""
    samples = most_samples(results)
    return [f"{name} (%, 95% interval): " + ", ".join(f"k={k} {figures[0]:.1f} ({percent_interval(intervals[0])})"
                                                      for k in range(1, samples + 1) for figures, intervals in [table3_row(results, 0, (), score, k)])
            for name, score in (("pass@k", pass_at_k), ("pass^k", pass_hat_k)) if samples > 1]


def table3(runs: list[tuple[str, list[dict], int]], paper_rows: list[str]) -> dict:
    """Table 3 for runs (name, results, max_turns) and the paper's chosen rows: its columns, the paper's tasks under
    each, and its rows, each with its kind (ours, counts, paper), figures, cells and 95% intervals ('lo-hi') shown."""
    categories = categories_of([result for _, results, _ in runs for result in results])
    others = 0 if categories == CATEGORIES else len(categories)  # columns the paper has no figure for
    rows = []
    for name, results, max_turns in runs:
        for row_name, figures, intervals in our_rows(results, max_turns, name, categories):
            rows.append({"name": row_name, "kind": "ours", "cells": ["-" if value is None else f"{value:.2f}" if column == len(figures) - 1 else f"{value:.1f}"
                                                           for column, value in enumerate(figures)],
                         "intervals": [percent_interval(interval) for interval in intervals], "figures": figures, "raw_intervals": intervals})
        chosen = [[result.passed for result in results if category in (None, result.category)]
                  for category in (*categories, None)]
        rows.append({"name": "  passed/attempts", "kind": "counts",  # '-' for a category with no attempt
                     "cells": [f"{sum(passed)}/{len(passed)}" if passed else "-" for passed in chosen] + [""],
                     "intervals": [""] * (len(categories) + 2)})
    for name in paper_row_names(paper_rows):
        figures = list(PAPER_TABLE3[name])  # its intervals: Wilson's, its rates taken as shares of its tasks
        intervals = [wilson(round(value * count / 100), count) for value, count in zip(figures, PAPER_TASKS)] + [None]
        if others:
            figures, intervals = [None] * others + figures[-2:], [None] * others + intervals[-2:]
        rows.append({"name": f"paper: {name}", "kind": "paper", "cells": ["-" if value is None else str(value) for value in figures],
                     "intervals": [percent_interval(interval) for interval in intervals], "figures": figures, "raw_intervals": intervals})
    return {"columns": (*categories, *TABLE3_COLUMNS[-2:]) if others else TABLE3_COLUMNS,
            "paper_tasks": ("-",) * others + PAPER_TASKS[-1:] if others else PAPER_TASKS, "rows": rows}


def table3_text(results: list[dict], max_turns: int, paper_rows: list[str], runs: list[tuple[str, list[dict], int]] | None = None) -> str:
    """Table 3 (table3) of a run or of several runs, and the pass@k lines, as printed in the terminal."""
    runs, rows = runs or [("this run", results, max_turns)], []
    table = table3(runs, paper_rows)
    for row in table["rows"]:
        rows += [(row["name"], row["cells"])] + [("  95% interval", row["intervals"])] * (row["kind"] == "ours")
    columns = [for_terminal(column) for column in table["columns"]]  # a teacher's suite names its own categories
    width = max(len(name) for name, _ in rows)
    widths = [max(len(column), *(len(cells[i]) for _, cells in rows)) for i, column in enumerate(columns)]
    lines = ["  ".join([" " * width, *(column.rjust(w) for column, w in zip(columns, widths))])]
    lines += ["  ".join([name.ljust(width), *(cell.rjust(w) for cell, w in zip(cells, widths))]) for name, cells in rows]
    return "\n".join(lines + [line for _, run_results, _ in runs for line in pass_at_k_lines(run_results)])


# --- report: names, for pages and notebooks ---

def notebook_text(text: str) -> str:
    """Text for a notebook the kit writes, nothing cut: what a reader of it sees is what is there (untrusted.visible:
    controls and bidi controls shown, lone surrogates as \\xNN or \\uNNNN; lines and tabs kept)."""
    return visible(text, len(text))


href = urllib.parse.quote  # a link to one of our own files, whose names we made safe


def human_size(size: int) -> str:
    return f"{size} B" if size < 1024 else f"{size / 1024:.1f} KB" if size < 2**20 else f"{size / 2**20:.1f} MB"


def short(text: str, limit: int = 100) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


@functools.cache
def templates():
    """The jinja2 environment of every page the kit writes: autoescape on, each text value but Markup (a macro's output,
    a data: URI) made visible by untrusted.for_page first."""
    import jinja2

    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True,
                                     undefined=jinja2.StrictUndefined, finalize=for_page,
                                     trim_blocks=True, lstrip_blocks=True)
    environment.filters.update(href=href, short=short, distinct=distinct, percent_interval=percent_interval,
                               join=lambda items, separator="": separator.join(map(str, items)))  # plain text: through for_page, unlike jinja2's join
    environment.globals.update(csp=PAGE_CSP, zip=zip)
    return environment


def render(name: str, /, **values) -> str:
    return templates().get_template(name).render(**values)


def write_page(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8", errors="backslashreplace")


# --- report: one attempt, as a page and as a notebook ---

def split_messages(messages: list[dict], code: list[str | None] | None) -> tuple[str, list[str], list[tuple[str, str | None, str, str | None]]]:
    """The system prompt, the user messages before the first reply, and per reply (prose before the code that ran, that
    code or None for a final answer, prose after, the interpreter's answer or None); code: the attempt's, else found."""
    first_reply = next((i for i, message in enumerate(messages) if message["role"] == "assistant"), len(messages))
    system = "\n\n".join(message["content"] for message in messages[:first_reply] if message["role"] == "system")
    asked = [message["content"] for message in messages[:first_reply] if message["role"] == "user"]
    replies = [i for i in range(first_reply, len(messages)) if messages[i]["role"] == "assistant"]
    code = code if code is not None and len(code) == len(replies) else [Conversation().code_in(messages[i]["content"]) for i in replies]
    steps = []
    for i, ran in zip(replies, code):
        reply = messages[i]["content"]
        if ran is None:
            steps.append((reply, None, "", None))
            continue
        answer = messages[i + 1]["content"] if i + 1 < len(messages) and messages[i + 1]["role"] == "user" else None
        at = reply.find(ran)  # the fences around the code that ran go: the page shows that code as code
        before, after = (reply, "") if at < 0 else (re.sub(r"```[\w+-]*[ \t]*\n?$", "", reply[:at]),
                                                     re.sub(r"^\n?```", "", reply[at + len(ran):]))
        steps.append((before, ran, after, answer))
    return system, asked, steps


NOTEBOOK_METADATA = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                     "language_info": {"name": "python"}}  # the notebooks we write: JupyterLab opens them without asking


def attempt_notebook(result: dict):
    """The trajectory as a Jupyter notebook, as the original PyBench writes them; validated once, on write."""
    import nbformat

    _, asked, steps = split_messages(result.get("messages") or [], result.get("code"))
    cells = [{"cell_type": "markdown", "source": "\n\n".join(asked)}]
    executed = 0
    shown = result.printed if result.printed and len(result.printed) == len(steps) else None  # what each cell showed
    for number, (before, code, after, answer) in enumerate(steps):
        prose = "\n\n".join(part.strip() for part in (before, after) if part.strip())
        if prose:
            cells.append({"cell_type": "markdown", "source": prose})
        if code is not None:
            executed += 1
            printed = "" if answer is None else (shown[number] or "") if shown else answer
            outputs = [{"output_type": "stream", "name": "stdout", "text": notebook_text(printed)}] if printed else []
            cells.append({"cell_type": "code", "execution_count": executed, "outputs": outputs, "source": code})
    facts = {key: notebook_text(value) if isinstance(value := result.get(key), str) else value
             for key in ("id", "category", "sample", "seed", "passed", "reason", "turns", "ended_by")}
    return nbformat.from_dict({
        "nbformat": 4, "nbformat_minor": 5,
        "metadata": NOTEBOOK_METADATA | {"pybench": facts},
        "cells": [cell | {"source": notebook_text(cell["source"]), "id": f"cell-{number}", "metadata": {}} for number, cell in enumerate(cells)]})


def attempt_output_dir(result: dict) -> Path | None:
    """The attempt's output folder, if it is a real folder inside its run directory."""
    folder = result.run_dir / str(result.output)
    if folder.is_symlink() or not folder.is_dir() or not folder.resolve().is_relative_to(result.run_dir):
        return None
    return folder


def output_files(folder: Path, pages_dir: Path, stem: str) -> dict:
    """Regular files under an attempt's output folder, walked by sandbox.walk_tree (no link followed): the first
    REPORT_FILES_LISTED listed, their images copied beside the page, and counts of the rest and of the not regular."""
    listed, more, skipped, used = [], 0, 0, set()
    for directory, entry, info, parts in walk_tree(folder):
        name = "/".join(parts)
        if stat.S_ISDIR(info.st_mode):
            continue
        if not stat.S_ISREG(info.st_mode):
            skipped += 1
        elif len(listed) < REPORT_FILES_LISTED:
            copy = file_name(name, ascii_only=True, limit=REPORT_NAME_BYTES)
            while copy in used:
                copy = "_" + copy
            refusal = copy_image(directory, entry, pages_dir / stem / copy)
            used.add(copy) if refusal is None else None
            listed.append({"name": name if len(name) <= 300 else f"{name[:80]} … {name[-200:]}", "size": human_size(info.st_size),
                           "image": href(f"{stem}/{copy}") if refusal is None else None, "left_out": refusal})
        else:
            more += 1
    return {"files": listed, "more": more, "skipped": skipped}


def read_entry(directory: int, name: str, limit: int) -> bytes | None:
    """The first `limit` bytes of a regular file, opened relative to its folder's descriptor without following a link
    (nor waiting on a pipe); None where it cannot be opened or is not a regular file."""
    try:
        descriptor = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=directory)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as handle:
        return handle.read(limit) if stat.S_ISREG(os.fstat(handle.fileno()).st_mode) else None


def copy_image(directory: int, name: str, destination: Path) -> str | None:
    """Copy an output file (read_entry: no link followed) for a page if it is a PNG, JPEG, GIF or WebP picture within
    harness.picture_refusal's limit: None when copied, else why it is not shown ("" for a name not a picture's)."""
    if os.path.splitext(name)[1].lower() not in REPORT_IMAGE_SUFFIXES:
        return ""
    data = read_entry(directory, name, PICTURE_BYTES + 1) or b""
    if refusal := picture_refusal(data):
        return refusal
    destination.parent.mkdir(parents=True, exist_ok=True)
    destination.write_bytes(data)
    return None


def write_attempts(results: list[dict], out_dir: Path, samples: int, prefix: str = "", run_name: str = "") -> dict:
    """A page (verdict, facts, query, the trajectory step by step, its outputs) and a notebook per attempt, each named
    by its task id made safe (.s<k> added when K > 1); returns (id, sample) -> that stem."""
    import nbformat

    stems = {(result.id, result.sample): prefix + file_name(str(result.id), ascii_only=True, limit=REPORT_NAME_BYTES)
             + (f".s{result.sample}" if samples > 1 else "") for result in results}
    tasks = attempts_by_task(results)
    for result in results:
        stem = stems[result.id, result.sample]
        siblings = [(other.sample, stems[other.id, other.sample], other.passed) for other in tasks[result.id]]
        system, asked, steps = split_messages(result.get("messages") or [], result.get("code"))
        folder = attempt_output_dir(result)
        write_page(out_dir / "tasks" / f"{stem}.html", render(
            "attempt.html", result=result, stem=stem, siblings=siblings, run_name=run_name, system=system, asked=asked,
            steps=steps, folder=folder, outputs=output_files(folder, out_dir / "tasks", stem) if folder else None))
        nbformat.write(attempt_notebook(result), out_dir / "notebooks" / f"{stem}.ipynb")
    return stems


# --- report: plots ---

def report_plots(results: list[dict], paper: list[str], max_turns: int, out_dir: Path) -> list[tuple[str, str]]:
    """Three PNGs beside report.html (pass rate per category, turns, time and tokens per task): (name, description)."""
    import numpy as np

    plt, plots = pyplot(), []
    table = table3([("this run", results, max_turns)], paper)
    shown = table["rows"][:1] + [row for row in table["rows"] if row["kind"] == "paper"]  # this run's first row (pass@1), the paper's
    series = [(row["name"], row["figures"][:-1], row["raw_intervals"][:-1]) for row in shown]
    columns = len(table["columns"]) - 1  # the categories and Overall
    figure, axes = plt.subplots(figsize=(max(10, 1.4 * columns), 3.6))
    width = 0.8 / len(series)
    for number, (label, row, bounds) in enumerate(series):
        heights = [np.nan if value is None else value for value in row]
        errors = np.array([[0, 0] if value is None or bound is None else [max(0, value - 100 * bound[0]), max(0, 100 * bound[1] - value)]
                           for value, bound in zip(row, bounds)]).T
        bars = axes.bar(np.arange(columns) + (number - (len(series) - 1) / 2) * width, heights, width, yerr=errors, capsize=2,
                        error_kw={"elinewidth": 0.8}, label=label)
        if number == 0:  # this run's figures written on its bars: a 0% bar is otherwise no bar at all
            axes.bar_label(bars, ["" if value is None else f"{value:.0f}" for value in row], fontsize=7, padding=1)
    axes.set_xticks(np.arange(columns), [short(column, 24) for column in table["columns"][:-1]])
    axes.set(ylabel="pass rate (%), 95% interval", ylim=(0, 119), yticks=range(0, 101, 20),
             title="Pass rate per category: this run (pass@1) and the paper's Table 3, with 95% intervals")
    axes.legend(fontsize=8, ncols=min(len(series), 4), loc="upper center")
    plots.append(save_plot(figure, out_dir / "categories.png", "pass rate per category with 95% intervals beside the paper's rows"))

    figure, axes = plt.subplots(figsize=(6, 3.2))
    bins = np.arange(-0.5, max(max_turns, max(result.turns for result in results)) + 1.5)
    turns = [[result.turns for result in results if result.passed == passed] for passed in (True, False)]
    axes.hist(turns, bins=bins, stacked=True, color=["#22a355", "#d9443a"], label=["passed", "failed"])
    axes.set(xlabel="assistant turns in the attempt", ylabel="attempts", title="Turns per attempt")
    axes.legend()
    plots.append(save_plot(figure, out_dir / "turns.png", "histogram of turns per attempt, passed and failed"))

    attempts = list(attempts_by_task(results).values())

    def mean(key: str) -> list[float]:
        return [float(np.mean([result.get(key) or 0 for result in task])) for task in attempts]

    tasks = range(len(attempts))
    passed = mean("passed")
    colours = ["#22a355" if share == 1 else "#d9443a" if share == 0 else "#e0a526" for share in passed]
    # a bar per task, labelled by its id: wide enough for every label (143 tasks: 17 inches)
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(max(12.0, 0.12 * len(attempts)), 6.4), sharex=True)
    top.bar(tasks, mean("seconds"), color=colours, width=0.85)
    top.set(ylabel="seconds", title="Seconds and tokens per task (green passed, red failed, amber some samples passed)")
    prompt, completion = mean("prompt_tokens"), mean("completion_tokens")
    if any(prompt) or any(completion):
        bottom.bar(tasks, prompt, color="#9db4e0", width=0.85, label="prompt")
        bottom.bar(tasks, completion, bottom=prompt, color="#3357a8", width=0.85, label="completion")
        bottom.set_ylim(0, 1.3 * max(p + c for p, c in zip(prompt, completion)))
        bottom.legend(fontsize=8, ncols=2, loc="upper right")
    else:
        bottom.text(0.5, 0.5, "no tokens counted (a replay run)", ha="center", va="center", transform=bottom.transAxes)
    bottom.set_ylabel("tokens")
    bottom.set_xticks(tasks, [short(task[0].id, 24) for task in attempts], rotation=90, fontsize=6)
    categories = [task[0].category for task in attempts]
    starts = [i for i, category in enumerate(categories) if i == 0 or categories[i - 1] != category]
    named = top.secondary_xaxis("top")  # the categories above the bars, the task ids below
    named.set_xticks([(start + end) / 2 - 0.5 for start, end in zip(starts, starts[1:] + [len(tasks)])],
                     [categories[start] + ("\n" if number % 2 else "") for number, start in enumerate(starts)], fontsize=8)  # apart
    named.tick_params(length=0)
    for axes in (top, bottom):
        for start in starts[1:]:
            axes.axvline(start - 0.5, color="#999", linewidth=0.6)
        axes.set_xlim(-0.6, len(tasks) - 0.4)
    plots.append(save_plot(figure, out_dir / "per_task.png", "seconds and tokens per task, in the order of the table below"))
    return plots


def comparison_plot(rows: list[dict], out_dir: Path) -> tuple[str, str]:
    """One plot for a comparison: each run's overall pass rate (pass@1) and each paper row's, with 95% intervals."""
    plt = pyplot()
    shown = [row for row in rows if row["kind"] == "paper" or (row["kind"] == "ours" and not re.search(r" pass[@^]\d+$", row["name"])
                                                                  or row["name"].endswith(" pass@1"))]
    figure, axes = plt.subplots(figsize=(9, 0.45 * len(shown) + 1.4))
    for number, row in enumerate(reversed(shown)):
        value, bound = row["figures"][-2], row["raw_intervals"][-2]
        if value is None:
            continue
        colour = "#1d4ed8" if row["kind"] == "ours" else "#888"
        axes.errorbar([value], [number], xerr=[[value - 100 * bound[0]], [100 * bound[1] - value]], fmt="o", color=colour, capsize=4)
        axes.annotate(f"{value:.1f}", (value, number), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=8)
    axes.set_yticks(range(len(shown)), [row["name"] for row in reversed(shown)], fontsize=8)
    axes.set(xlim=(-3, 103), title="Runs compared, beside the paper's Table 3",  # xlim: a run at 0% or 100% keeps its whole marker
             xlabel="overall pass rate (%), 95% interval (paper rows: Wilson over its 143 tasks)")
    axes.grid(axis="x", color="#ddd")
    return save_plot(figure, out_dir / "comparison.png", "overall pass rate of each run and of the paper's rows, with 95% intervals")


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_plot(figure, path: Path, description: str) -> tuple[str, str]:
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot().close(figure)
    return path.name, description


# --- report: the facts of a run, for its first screen ---

def distinct(values) -> list:
    return list(dict.fromkeys(value for value in values if value not in (None, "", {})))


def model_text(model: dict) -> str:
    if "replay" in model:
        return f"replay of {Path(model['replay']).name}"
    size = f"{model['size'] / 1e9:.2f} GB" if model.get("size") else None
    sha = f"sha256 {model['sha256'][:12]}" if model.get("sha256") else None
    return " · ".join(str(part) for part in (model.get("name") or model.get("file"), model.get("quantization"),
                                              model.get("architecture"), size, sha) if part)


def model_title(model: dict) -> str:
    """A report's title: the model file's name (what the user gave) and its quantisation, if the name lacks it."""
    if "replay" in model:
        return f"replay of {Path(model['replay']).name}"
    name = Path(model.get("file") or model.get("name") or "unknown model").name.removesuffix(".gguf")
    quantization = str(model.get("quantization") or "").removeprefix("MOSTLY_")
    return name if not quantization or quantization.lower() in name.lower() else f"{name} · {quantization}"


def run_dates(manifests: list[dict], run_dirs: list[Path]) -> str:
    """When the run started and finished, from the manifests (or when results.jsonl was last written)."""
    started = [datetime.fromisoformat(manifest["started"]) for manifest in manifests if manifest.get("started")]
    finished = [datetime.fromisoformat(manifest["finished"]) if manifest.get("finished") else None for manifest in manifests]
    if not started:
        written = max(datetime.fromtimestamp((run_dir / "results.jsonl").stat().st_mtime).astimezone() for run_dir in run_dirs)
        return f"no manifest; results last written {written:%Y-%m-%d %H:%M:%S %z}"
    text = f"{min(started):%Y-%m-%d %H:%M:%S %z}"
    if None in finished:
        return text + " (not finished: still running, or interrupted)"
    end = max(finished)
    return text + f" to {end:%Y-%m-%d %H:%M:%S} ({(end - min(started)).total_seconds() / 60:.1f} minutes)"


def run_facts(results: list[dict], manifests: list[dict], run_dirs: list[Path], samples: int) -> tuple[list[tuple[str, str]], list[str]]:
    """The facts and warnings shown on a run's first screen."""
    flags = [manifest.get("flags", {}) for manifest in manifests]
    counts = tally(results)
    models = distinct(model_text(manifest["model"]) for manifest in manifests if manifest.get("model"))
    suites = distinct(manifest.get("suite_sha256") for manifest in manifests)
    shards = distinct(flag.get("shard") for flag in flags)
    endings = Counter(str(result.get("ended_by", "?")).split(" (")[0] for result in results)
    per_category = ", ".join(f"{category} {sum(c == category for c, _, _ in counts.values())}" for category in categories_of(results))
    facts = [
        ("Model", "; ".join(models) or "unknown (no manifest.json)"),
        ("Device", "; ".join(distinct(manifest.get("device") for manifest in manifests)) or "unknown"),
        ("llama-cpp-python", ", ".join(distinct(manifest.get("llama_cpp_python") for manifest in manifests)) or "unknown"),
        ("Date", run_dates(manifests, run_dirs)),
        ("Suite", ", ".join(f"sha256 {sha[:12]}" for sha in suites) or "unknown"),
        ("Tasks", f"{len(counts)} tasks ({per_category}) × {samples} sample{'s' if samples > 1 else ''} = "
                  f"{len(results)} attempts; the paper has 143 tasks"),
        ("Settings", " · ".join(f"{name} {', '.join(map(str, values))}" for name in SETTINGS_SHOWN
                                if (values := distinct(flag.get(name) for flag in flags))) or "unknown"),
        ("Endings", " · ".join(f"{ending} {count}" for ending, count in endings.most_common())),
        *prompt_tokens_fact(results, flags),
        ("Run directories", "; ".join(str(run_dir.resolve()) for run_dir in run_dirs) + (f" (shards {', '.join(shards)})" if shards else "")),
    ]
    warnings = [f"These run directories differ in {what}: their attempts are merged anyway."
                for what, values in (("model", models), ("suite", suites), ("max_turns", distinct(flag.get("max_turns") for flag in flags)))
                if len(values) > 1]
    if any(manifest.get("default_model") for manifest in manifests):
        warnings.append("This run used the embedded default model (SmolLM2-135M-Instruct), a smoke test of the kit: expect "
                        "about 0%. For a real figure run pybench.py --model FILE.gguf.")
    if not all(manifests):
        warnings.append("Some run directories have no manifest.json: their model and settings are unknown.")
    if short_tasks := sum(n < samples for _, n, _ in counts.values()):
        warnings.append(f"{short_tasks} tasks have fewer than {samples} attempts (a run still going, or a shard missing).")
    return facts, warnings


def prompt_tokens_fact(results: list[dict], flags: list[dict]) -> list[tuple[str, str]]:
    """What llama.cpp evaluated of the prompts, and what the shared prefixes saved (none for a replay)."""
    counted = [result for result in results if result.get("prompt_tokens_evaluated") is not None]
    if not counted:
        return []
    evaluated, shared = (sum(result.get(key) or 0 for result in counted) for key in ("prompt_tokens_evaluated", "prompt_tokens_shared"))
    total = sum(result.get("prompt_tokens") or 0 for result in counted)
    saved = (f"{shared:,} copied from shared prefixes instead: sharing saved {shared / (evaluated + shared):.0%}" if shared else
             "shared prefixes off (--no-shared-prefix)" if any(flag.get("no_shared_prefix") for flag in flags) else "none shared")
    return [("Prompt tokens", f"{evaluated:,} evaluated by llama.cpp; {saved}; {total:,} in all the prompts (the rest was kept in "
                              "each attempt's KV cache from its last turn)")]


def samples_of(results: list[dict], manifests: list[dict]) -> int:
    return max(max((manifest.get("flags", {}).get("samples") or 1 for manifest in manifests), default=1), most_samples(results))


# --- report: one run (or its shards) ---

def build_report(run_dirs: list[Path], out_dir: Path, paper_rows: list[str], tables_of) -> Path:
    """A static report in out_dir, no script, nothing from the network: report.html of one run or its shards (or of
    several runs compared), a page per attempt in tasks/, a notebook per attempt in notebooks/; returns report.html's
    path. tables_of(results, manifests) gives the benchmark's own tables. Built beside out_dir, then moved into place
    (replacing an earlier report): a build that fails leaves out_dir as it was and nothing beside it."""
    out_dir = out_dir.resolve()
    if out_dir.is_dir() and any(out_dir.iterdir()) and not (out_dir / "report.html").is_file():
        raise UsageError(f"report --out {out_dir} holds other files: give a new folder, or one a report was written to before")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging, earlier = (out_dir.parent / f".{out_dir.name}.{part}-{os.getpid()}" for part in ("building", "earlier"))
    shutil.rmtree(staging, ignore_errors=True)
    try:
        for folder in ("tasks", "notebooks"):
            (staging / folder).mkdir(parents=True)
        write_report(run_dirs, staging, paper_rows, tables_of)
        if out_dir.exists():
            out_dir.rename(earlier)
        staging.rename(out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(earlier, ignore_errors=True)
    return out_dir / "report.html"


def write_report(run_dirs: list[Path], out_dir: Path, paper_rows: list[str], tables_of) -> None:
    """build_report's work, in a fresh folder out_dir (absolute) holding tasks/ and notebooks/: each run's attempts,
    then report.html. Of one run: its facts, Table 3 beside the paper's rows, plots, every attempt. Of several: each
    run's headline, its paired difference from the first run, Table 3 with a row per run and its plot, the tasks that
    flip, and every task's verdicts per run."""
    runs = [(*merge_runs(group), group) for group in group_runs(run_dirs)]
    for results, _, group in runs:
        if not results:
            raise UsageError(f"report: no finished attempt in {', '.join(map(str, group))}")
    paper = paper_row_names(paper_rows)
    names = run_names(runs) if len(runs) > 1 else ["this run"]
    stems, cards, table_runs = [], [], []
    for number, ((results, manifests, group), name) in enumerate(zip(runs, names), 1):
        samples = samples_of(results, manifests)
        stems.append(write_attempts(results, out_dir, samples, *([f"r{number}_", name] if len(runs) > 1 else [])))
        table_runs.append((name, results, run_max_turns(manifests)))
        facts, warnings = run_facts(results, manifests, group, samples)
        cards.append({"name": name, "rows": our_rows(results, table_runs[-1][2], name), "samples": samples, "results": results,
                      "facts": facts, "warnings": warnings, "tables": tables_of(results, manifests)})
    shared = {"table": table3(table_runs, paper), "max_turns": max(turns for _, _, turns in table_runs),
              "pass_at_k": [line for _, results, _ in table_runs for line in pass_at_k_lines(results)],
              "judge": judge_view(table_runs, lambda number, result: page_of(stems[number], result))}
    if len(runs) == 1:
        (results, manifests, _), card = runs[0], cards[0]
        titles = distinct(model_title(manifest["model"]) for manifest in manifests if manifest.get("model"))
        model = titles[0] if len(titles) == 1 else "several models" if titles else "unknown model"
        return write_page(out_dir / "report.html", render(
            "overview.html", title=f"{card['tables'].title} run: {model}", **card, **shared,
            tasks=attempts_by_task(results), page=functools.partial(page_of, stems[0]),
            plots=report_plots(results, paper, shared["max_turns"], out_dir)))
    pairs = []
    for number in range(1, len(runs)):
        pair = compare_pair(runs[0][0], runs[number][0])
        pair["flips"] = [flip | {"first_href": page_of(stems[0], flip["attempts"][0]), "second_href": page_of(stems[number], flip["attempts"][1])}
                         for flip in pair["flips"]]
        pairs.append(pair | {"first": names[0], "second": names[number]})
    order = {category: number for number, category in enumerate(categories_of([result for results, _, _ in runs for result in results]))}
    every = sorted({(result.category, result.id) for results, _, _ in runs for result in results}, key=lambda item: (order[item[0]], item[1]))
    by_run = [attempts_by_task(results) for results, _, _ in runs]
    grid = [{"id": task, "category": category, "cells": [tasks.get(task, []) for tasks in by_run],
             "differs": len({tuple(bool(result.passed) for result in tasks.get(task, [])) for tasks in by_run}) > 1}
            for category, task in every]
    write_page(out_dir / "report.html", render("compare.html", title=f"PyBench comparison: {len(runs)} runs", cards=cards, pairs=pairs, names=names,
                            plot=comparison_plot(shared["table"]["rows"], out_dir), grid=grid, paper=paper, **shared,
                            pages=[functools.partial(page_of, stem) for stem in stems]))


def page_of(stems: dict, result: Result) -> str:
    """The link from report.html to an attempt's page."""
    return href(f"tasks/{stems[result.id, result.sample]}.html")


# --- report: several runs compared ---

def run_names(runs: list[tuple[list[dict], list[dict], list[Path]]]) -> list[str]:
    """A short, distinct name per run, on one line (for_terminal: a model's name comes from its file): its model, and
    the settings in which the runs differ."""
    bases = []
    for _, manifests, run_dirs in runs:
        model = manifests[0].get("model", {})  # a run has a manifest per directory, {} where there is none
        bases.append((Path(model["replay"]).stem if "replay" in model else model.get("name") or model.get("file")) or run_dirs[0].name)
    flags = [manifests[0].get("flags", {}) for _, manifests, _ in runs]
    varying = [key for key in resume_keys("")[len(RESUME_FACTS):]  # the flags a resumed run must share, as settings marks them
               if len({json.dumps(flag.get(key)) for flag in flags}) > 1]
    names = [" · ".join([base] + [f"{key} {flag.get(key)}" for key in varying]) for base, flag in zip(bases, flags)]
    return [for_terminal(name if names.count(name) == 1 else f"{name} ({runs[number][2][0].name})") for number, name in enumerate(names)]


def compare_pair(first: list[dict], second: list[dict]) -> dict:
    """Two runs over their common tasks: the paired difference of pass rates (second minus first) with its interval
    and McNemar's test, on each task's first attempt; and the tasks that flip, with those attempts."""
    one, two = first_attempts(first), first_attempts(second)
    common = [task for task in one if task in two]
    figures = paired_difference([bool(one[task].passed) for task in common], [bool(two[task].passed) for task in common])
    flips = [{"id": task, "first": bool(one[task].passed), "second": bool(two[task].passed), "attempts": (one[task], two[task])}
             for task in common if bool(one[task].passed) != bool(two[task].passed)]
    return figures | {"flips": flips, "only_in_one": len(set(one) ^ set(two))}


def comparison_text(names: list[str], results: list[list[dict]]) -> list[str]:
    return [f"{names[number]} minus {names[0]}: {100 * pair['difference']:+.1f} points (95% {100 * pair['low']:+.1f} "
            f"to {100 * pair['high']:+.1f}) over {pair['tasks']} common tasks; {pair['only_second']} pass only in the "
            f"second, {pair['only_first']} only in the first; McNemar exact p = {pair['mcnemar_p']:.3g}"
            for number in range(1, len(results)) for pair in [compare_pair(results[0], results[number])]]


# --- report: what the CLI prints ---

def summary_text(run_dirs: list[Path], paper_rows: list[str], tables_of) -> str:
    """What `report` prints before building the pages: Table 3 with intervals (a row per run when the directories
    are different runs), the paired comparisons, and each run's benchmark tables (tables_of: see build_report)."""
    runs = [(*merge_runs(group), group) for group in group_runs(run_dirs)]
    names = run_names(runs) if len(runs) > 1 else ["this run"]
    table_runs = [(name, results, run_max_turns(manifests)) for name, (results, manifests, _) in zip(names, runs)]
    tables = [tables_of(results, manifests) for results, manifests, _ in runs]
    if len(runs) == 1 and tables[0].replaces_table3:
        lines = [tables[0].text]
    else:
        lines = [table3_text([], 10, paper_rows, table_runs), *comparison_text(names, [results for results, _, _ in runs])]
        lines += [line for name, table in zip(names, tables) if table.text
                  for line in ([f"{name}:"] if len(runs) > 1 else []) + [table.text]]
    judged = judge_text(table_runs)
    return "\n".join(lines + ([judged] if judged else []))


# === the judge's column (judge.py's records, RUN_DIR/judge.jsonl): its pass rate beside the checks', their agreement ===

JUDGE_FILE = "judge.jsonl"  # a line per judged attempt, written by judge.py, the last line of an attempt winning
# The paper's judge column (GPT-4o judging each trajectory), overall pass rate (%), for the rows we hold.
PAPER_JUDGE = {"GPT-4o": 81.8, "Llama3-Instruct 8B": 49.7, "PyLlama3 8B": 73.4}


def read_judgements(run_dir: Path) -> dict[tuple[str, int], dict]:
    """(id, sample) -> the last judge record of a run directory; a torn last line is left out."""
    lines = jsonl_records(run_dir / JUDGE_FILE, finished_only=True, advice=": remove the line, or judge again with --force")
    return {(record["id"], record.get("sample", 0)): record for _, record in lines if isinstance(record, dict) and "id" in record}


def judged(results: list[Result]) -> list[tuple[Result, dict]]:
    """Each result with its judge record (from its own run directory), for those that have one with a verdict."""
    by_run = {run_dir: read_judgements(run_dir) for run_dir in dict.fromkeys(result.run_dir for result in results) if run_dir}
    records = [(result, by_run.get(result.run_dir, {}).get((result.id, result.sample))) for result in results]
    return [(result, record) for result, record in records if record and record.get("verdict") in ("pass", "fail")]


def agreement(pairs: list[tuple[bool, bool]]) -> dict:
    """(check passed, judge passed) per attempt: the 2x2 table, the share that agree, and Cohen's kappa with its 95%
    interval (None where kappa is undefined: both said the same of every attempt, so chance explains it all)."""
    counts = Counter(pairs)
    both, judge_only, check_only, neither = counts[True, True], counts[False, True], counts[True, False], counts[False, False]
    kappa, low, high = cohen_kappa(both, judge_only, check_only, neither) or (None, None, None)
    return {"attempts": len(pairs), "both": both, "judge_only": judge_only, "check_only": check_only, "neither": neither,
            "agree": (both + neither) / len(pairs) if pairs else None, "kappa": kappa, "low": low, "high": high}


def cohen_kappa(both: int, judge_only: int, check_only: int, neither: int) -> tuple[float, float, float] | None:
    """Cohen's kappa of two raters on pass/fail, and its 95% interval from the large-sample standard error of Fleiss,
    Cohen and Everitt (1969), clipped to [-1, 1]; None where the chance agreement is 1."""
    n = both + judge_only + check_only + neither
    if n == 0:
        return None
    table = [[both / n, check_only / n], [judge_only / n, neither / n]]  # rows: the check pass/fail; columns: the judge
    rows = [sum(row) for row in table]
    columns = [table[0][j] + table[1][j] for j in range(2)]
    observed = table[0][0] + table[1][1]
    chance = rows[0] * columns[0] + rows[1] * columns[1]
    if chance >= 1:
        return None
    kappa = (observed - chance) / (1 - chance)
    diagonal = sum(table[i][i] * (1 - (rows[i] + columns[i]) * (1 - kappa)) ** 2 for i in range(2))
    off = (1 - kappa) ** 2 * sum(table[i][j] * (columns[i] + rows[j]) ** 2 for i in range(2) for j in range(2) if i != j)
    variance = max(0.0, diagonal + off - (kappa - chance * (1 - kappa)) ** 2) / (n * (1 - chance) ** 2)
    half = Z95 * math.sqrt(variance)
    return kappa, max(-1.0, kappa - half), min(1.0, kappa + half)


def judge_view(runs: list[tuple[str, list[Result], int]], link=None) -> dict | None:
    """For runs (name, results, max_turns): Table 3's rows of the checks and of the judge over the attempts judged,
    their agreement, where they disagree (link(run number, result): its page) and the judges named; None if none."""
    view = {"runs": [], "pairs": [], "disagreements": [], "models": [], "prompts": [], "contradictory": 0,
            "attempts": sum(len(results) for _, results, _ in runs)}
    by_judge = []  # (name, the run's judged attempts with the judge's verdict as their own): the runs compared on its column
    for number, (name, results, max_turns) in enumerate(runs):
        pairs = judged(results)
        if not pairs:
            continue
        prefix = f"{name}: " if len(runs) > 1 else ""
        by_judge.append((name, [replace(result, passed=record["verdict"] == "pass") for result, record in pairs]))
        view["runs"] += [(f"{prefix}checks", [result for result, _ in pairs], max_turns), (f"{prefix}judge", by_judge[-1][1], max_turns)]
        view["pairs"] += [(bool(result.passed), record["verdict"] == "pass") for result, record in pairs]
        view["models"] += [f"{record['judge'].get('file')} (sha256 {str(record['judge'].get('sha256'))[:12]})" for _, record in pairs]
        view["prompts"] += [str(record.get("prompt_sha256"))[:12] for _, record in pairs]
        view["contradictory"] += sum(record.get("contradictory") is True for _, record in pairs)
        view["disagreements"] += [{"run": name if len(runs) > 1 else "", "id": result.id, "sample": result.sample, "check": bool(result.passed),
                                   "check_reason": result.reason or "(passed)", "judge": record["verdict"], "judge_reason": record["reason"],
                                   "contradictory": record.get("contradictory") is True,
                                   "href": link(number, result) if link else None}
                                  for result, record in pairs if bool(result.passed) != (record["verdict"] == "pass")]
    if not view["pairs"]:
        return None
    figures = agreement(view["pairs"])
    kappa = ("Cohen's kappa undefined (both said the same of every attempt)" if figures["kappa"] is None else
             f"Cohen's kappa {figures['kappa']:.2f} (95% {figures['low']:.2f} to {figures['high']:.2f})")
    text = (f"agreement over {figures['attempts']} attempts: both pass {figures['both']}, judge only {figures['judge_only']}, "
            f"check only {figures['check_only']}, both fail {figures['neither']} ({100 * figures['agree']:.1f}% agree); {kappa}")
    return view | {"judged": len(view["pairs"]), "models": distinct(view["models"]), "prompts": distinct(view["prompts"]),
                   "agreement": figures, "agreement_text": text, "table": table3(view["runs"], []),
                   "max_turns": max(max_turns for _, _, max_turns in runs),
                   "paper": " · ".join(f"{name} {rate} (its unit tests {PAPER_TABLE3[name][5]})" for name, rate in PAPER_JUDGE.items()),
                   "comparisons": comparison_text([name for name, _ in by_judge], [results for _, results in by_judge]) if len(runs) > 1 else []}


def judge_text(runs: list[tuple[str, list[Result], int]]) -> str:
    """The judge's column as the terminal shows it, for runs (name, results, max_turns); "" when nothing is judged."""
    view = judge_view(runs)
    if not view:
        return ""
    lines = [f"The judge's column: {'; '.join(map(for_terminal, view['models']))}; {view['judged']} of {view['attempts']} attempts judged"
             f" (prompt {', '.join(map(for_terminal, view['prompts']))})",
             table3_text([], view["max_turns"], [], view["runs"]),
             f"the paper's judge column (GPT-4o reading each trajectory, overall %): {view['paper']}",
             view["agreement_text"]] + [f"by the judge's column, {line}" for line in view["comparisons"]]
    if view["contradictory"]:
        lines.append(f"{view['contradictory']} verdict(s) contradicted by their own reason: each counted as its verdict line gives it")
    if len(view["models"]) > 1 or len(view["prompts"]) > 1:
        lines.append("warning: these verdicts come from more than one judge model or prompt: judge again with --force for one column")
    if view["disagreements"]:
        lines.append("where they disagree:")
        lines += [f"  {item['run'] + ': ' if item['run'] else ''}{for_terminal(item['id'])}{' sample ' + for_terminal(item['sample']) if item['sample'] else ''}: "
                  f"check {'pass' if item['check'] else 'fail'} ({for_terminal(short(item['check_reason'], 120))}) | judge {item['judge'].upper()}"
                  f"{' (contradicted by its own reason)' if item['contradictory'] else ''} "
                  f"({for_terminal(short(item['judge_reason'], 120))})" for item in view["disagreements"]]
    return "\n".join(lines)
