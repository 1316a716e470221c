"""What a plotting library draws over bars for what the query asks (a histogram's density curve, error bars drawn as
lines, as seaborn does) is part of a bar chart; a line over the categories is not. Fast: hand-built figure records of
the shapes seaborn 0.13 and matplotlib record (the jailed replays in checks/solutions/charts.jsonl prove the real ones)."""
import math
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "checks"))
from charts import assert_no_other_kind  # noqa: E402
from figures import Axes  # noqa: E402

NAN = math.nan


def histogram(bins=15, low=0.0, width=10.0):
    return [{"x": low + i * width, "y": 0.0, "width": width, "height": float(1 + i % 4), "visible": True} for i in range(bins)]


def axes(bars, *lines, orientation="vertical"):
    return Axes({"bars": [{"bars": bars, "orientation": orientation, "label": ""}] if bars else [],
                 "lines": [{"x": list(x), "y": list(y), "n": len(x), "linestyle": style, "visible": True} for x, y, style in lines]})


def kde(low, high, points=200):
    xs = [low + (high - low) * i / (points - 1) for i in range(points)]
    return xs, [math.exp(-((x - (low + high) / 2) / (high - low)) ** 2) for x in xs], "-"


def seaborn_error_bar(x, low, high, cap=0.1):  # cap, gap, the bar itself, gap, cap: one line
    return [x - cap, x + cap, NAN, x, x, NAN, x - cap, x + cap], [low, low, NAN, low, high, NAN, high, high], "-"


def test_a_histogram_with_its_density_curve_is_bars():
    ax = axes(histogram(), kde(0.0, 150.0))
    assert len(ax.density_curves()) == 1
    assert_no_other_kind(ax, "hist.png", "bars")


def test_bars_with_seaborn_error_bars_are_bars_and_the_error_bars_are_read():
    bars = [{"x": i - 0.4, "y": 0.0, "width": 0.8, "height": 100.0 + i, "visible": True} for i in range(5)]
    ax = axes(bars, *(seaborn_error_bar(i, 100.0 + i - 3.0, 100.0 + i + 3.0) for i in range(5)))
    assert_no_other_kind(ax, "bars.png", "bars")
    assert ax.error_bar_halves() == pytest.approx([3.0] * 5)


@pytest.mark.parametrize("line", [
    ([0, 1, 2, 3, 4], [5, 3, 4, 1, 2], "-"),  # a line through the categories, one point per bar
    ([0.5 * i for i in range(30)][::-1], list(range(30)), "-"),  # many points, but not a curve along the bars' axis
    ([-200 + 20 * i for i in range(40)], list(range(40)), "-"),  # runs far outside the bars
])
def test_a_line_over_the_bars_is_still_a_line(line):
    bars = [{"x": i - 0.4, "y": 0.0, "width": 0.8, "height": 1.0, "visible": True} for i in range(5)]
    with pytest.raises(AssertionError, match="draws lines"):
        assert_no_other_kind(axes(bars, line), "bars.png", "bars")


def test_a_line_chart_where_bars_were_asked_fails():
    with pytest.raises(AssertionError, match="draws no bars"):
        assert_no_other_kind(axes([], kde(0.0, 150.0)), "hist.png", "bars")


def bar_panel(values, places=(0, 1, 2, 3)):
    return axes([{"x": p - 0.4, "y": 0.0, "width": 0.8, "height": float(v), "visible": True} for p, v in zip(places, values)])


def test_a_panel_of_the_same_chart_over_the_same_categories_with_the_same_values_in_part_is_read_alike():
    """Figure.alike, judged from the data drawn: the counts misassigned or partly changed over the same bars are the chart
    read again; another measure over the same bars, other categories, or another kind of chart are not."""
    from figures import Figure

    units = bar_panel([980, 1240, 310, 540])
    assert Figure.alike(units, bar_panel([540, 310, 1240, 980]))  # the same counts, reversed
    assert Figure.alike(units, bar_panel([980, 1240, 300, 500]))  # half of them changed
    assert not Figure.alike(units, bar_panel([539, 434, 1302, 1134]))  # another column (revenue)
    assert not Figure.alike(units, bar_panel([980, 1240, 310, 540], places=(0, 1, 2, 4)))  # other categories
    assert not Figure.alike(units, axes([], ([0, 1, 2, 3], [980, 1240, 310, 540], "-")))  # a line of them
