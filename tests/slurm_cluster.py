"""A real single-node Slurm cluster for the tests and benches: Debian's packages (Slurm 22.05, munge), daemons started
by hand (no systemd), every file of theirs (config, state, spool, logs, pids, munge's socket) under one folder,
stopped by their pids. The recipe of docs/runs.md ("A cluster on one machine")."""
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")


def why_not_here() -> str | None:
    """Why no cluster can be started here, None when one can (installing the packages if they are missing)."""
    if os.geteuid() != 0:
        return "a Slurm cluster's daemons are started as root (and its packages installed with apt-get)"
    if all(shutil.which(tool) for tool in ("slurmctld", "slurmd", "sbatch", "munged")):
        return None
    if not shutil.which("apt-get"):
        return f"Slurm is not installed and there is no apt-get to install {' '.join(PACKAGES)}"
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "--no-install-recommends", *PACKAGES]
    if subprocess.run(install, env=environment, capture_output=True).returncode != 0:
        subprocess.run(["apt-get", "update"], env=environment, capture_output=True)
        done = subprocess.run(install, env=environment, capture_output=True, text=True)
        if done.returncode != 0:
            return f"apt-get could not install {' '.join(PACKAGES)}: {done.stderr.strip().splitlines()[-1:]}"
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start(folder: Path) -> dict:
    """Start munged, slurmctld and slurmd with everything under folder; the environment for Slurm's clients
    (SLURM_CONF). Job memory is enforced by cgroups (task/cgroup, ConstrainRAMSpace), as on most sites."""
    host = socket.gethostname().split(".")[0]
    node = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True).stdout  # this machine's CPUs and memory
    memory = node.split("RealMemory=")[1].split()[0]
    for name in ("state", "spool", "munge"):
        (folder / name).mkdir(parents=True, exist_ok=True)
    munge = pwd.getpwnam("munge")
    os.chown(folder / "munge", munge.pw_uid, munge.pw_gid)
    munge_socket = folder / "munge" / "socket"
    subprocess.run(["runuser", "-u", "munge", "--", "munged", f"--socket={munge_socket}", f"--pid-file={folder}/munge/munged.pid",
                    f"--log-file={folder}/munge/munged.log", f"--seed-file={folder}/munge/seed"], check=True)
    (folder / "slurm.conf").write_text(f"""ClusterName=pybench
SlurmctldHost={host}
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
AuthInfo=socket={munge_socket},cred_expire=10
MailProg=/bin/true
MpiDefault=none
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1024
ReturnToService=2
SchedulerParameters=sched_interval=2,bf_interval=2
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/slurmd.pid
SlurmctldLogFile={folder}/slurmctld.log
SlurmdLogFile={folder}/slurmd.log
NodeName={host} CPUs={os.cpu_count()} RealMemory={memory} State=UNKNOWN
PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")
    (folder / "cgroup.conf").write_text("CgroupPlugin=cgroup/v1\nConstrainRAMSpace=yes\nConstrainSwapSpace=no\n")
    environment = {**os.environ, "SLURM_CONF": str(folder / "slurm.conf")}
    subprocess.run(["slurmctld", "-c"], env=environment, check=True)
    subprocess.run(["slurmd"], env=environment, check=True)
    deadline = time.monotonic() + 60
    while subprocess.run(["sinfo", "-h", "-o", "%T"], env=environment, capture_output=True, text=True).stdout.strip() not in ("idle", "mixed"):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the node did not come up: see {folder}/slurmctld.log and {folder}/slurmd.log")
        time.sleep(0.2)
    return environment


def stop(folder: Path) -> None:
    """Every job cancelled (a running one's slurmstepd would outlive slurmd), then the daemons, by their pid files,
    waited for."""
    environment = {**os.environ, "SLURM_CONF": str(folder / "slurm.conf")}
    if subprocess.run(["scancel", "--partition=main"], env=environment, capture_output=True).returncode == 0:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and subprocess.run(["squeue", "-h"], env=environment, capture_output=True, text=True).stdout.strip():
            time.sleep(0.2)
    for pid_file in ("slurmd.pid", "slurmctld.pid", "munge/munged.pid"):
        try:
            pid = int((folder / pid_file).read_text())
            os.kill(pid, signal.SIGTERM)
        except (OSError, ValueError):
            continue
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and running(pid):
            time.sleep(0.1)


def running(pid: int) -> bool:
    """A process that has not ended (a daemon's zombie, left for an init that may not reap it, has)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
