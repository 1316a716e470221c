"""ML-Bench: the kit's static verdicts against ML-Bench's own functions, and the time of a whole re-score.

    .venv/bin/python tests/benches/bench_mlbench.py --split SPLIT.parquet --mlbench-checkout ML-Bench [--answers FILE.jsonl]

ML-Bench's validate_arguments, validate_output_type and assess_output are read from the user's checkout
(utils/exec.py) and run here as they stand, with two changes only: their `subprocess.run(['echo', ...])` progress lines
are silenced, and execute_output (the repository run) is taken as passing, so that assess_output gives ML-Bench's
static pass@1/2/5. Its code-block extraction, postprocess_output, is read from scripts/api/litellm_api.py the same way.
(Importing those files whole would need `datasets`, `psutil` and `litellm`, which the kit does not install.)

Answer sets, each written in ML-Bench's output format (5 samples per record) and re-scored by `pybench.py --replay`:
the split's own reference outputs; an answers file of another project's format ({"question_id": row, "answer": text},
where row is the record's place in the split), as it stands and as ML-Bench's postprocess_output cuts it; and answers
mutated at random from both (a value dropped or its case changed, '.py ' and '.sh ' made or broken, fences, blanks).
Prints, per set, how many samples and records the two disagree on (0 is the goal) and the seconds of the re-score.

On a real repository (not in CI; the repository and its environment are the user's):

    .venv/bin/python tests/benches/bench_mlbench.py --split SPLIT --repos DIR --github-id 9 \
        --repo-python External-Attention-pytorch=ENV/bin/python

runs the records of that repository with the split's reference outputs as the answers (ML-Bench's output format, one
sample executed each): static, then --execute, and prints per record the static verdict, ours, ML-Bench's count and the
seconds, and the totals.
"""
import argparse
import ast
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def functions_from(path: Path, names: set[str], namespace: dict) -> dict:
    """Define the named top-level functions of a file (not run as a whole) in namespace."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    chosen = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name in names]
    missing = names - {node.name for node in chosen}
    if missing:
        sys.exit(f"{path} has no {', '.join(sorted(missing))}")
    exec(compile(ast.Module(body=chosen, type_ignores=[]), str(path), "exec"), namespace)
    return namespace


def mlbench_functions(checkout: Path) -> dict:
    import re
    import typing

    class Quiet:  # their progress lines are `subprocess.run(['echo', ...])`
        @staticmethod
        def run(*args, **kwargs):
            return None

    namespace = {"subprocess": Quiet, "re": re, **{name: getattr(typing, name) for name in ("List", "Dict", "Tuple", "Any", "Optional")}}
    functions_from(checkout / "utils/exec.py", {"validate_arguments", "validate_output_type", "assess_output"}, namespace)
    namespace["execute_output"] = lambda *args, **kwargs: True  # static: the repository run is not made
    functions_from(checkout / "scripts/api/litellm_api.py", {"postprocess_output"}, namespace)
    return namespace


def mutate(answer: str, arguments: dict, rng: random.Random) -> str:
    values = [str(value) for value in arguments.values() if str(value)]
    choice = rng.randrange(12)
    if choice == 0 and values:  # drop one value
        value = rng.choice(values)
        at = answer.lower().find(value.lower())
        return answer if at < 0 else answer[:at] + answer[at + len(value):]
    if choice == 1:
        return answer.upper()
    if choice == 2:
        return answer.swapcase()
    if choice == 3:
        return answer.replace(".py ", ".py\n")
    if choice == 4:
        return answer.replace(".sh ", ".sh\t")
    if choice == 5:
        return answer + " && bash run.sh --quiet"
    if choice == 6:
        return f"import subprocess\nsubprocess.run({answer!r}, shell=True)"
    if choice == 7:
        return f"```bash\n{answer}\n```"
    if choice == 8:
        return ""
    if choice == 9 and values:  # a value with its case changed
        value = rng.choice(values)
        return answer.replace(value, value.swapcase())
    if choice == 10 and answer:  # a character cut at random
        at = rng.randrange(len(answer))
        return answer[:at] + answer[at + 1:]
    return answer.replace("python ", "python3 ")


def score_with_kit(split: Path, outputs: list[dict], scratch: Path, name: str) -> tuple[list[dict], float]:
    replay = scratch / f"{name}.jsonl"
    replay.write_text("".join(json.dumps(record) + "\n" for record in outputs))
    out = scratch / f"run-{name}"
    started = time.perf_counter()
    finished = subprocess.run([sys.executable, str(ROOT / "pybench.py"), "--tasks", str(split), "--replay", str(replay), "--out", str(out)],
                              capture_output=True, text=True, cwd=ROOT)
    seconds = time.perf_counter() - started
    if finished.returncode != 0:
        sys.exit(f"pybench.py failed on {name}: {finished.stderr[-2000:]}")
    lines = (out / "results.jsonl").read_text().split("\n")[:-1]
    return [json.loads(line) for line in lines], seconds


def compare(split: Path, records: list[dict], outputs: list[dict], ml: dict, scratch: Path, name: str) -> None:
    results, seconds = score_with_kit(split, outputs, scratch, name)
    kit = {(result["id"], result["sample"]): result for result in results}
    sample_disagreements = task_disagreements = 0
    mlbench_pass = [0, 0, 0]
    for record, line in zip(records, outputs):
        task_id = f"{record['github_id']}-{record['id']}"
        for sample, answer in enumerate(line["output"]):
            theirs = ml["validate_arguments"](answer, record["arguments"]) and ml["validate_output_type"](answer, record["type"])
            sample_disagreements += bool(theirs) != bool(kit[task_id, sample]["mlbench"]["static"])
        theirs = ml["assess_output"](line["output"], "", "", record["arguments"], record["type"], record["github_id"], record["id"])
        ours = tuple(int(any(kit[task_id, s]["mlbench"]["mlbench_passed"] for s in range(k))) for k in (1, 2, 5))
        task_disagreements += tuple(theirs) != ours
        mlbench_pass = [a + b for a, b in zip(mlbench_pass, theirs)]
    samples = sum(len(line["output"]) for line in outputs)
    print(f"{name:28} {len(outputs)} records x 5: ML-Bench pass@1/2/5 = {'/'.join(map(str, mlbench_pass))} of {len(outputs)}; "
          f"disagreements: {sample_disagreements} of {samples} samples, {task_disagreements} of {len(outputs)} records; "
          f"kit re-score {seconds:.2f} s")


def real_repository(options) -> None:
    from kit import mlbench

    records = [record for _, record in mlbench.read_records(options.split.resolve()) if record["github_id"] == options.github_id]
    if not records:
        sys.exit(f"{options.split} has no record with github_id {options.github_id}")
    with tempfile.TemporaryDirectory(prefix="bench-mlbench-repo-") as scratch:
        scratch = Path(scratch)
        split = scratch / "split.jsonl"
        split.write_text("".join(json.dumps(record) + "\n" for record in records))
        replay = scratch / "reference.jsonl"
        replay.write_text("".join(json.dumps({"github_id": r["github_id"], "id": r["id"], "output": [r["output"]] * 5}) + "\n"
                                  for r in records))
        runs, seconds = {}, {}
        extra = {"static": [], "executed": ["--samples", "1", "--execute", "--repos", str(options.repos),
                                            *[flag for given in options.repo_python for flag in ("--repo-python", given)]]}
        for name, flags in extra.items():
            started = time.perf_counter()
            finished = subprocess.run([sys.executable, str(ROOT / "pybench.py"), "--tasks", str(split), "--replay", str(replay),
                                       "--out", str(scratch / name), "--no-report", *flags], capture_output=True, text=True, cwd=ROOT)
            seconds[name] = time.perf_counter() - started
            if finished.returncode != 0:
                sys.exit(f"pybench.py failed ({name}): {finished.stderr[-2000:]}")
            runs[name] = {(r["id"], r["sample"]): r for r in map(json.loads, (scratch / name / "results.jsonl").read_text().splitlines())}
    mark = {True: "pass", False: "fail"}
    print(f"{'record':10} {'static':6} {'ours':5} {'ML-Bench':8} {'seconds':>7}  outcome (ours / ML-Bench's)")
    for record in records:
        task_id = f"{record['github_id']}-{record['id']}"
        static, executed = runs["static"][task_id, 0], runs["executed"][task_id, 0]
        facts = executed["mlbench"]
        print(f"{task_id:10} {mark[static['passed']]:6} {mark[executed['passed']]:5} {mark[facts['mlbench_passed']]:8} "
              f"{executed['seconds']:7.1f}  {facts.get('outcome', 'not run')} / {facts.get('mlbench_outcome') or 'not run'}")
    count = lambda name, key: sum(bool(key(r)) for r in runs[name].values() if r["sample"] == 0)  # noqa: E731
    print(f"{len(records)} records: static pass {count('static', lambda r: r['passed'])}, executed ours "
          f"{count('executed', lambda r: r['passed'])}, executed ML-Bench's count {count('executed', lambda r: r['mlbench']['mlbench_passed'])}; "
          f"static {seconds['static']:.1f} s, executed {seconds['executed']:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", type=Path, required=True)
    parser.add_argument("--mlbench-checkout", type=Path)
    parser.add_argument("--repos", type=Path, help="with --github-id: run that repository's records (see above)")
    parser.add_argument("--github-id", type=int)
    parser.add_argument("--repo-python", action="append", default=[], metavar="NAME=PATH")
    parser.add_argument("--answers", type=Path, help='a JSONL of {"question_id": row, "answer": text}')
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args()
    if options.repos or options.github_id is not None:
        if not (options.repos and options.github_id is not None):
            sys.exit("--repos and --github-id go together")
        return real_repository(options)
    if not options.mlbench_checkout:
        sys.exit("--mlbench-checkout is needed to compare with ML-Bench's evaluator")
    from kit import mlbench

    records = [record for _, record in mlbench.read_records(options.split.resolve())]
    ml = mlbench_functions(options.mlbench_checkout)
    rng = random.Random(options.seed)
    sets = {"reference": [[record["output"]] * 5 for record in records]}
    if options.answers:
        answers = {int(line["question_id"]): line["answer"] for line in map(json.loads, options.answers.read_text().splitlines()) if line}
        raw = [answers.get(row, "") for row in range(len(records))]
        sets["answers as they stand"] = [[text] * 5 for text in raw]
        sets["answers, code cut out"] = [[ml["postprocess_output"](text)] * 5 for text in raw]
        extraction = sum(ml["postprocess_output"](text) != mlbench.extract_answer(text) for text in raw)
        print(f"code-block extraction: kit and postprocess_output differ on {extraction} of {len(raw)} raw answers")
    else:
        raw = [record["output"] for record in records]
    sets["mutated references"] = [[mutate(record["output"], mlbench.parse_arguments(record["arguments"], ""), rng) for _ in range(5)]
                                  for record in records]
    sets["mutated answers"] = [[mutate(text, mlbench.parse_arguments(record["arguments"], ""), rng) for _ in range(5)]
                               for text, record in zip(raw, records)]
    fenced = [f"Here it is:\n{mutate(text, {}, rng)}\n" for text in raw for _ in range(2)]
    print(f"code-block extraction on mutated fenced replies: kit and postprocess_output differ on "
          f"{sum(ml['postprocess_output'](text) != mlbench.extract_answer(text) for text in fenced)} of {len(fenced)}")
    with tempfile.TemporaryDirectory(prefix="bench-mlbench-") as scratch:
        for name, samples in sets.items():
            outputs = [{"github_id": record["github_id"], "id": record["id"], "output": list(texts)} for record, texts in zip(records, samples)]
            compare(options.split.resolve(), records, outputs, ml, Path(scratch), name)


if __name__ == "__main__":
    main()
