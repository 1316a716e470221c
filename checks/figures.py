"""The figure record, read by the chart checks: what matplotlib drew, not only what the pixels look like.

The agent's jail records every figure its code saves (Figure.savefig, hence plt.savefig, pandas' and seaborn's plots)
or shows (plt.show): per axes its bars (grouped by container, with position, size and colour), lines (data,
colour, style, marker), patches (pie wedges with their angles, rectangles, polygons), collections (scatter
offsets and colours, filled areas' outlines, heatmap meshes with their values), images (shape, extent, origin),
texts, title, axis labels, tick labels, limits, scales and units, and the legend; plus the file it became and its
size in pixels. The harness puts the attempt's records beside output/ as figures.json (read-only in the check's jail).

The recorder runs in the agent's own process, so agent code could forge a record. That is why every record a
check relies on is held against the saved image (saved_figure): the picture must exist, decode, have the pixel
size the record says, and show every chart element (assert_picture_shows) and every text (keep_shown_texts) where the
record puts it; the words a check reads from a Figure or Axes are the ones verified in the picture.
"""
import colorsys
import json
import math
import re
from pathlib import Path

from common import load_image


RECORD_BYTES = 8 * 1024 * 1024  # the most figure record an attempt may leave: more fails the chart, it is not read


def records(output: Path) -> list[dict]:
    """All figure records of the attempt, oldest first ([] if the harness wrote none). Fails past RECORD_BYTES, or
    when the harness cut the attempt's records at its own bound (harness.FIGURE_BYTES)."""
    path = output.parent / "figures.json"
    try:
        size = path.stat().st_size
    except OSError:
        return []
    assert size <= RECORD_BYTES, f"the attempt's figure records are {size} bytes, more than the {RECORD_BYTES} a chart check reads"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [record for record in data if isinstance(record, dict)] if isinstance(data, list) else []


def _names_file(record: dict, output: Path, name: str) -> bool:
    file = record.get("file")
    if not isinstance(file, str):
        return False
    wanted = str(output / name)
    candidates = {file, file + "." + str(record.get("format") or "png")}  # savefig adds the format to a bare name
    return wanted in candidates or any(c.endswith("/output/" + name) for c in candidates)


def saved_figure(output: Path, name: str, every_sample: bool = False) -> "Figure":
    """The figure the agent's code saved as ./output/name (the last save wins), held against the saved image.

    A figure saved to memory first and written out by other means (PIL, a buffer) counts when its pixel size is
    the image's. Fails when no record matches: the file was not made by matplotlib, or not from a figure; when the
    picture does not show the record's chart elements (assert_picture_shows) or texts (keep_shown_texts), which also
    blanks the texts the record says were not drawn. every_sample: a check that grades a line's peak, zero or extreme
    holds every sample of its lines to the picture, not LINE_SHARE of them.
    """
    image = load_image(output, name)
    found = records(output)
    named = [record for record in found if _names_file(record, output, name)]
    if not named:  # drawn into a buffer, then written out: match by pixel size
        named = [record for record in found if not isinstance(record.get("file"), str) or not record["file"].startswith("/task/output")]
        named = [record for record in named if _size_fits(record, image.size)]
    assert named, f"./output/{name} was not saved from a matplotlib figure (no figure record names it)"
    figure = Figure(named[-1], image, name)
    figure.assert_matches_image()
    assert_picture_shows(figure, every_sample)
    keep_shown_texts(figure)
    return figure


def _size_fits(record: dict, size: tuple[int, int]) -> bool:
    width, height = (record.get("pixels") or [0, 0])[:2]
    if record.get("bbox_inches") in (None, "standard"):
        return abs(size[0] - width) <= 2 and abs(size[1] - height) <= 2
    # 'tight' crops the margins, or grows the picture to take in artists outside the figure (a legend beside it)
    return 0.2 * width <= size[0] <= 3 * width + 2 and 0.2 * height <= size[1] <= 3 * height + 2


# ----------------------------------------------------------------------------------------------- colours
def rgb(colour: str) -> tuple[float, float, float]:
    """'#rrggbb' or '#rrggbbaa' as (r, g, b) in 0..1."""
    colour = colour.lstrip("#")
    return tuple(int(colour[i:i + 2], 16) / 255 for i in (0, 2, 4))


def alpha(colour: str) -> float:
    colour = colour.lstrip("#")
    return int(colour[6:8], 16) / 255 if len(colour) >= 8 else 1.0


def hue(colour: str) -> float | None:
    """Hue in degrees, or None for greys (saturation below 0.25) and near-black."""
    h, s, v = colorsys.rgb_to_hsv(*rgb(colour))
    return None if s < 0.25 or v < 0.15 else h * 360


def is_hue(colour: str, low: float, high: float) -> bool:
    """The colour's hue lies between low and high degrees (low > high wraps through 0, as for red: 340..20)."""
    h = hue(colour)
    if h is None:
        return False
    return low <= h <= high if low <= high else h >= low or h <= high


def is_red(colour: str) -> bool:
    r, g, b = rgb(colour)
    return is_hue(colour, 340, 20) and r >= 0.5 and g <= 0.45 and b <= 0.45


def is_green(colour: str) -> bool:
    return is_hue(colour, 75, 165)


def close(a: float, b: float, rel: float = 1e-3, abs_tol: float = 1e-6) -> bool:
    return a is not None and b is not None and math.isclose(a, b, rel_tol=rel, abs_tol=abs_tol)


def same_numbers(got, expected, rel: float = 1e-3, abs_tol: float = 1e-6, ordered: bool = True) -> bool:
    """got and expected hold the same numbers (in the same order, or as multisets when ordered=False)."""
    got, expected = [float(g) for g in got], [float(e) for e in expected]
    if len(got) != len(expected):
        return False
    if not ordered:
        got, expected = sorted(got), sorted(expected)
    return all(close(g, e, rel, abs_tol) for g, e in zip(got, expected))


# ----------------------------------------------------------------------------------------------- the record
class Axes:
    """One axes of a record, with what the chart checks ask of it."""

    def __init__(self, record: dict):
        self.record = record
        self.title = record.get("title") or " ".join(t for t in record.get("titles", []) if t)
        self.xlabel, self.ylabel = record.get("xlabel", ""), record.get("ylabel", "")
        self.legend = record.get("legend") or []
        self.texts = record.get("texts", [])

    # bars ------------------------------------------------------------------------------------------------------
    @property
    def bar_groups(self) -> list[list[dict]]:
        """Each bar container's visible bars (a plt.bar call, a hist, one pandas column, one seaborn hue level)."""
        groups = [[bar for bar in group.get("bars", []) if bar.get("visible", True)] for group in self.record.get("bars", [])]
        return [group for group in groups if group]

    @property
    def bars(self) -> list[dict]:
        """Every visible bar, with "group" (its container's name as the picture draws it: its drawn legend entry) and
        "index" (its container's number) added. A legend of one entry per container names them in their order (pandas,
        seaborn's hue, bar(label=)); else a container's label names it only where a drawn legend shows it."""
        labels = [group.get("label", "") for group in self.record.get("bars", []) if any(b.get("visible", True) for b in group.get("bars", []))]
        drawn = [text for text in self.legend if text] or [text for text in self.record.get("figure_legend", []) if text]
        labels = list(drawn) if len(drawn) == len(labels) else [label if label in drawn else "" for label in labels]
        return [dict(bar, group=labels[number], index=number) for number, group in enumerate(self.bar_groups) for bar in group
                if _finite(bar["width"]) and _finite(bar["height"])]

    def nearest_label(self, bar: dict) -> str:
        """The category tick label nearest to the bar (grouped bars sit beside their group's tick)."""
        ticks = self.record.get("yticks" if self.horizontal else "xticks", [])
        labels = self.record.get("yticklabels" if self.horizontal else "xticklabels", [])
        pairs = [(abs(tick - self.bar_position(bar)), label) for tick, label in zip(ticks, labels) if _finite(tick)]
        return min(pairs)[1] if pairs else ""

    @property
    def horizontal(self) -> bool:
        """The bars lie along the y axis (barh, kind='barh', seaborn with a categorical y)."""
        groups = self.record.get("bars", [])
        if groups and groups[0].get("orientation"):
            return groups[0]["orientation"] == "horizontal"
        return False

    def bar_value(self, bar: dict) -> float:
        return bar["width"] if self.horizontal else bar["height"]

    def bar_base(self, bar: dict) -> float:
        return bar["x"] if self.horizontal else bar["y"]

    def bar_position(self, bar: dict) -> float:
        """The bar's centre along the category axis."""
        return bar["y"] + bar["height"] / 2 if self.horizontal else bar["x"] + bar["width"] / 2

    def stacked(self) -> bool:
        """Some bar starts where another bar at the same position ends: segments stacked, not side by side."""
        bars = [b for b in self.bars if abs(self.bar_value(b)) > 0]
        for bar in bars:
            base = self.bar_base(bar)
            if abs(base) < 1e-12:
                continue
            for other in bars:
                if other is not bar and close(self.bar_position(other), self.bar_position(bar), 1e-6, 1e-6) \
                        and close(self.bar_base(other) + self.bar_value(other), base, 1e-6, 1e-9):
                    return True
        return False

    def stacks(self) -> dict[float, float]:
        """{category position: top of the stack there} over all bars."""
        tops = {}
        for bar in self.bars:
            key = round(self.bar_position(bar), 6)
            tops[key] = max(tops.get(key, -math.inf), self.bar_base(bar) + self.bar_value(bar))
        return tops

    def bars_in_display_order(self) -> list[dict]:
        """The bars from the left (vertical) or from the top (horizontal), axis inversion taken into account."""
        bars = sorted(self.bars, key=self.bar_position)
        low, high = self.record.get("ylim" if self.horizontal else "xlim", [0, 1])[:2]
        inverted = low > high
        if self.horizontal:  # the top of a plot is the high end of the y axis unless it is inverted
            inverted = not inverted
        return bars[::-1] if inverted else bars

    def category_labels(self) -> list[str]:
        """The tick labels along the category axis, in the axis' order."""
        ticks = self.record.get("yticks" if self.horizontal else "xticks", [])
        labels = self.record.get("yticklabels" if self.horizontal else "xticklabels", [])
        return [label for _, label in sorted(zip(ticks, labels))]

    def bar_labels(self) -> dict[float, str]:
        """{bar position: its category tick label} where ticks sit on the bars."""
        ticks = self.record.get("yticks" if self.horizontal else "xticks", [])
        labels = self.record.get("yticklabels" if self.horizontal else "xticklabels", [])
        found = {}
        for bar in self.bars:
            position = self.bar_position(bar)
            for tick, label in zip(ticks, labels):
                if tick is not None and abs(tick - position) <= abs(bar["height" if self.horizontal else "width"]) / 2 + 1e-9:
                    found[round(position, 6)] = label
        return found

    # lines, patches, collections --------------------------------------------------------------------------------
    @property
    def lines(self) -> list[dict]:
        """Visible lines with at least two finite points (not error-bar caps, not seaborn's NaN placeholders)."""
        return [line for line in self.record.get("lines", []) if line.get("visible", True) and line.get("coords", "data") != "other"
                and not (line.get("linestyle") in ("None", "", " ", "none") and line.get("marker") in ("None", "", " ", "none"))
                and sum(_finite(x) and _finite(y) for x, y in zip(line["x"], line["y"])) >= 2]

    def data_lines(self) -> list[dict]:
        """Lines that draw a series: drawn with a line style, more than two points."""
        return [line for line in self.lines if line["linestyle"] not in ("None", "", " ", "none") and line["n"] > 2]

    @staticmethod
    def pieces(line: dict) -> list[list[tuple[float, float]]]:
        """The line's runs of finite points between gaps (seaborn draws an error bar and its caps as one line with gaps)."""
        runs, run = [], []
        for x, y in zip(line["x"], line["y"]):
            if _finite(x) and _finite(y):
                run.append((x, y))
            elif run:
                runs.append(run)
                run = []
        return [piece for piece in runs + [run] if piece]

    def error_bar_lines(self) -> list[dict]:
        """Lines made only of two-point segments: error bars and their caps as seaborn's barplot draws them."""
        return [line for line in self.lines if all(len(piece) == 2 for piece in self.pieces(line))]

    def error_bar_halves(self) -> list[float]:
        """Half the length of each error bar along the value axis: plt.errorbar's and pandas' yerr= segments (a line
        collection) and seaborn's (lines), caps left out."""
        along = 0 if self.horizontal else 1
        segments = [path for c in self.collections("LineCollection") for path in c.get("paths", []) if len(path) == 2]
        segments += [piece for line in self.error_bar_lines() for piece in self.pieces(line)]
        return [abs(b[along] - a[along]) / 2 for a, b in segments
                if abs(b[along] - a[along]) > 0 and abs(b[1 - along] - a[1 - along]) <= 1e-9 * max(1.0, abs(a[1 - along]))]

    def density_curves(self) -> list[dict]:
        """Smooth curves drawn over the bars: one unbroken run, increasing along the bars' axis, within the bars' span and
        sampled far more finely than the bars (20 points or more, at least 3 per bar): a histogram's density (KDE)
        overlay, not a line over the same categories."""
        bars = self.bars
        if not bars:
            return []
        along = 1 if self.horizontal else 0
        low = min(self.bar_position(b) - abs(b["height" if self.horizontal else "width"]) / 2 for b in bars)
        high = max(self.bar_position(b) + abs(b["height" if self.horizontal else "width"]) / 2 for b in bars)
        margin = 0.05 * (high - low)
        curves = []
        for line in self.data_lines():
            pieces = self.pieces(line)
            if len(pieces) != 1 or len(pieces[0]) < max(20, 3 * len(bars)):
                continue
            steps = [b[along] - a[along] for a, b in zip(pieces[0], pieces[0][1:])]
            if all(step > 0 for step in steps) and low - margin <= pieces[0][0][along] and pieces[0][-1][along] <= high + margin:
                curves.append(line)
        return curves

    @property
    def wedges(self) -> list[dict]:
        return [p for p in self.record.get("patches", []) if p["kind"] == "Wedge" and p.get("visible", True)]

    @property
    def patches(self) -> list[dict]:
        return [p for p in self.record.get("patches", []) if p.get("visible", True)]

    def collections(self, *kinds: str) -> list[dict]:
        return [c for c in self.record.get("collections", []) if c.get("visible", True) and (not kinds or c["kind"] in kinds)]

    def scatters(self) -> list[dict]:
        """Point collections with points in them (plt.scatter, pandas' kind='scatter', seaborn's scatterplot)."""
        return [c for c in self.collections("PathCollection") if c.get("n", 0) > 0]

    def areas(self) -> list[dict]:
        """Filled areas (fill_between, stackplot, pandas' kind='area') with their outlines."""
        return [c for c in self.collections("PolyCollection", "FillBetweenPolyCollection") if c.get("paths")]

    def grids(self) -> list[dict]:
        """Value grids drawn as colours: heatmap meshes (pcolormesh, seaborn) and images (imshow, matshow, specgram)."""
        found = []
        for mesh in self.collections("QuadMesh"):
            rows, columns = (mesh.get("array_shape") + [0, 0])[:2] if len(mesh.get("array_shape", [])) >= 2 else (0, 0)
            values = mesh.get("array", [])
            if rows and columns and len(values) == rows * columns:
                found.append({"kind": "mesh", "rows": rows, "columns": columns, "values": values, "cmap": mesh.get("cmap"), "lut": mesh.get("lut"),
                              "clim": mesh.get("clim"), "norm": mesh.get("norm")})
        for image in self.record.get("images", []):
            rows, columns = (image["shape"] + [0, 0])[:2]
            found.append({**image, "kind": "image", "rows": rows, "columns": columns,
                          "values": image.get("array") if len(image.get("array") or []) == rows * columns else None})
        return found

    def cell_centre(self, grid: dict, row: int, column: int) -> tuple[float, float]:
        """The data coordinates (x, y) of a grid cell's centre (a mesh's cell corners, an image's extent)."""
        if grid["kind"] == "mesh":
            mesh = next(m for m in self.collections("QuadMesh") if m.get("array") == grid["values"])
            xs, ys = mesh["xcoords"], mesh["ycoords"]
            return (xs[column] + xs[column + 1]) / 2, (ys[row] + ys[row + 1]) / 2
        left, right, bottom, top = (float(v) for v in grid["extent"][:4])
        if grid.get("origin", "upper") == "upper":
            bottom, top = top, bottom
        return left + (right - left) * (column + 0.5) / grid["columns"], bottom + (top - bottom) * (row + 0.5) / grid["rows"]

    def label_at(self, axis: str, position: float, half: float) -> str:
        """The drawn tick label within `half` of a position along the axis ('x' or 'y'), or ''; where the ticks name
        numbers (every other hour, say), the number they place there."""
        ticks, labels = self.record.get(f"{axis}ticks", []), self.record.get(f"{axis}ticklabels", [])
        pairs = [(tick, label) for tick, label in zip(ticks, labels) if _finite(tick) and label]
        near = [label for tick, label in pairs if abs(tick - position) <= half]
        if near:
            return near[0]
        numbers = [(tick, float(label)) for tick, label in pairs if re.fullmatch(r"-?\d+(?:\.\d+)?", label.strip().replace("\u2212", "-"))]
        if len(numbers) >= 2 and numbers[0][0] != numbers[-1][0]:
            (t0, v0), (t1, v1) = numbers[0], numbers[-1]
            return f"{v0 + (position - t0) * (v1 - v0) / (t1 - t0):g}"
        return ""

    def has_content(self) -> bool:
        return bool(self.bars or self.lines or self.wedges or self.collections() or self.record.get("images") or self.patches)


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


class Figure:
    """One record: the figure as drawn, and the image it became."""

    def __init__(self, record: dict, image, name: str):
        self.record, self.image, self.name = record, image, name
        self.all_axes = [Axes(a) for a in record.get("axes", []) if a.get("visible", True)]
        # colour bars and empty helper axes are not charts of their own
        self.axes = [a for a in self.all_axes if a.has_content() and not _is_colorbar(a)]

    def assert_matches_image(self) -> None:
        """The floor: the record's pixel size is the image's, and its axes hold drawing, not a blank area."""
        import numpy as np

        width, height = self.image.size
        expected = self.record.get("pixels") or [0, 0]
        assert _size_fits(self.record, self.image.size), \
            f"./output/{self.name} is {width}x{height} pixels, but the figure saved there was {expected[0]}x{expected[1]}"
        assert self.axes, f"./output/{self.name} holds no plotted data (its axes are empty)"
        pixels = np.asarray(self.image.convert("RGB")).astype(int)
        if self.record.get("bbox_inches") in (None, "standard"):
            left, bottom, w, h = self.axes[0].record["position"]
            box = pixels[int((1 - bottom - h) * height):int((1 - bottom) * height) + 1, int(left * width):int((left + w) * width) + 1]
        else:
            box = pixels
        assert box.size, f"./output/{self.name}: the axes lie outside the picture"
        background = np.median(box.reshape(-1, 3), axis=0)
        drawn = (np.abs(box - background).sum(axis=-1) > 60).mean()
        assert drawn >= 0.002, f"./output/{self.name} shows nothing drawn in its axes"

    def assert_shows_colour(self, colour: str, what: str, min_share: float = 0.0005, tolerance: int = 40) -> None:
        """The saved picture has pixels of this colour (blended onto white where it is transparent)."""
        import numpy as np

        target = np.array(rgb(colour)) * 255
        a = alpha(colour)
        target = target * a + 255 * (1 - a)
        pixels = np.asarray(self.image.convert("RGB")).reshape(-1, 3).astype(float)
        share = (np.abs(pixels - target).max(axis=1) <= tolerance).mean()
        assert share >= min_share, f"./output/{self.name} does not show the {what} colour {colour[:7]} that its record names"

    def single_axes(self, what: str = "chart") -> Axes:
        """The one chart of a picture where one chart was asked for: a second chart beside it (another axes with data,
        a twin axes, an inset) fails, since a reader could read either."""
        assert self.axes, f"./output/{self.name} holds no {what}"
        assert len(self.axes) == 1, f"./output/{self.name} holds {len(self.axes)} charts where one {what} was asked for"
        return self.axes[0]

    @staticmethod
    def alike(graded: Axes, other: Axes) -> bool:
        """Could a reader read the other panel as the graded chart: the same kind of chart (bars, slices, a grid, areas,
        lines, points) over the same categories (the bars' places along their axis, the slices' count, the grid's shape,
        the lines' and areas' x values, the points' count), at least half of its values among the graded one's (the same
        data shown again, misassigned or partly changed). Judged from the data drawn, never from labels."""
        def drawn(ax: Axes):
            if ax.bars:
                return "bars", sorted(round(ax.bar_position(b), 6) for b in ax.bars), [ax.bar_value(b) for b in ax.bars]
            if ax.wedges:
                return "slices", len(ax.wedges), [(w["theta2"] - w["theta1"]) % 360 for w in ax.wedges]
            if ax.grids():
                return "grid", [(g["rows"], g["columns"]) for g in ax.grids()], [v for g in ax.grids() for v in g.get("values") or []]
            shapes = [[p for p in path if isinstance(p, list) and len(p) == 2] for a in ax.areas() for path in a["paths"]] \
                or [list(zip(line["x"], line["y"])) for line in ax.data_lines()]
            if shapes:
                return "areas" if ax.areas() else "lines", sorted({round(x, 6) for s in shapes for x, _ in s if _finite(x)}), \
                    [y for s in shapes for _, y in s if _finite(y)]
            points = [p for s in ax.scatters() for p in s.get("offsets", []) if isinstance(p, list) and len(p) == 2]
            return "points", len(points), [v for p in points for v in p if _finite(v)]

        (kind, places, values), (other_kind, other_places, other_values) = drawn(graded), drawn(other)
        shared = sum(any(close(v, w, 1e-3, 1e-9) for w in values) for v in other_values)
        return kind == other_kind and places == other_places and bool(other_values) and shared >= len(other_values) / 2

    def text(self) -> str:
        """All words of the figure: titles, labels, tick labels, legends, texts."""
        parts = [self.record.get("suptitle", "")] + [t for legend in self.record.get("legends", []) for t in legend]
        for ax in self.all_axes:
            r = ax.record
            parts += [ax.title, ax.xlabel, ax.ylabel] + ax.legend + ax.texts + r.get("xticklabels", []) + r.get("yticklabels", [])
        return "\n".join(p for p in parts if p)


def _is_colorbar(ax: Axes) -> bool:
    """A colour bar's axes: a single mesh or image strip, no bars, lines or points."""
    grids = ax.grids()
    return bool(grids) and not ax.bars and not ax.lines and not ax.scatters() and all(
        min(g["rows"], g["columns"]) <= 1 or (g["kind"] == "mesh" and min(ax.record["position"][2:4]) < 0.08) for g in grids)


def match_series(got: list[float], expected: list[float], rel: float = 1e-3) -> bool:
    """The plotted values are the expected series (same length and values, in order)."""
    return same_numbers(got, expected, rel=rel, abs_tol=1e-6 * max(1.0, max((abs(e) for e in expected), default=1)))


def line_points(line: dict) -> list[tuple[float, float]]:
    """The line's finite points sorted along x."""
    return sorted((x, y) for x, y in zip(line["x"], line["y"]) if _finite(x) and _finite(y))


def is_date_axis(ax: Axes, axis: str = "x") -> bool:
    """The axis shows dates: a date or period converter, or tick labels that read as dates or months."""
    units = ax.record.get(f"{axis}units", "")
    if any(word in units for word in ("Date", "Period", "Timedelta", "Datetime")):
        return True
    labels = " ".join(ax.record.get(f"{axis}ticklabels", []))
    import re

    return bool(re.search(r"\d{4}-\d{2}|\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\b|\d+月", labels))


# ----------------------------------------------------------------------------------------------- the picture
# The record is made in the agent's own process, so anything in it may be forged (a record written by hand, the
# recorder called on another figure, the data changed after saving, a file written past savefig). Every element a
# check can grade is therefore looked for in the saved picture, at the pixels the record's own axes position, limits,
# scales, figure size, dpi and crop put it: a record whose data the picture does not show fails, whatever wrote it.

Unseen = AssertionError  # a graded fact of the record that the saved picture does not show
TOLERANCE = 48  # colour distance (0..255, the largest channel difference) within which a pixel shows a colour
PRESENT_SHARE = 0.002  # the least share of an axes a flat colour must fill to count as present there
LEGEND_FACE = 0.6  # the least share of a legend's box that must show its frame's face for the legend to cover anything
LINE_COVER = 3.0  # points either side of a drawn line within which it covers what lies under it (a density curve on bars)
LINE_SHARE = 0.85  # the least share of a line's samples that must show its colour (every one where a peak or zero is graded)
OVERDRAWN = 0.15  # the most of a bar's inside that may show other colours than its own (and what the record draws over it)
UNEXPLAINED_SHARE = 0.01  # the least share of an axes a colour no recorded element draws must fill to fail the chart
GRID_VALUE = 0.08  # how far (as a share of the colour map) a heatmap cell's colour may be from its value's place in it
SAME_COLOUR = 8  # present colours this close to an element's are its own (rounding, a blend with the background)


def _rgb255(colour):
    import numpy as np

    return np.array(rgb(colour)) * 255 if isinstance(colour, str) and len(colour.lstrip("#")) >= 6 else None


class Picture:
    """The saved image with the record's mapping from an axes' data coordinates to its pixels (x right, y down)."""

    def __init__(self, record: dict, image, name: str):
        import numpy as np

        self.name = name
        self.pixels = np.asarray(image.convert("RGB")).astype(np.int16)
        self.height, self.width = self.pixels.shape[:2]
        self.dpi = float(record["dpi"])
        self.inches = [float(v) for v in record["size_inches"][:2]]
        bbox, crop = record.get("bbox_inches"), record.get("crop_inches")
        if bbox in (None, "standard"):
            crop = [0.0, 0.0, *self.inches]
        elif bbox == "tight" and isinstance(crop, list) and len(crop) == 4:
            crop = [float(v) for v in crop]
        else:
            raise Unseen(f"./output/{name}: where the saved picture lies on the figure is not known (bbox_inches={bbox!r})")
        wide, tall = (crop[2] - crop[0]) * self.dpi, (crop[3] - crop[1]) * self.dpi
        if abs(wide - self.width) > 3 or abs(tall - self.height) > 3:
            raise Unseen(f"./output/{name} is {self.width}x{self.height} pixels, not the {wide:.0f}x{tall:.0f} its figure record gives")
        self.left, self.top = crop[0], crop[3]
        self.row_fraction = tall % 1  # Agg draws on a canvas of whole rows, the fraction cut at the bottom: the record's rows lie this much lower
        self.step = max(3, round(self.dpi / 30))  # how far inside or outside an edge a sample is taken (antialiasing, edge lines)
        self._present = {}
        # a legend covers what lies under its drawn frame: samples there prove nothing either way (set by _legends_drawn)
        self.covered = np.zeros((self.height, self.width), dtype=bool)  # under a legend or a drawn line (set by _lines_shown)
        self.framed = np.zeros((self.height, self.width), dtype=bool)  # under a legend's drawn frame
        self.every_sample = False
        axes = [a for a in record.get("axes", []) if isinstance(a, dict)]
        frames = [(a.get("legend_box"), a.get("legend_frame")) for a in axes]
        frames += list(zip(record.get("legend_boxes") or [], record.get("legend_frames") or []))
        for box, face in frames:
            if isinstance(box, list) and len(box) == 4 and all(_finite(v) for v in box):
                self._cover_by_legend(self.fraction_box(box), face)
        for a in axes:  # a text's glyphs over a line (an annotation written across it): what they cover shows them
            for mark in (a.get("marks") or {}).get("texts") or []:
                self._cover_by_glyphs(mark)

    def _cover_by_legend(self, box, face) -> None:
        """Mark the legend's box as covered when the picture shows its frame there: its face colour (through its alpha)
        over LEGEND_FACE of the box. A legend with no frame, a translucent one or one the picture does not show covers
        nothing, and legends cover no more than a quarter of the picture in all (the first ones drawn)."""
        import numpy as np

        solid, a = _rgb255(face), alpha(face) if isinstance(face, str) else 0.0
        x0, y0, x1, y1 = (int(round(v)) for v in box)
        x0, y0, x1, y1 = max(x0 + 4, 0), max(y0 + 4, 0), min(x1 - 4, self.width), min(y1 - 4, self.height)
        if solid is None or a < 0.5 or x1 - x0 < 2 or y1 - y0 < 2 or self.framed.sum() + (x1 - x0) * (y1 - y0) > 0.25 * self.width * self.height:
            return
        inside = self.pixels[y0:y1:2, x0:x1:2].reshape(-1, 3)
        if (np.abs(inside - solid).max(axis=1) <= (1 - a) * 255 + SAME_COLOUR).mean() >= LEGEND_FACE:
            self.covered[y0 - 4:y1 + 5, x0 - 4:x1 + 5] = True
            self.framed[y0 - 4:y1 + 5, x0 - 4:x1 + 5] = True

    def _cover_by_glyphs(self, mark) -> None:
        """Mark the pixels of a recorded text's box that show its colour (its glyphs) as under a frame. The text
        itself is verified in the picture later (keep_shown_texts): a text the picture does not show fails there."""
        import numpy as np

        box, colour = mark.get("box") if isinstance(mark, dict) else None, _rgb255(mark.get("color")) if isinstance(mark, dict) else None
        if colour is None or not isinstance(box, list) or len(box) != 4 or not all(_finite(v) for v in box):
            return
        x0, y0, x1, y1 = max(int(box[0]) - 1, 0), max(int(box[1]) - 1, 0), min(int(box[2]) + 2, self.width), min(int(box[3]) + 2, self.height)
        if x1 - x0 < 1 or y1 - y0 < 1 or (x1 - x0) * (y1 - y0) > 0.25 * self.width * self.height:
            return
        glyphs = np.abs(self.pixels[y0:y1, x0:x1] - colour).max(axis=-1) <= 2 * TOLERANCE
        grown = glyphs.copy()
        grown[1:] |= glyphs[:-1]; grown[:-1] |= glyphs[1:]; grown[:, 1:] |= glyphs[:, :-1]; grown[:, :-1] |= glyphs[:, 1:]
        self.framed[y0:y1, x0:x1] |= grown

    def fraction_box(self, box):
        """A box in figure fractions (x0, y0, x1, y1) in pixels (left, top, right, bottom), 2 pixels wider."""
        x0, y0, x1, y1 = (float(v) for v in box)
        return ((x0 * self.inches[0] - self.left) * self.dpi - 2, (self.top - y1 * self.inches[1]) * self.dpi - 2,
                (x1 * self.inches[0] - self.left) * self.dpi + 2, (self.top - y0 * self.inches[1]) * self.dpi + 2)

    def cover(self, columns, rows, radius: int, mask=None) -> None:
        """Mark the pixels within radius of these points as covered (a line drawn over bars or areas), or in mask."""
        import numpy as np

        mask = self.covered if mask is None else mask
        columns, rows = np.round(columns).astype(int), np.round(rows).astype(int)
        keep = (columns >= 0) & (columns < self.width) & (rows >= 0) & (rows < self.height)
        columns, rows = columns[keep], rows[keep]
        for dy in range(-radius, radius + 1):
            for dx in range(-radius, radius + 1):
                mask[np.clip(rows + dy, 0, self.height - 1), np.clip(columns + dx, 0, self.width - 1)] = True

    def under_legend(self, columns, rows):
        """Which points lie under a legend or a drawn line: samples there prove nothing either way."""
        import numpy as np

        columns, rows = np.round(columns).astype(int), np.round(rows).astype(int)
        return self.covered[np.clip(rows, 0, self.height - 1), np.clip(columns, 0, self.width - 1)]

    # mapping ---------------------------------------------------------------------------------------------------------
    def axes_fraction(self, ax: dict, values, axis: str):
        """Data values along axis ('x' or 'y') as fractions of the axes (0 at the low limit's side)."""
        import numpy as np

        low, high = (float(v) for v in ax[f"{axis}lim"][:2])
        values = np.asarray(values, dtype=float)
        scale = ax.get(f"{axis}scale", "linear")
        if scale == "log":
            with np.errstate(all="ignore"):
                values, low, high = np.log10(values), np.log10(low), np.log10(high)
        elif scale != "linear":
            raise Unseen(f"./output/{self.name}: its {axis} axis has a {scale!r} scale, which the check cannot place in the picture")
        if not (math.isfinite(low) and math.isfinite(high)) or low == high:
            raise Unseen(f"./output/{self.name}: its figure record gives no usable {axis} limits")
        return (values - low) / (high - low)

    def to_pixels(self, ax: dict, xs, ys, coords: str = "data"):
        """(columns, rows) of points given in the axes' data (or, for 'xaxis'/'yaxis' lines, partly axes) coordinates."""
        import numpy as np

        left, bottom, width, height = (float(v) for v in ax["position"][:4])
        fx = np.asarray(xs, dtype=float) if coords == "yaxis" else self.axes_fraction(ax, xs, "x")
        fy = np.asarray(ys, dtype=float) if coords == "xaxis" else self.axes_fraction(ax, ys, "y")
        column = ((left + width * fx) * self.inches[0] - self.left) * self.dpi
        row = (self.top - (bottom + height * fy) * self.inches[1]) * self.dpi
        return column, row

    def box(self, ax: dict) -> tuple[float, float, float, float]:
        """The axes' area in pixels: (left column, top row, right column, bottom row)."""
        left, bottom, width, height = (float(v) for v in ax["position"][:4])
        x0, x1 = (left * self.inches[0] - self.left) * self.dpi, ((left + width) * self.inches[0] - self.left) * self.dpi
        y0, y1 = (self.top - (bottom + height) * self.inches[1]) * self.dpi, (self.top - bottom * self.inches[1]) * self.dpi
        return x0, y0, x1, y1

    def inside(self, columns, rows, box, margin: float = 1.0):
        x0, y0, x1, y1 = box
        x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, self.width - 1), min(y1, self.height - 1)
        return (columns >= x0 + margin) & (columns <= x1 - margin) & (rows >= y0 + margin) & (rows <= y1 - margin)

    # colours ---------------------------------------------------------------------------------------------------------
    def background(self, box, face=None):
        """The axes' background: its recorded face colour where the picture shows it as a flat colour there (areas
        stacked over most of the axes leave it a small part), else the axes' median colour."""
        import numpy as np

        solid = _rgb255(face) if isinstance(face, str) and alpha(face) >= 0.99 else None
        if solid is not None and len(self.present_colours(box)) and np.abs(self.present_colours(box) - solid).max(axis=1).min() <= SAME_COLOUR:
            return solid
        x0, y0, x1, y1 = (int(round(v)) for v in box)
        area = self.pixels[max(y0, 0):max(min(y1, self.height), 1), max(x0, 0):max(min(x1, self.width), 1)].reshape(-1, 3)
        return np.median(area, axis=0) if area.size else np.array([255, 255, 255])

    @staticmethod
    def shades(colour: str, background, others=()) -> list:
        """The colours a (possibly translucent) element shows: itself over the background or over another element, or
        under a translucent one (overlaid histograms)."""
        solid, a = _rgb255(colour), alpha(colour)
        if solid is None:
            return []
        layers = [(_rgb255(o), alpha(o)) for o in dict.fromkeys(others) if _rgb255(o) is not None][:8]
        under = [background] + [c * ca + background * (1 - ca) for c, ca in layers]
        mine = [solid * a + base * (1 - a) for base in (under if a < 0.99 else under[:1])]
        return mine + [c * ca + m * (1 - ca) for m in mine for c, ca in layers if ca < 0.99]

    def present_colours(self, box, share: float = None):
        """The colours filling flat areas of the axes in the picture (pixels equal to their right and lower neighbours),
        each over PRESENT_SHARE of the axes: its background, its bars, slices and areas, and whatever else fills it."""
        import numpy as np

        share = PRESENT_SHARE if share is None else share
        key = tuple(int(round(v)) for v in box) + (share,)
        if key not in self._present:
            x0, y0, x1, y1 = key[:4]
            area = self.pixels[max(y0, 0):max(min(y1, self.height), 1), max(x0, 0):max(min(x1, self.width), 1)]
            packed = (area[..., 0].astype(np.int32) << 16) | (area[..., 1].astype(np.int32) << 8) | area[..., 2].astype(np.int32)
            flat = packed[:-1, :-1][(packed[:-1, :-1] == packed[1:, :-1]) & (packed[:-1, :-1] == packed[:-1, 1:])]
            keys, counts = np.unique(flat, return_counts=True)
            keys = keys[counts >= share * max(packed.size, 1)]
            self._present[key] = np.stack([keys >> 16, (keys >> 8) & 255, keys & 255], axis=1).astype(float)
        return self._present[key]

    def tolerance(self, box, shades, full: float = TOLERANCE) -> float:
        """How far a pixel's colour may be from one of these shades and still show them: `full`, or half the way to the
        nearest other colour present in the axes (present_colours, more than SAME_COLOUR away), so that no colour the
        picture shows beside the element (a background close to a bar's colour) counts as the element."""
        import numpy as np

        present = self.present_colours(box)
        if not len(present) or not shades:
            return full
        gaps = np.abs(present[:, None, :] - np.array(shades)[None]).max(axis=2).min(axis=1)
        gaps = gaps[gaps > SAME_COLOUR]
        return min(full, float(gaps.min()) / 2) if len(gaps) else full

    def distance(self, columns, rows, shades, radius: int = 0):
        """Per point, the smallest colour distance (max over channels) to any shade within radius pixels."""
        import numpy as np

        columns, rows = np.round(columns).astype(int), np.round(rows).astype(int)
        best = np.full(len(columns), 999.0)
        for dy in range(-radius, radius + 1):
            for dx in range(-radius, radius + 1):
                c, r = np.clip(columns + dx, 0, self.width - 1), np.clip(rows + dy, 0, self.height - 1)
                seen = self.pixels[r, c].astype(float)
                for shade in shades:
                    best = np.minimum(best, np.abs(seen - shade).max(axis=1))
        return best




def assert_picture_shows(figure: "Figure", every_sample: bool = False) -> None:
    """Every bar, line, wedge, point collection, filled area and value grid of the figure's chart axes is where the
    record puts it in the saved picture, in its colour (within TOLERANCE, or half the way to another colour present in
    the axes: Picture.tolerance). What each element is held to, and within what:
      bars: the bar's colour inside it near its value end and along its body, and not just beyond the end (within
        max(3 px, dpi/30): a bar's length to that much of the axis); samples under a seen legend frame or a drawn line
        (3 points either side at most) prove nothing either way;
      line collections (error bars): their colour along them;
      lines: the line's colour at points sampled along it every few pixels (LINE_SHARE of them, every one with
        every_sample, a few pixels away at most), and no more of its colour in the axes than its length and width can draw;
      wedges: each wedge's colour across its angles, and not past its edges where a wedge of another colour follows
        (the slice's share within about 2 degrees); adjacent slices must differ in colour;
      points: a point's colour at 80 % of the scatter offsets, and no flood of that colour;
      filled areas: the area's colour over 75 % of its outline's inside, and not around it;
      value grids (heatmaps, images): the cells' colours, read back through the colour map, each within GRID_VALUE
        of its value's place through a linear or log norm (else in the order of the values: rank correlation 0.9);
      and nothing else: no flat colour over UNEXPLAINED_SHARE of an axes that no recorded element draws.
    Texts (titles, labels, tick labels, legends, annotations) are held to the picture by keep_shown_texts."""
    try:
        picture = Picture(figure.record, figure.image, figure.name)
        picture.every_sample = every_sample
        drawn, reach = _record_colours(figure), _footprint(picture, figure)
        for ax in figure.axes:
            _axes_shown(picture, ax)
            _nothing_else_shown(picture, ax, drawn, figure, reach)
    except Unseen:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, ZeroDivisionError) as error:
        raise Unseen(f"./output/{figure.name}: its figure record cannot be placed in the picture ({type(error).__name__})") from None


def _axes_shown(picture: Picture, ax: "Axes") -> None:
    record = ax.record
    if record.get("kind", "rectilinear") != "rectilinear":
        raise Unseen(f"./output/{picture.name}: a {record.get('kind')!r} axes cannot be placed in the picture")
    box = picture.box(record)
    background = picture.background(box, record.get("facecolor"))
    # what an element may show through or over: other elements' faces (a box plot's boxes under jittered points)
    colours = [b["color"] for b in ax.bars] + [p["color"] for p in ax.patches] + [c for s in ax.scatters() + ax.areas() for c in s["facecolors"][:8]]
    _lines_shown(picture, ax, box, background, colours)
    _segments_shown(picture, ax, box, background, colours)
    _bars_shown(picture, ax, box, background, colours)
    _wedges_shown(picture, ax, box, background, colours)
    _points_shown(picture, ax, box, background, colours)
    _areas_shown(picture, ax, box, background, colours)
    _grids_shown(picture, ax, box)


def _record_colours(figure: "Figure") -> list[str]:
    """Every colour the record says the figure draws: its elements' faces, edges and hatches, lines and markers, texts
    and their boxes, legends' frames, axes' faces and grid lines."""
    found = [mark.get("color") for mark in [figure.record.get("suptitle_mark")] if isinstance(mark, dict)]
    found += [face for face in figure.record.get("legend_frames") or [] if isinstance(face, str)]
    for ax in figure.all_axes:
        r = ax.record
        found += [r.get("facecolor"), r.get("legend_frame")] + list(r.get("grid_colours") or [])
        found += [b.get(key) for group in r.get("bars", []) for b in group.get("bars", []) for key in ("color", "edgecolor", "hatch_color")]
        found += [p.get(key) for p in r.get("patches", []) for key in ("color", "edgecolor")]
        found += [c for item in r.get("collections", []) for c in (item.get("facecolors") or []) + (item.get("edgecolors") or [])]
        found += [c for line in r.get("lines", []) for c in [line.get("color")] + list(line.get("marker_colors") or [])]
        marks = r.get("marks") if isinstance(r.get("marks"), dict) else {}
        for mark in [m for value in marks.values() for m in (value if isinstance(value, list) else [value])]:
            found += [mark.get("color"), mark.get("bbox_color")] if isinstance(mark, dict) else []
    return [c for c in dict.fromkeys(found) if isinstance(c, str) and _rgb255(c) is not None]


def _nothing_else_shown(picture: Picture, ax: "Axes", drawn: list[str], figure: "Figure", reach) -> None:
    """The axes show no colour, over UNEXPLAINED_SHARE of their area, that nothing in the record draws (its background
    as seen, its elements' colours alone or through each other's alpha): bold shapes drawn past the record beside faint
    recorded ones fail. Not for axes with colour-mapped values (heatmaps, images, points coloured by value)."""
    import numpy as np

    if any(g for a in figure.axes for g in a.grids()) or any(item.get("cmap") for a in figure.all_axes for item in a.collections()):
        return
    box = picture.box(ax.record)
    background = picture.background(box, ax.record.get("facecolor"))
    present = picture.present_colours(box, UNEXPLAINED_SHARE)
    if not len(present):
        return
    shades = [background] + [shade for colour in drawn for shade in picture.shades(colour, background, [c for c in drawn if alpha(c) < 0.99][:8])]
    gaps = np.abs(present[:, None, :] - np.array(shades)[None]).max(axis=2).min(axis=1)
    for colour, gap in zip(present, gaps):
        if gap > 2 * SAME_COLOUR:
            hexed = "#" + "".join(f"{int(v):02x}" for v in colour)
            raise Unseen(f"./output/{picture.name} shows the colour {hexed} over more than {UNEXPLAINED_SHARE:.0%} of its axes, "
                         f"which no element of its figure record draws")
    x0, y0, x1, y1 = (int(round(v)) for v in box)
    rows, columns = slice(max(y0, 0), max(min(y1, picture.height), 1)), slice(max(x0, 0), max(min(x1, picture.width), 1))
    area, reach = picture.pixels[rows, columns], reach[rows, columns]
    for colour in present:
        if np.abs(colour - background).max() > 2 * SAME_COLOUR:
            stray = ((np.abs(area - colour).max(axis=-1) <= SAME_COLOUR) & ~reach).sum() / max(reach.size, 1)
            if stray > UNEXPLAINED_SHARE:
                hexed = "#" + "".join(f"{int(v):02x}" for v in colour)
                raise Unseen(f"./output/{picture.name} shows the colour {hexed} over {stray:.0%} of its axes where no element of its "
                             f"figure record is drawn")


def _footprint(picture: Picture, figure: "Figure"):
    """Where the record's elements can draw, in the picture's pixels (every axes of the figure: twins and insets overlap):
    bars, rectangles and other patches' boxes, wedges' discs, areas' and meshes' outlines' boxes, lines and segments
    (their width and markers, a few pixels more), points, texts with their boxes, legends and grid lines, each grown
    by a step for antialiasing and edges. What the picture shows outside it was drawn past the recorder."""
    import numpy as np

    reach = picture.covered | picture.framed
    grow = picture.step + 2

    def fill(columns, rows, pad):
        c0, c1, r0, r1 = (int(v) for v in (np.nanmin(columns) - pad, np.nanmax(columns) + pad + 1, np.nanmin(rows) - pad, np.nanmax(rows) + pad + 1))
        reach[max(r0, 0):max(min(r1, picture.height), 0), max(c0, 0):max(min(c1, picture.width), 0)] = True

    def trace(columns, rows, pad):
        columns, rows = _polyline(np.asarray(columns, dtype=float), np.asarray(rows, dtype=float), 1.0)
        keep = np.isfinite(columns) & np.isfinite(rows) & (np.abs(columns) < 1e5) & (np.abs(rows) < 1e5)
        if keep.any():
            picture.cover(columns[keep], rows[keep], int(math.ceil(pad)), reach)

    for ax in figure.all_axes:
        record, to = ax.record, (lambda xs, ys, coords="data", r=ax.record: picture.to_pixels(r, xs, ys, coords))
        if record.get("kind", "rectilinear") != "rectilinear" or {record.get("xscale"), record.get("yscale")} - {"linear", "log"}:
            fill(*zip(picture.box(record)[:2], picture.box(record)[2:]), 0)  # not placed element by element: all of it
            continue
        for bar in [b for group in record.get("bars", []) for b in group.get("bars", [])]:
            fill(*to([bar["x"], bar["x"] + bar["width"]], [bar["y"], bar["y"] + bar["height"]]), grow)
        for patch in record.get("patches", []):
            if patch.get("kind") == "Wedge":
                cx, cy, r = float(patch["center"][0]), float(patch["center"][1]), float(patch["r"])
                fill(*to([cx - r, cx + r], [cy - r, cy + r]), grow)
            elif all(_finite(patch.get(k)) for k in ("x", "y", "width", "height")):
                fill(*to([patch["x"], patch["x"] + patch["width"]], [patch["y"], patch["y"] + patch["height"]]), grow)
            elif isinstance(patch.get("extent"), list) and len(patch["extent"]) == 4:
                x, y, w, h = (float(v) for v in patch["extent"])
                fill(*to([x, x + w], [y, y + h]), grow)
        for item in record.get("collections", []):
            for path in item.get("paths") or []:
                vertices = [v for v in path if isinstance(v, list) and len(v) == 2 and _finite(v[0]) and _finite(v[1])]
                if vertices:
                    (fill if item.get("kind") != "LineCollection" else trace)(*to(*zip(*vertices)), grow)
            radius = min(max(1.0, math.sqrt(float((item.get("sizes") or [36])[0] or 36)) / 2 * picture.dpi / 72), 4 * LINE_COVER * picture.dpi / 72)
            points = [v for v in item.get("offsets") or [] if isinstance(v, list) and len(v) == 2 and _finite(v[0]) and _finite(v[1])]
            if points and item.get("kind") == "PathCollection":
                picture.cover(*to(*zip(*points)), int(radius) + grow, reach)
        for line in record.get("lines", []):
            if int(line.get("n") or 0) > len(line["x"]):  # the record holds its first points only: it may draw anywhere
                fill(*zip(picture.box(record)[:2], picture.box(record)[2:]), 0)
            width = (float(line.get("linewidth") or 1) + float(line.get("markersize") or 0)) * picture.dpi / 144
            trace(*to(line["x"], line["y"], line.get("coords", "data")), min(width, 2 * LINE_COVER * picture.dpi / 72) + grow)
        for axis in ("x", "y") if record.get("grid_colours") else ():
            ticks = [t for t in record.get(f"{axis}ticks", []) if _finite(t)]
            low, high = (float(v) for v in record[f"{'y' if axis == 'x' else 'x'}lim"][:2])
            for tick in ticks:
                trace(*to([tick, tick], [low, high]) if axis == "x" else to([low, high], [tick, tick]), grow)
        marks = record.get("marks") if isinstance(record.get("marks"), dict) else {}
        for mark in [m for value in marks.values() for m in (value if isinstance(value, list) else [value])]:
            if isinstance(mark, dict) and isinstance(mark.get("box"), list) and len(mark["box"]) == 4 and all(_finite(v) for v in mark["box"]):
                x0, y0, x1, y1 = mark["box"]
                fill([x0, x1], [y0, y1], grow + (picture.dpi / 18 if mark.get("bbox_color") else 0))
        for box in [record.get("legend_box")] + list(figure.record.get("legend_boxes") or []):
            if isinstance(box, list) and len(box) == 4 and all(_finite(v) for v in box):
                fill(*zip(picture.fraction_box(box)[:2], picture.fraction_box(box)[2:]), grow)
    return reach


def _bars_shown(picture: Picture, ax: "Axes", box, background, colours) -> None:
    import numpy as np

    bars = ax.bars
    if not bars:
        return
    horizontal, step = ax.horizontal, picture.step
    rects = []
    for bar in bars:
        xs, ys = [bar["x"], bar["x"] + bar["width"]], [bar["y"], bar["y"] + bar["height"]]
        columns, rows = picture.to_pixels(ax.record, xs, ys)
        rects.append((columns, rows))
    x0, y0, x1, y1 = box
    for bar, (columns, rows) in zip(bars, rects):
        # along: the value axis (rows for vertical bars); base -> end in pixels; across: the category axis
        base, end = (columns[0], columns[1]) if horizontal else (rows[0], rows[1])
        across = sorted(rows if horizontal else columns)
        low_edge, high_edge = (x0, x1) if horizontal else (y0, y1)
        end_clipped = min(max(end, low_edge), high_edge)
        base = min(max(base, low_edge), high_edge)
        across = [max(across[0], (y0 if horizontal else x0)), min(across[1], (y1 if horizontal else x1))]
        if across[1] - across[0] < 1:
            continue  # outside the axes' view: nothing to see
        span = across[1] - across[0]
        # several lanes across the bar: clear of an error bar at its centre, and a grid line crosses at most one
        lanes = [across[0] + f * span for f in ((0.2, 0.35, 0.65, 0.8) if span >= 10 else (0.3, 0.7) if span >= 5 else (0.5,))]
        sign = 1 if end_clipped >= base else -1
        shades = picture.shades(bar["color"], background, [c for c in colours if c != bar["color"]])
        if not shades:
            raise Unseen(f"./output/{picture.name}: a bar's colour {bar['color']!r} is no colour")
        length = abs(end_clipped - base)
        label = ax.nearest_label(bar) or f"{bar['x']:g}"
        tolerance = picture.tolerance(box, shades)

        def points(offsets):
            along = np.array([o for o in offsets for _ in lanes], dtype=float)
            lane = np.array([l for _ in offsets for l in lanes], dtype=float)
            return (along, lane) if horizontal else (lane, along)

        if length >= 2 * step:
            reach = picture.step if bar.get("hatch") else 0  # a hatch drawn over the face: the face shows between its strokes

            def shown(offsets):
                """Per sample, its colour there or half a step towards the end: a grid line drawn over the bars (pandas'
                hist, axisbelow='line') is thinner, and lies on a sample wherever a value is a multiple of its spacing."""
                seen = [picture.distance(*points([o + sign * shift for o in offsets]), shades, reach) for shift in (0, step / 2)]
                return (np.minimum(*seen) <= tolerance)[~picture.under_legend(*points(offsets))]

            near, body = shown([end_clipped - sign * step]), shown([base + sign * length * f for f in (0.25, 0.5, 0.75)])
            # a bar whose end lies under a legend is held to its body only (the legend is in the picture too)
            if near.size and not near.any() or body.size and body.mean() < 0.5:
                raise Unseen(f"./output/{picture.name}: the bar for {label!r} is not drawn up to the {ax.bar_value(bar):g} its record gives")
            if span >= 4 * step and length >= 4 * step and _bar_overdrawn(picture, ax, bar, shades, tolerance, base, sign * length, across, background):
                raise Unseen(f"./output/{picture.name}: the bar for {label!r} is drawn over by marks its figure record does not hold")
        beyond = end_clipped + sign * step
        if end_clipped != end or not (low_edge + 1 <= beyond <= high_edge - 1):
            continue  # the bar runs past the axes' limit, or its end is at the axes' edge
        columns, rows = points([beyond])
        covered = np.zeros(len(columns), dtype=bool)  # a stacked segment or a neighbour of the same colour may lie there
        for other, (oc, orow) in zip(bars, rects):
            if other is not bar and other["color"][:7] == bar["color"][:7]:
                covered |= (columns >= min(oc) - 1) & (columns <= max(oc) + 1) & (rows >= min(orow) - 1) & (rows <= max(orow) + 1)
        solid = picture.shades(bar["color"], background)
        shown = picture.distance(columns, rows, solid) <= picture.tolerance(box, solid) / 2
        if (shown & ~covered & ~picture.under_legend(columns, rows)).any():
            raise Unseen(f"./output/{picture.name}: the bar for {label!r} is drawn longer than the {ax.bar_value(bar):g} its record gives")


def _bar_overdrawn(picture: Picture, ax: "Axes", bar: dict, shades, tolerance: float, base: float, length: float, across, background) -> bool:
    """More than OVERDRAWN of the bar's inside (a 7x7 grid of samples over its middle half across, 60 % along) shows neither
    its colour (through the colours it may lie over or under), its hatch, the edges of bars across it, the grid lines, nor a legend, a
    drawn line or a text over it: a bold mark drawn past the record over a faint recorded bar is what a reader reads."""
    import numpy as np

    def overlaps(other):  # a bar of another container drawn across this one (overlaid histograms): its edges cross its inside
        return other["index"] != bar["index"] and min(bar["x"] + bar["width"], other["x"] + other["width"]) > max(bar["x"], other["x"]) \
            and min(bar["y"] + bar["height"], other["y"] + other["height"]) > max(bar["y"], other["y"])

    edges = [other.get("edgecolor") for other in ax.bars if overlaps(other)]
    hatch = [bar.get("hatch_color"), bar.get("edgecolor")] if bar.get("hatch") else []
    extra = [c for c in dict.fromkeys(hatch + edges + list(ax.record.get("grid_colours") or [])) if isinstance(c, str)][:8]
    allowed = list(shades) + [shade for c in extra for shade in picture.shades(c, background, [bar["color"]])]
    along = base + length * np.linspace(0.2, 0.8, 7)
    lanes = across[0] + (across[1] - across[0]) * np.linspace(0.25, 0.75, 7)
    along, lanes = np.repeat(along, 7), np.tile(lanes, 7)
    columns, rows = (along, lanes) if ax.horizontal else (lanes, along)
    seen = picture.distance(columns, rows, allowed) <= max(tolerance, TOLERANCE)  # blends of overlaid bars: the full tolerance
    clear = ~(picture.under_legend(columns, rows) | picture.framed[np.clip(np.round(rows).astype(int), 0, picture.height - 1),
                                                                      np.clip(np.round(columns).astype(int), 0, picture.width - 1)])
    return clear.sum() >= 10 and (~seen & clear).sum() > OVERDRAWN * clear.sum()


def _polyline(columns, rows, spacing: float):
    """Points every `spacing` pixels along the polyline (its vertices included)."""
    import numpy as np

    out_c, out_r = [], []
    for (c0, r0, c1, r1) in zip(columns[:-1], rows[:-1], columns[1:], rows[1:]):
        if not all(map(math.isfinite, (c0, r0, c1, r1))):
            continue
        count = max(1, int(math.hypot(c1 - c0, r1 - r0) / spacing))
        t = np.arange(count) / count
        out_c.append(c0 + (c1 - c0) * t)
        out_r.append(r0 + (r1 - r0) * t)
    if not out_c:
        return np.array([]), np.array([])
    return np.concatenate(out_c), np.concatenate(out_r)


def _lines_shown(picture: Picture, ax: "Axes", box, background, colours) -> None:
    import numpy as np

    drawn_by_colour: dict[str, float] = {}
    for line in ax.lines:
        columns, rows = picture.to_pixels(ax.record, line["x"], line["y"], line.get("coords", "data"))
        keep = np.isfinite(columns) & np.isfinite(rows)
        width = max(1.0, float(line.get("linewidth") or 1) * picture.dpi / 72)
        styled = line["linestyle"] not in ("None", "", " ", "none") and str(line.get("drawstyle", "default")) == "default"
        if styled:
            columns, rows = _polyline(columns, rows, 1.0)
        else:
            columns, rows = columns[keep], rows[keep]
        inside = picture.inside(columns, rows, box, 2)
        columns, rows = columns[inside], rows[inside]
        if len(columns) == 0:
            continue
        length = len(columns) if styled else len(columns) * 4 * float(line.get("markersize") or 6) * picture.dpi / 72
        reach = min(width / 2 if styled else float(line.get("markersize") or 6) * picture.dpi / 144, LINE_COVER * picture.dpi / 72)
        picture.cover(columns, rows, int(math.ceil(reach)) + 1)  # a wide line covers no more than a density curve does
        samples = 20000 if picture.every_sample else 400
        if len(columns) > samples:
            pick = np.linspace(0, len(columns) - 1, samples).astype(int)
            columns, rows = columns[pick], rows[pick]
        dashed = line["linestyle"] not in ("-", "solid")
        radius = int(math.ceil(min(width / 2, LINE_COVER * picture.dpi / 72))) + 2 + (int(math.ceil(4 * min(width, 2 * LINE_COVER * picture.dpi / 72))) if dashed else 0)
        if not styled:
            radius = max(radius, int(math.ceil(float(line.get("markersize") or 6) * picture.dpi / 72 / 2)))
        marks = [c for c in (line.get("marker_colors") or []) if alpha(c) > 0.05] if not styled else []
        shades = [shade for c in (marks or [line["color"]]) for shade in picture.shades(c, background, colours)]
        if not shades:
            raise Unseen(f"./output/{picture.name}: a line's colour {line['color']!r} is no colour")
        if styled and width < 3:  # a thin line's antialiasing spreads it over two pixels: each shows it partly over the background
            shades += [shades[0] * t + background * (1 - t) for t in (0.4, 0.55, 0.7, 0.85)]
        shown = picture.distance(columns, rows, shades, radius) <= TOLERANCE + 12
        if picture.every_sample:  # where a peak or a zero is graded, no sample may be missing, except under a legend, a text,
            # another line or a recorded point drawn over it (a dot marking the peak)
            shown |= picture.framed[np.clip(np.round(rows).astype(int), 0, picture.height - 1), np.clip(np.round(columns).astype(int), 0, picture.width - 1)]
            points = [c for item in ax.record.get("collections", []) if item.get("kind") == "PathCollection" and item.get("visible", True)
                      for c in (item.get("facecolors") or []) + (item.get("edgecolors") or [])]
            others = {c for other in ax.record.get("lines", []) if other is not line for c in [other.get("color")] + list(other.get("marker_colors") or [])
                      if isinstance(c, str) and c[:7] != line["color"][:7] and alpha(c) > 0.05}
            others |= {c for c in points if isinstance(c, str) and c[:7] != line["color"][:7] and alpha(c) > 0.05}
            others = [shade for colour in others for shade in picture.shades(colour, background)]
            if others and not shown.all():
                shown[~shown] = picture.distance(columns[~shown], rows[~shown], others, 1) <= TOLERANCE
        if shown.mean() < (1.0 if picture.every_sample else LINE_SHARE):
            name = line.get("label") if not str(line.get("label", "_")).startswith("_") else line["color"][:7]
            raise Unseen(f"./output/{picture.name}: the line {name!r} is not drawn where its record's points are "
                         f"({shown.sum()} of its {len(shown)} samples show its colour)")
        truncated = int(line.get("n") or 0) > len(line["x"])  # the record holds its first points only: no bound on its colour
        drawn_by_colour[line["color"][:7]] = drawn_by_colour.get(line["color"][:7], 0) + (math.inf if truncated else length * (width + 4))
    _no_flood(picture, box, background, drawn_by_colour, [c[:7] for c in colours], "line")


def _segments_shown(picture: Picture, ax: "Axes", box, background, colours) -> None:
    """Line collections (error bars of plt.errorbar and pandas' yerr=, vlines, hlines): their colour along them."""
    import numpy as np

    for collection in ax.collections("LineCollection"):
        edges = [c for c in collection.get("edgecolors") or [] if alpha(c) > 0.05]
        paths = [[p for p in path if isinstance(p, list) and len(p) == 2 and _finite(p[0]) and _finite(p[1])] for path in collection.get("paths", [])]
        paths = [path for path in paths if len(path) >= 2]
        if not edges or not paths:
            continue
        shades = [shade for c in edges[:8] for shade in picture.shades(c, background, colours)]
        samples_c, samples_r = [], []
        for path in paths:
            columns, rows = picture.to_pixels(ax.record, *zip(*path))
            columns, rows = _polyline(columns, rows, 2.0)
            inside = picture.inside(columns, rows, box, 2)
            samples_c.append(columns[inside])
            samples_r.append(rows[inside])
        columns, rows = np.concatenate(samples_c), np.concatenate(samples_r)
        if not len(columns):
            continue
        picture.cover(columns, rows, 2)
        if len(columns) > 400:
            pick = np.linspace(0, len(columns) - 1, 400).astype(int)
            columns, rows = columns[pick], rows[pick]
        shown = picture.distance(columns, rows, shades, 2) <= TOLERANCE + 12
        if shown.mean() < 0.8:
            raise Unseen(f"./output/{picture.name}: its line segments (error bars) are not drawn where their record puts them ({shown.mean():.0%} are)")


def _no_flood(picture: Picture, box, background, drawn: dict, others, what: str) -> None:
    """The picture does not show far more of a colour in the axes than the record's elements of that colour can draw
    (a flood of colour would otherwise pass every 'this colour is here' sample)."""
    import numpy as np

    x0, y0, x1, y1 = (int(round(v)) for v in box)
    area = picture.pixels[max(y0, 0):max(min(y1, picture.height), 1), max(x0, 0):max(min(x1, picture.width), 1)].reshape(-1, 3)
    for colour, pixels in drawn.items():
        if colour in others or not len(area):
            continue  # a bar, wedge or area of the same colour accounts for more of it
        solid = picture.shades(colour, background)
        if not solid or np.abs(solid[0] - background).max() <= TOLERANCE:
            continue
        count = int((np.abs(area - solid[0]).max(axis=1) <= TOLERANCE / 2).sum())
        if count > 3 * pixels + 0.02 * len(area):
            raise Unseen(f"./output/{picture.name} shows far more of the {what} colour {colour} than its record's {what}s draw")


def _wedges_shown(picture: Picture, ax: "Axes", box, background, colours) -> None:
    import numpy as np

    wedges = ax.wedges
    if not wedges:
        return
    for number, wedge in enumerate(wedges):
        cx, cy = (float(v) for v in wedge["center"][:2])
        r = float(wedge["r"])
        (pc, pe), (pr, pn) = picture.to_pixels(ax.record, [cx, cx + r], [cy, cy + r])
        rx, ry = abs(pe - pc), abs(pn - pr)
        if min(rx, ry) < 10:
            raise Unseen(f"./output/{picture.name}: a slice's radius is {min(rx, ry):.0f} pixels, too small to see its share")
        t1, t2 = float(wedge["theta1"]), float(wedge["theta2"])
        if t2 < t1:
            t2 += 360
        label = wedge.get("label") or f"slice {number + 1}"
        shades = picture.shades(wedge["color"], background, [c for c in colours if c != wedge["color"]])

        def samples(angles, fraction):
            angles = np.radians(np.asarray(angles, dtype=float))
            return pc + fraction * rx * np.cos(angles), pr - fraction * ry * np.sin(angles)

        tolerance = picture.tolerance(box, shades)
        seen = []
        for fraction in (0.35, 0.85):
            margin = math.degrees(picture.step / (fraction * min(rx, ry)))
            if t2 - t1 > 2 * margin:
                count = max(2, int((t2 - t1 - 2 * margin) / 2))
                seen.append(picture.distance(*samples(np.linspace(t1 + margin, t2 - margin, count), fraction), shades) <= tolerance)
        seen = np.concatenate(seen) if seen else np.array([])
        if len(seen) and seen.mean() < 0.8:
            raise Unseen(f"./output/{picture.name}: the slice {label!r} is not drawn across the {t2 - t1:.1f} degrees its record gives")
        for edge, neighbour_side in ((t2, 1), (t1, -1)):  # just past each edge: the neighbour's colour, not this one
            neighbour = _wedge_at(wedges, edge + neighbour_side * 0.01, exclude=wedge)
            if neighbour is None:
                continue
            if neighbour["color"][:7] == wedge["color"][:7]:
                raise Unseen(f"./output/{picture.name}: neighbouring slices have the same colour {wedge['color'][:7]}, so the picture does not show their shares")
            fraction = 0.85
            margin = math.degrees(picture.step / (fraction * min(rx, ry)))
            columns, rows = samples([edge + neighbour_side * margin, edge + neighbour_side * 2 * margin], fraction)
            solid = picture.shades(wedge["color"], background)
            if (picture.distance(columns, rows, solid) <= picture.tolerance(box, solid) / 2).all():
                raise Unseen(f"./output/{picture.name}: the slice {label!r} is drawn larger than the {t2 - t1:.1f} degrees its record gives")


def _wedge_at(wedges, angle: float, exclude) -> dict | None:
    for wedge in wedges:
        if wedge is exclude:
            continue
        t1, t2 = float(wedge["theta1"]), float(wedge["theta2"])
        if (angle - t1) % 360 <= (t2 - t1) % 360 or (t2 - t1) >= 360:
            return wedge
    return None


def _points_shown(picture: Picture, ax: "Axes", box, background, colours) -> None:
    import numpy as np

    drawn: dict[str, float] = {}
    for scatter in ax.scatters():
        offsets = [p for p in scatter.get("offsets", []) if isinstance(p, list) and len(p) == 2 and _finite(p[0]) and _finite(p[1])]
        if not offsets:
            continue
        xs, ys = zip(*offsets)
        columns, rows = picture.to_pixels(ax.record, xs, ys)
        inside = picture.inside(columns, rows, box, 1)
        columns, rows = columns[inside], rows[inside]
        if not len(columns):
            continue
        size = float((scatter.get("sizes") or [36])[0] or 36)
        radius = max(1.0, math.sqrt(size) / 2 * picture.dpi / 72)
        faces = scatter.get("facecolors") or []
        shades = [s for colour in faces[:16] for s in picture.shades(colour, background, colours)]
        if not shades:
            raise Unseen(f"./output/{picture.name}: its points have no colour in their record")
        if len(columns) > 400:
            pick = np.linspace(0, len(columns) - 1, 400).astype(int)
            columns, rows = columns[pick], rows[pick]
        shown = picture.distance(columns, rows, shades, int(max(1, round(0.6 * radius)))) <= picture.tolerance(box, shades, TOLERANCE + 12)
        if shown.mean() < 0.8:
            raise Unseen(f"./output/{picture.name}: its points are not drawn where their record puts them ({shown.mean():.0%} are)")
        if len(faces) == 1:
            drawn[faces[0][:7]] = drawn.get(faces[0][:7], 0) + len(offsets) * math.pi * (radius + 2) ** 2
    _no_flood(picture, box, background, drawn, [b["color"][:7] for b in ax.bars] + [w["color"][:7] for w in ax.wedges], "point")


def _in_polygon(columns, rows, polygon):
    """Even-odd rule: which points lie inside the polygon (vertices in pixels)."""
    import numpy as np

    inside = np.zeros(len(columns), dtype=bool)
    px, py = polygon[:, 0], polygon[:, 1]
    for i in range(len(polygon)):
        xa, ya, xb, yb = px[i - 1], py[i - 1], px[i], py[i]
        crosses = (ya > rows) != (yb > rows)
        with np.errstate(all="ignore"):
            at = xa + (rows - ya) * (xb - xa) / (yb - ya)
        inside ^= crosses & (columns < at)
    return inside


def _areas_shown(picture: Picture, ax: "Axes", box, background, colours) -> None:
    import numpy as np

    for area in ax.areas():
        faces = area.get("facecolors") or []
        if not faces:
            continue
        shades = picture.shades(faces[0], background, colours)
        for path in area["paths"][:16]:
            vertices = [p for p in path if isinstance(p, list) and len(p) == 2 and _finite(p[0]) and _finite(p[1])]
            if len(vertices) < 3:
                continue
            columns, rows = picture.to_pixels(ax.record, *zip(*vertices))
            polygon = np.stack([columns, rows], axis=1)
            x0, y0 = max(polygon[:, 0].min(), box[0]), max(polygon[:, 1].min(), box[1])
            x1, y1 = min(polygon[:, 0].max(), box[2]), min(polygon[:, 1].max(), box[3])
            if x1 - x0 < 4 or y1 - y0 < 4:
                continue
            grid_c, grid_r = np.meshgrid(np.arange(x0 + 2, x1 - 1, 4.0), np.arange(y0 + 2, y1 - 1, 4.0))
            grid_c, grid_r = grid_c.ravel(), grid_r.ravel()
            inner = _in_polygon(grid_c, grid_r, polygon)
            # keep away from the outline (its edge line and antialiasing)
            near_edge = np.zeros(len(grid_c), dtype=bool)
            for dx, dy in ((picture.step, 0), (-picture.step, 0), (0, picture.step), (0, -picture.step)):
                near_edge |= _in_polygon(grid_c + dx, grid_r + dy, polygon) != inner
            inner_points, outer_points = inner & ~near_edge, ~inner & ~near_edge
            if inner_points.sum() >= 4:
                shown = picture.distance(grid_c[inner_points], grid_r[inner_points], shades) <= picture.tolerance(box, shades)
                if shown.mean() < 0.75:
                    raise Unseen(f"./output/{picture.name}: a filled area is not drawn where its record's outline is ({shown.mean():.0%} of it is)")
            if outer_points.sum() >= 8:
                solid = picture.shades(faces[0], background)
                spill = picture.distance(grid_c[outer_points], grid_r[outer_points], solid) <= picture.tolerance(box, solid) / 2
                others = np.zeros(len(grid_c), dtype=bool)  # other areas of the same colour (a stack's layers)
                for other in ax.areas():
                    if (other.get("facecolors") or [""])[0][:7] == faces[0][:7]:
                        for p in other["paths"][:16]:
                            vs = [v for v in p if isinstance(v, list) and len(v) == 2 and _finite(v[0]) and _finite(v[1])]
                            if len(vs) >= 3 and vs is not vertices:
                                oc, orow = picture.to_pixels(ax.record, *zip(*vs))
                                others |= _in_polygon(grid_c, grid_r, np.stack([oc, orow], axis=1))
                spill = spill & ~others[outer_points]
                if spill.mean() > 0.25:
                    raise Unseen(f"./output/{picture.name}: a filled area is drawn beyond its record's outline")


def _grids_shown(picture: Picture, ax: "Axes", box) -> None:
    import numpy as np

    for grid in ax.grids():
        values, rows, columns = _grid_values(grid)
        if values is None:
            continue
        cells = _grid_cells(picture, ax.record, grid, rows, columns)
        if cells is None:
            raise Unseen(f"./output/{picture.name}: its colour grid cannot be placed in the picture")
        centre_c, centre_r, width, height = cells
        coarse = not grid.get("values")  # block means: a pixel shows one cell of its block, so average several
        offsets = [(-0.3, -0.3), (-0.3, 0.3), (0.3, -0.3), (0.3, 0.3)] + ([(0, 0), (0, -0.3), (0, 0.3), (-0.3, 0), (0.3, 0)] if coarse else [])
        # the corners of a cell: clear of an annotation written at its centre
        c0 = centre_c[None, :].repeat(rows, 0).ravel()
        r0 = centre_r[:, None].repeat(columns, 1).ravel()
        w, h = width[None, :].repeat(rows, 0).ravel(), height[:, None].repeat(columns, 1).ravel()
        flat = values.ravel()
        keep = np.isfinite(flat) & picture.inside(c0, r0, box, 0)
        if keep.sum() < 4:
            continue
        found = [_colormap_positions(picture, grid, c0[keep] + dx * w[keep], r0[keep] + dy * h[keep]) for dx, dy in offsets]
        if found[0][0] is None:
            raise Unseen(f"./output/{picture.name}: its colour map {grid.get('cmap')!r} is not known to the check")
        positions = np.stack([f[0] for f in found])
        distance = np.stack([f[1] for f in found])
        positions = positions.mean(axis=0) if coarse else np.median(positions, axis=0)
        if (distance <= TOLERANCE).mean() < 0.8:
            raise Unseen(f"./output/{picture.name}: its colour grid's cells do not show the colour map {grid.get('cmap')!r}")
        expected = None if coarse else _colormap_expected(grid, flat[keep])
        if expected is not None:  # each cell's colour is its value's place in the colour map, not just its rank
            off = np.abs(positions - expected)
            if off.max() > GRID_VALUE:
                worst = int(np.argmax(off))
                raise Unseen(f"./output/{picture.name}: a cell of its grid shows the colour of {_value_at(grid, positions[worst]):.3g}, not of the "
                             f"{flat[keep][worst]:.3g} its record gives")
            return
        rho = _rank_correlation(positions, flat[keep])
        if not rho >= (0.6 if coarse else 0.9):
            raise Unseen(f"./output/{picture.name}: the colours of its grid's cells do not follow the recorded values (rank correlation {rho:.2f})")


def _colormap_expected(grid: dict, values):
    """Each value's place (0..1) in the colour map through the grid's norm (linear or log, within its recorded limits);
    None for other norms (their order is still checked)."""
    import numpy as np

    clim, norm = grid.get("clim"), grid.get("norm")
    if norm not in ("Normalize", "LogNorm") or not isinstance(clim, list) or len(clim) != 2 or not all(_finite(v) for v in clim) or clim[0] >= clim[1]:
        return None
    low, high, values = float(clim[0]), float(clim[1]), np.asarray(values, dtype=float)
    if norm == "LogNorm":
        if low <= 0:
            return None
        with np.errstate(all="ignore"):
            low, high, values = np.log10(low), np.log10(high), np.log10(values)
    return np.clip((values - low) / (high - low), 0, 1)


def _value_at(grid: dict, position: float) -> float:
    """The value a place in the colour map stands for (linear norms; the place itself otherwise)."""
    clim = grid.get("clim") or [0, 1]
    return float(clim[0]) + position * (float(clim[1]) - float(clim[0])) if grid.get("norm") == "Normalize" else position


def _grid_values(grid: dict):
    import numpy as np

    if grid.get("values"):
        return np.asarray(grid["values"], dtype=float).reshape(grid["rows"], grid["columns"]), grid["rows"], grid["columns"]
    coarse = grid.get("coarse")
    if coarse and len(coarse.get("shape", [])) == 2:
        rows, columns = coarse["shape"]
        return np.asarray(coarse["values"], dtype=float).reshape(rows, columns), rows, columns
    return None, 0, 0


def _grid_cells(picture: Picture, ax: dict, grid: dict, rows: int, columns: int):
    """Centres (columns of the cell columns, rows of the cell rows) and sizes of the grid's cells in pixels."""
    import numpy as np

    if grid["kind"] == "mesh":
        mesh = next((m for m in ax.get("collections", []) if m.get("kind") == "QuadMesh" and m.get("array") == grid["values"]), None)
        if not mesh or len(mesh.get("xcoords", [])) != columns + 1 or len(mesh.get("ycoords", [])) != rows + 1:
            return None
        xs, ys = np.asarray(mesh["xcoords"], float), np.asarray(mesh["ycoords"], float)
        pc, _ = picture.to_pixels(ax, xs, np.full(len(xs), ax["ylim"][0]))
        _, pr = picture.to_pixels(ax, np.full(len(ys), ax["xlim"][0]), ys)
        return (pc[:-1] + pc[1:]) / 2, (pr[:-1] + pr[1:]) / 2, np.diff(pc), np.diff(pr)
    left, right, bottom, top = (float(v) for v in grid["extent"][:4])
    if grid.get("origin", "upper") == "upper":
        bottom, top = top, bottom  # row 0 at the top of the extent
    fx = (np.arange(columns) + 0.5) / columns
    fy = (np.arange(rows) + 0.5) / rows
    if grid.get("coarse") and grid.get("shape"):  # block means cover whole blocks only
        fy_block, fx_block = grid["coarse"]["block"]
        fx = (np.arange(columns) + 0.5) * fx_block / grid["shape"][1]
        fy = (np.arange(rows) + 0.5) * fy_block / grid["shape"][0]
    xs, ys = left + (right - left) * fx, bottom + (top - bottom) * fy
    pc, _ = picture.to_pixels(ax, xs, np.full(len(xs), ax["ylim"][0]))
    _, pr = picture.to_pixels(ax, np.full(len(ys), ax["xlim"][0]), ys)
    step_c = np.full(columns, (pc[-1] - pc[0]) / max(columns - 1, 1) if columns > 1 else 0.0)
    step_r = np.full(rows, (pr[-1] - pr[0]) / max(rows - 1, 1) if rows > 1 else 0.0)
    return pc, pr, step_c, step_r


def _colormap_positions(picture: Picture, grid: dict, columns, rows):
    """Each pixel's place (0..1) in the grid's colour map (as recorded, else by its name), and its colour distance to it."""
    import numpy as np

    lut = [_rgb255(c) for c in grid.get("lut") or []]
    if len(lut) >= 8 and all(c is not None for c in lut):
        lut = np.array(lut)
    else:
        try:
            from matplotlib import colormaps

            lut = colormaps[grid.get("cmap")](np.linspace(0, 1, 64))[:, :3] * 255
        except Exception:
            return None, None
    # between the map's samples: the nearest point on the segment between two neighbours
    seen = picture.pixels[np.clip(np.round(rows).astype(int), 0, picture.height - 1), np.clip(np.round(columns).astype(int), 0, picture.width - 1)].astype(float)
    a, b = lut[:-1], lut[1:]
    d = b - a
    t = np.clip(((seen[:, None, :] - a[None]) * d[None]).sum(axis=2) / np.maximum((d * d).sum(axis=1), 1e-9)[None], 0, 1)
    nearest = a[None] + t[..., None] * d[None]
    distances = np.abs(seen[:, None, :] - nearest).max(axis=2)
    best = distances.argmin(axis=1)
    index = np.arange(len(best))
    return (best + t[index, best]) / (len(lut) - 1), distances[index, best]


def _rank_correlation(a, b) -> float:
    import numpy as np

    def ranks(values):  # ties share their mean rank
        _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
        return (np.cumsum(counts) - (counts - 1) / 2)[inverse]

    ra, rb = ranks(np.round(a, 3)), ranks(np.asarray(b, dtype=float))
    if np.std(ra) == 0 or np.std(rb) == 0:
        return 1.0 if np.std(rb) == 0 and np.ptp(a) < 0.05 else 0.0
    return float(np.corrcoef(ra, rb)[0, 1])


# ----------------------------------------------------------------------------------------------- the texts
# Each text of the record (titles, axis labels, tick labels, legend entries, annotations, pie labels) comes with the
# box the recorder read from matplotlib at save time, in the picture's pixels, and its font, size, weight, style,
# rotation and colour. The text is rendered again alone (Agg, same font and dpi) and its ink compared with the
# picture at that box: a text the picture does not show there fails; a text recorded as not drawn is blanked, so no
# check grades a word from the record alone.

TEXT_CORRELATION = 0.55  # the least correlation between the text rendered again and the picture's ink at its box
TEXT_SIZE = 0.04  # how much the rendered text's width and height may differ from its recorded box (or 2 pixels)
TEXT_VISIBLE = 0.3  # the least share of a text's box, and of its glyphs' ink, inside the picture for it to count as drawn
TEXT_SHIFT = 3  # pixels the comparison may slide either way (the box is measured at the figure's own layout)
DIGITS = "0123456789"  # the characters read one by one: each must match the picture better than any other drawn in its place


_CANVASES = {}  # one drawing figure per dpi, reused: making one costs more than drawing a text


class _Rendered:
    """A text drawn alone at the picture's dpi, at the sub-pixel offset of its recorded box (Agg places glyphs to 1/64
    pixel, so the offset changes their antialiased ink): its ink (0..1), cropped to its extent and TEXT_SHIFT wider, with
    the extent's top left at (TEXT_SHIFT, TEXT_SHIFT) plus the box's fractions; the extent's width and height in pixels;
    and each line as the renderer drew it, so that each digit can be drawn again changed (digit_candidates)."""

    def __init__(self, mark: dict, dpi: float):
        import logging

        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure as MplFigure
        from matplotlib.transforms import IdentityTransform

        if dpi not in _CANVASES:
            logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)  # a family the record names may be absent
            _CANVASES[dpi] = MplFigure(dpi=dpi)
            _CANVASES[dpi].patch.set_alpha(0)
            FigureCanvasAgg(_CANVASES[dpi])
        figure = _CANVASES[dpi]
        x0, y0, x1, y1 = (float(v) for v in mark["box"])
        margin = 4 * TEXT_SHIFT + 10
        side = math.ceil(1.5 * (max(x1 - x0, y1 - y0) + 2 * margin))
        figure.set_size_inches(side / dpi, side / dpi)
        figure.texts.clear()
        self.renderer = figure.canvas.get_renderer()
        self.lines = []  # (x, y, line, font, angle, ismath, text) as Text.draw hands them to the renderer
        self.renderer.draw_text = self._draw_line
        left, top = margin + x0 % 1, margin + y0 % 1  # the box's top left, in the canvas' pixels from its top left
        text = figure.text(left, self.renderer.height - top, mark["text"], transform=IdentityTransform(), ha="left", va="top",
                           rotation=float(mark.get("rotation", 0)), fontfamily=[str(f) for f in mark.get("family") or ["sans-serif"]][:6],
                           fontsize=float(mark.get("size", 10)), fontweight=mark.get("weight", "normal"), fontstyle=mark.get("style", "normal"),
                           color="black", multialignment=mark.get("align") if mark.get("align") in ("left", "center", "right") else "center",
                           **({"linespacing": mark["linespacing"]} if isinstance(mark.get("linespacing"), (int, float, str)) else {}))
        figure.canvas.draw()
        box = text.get_window_extent(self.renderer)
        self.size = (box.width, box.height)
        self.window = (slice(margin - TEXT_SHIFT, math.ceil(top + box.height) + TEXT_SHIFT + 1),
                       slice(margin - TEXT_SHIFT, math.ceil(left + box.width) + TEXT_SHIFT + 1))
        self.ink = self._ink()

    def _draw_line(self, gc, x, y, line, font, angle, ismath=False, mtext=None):
        self.lines.append((x, y, line, font, angle, ismath, mtext))
        type(self.renderer).draw_text(self.renderer, gc, x, y, line, font, angle, ismath=ismath, mtext=mtext)

    def _ink(self):
        import numpy as np

        return np.asarray(self.renderer.buffer_rgba())[self.window + (3,)].astype(float) / 255

    def digit_candidates(self):
        """Per digit of the text: (line, place in it, the digit, {each digit: its ink drawn in that place}). A plain line's
        digits are drawn alone at their glyphs' pens (FreeType's layout of the line), each digit once per font, size,
        angle and quarter-pixel phase (_glyph); a line of math text, or one whose glyphs are not one per character of its
        first font, is drawn again whole with the digit replaced."""
        import numpy as np
        from matplotlib.backends.backend_agg import get_hinting_flag
        from matplotlib.font_manager import findfont, get_font

        gc = self.renderer.new_gc()
        for x, y, line, font, angle, ismath, mtext in self.lines:
            places = [place for place, character in enumerate(line) if character in DIGITS]
            if not places:
                continue
            pens = None
            if not ismath:
                face = get_font(findfont(font))
                face.set_size(font.get_size_in_points(), self.renderer.dpi)
                pens = face.set_text(line, 0.0, flags=get_hinting_flag()) / 64
                whole = len(pens) == len(line) and all(face.get_char_index(ord(character)) for character in line)
                pens = pens if whole else None  # a character from a fallback font moves the glyphs after it
            for place in places:
                if pens is None:
                    inks = {digit: self._line_ink(gc, x, y, line[:place] + digit + line[place + 1:], font, angle, ismath, mtext) for digit in DIGITS}
                else:
                    cos, sin = math.cos(math.radians(angle)), math.sin(math.radians(angle))
                    dx, dy = pens[place]
                    pen = (x + dx * cos - dy * sin, y - dx * sin - dy * cos)
                    glyphs = {digit: self._placed(_glyph(self.renderer, gc, font, angle, digit, pen), pen) for digit in DIGITS}
                    rest = self.ink - glyphs[line[place]]  # the line without this digit: its neighbours stay in every candidate
                    inks = {digit: np.clip(rest + glyph, 0, 1) for digit, glyph in glyphs.items()}
                yield line, place, line[place], inks
        gc.restore()

    def _line_ink(self, gc, x, y, line, font, angle, ismath, mtext):
        self.renderer.clear()
        type(self.renderer).draw_text(self.renderer, gc, x, y, line, font, angle, ismath=ismath, mtext=mtext)
        return self._ink()

    def _placed(self, glyph, pen):
        """A glyph's ink (from _glyph) placed at the pen, in this text's ink's frame."""
        import numpy as np

        ink, (row, column) = glyph
        top = math.floor(pen[1] + 0.125) + row - self.window[0].start
        left = math.floor(pen[0] + 0.125) + column - self.window[1].start
        placed = np.zeros_like(self.ink)
        rows = slice(max(top, 0), min(top + ink.shape[0], placed.shape[0]))
        columns = slice(max(left, 0), min(left + ink.shape[1], placed.shape[1]))
        if rows.stop > rows.start and columns.stop > columns.start:
            placed[rows, columns] = ink[rows.start - top:rows.stop - top, columns.start - left:columns.stop - left]
        return placed


_GLYPHS = {}  # (font, size, dpi, angle, character, pen's phase in quarter pixels): its ink alone and where it lies from the pen


def _glyph(renderer, gc, font, angle: float, character: str, pen: tuple[float, float]):
    """The character drawn alone with its pen at the pen's phase (to a quarter pixel): its ink, cropped to where it
    lies, and that crop's top left (row, column) from the pen's whole pixel."""
    import numpy as np

    phase = tuple(round((value - math.floor(value + 0.125)) * 4) for value in pen)  # 0..3 quarters past the whole pixel
    key = (font, font.get_size_in_points(), renderer.dpi, angle, character, phase)
    if key not in _GLYPHS:
        middle = renderer.height // 2, renderer.width // 2
        renderer.clear()
        type(renderer).draw_text(renderer, gc, middle[1] + phase[0] / 4, middle[0] + phase[1] / 4, character, font, angle)
        ink = np.asarray(renderer.buffer_rgba())[..., 3]
        rows, columns = np.nonzero(ink)
        if not len(rows):
            _GLYPHS[key] = np.zeros((1, 1)), (0, 0)
        else:
            top, left = rows.min(), columns.min()
            _GLYPHS[key] = ink[top:rows.max() + 1, left:columns.max() + 1].astype(float) / 255, (top - middle[0], left - middle[1])
    return _GLYPHS[key]


def text_shown(picture: "Picture", mark: dict) -> tuple[float | None, str]:
    """How well the picture's ink at the mark's box matches the text rendered again (the best correlation over small
    shifts, -1..1; 0 when its size is not the box's): closeness to the text's colour in the picture against the
    rendered glyphs' coverage. None when the picture shows none of it (no glyph inside the picture, or its colour
    everywhere there). With it, '' or how a digit of the text reads otherwise (_misread_digit)."""
    import numpy as np

    x0, y0, x1, y1 = (float(v) for v in mark["box"])
    y0, y1 = y0 - picture.row_fraction, y1 - picture.row_fraction
    drawn = _Rendered(dict(mark, box=[x0, y0, x1, y1]), picture.dpi)
    ink, (wide, tall) = drawn.ink, drawn.size
    if abs(wide - (x1 - x0)) > max(2.0, TEXT_SIZE * wide) or abs(tall - (y1 - y0)) > max(2.0, TEXT_SIZE * tall):
        return 0.0, ""  # rendered again, the text does not fill the box it was recorded with
    colour = _rgb255(mark.get("color")) if _rgb255(mark.get("color")) is not None else np.zeros(3)
    if ink.max() < 0.5:
        return 1.0, ""  # blank glyphs (spaces): nothing to see
    S = TEXT_SHIFT
    top, left = math.floor(y0) - 2 * S, math.floor(x0) - 2 * S  # the box, with room for the ink's margin and the shifts
    area = np.full((ink.shape[0] + 2 * S, ink.shape[1] + 2 * S, 3), np.nan)
    rows, columns = slice(max(top, 0), min(top + area.shape[0], picture.height)), slice(max(left, 0), min(left + area.shape[1], picture.width))
    if rows.stop <= rows.start or columns.stop <= columns.start:
        return -1.0, ""
    area[rows.start - top:rows.stop - top, columns.start - left:columns.stop - left] = picture.pixels[rows, columns]
    distance = np.abs(area - colour).max(axis=-1)
    far = np.nanpercentile(distance, 95)
    if far < 40:
        return None, ""  # the text's colour is everywhere there: nothing shows it
    closeness = np.clip(1 - distance / far, 0, 1)  # NaN beyond the picture's edge: only what it shows is compared
    best, shift = -1.0, None
    for dy in range(2 * S + 1):
        for dx in range(2 * S + 1):
            seen = closeness[dy:dy + ink.shape[0], dx:dx + ink.shape[1]]
            shown = ~np.isnan(seen)
            if ink[shown].sum() >= TEXT_VISIBLE * ink.sum():  # enough of its glyphs inside the picture to tell
                score = float(np.corrcoef(ink[shown], seen[shown])[0, 1]) if seen[shown].std() > 0 else -1.0
                best, shift = (score, (dy, dx)) if shift is None or score > best else (best, shift)
    if shift is None:
        return None, ""  # too little of its glyphs lies inside the picture (a label cut by the edge, its blank lines inside)
    return best, _misread_digit(drawn, closeness, shift) if best >= TEXT_CORRELATION else ""


def _standardised(rows):
    """Each row less its mean, over its norm (a row without variance all zeros): their products are correlations."""
    import numpy as np

    rows = rows - rows.mean(axis=1, keepdims=True)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms > 0, norms, np.inf)


def _misread_digit(drawn: _Rendered, closeness, shift: tuple[int, int]) -> str:
    """'' when no other digit drawn in a digit's place matches the picture better than the digit itself (a cell the
    picture covers matches all alike), compared on that digit's cell (where the variants' ink differs, a pixel wider), each at its best shift within
    a pixel of the text's; else which digit reads as which. A digit cell the picture's edge cuts is not compared."""
    import numpy as np

    for line, place, digit, inks in drawn.digit_candidates():
        changed = np.ptp(np.stack(list(inks.values())), axis=0) > 0.05
        if not changed.any():
            continue
        (r0, r1), (c0, c1) = ((max(int(np.min(i)) - 1, 0), int(np.max(i)) + 2) for i in np.nonzero(changed))
        windows = [closeness[shift[0] + dy + r0:shift[0] + dy + r1, shift[1] + dx + c0:shift[1] + dx + c1]
                   for dy in (-1, 0, 1) for dx in (-1, 0, 1) if 0 <= shift[0] + dy <= 2 * TEXT_SHIFT and 0 <= shift[1] + dx <= 2 * TEXT_SHIFT]
        windows = [w.ravel() for w in windows if w.shape == (r1 - r0, c1 - c0) and not np.isnan(w).any()]
        if not windows:
            continue
        cells = np.stack([ink[r0:r1, c0:c1].ravel() for ink in inks.values()])
        scores = dict(zip(inks, (_standardised(cells) @ _standardised(np.stack(windows)).T).max(axis=1)))  # each at its best window
        other = max((d for d in DIGITS if d != digit), key=scores.get)
        if scores[other] > scores[digit]:
            return f"its digit {digit!r} in {line!r} reads as {other!r}: match {scores[other]:.2f} against {scores[digit]:.2f}"
    return ""


def _kept_text(picture: "Picture", mark, what: str) -> str:
    """The mark's text when the picture shows it at its box; '' when the record says it was not drawn, or less than
    TEXT_VISIBLE of its box lies inside the picture (a text cut by the edge is compared on the part the picture shows)."""
    if not isinstance(mark, dict) or not isinstance(mark.get("text"), str):
        return ""
    if not isinstance(mark.get("box"), list) or len(mark["box"]) != 4 or not all(_finite(v) for v in mark["box"]):
        return ""
    x0, y0, x1, y1 = (float(v) for v in mark["box"])
    inside = max(min(x1, picture.width) - max(x0, 0), 0) * max(min(y1, picture.height) - max(y0, 0), 0)
    if inside < TEXT_VISIBLE * (x1 - x0) * (y1 - y0):
        return ""  # mostly beyond the picture's edge (a label below a short figure): the picture does not show it
    score, misread = text_shown(picture, mark)
    if score is None:
        return ""
    if score < TEXT_CORRELATION:
        raise Unseen(f"./output/{picture.name}: the {what} {mark['text'][:60]!r} is not drawn where its figure record puts it"
                     f" (match {max(score, 0):.2f}, at least {TEXT_CORRELATION} needed)")
    if misread:
        raise Unseen(f"./output/{picture.name}: the {what} {mark['text'][:60]!r} is not drawn where its figure record puts it ({misread})")
    return mark["text"]


def _name_wedges(picture: "Picture", ax: "Axes") -> None:
    """Each wedge's "drawn_texts": the verified texts whose box centre lies within its angles as seen from the pie's
    centre (its label outside, its percentage inside): the names a reader reads, whatever the wedges' label says."""
    import numpy as np

    marks = ax.record.get("marks", {}).get("texts") or []
    for wedge in ax.wedges:
        cx, cy = (float(v) for v in wedge["center"][:2])
        (pc, pe), (pr, pn) = picture.to_pixels(ax.record, [cx, cx + float(wedge["r"])], [cy, cy + float(wedge["r"])])
        t1, t2 = float(wedge["theta1"]), float(wedge["theta2"])
        wedge["drawn_texts"] = []
        for mark, text in zip(marks, ax.texts):
            if not text or not isinstance(mark.get("box"), list):
                continue
            x0, y0, x1, y1 = (float(v) for v in mark["box"])
            at = mark.get("anchor") if isinstance(mark.get("anchor"), list) and len(mark["anchor"]) == 2 and all(_finite(v) for v in mark["anchor"]) else None
            if at is None or not (x0 - 2 <= at[0] <= x1 + 2 and y0 - 2 <= at[1] <= y1 + 2):
                at = [(x0 + x1) / 2, (y0 + y1) / 2]  # the point the text is placed by (a pie label's mid-angle), on its drawn box
            dx, dy = (at[0] - pc) / max(abs(pe - pc), 1e-9), (pr - at[1]) / max(abs(pn - pr), 1e-9)
            if np.hypot(dx, dy) <= 1.6 and (math.degrees(math.atan2(dy, dx)) - t1) % 360 <= (t2 - t1) % 360 + (360 if t2 - t1 >= 360 else 0):
                wedge["drawn_texts"].append(text)


def keep_shown_texts(figure: "Figure") -> None:
    """Every text of the record is verified in the picture (text_shown, TEXT_CORRELATION) and the record's words
    replaced by the verified ones: the checks read titles, labels, tick labels, legends and texts only as drawn. A text
    without a drawn box (not drawn, outside the view, or a record without boxes) or mostly beyond the picture's edge reads
    as ''."""
    try:
        picture = Picture(figure.record, figure.image, figure.name)
        record = figure.record
        record["suptitle"] = _kept_text(picture, record.get("suptitle_mark"), "title")
        record["legends"] = [[_kept_text(picture, mark, "legend entry") for mark in marks if isinstance(marks, list)]
                             for marks in record.get("legend_marks") or [] if isinstance(marks, list)]
        for ax in figure.all_axes:
            marks = ax.record.get("marks") if isinstance(ax.record.get("marks"), dict) else {}
            had_legend = ax.record.get("legend") is not None
            for name, what in (("xticklabels", "tick label"), ("yticklabels", "tick label"), ("legend", "legend entry"), ("texts", "text")):
                found = marks.get(name) if isinstance(marks.get(name), list) else []
                ax.record[name] = [_kept_text(picture, mark, what) for mark in found]
            titles = [_kept_text(picture, mark, "title") for mark in (marks.get("titles") or [])[:3]]
            ax.record["titles"], ax.record["title"] = titles, titles[1] if len(titles) == 3 else ""
            ax.record["xlabel"], ax.record["ylabel"] = (_kept_text(picture, marks.get(name), f"{name[0]} axis label") for name in ("xlabel", "ylabel"))
            ax.record["legend"] = ax.record["legend"] if had_legend else None
            ax.title = ax.record["title"] or " ".join(t for t in titles if t)
            ax.xlabel, ax.ylabel = ax.record["xlabel"], ax.record["ylabel"]
            ax.legend, ax.texts = ax.record["legend"] or [], ax.record["texts"]
            ax.record["figure_legend"] = [text for entries in record["legends"] for text in entries]
            _name_wedges(picture, ax)
    except Unseen:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, ZeroDivisionError) as error:
        raise Unseen(f"./output/{figure.name}: its figure's texts cannot be placed in the picture ({type(error).__name__})") from None
