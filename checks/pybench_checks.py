"""The kit's check library under one name, for a suite of your own (docs/suite.md): in a check module,
`from pybench_checks import assert_number, output_file, saved_figure, ...`. It is checks/common.py (reading answers,
output files, tables and images) and checks/figures.py (charts: the figure records a saved or shown figure leaves);
the check jail mounts them, and what they import, beside a suite's own checks.
"""
from common import *  # noqa: F401,F403
from figures import *  # noqa: F401,F403


def award(**parts) -> None:
    """Partial credit: each part is (points, test), test a function of no arguments that raises AssertionError when
    the part is wrong. Passes when every part passes; otherwise fails with a reason naming every part
    ('parts: mean 1/1; plot 0/2 (there is no ./output/scores.png)'), from which `grade` gives the points earned
    (a run or validate counts the task as failed)."""
    shown, failed = [], False
    for name, (points, test) in parts.items():
        try:
            test()
            shown.append(f"{name} {points:g}/{points:g}")
        except AssertionError as error:
            failed = True
            shown.append(f"{name} 0/{points:g} ({error})")
    assert not failed, "parts: " + "; ".join(shown)
