"""The figure record, read by the chart checks: what matplotlib drew, not only what the pixels look like.

The agent's jail records every figure its code saves (Figure.savefig, hence plt.savefig, pandas' and seaborn's plots)
or shows (plt.show): per axes its bars (grouped by container, with position, size and colour), lines (data,
colour, style, marker), patches (pie wedges with their angles, rectangles, polygons), collections (scatter
offsets and colours, filled areas' outlines, heatmap meshes with their values), images (shape, extent, origin),
texts, title, axis labels, tick labels, limits, scales and units, and the legend; plus the file it became and its
size in pixels. The harness puts the attempt's records beside output/ as figures.json (read-only in the check's jail).

The recorder runs in the agent's own process, so agent code could forge a record. That is why every record a
check relies on is held against the saved image (saved_figure): the picture must exist, decode, have the pixel
size the record says, show drawing in its axes, and show the colours the check relies on.
"""
import colorsys
import json
import math
from pathlib import Path

from common import load_image


def records(output: Path) -> list[dict]:
    """All figure records of the attempt, oldest first ([] if the harness wrote none)."""
    path = output.parent / "figures.json"
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


def saved_figure(output: Path, name: str) -> "Figure":
    """The figure the agent's code saved as ./output/name (the last save wins), held against the saved image.

    A figure saved to memory first and written out by other means (PIL, a buffer) counts when its pixel size is
    the image's. Fails when no record matches: the file was not made by matplotlib, or not from a figure.
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
        """Every visible bar, with "group" (its container's label) and "index" (its container's number) added."""
        labels = [group.get("label", "") for group in self.record.get("bars", []) if any(b.get("visible", True) for b in group.get("bars", []))]
        if any(label.startswith("_") for label in labels) and len(self.legend) == len(labels):  # seaborn's hue: named in the legend
            labels = list(self.legend)
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
        return [line for line in self.record.get("lines", []) if line.get("visible", True)
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
                found.append({"kind": "mesh", "rows": rows, "columns": columns, "values": values, "cmap": mesh.get("cmap")})
        for image in self.record.get("images", []):
            rows, columns = (image["shape"] + [0, 0])[:2]
            found.append({**image, "kind": "image", "rows": rows, "columns": columns,
                          "values": image.get("array") if len(image.get("array") or []) == rows * columns else None})
        return found

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
        assert self.axes, f"./output/{self.name} holds no {what}"
        return self.axes[0]

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
        min(g["rows"], g["columns"]) <= 1 or (g["kind"] == "mesh" and ax.record["position"][2] < 0.08) for g in grids)


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
