"""Checks for the `charts` group (category `chart`): plots saved under ./output plus, for most tasks, a number or
name stated in the answer. Matplotlib charts are checked through the figure record (checks/figures.py): the chart
type the query asks for, its data (bar heights, slice shares, line values, cell values), stacking, order, colours,
axis orientation and the legend; every bar, line, wedge, point, area and grid of the record must show in the saved
image where its axes put it (figures.assert_picture_shows), so data, order, stacking and colours are proven by the
picture; so are the words (tick labels naming the bars, legend entries, titles, axis labels, slice labels and
percentages: each rendered again and found at its recorded place, figures.keep_shown_texts, or blanked when the
record says it was not drawn). Not proven by it: a heatmap's values beyond their order where its colour norm is
neither linear nor log. Word clouds (drawn by the wordcloud
package, not matplotlib) are checked on their pixels, QR codes by decoding them (cv2.QRCodeDetector).
"""
import functools
import re
from pathlib import Path

from common import assert_chart, assert_claim, assert_number, assert_words, load_image, numbers_in
from figures import (Axes, Figure, alpha, close, is_date_axis, is_green, is_red, line_points, match_series, same_numbers,
                     saved_figure)

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
# The same months as German, French and Spanish answers name them (accents optional).
OTHER_MONTHS = ["Januar Jänner janvier enero", "Februar février fevrier febrero", "März Maerz mars marzo", "avril abril",
                "Mai mayo", "Juni juin junio", "Juli juillet julio", "août aout agosto", "septembre septiembre setiembre",
                "Oktober octobre octubre", "novembre noviembre", "Dezember décembre decembre diciembre"]


def month_names(month: int) -> str:
    """A regex alternation of the month's names: English (full and 3 letters) and OTHER_MONTHS, case-insensitive except
    the English 'May', which is also a verb."""
    english = [MONTHS[month - 1], MONTHS[month - 1][:3]]
    other = "|".join(OTHER_MONTHS[month - 1].split())
    return f"(?:May|(?i:{other}))" if month == 5 else f"(?i:{'|'.join(english)}|{other})"


# ----------------------------------------------------------------------------------------------- image helpers
def _small(image, limit: int = 1000):
    """image shrunk (nearest neighbour, so flat colours stay exact) to at most `limit` pixels a side."""
    from PIL import Image

    if max(image.size) <= limit:
        return image
    f = limit / max(image.size)
    return image.resize((max(1, int(image.width * f)), max(1, int(image.height * f))), Image.NEAREST)


def hue_bins(image, min_share: float = 0.001, s_min: int = 64, v_min: int = 50) -> dict:
    """{hue bin start in degrees (10-degree bins): share of all pixels} for clearly coloured pixels.

    Anti-aliasing against a white, grey or black background keeps the hue, so one series colour stays one bin.
    """
    import numpy as np

    hsv = np.asarray(_small(image).convert("HSV")).reshape(-1, 3).astype(int)
    mask = (hsv[:, 1] >= s_min) & (hsv[:, 2] >= v_min)
    counts = np.bincount((hsv[mask, 0] * 36) // 256, minlength=36) / len(hsv)
    return {b * 10: float(c) for b, c in enumerate(counts) if c >= min_share}


def flat_colours(image, min_share: float = 0.001, greys: bool = False) -> int:
    """How many distinct colours fill flat areas (pixels equal to their 4 neighbours) covering >= min_share of the image.

    Counts pie slices, bar/area fills and heatmap cells even when a palette shares one hue (e.g. 'Blues'); anti-aliased
    edges and thin lines are never flat, so they add nothing. Greys (and white) are left out unless greys=True, and
    near-white is always left out.
    """
    import numpy as np

    a = np.asarray(_small(image)).astype(int) // 8
    if a.shape[0] < 3 or a.shape[1] < 3:
        return 0
    c = a[1:-1, 1:-1]
    flat = ((c == a[:-2, 1:-1]).all(-1) & (c == a[2:, 1:-1]).all(-1) & (c == a[1:-1, :-2]).all(-1)
            & (c == a[1:-1, 2:]).all(-1))
    px = c[flat]
    px = px[px.min(axis=1) < 30]  # not near-white (values are /8)
    if not greys:
        px = px[(px.max(axis=1) - px.min(axis=1)) >= 3]
    if len(px) == 0:
        return 0
    keys = px[:, 0] * 1024 + px[:, 1] * 32 + px[:, 2]
    counts = np.bincount(keys) / (a.shape[0] * a.shape[1])
    return int((counts >= min_share).sum())


def colour_count(image, greys: bool = False) -> int:
    """Distinct chart colours: the larger of the hue-bin count and the flat-fill colour count."""
    return max(len(hue_bins(image)), flat_colours(image, greys=greys))


def chart(output: Path, name: str, min_colours: int = 1, hue_share: float = 0.001, greys: bool = False):
    """./output/name is a real, non-blank chart of a sensible size with at least min_colours chart colours."""
    image = assert_chart(output, name)
    w, h = image.size
    assert w >= 300 and h >= 200, f"./output/{name} is only {w}x{h} pixels"
    assert w <= 10000 and h <= 10000, f"./output/{name} is {w}x{h} pixels, unreasonably large"
    if min_colours <= 1:
        assert hue_bins(image, min_share=hue_share), f"./output/{name} has no coloured plot elements (empty axes?)"
    else:
        n = colour_count(image, greys=greys)
        assert n >= min_colours, f"./output/{name} shows {n} distinct colour(s), expected at least {min_colours}"
    return image


def _longest_runs(mask):
    """Per column of a 2-D bool array, the longest vertical run of True."""
    import numpy as np

    best = np.zeros(mask.shape[1], int)
    cur = np.zeros(mask.shape[1], int)
    for row in mask:
        cur = np.where(row, cur + 1, 0)
        best = np.maximum(best, cur)
    return best


def strokes(image, lo: float = 0.05, hi: float = 0.7) -> int:
    """How many pixel columns (or rows) hold a dark straight stroke of medium length (5%-70% of the image).

    Box edges and whiskers produce many; empty axes produce none (their frame is longer, text and ticks are shorter).
    """
    import numpy as np

    dark = np.asarray(_small(image).convert("L")) < 120
    h, w = dark.shape
    cols, rows = _longest_runs(dark), _longest_runs(dark.T)
    nv = int(((cols >= lo * h) & (cols <= hi * h)).sum())
    nh = int(((rows >= lo * w) & (rows <= hi * w)).sum())
    return max(nv, nh)


def box_chart(output: Path, name: str):
    """./output/name is a box plot-like chart: coloured boxes/medians, or (black-and-white styles) box edges and whiskers."""
    image = assert_chart(output, name)
    w, h = image.size
    assert w >= 300 and h >= 200, f"./output/{name} is only {w}x{h} pixels"
    assert w <= 10000 and h <= 10000, f"./output/{name} is {w}x{h} pixels, unreasonably large"
    assert hue_bins(image, min_share=0.0002) or strokes(image) >= 6, f"./output/{name} shows no boxes (empty axes?)"
    return image


def dominant_hue(image):
    """Hue bin (degrees) holding the most clearly coloured pixels, or None."""
    bins = hue_bins(image, min_share=0.0)
    bins = {k: v for k, v in bins.items() if v > 0}
    return max(bins, key=bins.get) if bins else None


def decode_qr(image) -> str:
    """Text of the QR code in image ('' if none decodes); retries with a quiet zone, upscaling and thresholding."""
    import cv2
    import numpy as np

    gray = np.asarray(image.convert("L"))
    attempts = [gray]
    padded = cv2.copyMakeBorder(gray, 40, 40, 40, 40, cv2.BORDER_CONSTANT, value=255)
    attempts.append(padded)
    if max(gray.shape) < 400:
        f = max(2, int(600 / max(gray.shape)))
        attempts.append(cv2.resize(padded, None, fx=f, fy=f, interpolation=cv2.INTER_NEAREST))
    _, otsu = cv2.threshold(attempts[-1], 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    attempts.append(otsu)
    detectors = [cv2.QRCodeDetector()]
    if hasattr(cv2, "QRCodeDetectorAruco"):
        detectors.append(cv2.QRCodeDetectorAruco())
    for det in detectors:
        for arr in attempts:
            try:
                text, _, _ = det.detectAndDecode(arr)
            except cv2.error:
                continue
            if text:
                return text
    return ""


def qr(output: Path, name: str, expected: str):
    image = load_image(output, name)
    assert image.width >= 50 and image.height >= 50, f"./output/{name} is only {image.width}x{image.height} pixels"
    text = decode_qr(image)
    assert text, f"./output/{name} does not decode as a QR code"
    assert text == expected, f"the QR code encodes {text[:80]!r}, expected {expected!r}"
    return image


# ----------------------------------------------------------------------------------------------- answer helpers
def assert_names(answer: str, expected, candidates, what: str, marked=()) -> None:
    """The answer puts expected forward as the `what`, among the data's candidates: the first it names in bold, else the
    first it names at all (see answers.assert_claim); a wrong one named first fails even when the right one follows.
    Candidates in marked (words of ordinary prose) count only where the answer marks them as words ('"the"')."""
    options = {str(c): [str(c)] for c in [*candidates, *marked]}
    assert_claim(answer, str(expected), options, what, marked=tuple(str(c) for c in marked))


def unfiltered_top_words(text: str, known, n: int = 5) -> list[str]:
    """The n most frequent words of text counted without leaving stopwords out, beyond the known candidates: what an
    answer that forgot to leave them out puts forward ('the', 'and', ...)."""
    from collections import Counter

    counts = Counter(re.findall(r"[a-z]+(?:'[a-z]+)?", text.lower()))
    return [word for word, _ in counts.most_common(n + len(known)) if word not in known][:n]


def assert_any_word(answer: str, *options: str, what: str = "the answer") -> None:
    low = answer.lower()
    assert any(o.lower() in low for o in options), f"{what} should mention {options[0]}"


def assert_date(answer: str, year: int, month: int, day: int) -> None:
    """The answer names the date (ISO, numeric, 'July 19', '19 July', '7月19日' ...)."""
    names = month_names(month)
    d, m = str(day), str(month)
    nd = r"(?<!\d)"
    na = r"(?!\d)"
    pats = [
        rf"{nd}{year}[-/.]0?{m}[-/.]0?{d}{na}",
        rf"{nd}0?{m}/0?{d}/{year}{na}", rf"{nd}0?{d}[/.]0?{m}[/.]{year}{na}",
        rf"\b{names}\.?\s+0?{d}(?:st|nd|rd|th)?{na}",
        rf"{nd}0?{d}(?:st|nd|rd|th)?\.?\s+(?:of\s+|de\s+)?{names}\b",
        rf"{nd}{m}\s*月\s*{d}\s*日",
    ]
    assert any(re.search(p, answer, re.IGNORECASE) for p in pats), f"the answer should name the date {year}-{month:02d}-{day:02d}"


def assert_month(answer: str, year: int, month: int) -> None:
    pats = [rf"\b{month_names(month)}\b\.?", rf"(?<!\d){year}[-/]0?{month}(?!\d)", rf"(?<!\d)0?{month}/{year}(?!\d)",
            rf"(?<!\d){month}\s*月"]
    assert any(re.search(p, answer) for p in pats), f"the answer should name the month {MONTHS[month - 1]} {year}"


def assert_abs_number(answer: str, expected: float, abs_tol: float, what: str = "the answer") -> None:
    """Some number in the answer is within abs_tol of expected, or of -expected (sign-free)."""
    for v in numbers_in(answer):
        if abs(abs(v) - abs(expected)) <= abs_tol:
            return
    raise AssertionError(f"{what} should contain {expected:.3f} (within {abs_tol})")


# ----------------------------------------------------------------------------------------------- data helpers
def _csv(data: Path, name: str):
    import pandas as pd

    return pd.read_csv(data / name)


def _json(data: Path, name: str):
    import json

    return json.loads((data / name).read_text(encoding="utf-8"))


# =============================================================================================== checks
# ----------------------------------------------------------------------------------------------- record helpers
def _label(text) -> str:
    return str(text).strip().lower()


def _slice_label(text, categories) -> str:
    """A pie slice's label as a category: itself, else without the share or count written after the category
    ('Windows\n38.1%', 'iOS (13)')."""
    label = _label(text)
    return label if label in categories else re.sub(r"[\s:(\[-]*\d[\d.,]*\s*%?[)\]]?$", "", label) or label


class Panels(AssertionError):
    """A figure of several panels where the check grades one: graded_panel tries each (outside it, the figure fails)."""

    def __init__(self, figure: Figure, what: str):
        super().__init__(f"./output/{figure.name} holds {len(figure.axes)} charts where one {what} was asked for")
        self.figure = figure


PANEL = []  # (the panel's number, its figure, already held to its picture) while graded_panel tries each in turn


def one_chart(output: Path, name: str, what: str = "chart", every_sample: bool = False) -> tuple[Figure, Axes]:
    """The saved figure and its one plotting axes, or in a figure of several the panel graded_panel is trying;
    every_sample where the check grades a line's peak or extreme (see figures.saved_figure)."""
    if PANEL:
        return PANEL[1], PANEL[1].axes[PANEL[0]]
    figure = saved_figure(output, name, every_sample)
    if len(figure.axes) > 1:
        raise Panels(figure, what)
    return figure, figure.single_axes(what)


def graded_panel(check):
    """The check, on a figure of several panels (subplots, a twin axes, an inset), run on each panel in turn: it passes
    when one panel is the chart asked (the check passes on it) and no other panel could be read as it (Figure.alike: the
    same kind of chart over the same categories, with the same values in part); a panel of something else may stand beside it."""
    @functools.wraps(check)
    def run(answer: str, output: Path, data: Path) -> None:
        try:
            return check(answer, output, data)
        except Panels as several:
            figure = several.figure
        failures = []
        for number, panel in enumerate(figure.axes):
            PANEL[:] = [number, figure]
            try:
                check(answer, output, data)
            except AssertionError as error:
                failures.append(f"panel {number + 1}: {error}")
                continue
            finally:
                PANEL.clear()
            read_alike = [n + 1 for n, other in enumerate(figure.axes) if other is not panel and figure.alike(panel, other)]
            assert not read_alike, (f"./output/{figure.name}: panel {read_alike[0]} draws the same kind of chart over the same categories as the"
                                    f" graded panel {number + 1}, with other values: a reader may read either")
            return None
        raise AssertionError(f"no panel of ./output/{figure.name} is the chart asked for ({'; '.join(failures)})")

    return run


def assert_no_other_kind(ax: Axes, name: str, kind: str) -> None:
    """A bar chart is bars (not a line or points over the categories), and so on. What a plotting library draws over
    bars for what such a query asks is part of a bar chart: error bars (seaborn draws them as lines) and a histogram's
    density curve (seaborn's kde=True); grid lines are no data at all."""
    overlays = ax.error_bar_lines() + ax.density_curves() if kind == "bars" else []
    lines = [line for line in ax.data_lines() if line not in overlays]
    others = {"bars": bool(ax.bars), "lines": bool(lines), "points": bool(ax.scatters()), "wedges": bool(ax.wedges)}
    assert others.pop(kind), f"./output/{name} draws no {kind}"
    extra = [k for k, v in others.items() if v]
    assert not extra, f"./output/{name} draws {', '.join(extra)} where {kind} were asked for"


def assert_bar_values(ax: Axes, expected: dict, name: str, rel: float = 1e-3, what: str = "bar") -> None:
    """One bar per category, each bar as tall (long) as expected[category], matched through its tick label."""
    bars = ax.bars
    assert len(bars) == len(expected), f"./output/{name} has {len(bars)} bars, expected {len(expected)} (one per {what})"
    wanted = {_label(k): float(v) for k, v in expected.items()}
    for bar in bars:
        label = _label(ax.nearest_label(bar))
        assert label in wanted, f"./output/{name}: a bar is labelled {label!r}, which is no {what} of the data"
        assert close(ax.bar_value(bar), wanted[label], rel), \
            f"./output/{name}: the bar for {label!r} shows {ax.bar_value(bar):g}, expected {wanted[label]:g}"


def assert_bar_colours_differ(figure: Figure, ax: Axes, count: int, what: str) -> None:
    colours = {bar["color"][:7]: bar["color"] for bar in ax.bars}  # told apart by colour, shown with their alpha
    assert len(colours) >= count, f"./output/{figure.name}: its bars have {len(colours)} colour(s), expected one per {what} ({count})"
    for colour in colours.values():
        figure.assert_shows_colour(colour, "bar")


def assert_pie_shares(figure: Figure, ax: Axes, shares: dict, rel: float = 2e-3) -> None:
    """The wedges are the expected shares, each wedge labelled with its category (legend or label)."""
    wedges = ax.wedges
    name = figure.name
    assert wedges, f"./output/{name} is not a pie chart (no wedges)"
    assert len(wedges) == len(shares), f"./output/{name} has {len(wedges)} slices, expected {len(shares)}"
    total = sum((w["theta2"] - w["theta1"]) % 360 or 360 for w in wedges) if len(wedges) > 1 else 360
    wanted = {_label(k): float(v) for k, v in shares.items()}
    # the names the picture draws: a text within the slice's angles, else the drawn legend (one entry per slice)
    labels = [next((_slice_label(t, wanted) for t in w.get("drawn_texts", []) if _slice_label(t, wanted) in wanted), "") for w in wedges]
    if not any(labels):  # plt.pie(labels=None) + a legend
        legend = [t for t in ax.legend if t] or [t for t in ax.record.get("figure_legend", []) if t]
        labels = [_slice_label(l, wanted) for l in legend] if len(legend) == len(wedges) else labels
    for wedge, label in zip(wedges, labels):
        got = ((wedge["theta2"] - wedge["theta1"]) % 360 or 360) / total
        assert _label(label) in wanted, f"./output/{name}: a slice is labelled {label!r}, which is no category of the data"
        assert close(got, wanted[_label(label)], rel, 1e-3), \
            f"./output/{name}: the slice {label!r} is {got:.2%} of the pie, expected {wanted[_label(label)]:.2%}"
    for wedge in wedges:
        figure.assert_shows_colour(wedge["color"], "slice")


def assert_percent_labels(figure: Figure, ax: Axes, count: int) -> None:
    shown = [t for t in ax.texts if "%" in t]
    assert len(shown) >= count, f"./output/{figure.name} labels {len(shown)} slice(s) with a percentage, expected {count}"


def series_of(line: dict) -> list[float]:
    return [y for _, y in line_points(line)]


def assert_lines_match(figure: Figure, ax: Axes, series: dict, what: str, rel: float = 1e-3) -> None:
    """One line per entry of series ({name: values in x order}), each line's y values exactly that series."""
    lines = ax.data_lines()
    assert len(lines) >= len(series), f"./output/{figure.name} has {len(lines)} line(s), expected one per {what} ({len(series)})"
    for key, values in series.items():
        match = [line for line in lines if match_series(series_of(line), list(values), rel)]
        assert match, f"./output/{figure.name}: no line shows the values of {key}"
        figure.assert_shows_colour(match[0]["color"], f"line of {key}", min_share=0.0002)


def boxes(ax: Axes) -> int:
    """Box-plot boxes: matplotlib's closed 5-point box outlines, or filled box patches (patch_artist, seaborn)."""
    outlines = [line for line in ax.lines if line["n"] == 5 and line["x"][0] == line["x"][-1] and line["y"][0] == line["y"][-1]]
    filled = [p for p in ax.patches if p["kind"] in ("PathPatch", "Polygon") and p.get("extent")]
    return max(len(outlines), len(filled))


def segment_levels(ax: Axes) -> list[float]:
    """The levels of 2-point horizontal and vertical segments (box-plot medians, whisker caps)."""
    levels = []
    for line in ax.lines:
        if line["n"] == 2:
            (x0, x1), (y0, y1) = line["x"], line["y"]
            if y0 == y1 and x0 != x1:
                levels.append(y0)
            elif x0 == x1 and y0 != y1:
                levels.append(x0)
    return levels


def assert_box_plot(figure: Figure, ax: Axes, medians: dict) -> None:
    """One box per group, each group's median drawn as a median line, the groups named on the category axis."""
    name = figure.name
    assert not ax.bars, f"./output/{name} draws bars, not a box plot"
    n = boxes(ax)
    assert n == len(medians), f"./output/{name} draws {n} boxes, expected one per group ({len(medians)})"
    levels = segment_levels(ax)
    for group, median in medians.items():
        assert any(close(level, float(median), 1e-6, 1e-6) for level in levels), f"./output/{name}: no box has the median of {group} ({median:g})"
    labels = {_label(t) for t in ax.record.get("xticklabels", []) + ax.record.get("yticklabels", []) + ax.legend}
    missing = [g for g in medians if _label(g) not in labels]
    assert not missing, f"./output/{name} does not name the group(s) {', '.join(map(str, missing))} on its axes"


def assert_grid(figure: Figure, ax: Axes, expected, what: str, rel: float = 1e-3):
    """A heatmap whose cells are the expected 2-D values (its rows top-down or, as pcolormesh draws them, bottom-up).
    A symmetric matrix may be shown as one triangle (seaborn's mask=): a masked cell's mirror must be shown."""
    import numpy as np

    expected = np.asarray(expected, dtype=float)
    symmetric = expected.shape[0] == expected.shape[-1] and np.allclose(expected, expected.T, equal_nan=True)
    grids = [g for g in ax.grids() if g.get("values")]
    assert grids, f"./output/{figure.name} is not a heatmap (no colour grid with values)"
    for grid in grids:
        values = np.asarray(grid["values"], dtype=float).reshape(grid["rows"], grid["columns"])
        for shown in (values, values[::-1]):  # pcolormesh rows run bottom-up
            if shown.shape != expected.shape:
                continue
            masked = np.isnan(shown) & ~np.isnan(expected)
            if symmetric and masked.any() and not (masked & masked.T).any():
                shown = np.where(masked, shown.T, shown)  # one triangle: each masked cell shown across the diagonal
            if np.allclose(shown, expected, rtol=rel, atol=1e-6, equal_nan=True):
                return grid
    shapes = ", ".join(f"{g['rows']}x{g['columns']}" for g in grids)
    raise AssertionError(f"./output/{figure.name}: the heatmap ({shapes}) does not show {what} ({expected.shape[0]}x{expected.shape[1]})")


# =============================================================================================== checks
@graded_panel
def fruit_units_bar(answer: str, output: Path, data: Path) -> None:
    """Verifies from the figure record: chart-01.png is a bar chart (bars only), one bar per fruit as tall as its units sold,
    every bar green (and green shows in the image); the answer names the top fruit (Banana) and its units (1240)."""
    df = _csv(data, "fruit_sales.csv")
    top = df.loc[df["units_sold"].idxmax()]
    figure, ax = one_chart(output, "chart-01.png")
    assert_no_other_kind(ax, figure.name, "bars")
    assert_bar_values(ax, dict(zip(df["fruit"], df["units_sold"])), figure.name, what="fruit")
    off = [b["color"] for b in ax.bars if not is_green(b["color"])]
    assert not off, f"./output/chart-01.png has bars that are not green ({off[0][:7]})"
    figure.assert_shows_colour(ax.bars[0]["color"], "bar")
    assert_names(answer, top["fruit"], df["fruit"], "fruit")
    assert_number(answer, float(top["units_sold"]), what="units sold")


@graded_panel
def quarterly_grouped_bar(answer: str, output: Path, data: Path) -> None:
    """Verifies from the record: chart-02.png has grouped (not stacked) bars, one group per region on the category axis
    and one bar per quarter in a colour of its own, each bar the region's sales in that quarter; the answer names Q3 and
    its all-region total (711.0)."""
    import pandas as pd

    df = pd.read_excel(data / "quarterly_region.xlsx", sheet_name="Sales2023").set_index("Region")
    totals = df.sum()
    q = totals.idxmax()
    figure, ax = one_chart(output, "chart-02.png")
    assert_no_other_kind(ax, figure.name, "bars")
    assert not ax.stacked(), "chart-02.png stacks its bars; a grouped chart puts them side by side"
    assert len(ax.bars) == df.size, f"chart-02.png has {len(ax.bars)} bars, expected {df.size} (regions x quarters)"
    for bar in ax.bars:
        region, quarter = ax.nearest_label(bar), str(bar["group"])
        assert region in df.index, f"chart-02.png: a bar group is labelled {region!r}, not a region (one group per region was asked)"
        assert quarter in df.columns, f"chart-02.png: a bar series is named {quarter!r}, not a quarter (one bar per quarter was asked)"
        assert close(ax.bar_value(bar), float(df.loc[region, quarter])), f"chart-02.png: the {region} {quarter} bar is {ax.bar_value(bar):g}, expected {df.loc[region, quarter]:g}"
    assert_bar_colours_differ(figure, ax, len(df.columns), "quarter")
    n = q[1]
    ordinal = {"1": "first", "2": "second", "3": "third", "4": "fourth"}[n]
    assert_any_word(answer, q, f"quarter {n}", f"{ordinal} quarter", what="the best quarter")
    assert_number(answer, float(totals.max()), what="the quarter total")


@graded_panel
def energy_stacked_bar(answer: str, output: Path, data: Path) -> None:
    """Verifies from the record: energy_stacked.png stacks one bar segment per source on one bar per year, each stack as tall
    as the year's total generation, a colour per source; the answer gives the 2023 wind+solar share (about 21.85%)."""
    df = _csv(data, "energy_mix.csv")
    y = df[df["year"] == df["year"].max()]
    share = y[y["source"].isin(["Wind", "Solar"])]["generation_twh"].sum() / y["generation_twh"].sum()
    figure, ax = one_chart(output, "energy_stacked.png")
    assert_no_other_kind(ax, figure.name, "bars")
    assert ax.stacked(), "energy_stacked.png does not stack its bars (segments side by side or a single series)"
    totals = df.groupby("year")["generation_twh"].sum()
    tops = sorted(ax.stacks().values())
    assert same_numbers(tops, sorted(totals), rel=1e-3), f"energy_stacked.png: the stacks reach {', '.join(f'{t:g}' for t in tops)}, not the yearly totals"
    assert len(ax.bar_groups) == df["source"].nunique(), f"energy_stacked.png has {len(ax.bar_groups)} segment series, expected one per source"
    assert_bar_colours_differ(figure, ax, df["source"].nunique(), "source")
    assert_number(answer, share * 100, rel=0.004, what="the wind+solar share")


@graded_panel
def max_temp_line(answer: str, output: Path, data: Path) -> None:
    """Verifies from the record: max_temp.png draws the daily maximum temperatures as a line in date order, dates on the
    x-axis; the answer names the hottest day by daily maximum (2023-07-19) and its temperature (36.4)."""
    import pandas as pd

    df = _csv(data, "daily_weather.csv")
    df = df.sort_values("date")
    row = df.loc[df["temp_max_c"].idxmax()]
    ts = pd.Timestamp(row["date"])
    figure, ax = one_chart(output, "max_temp.png", every_sample=True)
    assert_no_other_kind(ax, figure.name, "lines")
    assert_lines_match(figure, ax, {"temp_max_c": df["temp_max_c"].tolist()}, "series")
    assert is_date_axis(ax), "max_temp.png does not show dates on its x-axis"
    assert_date(answer, ts.year, ts.month, ts.day)
    assert_number(answer, float(row["temp_max_c"]), what="the maximum temperature")


@graded_panel
def stocks_multiline(answer: str, output: Path, data: Path) -> None:
    """Verifies from the record: stocks.png has one line per ticker, each exactly that ticker's closes, and a legend naming
    every ticker; the answer names the best % gainer (BOLT) and its gain (about 10.2%)."""
    j = _json(data, "stock_prices.json")
    series = {t: [p["close"] for p in sorted(v, key=lambda p: p["date"])] for t, v in j["tickers"].items()}
    gains = {t: (v[-1] / v[0] - 1) * 100 for t, v in series.items()}
    best = max(gains, key=gains.get)
    figure, ax = one_chart(output, "stocks.png", every_sample=True)
    assert_lines_match(figure, ax, series, "ticker")
    legend = {_label(t) for t in ax.legend + [t for l in figure.record.get("legends", []) for t in l]}
    missing = [t for t in series if _label(t) not in legend]
    assert not missing, f"stocks.png has no legend entry for {', '.join(missing)}"
    assert_names(answer, best, gains, "ticker")
    assert_number(answer, gains[best], rel=0.005, what="the percentage gain")


@graded_panel
def os_pie(answer: str, output: Path, data: Path) -> None:
    """Verifies from the record: os_pie.png is a pie with one slice per OS at its share of respondents, every slice labelled
    with a percentage; the answer names Windows and its share (38.125%)."""
    df = _csv(data, "survey_os.csv")
    vc = df["preferred_os"].value_counts(normalize=True)
    figure, ax = one_chart(output, "os_pie.png", "pie")
    assert_pie_shares(figure, ax, vc.to_dict())
    assert_percent_labels(figure, ax, len(vc))
    assert_names(answer, vc.index[0], vc.index, "operating system")
    assert_number(answer, float(vc.iloc[0]) * 100, rel=0.004, what="the share of the top OS")


@graded_panel
def ad_regression(answer: str, output: Path, data: Path) -> None:
    """Verifies from the record: ad_regression.png scatters every week's (online spend, sales), and draws a red straight line
    with the least-squares slope and intercept (1%) over it; the answer states the OLS slope (about 2.727)."""
    import numpy as np

    df = _csv(data, "ad_sales.csv")
    slope, intercept = (float(v) for v in np.polyfit(df["online_spend_k"], df["sales_k"], 1))
    figure, ax = one_chart(output, "ad_regression.png")
    points = sorted(tuple(p) for s in ax.scatters() for p in s["offsets"])
    points += sorted((x, y) for line in ax.lines if line["linestyle"] in ("None", "") for x, y in line_points(line))
    expected = sorted(zip(df["online_spend_k"], df["sales_k"]))
    assert len(points) == len(expected) and all(close(a[0], b[0]) and close(a[1], b[1]) for a, b in zip(sorted(points), expected)), \
        "ad_regression.png does not scatter online spend (x) against sales (y) for every week"
    red = [line for line in ax.data_lines() + [l for l in ax.lines if l["n"] == 2] if is_red(line["color"])]
    assert red, "ad_regression.png has no red line"
    fitted = []
    for line in red:
        (x0, y0), (x1, y1) = line_points(line)[0], line_points(line)[-1]
        if x1 != x0:
            fitted.append(((y1 - y0) / (x1 - x0), y0 - (y1 - y0) / (x1 - x0) * x0))
    assert any(close(s, slope, 0.01) and close(i, intercept, 0.01) for s, i in fitted), \
        f"ad_regression.png: the red line is not the least-squares line (slope {slope:.3f}, intercept {intercept:.2f})"
    figure.assert_shows_colour(red[0]["color"], "regression line", min_share=0.0002)
    assert_number(answer, slope, rel=0.01, what="the slope")


@graded_panel
def salary_histogram(answer: str, output: Path, data: Path) -> None:
    """Verifies from the record: salary_hist.png is a histogram of the salaries with exactly 15 bins (the counts of 15 equal
    bins over the salary range); the answer states the median salary (51450)."""
    import numpy as np
    import pandas as pd

    df = pd.read_excel(data / "employees.xlsx")
    counts, _ = np.histogram(df["salary_usd"].dropna(), bins=15)
    figure, ax = one_chart(output, "salary_hist.png", "histogram")
    assert_no_other_kind(ax, figure.name, "bars")
    bars = sorted(ax.bars, key=ax.bar_position)
    assert len(bars) == 15, f"salary_hist.png has {len(bars)} bins, expected 15"
    assert same_numbers([ax.bar_value(b) for b in bars], counts), "salary_hist.png: the bin counts are not those of the salaries in 15 bins"
    assert_number(answer, float(df["salary_usd"].median()), what="the median salary")


@graded_panel
def scores_boxplot(answer: str, output: Path, data: Path) -> None:
    """Verifies from the record: scores_box.png is a box plot with one box per class at that class' median, classes named on
    the axis; the answer names Maple and its median (78)."""
    df = _csv(data, "class_scores.csv")
    med = df.groupby("class")["score"].median()
    figure, ax = one_chart(output, "scores_box.png", "box plot")
    assert_box_plot(figure, ax, med.to_dict())
    assert_names(answer, med.idxmax(), med.index, "class")
    assert_number(answer, float(med.max()), what="the highest median")


@graded_panel
def corr_heatmap(answer: str, output: Path, data: Path) -> None:
    """Verifies from the record: corr_heatmap.png is a heatmap of the numeric columns' correlation matrix (every cell, or one
    triangle with the other masked), annotated with a number in each drawn cell; the answer names distance_km & price_k and their correlation (about -0.556)."""
    import numpy as np

    df = _csv(data, "housing_features.csv").select_dtypes("number")
    corr = df.corr()
    c = corr.to_numpy(copy=True)
    np.fill_diagonal(c, np.inf)
    i, j = np.unravel_index(np.argmin(c), c.shape)
    figure, ax = one_chart(output, "corr_heatmap.png", "heatmap")
    grid = assert_grid(figure, ax, corr.to_numpy(), "the correlation matrix of the numeric columns")
    cells = sum(v == v for v in grid["values"])  # the cells drawn (a triangle where the other is masked)
    annotations = [t for t in ax.texts if numbers_in(t)]
    assert len(annotations) >= cells, f"corr_heatmap.png has {len(annotations)} cell annotations, expected {cells}"
    assert_number(" ".join(annotations), float(c[i, j]), rel=0.02, abs_tol=0.006, what="the heatmap's annotations")
    for col in (df.columns[i], df.columns[j]):
        assert_words(answer, col.split("_")[0])
    assert_abs_number(answer, float(c[i, j]), abs_tol=0.006, what="the correlation")


@graded_panel
def traffic_area(answer: str, output: Path, data: Path) -> None:
    """Verifies: traffic_area.png is 1200x600 pixels (+-1%); from the record, a stacked area chart: one filled band per channel,
    the top band reaching each month's total visits."""
    df = _csv(data, "web_traffic.csv")
    image = load_image(output, "traffic_area.png")
    w, h = image.size
    assert abs(w - 1200) <= 12 and abs(h - 600) <= 6, f"traffic_area.png is {w}x{h}, expected 1200x600"
    figure, ax = one_chart(output, "traffic_area.png", "area chart")
    areas = ax.areas()
    n = df["channel"].nunique()
    assert len(areas) == n, f"traffic_area.png has {len(areas)} filled areas, expected one per channel ({n})"
    totals = df.groupby("month")["visits"].sum()
    top = max((y for area in areas for path in area["paths"] for _, y in path if y is not None), default=0)
    assert close(top, float(totals.max()), 1e-3), f"traffic_area.png's areas reach {top:g}, not the largest monthly total {totals.max():g} (not stacked?)"
    for area in areas:
        figure.assert_shows_colour(area["facecolors"][0], "area")


@graded_panel
def monthly_revenue(answer: str, output: Path, data: Path) -> None:
    """Verifies from the record: monthly_revenue.png has one bar per month, left to right in calendar order, each the month's
    revenue (quantity*unit_price); the answer names November 2023 and its revenue (6937.00)."""
    import pandas as pd

    df = _csv(data, "transactions.csv")
    df["m"] = pd.to_datetime(df["order_date"]).dt.month
    rev = (df["quantity"] * df["unit_price"]).groupby(df["m"]).sum().sort_index()
    figure, ax = one_chart(output, "monthly_revenue.png")
    assert_no_other_kind(ax, figure.name, "bars")
    shown = [ax.bar_value(b) for b in ax.bars_in_display_order()]
    assert same_numbers(shown, rev.tolist(), rel=1e-4), "monthly_revenue.png: the bars are not the monthly revenues in calendar order"
    assert_month(answer, 2023, int(rev.idxmax()))
    assert_number(answer, float(rev.max()), what="the best month's revenue")


@graded_panel
def stores_line(answer: str, output: Path, data: Path) -> None:
    """Verifies from the record: stores_line.png has one line per store, each that store's monthly sales in month order; the
    answer names Downtown and the annual difference (4980)."""
    import pandas as pd

    sheets = pd.read_excel(data / "store_sales.xlsx", sheet_name=None)
    totals = {k: float(v["Sales"].sum()) for k, v in sheets.items()}
    best = max(totals, key=totals.get)
    diff = max(totals.values()) - min(totals.values())
    figure, ax = one_chart(output, "stores_line.png")
    assert_lines_match(figure, ax, {k: v["Sales"].tolist() for k, v in sheets.items()}, "store")
    assert_names(answer, best, totals, "store")
    assert_number(answer, diff, what="the difference in annual totals")


@graded_panel
def top10_population(answer: str, output: Path, data: Path) -> None:
    """Verifies from the record: top10_population.png is a horizontal bar chart of exactly the 10 most populous countries,
    each bar its population, the largest at the top and descending downwards; the answer names the 10th (Mexico) and 128.5 million."""
    import pandas as pd

    df = pd.DataFrame(_json(data, "countries.json")["records"]).sort_values("population_millions", ascending=False)
    top = df.head(10)
    tenth = top.iloc[9]
    figure, ax = one_chart(output, "top10_population.png")
    assert_no_other_kind(ax, figure.name, "bars")
    assert ax.horizontal, "top10_population.png has vertical bars; a horizontal bar chart was asked for"
    assert_bar_values(ax, dict(zip(top["country"], top["population_millions"])), figure.name, what="top-10 country")
    shown = [ax.bar_value(b) for b in ax.bars_in_display_order()]
    assert shown == sorted(shown, reverse=True), "top10_population.png does not put the largest country at the top, descending"
    assert_words(answer, tenth["country"])
    pop = float(tenth["population_millions"])
    try:
        assert_number(answer, pop, rel=2e-3, what="its population (millions)")
    except AssertionError:
        assert_number(answer, pop * 1e6, rel=2e-3, what="its population (millions)")


@graded_panel
def expenses_pie(answer: str, output: Path, data: Path) -> None:
    """Verifies from the record: expenses_pie.png is a pie with one slice per category at its share of the total amount; the
    answer gives rent's share of total spending (about 52.48%)."""
    import pandas as pd

    df = pd.read_excel(data / "expenses.xlsx")
    tot = df.groupby("category")["amount_eur"].sum()
    figure, ax = one_chart(output, "expenses_pie.png", "pie")
    assert_pie_shares(figure, ax, (tot / tot.sum()).to_dict())
    assert_number(answer, float(tot["Rent"] / tot.sum() * 100), rel=0.004, what="rent's share")


@graded_panel
def penguins_scatter(answer: str, output: Path, data: Path) -> None:
    """Verifies from the record: penguins_scatter.png scatters bill length (x) against flipper length (y) for every penguin with
    both, each species in one colour of its own, and a legend naming the species."""
    df = _csv(data, "penguins.csv").dropna(subset=["bill_length_mm", "flipper_length_mm"])
    figure, ax = one_chart(output, "penguins_scatter.png")
    assert_no_other_kind(ax, figure.name, "points")
    colour_of = {}
    for s in ax.scatters():
        colours = s["facecolors"] or s["edgecolors"]
        for number, point in enumerate(s["offsets"]):
            if not all(isinstance(v, float) and v == v for v in point[:2]):
                continue  # a row with a missing value is not drawn
            colour_of.setdefault((round(point[0], 6), round(point[1], 6)), set()).add(colours[number % len(colours)][:7] if len(colours) > 1 else colours[0][:7])
    expected = {(round(float(x), 6), round(float(y), 6)) for x, y in zip(df["bill_length_mm"], df["flipper_length_mm"])}
    assert set(colour_of) == expected, "penguins_scatter.png does not plot bill length (x) against flipper length (y) for every penguin"
    per_species = {}
    for species, group in df.groupby("species"):
        per_species[species] = set().union(*(colour_of[(round(float(x), 6), round(float(y), 6))] for x, y in zip(group["bill_length_mm"], group["flipper_length_mm"])))
    distinct = set().union(*per_species.values())
    assert len(distinct) >= len(per_species), f"penguins_scatter.png colours its points with {len(distinct)} colour(s), not one per species"
    for colour in distinct:
        figure.assert_shows_colour(colour, "point", min_share=0.0002)
    legend = {_label(t) for t in ax.legend + [t for l in figure.record.get("legends", []) for t in l]}
    missing = [s for s in per_species if _label(s) not in legend]
    assert not missing, f"penguins_scatter.png has no legend entry for {', '.join(missing)}"


@graded_panel
def delivery_hist(answer: str, output: Path, data: Path) -> None:
    """Verifies from the record: delivery_hist.png holds one histogram per courier counting all its shipments, overlaid (both
    from the base line, bars overlapping) and semi-transparent; the answer names SwiftShip and the mean difference (about 3.62 h)."""
    df = _csv(data, "deliveries.csv")
    m = df.groupby("courier")["delivery_hours"].mean()
    sizes = df.groupby("courier").size()
    figure, ax = one_chart(output, "delivery_hist.png", "histogram")
    assert_no_other_kind(ax, figure.name, "bars")
    groups = ax.bar_groups
    assert len(groups) == len(sizes), f"delivery_hist.png has {len(groups)} histograms, expected one per courier ({len(sizes)})"
    assert same_numbers(sorted(sum(b["height"] for b in g) for g in groups), sorted(sizes)), "delivery_hist.png: the histograms do not count each courier's shipments"
    assert not ax.stacked(), "delivery_hist.png stacks the histograms; overlaid ones were asked for"
    a, b = groups[0], groups[1]
    overlap = any(min(p["x"] + p["width"], q["x"] + q["width"]) - max(p["x"], q["x"]) > 0.5 * min(p["width"], q["width"]) for p in a for q in b)
    assert overlap, "delivery_hist.png puts the histograms' bars side by side, not overlaid"
    opaque = [g for g in groups if alpha(g[0]["color"]) >= 0.95]
    assert not opaque, "delivery_hist.png: the histograms are not semi-transparent"
    assert_words(answer, m.idxmin())
    assert_number(answer, float(m.max() - m.min()), rel=0.01, what="the difference in mean delivery time")


@graded_panel
def visitors_ma(answer: str, output: Path, data: Path) -> None:
    """Verifies from the record: visitors_ma.png draws the daily visitors as a line and, on the same axes, the trailing 7-day
    moving average (day i = mean of days i-6..i, not a centred window); the answer states its maximum (about 1555.14)."""
    df = _csv(data, "daily_visitors.csv").sort_values("date")
    ma = df["visitors"].rolling(7).mean()
    figure, ax = one_chart(output, "visitors_ma.png", every_sample=True)
    lines = ax.data_lines()
    daily = [line for line in lines if match_series(series_of(line), df["visitors"].tolist())]
    assert daily, "visitors_ma.png has no line of the daily visitors"
    xs = [x for x, _ in line_points(daily[0])]
    expected = {round(x, 6): v for x, v in zip(xs, ma) if v == v}
    trailing = []
    for line in lines:
        if line is daily[0]:
            continue
        points = {round(x, 6): y for x, y in line_points(line)}
        common = [x for x in expected if x in points]
        if len(common) >= len(expected) - 1 and all(close(points[x], expected[x], 1e-4) for x in common):
            trailing.append(line)
    assert trailing, "visitors_ma.png has no line of the trailing 7-day moving average on the daily line's dates"
    figure.assert_shows_colour(trailing[0]["color"], "moving-average line", min_share=0.0002)
    assert_number(answer, float(ma.max()), rel=1e-3, what="the maximum 7-day average")


@graded_panel
def orders_heatmap(answer: str, output: Path, data: Path) -> None:
    """Verifies from the record: orders_heatmap.png is a heatmap with one row per weekday and one column per hour of day, each cell
    the number of orders then (all orders counted), its busiest cell drawn at Friday's row and 18's column (their labels); the answer names the busiest weekday (Friday) and hour (18 / 6 pm)."""
    import pandas as pd

    df = _csv(data, "orders_log.csv")
    ts = pd.to_datetime(df["created_at"])
    counts = df.groupby([ts.dt.day_name(), ts.dt.hour]).size()
    day, hour = counts.idxmax()
    figure, ax = one_chart(output, "orders_heatmap.png", "heatmap")
    grids = [g for g in ax.grids() if g.get("values")]
    assert grids, "orders_heatmap.png is not a heatmap (no colour grid with values)"
    grid = grids[0]
    rows, columns = grid["rows"], grid["columns"]
    assert rows == 7 and columns == ts.dt.hour.nunique() or rows == 7 and columns == 24, \
        f"orders_heatmap.png's grid is {rows}x{columns}; weekdays (7) as rows and hours as columns were asked for"
    values = [v for v in grid["values"] if v == v]
    assert close(sum(values), len(df), 1e-9) and close(max(values), float(counts.max()), 1e-9), \
        "orders_heatmap.png's cells are not the order counts per weekday and hour"
    busiest = max(range(len(grid["values"])), key=lambda i: grid["values"][i] if grid["values"][i] == grid["values"][i] else -1)
    x, y = ax.cell_centre(grid, busiest // columns, busiest % columns)
    row_label, column_label = ax.label_at("y", y, 0.5 * abs(ax.cell_centre(grid, 1, 0)[1] - ax.cell_centre(grid, 0, 0)[1])), \
        ax.label_at("x", x, 0.5 * abs(ax.cell_centre(grid, 0, 1)[0] - ax.cell_centre(grid, 0, 0)[0]))
    assert _label(row_label)[:3] == day.lower()[:3] and numbers_in(column_label)[:1] == [hour], \
        f"orders_heatmap.png's busiest cell is drawn at {row_label or '?'} / {column_label or '?'}, not at {day} / {hour}:00 (its row and column labels)"
    assert_words(answer, day)
    h12 = hour % 12 or 12
    suffix = "pm" if hour >= 12 else "am"
    ok = re.search(rf"(?<!\d){hour}(?::00|h|\s*时|\s*点|\b)", answer) or re.search(rf"(?<!\d){h12}(?::00)?\s*{suffix}", answer, re.I)
    assert ok, f"the answer should name the hour {hour}:00"


@graded_panel
def latency_bars(answer: str, output: Path, data: Path) -> None:
    """Verifies from the record: latency_bars.png has one bar per server at its mean latency, with error bars one standard
    deviation long each way; the answer names the server with the lowest mean (api-3) and that mean (about 96.01 ms)."""
    import pandas as pd

    df = pd.DataFrame(_json(data, "server_latency.json"))
    g = df.groupby("server")["latency_ms"]
    m = g.mean()
    figure, ax = one_chart(output, "latency_bars.png")
    assert_no_other_kind(ax, figure.name, "bars")
    assert_bar_values(ax, m.to_dict(), figure.name, what="server")
    halves = sorted(ax.error_bar_halves())
    sample, population = sorted(g.std(ddof=1)), sorted(g.std(ddof=0))
    assert same_numbers(halves, sample, rel=1e-3) or same_numbers(halves, population, rel=1e-3), \
        "latency_bars.png has no error bars of one standard deviation on each bar"
    assert_names(answer, m.idxmin(), m.index, "server")
    assert_number(answer, float(m.min()), rel=2e-3, what="its mean latency")


@graded_panel
def prices_boxplot(answer: str, output: Path, data: Path) -> None:
    """Verifies from the record: prices_box.png is a box plot with one box per neighbourhood at its median price, named on the
    axis; the answer names the neighbourhood with the widest IQR (Hillcrest) and the IQR (about 115.8)."""
    import pandas as pd

    df = pd.read_excel(data / "house_prices.xlsx")
    q = df.groupby("neighbourhood")["price_k_eur"].quantile([0.25, 0.75]).unstack()
    iqr = q[0.75] - q[0.25]
    figure, ax = one_chart(output, "prices_box.png", "box plot")
    assert_box_plot(figure, ax, df.groupby("neighbourhood")["price_k_eur"].median().to_dict())
    assert_names(answer, iqr.idxmax(), iqr.index, "neighbourhood")
    assert_number(answer, float(iqr.max()), rel=0.005, what="the IQR")


@graded_panel
def likert_stacked(answer: str, output: Path, data: Path) -> None:
    """Verifies from the record: likert_stacked.png is a 100% stacked bar chart: one bar per age group, one segment per answer
    level (each its own colour), every bar summing to 100% (or 1), the segments the groups' shares; the answer gives the 18-29
    'Strongly agree' share (about 36.43%)."""
    import pandas as pd

    df = _csv(data, "likert_survey.csv")
    g = df[df["age_group"] == "18-29"]
    share = (g["response"] == "Strongly agree").mean() * 100
    figure, ax = one_chart(output, "likert_stacked.png")
    assert_no_other_kind(ax, figure.name, "bars")
    assert ax.stacked(), "likert_stacked.png does not stack its bars"
    tops = list(ax.stacks().values())
    groups, levels = df["age_group"].nunique(), df["response"].nunique()
    assert len(tops) == groups, f"likert_stacked.png has {len(tops)} bars, expected one per age group ({groups})"
    scale = 100.0 if close(tops[0], 100, 1e-3) else 1.0
    assert all(close(t, scale, 1e-3) for t in tops), "likert_stacked.png's bars do not each sum to 100% (counts, not shares?)"
    assert len(ax.bar_groups) == levels, f"likert_stacked.png has {len(ax.bar_groups)} segment series, expected one per answer level ({levels})"
    shares = pd.crosstab(df["age_group"], df["response"], normalize="index") * scale
    assert same_numbers(sorted(ax.bar_value(b) for b in ax.bars if ax.bar_value(b) > 0), sorted(v for v in shares.to_numpy().ravel() if v > 0), rel=1e-3), \
        "likert_stacked.png's segments are not the answer levels' shares per age group"
    assert_bar_colours_differ(figure, ax, levels, "answer level")
    assert_number(answer, float(share), rel=0.003, what="the 'Strongly agree' share of 18-29")


@graded_panel
def cumulative_downloads(answer: str, output: Path, data: Path) -> None:
    """Verifies from the record: cumulative_downloads.png is an area chart, a filled area whose top edge is the running total of
    downloads; the answer names the first date the cumulative total reached 10,000 (2024-03-01)."""
    import pandas as pd

    df = pd.DataFrame(_json(data, "downloads.json")["daily"]).sort_values("day")
    cs = df["downloads"].cumsum()
    ts = pd.Timestamp(df.loc[(cs >= 10000).idxmax(), "day"])
    figure, ax = one_chart(output, "cumulative_downloads.png", "area chart")
    areas = ax.areas()
    assert areas, "cumulative_downloads.png is not an area chart (no filled area)"
    wanted = {round(float(v), 6) for v in cs}
    filled = [a for a in areas if len(wanted & {round(y, 6) for path in a["paths"] for _, y in path if y is not None}) >= 0.95 * len(wanted)]
    assert filled, "cumulative_downloads.png: no filled area follows the cumulative downloads"
    figure.assert_shows_colour(filled[0]["facecolors"][0], "area")
    assert_date(answer, ts.year, ts.month, ts.day)


@graded_panel
def log_levels(answer: str, output: Path, data: Path) -> None:
    """Verifies from the record: log_levels.png has one bar per level, each the number of lines of that level (the bracketed
    level, not a word in the message), each in a colour of its own; the answer states the number of [ERROR] lines (32)."""
    text = (data / "server.log").read_text(encoding="utf-8")
    levels = re.findall(r"^\S+ \S+ \[(\w+)\]", text, re.M)
    counts = {level: levels.count(level) for level in set(levels)}
    figure, ax = one_chart(output, "log_levels.png")
    assert_no_other_kind(ax, figure.name, "bars")
    assert_bar_values(ax, counts, figure.name, what="level")
    assert_bar_colours_differ(figure, ax, len(counts), "level")
    assert_number(answer, counts["ERROR"], what="the ERROR line count")


def sensor_hists(answer: str, output: Path, data: Path) -> None:
    """Verifies from the record: sensor_hists.png holds a 2x2 grid of four histograms, one per numeric column, each counting all
    that column's readings over its range; the answer names wind speed as most right-skewed and its skewness (about 1.55, 2%)."""
    df = _csv(data, "sensor_readings.csv").select_dtypes("number")
    sk = df.skew()
    figure = saved_figure(output, "sensor_hists.png")
    hists = [ax for ax in figure.axes if ax.bars]
    assert len(hists) == 4, f"sensor_hists.png has {len(hists)} histogram axes, expected 4"
    lefts = {round(ax.record["position"][0], 3) for ax in hists}
    bottoms = {round(ax.record["position"][1], 3) for ax in hists}
    assert len(lefts) == 2 and len(bottoms) == 2, "sensor_hists.png does not lay its histograms out in a 2x2 grid"
    unmatched = set(df.columns)
    for ax in hists:
        low = min(b["x"] for b in ax.bars)
        high = max(b["x"] + b["width"] for b in ax.bars)
        total = sum(b["height"] for b in ax.bars)
        for column in list(unmatched):
            values = df[column].dropna()
            if close(low, float(values.min()), 1e-6) and close(high, float(values.max()), 1e-6) and close(total, len(values)):
                unmatched.discard(column)
                break
    assert not unmatched, f"sensor_hists.png has no histogram of {', '.join(sorted(unmatched))}"
    assert_names(answer, sk.idxmax().split("_")[0], [column.split("_")[0] for column in df.columns], "variable")
    assert_number(answer, float(sk.max()), rel=0.02, what="the skewness")


def reviews_wordcloud(answer: str, output: Path, data: Path) -> None:
    """Verifies: wordcloud.png is a multi-coloured word-cloud image; the answer puts forward the most frequent non-stopword
    ('battery') as its answer: the first of the frequent words it names (see assert_names)."""
    chart(output, "wordcloud.png", min_colours=3)
    # the next most frequent non-stopwords (wordcloud's STOPWORDS, words of 3+ letters): phone 22, life/best/part 13, ...
    known = ["battery", "phone", "life", "best", "part", "camera", "screen"]
    assert_names(answer, "battery", known, "most frequent word",
                 marked=unfiltered_top_words((data / "reviews.txt").read_text(encoding="utf-8"), known))


def negative_wordcloud(answer: str, output: Path, data: Path) -> None:
    """Verifies: negative_wordcloud.png is a multi-coloured word cloud; the answer puts forward 'refund' (top word of the
    rating<=2 reviews) as its answer, not another frequent word (see assert_names)."""
    chart(output, "negative_wordcloud.png", min_colours=3)
    # the next words of the negative reviews (broken 10, waiting 9, ...) and the top words of all reviews (great, love, easy)
    import csv

    known = ["refund", "broken", "waiting", "weeks", "lid", "leaks", "great", "love", "easy", "clean"]
    with open(data / "product_reviews.csv", encoding="utf-8", newline="") as f:
        negative = " ".join(row["review_text"] for row in csv.DictReader(f) if float(row["rating"]) <= 2)
    assert_names(answer, "refund", known, "dominant word", marked=unfiltered_top_words(negative, known))


def qr_url(answer: str, output: Path, data: Path) -> None:
    """Verifies: qrcode.png decodes (cv2) to exactly https://pybench.example.com/report?id=4821."""
    qr(output, "qrcode.png", "https://pybench.example.com/report?id=4821")


def wifi_qr(answer: str, output: Path, data: Path) -> None:
    """Verifies: wifi_qr.png decodes to exactly WIFI:T:WPA;S:<ssid>;P:<password>;; built from wifi.json."""
    net = _json(data, "wifi.json")["network"]
    qr(output, "wifi_qr.png", f"WIFI:T:WPA;S:{net['ssid']};P:{net['password']};;")


def link_qr(answer: str, output: Path, data: Path) -> None:
    """Verifies: link_qr.png decodes to exactly the URL line of link.txt (no comment lines, no whitespace)."""
    lines = (data / "link.txt").read_text(encoding="utf-8").splitlines()
    url = [ln.strip() for ln in lines if ln.strip().startswith("http")][0]
    qr(output, "link_qr.png", url)


def green_qr(answer: str, output: Path, data: Path) -> None:
    """Verifies: qr_green.png decodes to the homepage URL from org.json and its dark modules are the dark green the
    query names, #006400: their median colour within 40 (RGB distance, 0-255 per channel) of (0, 100, 0) and nearer
    to it than to any other CSS named colour (CSS 'green', #008000, is 28 away: a named colour, not the asked one)."""
    import numpy as np
    from matplotlib.colors import CSS4_COLORS, to_rgb

    url = _json(data, "org.json")["organization"]["homepage"]
    image = qr(output, "qr_green.png", url)
    small = _small(image)
    hsv = np.asarray(small.convert("HSV")).reshape(-1, 3).astype(int)
    rgb_pixels = np.asarray(small.convert("RGB")).reshape(-1, 3).astype(float)
    dark = rgb_pixels[hsv[:, 2] < 200]
    assert len(dark) > 0, "qr_green.png has no dark modules"
    median = np.median(dark, axis=0)
    distance = float(np.linalg.norm(median - np.array([0, 100, 0])))
    shown = f"#{int(median[0]):02x}{int(median[1]):02x}{int(median[2]):02x}"
    assert distance <= 40, f"the QR modules are not the dark green #006400 asked for (their colour is {shown}, {distance:.0f} away)"
    named = min(CSS4_COLORS, key=lambda name: float(np.linalg.norm(median - np.array(to_rgb(CSS4_COLORS[name])) * 255)))
    assert CSS4_COLORS[named].lower() == "#006400", \
        f"the QR modules are {shown}, the named colour {named} ({CSS4_COLORS[named]}), not the dark green #006400 asked for"
