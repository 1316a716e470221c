"""slurm: a run as a Slurm array job, one shard per element, and a merge job that waits for them all.

`pybench.py slurm --shards N [run flags] [--dry-run] [-- sbatch options]` writes and submits the array (element K:
`--shard K/N` into DIR/shard-K; on Slurm's early USR1 it stops as Ctrl-C does and requeues itself) and the merge
(`report` over the shards, after them all). Typed again, it submits only the shards no element is queued for, and a
merge after them all; DIR/slurm/jobs.jsonl records each submission. docs/runs.md has the whole story.
"""

import hashlib
import json
import math
import os
import pwd
import signal
import subprocess
import sys
import time
from pathlib import Path

from kit import engine
from kit.harness import UsageError, append_line, jsonl_records
from kit.settings import OneLineParser, Settings
from kit.untrusted import for_batch, for_shell

__all__ = ["slurm_command", "resubmission", "job_facts", "requeue_self"]

GRACE_SECONDS = 120          # --signal=B:USR1@GRACE: time to stop the attempts in flight and requeue, before Slurm's SIGTERM
HARNESS_GIB = 1.0            # the harness itself (Python, the suite, the checks' records) beside its jails and the model
MODEL_OVERHEAD = 1.2         # a model's memory against its file's size (its KV caches and buffers)
MERGE_RESOURCES = ("--cpus-per-task=1", "--mem=2G")  # the report: plots and pages of every attempt

# sbatch options that size or shape the shards' elements (merge_options)
SHARD_ONLY = {"--mem", "--mem-per-cpu", "--mem-per-gpu", "--cpus-per-task", "-c", "--gres", "--gpus", "-G", "--gpus-per-task",
              "--gpus-per-node", "--array", "-a", "--signal", "--ntasks", "-n", "--output", "-o", "--error", "-e", "--job-name", "-J"}


def slurm_command(argv: list[str], parse_run_args, default_model, check_model, pybench: Path) -> int:
    """pybench.py slurm: write the scripts, submit them (or print them with --dry-run), say how to watch and resume.
    The model is checked as a run checks it (check_model: one line, exit 2), and the scripts and commands are made
    (through the door), before anything is written or submitted."""
    ours, extra = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    parser = OneLineParser(prog="pybench.py slurm", description="Run the kit as a Slurm array job: one shard per element, "
                                     "requeued on Slurm's early signal, then a job merging the shards' report. Any run flag may follow; "
                                     "sbatch options (--partition, --account, --time, --qos, ...) go after `--` and win over the kit's.",
                                     usage="pybench.py slurm --shards N [run flags] [--dry-run] [-- sbatch options]", allow_abbrev=False)
    parser.add_argument("--shards", type=int, required=True, help="array elements, each running every N-th task")
    parser.add_argument("--dry-run", action="store_true", help="print the scripts and the sbatch commands; submit and write nothing")
    options, run_flags = parser.parse_known_args(ours)
    if options.shards < 1:
        parser.error("--shards must be at least 1")
    settings = parse_run_args(run_flags)
    if settings.shard:
        raise UsageError("pybench.py slurm: leave out --shard, each array element gets its own (--shards N sets how many)")
    model = None if settings.replay else settings.model or default_model()
    if model:
        check_model(model)
    run_dir = (settings.out or default_run_dir(settings, run_flags, options.shards, pybench.parent)).absolute()
    folder = run_dir / "slurm"
    scripts = {folder / "shards.sbatch": array_script(settings, model, without_out(run_flags), run_dir, options.shards, pybench),
               folder / "merge.sbatch": merge_script(run_dir, options.shards, pybench)}
    submissions = [record for _, record in jsonl_records(folder / "jobs.jsonl", finished_only=True)]
    shards, wait_for, cancel = resubmission(submissions, still_queued(submissions), options.shards)
    if not shards:
        print(f"nothing to submit: every shard of {run_dir} has an element pending, running or ending (job(s) {', '.join(wait_for)}); "
              f"run the same command again once one has ended without finishing its shard\nwatch:   squeue -j {','.join(wait_for)}")
        return 0
    subset = [] if len(shards) == options.shards else [f"--array={','.join(map(str, shards))}"]
    shards_command = ["sbatch", "--parsable", *extra, *subset, str(folder / "shards.sbatch")]
    merge_extra = merge_options(extra)
    commands = "\n".join([shell_line(shards_command), shell_line(merge_command("ARRAY_JOB_ID", wait_for, merge_extra, folder)),
                          *(shell_line(["scancel", job]) for job in cancel)])
    resume = shell_line([python_of(pybench), pybench, "slurm", *ours, *([] if settings.out else ["--out", run_dir]), *(["--", *extra] if extra else [])])
    if options.dry_run:
        for path, text in scripts.items():
            print(f"# {path}\n{text}")
        print(commands)
        return 0
    folder.mkdir(parents=True, exist_ok=True)
    for path, text in scripts.items():
        path.write_text(text)
    array_id = sbatch(shards_command)
    merge_id = sbatch(merge_command(array_id, wait_for, merge_extra, folder))
    if cancel:
        subprocess.run(["scancel", *cancel], capture_output=True)
    submission = {"array": array_id, "shards": shards, "of": options.shards, "merge": merge_id, "waits_for": wait_for,
                  "cancelled": cancel, "submitted": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    append_line(folder / "jobs.jsonl", submission)
    print(submitted_note(submission, run_dir, resume), flush=True)
    return 0


def merge_command(array_id: str, wait_for: list[str], merge_extra: list[str], folder: Path) -> list[str]:
    """sbatch of the merge: after every element of the new array and of the earlier jobs still queued has ended."""
    return ["sbatch", "--parsable", f"--dependency=afterany:{':'.join([array_id, *wait_for])}", *merge_extra, str(folder / "merge.sbatch")]


def submitted_note(submission: dict, run_dir: Path, resume: str) -> str:
    """What was submitted, how to watch it (the job ids are Slurm's), and the command that resumes (the same one)."""
    array_id, merge_id, shards, wait_for = submission["array"], submission["merge"], submission["shards"], submission["waits_for"]
    others = [str(k) for k in range(1, submission["of"] + 1) if k not in shards]
    earlier = f"; shard(s) {', '.join(others)} still queued in job(s) {', '.join(wait_for)}" if others else ""
    replaced = f"; it replaces merge job {', '.join(submission['cancelled'])}, cancelled" if submission["cancelled"] else ""
    jobs = ",".join([array_id, merge_id, *wait_for])
    return (f"submitted: array job {array_id} (shard(s) {', '.join(map(str, shards))} of {submission['of']} into {run_dir}/shard-K{earlier}), "
            f"merge job {merge_id} (the report into {run_dir / 'report'} once every shard has ended{replaced})\n"
            f"watch:   squeue -j {jobs}\n"
            f"         sacct -j {jobs} --format=JobID,State,ExitCode,Elapsed,MaxRSS\n"
            f"logs:    {run_dir / 'slurm'}/shard-K.log, {run_dir / 'slurm'}/merge.log\n"
            f"resume:  {resume}\n"
            "         (after an element failed, was killed or cancelled, even while others still run: it submits the shards\n"
            "         no element is pending or running for, each resumes where it stopped, and a merge that waits for them all)")


# --- a submission after earlier ones (a resume): only the shards no element is queued for, one merge after them all --

def still_queued(submissions: list[dict]) -> dict[str, list[tuple[str, str]]]:
    """Which of those jobs squeue still lists (pending, running, requeued, ending): {job id: [(array task id or
    "N/A", state), ...]}, an array's elements one by one."""
    if not submissions:
        return {}
    ours = {str(record[key]) for record in submissions for key in ("array", "merge")}
    try:
        listed = subprocess.run(["squeue", f"--user={pwd.getpwuid(os.getuid()).pw_name}", "--noheader", "--array", "--format=%F %K %T"],
                                capture_output=True, text=True)  # --user, not --me: Slurm before 20.11 has no --me
    except FileNotFoundError:
        raise UsageError("pybench.py slurm: squeue is not on PATH: run it where Slurm's clients are") from None
    if listed.returncode != 0:
        raise UsageError(f"pybench.py slurm: squeue failed ({(listed.stderr or listed.stdout).strip()}): it tells which shards "
                         "of the earlier submission are still queued; try again when Slurm answers")
    queued: dict[str, list[tuple[str, str]]] = {}
    for job, task, state in (line.split() for line in listed.stdout.splitlines() if line.strip()):
        if job in ours:
            queued.setdefault(job, []).append((task, state))
    return queued


def resubmission(submissions: list[dict], queued: dict[str, list[tuple[str, str]]], shards: int) -> tuple[list[int], list[str], list[str]]:
    """What to submit beside the earlier jobs still queued: the shards no element is pending or running for (all of
    them the first time), the earlier jobs the new merge waits for as well (their arrays, a merge already running),
    and the earlier merges still waiting, to cancel (they would report before the new elements end)."""
    arrays = [str(record["array"]) for record in submissions if str(record["array"]) in queued]
    merges = [str(record["merge"]) for record in submissions if str(record["merge"]) in queued]
    busy = {int(task) for job in arrays for task, _ in queued[job] if task.isdigit()}
    cancel = [job for job in merges if all(state == "PENDING" for _, state in queued[job])]
    return [k for k in range(1, shards + 1) if k not in busy], arrays + [job for job in merges if job not in cancel], cancel


def without_out(run_flags: list[str]) -> list[str]:
    """The run flags less --out (each element gets its shard's folder); they parsed, so no value is "--out"."""
    return [flag for before, flag in zip(["", *run_flags], run_flags)
            if "--out" not in (before, flag) and not flag.startswith("--out=")]


def default_run_dir(settings: Settings, run_flags: list[str], shards: int, root: Path) -> Path:
    """runs/slurm-<source>-<digest of the flags and the shard count>: the same command finds the same folder."""
    source = settings.replay.stem if settings.replay else (settings.model.stem if settings.model else "default")
    digest = hashlib.sha256(json.dumps([run_flags, shards]).encode()).hexdigest()[:12]
    return root / "runs" / f"slurm-{source}-{digest}"


def array_script(settings: Settings, model: Path | None, run_flags: list[str], run_dir: Path, shards: int, pybench: Path) -> str:
    """The array job: one element per shard, its resources from the run's flags and the model (None: a replay), the
    kit exec'd so that Slurm's signals reach it. Its log files' pattern holds the run folder with its % doubled
    (for_batch); the job's name and --chdir, where Slurm expands no pattern, hold the names as they are, once
    for_batch has checked them."""
    cpus = settings.threads or (int(settings.parallel) if settings.parallel.isdigit() else (1 if settings.replay else 4))
    at_once = int(settings.parallel) if settings.parallel.isdigit() else cpus
    model_gib = model.stat().st_size / 2**30 * MODEL_OVERHEAD if model else 0.0
    memory = math.ceil(at_once * (settings.memory + 0.25) + model_gib + HARNESS_GIB)
    options = [f"--job-name=pybench-{run_dir.name}", f"--array=1-{shards}", f"--cpus-per-task={cpus}", f"--mem={memory}G",
               f"--output={for_batch(run_dir, 'the run folder')}/slurm/shard-%a.log", "--open-mode=append", "--requeue",
               f"--signal=B:USR1@{GRACE_SECONDS}", f"--chdir={for_batch(Path.cwd(), 'the working folder', pattern=False)}"]
    if not settings.replay and settings.n_gpu_layers != 0 and engine.gpu_backends():  # a CPU build never asks for a GPU
        options.append("--gres=gpu:1")
    command = (shell_line([python_of(pybench), pybench, *run_flags, "--no-report", "--shard"]) + f' "$SLURM_ARRAY_TASK_ID/{shards}" --out '
               + for_shell(f"{run_dir}/shard-") + '"$SLURM_ARRAY_TASK_ID"')
    return batch_script(options, "# one shard; on USR1 the kit stops as on Ctrl-C, keeps its finished attempts and requeues this element", command)


def merge_script(run_dir: Path, shards: int, pybench: Path) -> str:
    """The merge job: `report` over every shard's folder, into DIR/report."""
    options = [f"--job-name=pybench-merge-{run_dir.name}", *MERGE_RESOURCES, f"--output={for_batch(run_dir, 'the run folder')}/slurm/merge.log",
               "--open-mode=append"]
    shard_dirs = [run_dir / f"shard-{number}" for number in range(1, shards + 1)]
    return batch_script(options, "# the shards as one run: Table 3 and the HTML report",
                        shell_line([python_of(pybench), pybench, "report", *shard_dirs, "--out", run_dir / "report"]))


def python_of(pybench: Path) -> Path:
    """The checkout's venv Python (the interpreter running this where there is none beside pybench.py)."""
    venv = pybench.parent / ".venv" / "bin" / "python"
    return venv if venv.exists() else Path(sys.executable)


def shell_line(words: list) -> str:
    """A command as the user pastes it, or as a script runs it: each word through the door (untrusted.for_shell)."""
    return " ".join(for_shell(word) for word in words)


def batch_script(options: list[str], comment: str, command: str) -> str:
    """A batch script: its #SBATCH lines (sbatch options on the command line win over them) and the command, exec'd."""
    return "\n".join(["#!/bin/bash", *(f"#SBATCH {option}" for option in options), comment, f"exec {command}", ""])


def merge_options(extra: list[str]) -> list[str]:
    """The user's sbatch options as written (`-p gpu`, `--time 1:00:00`, `--mem=8G`, `-c4`), less those that size or
    shape the shards' elements, each with its values: the merge job keeps its own in their place."""
    kept, keep = [], True
    for word in extra:
        if word.startswith("-"):
            keep = (word.split("=", 1)[0] if word.startswith("--") else word[:2]) not in SHARD_ONLY
        if keep:
            kept.append(word)
    return kept


def sbatch(command: list[str]) -> str:
    """Submit; the job id (sbatch --parsable prints `ID` or `ID;CLUSTER`)."""
    try:
        done = subprocess.run(command, capture_output=True, text=True)
    except FileNotFoundError:
        raise UsageError("pybench.py slurm: sbatch is not on PATH: run it where Slurm's clients are (or --dry-run to see the scripts)") from None
    if done.returncode != 0:
        raise UsageError(f"{shell_line(command)} failed: {(done.stderr or done.stdout).strip()}")
    return done.stdout.strip().split(";")[0]


# --- inside an element: who we are, and the requeue on Slurm's early signal -----------------------------------------

def job_facts(environ=os.environ) -> dict | None:
    """For the manifest: the Slurm job this process runs in (array job and task ids, restarts), None outside one."""
    if "SLURM_JOB_ID" not in environ:
        return None
    names = {"job_id": "SLURM_JOB_ID", "array_job_id": "SLURM_ARRAY_JOB_ID", "array_task_id": "SLURM_ARRAY_TASK_ID",
             "restart_count": "SLURM_RESTART_COUNT", "cluster": "SLURM_CLUSTER_NAME", "node": "SLURMD_NODENAME"}
    return {key: environ[name] for key, name in names.items() if name in environ}


def requeue_self(environ=os.environ) -> None:
    """Ask Slurm to requeue the element (or job) this process runs in; said on stderr either way."""
    if "SLURM_JOB_ID" not in environ:
        print("USR1 outside a Slurm job: stopped, nothing to requeue", file=sys.stderr)
        return
    job = (f"{environ['SLURM_ARRAY_JOB_ID']}_{environ['SLURM_ARRAY_TASK_ID']}" if "SLURM_ARRAY_TASK_ID" in environ else environ["SLURM_JOB_ID"])
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the requeue ends this job with SIGTERM, maybe before scontrol answers
    done = subprocess.run(["scontrol", "requeue", job], capture_output=True, text=True)
    print(f"requeue of {job}: " + ("asked; the element resumes its shard when Slurm starts it again" if done.returncode == 0
                                    else f"refused ({(done.stderr or done.stdout).strip()}); submit the same command again to resume"),
          file=sys.stderr, flush=True)
