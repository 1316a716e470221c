"""Fidelity to the original PyBench, measured on a saved run of the original harness. Not a CI test: it needs the
user's own checkout and saved run.

    .venv/bin/python tests/benches/bench_fidelity.py CHECKOUT SAVED_RUN [--reuse RUN_DIR ...] [--verdicts FILE]

CHECKOUT is an original PyBench checkout (data/meta/task.json, data/unit_test/tests.py, config/); SAVED_RUN a folder
like the original's unit_test_result/gpt4turbo/, holding trajectory.jsonl and the run's output/. The script

  1. scores the saved run as the original's scorer did: each test_task_<index> in a jail, on the saved output/ folder
     (shared by all tasks, as the original's was), given the saved messages (a record without messages: the scorer's
     one-message stand-in; a task absent from the file: failed untested);
  2. re-executes the saved run with pybench (`--replay SAVED_RUN/trajectory.jsonl`, every reply's code in the
     original's jail environment) and scores it with the same tests (--reuse RUN_DIR ... skips this: runs made before,
     a task's result taken from the last run that has it, so that a run continued with --only completes one);
  3. prints verdict agreement over the tasks whose inputs the checkout holds, observation agreement (identical
     interpreter messages / all; / the cells that can run offline, the figure docs/original.md gives; and / those
     whose saved text does not depend on time, a process id or a memory address), and every difference with its
     likely cause.
"""
import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from kit import harness  # noqa: E402
from kit import original_pybench  # noqa: E402

# Saved output that no re-execution can reproduce: a process id in IPython's cell file names, memory addresses,
# progress bars redrawn with \r, durations and dates.
UNREPRODUCIBLE = {
    "ipykernel cell file (process id)": re.compile(r"/tmp/ipykernel_\d+/"),
    "memory address": re.compile(r"\b0x[0-9a-fA-F]{6,}\b"),
    "progress bar": re.compile(r"\r"),
    "duration or date": re.compile(r"\d+(\.\d+)? ?(seconds|secs?|ms|s)\b|\b20\d\d-\d\d-\d\d[ T]\d\d:\d\d"),
}
# Cells that cannot run offline: the saved text shows the network at work (pip, a download, nltk.download, a web
# request) or the re-executed one finds none, or the cell imports what no offline jail has (docs/original.md, "The
# jail's Python environments").
NETWORK = re.compile(r"Looking in indexes: |Downloading https?://|\[nltk_data\] (Downloading|Error loading)|urlopen error|"
                     r"Max retries exceeded|NewConnectionError|NameResolutionError|Temporary failure in name resolution|"
                     r"Network is unreachable|Connection reset by peer|huggingface\.co")
NOT_OFFLINE_MODULES = {"tensorflow", "keras", "transformers", "datasets", "huggingface_hub", "fbprophet", "torch"}


def original_verdicts(checkout: Path, saved_run: Path, tasks: list, work: Path) -> dict[str, tuple[bool, str]]:
    """The saved run scored as the original's scorer scored it, each test in a check jail of pybench."""
    model = original_pybench.SavedRun(saved_run / "trajectory.jsonl", {task.id for task in original_pybench.load_original(checkout)})
    saved_messages = saved_trajectories(saved_run)
    verdicts = {}
    for number, task in enumerate(tasks, 1):
        record = model.saved.get(task.id)
        if record and not record.tested:
            verdicts[task.id] = (False, record.caveat)
            continue
        trajectory = record.stand_in if record and record.stand_in else saved_messages[task.id]
        run = SimpleNamespace(messages=trajectory, output_dir=saved_run / "output", answer="")
        verdicts[task.id] = original_pybench.run_test(task, run, work, trajectory, saved_run / "output")
        print(f"\rscoring the saved outputs: {number}/{len(tasks)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return verdicts


def saved_trajectories(saved_run: Path) -> dict[str, list]:
    found = {}
    for line in (saved_run / "trajectory.jsonl").read_text(encoding="utf-8").split("\n"):
        if line.strip():
            record = json.loads(line)
            if isinstance(record.get("messages"), list):
                found[str(record["index"])] = record["messages"]
    return found


def interpreter_messages(messages: list) -> list[tuple[int, str]]:
    return [(at, message["content"]) for at, message in enumerate(messages)
            if message.get("role") == "user" and str(message.get("content", "")).startswith(original_pybench.ORIGINAL_INTERPRETER)]


def unreproducible(text: str) -> str:
    return next((kind for kind, pattern in UNREPRODUCIBLE.items() if pattern.search(text)), "")


def not_offline(saved: str, ours: str) -> str:
    """Why a cell cannot run offline, or "" where it can."""
    missing = re.search(r"No module named '([^'.]+)", ours)
    if missing and missing.group(1) in NOT_OFFLINE_MODULES and missing.group(0) not in saved:  # the original lacked it too
        return f"needs {missing.group(1)}, which no offline jail has"
    return "needs the network" if NETWORK.search(saved) or NETWORK.search(ours) else ""


def difference_kind(saved: str, ours: str) -> str:
    """A short name for why two interpreter messages differ."""
    if unreproducible(saved):
        return unreproducible(saved)
    if "ModuleNotFoundError" in ours:
        return "module missing from the jail: " + re.search(r"No module named '([^']+)'", ours).group(1).split(".")[0] \
            if re.search(r"No module named '([^']+)'", ours) else "module missing from the jail"
    if "There are some errors" in ours and "There are some errors" not in saved:
        return "the cell fails here, not in the original: " + ours.split("Error: ", 1)[-1].split("\n", 1)[0]
    if "There are some errors" in saved and "There are some errors" not in ours:
        return "the cell failed in the original, not here: " + saved.split("Error: ", 1)[-1].split("\n", 1)[0]
    number = re.compile(r"-?\d+(\.\d+)?(e[-+]?\d+)?")
    if number.sub("#", saved) == number.sub("#", ours):
        if "memory usage:" in saved and saved.split("memory usage:")[0] == ours.split("memory usage:")[0]:
            return "DataFrame.info()'s memory usage (object sizes of Python 3.10, not 3.12)"
        return "numbers differ (randomness without a seed, or numerics of another build)"
    if saved.rstrip() == ours.rstrip():
        return "trailing whitespace"
    return "other"


def first_difference(saved: str, ours: str) -> str:
    at = next((i for i, (a, b) in enumerate(zip(saved, ours)) if a != b), min(len(saved), len(ours)))
    start = max(0, at - 30)
    return f"saved {saved[start:at + 50]!r} / here {ours[start:at + 50]!r}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("saved_run", type=Path)
    parser.add_argument("--reuse", type=Path, nargs="+", help="pybench run directories of this saved run's replay, made before "
                        "(a task's result from the last that has it)")
    parser.add_argument("--verdicts", type=Path, help="a JSON file of step 1's verdicts: read if it exists, else written")
    parser.add_argument("--only", help="comma-separated task ids (default: all)")
    options = parser.parse_args()
    checkout, saved_run = options.checkout.resolve(), options.saved_run.resolve()
    tasks = original_pybench.load_original(checkout)
    if options.only:
        tasks = [task for task in tasks if task.id in options.only.split(",")]
    work = Path(tempfile.mkdtemp(prefix="pybench-fidelity-"))
    run_dirs = options.reuse or [work / "rerun"]
    run_dir = run_dirs[-1]
    if not options.reuse:
        command = [sys.executable, str(ROOT / "pybench.py"), "--tasks", str(checkout), "--replay", str(saved_run / "trajectory.jsonl"),
                   "--out", str(run_dir), "--cell-timeout", "600"] + (["--only", options.only] if options.only else [])
        print("re-executing:", " ".join(command), file=sys.stderr, flush=True)
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)  # 600 s a cell: the original's nbclient had no limit
    ours = {result.id: result for folder in run_dirs for result in harness.read_results(folder / "results.jsonl")}
    if options.verdicts and options.verdicts.is_file():
        original = {task_id: tuple(verdict) for task_id, verdict in json.loads(options.verdicts.read_text()).items()}
    else:
        original = original_verdicts(checkout, saved_run, tasks, work)
        if options.verdicts:
            options.verdicts.write_text(json.dumps(original))
    saved = saved_trajectories(saved_run)

    held = [task for task in tasks if not any("missing from the checkout" in caveat for caveat in task.caveats)]
    agree = [task for task in held if task.id in ours and ours[task.id].passed == original[task.id][0]]
    print(f"verdict agreement: {len(agree)}/{len(held)} = {100 * len(agree) / max(len(held), 1):.1f}% of the tasks whose inputs "
          f"the checkout holds ({len(tasks) - len(held)} left out for missing inputs)")
    print(f"  original scorer on the saved outputs: {sum(original[t.id][0] for t in tasks)}/{len(tasks)} passed; "
          f"re-executed here: {sum(ours[t.id].passed for t in tasks if t.id in ours)}/{len(tasks)}")
    for task in held:
        if task in agree:
            continue
        result = ours.get(task.id)
        cause = "not re-executed" if result is None else ""
        for (at, theirs), (_, mine) in zip(interpreter_messages(saved.get(task.id, [])), interpreter_messages(result.messages) if result else []):
            if theirs != mine:
                cause = f"cell {at} differs ({difference_kind(theirs, mine)}): {first_difference(theirs, mine)}"
                break
        cause = cause or "same interpreter messages; the output files differ"
        print(f"  {task.id}: original {'pass' if original[task.id][0] else 'fail'} ({original[task.id][1][:80] or 'ok'}), "
              f"here {'pass' if result and result.passed else 'fail'} ({(result.reason if result else '')[:80] or 'ok'}); {cause}")

    counts, kinds, examples = Counter(), Counter(), {}
    held_ids = {task.id for task in held}
    for task_id, messages in saved.items():
        if task_id not in ours or task_id not in held_ids:
            continue
        mine_at, lacking = dict(interpreter_messages(ours[task_id].messages)), ""
        for at, text in interpreter_messages(messages):
            # from a cell that cannot run offline on, the kernel's state is no longer the original's: nor can the later cells
            lacking = lacking or not_offline(text, mine_at.get(at, ""))
            same, offline = mine_at.get(at) == text, not lacking
            counts.update({"all": 1, "identical": same, "offline": offline, "offline identical": offline and same,
                           "reproducible": offline and not unreproducible(text), "reproducible identical": offline and same and not unreproducible(text)})
            if not same:
                kind = lacking or ("no such message here (the re-executed run ended earlier)" if at not in mine_at
                                                                  else difference_kind(text, mine_at[at]))
                kinds[kind] += 1
                examples.setdefault(kind, f"{task_id} message {at}: " + (first_difference(text, mine_at[at]) if at in mine_at else ""))
    share = lambda part, whole: f"{counts[part]}/{counts[whole]} = {100 * counts[part] / max(counts[whole], 1):.1f}%"  # noqa: E731
    print(f"observation agreement (tasks whose inputs the checkout holds): {share('identical', 'all')} identical interpreter messages; "
          f"of the cells that can run offline: {share('offline identical', 'offline')}; of those whose saved text is reproducible "
          f"at all (no process id, address, progress bar or time): {share('reproducible identical', 'reproducible')}")
    for kind, count in kinds.most_common():
        print(f"  {count:4d}  {kind}\n        e.g. {examples[kind][:300]}")
    print(f"(re-executed run: {', '.join(map(str, run_dirs))})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
