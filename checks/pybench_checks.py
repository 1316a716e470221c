"""The kit's check library under one name, for a suite of your own (docs/suite.md): in a check module,
`from pybench_checks import assert_number, output_file, saved_figure, ...`. It is checks/common.py (reading answers,
output files, tables and images) and checks/figures.py (charts: the figure records a saved or shown figure leaves);
the check jail mounts them, and what they import, beside a suite's own checks.
"""
from common import *  # noqa: F401,F403
from figures import *  # noqa: F401,F403
