"""`pybench.py slurm` on a real single-node Slurm 22.05 started by the test (tests/slurm_cluster.py): a 4-shard array
with one element preempted (Slurm's early signal, USR1) mid-run, requeued by the kit itself and resumed, another
killed with SIGKILL and resumed by the same command typed again, merged by the dependent job into what a one-process
run gives; and a shard whose job --mem is smaller than what a cell allocates, the cell killed in its jail.
The fast tests: the scripts as --dry-run prints them, the jails' cgroups inside the kit's own, Slurm's CPU counts."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import ROOT, code, write_jsonl
import slurm_cluster

@pytest.fixture(scope="module")
def cluster():
    why = slurm_cluster.why_not_here()
    if why:
        pytest.skip(why)
    folder = Path(tempfile.mkdtemp(prefix="pybench-slurm-"))  # not under pytest's folders: munged (user munge) must reach its own
    folder.chmod(0o755)
    began = time.monotonic()
    try:
        environment = slurm_cluster.start(folder)
        print(f"cluster up in {time.monotonic() - began:.1f} s")
        yield environment
    finally:
        slurm_cluster.stop(folder)
        shutil.rmtree(folder, ignore_errors=True)


def submit(environment: dict, *args) -> tuple[str, str]:
    """pybench.py slurm as a user types it; the array's and the merge's job ids."""
    done = subprocess.run([sys.executable, str(ROOT / "pybench.py"), "slurm", *map(str, args)], capture_output=True, text=True,
                          env=environment, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    array, merge = re.search(r"array job (\d+) .*? merge job (\d+)", done.stdout).groups()
    return array, merge


def state(environment: dict, job: str) -> str:
    """A job's state (an array's first element's for its id), as slurmctld has it."""
    shown = subprocess.run(["scontrol", "-o", "show", "job", job], capture_output=True, text=True, env=environment).stdout
    return (re.search(r"JobState=(\S+)", shown) or [None, "GONE"])[1]


def batch_pid(environment: dict, shard: Path) -> int:
    """The element's batch process (the kit, exec'd by its script), found through the job id its manifest records.
    (scancel --signal retries while the element is being requeued, and so would signal its next run too.)"""
    job = json.loads((shard / "manifest.json").read_text())["slurm"]["job_id"]
    listed = subprocess.run(["scontrol", "listpids", job], capture_output=True, text=True, env=environment, check=True).stdout
    return next(int(pid) for pid, _, step, local, *_ in (line.split() for line in listed.splitlines()[1:]) if step == "batch" and local == "0")


def wait_for(condition, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)
    return value


def result_lines(run_dir: Path) -> list[dict]:
    path = run_dir / "results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def one_process_run(tmp_path):
    """The same replay in one process (no shards, no Slurm) into tmp_path/one, started beside the cluster's work: the
    merged result's yardstick. Stopped if the test ends first."""
    with open(tmp_path / "one.log", "w") as log:
        process = subprocess.Popen([sys.executable, str(ROOT / "pybench.py"), "--replay", "checks/reference.jsonl", "--limit", "16",
                                    "--no-report", "--out", str(tmp_path / "one")], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    yield process
    if process.poll() is None:
        process.kill()
        process.wait()


def merged_lines(run_dirs: list[Path]) -> list[dict]:
    """The attempts as the merge job's report reads them (merge_runs), each a results.jsonl line less its `seconds`:
    the one field that measures this machine's speed rather than the attempt (ids, verdicts, reasons, turns, cells,
    restarts, messages, code and printed output are the replay's and the checks', the same anywhere)."""
    from kit.report import merge_runs

    return [{key: value for key, value in result.to_json().items() if key != "seconds"} for result in merge_runs(run_dirs)[0]]


@pytest.mark.slow
def test_array_with_a_requeued_and_a_killed_element_merges_to_the_one_process_run(cluster, one_process_run, tmp_path):
    """Element 1 gets Slurm's early signal (USR1) mid-run and requeues itself; element 2 is killed with SIGKILL mid-run
    (a crash, the OOM killer; a half-written result line added) and resumed by typing the same command again while the
    others still run: it submits shard 2 alone and a merge that replaces the first. The merged result equals a
    one-process run's, line by line."""
    out = tmp_path / "run"
    command = ("--shards", 4, "--replay", "checks/reference.jsonl", "--limit", 16, "--out", out, "--", "--cpus-per-task=1")
    began = time.monotonic()
    array, merge = submit(cluster, *command)
    wait_for(lambda: result_lines(out / "shard-1"), 120, "shard 1's first result")
    signalled = time.monotonic()
    os.kill(batch_pid(cluster, out / "shard-1"), signal.SIGUSR1)  # as slurmstepd does at --signal=B:USR1@GRACE
    wait_for(lambda: result_lines(out / "shard-2"), 120, "shard 2's first result")
    os.kill(batch_pid(cluster, out / "shard-2"), signal.SIGKILL)
    killed, killed_at, before_kill = time.monotonic(), time.time(), len(result_lines(out / "shard-2"))
    wait_for(lambda: state(cluster, f"{array}_2") == "FAILED", 60, "the killed element to leave the queue")
    failed = time.monotonic()
    with open(out / "shard-2" / "results.jsonl", "a") as results:  # what a kill in the middle of a result's write leaves
        first = (out / "shard-2" / "results.jsonl").read_text().split("\n")[0]
        results.write(first[:len(first) // 2])
    again, merge_again = submit(cluster, *command)  # the resume command `slurm` printed: the same one
    wait_for(lambda: state(cluster, merge_again) in ("COMPLETED", "FAILED", "CANCELLED"), 240, "the second merge job")
    print(f"array and merges: {time.monotonic() - began:.1f} s (kill to second merge done: {time.monotonic() - killed:.1f} s)")
    assert state(cluster, merge_again) == "COMPLETED", (out / "slurm" / "merge.log").read_text()
    assert state(cluster, merge) == "CANCELLED"  # it would have reported before the resubmitted shard ended
    submissions = [json.loads(line) for line in (out / "slurm" / "jobs.jsonl").read_text().splitlines()]
    assert [record["shards"] for record in submissions] == [[1, 2, 3, 4], [2]] and submissions[1]["cancelled"] == [merge], submissions
    assert array in submissions[1]["waits_for"], submissions  # elements 1, 3 or 4 were still queued: the new merge waited for them
    results = [line for shard in range(1, 5) for line in result_lines(out / f"shard-{shard}")]
    assert len(results) == 16 and len({line["id"] for line in results}) == 16, sorted(line["id"] for line in results)
    assert all(line["passed"] for line in results), [line["id"] for line in results if not line["passed"]]
    assert (out / "report" / "report.html").is_file()
    log = (out / "slurm" / "shard-1.log").read_text()
    assert "interrupted:" in log and f"requeue of {array}_1: asked" in log, log
    manifest = json.loads((out / "shard-1" / "manifest.json").read_text())
    assert manifest["slurm"]["array_job_id"] == array and manifest["slurm"]["array_task_id"] == "1"
    assert manifest["resumed"] and manifest["slurm"]["restart_count"] == "1", manifest
    manifest = json.loads((out / "shard-2" / "manifest.json").read_text())
    assert manifest["slurm"]["array_job_id"] == again and manifest["slurm"]["array_task_id"] == "2" and manifest["resumed"], manifest
    assert 1 <= before_kill < 4 and len(result_lines(out / "shard-2")) == 4
    element = subprocess.run(["scontrol", "-o", "show", "job", f"{again}_2"], capture_output=True, text=True, env=cluster).stdout
    moments = {name: time.mktime(time.strptime(moment, "%Y-%m-%dT%H:%M:%S")) - killed_at
               for name, moment in re.findall(r"(StartTime|EndTime)=(\S+)", element)}
    print(f"SIGKILL of element 2: FAILED after {failed - killed:.1f} s, its resubmitted element started after {moments['StartTime']:.0f} s "
          f"(a free CPU) and was done after {moments['EndTime']:.0f} s")
    job = subprocess.run(["scontrol", "-o", "show", "job", f"{array}_1"], capture_output=True, text=True, env=cluster).stdout
    times = dict(re.findall(r"(SubmitTime|EligibleTime|StartTime)=(\S+)", job))
    print(f"requeue: signalled at {signalled - began:.1f} s; requeued at {times['SubmitTime']}, eligible at {times['EligibleTime']}, "
          f"started again at {times['StartTime']}")
    assert one_process_run.wait(timeout=240) == 0, (tmp_path / "one.log").read_text()
    merged, alone = merged_lines([out / f"shard-{shard}" for shard in range(1, 5)]), merged_lines([tmp_path / "one"])
    assert len(merged) == 16 and [line["id"] for line in merged] == [line["id"] for line in alone]
    for sharded, single in zip(merged, alone):
        assert sharded == single, sharded["id"]


@pytest.mark.slow
def test_a_cell_over_the_jobs_memory_is_killed_in_its_jail(cluster, tmp_path):
    """The job asks for 600 MiB, the jail allows 4 GiB: the cell (growing 50 MiB a step) dies at the job's limit,
    inside its jail, and the kit goes on to write its result."""
    task_id = json.loads((ROOT / "tasks.jsonl").read_text().splitlines()[0])["id"]
    grow = "blocks = []\nfor step in range(1, 31):\n    blocks.append(bytearray(50 * 2**20))\n    print(step * 50, 'MiB', flush=True)"
    replay = write_jsonl(tmp_path / "grow.jsonl", [{"id": task_id, "replies": [code(grow), "Done."]}])
    out = tmp_path / "run"
    array, _ = submit(cluster, "--shards", 1, "--replay", replay, "--only", task_id, "--memory", 4, "--out", out, "--",
                      "--cpus-per-task=1", "--mem=600M")
    wait_for(lambda: state(cluster, array) in ("COMPLETED", "FAILED", "CANCELLED", "OUT_OF_MEMORY"), 120, "the element")
    result, = result_lines(out / "shard-1")
    reached = [int(size) for size in re.findall(r"(\d+) MiB", result["printed"][0])]
    print(f"the cell reached {max(reached, default=0)} MiB under the job's 600M")
    assert result["worker_restarts"] == 1 and reached and max(reached) < 600, result["printed"]


def test_dry_run_prints_an_array_that_requeues_and_a_merge_that_waits_for_it(tmp_path):
    from conftest import run_pybench

    done = run_pybench("slurm", "--shards", 3, "--replay", "checks/reference.jsonl", "--limit", 6, "--memory", 2, "--out", tmp_path / "run",
                       "--dry-run", "--", "-p", "short", "--mem=9G", "-c", "2")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "#SBATCH --array=1-3" in text and "#SBATCH --requeue" in text and "#SBATCH --open-mode=append" in text
    assert "#SBATCH --signal=B:USR1@120" in text and "#SBATCH --cpus-per-task=1" in text and "#SBATCH --mem=4G" in text  # 1 x (2 + 0.25) + 1
    assert "gres" not in text  # a replay asks for no GPU
    assert f'{ROOT / ".venv" / "bin" / "python"} {ROOT / "pybench.py"} --replay checks/reference.jsonl --limit 6 --memory 2 --no-report' in text
    assert f'--shard "$SLURM_ARRAY_TASK_ID/3" --out {tmp_path}/run/shard-"$SLURM_ARRAY_TASK_ID"' in text
    assert f"report {tmp_path}/run/shard-1 {tmp_path}/run/shard-2 {tmp_path}/run/shard-3 --out {tmp_path}/run/report" in text
    assert f"sbatch --parsable -p short --mem=9G -c 2 {tmp_path}/run/slurm/shards.sbatch" in text  # the user's options win
    assert f"sbatch --parsable --dependency=afterany:ARRAY_JOB_ID -p short {tmp_path}/run/slurm/merge.sbatch" in text
    assert not (tmp_path / "run").exists()
    refused = run_pybench("slurm", "--shards", 2, "--replay", "checks/reference.jsonl", "--shard", "1/2", "--dry-run")
    assert refused.returncode == 2 and "leave out --shard" in refused.stderr


def test_dry_run_scripts_are_written_as_before_for_an_ordinary_folder(tmp_path):
    """The scripts, word for word, for a run folder the door passes as it is (a word with a space quoted in the command)."""
    from conftest import run_pybench

    out, python = tmp_path / "run", f"{ROOT / '.venv' / 'bin' / 'python'} {ROOT / 'pybench.py'}"
    done = run_pybench("slurm", "--shards", 2, "--replay", "checks/reference.jsonl", "--memory", 2, "--only", "a b", "--out", out, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"""# {out}/slurm/shards.sbatch
#!/bin/bash
#SBATCH --job-name=pybench-run
#SBATCH --array=1-2
#SBATCH --cpus-per-task=1
#SBATCH --mem=4G
#SBATCH --output={out}/slurm/shard-%a.log
#SBATCH --open-mode=append
#SBATCH --requeue
#SBATCH --signal=B:USR1@120
#SBATCH --chdir={ROOT}
# one shard; on USR1 the kit stops as on Ctrl-C, keeps its finished attempts and requeues this element
exec {python} --replay checks/reference.jsonl --memory 2 --only 'a b' --no-report --shard "$SLURM_ARRAY_TASK_ID/2" --out {out}/shard-"$SLURM_ARRAY_TASK_ID"

# {out}/slurm/merge.sbatch
#!/bin/bash
#SBATCH --job-name=pybench-merge-run
#SBATCH --cpus-per-task=1
#SBATCH --mem=2G
#SBATCH --output={out}/slurm/merge.log
#SBATCH --open-mode=append
# the shards as one run: Table 3 and the HTML report
exec {python} report {out}/shard-1 {out}/shard-2 --out {out}/report

sbatch --parsable {out}/slurm/shards.sbatch
sbatch --parsable --dependency=afterany:ARRAY_JOB_ID {out}/slurm/merge.sbatch
"""


@pytest.mark.parametrize("name", ["a\nb", "a b", "a\tb", "it's"])
def test_a_run_folder_no_batch_script_can_hold_is_refused_before_anything_is_written(tmp_path, name):
    """sbatch splits an #SBATCH line at white space, and a line break would end it: such an --out is one line on stderr,
    exit 2, and no folder or script is written (nor anything submitted)."""
    from conftest import run_pybench

    refused = run_pybench("slurm", "--shards", 2, "--replay", "checks/reference.jsonl", "--out", tmp_path / name)
    assert refused.returncode == 2 and refused.stdout == "", refused.stdout
    assert len(refused.stderr.splitlines()) == 1 and "cannot go into a Slurm batch script" in refused.stderr, refused.stderr
    assert list(tmp_path.iterdir()) == []
    word = run_pybench("slurm", "--shards", 2, "--replay", "checks/reference.jsonl", "--only", "x\ny", "--out", tmp_path / "run")
    assert word.returncode == 2 and len(word.stderr.splitlines()) == 1 and "line break" in word.stderr, word.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_percent_in_the_run_folder_is_no_pattern_for_slurm(tmp_path):
    """%j in --out: written %%j in the log files' patterns (Slurm expands %j there); the job's name and the commands,
    where nothing expands it, hold the folder as it is."""
    from conftest import run_pybench

    out = tmp_path / "run%j"
    done = run_pybench("slurm", "--shards", 2, "--replay", "checks/reference.jsonl", "--out", out, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert f"#SBATCH --output={tmp_path}/run%%j/slurm/shard-%a.log\n" in done.stdout
    assert f"#SBATCH --output={tmp_path}/run%%j/slurm/merge.log\n" in done.stdout
    assert "#SBATCH --job-name=pybench-run%j\n" in done.stdout and "#SBATCH --job-name=pybench-merge-run%j\n" in done.stdout
    assert f'--out {out}/shard-"$SLURM_ARRAY_TASK_ID"' in done.stdout and f"report {out}/shard-1 {out}/shard-2 --out {out}/report" in done.stdout
    assert f"sbatch --parsable {out}/slurm/shards.sbatch" in done.stdout and not out.exists()


def test_jails_cgroups_are_made_inside_the_kits_own(tmp_path):
    from kit.sandbox import jail_cgroups

    v1 = tmp_path / "v1"
    (v1 / "memory" / "slurm" / "job_3" / "step_0").mkdir(parents=True)
    (v1 / "pids").mkdir()
    (v1 / "proc").write_text("8:pids:/\n4:memory:/slurm/job_3/step_0\n0::/\n")
    version, fields = jail_cgroups(v1 / "proc", v1)
    name = f"pybench-{os.getpid()}"
    assert version == "v1" and fields == {"cgroup_mem_mount": str(v1 / "memory"), "cgroup_mem_parent": f"slurm/job_3/step_0/{name}",
                                          "cgroup_pids_mount": str(v1 / "pids"), "cgroup_pids_parent": name}
    assert (v1 / "memory" / "slurm" / "job_3" / "step_0" / name).is_dir()
    v2 = tmp_path / "v2"
    (v2 / "job_3" / "step_0").mkdir(parents=True)
    (v2 / "cgroup.controllers").write_text("memory pids\n")
    (v2 / "proc").write_text("0::/job_3/step_0\n")
    assert jail_cgroups(v2 / "proc", v2) == ("v2", {"use_cgroupv2": True, "cgroupv2_mount": str(v2 / "job_3" / "step_0" / name)})
    assert (v2 / "job_3" / "step_0" / name / "cgroup.subtree_control").read_text() == "+memory +pids"
    nowhere = tmp_path / "none"
    nowhere.mkdir()
    (nowhere / "proc").write_text("4:memory:/gone\n")
    assert jail_cgroups(nowhere / "proc", nowhere) == ("", {})  # said on stderr; the jail uses rlimits


def test_threads_follow_slurms_allocation_whichever_task_plugin(tmp_path):
    from kit.sandbox import usable_cpus

    mask = len(os.sched_getaffinity(0))
    none = tmp_path / "none"
    for environ, expected in (({"SLURM_CPUS_ON_NODE": "1"}, (1, "SLURM_CPUS_ON_NODE=1")),
                              ({"SLURM_JOB_CPUS_PER_NODE": "1(x2)"}, (1, "SLURM_JOB_CPUS_PER_NODE=1(x2)")),
                              ({"SLURM_JOB_CPUS_PER_NODE": "1,4"}, (mask, "its affinity mask"))):
        assert usable_cpus(none / "cgroup", none, environ) == expected


def test_the_manifest_names_the_job_and_its_array_element():
    from kit.slurm import job_facts

    assert job_facts({}) is None
    assert job_facts({"SLURM_JOB_ID": "42", "SLURM_ARRAY_JOB_ID": "40", "SLURM_ARRAY_TASK_ID": "2", "SLURM_RESTART_COUNT": "1"}) == {
        "job_id": "42", "array_job_id": "40", "array_task_id": "2", "restart_count": "1"}


def test_a_resubmission_submits_the_shards_no_element_is_queued_for_and_one_merge_after_all():
    from kit.slurm import resubmission

    assert resubmission([], {}, 4) == ([1, 2, 3, 4], [], [])  # the first submission
    first = [{"array": "10", "merge": "11"}]
    queued = {"10": [("1", "PENDING"), ("3", "RUNNING"), ("4", "RUNNING")], "11": [("N/A", "PENDING")]}  # element 2 failed
    assert resubmission(first, queued, 4) == ([2], ["10"], ["11"])  # the waiting merge is replaced
    assert resubmission(first, {"11": [("N/A", "RUNNING")]}, 4) == ([1, 2, 3, 4], ["11"], [])  # one running is waited for
    assert resubmission(first, {}, 4) == ([1, 2, 3, 4], [], [])  # all ended: every shard again (finished ones at once)
    second = first + [{"array": "12", "merge": "13"}]
    busy = {"10": [("1", "RUNNING")], "12": [("2", "RUNNING"), ("3", "PENDING"), ("4", "COMPLETING")], "13": [("N/A", "PENDING")]}
    assert resubmission(second, busy, 4) == ([], ["10", "12"], ["13"])  # nothing to submit (and nothing is cancelled then)
