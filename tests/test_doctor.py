"""`pybench.py doctor` reports this machine correctly: one line per check, ok or the fix."""
from conftest import run_pybench


def test_doctor_passes_here():
    finished = run_pybench("doctor", timeout=300)
    lines = finished.stdout.strip().splitlines()
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert all(line.startswith("ok   ") for line in lines), lines
    for topic in ("libnl", "nsjail binary", "user namespaces", "cgroups", "a jail starts and imports", "llama-cpp-python", "model"):
        assert any(topic in line for line in lines), topic


def test_doctor_names_a_bad_model(tmp_path):
    fake = tmp_path / "notes.gguf"
    fake.write_text("not a model")
    finished = run_pybench("doctor", "--model", fake, timeout=300)
    assert finished.returncode == 1
    failures = [line for line in finished.stdout.splitlines() if line.startswith("FAIL")]
    assert len(failures) == 1 and "notes.gguf" in failures[0] and "not a GGUF" in failures[0], failures
