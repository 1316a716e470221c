"""lima: the jails' far side on a Mac (docs/macos.md), a Linux VM made with Lima from the kit's template
(docs/lima-pybench.yaml: Apple's Virtualization.framework, no host mounts, no forwarded ports), and `setup --far`, which
puts this kit on any far side through the link its jails will use and runs setup and doctor there.

UNTESTED ON A MAC. Proven on Linux (tests/test_lima.py): the template pinned to a packed image, the kit sent through a
link, and the order of limactl's commands, against a stand-in limactl; Lima itself needs a Mac.
"""
import json
import platform
import shlex
import shutil
import subprocess
import tarfile
from pathlib import Path

from kit.harness import UsageError
from kit.sandbox import ROOT

__all__ = ["NAME", "TEMPLATE", "LINK", "RECEIVED", "pinned_template", "vm_status", "ensure_vm",
           "KEPT_HERE", "send_folder", "run_there", "setup_far"]

NAME = "pybench"                                    # the VM's name in Lima
TEMPLATE = ROOT / "docs" / "lima-pybench.yaml"
LINK = ["limactl", "shell", NAME]                   # the far command of a run: --far "limactl shell pybench"
RECEIVED = "pybench-received"                       # what the far side says once a folder is all there
KEPT_HERE = {".git", ".jail", "runs", "carried", ".pytest_cache"}  # at the top, with .venv* and every __pycache__


def pinned_template(image: Path | None = None, digest: str | None = None) -> str:
    """The template's text; with image, its images block (the `images:` line and the indented lines under it) replaced
    by that local file, its sha256 and this Mac's architecture, so that Lima downloads nothing and refuses any other
    file. Standard library only: `setup --far` runs under the python3.12 that made the venv, which has no YAML parser."""
    text = TEMPLATE.read_text()
    if image is None:
        return text
    lines = text.splitlines(keepends=True)
    start = lines.index("images:\n")
    end = next(number for number in range(start + 1, len(lines)) if lines[number].strip() and not lines[number][0].isspace())
    while not lines[end - 1].strip():  # the blank lines before the next key stay
        end -= 1
    arch = {"arm64": "aarch64", "aarch64": "aarch64"}.get(platform.machine(), "x86_64")
    entry = f"images:\n  - location: {json.dumps(str(image))}\n    arch: {arch}\n    digest: \"sha256:{digest}\"\n"
    return "".join(lines[:start]) + entry + "".join(lines[end:])


def vm_status() -> str | None:
    """The VM's status as `limactl list --json` gives it (Running, Stopped, ...), or None where there is none."""
    if not shutil.which("limactl"):
        raise UsageError("setup --far lima needs Lima: install it (brew install lima) and run setup again (docs/macos.md)")
    listed = subprocess.run(["limactl", "list", "--json"], capture_output=True, text=True, check=True).stdout
    instances = [json.loads(line) for line in listed.splitlines() if line.strip()]  # one JSON object per VM
    return next((vm.get("status") for vm in instances if vm.get("name") == NAME), None)


def ensure_vm(image: Path | None = None, digest: str | None = None) -> str:
    """Create the VM from the pinned template where there is none, start it where it is not running; say which."""
    status = vm_status()
    if status is None:
        template = Path.home() / ".cache" / "pybench" / "lima-pybench.yaml"
        template.parent.mkdir(parents=True, exist_ok=True)
        template.write_text(pinned_template(image, digest))
        subprocess.run(["limactl", "create", "--tty=false", f"--name={NAME}", str(template)], check=True)
    if status != "Running":
        subprocess.run(["limactl", "start", "--tty=false", NAME], check=True)
    return {None: "made and started", "Running": "running already"}.get(status, "started")


def send_folder(link: list[str], folder: Path, there: Path | None = None) -> str:
    """Copy folder through the link to the same path on the far side (or there), as a tar on the link's stdin: no
    folder is shared. Left out: this machine's own (KEPT_HERE and .venv* at the top, every __pycache__). Links are sent
    as links. The far side makes the folder, with sudo where its user may not (a Mac's /Users in the VM), and says
    RECEIVED once tar has written all of it: a link that ends well without it did not copy."""
    def kept(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
        name, top = Path(member.name).name, "/" not in member.name
        return None if name == "__pycache__" or top and (name in KEPT_HERE or name.startswith(".venv")) else member

    target = shlex.quote(str(there or folder))
    made = f'mkdir -p {target} 2>/dev/null || {{ sudo -n mkdir -p {target} && sudo -n chown "$(id -u):$(id -g)" {target}; }}'
    receiver = subprocess.Popen([*link, "sh", "-c", f"{{ {made}; }} && tar -x -C {target} && echo {RECEIVED}"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        with receiver.stdin, tarfile.open(fileobj=receiver.stdin, mode="w|") as tar:
            for entry in sorted(folder.iterdir()):
                tar.add(entry, arcname=entry.name, filter=kept)
        broken = False
    except BrokenPipeError:  # the far side stopped reading before the end
        broken = True
    said = receiver.stdout.read().decode(errors="replace").split()
    if receiver.wait() or broken or said[-1:] != [RECEIVED]:
        raise subprocess.CalledProcessError(receiver.returncode or 1, [*link, "sh", "-c", "tar -x"])
    return f"to {there or folder}"


def run_there(link: list[str], *arguments: str) -> None:
    """pybench.py with these arguments on the far side, under its python3.12; its output goes where setup's goes."""
    subprocess.run([*link, "python3.12", str(ROOT / "pybench.py"), *arguments], check=True)


def setup_far(far: str, stage, flags: list[str], pack: Path | None = None, expect: str | None = None,
              image: tuple[Path, str] | None = None) -> list[str]:
    """`setup --far lima|COMMAND`: the VM made and started (lima; from image, a packed disk image and its sha256, where
    one is given), this kit (and the pack, a folder) sent through the link to the same path there, setup (with flags)
    and doctor run there. stage is setup's stage runner; returns the far command a run names."""
    link = LINK if far == "lima" else shlex.split(far)
    if far == "lima":
        stage(f"the Linux VM {NAME} (Lima, {TEMPLATE.relative_to(ROOT)}{', its image from the pack' if image else ''})",
              lambda: ensure_vm(*(image or (None, None))))
    stage(f"this kit to the far side ({shlex.join(link)})", lambda: send_folder(link, ROOT))
    if pack:
        stage("the pack to the far side", lambda: send_folder(link, pack.absolute()))
        flags = [*flags, "--from", str(pack.absolute()), *(["--expect", expect] if expect else [])]
    stage("setup on the far side: its jails' environments and nsjail's libraries", lambda: run_there(link, "setup", *flags))
    stage("doctor on the far side", lambda: run_there(link, "doctor"))
    return link
