"""The figure record: made in the agent's real jail, carried to the check's jail, and held against the saved image."""
import json
import shutil

import pytest

from conftest import ROOT, code, read_results, run_pybench, write_jsonl

pytestmark = pytest.mark.slow  # every test here starts jails, models or whole runs

CHECKS = '''
from pathlib import Path
from figures import saved_figure

def bars(answer: str, output: Path, data: Path) -> None:
    """Verifies: bars.png is stacked bars whose stacks reach 4, 4, 4, and a pie and a shown line were recorded too."""
    figure = saved_figure(output, "bars.png")
    ax = figure.single_axes()
    assert ax.stacked(), "not stacked"
    assert sorted(ax.stacks().values()) == [4.0, 4.0, 4.0], ax.stacks()
    assert [ax.nearest_label(b) for b in ax.bars_in_display_order()] == ["x", "x", "y", "y", "z", "z"]
    pie = saved_figure(output, "pie.png").single_axes()
    assert [round(w["theta2"] - w["theta1"]) for w in pie.wedges] == [60, 120, 180]
    records = __import__("figures").records(output)
    assert any(r["file"] is None and r["axes"][0]["lines"] for r in records), "plt.show was not recorded"
'''

PLOTS = code(
    "import sys\nprint('matplotlib loaded at start:', 'matplotlib' in sys.modules)\n"
    "import pandas as pd, matplotlib.pyplot as plt\n"
    "df = pd.DataFrame({'a': [1, 2, 3], 'b': [3, 2, 1]}, index=['x', 'y', 'z'])\n"
    "df.plot.bar(stacked=True); plt.savefig('./output/bars.png')\n"
    "plt.figure(); plt.pie([1, 2, 3]); plt.savefig('output/pie.png', bbox_inches='tight')\n"
    "plt.figure(); plt.plot([1, 2, 3]); plt.show()")


def suite(make_suite):
    tasks = make_suite([{"id": "fig", "category": "chart", "query": "plot", "files": [], "check": "suite:bars"}], CHECKS)
    for module in ("figures.py", "common.py", "answers.py"):
        shutil.copy(ROOT / "checks" / module, tasks.parent / "checks" / module)
    return tasks


# a scatter of masked values: the recorder, reading its points, raises numpy's "converting a masked element to nan"
MASKED = code("import warnings, numpy as np\nplt.close('all'); plt.figure(); plt.scatter(np.ma.masked_invalid([1, np.nan, 3]), [1, 2, 3])\n"
              "plt.savefig('./output/masked.png'); warnings.warn('the cell warns itself')")


def test_records_reach_the_check_and_match_the_image(make_suite, tmp_path):
    """...and the recorder's own warnings stay out of what the agent sees (issue 42 item 8), the cell's own stay in."""
    tasks = suite(make_suite)
    replay = write_jsonl(tmp_path / "replay.jsonl", [{"id": "fig", "replies": [PLOTS, MASKED, "Done."]}])
    finished = run_pybench("--tasks", tasks, "--replay", replay, "--out", tmp_path / "run")
    assert finished.returncode == 0, finished.stderr
    result = read_results(tmp_path / "run")["fig"]
    assert "matplotlib loaded at start: False" in result["messages"][4]["content"]
    assert result["passed"], result["reason"]
    seen = "\n".join(str(m.get("content", "")) for m in result["messages"])
    assert "the cell warns itself" in seen and "masked element" not in seen, seen[-1500:]
    records = json.loads((tmp_path / "run" / "jails" / "fig.figures.json").read_text())
    # plt.show shows (and records) every open figure: the two saved ones again, and the line
    assert [r["file"] for r in records] == ["/task/output/bars.png", "/task/output/pie.png", None, None, None, "/task/output/masked.png"]
    assert records[0]["pixels"] == [640, 480] and records[1]["bbox_inches"] == "tight"


def test_a_record_without_its_picture_fails(make_suite, tmp_path):
    # The figure is saved, then the file is replaced by another picture: the record no longer matches the image.
    tasks = suite(make_suite)
    swap = code("from PIL import Image\nImage.new('RGB', (300, 200), 'white').save('./output/bars.png')")
    replay = write_jsonl(tmp_path / "replay.jsonl", [{"id": "fig", "replies": [PLOTS, swap, "Done."]}])
    finished = run_pybench("--tasks", tasks, "--replay", replay, "--out", tmp_path / "run")
    assert finished.returncode == 0, finished.stderr
    result = read_results(tmp_path / "run")["fig"]
    assert not result["passed"] and "300x200 pixels" in result["reason"], result["reason"]
