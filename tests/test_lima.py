"""The Mac's far side as far as Linux can prove it (kit/lima.py, docs/macos.md): the Lima template pinned to a packed
image, a pack's image found and held to its digest, the kit sent through a real link (a local shell) with this
machine's own folders left out, and `setup --far lima`'s order of limactl commands against a stand-in limactl (a
script that answers `list --json`, records every call and runs nothing of the kit: Lima itself needs a Mac). Fast."""
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kit import lima
from kit.harness import UsageError
from kit.sandbox import ROOT


def test_the_template_keeps_the_mac_apart_and_pins_a_packed_image(tmp_path):
    image = tmp_path / "ubuntu 24.04.img"
    pinned = yaml.safe_load(lima.pinned_template(image, "ab" * 32))
    assert pinned["images"] == [{"location": str(image), "arch": pinned["images"][0]["arch"], "digest": "sha256:" + "ab" * 32}]
    assert pinned["images"][0]["arch"] in ("aarch64", "x86_64")
    unpinned = yaml.safe_load(lima.pinned_template())
    assert unpinned["images"][0]["location"].startswith("https://")  # Lima downloads it: the online Mac's way
    for template in (pinned, unpinned):
        assert template["vmType"] == "vz" and template["mounts"] == []
        assert all(rule["ignore"] for rule in template["portForwards"]) and not template["ssh"]["forwardAgent"]
        assert {key: template[key] for key in ("provision", "memory", "cpus")} == {key: unpinned[key] for key in ("provision", "memory", "cpus")}


def test_the_template_is_pinned_by_the_python_setup_runs_under_which_has_no_yaml(tmp_path):
    """`python3.12 pybench.py setup --far lima` runs under the interpreter that makes the venv, without the venv's
    packages: pinning the template must need nothing else (that python has no yaml here)."""
    base_python = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    pin = f"from kit import lima; print(lima.pinned_template({str(tmp_path / 'x.img')!r}, {'cd' * 32!r}), end='')"
    pinned = subprocess.run([str(base_python), "-I", "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); {pin}"],
                            capture_output=True, text=True, cwd=tmp_path)
    assert pinned.returncode == 0, pinned.stderr[-2000:]
    assert pinned.stdout == lima.pinned_template(tmp_path / "x.img", "cd" * 32)
    assert yaml.safe_load(pinned.stdout)["images"][0]["location"] == str(tmp_path / "x.img")


def make_pack(folder, image_bytes=b"disk image", name="vm/ubuntu.img"):
    (folder / "vm").mkdir(parents=True)
    (folder / "vm" / "ubuntu.img").write_bytes(image_bytes)
    files = {name: {"size": len(image_bytes), "sha256": hashlib.sha256(image_bytes).hexdigest()}}
    (folder / "PACK.json").write_text(json.dumps({"files": files, "carried": {"vm": ["ubuntu.img"]}, "system_packages": []}))
    return hashlib.sha256((folder / "PACK.json").read_bytes()).hexdigest()


def test_a_packs_image_is_found_with_its_digest_and_a_pack_not_vouched_for_is_refused(tmp_path):
    """airgap.vm_image: PACK.json's one reader (vouched_manifest, as verified_pack reads it) and names_refusal, then the
    image's entry; nothing of the pack but PACK.json is read on the Mac."""
    from kit import airgap

    digest = make_pack(tmp_path / "pack")
    image, sha = airgap.vm_image(tmp_path / "pack", digest)
    assert image == tmp_path / "pack" / "vm" / "ubuntu.img" and sha == hashlib.sha256(b"disk image").hexdigest()
    with pytest.raises(UsageError, match="not the 0{64} you expect"):
        airgap.vm_image(tmp_path / "pack", "0" * 64)
    make_pack(tmp_path / "forged", name="vm/../../../etc/passwd")
    with pytest.raises(UsageError, match="not a plain relative name inside the pack"):
        airgap.vm_image(tmp_path / "forged", None)
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "PACK.json").write_text(json.dumps({"files": {}, "carried": {}, "system_packages": []}))
    with pytest.raises(UsageError, match="carries no VM image"):
        airgap.vm_image(tmp_path / "empty", None)
    (tmp_path / "nowhere").mkdir()
    with pytest.raises(UsageError, match="not a pack"):
        airgap.vm_image(tmp_path / "nowhere", None)


def test_setup_far_refuses_a_pack_archive_before_anything_runs(tmp_path):
    import pybench

    (tmp_path / "pack.tar").write_bytes(b"")
    with pytest.raises(UsageError, match="tar -xf"):
        pybench.setup_far("lima", False, tmp_path / "pack.tar", None)


def test_the_kit_goes_through_the_link_without_this_machines_own_folders(tmp_path):
    kit = tmp_path / "kit"
    for name in ["pybench.py", "kit/sandbox.py", "tests/fixtures/runs/kept.txt", ".venv/bin/python", ".venv-vulkan/x",
                 ".jail/suite/x", "runs/run-1/results.jsonl", ".git/HEAD", "kit/__pycache__/sandbox.pyc"]:
        (kit / name).parent.mkdir(parents=True, exist_ok=True)
        (kit / name).write_text(name)
    (kit / "link").symlink_to("pybench.py")
    there = tmp_path / "far side" / "kit"
    assert lima.send_folder(["env"], kit, there) == f"to {there}"  # `env sh -c ...`: a link that is a local shell
    sent = sorted(str(path.relative_to(there)) for path in there.rglob("*") if not path.is_dir())
    assert sent == ["kit/sandbox.py", "link", "pybench.py", "tests/fixtures/runs/kept.txt"]
    assert (there / "link").is_symlink() and (there / "pybench.py").read_text() == "pybench.py"
    with pytest.raises(subprocess.CalledProcessError):
        lima.send_folder(["false"], kit, there)  # a link that fails is a failed stage, never a half-copy said done
    with pytest.raises(subprocess.CalledProcessError):
        lima.send_folder(["true"], kit, there)  # nor one that ends well without reading the tar


STAND_IN = """#!/bin/sh
# limactl, as far as setup --far lima uses it: list --json from a state file, create and start change it, shell
# records the command (and the tar it is sent) and runs nothing
echo "$*" >> "$LIMA_CALLS"
case "$1" in
  list) [ -f "$LIMA_STATE" ] && printf '{"name":"pybench","status":"%s"}\\n' "$(cat "$LIMA_STATE")"; exit 0 ;;
  create) cp "$(eval echo \\${$#})" "$LIMA_STATE.yaml"; echo Stopped > "$LIMA_STATE" ;;
  start) echo Running > "$LIMA_STATE" ;;
  shell) shift 2; if [ "$1" = sh ]; then tar -t >> "$LIMA_CALLS.tar" && echo pybench-received; fi ;;
esac
"""


@pytest.fixture
def limactl(tmp_path, monkeypatch):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "limactl").write_text(STAND_IN)
    (tmp_path / "bin" / "limactl").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("LIMA_CALLS", str(tmp_path / "calls"))
    monkeypatch.setenv("LIMA_STATE", str(tmp_path / "state"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


def test_setup_far_lima_makes_the_vm_from_the_packs_image_sends_kit_and_pack_then_runs_setup_and_doctor(limactl):
    from kit import airgap

    digest = make_pack(limactl / "pack")
    stages = []
    link = lima.setup_far("lima", lambda what, work: stages.append((what, work())), ["--tests"], limactl / "pack", digest,
                          airgap.vm_image(limactl / "pack", digest))
    assert link == ["limactl", "shell", "pybench"]
    calls = (limactl / "calls").read_text().splitlines()
    kit, pack = str(lima.ROOT), str(limactl / "pack")
    assert [call.split(" ")[0] for call in calls] == ["list", "create", "start", "shell", "shell", "shell", "shell"]
    assert calls[3].startswith(f"shell pybench sh -c {{ mkdir -p {kit} ") and calls[4].startswith(f"shell pybench sh -c {{ mkdir -p {pack} ")
    assert calls[5:] == [f"shell pybench python3.12 {kit}/pybench.py setup --tests --from {pack} --expect {digest}",
                         f"shell pybench python3.12 {kit}/pybench.py doctor"]
    created = yaml.safe_load((limactl / "state.yaml").read_text())
    assert created["images"][0]["location"] == f"{pack}/vm/ubuntu.img" and created["mounts"] == []
    sent = (limactl / "calls.tar").read_text().splitlines()
    assert "pybench.py" in sent and "kit/lima.py" in sent and "vm/ubuntu.img" in sent and "PACK.json" in sent
    assert not [name for name in sent if name.split("/")[0] in (".venv", ".jail", "runs", ".git") or "__pycache__" in name]
    assert [what.split(" (")[0] for what, _ in stages] == ["the Linux VM pybench", "this kit to the far side", "the pack to the far side",
                                                           "setup on the far side: its jails' environments and nsjail's libraries",
                                                           "doctor on the far side"]
    assert stages[0][1] == "made and started"


def test_a_running_vm_is_used_as_it_is_and_a_stopped_one_started(limactl):
    (limactl / "state").write_text("Running\n")
    assert lima.ensure_vm() == "running already"
    (limactl / "state").write_text("Stopped\n")
    assert lima.ensure_vm() == "started"
    assert (limactl / "calls").read_text().splitlines() == ["list --json", "list --json", "start --tty=false pybench"]


def test_without_lima_setup_far_lima_says_how_to_get_it(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UsageError, match="brew install lima"):
        lima.ensure_vm()


def test_pack_carries_a_vm_image_as_one_of_the_users_files(tmp_path):
    """`pack --vm-image FILE` puts the image in the pack's vm/ folder, where airgap.vm_image finds it; a path that is no
    file is refused with its flag."""
    import argparse

    from kit import airgap

    (tmp_path / "ubuntu.img").write_bytes(b"disk")
    options = argparse.Namespace(model=[], original=None, mlbench=None, repos=None, vm_image=tmp_path / "ubuntu.img")
    assert airgap.user_file_sources(options) == [("vm", tmp_path / "ubuntu.img")]
    assert airgap.USER_FILES["vm"] == "--vm-image"
    with pytest.raises(UsageError, match="--vm-image .*: no such file"):
        airgap.user_file_sources(argparse.Namespace(model=[], original=None, mlbench=None, repos=None, vm_image=tmp_path))


def test_doctor_on_a_machine_without_jails_checks_no_jail_and_says_where_they_go(monkeypatch, capsys):
    """A Mac's doctor (JAILS_HERE false): no nsjail, user-namespace or jail-import check fails it; it says the jails run
    on a far side and how to set one up, and still checks the model."""
    import pybench

    monkeypatch.setattr(pybench, "JAILS_HERE", False)
    assert pybench.doctor(None) == 0
    said = capsys.readouterr().out
    assert "note jails: none here" in said and "setup --far lima" in said and "FAIL" not in said
    assert "nsjail binary" not in said and "cgroups" not in said and "a jail starts" not in said and "ok   model " in said
