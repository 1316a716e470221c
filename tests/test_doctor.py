"""`pybench.py doctor` reports this machine correctly: one line per check, ok or the fix."""
import pytest
from conftest import run_pybench

pytestmark = pytest.mark.slow  # every test here starts jails, models or whole runs


def test_doctor_passes_here():
    finished = run_pybench("doctor", timeout=300)
    lines = finished.stdout.strip().splitlines()
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert all(line.startswith(("ok   ", "note ")) for line in lines), lines
    for topic in ("libnl", "nsjail binary", "user namespaces", "cgroups", "jail starts in .jail/suite and imports",
                  "jail starts in .jail/original and imports", "llama-cpp-python", "model"):
        assert any(topic in line and line.startswith("ok") for line in lines), topic
    notes = [line for line in lines if line.startswith("note ")]  # what the original's runs import that cannot work offline
    assert any(line.startswith("note transformers:") and "hub" in line for line in notes), notes


def test_doctor_names_a_bad_model(tmp_path):
    fake = tmp_path / "notes.gguf"
    fake.write_text("not a model")
    finished = run_pybench("doctor", "--model", fake, timeout=300)
    assert finished.returncode == 1
    failures = [line for line in finished.stdout.splitlines() if line.startswith("FAIL")]
    assert len(failures) == 1 and "notes.gguf" in failures[0] and "not a GGUF" in failures[0], failures


def test_a_run_whose_jail_cannot_start_stops_with_a_reason(tmp_path, monkeypatch):
    from kit import sandbox
    import pybench
    import pytest

    monkeypatch.setattr(sandbox, "nsjail_binary", lambda: "/bin/false")  # an nsjail that never starts a worker
    with pytest.raises(sandbox.JailError, match="the jail did not start"):
        pybench.main(["--replay", str(pybench.HERE / "checks" / "reference.jsonl"), "--limit", "1", "--out", str(tmp_path / "run")])
    assert pybench.jail_trouble()  # the sentence appended to the error: doctor's first failing check, or where to look
