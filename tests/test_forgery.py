"""Forged charts: an agent whose figure record is right while the picture it saved shows something else.

Each forgery replays a chart task's reference solution through the real kit (pybench.py, the agent's jail, the
check's jail), with one cell more before the final answer: the cell changes the drawn data (every bar as tall as the
mean, every line flat, equal slices, every point in one place, the heatmap's cells all alike), writes that picture to
the task's output file by one route, and leaves the record of the right figure for the check. Each must fail, with a
reason that says what the picture does not show; the honest reference solutions of the same tasks must pass.

The routes (docs/checks.md, "What the picture proves"): writing the file past the patched savefig (the canvas'
print_png, its print_figure, Pillow, raw bytes), calling savefig's original through its closure (sys.modules), calling
the recorder's own record_of() on the right figure after saving the wrong one, replacing a record in the recorder's list
after the save (reached through gc) or through the import hook in sys.meta_path. And for the texts: the right bars
with their category names drawn in the wrong order (written past savefig), or the names swapped in the record after
the save; each must fail on the tick label the picture does not show where its record puts it.
"""
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT, write_jsonl

# What the forging cell does to every figure it finds; undo() draws the right data again.
FLATTEN = '''
import gc, io, sys, copy
import numpy as np
import matplotlib.figure as _mf
FIGS = [o for o in gc.get_objects() if isinstance(o, _mf.Figure) and any(a.patches or a.lines or a.collections for a in o.axes)]
fig = FIGS[-1]
_undo = []
def flatten():
    for ax in fig.axes:
        bars = [p for c in ax.containers if type(c).__name__ == 'BarContainer' for p in c.patches]
        if bars:
            horizontal = getattr(ax.containers[0], 'orientation', 'vertical') == 'horizontal'
            size = 'width' if horizontal else 'height'
            mean = float(np.mean([getattr(p, 'get_' + size)() for p in bars]))
            for p in bars:
                _undo.append((getattr(p, 'set_' + size), getattr(p, 'get_' + size)()))
                getattr(p, 'set_' + size)(mean)
        wedges = [p for p in ax.patches if type(p).__name__ == 'Wedge']
        for i, p in enumerate(wedges):
            _undo.append((p.set_theta1, p.theta1)); _undo.append((p.set_theta2, p.theta2))
            p.set_theta1(90 + 360 * i / len(wedges)); p.set_theta2(90 + 360 * (i + 1) / len(wedges))
        for line in ax.get_lines():
            y = np.asarray(line.get_ydata(), dtype=float)
            if len(y) > 2:
                _undo.append((line.set_ydata, y.copy()))
                line.set_ydata(np.full(len(y), np.nanmean(y)))
        for c in ax.collections:
            if type(c).__name__ == 'PathCollection' and len(c.get_offsets()):
                _undo.append((c.set_offsets, c.get_offsets().copy()))
                c.set_offsets(np.repeat(np.nanmean(c.get_offsets(), axis=0, keepdims=True), len(c.get_offsets()), axis=0))
            elif type(c).__name__ == 'QuadMesh':
                _undo.append((c.set_array, c.get_array().copy()))
                c.set_array(np.full(c.get_array().shape, float(np.nanmean(c.get_array()))))
def relabel():
    """The category names drawn in the wrong order (the bars stay right)."""
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            names = [t.get_text() for t in axis.get_ticklabels()]
            if any(n and not n.replace('.', '').replace('-', '').replace('−', '').isdigit() for n in names):
                _undo.append((axis.set_major_locator, axis.get_major_locator()))
                _undo.append((axis.set_major_formatter, axis.get_major_formatter()))
                axis.set_ticks(axis.get_ticklocs(), names[::-1])
def undo():
    for setter, value in reversed(_undo):
        setter(value)
    _undo.clear()
def recorder_records():
    """The recorder's list of records, through the import hook in sys.meta_path."""
    hooks = [closure(type(f).find_spec, 'patches') for f in sys.meta_path if type(f).__name__ == 'Hook']
    patch = next(patches for patches in hooks if 'matplotlib.figure' in patches)['matplotlib.figure']
    return closure(closure(patch, 'recorder')['take'], 'records')
def closure(function, name):
    return dict(zip(function.__code__.co_freevars, function.__closure__))[name].cell_contents
'''

ROUTES = {
    # the wrong picture written past savefig; the honest save's record stays
    "print_png": "flatten(); fig.canvas.print_png(TARGET); undo()",
    "print_figure": "flatten(); fig.canvas.print_figure(TARGET); undo()",
    "pillow": ("from PIL import Image\nflatten(); buffer = io.BytesIO(); fig.canvas.print_png(buffer); undo()\n"
               "Image.open(io.BytesIO(buffer.getvalue())).save(TARGET)"),
    "bytes": "flatten(); buffer = io.BytesIO(); fig.canvas.print_png(buffer); undo()\nopen(TARGET, 'wb').write(buffer.getvalue())",
    # savefig's original, reached through the patched method's closure (sys.modules holds the patched class)
    "closure": ("original = closure(sys.modules['matplotlib.figure'].Figure.savefig, 'save')\n"
                "flatten(); original(fig, TARGET); undo()"),
    # the wrong figure saved (and recorded), then the recorder's own record_of() called on the right one, into its records
    "record_call": ("record_of, records = (closure(sys.modules['matplotlib.figure'].Figure.savefig, name) for name in ('record_of', 'records'))\n"
                    "flatten(); fig.savefig(TARGET); undo(); records.append(record_of(fig, TARGET, {}))"),
    # the wrong figure saved, then its record replaced by the right figure's, in the recorder's list (through gc)
    "mutate": ("flatten(); fig.savefig(TARGET); undo()\n"
               "records = next(o for o in gc.get_objects() if isinstance(o, list) and o and isinstance(o[-1], dict) and 'pixels' in o[-1])\n"
               "fig.savefig(io.BytesIO(), format='png'); right = records.pop(); right['file'] = records[-1]['file']; records[-1] = right"),
    # the same through the import hook in sys.meta_path
    "meta_path": ("records = recorder_records()\n"
                  "fig.savefig(io.BytesIO(), format='png'); right = copy.deepcopy(records.pop())\n"
                  "flatten(); fig.savefig(TARGET); undo(); right['file'] = records[-1]['file']; records[-1] = right"),
    # the right bars with their names in the wrong order: in the picture (past savefig), or in the record after the save
    "relabel_print_png": "relabel(); fig.canvas.print_png(TARGET); undo()",
    "relabel_record": ("records = recorder_records()\nfig.savefig(TARGET)\n"
                       "for ax in records[-1]['axes']:\n"
                       "    for key in ('xticklabels', 'yticklabels'):\n"
                       "        names = [m['text'] for m in ax['marks'][key]][::-1]\n"
                       "        ax[key] = names\n"
                       "        ax['marks'][key] = [dict(m, text=n) for m, n in zip(ax['marks'][key], names)]"),
}

# One task per chart check module, and the main kinds of chart; each task forged by two routes (every route twice).
FORGED = {
    "charts-01": ("chart-01.png", ["print_png", "record_call", "relabel_print_png", "relabel_record"]),  # bars; their names
    "charts-04": ("max_temp.png", ["pillow", "mutate"]),              # a line
    "charts-06": ("os_pie.png", ["bytes", "meta_path"]),              # a pie
    "charts-10": ("corr_heatmap.png", ["closure", "print_figure"]),   # a heatmap
    "charts-21": ("penguins_scatter.png", ["print_png", "mutate"]),   # points
    "audio-12": ("loudness.png", ["record_call", "pillow"]),          # the audio module's bars
    "text-17": ("rating_distribution.png", ["meta_path", "bytes", "relabel_record"]),  # the text module's bars; their names
    "math-04": ("ode_solution.png", ["closure", "print_figure"]),     # the maths module's line
}


def forged_reply(target: str, route: str) -> str:
    source = FLATTEN + f"TARGET = './output/{target}'\n" + ROUTES[route] + "\nprint('forged')"
    return f"One more touch.\n```python\n{source}\n```"


@pytest.mark.slow
def test_forged_pictures_fail_and_honest_ones_pass(tmp_path):
    tasks = {json.loads(line)["id"]: json.loads(line) for line in (ROOT / "tasks.jsonl").read_text().splitlines() if line.strip()}
    references = {}
    for line in (ROOT / "checks" / "reference.jsonl").read_text().splitlines():
        record = json.loads(line)
        references.setdefault(record["id"], record["replies"])
    suite = tmp_path / "suite"
    suite.mkdir()
    os.symlink(ROOT / "files", suite / "files")
    os.symlink(ROOT / "checks", suite / "checks")
    rows, replays, expected = [], [], {}
    for task_id, (target, routes) in FORGED.items():
        honest = references[task_id]
        rows.append(tasks[task_id])
        replays.append({"id": task_id, "replies": honest})
        expected[task_id] = True
        for route in routes:
            forged_id = f"{task_id}-{route}"
            rows.append(dict(tasks[task_id], id=forged_id))
            replays.append({"id": forged_id, "replies": honest[:-1] + [forged_reply(target, route), honest[-1]]})
            expected[forged_id] = False
    write_jsonl(suite / "tasks.jsonl", rows)
    replay = write_jsonl(tmp_path / "forgeries.jsonl", replays)
    out = tmp_path / "run"
    finished = subprocess.run([sys.executable, str(ROOT / "pybench.py"), "--tasks", str(suite / "tasks.jsonl"), "--replay", str(replay),
                               "--out", str(out)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert finished.returncode == 0, finished.stderr[-2000:]
    results = {r["id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    wrong = []
    for task_id, should_pass in expected.items():
        result = results[task_id]
        cells_ran = all("forged" in str(m.get("content", "")) for m in result.get("messages", [])[-2:-1]) if not should_pass else True
        if result["passed"] != should_pass:
            wrong.append(f"{task_id}: passed={result['passed']} ({result.get('reason', '')})")
        elif not should_pass and not cells_ran:
            wrong.append(f"{task_id}: the forging cell did not run to its end: {result['messages'][-2]['content'][-300:]}")
    assert not wrong, "\n".join(wrong)
    for task_id, should_pass in expected.items():
        if not should_pass:  # the reason names what the picture does not show
            assert "./output/" in results[task_id]["reason"], results[task_id]["reason"]
        if "-relabel" in task_id:  # the names are what the picture does not show
            assert "is not drawn where its figure record puts it" in results[task_id]["reason"], results[task_id]["reason"]


def test_an_attempts_figure_records_are_bounded_in_bytes():
    from kit import harness

    records = [{"axes": [], "padding": "x" * 1_000_000, "number": n} for n in range(10)]
    kept = harness.newest_figures(records)
    assert kept == records[-len(kept):] and 0 < len(kept) < len(records)  # the newest, in order
    assert sum(len(json.dumps(r)) + 1 for r in kept) <= harness.FIGURE_BYTES


def test_a_figure_record_past_the_bound_fails_the_chart(tmp_path):
    sys.path.insert(0, str(ROOT / "checks"))
    import figures

    (tmp_path / "output").mkdir()
    (tmp_path / "figures.json").write_text("[" + " " * (figures.RECORD_BYTES + 1) + "]")
    with pytest.raises(AssertionError, match="bytes"):
        figures.records(tmp_path / "output")


def test_a_recorded_text_must_be_drawn_where_its_record_puts_it(tmp_path):
    """The texts a check reads are verified in the picture: the right bars saved with their names in the wrong order
    (past savefig, or the names swapped in the record after the save) fail, naming the label; the honest save passes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.figure
    import matplotlib.pyplot as plt

    sys.path.insert(0, str(ROOT / "checks"))
    import figures
    from kit import jailed

    output = tmp_path / "output"
    output.mkdir()
    original = matplotlib.figure.Figure.savefig
    patches = jailed.figure_recorder()
    patches["matplotlib.figure"](matplotlib.figure)
    try:
        fig, ax = plt.subplots()
        ax.bar(["Apple", "Banana", "Cherry"], [3, 5, 2])
        ax.set_title("Fruit sold")
        fig.savefig(output / "chart.png", bbox_inches="tight")
        honest = json.loads(patches["take"]())
        ax.set_xticks([0, 1, 2], ["Cherry", "Banana", "Apple"])
        original(fig, output / "relabelled.png", bbox_inches="tight")  # savefig's original: no record
        plt.close(fig)
    finally:
        matplotlib.figure.Figure.savefig = original
    (tmp_path / "figures.json").write_text(json.dumps(honest))
    shown = figures.saved_figure(output, "chart.png")
    assert shown.axes[0].record["xticklabels"] == ["Apple", "Banana", "Cherry"] and shown.axes[0].title == "Fruit sold"

    swapped = json.loads(json.dumps(honest))
    marks = swapped[0]["axes"][0]["marks"]["xticklabels"]
    for mark, name in zip(marks, ["Cherry", "Banana", "Apple"]):
        mark["text"] = name
    swapped[0]["axes"][0]["xticklabels"] = ["Cherry", "Banana", "Apple"]
    (tmp_path / "figures.json").write_text(json.dumps(swapped))
    with pytest.raises(AssertionError, match="the tick label 'Cherry' is not drawn where its figure record puts it"):
        figures.saved_figure(output, "chart.png")

    past_savefig = json.loads(json.dumps(honest))  # the honest record, held against the relabelled picture
    past_savefig[0]["file"] = str(output / "relabelled.png")
    (tmp_path / "figures.json").write_text(json.dumps(past_savefig))
    with pytest.raises(AssertionError, match="the tick label 'Apple' is not drawn"):
        figures.saved_figure(output, "relabelled.png")



# Forgeries the picture checks used to pass (issue 30): each draws a chart task's figure from its input with the real
# recorder in this process (the test environment has matplotlib, not pandas) and holds the saved picture to its record
# as the task's check does; each must fail naming the element, and the honest styles beside them must pass.
def recorded(tmp_path, source: str, name: str, every_sample: bool = False, inputs: str = "charts"):
    """Run source (plotting code, ./data/ being files/<inputs>, the chart tasks' inputs by default) with the figure
    recorder, then read back ./output/name as the chart checks do (figures.saved_figure). Raises the check's
    AssertionError."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.figure
    import matplotlib.pyplot as plt

    sys.path.insert(0, str(ROOT / "checks"))
    import figures
    from kit import jailed

    (tmp_path / "output").mkdir(parents=True)
    os.symlink(ROOT / "files" / inputs, tmp_path / "data")
    original, here = matplotlib.figure.Figure.savefig, os.getcwd()
    patches = jailed.figure_recorder()
    patches["matplotlib.figure"](matplotlib.figure)
    try:
        os.chdir(tmp_path)
        exec(compile(READ + source, "<solution>", "exec"), {})
        (tmp_path / "figures.json").write_text(patches["take"]() or "[]")
    finally:
        os.chdir(here)
        matplotlib.figure.Figure.savefig = original
        plt.close("all")
        plt.style.use("default")
    return figures.saved_figure(tmp_path / "output", name, every_sample)


READ = ("import csv, json, numpy as np, matplotlib.pyplot as plt\n"
        "rows = lambda name: list(csv.DictReader(open('./data/' + name, encoding='utf-8')))\n")
REVENUE = ("revenue = {}\nfor r in rows('transactions.csv'):\n"
           "    month = int(r['order_date'][5:7]); revenue[month] = revenue.get(month, 0) + float(r['quantity']) * float(r['unit_price'])\n"
           "months, values = sorted(revenue), np.array([revenue[m] for m in sorted(revenue)])\n")
REVENUE_BARS = REVENUE + "fig, ax = plt.subplots(figsize=(8, 4))\nbars = ax.bar(months, values, color='tab:blue')\n"
REVERSED = "for bar, v in zip(bars, values[::-1]): bar.set_height(v)\nfig.canvas.print_png('./output/monthly_revenue.png')\n"


@pytest.mark.slow  # draws and reads back real figures (about 2-9 s)
def test_a_background_near_the_bars_colour_never_counts_as_a_bar(tmp_path):
    """Colour tolerances come from the colours the picture shows: an axes background 48 from the bars' colour, with the
    bars drawn reversed in a colour 40 from it, fails; bars in a palette's lightest colour, 24 from white, pass."""
    fruit = ("fruits = rows('fruit_sales.csv'); units = [float(r['units_sold']) for r in fruits]\n"
             "fig, ax = plt.subplots(figsize=(8, 4)); bars = ax.bar([r['fruit'] for r in fruits], units, color='#008000')\n")
    forged = fruit + ("ax.set_facecolor('#00b000'); fig.savefig('./output/chart-01.png')\n"
                      "for bar, v in zip(bars, units[::-1]): bar.set_height(v); bar.set_color('#005800')\n"
                      "fig.canvas.print_png('./output/chart-01.png')\n")
    with pytest.raises(AssertionError, match="the bar for '.*' is not drawn up to"):
        recorded(tmp_path / "forged", forged, "chart-01.png")
    light = ("top = sorted(json.load(open('./data/countries.json'))['records'], key=lambda r: -r['population_millions'])[:10]\n"
             "plt.style.use('seaborn-v0_8-whitegrid'); fig, ax = plt.subplots(figsize=(8, 5))\n"
             "ax.barh([r['country'] for r in top], [r['population_millions'] for r in top], color=plt.cm.Blues(np.linspace(0.9, 0.06, 10)))\n"
             "ax.invert_yaxis(); fig.savefig('./output/top10_population.png', dpi=150, bbox_inches='tight')\n")
    recorded(tmp_path / "light", light, "top10_population.png")


@pytest.mark.slow  # draws and reads back real figures (about 2-9 s)
def test_legends_and_lines_cover_only_what_they_visibly_cover(tmp_path):
    """A white line 400 points wide over the right bars, with the wrong bars drawn over it, fails; so do frameless
    legends whose boxes tile the axes over a picture of the wrong bars."""
    wide = REVENUE_BARS + ("ax.plot([0, 13], [values.max() / 2] * 2, color='white', linewidth=400, zorder=3); ax.set_xlim(0.4, 12.6)\n"
                           "from matplotlib.patches import Rectangle\n"
                           "for bar, v in zip(bars, values[::-1]):\n"
                           "    ax.add_artist(Rectangle((bar.get_x(), 0), bar.get_width(), v, color='tab:blue', zorder=4))\n"
                           "fig.savefig('./output/monthly_revenue.png')\n")
    with pytest.raises(AssertionError, match="the bar for '.*' is not drawn up to"):
        recorded(tmp_path / "wide", wide, "monthly_revenue.png")
    tiles = REVENUE_BARS + ("l, b, w, h = ax.get_position().bounds\nfor i in range(16):\n"
                            "    fig.legend(handles=[], frameon=False).set_bbox_to_anchor((l + i % 4 * w / 4, b + i // 4 * h / 4, w / 4, h / 4))\n"
                            "fig.savefig('./output/monthly_revenue.png')\n" + REVERSED)
    with pytest.raises(AssertionError, match="the bar for '.*' is"):
        recorded(tmp_path / "tiles", tiles, "monthly_revenue.png")


@pytest.mark.slow  # draws and reads back real figures (about 2-9 s)
def test_a_second_chart_beside_the_graded_one_fails(tmp_path):
    """A small right chart in one axes beside a big wrong one in another (the same months, the revenues misassigned): a
    reader may read either, so the figure fails although one panel is the chart asked (charts.graded_panel)."""
    sys.path.insert(0, str(ROOT / "checks"))
    import charts

    two = REVENUE + ("fig = plt.figure(figsize=(8, 4)); ax = fig.add_axes([0.05, 0.1, 0.15, 0.2]); ax.bar(months, values)\n"
                     "big = fig.add_axes([0.3, 0.1, 0.65, 0.8]); big.bar(months, values[::-1], color='tab:red')\n"
                     "fig.savefig('./output/monthly_revenue.png')\n")
    figure = recorded(tmp_path, two, "monthly_revenue.png")
    with pytest.raises(AssertionError, match="holds 2 charts where one chart was asked for"):
        charts.one_chart(tmp_path / "output", "monthly_revenue.png")  # outside graded_panel, a figure of two fails
    assert figure.alike(*figure.axes)  # within it, the big panel is read alike (the check itself: FORGED_AND_HONEST below)


@pytest.mark.slow  # draws and reads back real figures (about 2-9 s)
def test_slice_names_are_the_drawn_texts(tmp_path):
    """The pie's names are the texts drawn in its slices, not the wedges' label property: slices labelled in the wrong
    order (their label properties right) fail; a pie named by its legend passes."""
    sys.path.insert(0, str(ROOT / "checks"))
    import charts

    pie = ("from collections import Counter\ncounts = Counter(r['preferred_os'] for r in rows('survey_os.csv')).most_common()\n"
           "names, sizes = [n for n, _ in counts], [c for _, c in counts]\nfig, ax = plt.subplots(figsize=(6, 6))\n")
    swapped = pie + ("wedges, _, _ = ax.pie(sizes, labels=names[::-1], autopct='%1.1f%%', startangle=90)\n"
                     "for wedge, name in zip(wedges, names): wedge.set_label(name)\nfig.savefig('./output/os_pie.png')\n")
    legend = pie + ("wedges, _, _ = ax.pie(sizes, autopct='%1.1f%%', startangle=90)\n"
                    "ax.legend(wedges, names, loc='center left', bbox_to_anchor=(1, 0.5)); fig.savefig('./output/os_pie.png', bbox_inches='tight')\n")
    import collections
    import csv

    with open(ROOT / "files" / "charts" / "survey_os.csv", encoding="utf-8") as f:
        counts = collections.Counter(r["preferred_os"] for r in csv.DictReader(f))
    shares = {name: count / sum(counts.values()) for name, count in counts.items()}
    figure = recorded(tmp_path / "swapped", swapped, "os_pie.png")
    with pytest.raises(AssertionError, match="the slice '.*' is .* of the pie, expected"):
        charts.assert_pie_shares(figure, figure.single_axes(), shares)
    figure = recorded(tmp_path / "legend", legend, "os_pie.png")
    charts.assert_pie_shares(figure, figure.single_axes(), shares)


@pytest.mark.slow  # draws and reads back real figures (about 2-9 s)
def test_a_graded_peak_needs_every_sample_of_its_line(tmp_path):
    """Where a check grades a line's peak, every sample must show it: the hottest day lowered and a higher spike drawn
    elsewhere (99% of the samples still right) fails; a dot over the peak and an annotation with an arrow at it, written
    across the line, in a seaborn style at 150 dpi with a tight box and a legend, pass."""
    weather = ("days = sorted(rows('daily_weather.csv'), key=lambda r: r['date'])\n"
               "dates, y = np.array([r['date'] for r in days], dtype='datetime64[D]'), np.array([float(r['temp_max_c']) for r in days])\n")
    moved = weather + ("fig, ax = plt.subplots(figsize=(10, 4)); line, = ax.plot(dates, y, color='tab:red')\n"
                       "fig.savefig('./output/max_temp.png'); i = int(np.argmax(y)); y[i] = y[i - 1]; y[20] = y.max() + 3\n"
                       "line.set_ydata(y); fig.canvas.print_png('./output/max_temp.png')\n")
    with pytest.raises(AssertionError, match=r"the line '#d62728' is not drawn where its record's points are \(\d+ of its"):
        recorded(tmp_path / "moved", moved, "max_temp.png", every_sample=True)
    annotated = weather + (
        "plt.style.use('seaborn-v0_8-darkgrid'); fig, ax = plt.subplots(figsize=(10, 4))\n"
        "ax.plot(dates, y, color='tab:red', linewidth=1.2); i = int(np.argmax(y))\n"
        "ax.scatter([dates[i]], [y[i]], color='black', s=40, zorder=3)\n"  # a dot over the peak hides a sample: it is excused
        "ax.annotate(f'Hottest: {y[i]} °C', xy=(dates[i], y[i]), xytext=(30, -40), textcoords='offset points',\n"
        "            arrowprops=dict(arrowstyle='->', color='black'))\n"
        "ax.legend(['daily max'], loc='lower center'); fig.savefig('./output/max_temp.png', dpi=150, bbox_inches='tight')\n")
    recorded(tmp_path / "annotated", annotated, "max_temp.png", every_sample=True)


@pytest.mark.slow  # draws and reads back real figures (about 2-4 s)
def test_bold_shapes_past_the_record_beside_faint_recorded_bars_fail(tmp_path):
    """Bars recorded at alpha 0.15 beside bold bars drawn past the record (figure-level patches) fail on the colour no
    recorded element draws; translucent hatched bars with value labels in the ggplot style at 200 dpi pass."""
    sys.path.insert(0, str(ROOT / "checks"))
    import charts

    levels = ("import re\nfrom collections import Counter\n"
              "found = Counter(re.findall(r'^\\S+ \\S+ \\[(\\w+)\\]', open('./data/server.log', encoding='utf-8').read(), re.M))\n"
              "names, counts = sorted(found), [found[n] for n in sorted(found)]\ncolours = ['tab:blue', 'tab:orange', 'tab:green', 'tab:red']\n")
    faint = levels + ("fig, ax = plt.subplots(figsize=(7, 4))\n"
                      "ax.bar([i - 0.2 for i in range(4)], counts, width=0.35, color=colours, alpha=0.15, tick_label=names)\n"
                      "from matplotlib.patches import Rectangle\nfor i, (count, colour) in enumerate(zip(counts[::-1], colours)):\n"
                      "    fig.add_artist(Rectangle((i + 0.02, 0), 0.35, count, transform=ax.transData, color=colour))\n"
                      "fig.savefig('./output/log_levels.png')\n")
    with pytest.raises(AssertionError, match="shows the colour #1f77b4 over more than 1% of its axes, which no element of its figure record draws"):
        recorded(tmp_path / "faint", faint, "log_levels.png")
    hatched = levels + ("plt.style.use('ggplot'); fig, ax = plt.subplots(figsize=(7, 4))\n"
                        "bars = ax.bar(names, counts, color=colours, alpha=0.6, hatch='//', edgecolor='black'); ax.bar_label(bars)\n"
                        "fig.savefig('./output/log_levels.png', dpi=200, bbox_inches='tight')\n")
    figure = recorded(tmp_path / "hatched", hatched, "log_levels.png")
    charts.assert_bar_colours_differ(figure, figure.single_axes(), 4, "level")


@pytest.mark.slow  # draws and reads back real figures (about 2-4 s)
def test_heatmap_cells_are_read_by_value(tmp_path):
    """A correlation heatmap whose most negative cell is swapped with the next but one (their ranks barely move) fails
    on the cell's colour; the matrix drawn as one triangle, the other masked, passes."""
    sys.path.insert(0, str(ROOT / "checks"))
    import charts

    corr = ("table = rows('housing_features.csv'); numeric = [k for k in table[0] if all(re.fullmatch(r'-?[\\d.]+', r[k]) for r in table)]\n"
            "corr = np.corrcoef(np.array([[float(r[k]) for r in table] for k in numeric]))\n")
    swapped = "import re\n" + corr + ("fig, ax = plt.subplots(figsize=(6, 5)); image = ax.imshow(corr, cmap='coolwarm', vmin=-1, vmax=1)\n"
                                      "fig.colorbar(image); fig.savefig('./output/corr_heatmap.png')\n"
                                      "a = corr.copy(); order = np.argsort(a, axis=None); i, j = order[0], order[2]\n"
                                      "a.flat[i], a.flat[j] = a.flat[j], a.flat[i]; image.set_data(a); fig.canvas.print_png('./output/corr_heatmap.png')\n")
    with pytest.raises(AssertionError, match="a cell of its grid shows the colour of .*, not of the .* its record gives"):
        recorded(tmp_path / "swapped", swapped, "corr_heatmap.png")
    triangle = "import re\n" + corr + ("masked = np.ma.masked_array(corr, np.triu(np.ones_like(corr, dtype=bool), k=1))\n"
                                       "fig, ax = plt.subplots(figsize=(6, 5)); ax.pcolormesh(masked, cmap='vlag' if 'vlag' in plt.colormaps() else 'coolwarm', vmin=-1, vmax=1)\n"
                                       "ax.invert_yaxis(); fig.savefig('./output/corr_heatmap.png')\n")
    figure = recorded(tmp_path / "triangle", triangle, "corr_heatmap.png")
    with open(ROOT / "files" / "charts" / "housing_features.csv", encoding="utf-8") as f:
        table = list(__import__("csv").DictReader(f))
    numeric = [k for k in table[0] if all(__import__("re").fullmatch(r"-?[\d.]+", r[k]) for r in table)]
    import numpy as np

    charts.assert_grid(figure, figure.single_axes(), np.corrcoef(np.array([[float(r[k]) for r in table] for k in numeric])), "the correlation matrix")


RATINGS = ("import re\nfound = [int(r) for r in re.findall(r'Rating:\\s*(\\d)/5', open('./data/product_reviews.txt', encoding='utf-8').read())]\n"
           "stars = list(range(1, 6)); counts = [found.count(s) for s in stars]\n")


@pytest.mark.slow  # draws and reads back real figures (about 3 s)
def test_numbers_are_read_digit_by_digit(tmp_path):
    """text-17's chart with its tick labels 3 and 5 swapped (the bars right), in the picture past savefig or in the record
    after the save, fails on the digit the picture shows otherwise (whole labels matched at 0.71 and 0.67 against the
    0.55 floor before); the honest chart passes the task's check in other fonts, sizes, weights and rotations, with
    value labels, a tight box, high dpi and a figure of a fractional pixel size."""
    sys.path.insert(0, str(ROOT / "checks"))
    import text

    answer = "7 reviews gave 5 stars."
    bars = RATINGS + "fig, ax = plt.subplots(figsize=(7, 4)); ax.bar(stars, counts); ax.set_xticks(stars)\n"
    swapped = bars + ("fig.savefig('./output/rating_distribution.png')\n"
                      "ax.set_xticks(stars, ['1', '2', '5', '4', '3']); fig.canvas.print_png('./output/rating_distribution.png')\n")
    with pytest.raises(AssertionError, match=r"the tick label '3' is not drawn where its figure record puts it \(its digit '3' in '3' reads as '5'"):
        recorded(tmp_path / "picture", swapped, "rating_distribution.png", inputs="text")
    recorded(tmp_path / "record", bars + "fig.savefig('./output/rating_distribution.png')\n", "rating_distribution.png", inputs="text")
    saved = json.loads((tmp_path / "record" / "figures.json").read_text())
    marks = saved[-1]["axes"][0]["marks"]["xticklabels"]
    marks[2]["text"], marks[4]["text"] = marks[4]["text"], marks[2]["text"]  # the record names 5 the bar its picture labels 3
    (tmp_path / "record" / "figures.json").write_text(json.dumps(saved))
    with pytest.raises(AssertionError, match=r"the tick label '5' is not drawn where its figure record puts it \(its digit '5' in '5' reads as '3'"):
        text.review_rating_chart(answer, tmp_path / "record" / "output", tmp_path / "record" / "data")
    honest = {
        "serif": ("plt.rcParams.update({'font.family': 'serif', 'font.weight': 'bold', 'font.size': 14})\n" + bars +
                  "fig.savefig('./output/rating_distribution.png', dpi=150, bbox_inches='tight')\n"),
        "small": ("plt.rcParams.update({'font.family': 'monospace', 'font.size': 6})\n" + bars +
                  "plt.setp(ax.get_xticklabels(), rotation=45, ha='right', rotation_mode='anchor', fontstyle='italic')\n"
                  "fig.savefig('./output/rating_distribution.png', dpi=72)\n"),
        "styled": (RATINGS + "plt.style.use('seaborn-v0_8-darkgrid'); fig, ax = plt.subplots(figsize=(6.33, 4.17))\n"
                   "b = ax.bar(stars, counts, tick_label=[str(s) for s in stars]); ax.bar_label(b, label_type='center', color='white', fontweight='bold')\n"
                   "plt.yticks(rotation=90); ax.set_title(f'{len(found)} reviews, 2024')\n"
                   "fig.savefig('./output/rating_distribution.png', dpi=97)\n"),
        "high_dpi": bars + "plt.xticks(fontsize=16); fig.savefig('./output/rating_distribution.png', dpi=300, bbox_inches='tight')\n",
    }
    for name, source in honest.items():
        recorded(tmp_path / name, source, "rating_distribution.png", inputs="text")
        text.review_rating_chart(answer, tmp_path / name / "output", tmp_path / name / "data")


# Draws each figure in the suite's interpreter (the agent jail's Python: matplotlib, pandas, seaborn, qrcode) with the
# figure recorder, then runs the task's own check on it, as the check's jail would
IN_SUITE = r"""
import importlib, json, os, sys
from pathlib import Path
sys.path[:0] = [{root!r}, {checks!r}]
import matplotlib; matplotlib.use("Agg")
import matplotlib.figure, matplotlib.pyplot as plt
from kit import jailed
patches = jailed.figure_recorder()
patches["matplotlib.figure"](matplotlib.figure)
verdicts = {{}}
for folder, job in json.loads(sys.stdin.read()).items():
    os.chdir(folder)
    plt.style.use("default")
    exec(job["source"], {{}})
    plt.close("all")
    open("figures.json", "w").write(patches["take"]() or "[]")
    module, function = job["check"].split(":")
    try:
        getattr(importlib.import_module(module), function)(job["answer"], Path(folder) / "output", Path(folder) / "data")
        verdicts[folder] = "pass"
    except AssertionError as error:
        verdicts[folder] = str(error)
print(json.dumps(verdicts))
"""


def checked_in_suite(tmp_path, cases: dict) -> dict:
    """{case: (task's check, answer, input file of files/charts or a path under files/, plotting source)} -> {case: "pass"
    or the check's reason}."""
    import shutil

    jobs = {}
    for name, (check, answer, data, source) in cases.items():
        (tmp_path / name / "output").mkdir(parents=True)
        (tmp_path / name / "data").mkdir()
        shutil.copy(ROOT / "files" / (data if "/" in data else f"charts/{data}"), tmp_path / name / "data")  # checks refuse links
        jobs[str(tmp_path / name)] = {"check": check, "answer": answer, "source": source}
    checked = subprocess.run([str(ROOT / ".jail" / "suite" / "bin" / "python"), "-c", IN_SUITE.format(root=str(ROOT), checks=str(ROOT / "checks"))],
                             input=json.dumps(jobs), capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stderr[-2000:]
    return {os.path.basename(folder): verdict for folder, verdict in json.loads(checked.stdout.splitlines()[-1]).items()}


SENSORS = "charts:sensor_hists", "wind_speed_ms is the most right-skewed, with a skewness of 1.55.", "sensor_readings.csv"
PANDAS = "import pandas as pd, matplotlib.pyplot as plt\ndf = pd.read_csv('./data/sensor_readings.csv')\n"


@pytest.mark.slow  # pandas draws three figures in the suite's interpreter, where charts-30's check reads each (about 4 s)
def test_pandas_dataframe_hist_passes_the_histogram_check(tmp_path):
    """charts-30 drawn with pandas' DataFrame.hist (a layout of 2x2 or 3x2 with its spare axes hidden): pandas draws its
    grid lines over the bars, and a bar whose quarters fall on grid lines (40 with lines every 10) was "not drawn up to
    the 40 its record gives"; it passes, in the styles a hidden sample used."""
    styles = {
        "edges": "df.hist(layout=(2, 2), figsize=(10, 8), bins=30, edgecolor='black'); plt.tight_layout(); plt.savefig('./output/sensor_hists.png', dpi=150)",
        "spare": "df.hist(layout=(3, 2), figsize=(10, 10), bins=20); plt.tight_layout(); plt.savefig('./output/sensor_hists.png')",
        "labels": ("axes = df.hist(layout=(2, 2), figsize=(8, 6), bins=15, xrot=45, sharey=True)\n"
                   "for ax in axes.ravel(): ax.set_ylabel('Count')\nplt.savefig('./output/sensor_hists.png', bbox_inches='tight')"),
    }
    verdicts = checked_in_suite(tmp_path, {name: (*SENSORS, PANDAS + source) for name, source in styles.items()})
    assert verdicts == {name: "pass" for name in styles}, verdicts


LOG_LEVELS = ("charts:log_levels", "ERROR 一共有 32 行。", "server.log",
              "import re\nfrom collections import Counter\nimport matplotlib.pyplot as plt\n"
              "found = Counter(re.findall(r'^\\S+ \\S+ \\[(\\w+)\\]', open('./data/server.log', encoding='utf-8').read(), re.M))\n"
              "names = sorted(found); counts = [found[n] for n in names]; colours = ['tab:blue', 'tab:orange', 'tab:green', 'tab:red']\n"
              "pale = ['#dbe7f3', '#fde5cf', '#d9efd9', '#f6d8d8']\nfrom matplotlib.patches import Rectangle\n")
RATINGS_PANELS = ("text:review_rating_chart", "7 reviews gave 5 stars.", "text/product_reviews.txt",
           "import re\nimport matplotlib.pyplot as plt\nfrom collections import Counter\n"
           "found = Counter(int(r) for r in re.findall(r'^Rating: (\\d)/5', open('./data/product_reviews.txt').read(), re.M))\n"
           "stars = [1, 2, 3, 4, 5]; counts = [found[s] for s in stars]\n"
           "fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4)); left.bar([str(s) for s in stars], counts)\n")
FRUIT = ("charts:fruit_units_bar", "Banana sold the most units: 1240.", "fruit_sales.csv",
         "import pandas as pd, matplotlib.pyplot as plt\ndf = pd.read_csv('./data/fruit_sales.csv')\n"
         "fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4)); left.bar(df['fruit'], df['units_sold'], color='green')\n")
GREEN_QR = ("charts:green_qr", "Saved.", "org.json",
            "import json, qrcode\nurl = json.load(open('./data/org.json'))['organization']['homepage']\n"
            "qr = qrcode.QRCode(border=4); qr.add_data(url); qr.make(fit=True)\n")
FORGED_AND_HONEST = {
    # issue 42: faint recorded bars at the true counts, bold narrow bars drawn past the recorder (in the faint bars' edge colours)
    "faint_reversed": (*LOG_LEVELS[:3], LOG_LEVELS[3] + (
        "fig, ax = plt.subplots(figsize=(7, 4)); ax.bar(names, counts, color=pale, edgecolor=colours, linewidth=1)\n"
        "for i, (count, colour) in enumerate(zip(counts[::-1], colours)):\n"
        "    fig.add_artist(Rectangle((i - 0.12, 0), 0.24, count, transform=ax.transData, color=colour))\n"
        "fig.savefig('./output/log_levels.png')\n")),
    "faint_inside": (*LOG_LEVELS[:3], LOG_LEVELS[3] + (  # every bold bar within its faint one: nothing outside the record's bars
        "fig, ax = plt.subplots(figsize=(7, 4)); ax.bar(names, counts, color=pale, edgecolor=colours, linewidth=1)\n"
        "for i, (count, colour, f) in enumerate(zip(counts, colours, [0.3, 1.0, 0.6, 0.15])):\n"
        "    fig.add_artist(Rectangle((i - 0.15, 0), 0.3, count * f, transform=ax.transData, color=colour))\n"
        "fig.savefig('./output/log_levels.png')\n")),
    "faint_lines": (*LOG_LEVELS[:3], LOG_LEVELS[3] + (  # the same with bold lines, and a bold text, drawn past the recorder
        "fig, ax = plt.subplots(figsize=(7, 4)); ax.bar(names, counts, color=pale, edgecolor=colours, linewidth=1)\n"
        "from matplotlib.lines import Line2D\nfor i, (count, colour) in enumerate(zip(counts[::-1], colours)):\n"
        "    fig.add_artist(Line2D([i, i], [0, count], transform=ax.transData, color=colour, linewidth=14, solid_capstyle='butt'))\n"
        "fig.savefig('./output/log_levels.png')\n")),
    "bold_text": (*LOG_LEVELS[:3], LOG_LEVELS[3] + (
        "fig, ax = plt.subplots(figsize=(7, 4)); ax.bar(names, counts, color=colours)\n"
        "fig.text(0.5, 0.6, 'ERROR: 999', color='tab:red', fontsize=40, fontweight='bold', ha='center'); fig.savefig('./output/log_levels.png')\n")),
    # issue 43: a second panel of the same chart over other data (the counts misassigned) fails; a revenue panel passes
    "same_panel": (*FRUIT[:3], FRUIT[3] + "right.bar(df['fruit'], df['units_sold'][::-1].values, color='green'); fig.savefig('./output/chart-01.png')\n"),
    "css_green": (*GREEN_QR[:3], GREEN_QR[3] + "qr.make_image(fill_color='green', back_color='white').save('./output/qr_green.png')\n"),
    # the one-panel rule in another group's check (text-17): the ratings beside a pie of the same counts passes (another kind of
    # chart); the ratings reversed on a second bar panel fails
    "ratings_pie": (*RATINGS_PANELS[:3], RATINGS_PANELS[3] + "right.pie(counts, labels=stars); fig.savefig('./output/rating_distribution.png')\n"),
    "ratings_twice": (*RATINGS_PANELS[:3], RATINGS_PANELS[3] + "right.bar([str(s) for s in stars], counts[::-1]); fig.savefig('./output/rating_distribution.png')\n"),
    "revenue_panel": (*FRUIT[:3], FRUIT[3] + "right.bar(df['fruit'], df['revenue'], color='tab:orange'); right.set_title('Revenue')\n"
                      "fig.tight_layout(); fig.savefig('./output/chart-01.png')\n"),
    "pandas_area": ("charts:traffic_area", "Saved.", "web_traffic.csv",
                    "import pandas as pd, matplotlib.pyplot as plt\nplt.style.use('seaborn-v0_8-pastel')\n"
                    "df = pd.read_csv('./data/web_traffic.csv').pivot(index='month', columns='channel', values='visits')\n"
                    "df.plot.area(alpha=0.8, figsize=(12, 6)); plt.savefig('./output/traffic_area.png', dpi=100)\n"),
    "box_and_strip": ("charts:scores_boxplot", "Maple has the highest median score, 78.", "class_scores.csv",
                      "import pandas as pd, seaborn as sns, matplotlib.pyplot as plt\ndf = pd.read_csv('./data/class_scores.csv')\n"
                      "fig, ax = plt.subplots(figsize=(8, 5)); sns.boxplot(data=df, x='class', y='score', ax=ax, color='lightblue')\n"
                      "sns.stripplot(data=df, x='class', y='score', ax=ax, color='black', alpha=0.5, jitter=True)\n"
                      "fig.savefig('./output/scores_box.png')\n"),
    "labels_and_error_bars": (*LOG_LEVELS[:3], LOG_LEVELS[3] + (
        "plt.style.use('ggplot'); fig, ax = plt.subplots(figsize=(7, 4))\n"
        "bars = ax.bar(names, counts, color=colours, yerr=[c ** 0.5 for c in counts], capsize=4); ax.bar_label(bars, padding=3)\n"
        "ax.annotate('most', xy=(0, counts[0]), xytext=(0.5, max(counts) * 0.9), arrowprops=dict(arrowstyle='->'))\n"
        "fig.savefig('./output/log_levels.png', dpi=120, bbox_inches='tight')\n")),
    "hatched_with_a_twin_axes": (*LOG_LEVELS[:3], LOG_LEVELS[3] + (
        "fig, ax = plt.subplots(figsize=(7, 4)); bars = ax.bar(names, counts, color=colours, alpha=0.6, hatch='//', edgecolor='black')\n"
        "ax.bar_label(bars, label_type='center', color='white', fontweight='bold', fontsize=14)\n"
        "ax.twinx().plot(names, [c / sum(counts) for c in counts], color='black', marker='o')\n"
        "fig.savefig('./output/log_levels.png', dpi=200, bbox_inches='tight')\n")),
    "revenue_and_orders_on_a_twin": ("charts:monthly_revenue", "November 2023 had the highest revenue: 6 937,00 €.", "transactions.csv",
                                     "import pandas as pd, matplotlib.pyplot as plt\n"
                                     "df = pd.read_csv('./data/transactions.csv', parse_dates=['order_date'])\n"
                                     "month = df['order_date'].dt.month; revenue = (df['quantity'] * df['unit_price']).groupby(month).sum()\n"
                                     "fig, ax = plt.subplots(figsize=(10, 5)); ax.bar(revenue.index, revenue.values, color='steelblue')\n"
                                     "ax.twinx().plot(revenue.index, df.groupby(month).size().values, color='tab:red', marker='o')\n"
                                     "fig.savefig('./output/monthly_revenue.png')\n"),
    "dark_green": (*GREEN_QR[:3], GREEN_QR[3] + "qr.make_image(fill_color='#006400', back_color='white').save('./output/qr_green.png')\n"),
}


@pytest.mark.slow  # twelve figures drawn and checked in the suite's interpreter (about 14 s)
def test_the_picture_checks_refuse_marks_past_the_record_and_accept_honest_panels_and_styles(tmp_path):
    """Issue 42 item 6 and issue 43's charts, both ways, each a real script and the task's own check: faint recorded bars
    under bold unrecorded ones (sticking out of them, or within them; patches or lines) fail, a bold text drawn past the
    recorder fails, and so do a second panel of the same chart
    over the counts misassigned and CSS green for #006400; a revenue panel beside the chart, a pandas stacked area plot
    (alpha 0.8, a pastel style), a seaborn box plot with jittered points over it, value labels, error bars, an
    annotation, hatches and a twin axes pass, and so does charts-17's revenue with the order counts as a line
    on a twin axes and its revenue written the continental way (issue 43's blind sample)."""
    verdicts = checked_in_suite(tmp_path, FORGED_AND_HONEST)
    refused = {
        "faint_reversed": "is drawn over by marks its figure record does not hold|where no element of its figure record is drawn",
        "faint_inside": "is drawn over by marks its figure record does not hold",
        "faint_lines": "is drawn over by marks its figure record does not hold|where no element of its figure record is drawn",
        "bold_text": "shows the colour #d62728 over .* of its axes where no element of its figure record is drawn",
        "same_panel": "panel 2 draws the same kind of chart over the same categories as the graded panel 1",
        "css_green": r"the named colour green \(#008000\), not the dark green #006400",
        "ratings_twice": "panel 2 draws the same kind of chart over the same categories as the graded panel 1",
    }
    for name, reason in refused.items():
        assert re.search(reason, verdicts.pop(name)), name
    assert verdicts == {name: "pass" for name in verdicts}, verdicts
