"""jailed: the code that runs inside pybench's jails, a module of its own (standard library only).

The harness (sandbox.py) copies this file, compiled, into a private folder when the first jail is configured (so a file
edited during a run does not change the jails' worker), mounts that folder read-only in every jail at /pybench, and
starts the jail's Python with WORKER_BOOT, which imports this module and calls main() with its arguments as JSON:

    jail_worker          the persistent interpreter: runs a task's cells one by one and answers on a pipe
                         (its parts: worker_channel, run_cell, failure_report, restore_output)
    figure_hook          a post-import hook that installs figure_recorder once a cell imports matplotlib
    figure_recorder      the figure record: what every saved or shown matplotlib figure holds (figure_reader, and
                         its readers: value_readers, text_readers, element_readers, artist_readers)
    original_kernel      what the original PyBench's Jupyter kernel showed of a cell (its display, its two streams,
                         its warnings, and what its versions did: kernel_streams, original_warnings, as_in_python310)
    as_in_a_notebook     a student's notebook as Jupyter runs it (notebook_display, figures closed at each cell's end)
    KIT_CALLS            what the harness itself runs in a jail, with arguments as data: a check (under the
                         unpickling guard, restrict_unpickling), doctor's import probe, and ML-Bench's bash runs
    frame                the channel's message format, used on both sides

Tests import it as a plain module.
"""
import _ast
import _signal
import json
import os
import sys
import warnings

__all__ = ["JAIL_FOLDER", "WORKER_BOOT", "frame", "main", "as_its_own_text", "value_readers", "text_readers", "artist_readers",
           "figure_recorder", "SHOWN_FIGURES", "SHOWN_PNG_BYTES", "SHOWN_PIXELS", "as_in_a_notebook", "worker_channel", "run_cell",
           "failure_report", "bounded", "middle_cut", "Refused", "admit_global", "rebuilds", "bound_arguments_refusal",
           "call_refusal", "new_refusal", "build_refusal", "restrict_unpickling", "KIT_CALLS", "check", "PartsAwarded",
           "parts_json", "probe_imports", "run_bash", "run_as_mlbench", "Outcome", "script_argument", "process_children", "gone"]

JAIL_FOLDER = "/pybench"  # where the harness mounts this module's folder in a jail
# The jail's Python runs this, with main()'s arguments as sys.argv[1]: the module leaves sys.path and sys.modules
# before any cell runs, so a cell finds neither it nor its functions in __main__.
WORKER_BOOT = f"import sys\nsys.path.insert(0, {JAIL_FOLDER!r})\n__import__('jailed').main(sys.argv[1])\n"


def frame(*fields: str) -> bytes:
    """A message on the worker's pipes: a 4-byte count, then each field as a 4-byte length and UTF-8 text."""
    payload = len(fields).to_bytes(4, "big")
    for text in fields:
        data = text.encode("utf-8", "replace")
        payload += len(data).to_bytes(4, "big") + data
    return payload


def main(arguments: str) -> None:
    """The worker's entry in a jail: arguments is JSON {"command_fd", "result_fd", "original_kernel", "notebook"}."""
    import ctypes

    options = json.loads(arguments)
    # prctl(PR_SET_DUMPABLE (4), 0): no other process of the jail (one a cell left running, say) may open this one's
    # fds through /proc/<pid>/fd or read its memory. Its children are dumpable again once they exec, as usual.
    ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)
    sys.path.remove(JAIL_FOLDER)
    del sys.modules[__name__]
    jail_worker(options["command_fd"], options["result_fd"], original_kernel() if options.get("original_kernel") else None,
                as_in_a_notebook() if options.get("notebook") else None)


def patch_on_import(patches: dict) -> None:
    """Puts a finder first on sys.meta_path that calls patches[name](module) right after the named module has run: the
    spec is the one the finders after it find, its loader wrapped, so that two patches of one module chain in order."""
    class Loader:
        """Wraps the real loader of a patched module and patches the module once it has run."""

        def __init__(self, loader, name):
            self.loader, self.name = loader, name

        def __getattr__(self, name):
            return getattr(self.loader, name)

        def exec_module(self, module):
            self.loader.exec_module(module)
            patches[self.name](module)

    class Hook:
        def find_spec(self, name, path=None, target=None):
            if name not in patches:
                return None
            for finder in sys.meta_path[sys.meta_path.index(self) + 1:]:  # the finders before it found nothing
                find = getattr(finder, "find_spec", None)
                spec = find(name, path, target) if find else None
                if spec is not None and spec.loader is not None:
                    spec.loader = Loader(spec.loader, name)
                    return spec
            return None

    sys.meta_path.insert(0, Hook())


def figure_hook():
    """A post-import hook on matplotlib.figure and matplotlib.pyplot: nothing is imported at worker start; only when
    a cell imports matplotlib is figure_recorder made and the two modules patched as they load. Returns take(): the
    figure records made since the last call, as JSON text ("" if none)."""
    recorder = {}

    def patch(module) -> None:
        if not recorder:
            recorder.update(as_its_own_text(figure_recorder)())
        recorder[module.__name__](module)

    patch_on_import({"matplotlib.figure": patch, "matplotlib.pyplot": patch})
    return lambda: recorder["take"]() if recorder else ""


def as_its_own_text(function):
    """The function with its code named "<string>" and its lines counted from its def, as when the jails compiled
    it from its own text: a warning raised while it reads a cell's figure (a masked value, say) reads as it always has,
    without pointing into this file."""
    shift = function.__code__.co_firstlineno - 1

    def renamed(code):
        inner = tuple(renamed(constant) if isinstance(constant, type(code)) else constant for constant in code.co_consts)
        return code.replace(co_filename="<string>", co_firstlineno=code.co_firstlineno - shift, co_consts=inner)

    return type(function)(renamed(function.__code__), function.__globals__, function.__name__, function.__defaults__,
                          function.__closure__)


def value_readers(max_points: int) -> dict:
    """The figure record's numbers and colours: colour (#rrggbbaa), numbers (floats, at most max_points, None for
    what is not one), colours (the distinct ones of an array) and coarse (a big grid as block means)."""
    def colour(rgba) -> str:
        try:
            return "#" + "".join(f"{round(min(max(float(c), 0.0), 1.0) * 255):02x}" for c in list(rgba)[:4])
        except (TypeError, ValueError):
            return ""

    def numbers(values, limit=max_points) -> list:
        out = []
        for value in values[:limit] if hasattr(values, "__getitem__") else list(values)[:limit]:  # cut before converting
            try:
                out.append(round(float(value), 9))
            except (TypeError, ValueError):
                out.append(None)
        return out

    def colours(array, limit=64) -> list:
        return list(dict.fromkeys(map(colour, array[:4096])))[:limit]

    def coarse(array, side=64) -> dict:  # at most side x side: a spectrogram's shape, not its every cell
        rows, columns = array.shape
        fy, fx = -(-rows // side), -(-columns // side)
        cut = array[:rows // fy * fy, :columns // fx * fx].astype(float)
        blocks = cut.reshape(rows // fy, fy, columns // fx, fx).mean(axis=(1, 3))
        return {"shape": list(blocks.shape), "block": [fy, fx], "values": numbers(blocks.ravel(), side * side)}

    def rgba_of(artist) -> tuple:
        from matplotlib.colors import to_rgba

        return to_rgba(artist.get_color(), artist.get_alpha())

    return {"colour": colour, "numbers": numbers, "colours": colours, "coarse": coarse, "rgba_of": rgba_of}


def text_readers(values: dict, renderer: list, place: list) -> dict:
    """The figure record's texts: where each is drawn in the saved picture (at the dpi and crop in place[0], by
    renderer[0]), in which fonts and colour; legends' boxes and frames."""
    colour, numbers, rgba_of = values["colour"], values["numbers"], values["rgba_of"]
    found_fonts = {}

    def box_of(artist) -> list | None:
        """Where the artist was drawn, in figure fractions (x0, y0, x1, y1): a legend that covers part of a chart."""
        try:
            box = artist.get_window_extent().transformed(artist.figure.transFigure.inverted())
            return numbers([box.x0, box.y0, box.x1, box.y1])
        except Exception:
            return None

    def frame_of(legend) -> str | None:
        """The face colour (with its alpha) of the legend's drawn frame; None when it draws none (frameon=False)."""
        try:
            frame = legend.get_frame()
            return colour(frame.get_facecolor()) if legend.get_frame_on() and frame.get_visible() and frame.get_fill() else None
        except Exception:
            return None

    def marks_of(texts, drawn=None) -> list:
        """Where each text was drawn in the saved picture and how: its box in the picture's pixels (left, top,
        right, bottom; None when not drawn), the fonts it was set in (generic families resolved as the figure had
        them), size in points, weight, style, rotation, colour and the text itself, so a check can render it again."""
        from matplotlib import rcParams

        marks = []
        for text in texts:
            mark = {"text": text.get_text()[:200], "box": None}
            try:
                shown = text.get_visible() and mark["text"].strip() and (drawn is None or id(text) in drawn)
                if shown and place[0] is not None:
                    dpi, left, top = place[0]
                    from matplotlib.text import Text

                    box = Text.get_window_extent(text, renderer[0])  # drawn again at the saved dpi (record); an annotation's text alone, not its arrow
                    mark["box"] = numbers([box.x0 - left * dpi, top * dpi - box.y1, box.x1 - left * dpi, top * dpi - box.y0])
                    x, y = text.get_transform().transform(text.get_unitless_position())  # the point it is placed by
                    mark["anchor"] = numbers([x - left * dpi, top * dpi - y])
                mark |= {"family": fonts_of(text), "size": float(text.get_fontsize()), "weight": str(text.get_fontweight()),
                         "style": text.get_fontstyle(), "rotation": float(text.get_rotation()), "color": colour(rgba_of(text)),
                         "align": text._multialignment or text.get_horizontalalignment(), "linespacing": text._linespacing if isinstance(text._linespacing, (int, float, str)) else None,
                         "math": rcParams["text.usetex"] or text.get_usetex(),
                         "bbox_color": colour(text.get_bbox_patch().get_facecolor()) if text.get_bbox_patch() is not None else None}
            except Exception:
                mark["box"] = None
            marks.append(mark)
        return marks

    def fonts_of(text) -> list:
        """The fonts the text's family list finds, generic families resolved as the figure had them (the fallbacks)."""
        from matplotlib import font_manager, rcParams

        wanted = []
        for family in text.get_fontfamily():
            generic = family in ("serif", "sans-serif", "monospace", "cursive", "fantasy")
            wanted += list(rcParams[f"font.{family}"]) if generic else [family]
        key = tuple(wanted)
        if key not in found_fonts:
            found = []
            for family in wanted:
                try:
                    font_manager.findfont(font_manager.FontProperties(family=family), fallback_to_default=False)
                    found.append(family)
                except ValueError:
                    pass
            found_fonts[key] = found[:6] or ["DejaVu Sans"]
        return found_fonts[key]

    return {"box_of": box_of, "frame_of": frame_of, "marks_of": marks_of}


def element_readers(max_points: int, values: dict) -> dict:
    """The figure record's drawn elements of an axes: its patches, collections (scatter points, meshes, filled areas),
    images and lines."""
    colour, numbers, colours, coarse, rgba_of = map(values.get, ("colour", "numbers", "colours", "coarse", "rgba_of"))

    def lut_of(mappable) -> list:
        """The colour map a mappable draws its values through, at 64 points."""
        return [colour(c) for c in mappable.get_cmap()([i / 63 for i in range(64)])]

    def patch_of(patch) -> dict:
        kind = type(patch).__name__
        entry = {"kind": kind, "color": colour(patch.get_facecolor()), "edgecolor": colour(patch.get_edgecolor()),
                 "fill": patch.get_fill(), "label": str(patch.get_label() or ""), "visible": patch.get_visible()}
        if kind == "Wedge":
            entry |= dict(zip(("theta1", "theta2", "r"), numbers([patch.theta1, patch.theta2, patch.r]))) | {"center": numbers(patch.center)}
        elif kind == "Rectangle":
            entry |= dict(zip(("x", "y", "width", "height"), numbers([patch.get_x(), patch.get_y(), patch.get_width(), patch.get_height()])))
        else:  # polygons, path patches (box-plot boxes), ellipses...: where they lie, in data units (x0, y0, width, height)
            try:
                entry["extent"] = numbers(patch.get_path().transformed(patch.get_patch_transform()).get_extents().bounds)
            except Exception:
                pass
        return entry

    def collection_of(item) -> dict:
        entry = {"kind": type(item).__name__, "label": str(item.get_label() or ""), "visible": item.get_visible(),
                 "sizes": numbers(item.get_sizes()[:1]) if hasattr(item, "get_sizes") else [],
                 "facecolors": colours(item.get_facecolor()), "edgecolors": colours(item.get_edgecolor())}
        try:
            offsets = item.get_offsets()
            entry["n"] = len(offsets)
            entry["offsets"] = [numbers(point) for point in offsets[:max_points]]
        except Exception:
            pass
        array = item.get_array()
        if array is not None:
            entry |= {"array_shape": list(getattr(array, "shape", ())),
                      "array": numbers(array.ravel(), 4 * max_points) if hasattr(array, "ravel") else [],
                      "cmap": item.get_cmap().name, "clim": numbers(item.get_clim()), "norm": type(item.norm).__name__,
                      "lut": lut_of(item)}
            if entry["kind"] == "QuadMesh" and array.ndim == 2:  # cell corners along each axis, and big grids coarsely
                corners = item.get_coordinates()
                entry["xcoords"], entry["ycoords"] = numbers(corners[0, :, 0]), numbers(corners[:, 0, 1])
                entry["coarse"] = coarse(array) if array.size > 4 * max_points else None
        if entry["kind"] in ("PolyCollection", "FillBetweenPolyCollection", "LineCollection"):
            entry["paths"] = [[numbers(point) for point in path.vertices[:max_points]] for path in item.get_paths()[:64]]
        return entry

    def image_of(image) -> dict:
        array = image.get_array()
        grid = array is not None and array.ndim == 2  # a value grid drawn through a colour map (imshow, matshow, specgram)
        return {"kind": type(image).__name__, "shape": list(getattr(array, "shape", ())), "extent": numbers(image.get_extent()),
                "origin": getattr(image, "origin", None), "cmap": image.get_cmap().name if grid else None,
                "lut": lut_of(image) if grid else None,
                "clim": numbers(image.get_clim()), "norm": type(image.norm).__name__, "array": numbers(array.ravel(), 4 * max_points) if grid and array.size <= 4 * max_points else [],
                "coarse": coarse(array) if grid and array.size > 4 * max_points else None}

    def line_of(line) -> dict:
        from matplotlib.colors import to_rgba

        points = line.get_xydata()
        axes, transform = line.axes, line.get_transform()
        frames = [(axes.transData, "data"), (axes.get_yaxis_transform(), "yaxis"), (axes.get_xaxis_transform(), "xaxis")] if axes else []
        coords = next((name for frame, name in frames if transform == frame), "other")  # transforms are not hashable
        return {"label": str(line.get_label() or ""), "color": colour(rgba_of(line)),
                "linestyle": str(line.get_linestyle()), "marker": str(line.get_marker()), "linewidth": line.get_linewidth(),
                "markersize": line.get_markersize(), "marker_colors": [colour(to_rgba(c)) for c in (line.get_markerfacecolor(), line.get_markeredgecolor())], "drawstyle": str(line.get_drawstyle()), "coords": coords,
                "visible": line.get_visible(), "n": len(points), "x": numbers(points[:max_points, 0]), "y": numbers(points[:max_points, 1])}

    return {"patch_of": patch_of, "collection_of": collection_of, "image_of": image_of, "line_of": line_of}


def artist_readers(max_points: int, values: dict, text_parts: dict) -> dict:
    """The figure record's axes (axes_of): their bars, patches, collections, images and lines (element_readers), with
    their texts, legend, ticks, limits and scales."""
    colour, numbers, colours, rgba_of = map(values.get, ("colour", "numbers", "colours", "rgba_of"))
    box_of, frame_of, marks_of = (text_parts[name] for name in ("box_of", "frame_of", "marks_of"))
    patch_of, collection_of, image_of, line_of = map(as_its_own_text(element_readers)(max_points, values).get,
                                                     ("patch_of", "collection_of", "image_of", "line_of"))

    def bars_of(ax) -> tuple[list, set]:
        groups, members = [], set()
        for container in ax.containers:
            if type(container).__name__ != "BarContainer":
                continue
            bars = []
            for patch in list(container.patches)[:max_points]:
                members.add(id(patch))
                x, y, width, height = numbers([patch.get_x(), patch.get_y(), patch.get_width(), patch.get_height()])
                bars.append({"x": x, "y": y, "width": width, "height": height, "color": colour(patch.get_facecolor()),
                             "edgecolor": colour(patch.get_edgecolor()), "hatch": patch.get_hatch(),
                             "hatch_color": colour(patch.get_hatchcolor()) if hasattr(patch, "get_hatchcolor") else "",
                             "visible": patch.get_visible()})
            groups.append({"label": str(container.get_label() or ""), "orientation": getattr(container, "orientation", None),
                           "bars": bars, "n": len(container.patches)})
        return groups, members

    def tick_marks(ax, axis: str) -> list:
        """marks_of the axis's tick labels, those outside the view not drawn."""
        axis_object = getattr(ax, f"{axis}axis")
        drawn = set()
        try:
            for tick in axis_object._update_ticks():  # the ticks inside the view, which are the ones drawn
                drawn |= {id(tick.label1), id(tick.label2)}
        except Exception:
            drawn = None
        return marks_of(getattr(ax, f"get_{axis}ticklabels")()[:200], drawn)

    def axes_of(ax) -> dict:
        bars, members = bars_of(ax)
        legend = ax.get_legend()
        entry = {
            "kind": getattr(ax, "name", "rectilinear"), "position": numbers(ax.get_position().bounds),
            "facecolor": colour(ax.get_facecolor()),
            "grid_colours": colours([rgba_of(line) for axis in (ax.xaxis, ax.yaxis) for line in axis.get_gridlines()
                                     if line.get_visible()], 8),
            "title": ax.get_title(), "titles": [ax.get_title(loc=loc) for loc in ("left", "center", "right")],
            "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(), "visible": ax.get_visible(), "axis_on": ax.axison,
            "legend": [text.get_text() for text in legend.get_texts()] if legend is not None else None,
            "legend_box": box_of(legend), "legend_frame": frame_of(legend) if legend is not None else None,
            "bars": bars,
            "lines": [line_of(line) for line in ax.get_lines()[:256]],
            "patches": [patch_of(patch) for patch in ax.patches[:max_points] if id(patch) not in members],
            "collections": [collection_of(item) for item in ax.collections[:256]],
            "images": [image_of(image) for image in ax.get_images()[:16]],
            "texts": [text.get_text()[:200] for text in ax.texts[:500]],
        }
        legend_texts = list(legend.get_texts()) if legend is not None else []
        entry["marks"] = {"title": marks_of([ax.title])[0], "titles": marks_of([ax._left_title, ax.title, ax._right_title]),
                          "xlabel": marks_of([ax.xaxis.label])[0], "ylabel": marks_of([ax.yaxis.label])[0],
                          "legend": marks_of(legend_texts), "texts": marks_of(ax.texts[:500]),
                          "xticklabels": tick_marks(ax, "x"), "yticklabels": tick_marks(ax, "y")}
        for axis in ("x", "y") + (("z",) if entry["kind"] == "3d" else ()):
            entry[f"{axis}lim"] = numbers(getattr(ax, f"get_{axis}lim")())
            entry[f"{axis}scale"] = getattr(ax, f"get_{axis}scale")()
            entry[f"{axis}ticks"] = numbers(getattr(ax, f"get_{axis}ticks")())
            entry[f"{axis}ticklabels"] = [tick.get_text() for tick in getattr(ax, f"get_{axis}ticklabels")()][:200]
            entry[f"{axis}units"] = type(getattr(ax, f"{axis}axis").get_converter()).__name__ if hasattr(getattr(ax, f"{axis}axis"), "get_converter") else ""
        return entry

    return {"axes_of": axes_of}


def figure_reader(max_points: int):
    """record_of(figure, file, savefig's keywords): the record of a figure as savefig wrote it to file, drawn again at
    the saved dpi; per axes what artist_readers read, and the figure's size, dpi, crop, suptitle and legends."""
    renderer, place = [None], [None]  # the figure's renderer and (dpi, left, top in inches) of the picture being recorded
    values = as_its_own_text(value_readers)(max_points)
    text_parts = as_its_own_text(text_readers)(values, renderer, place)
    numbers, box_of, frame_of, marks_of = values["numbers"], text_parts["box_of"], text_parts["frame_of"], text_parts["marks_of"]
    axes_of = as_its_own_text(artist_readers)(max_points, values, text_parts)["axes_of"]

    def record_of(figure, file, kwargs) -> dict:
        from matplotlib import rcParams

        dpi = kwargs.get("dpi") or rcParams["savefig.dpi"]
        dpi = figure.dpi if dpi == "figure" else dpi
        bbox = kwargs.get("bbox_inches", rcParams["savefig.bbox"])
        name = None
        if isinstance(file, str) or hasattr(file, "__fspath__"):
            name = os.path.abspath(os.fspath(file))
        elif hasattr(file, "name") and isinstance(file.name, str):
            name = file.name
        width, height = figure.get_size_inches()
        shown_dpi = figure.dpi
        try:  # drawn again at the saved dpi, where savefig drew it: texts' boxes as in the file (legends placed at draw)
            figure.dpi = float(dpi)
            figure.canvas.draw()
            renderer[0] = figure.canvas.get_renderer()
            crop = None
            if bbox == "tight":  # the part of the canvas the file shows, inches from its bottom left (savefig pads it)
                box = figure.get_tightbbox(renderer[0])
                pad = kwargs.get("pad_inches")
                pad = float(rcParams["savefig.pad_inches"] if pad in (None, "layout") else pad)
                crop = numbers([box.x0 - pad, box.y0 - pad, box.x1 + pad, box.y1 + pad])
            uncropped = (float(dpi), 0.0, float(height)) if bbox in (None, "standard") else None
            place[0] = (float(dpi), crop[0], crop[3]) if crop else uncropped
            legends, suptitle = figure.legends[:16], figure._suptitle
            return {"file": name, "crop_inches": crop, "format": kwargs.get("format"), "dpi": float(dpi),
                    "size_inches": numbers([width, height]),
                    "bbox_inches": bbox if isinstance(bbox, str) or bbox is None else "custom",
                    "pixels": [round(width * dpi), round(height * dpi)],
                    "suptitle": suptitle.get_text() if suptitle else "",
                    "legends": [[text.get_text() for text in legend.get_texts()] for legend in figure.legends],
                    "legend_boxes": [box_of(legend) for legend in legends],
                    "legend_frames": [frame_of(legend) for legend in legends],
                    "suptitle_mark": marks_of([suptitle])[0] if suptitle else None,
                    "legend_marks": [marks_of(legend.get_texts()) for legend in legends],
                    "axes": [axes_of(ax) for ax in figure.axes[:64]]}
        finally:
            figure.dpi = shown_dpi

    return record_of


def figure_recorder(max_points: int = 2000, max_bytes: int = 2_000_000) -> dict:
    """Runs inside the jail once matplotlib loads (figure_hook calls it then). Patches Figure.savefig (plt.savefig,
    pandas' and seaborn's plots all end there) and plt.show so that each adds a record of the figure (figure_reader):
    per axes its bars, lines, patches, collections, images, texts, labels, legend, ticks, limits and scales, and which
    file it became. Returns {module name: its patch, "take": take}; take() gives the records made since its last call
    as JSON text, at most max_bytes (the oldest records are dropped first). The records are made in the agent's own
    process, so its code can forge them; checks hold them against the saved picture."""
    records = []
    reader = as_its_own_text(figure_reader)(max_points)

    def record_of(figure, file, kwargs) -> dict:
        """The figure read and drawn again with its warnings kept from the agent (savefig's own drawing showed the
        agent's): what the recorder raises is not the agent's output. No filter changes, so no warning shows twice."""
        shown = warnings.showwarning
        warnings.showwarning = lambda *arguments, **keywords: None
        try:
            return reader(figure, file, kwargs)
        finally:
            warnings.showwarning = shown

    def patch_figure(module) -> None:
        save = module.Figure.savefig

        def savefig(self, fname, *args, **kwargs):
            result = save(self, fname, *args, **kwargs)
            try:
                records.append(record_of(self, fname, kwargs))
            except Exception:  # a record is a bonus: it never breaks the agent's own savefig
                pass
            return result

        module.Figure.savefig = savefig

    def patch_pyplot(module) -> None:
        show = module.show

        def show_and_record(*args, **kwargs):
            for number in module.get_fignums():
                figure = module.figure(number)
                try:
                    records.append(record_of(figure, None, {}))
                except Exception:
                    pass
            return show(*args, **kwargs)

        module.show = show_and_record

    def take() -> str:
        if not records:
            return ""
        texts = [json.dumps(entry, default=str) for entry in records]
        records.clear()
        while texts and sum(len(text) + 1 for text in texts) > max_bytes:
            texts.pop(0)
        return "[" + ",".join(texts) + "]"

    return {"matplotlib.figure": patch_figure, "matplotlib.pyplot": patch_pyplot, "take": take}


def original_kernel():
    """Runs inside an original checkout's jail, before the worker: what the original's Jupyter kernel (Python 3.10)
    showed of a cell, as its saved trajectories show it (docs/original.md): the last value through IPython's pretty
    printer (nothing for None or a trailing ';') after the cell's streams (kernel_streams), pandas as in Python 3.10
    (as_in_python310), display() silent, its warnings and font cache (original_warnings), the kernel's cell file names
    (cell_name), an exception's whole message in numpy 1.24's words (original_error_words), input() refused as the
    kernel had no stdin, and exit()/quit() as a request to shut the kernel down once the cell is over
    (display.exit_asked(), read by Jail.run)."""
    import builtins

    asked = []

    class ExitAutocall:  # IPython's exit and quit: a request to the kernel, not a SystemExit
        def __repr__(self):
            return "<IPython.core.autocall.ZMQExitAutocall object>"

        def __call__(self, *args, **kwargs):
            asked.append(True)

    builtins.exit = builtins.quit = ExitAutocall()

    def no_input(*prompt):  # nbclient's kernel had no stdin: ipykernel refused input() before any prompt
        from IPython.core.error import StdinNotImplementedError

        raise StdinNotImplementedError("raw_input was called, but this frontend does not support input requests.")
    builtins.input = no_input

    def no_display(*objects, **options):  # display_data went to the notebook, never into the original's messages
        return None

    patch_on_import({"pandas": as_in_python310, "IPython.core.display_functions": lambda module: setattr(module, "display", no_display)})
    original_warnings()
    streams = kernel_streams()

    def display(value, code: str) -> None:
        if value is None or code.rstrip().endswith(";"):
            return
        from IPython.lib.pretty import pretty

        sys.stdout.flush()  # the kernel's displayhook sends what the streams hold first, stdout before stderr
        sys.stderr.flush()
        sys.stdout.write(pretty(value, max_width=79, max_seq_length=1000))

    def murmur2(data: bytes, seed: int) -> int:  # MurmurHash2 (Austin Appleby, public domain), 32-bit
        m, h, end = 0x5BD1E995, (seed ^ len(data)) & 0xFFFFFFFF, len(data) & ~3
        for at in range(0, end, 4):
            k = (int.from_bytes(data[at:at + 4], "little") * m) & 0xFFFFFFFF
            h = ((h * m) & 0xFFFFFFFF) ^ ((((k ^ (k >> 24)) * m)) & 0xFFFFFFFF)
        if data[end:]:
            h = ((h ^ int.from_bytes(data[end:], "little")) * m) & 0xFFFFFFFF
        h = ((h ^ (h >> 13)) * m) & 0xFFFFFFFF
        return h ^ (h >> 15)

    def cell_name(code: str) -> str:
        """The file name the kernel compiled a cell under (a SyntaxError names it; a warning shows it and the line):
        a hash of the cell's text, seed 0xC70F6907, in a folder named after the kernel's process. Called as each cell
        starts, it puts the kernel's streams in place (the worker puts its own back after the cell)."""
        sys.stdout, sys.stderr = streams
        name = f"/tmp/ipykernel_{os.getpid()}/{murmur2(code.encode(), 0xC70F6907)}.py"
        source_known(name, code)
        return name

    display.cell_name = cell_name
    display.exit_asked = lambda: bool(asked)
    display.error_words = original_error_words  # whole: failure_report cuts a message at 1 MiB only (a frame holds 16 MiB)
    return display


NUMPY124_WORDING = {"only length-1 arrays can be converted to Python scalars":  # numpy 1.25 reworded it (1.24's below)
                    "only size-1 arrays can be converted to Python scalars"}


def original_error_words(error: BaseException) -> tuple[str, str]:
    """An exception's name and whole message as the original's kernel showed them: with its installation's paths
    (original_paths), and as its numpy 1.24.3 worded them (its saved `pip` output names that version; 1.24 has no
    Python 3.12 build, so the jail has 1.26.4): NUMPY124_WORDING's messages, DTypePromotionError (1.25) still a
    TypeError, and a DType class still named numpy.dtype[<its scalar type>], not numpy.dtypes.<Name>DType (1.25)."""
    import re

    name, message = type(error).__name__, original_paths(str(error))
    if isinstance(error, TypeError):
        message = NUMPY124_WORDING.get(message, message)
        name = "TypeError" if name == "DTypePromotionError" else name
    if "numpy.dtypes." in message and "numpy" in sys.modules:
        dtypes = sys.modules["numpy"].dtypes
        message = re.sub(r"numpy\.dtypes\.(\w+DType)\b", lambda found: f"numpy.dtype[{getattr(dtypes, found[1]).type.__name__}]"
                         if hasattr(getattr(dtypes, found[1], None), "type") else found[0], message)
    return name, message


def kernel_streams() -> tuple:
    """sys.stdout and sys.stderr as the original's kernel had them (ipykernel 6.29's OutStream): each holds what a cell
    writes and sends it 0.2 s after its first unsent write (one I/O thread sends both, in the order they became due),
    or when flushed; at the cell's end stdout is flushed before stderr (restore_output, as the kernel flushes before
    its value, its error and its reply). So a quick cell shows its prints before its warnings, whatever their order in
    the code. Text written to the file descriptors themselves (a program the cell runs, a C library) is not held."""
    import threading
    import time

    lock, timer, worker = threading.RLock(), [], os.getpid()

    class OutStream:
        def __init__(self, name: str):
            self.name, self.held, self.since = name, [], None

        @property
        def real(self):  # the worker's own stream, which it may have reopened (restore_output)
            return getattr(sys, self.name)

        def write(self, text: str) -> int:
            if not isinstance(text, str):
                raise TypeError(f"write() argument must be str, not {type(text).__name__}")
            if os.getpid() != worker:  # a process the cell forked writes at once: it may be ended before a timer
                return self.real.write(text)
            with lock:
                self.held.append(text)
                self.since = time.monotonic() if self.since is None else self.since
                if not timer:
                    send_in(0.2)
            return len(text)

        def writelines(self, lines) -> None:
            for line in lines:
                self.write(line)

        def flush(self) -> None:
            with lock:
                text, self.held, self.since = "".join(self.held), [], None
                if text:
                    self.real.write(text)
                    self.real.flush()

        def __getattr__(self, name):  # fileno, encoding, isatty, buffer: the real stream's
            return getattr(self.real, name)
    streams = OutStream("__stdout__"), OutStream("__stderr__")

    def send_in(seconds: float) -> None:  # the one timer: the kernel's I/O thread
        timer.append(threading.Timer(seconds, send_due))
        timer[0].daemon = True
        timer[0].start()

    def send_due() -> None:
        with lock:
            timer.clear()
            for stream in sorted((stream for stream in streams if stream.since is not None), key=lambda stream: stream.since):
                if stream.since + 0.2 <= time.monotonic() + 0.01:
                    stream.flush()
            waiting = [stream.since for stream in streams if stream.since is not None]
            if waiting:
                send_in(max(0.0, min(waiting) + 0.2 - time.monotonic()))

    def in_a_child() -> None:  # a process the cell forks holds nothing: what its parent held is the parent's to send
        nonlocal lock
        lock = threading.RLock()
        for stream in streams:
            stream.held, stream.since = [], None
    os.register_at_fork(after_in_child=in_a_child)
    return streams


ORIGINAL_LIBRARY = "/home/jeeves/anaconda3/envs/codeinterpreter/lib/python3.10/"  # where the original's Python was installed


def original_paths(text: str) -> str:
    """text with our site-packages and standard library named where the original's environment had them
    (ORIGINAL_LIBRARY, as its saved warnings and error messages name them)."""
    for folder in sys.path:
        if folder.endswith("site-packages"):
            text = text.replace(folder + "/", ORIGINAL_LIBRARY + "site-packages/")
    return text.replace(os.path.dirname(os.__file__) + "/", ORIGINAL_LIBRARY)


def original_warnings() -> None:
    """Warnings as the original's kernel printed them: 3.10's silence on invalid escapes, numpy 1.24's on a scalar taken
    from an array of one element (see original_error_words), and a library's file named where the original's
    environment had it (original_paths). The line shown is read from our file. The original's matplotlib found its
    font cache (built once on its machine), so it never said it was building one; a jail builds it in its own /tmp,
    and matplotlib says so when that takes over 5 s (a loaded machine): not shown."""
    import logging

    logging.getLogger("matplotlib.font_manager").addFilter(
        lambda record: record.getMessage() != "Matplotlib is building the font cache; this may take a moment.")
    warnings.filterwarnings("ignore", "invalid escape sequence", SyntaxWarning)
    warnings.filterwarnings("ignore", "Conversion of an array with ndim > 0 to a scalar", DeprecationWarning)  # new in numpy 1.25
    plain = warnings.formatwarning

    def formatwarning(message, category, filename, lineno, line=None):
        import linecache

        line = linecache.getline(filename, lineno) if line is None else line
        return plain(message, category, original_paths(filename), lineno, line)
    warnings.formatwarning = formatwarning


def python310_size_change(value) -> int:
    """What Python 3.10 added to value.__sizeof__(): a str was 8 bytes larger, 16 if not ASCII (3.12 dropped its wstr
    fields, PEP 623), and the int 0 (and False) 4 bytes smaller (3.12 gives every int a digit)."""
    if isinstance(value, str):
        return 8 if value.isascii() else 16
    return -4 if isinstance(value, int) and value == 0 else 0


def as_in_python310(pandas) -> None:
    """pandas as the original's kernel had it: display.max_columns 20 (a kernel's default), and the memory sizes that
    DataFrame.info() and memory_usage() show as Python 3.10's objects had them (a RangeIndex starting at 0, the
    strings of an object column with deep=True)."""
    from pandas._libs import lib
    from pandas.core.indexes import range as range_index

    pandas.set_option("display.max_columns", 20)
    range_index.getsizeof = lambda value, *default: sys.getsizeof(value, *default) + python310_size_change(value)
    lib.memory_usage_of_objects = lambda values: sum(value.__sizeof__() + python310_size_change(value) for value in values)


SHOWN_FIGURES = 24         # figures a notebook's cells display that come back as pictures (the rest are counted)
SHOWN_PNG_BYTES = 1 << 20  # a larger picture of a shown figure is left out (counted)
SHOWN_PIXELS = 16_000_000  # nor is a figure of more pixels drawn
SHOWN_CELL_TEXT = 10 << 20 # a cell's pictures in base64 at most (a field of the worker's frame is at most 16 MiB)


def as_in_a_notebook(max_shown: int = SHOWN_FIGURES, max_png: int = SHOWN_PNG_BYTES):
    """Runs inside a student's notebook's jail (the classroom), before the worker: what a Jupyter kernel gives
    (docs/teachers.md): IPython.display's display, Markdown, HTML and Image (as text, where the jail has no IPython),
    display() as a builtin (notebook_display), and figures ended as the inline backend ends them. The returned hook, run at each cell's
    end, shows and closes the figures still open and returns the cell's shown figures as JSON text {"png": [base64,
    ...], "left_out": n} ("" when none): at most max_shown in the notebook, each at most max_png bytes."""
    pictures, left_out, kept = [], [0], [0]  # this cell's PNGs (base64), this cell's figures left out, PNGs in the notebook

    def picture_of(figure) -> None:
        """A shown figure as matplotlib-inline displays it (IPython's print_figure): its tight box at its own dpi and
        colours; a figure without axes or lines has no picture, so Jupyter shows its text (<Figure size 640x480 with 0 Axes>)."""
        if not figure.axes and not figure.lines:
            print(repr(figure))
            return
        width, height = figure.get_size_inches() * figure.dpi
        if kept[0] >= max_shown or width * height > SHOWN_PIXELS:
            left_out[0] += 1
            return
        import base64
        import io

        buffer = io.BytesIO()
        try:
            figure.canvas.print_figure(buffer, format="png", dpi=figure.dpi, bbox_inches="tight",
                                       facecolor=figure.get_facecolor(), edgecolor=figure.get_edgecolor())
        except Exception:  # a figure that cannot be drawn: the kernel prints the error; here it is left out
            left_out[0] += 1
            return
        encoded = base64.b64encode(buffer.getvalue()).decode("ascii")
        if buffer.tell() > max_png or sum(map(len, pictures)) + len(encoded) > SHOWN_CELL_TEXT:
            left_out[0] += 1
            return
        kept[0] += 1
        pictures.append(encoded)

    def show_closes(module) -> None:  # pyplot.show() closes every figure once shown, as the inline backend's show does
        show = module.show

        def show_inline(*args, **kwargs):
            for number in module.get_fignums():
                picture_of(module.figure(number))
            try:
                return show(*args, **kwargs)
            finally:
                module.close("all")
        module.show = show_inline

    patch_on_import({"matplotlib.pyplot": show_closes})  # figure_hook's recorder, inserted before it, wraps this show
    notebook_display(picture_of)

    def end_of_cell() -> str:
        pyplot = sys.modules.get("matplotlib.pyplot")
        if pyplot is not None and pyplot.get_fignums():
            try:
                pyplot.show()
            finally:
                pyplot.close("all")
        cell = json.dumps({"png": pictures, "left_out": left_out[0]}) if pictures or left_out[0] else ""
        pictures.clear()
        left_out[0] = 0
        return cell

    return end_of_cell


def notebook_display(picture_of) -> None:
    """What a Jupyter kernel gives a notebook's cells to display with: display() as a builtin, and IPython and
    IPython.display (made when a cell imports them, where the jail has no IPython) with display, Markdown, HTML and
    Image, shown as text; a matplotlib figure displayed goes to picture_of."""
    import builtins

    class Shown:
        def __init__(self, data=None, url=None, filename=None, **options):
            self.text = data if isinstance(data, str) else url or filename or ""

        def __repr__(self):
            return f"<IPython.core.display.{type(self).__name__} object>"

    shown = {name: type(name, (Shown,), {}) for name in ("Markdown", "HTML", "Image")}

    def display(*objects, **options):
        figure = getattr(sys.modules.get("matplotlib.figure"), "Figure", ())
        for value in objects:
            if isinstance(value, figure):
                picture_of(value)
            else:
                print(value.text if type(value) in (shown["Markdown"], shown["HTML"]) else repr(value))

    class IPythonDisplay:  # IPython and IPython.display, made when a cell imports them
        def find_spec(self, name, path=None, target=None):
            if name in ("IPython", "IPython.display"):
                from importlib.machinery import ModuleSpec

                return ModuleSpec(name, self, is_package=name == "IPython")
            return None

        def create_module(self, spec):
            return None

        def exec_module(self, module):
            module.__dict__.update(shown, display=display, get_ipython=lambda: None, version_info=(8, 24))  # no shell: as matplotlib reads it

    sys.meta_path.append(IPythonDisplay())
    builtins.display = display


def jail_worker(command_fd: int, result_fd: int, display=None, end_of_cell=None) -> None:
    """Executes cells in one namespace until its command pipe closes. Commands arrive on command_fd and results leave
    on result_fd, as frames, apart from stdout and stderr (one stream), so nothing a cell prints can pass for a result.
    A command is (token, code, end-of-output marker, CPU seconds, call): call is "" for a cell, else JSON {"function",
    "arguments"} naming one of KIT_CALLS, run in place of code. A result is the cell's token, then name/value pairs
    (status, and for a failed cell type, message, trace): a new field is one more pair here and one .get() in Jail.run.
    Then the worker prints the marker and blocks reading the next command; what Jail.run makes of that (a cell can
    write on result_fd too): docs/jail.md, "The channel".

    The worker imports only C modules at start (_ast and _signal are the C halves of ast and signal; the Python
    halves pull in enum and re, 15 ms of a 25 ms start); traceback and linecache load only when a cell fails."""
    import resource

    receive, send = worker_channel(command_fd, result_fd)
    os.dup2(1, 2)
    sys.stdout.reconfigure(line_buffering=True)
    output_fd = os.dup(1)  # to put fds 1 and 2 back after a cell that closed or redirected them
    _signal.signal(_signal.SIGXCPU, cpu_limit_reached)
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    sources = {}  # every cell's source, for tracebacks through functions defined in earlier cells
    worker_pid = os.getpid()
    take_figures = figure_hook()
    send("ready", status="ready")
    while True:
        token, code, marker, cpu_seconds, call = receive()
        name = display.cell_name(code) if display is not None else f"<cell {len(sources) + 1}>"
        sources[name] = code
        usage = resource.getrusage(resource.RUSAGE_SELF)
        resource.setrlimit(resource.RLIMIT_CPU, (int(usage.ru_utime + usage.ru_stime) + int(cpu_seconds), resource.RLIM_INFINITY))
        error = run_cell(code, name, call, namespace, display, worker_pid)
        shown = ""
        if end_of_cell is not None:  # a notebook's cell ends as Jupyter ends it (as_in_a_notebook): its shown figures
            try:
                shown = end_of_cell()
            except Exception:
                pass
        report = {"status": "ok"} if error is None else failure_report(error, sources, getattr(display, "error_words", None))
        restore_output(output_fd)
        if display is not None and display.exit_asked():
            report["exit_asked"] = "yes"
        send(token, **report, figures=take_figures(), shown=shown)
        os.write(1, marker.encode())  # after the result: the host takes the result once it has seen this


def cpu_limit_reached(signum, frame):
    raise TimeoutError("the cell used up its CPU time")


def worker_channel(command_fd: int, result_fd: int):
    """The worker's ends of its two pipes, as receive() (one command's fields) and send(token, **fields); neither fd
    is inherited by a program a cell runs, and a child the cell forks closes both (once: a grandchild inherits the
    emptied list, so it never closes an fd reused since)."""
    def read_exactly(size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = os.read(command_fd, size - len(data))
            if not chunk:
                os._exit(0)  # the harness has gone: so do we
            data += chunk
        return data

    def receive() -> list[str]:
        count = int.from_bytes(read_exactly(4), "big")
        return [read_exactly(int.from_bytes(read_exactly(4), "big")).decode() for _ in range(count)]

    def send(token: str, **fields: str) -> None:
        payload = frame(token, *[text for pair in fields.items() for text in pair])
        while payload:
            payload = payload[os.write(result_fd, payload):]

    for fd in (command_fd, result_fd):
        os.set_inheritable(fd, False)
    channel = [command_fd, result_fd]

    def close_channel_in_child() -> None:
        while channel:
            os.close(channel.pop())

    os.register_at_fork(after_in_child=close_channel_in_child)
    return receive, send


def run_cell(code: str, name: str, call: str, namespace: dict, display, worker_pid: int) -> BaseException | None:
    """One command in the namespace: a cell (its last expression's value shown, as a notebook shows it) or, when call
    is given, the harness's own function with its arguments as data. What it raised, if anything (SystemExit and
    KeyboardInterrupt too: they end the cell, not the worker)."""
    error = None
    try:
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)
        if call:
            asked = json.loads(call)
            KIT_CALLS[asked["function"]](**asked["arguments"])
        else:
            tree = compile(code, name, "exec", _ast.PyCF_ONLY_AST)
            last = tree.body.pop() if tree.body and isinstance(tree.body[-1], _ast.Expr) else None
            exec(compile(tree, name, "exec"), namespace)
            if last is not None:
                value = eval(compile(_ast.Expression(last.value), name, "eval"), namespace)
                if display is not None:  # an original checkout's original_kernel()
                    display(value, code)
                elif value is not None:
                    print(repr(value))
    except BaseException as caught:
        error = caught
    finally:
        if os.getpid() != worker_pid:
            os._exit(0)  # a process the cell forked must not go on as a second worker
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
    return error


def failure_report(error: BaseException, sources: dict[str, str], error_words=None) -> dict:
    """A failed cell's result fields: status, type, message and trace (through earlier cells' functions, never the
    worker's own frames), each bounded, and "unprintable" where the exception refuses to print. Type and message are
    the exception's name and str() (cut at 2000 characters), or error_words(error)'s (an original checkout's kernel)."""
    import traceback

    for cell_name, cell_code in sources.items():
        source_known(cell_name, cell_code)

    def traced() -> str:
        trace = traceback.TracebackException(type(error), error, error.__traceback__, max_group_width=8, max_group_depth=4)
        trace.stack = traceback.StackSummary.from_list([entry for entry in trace.stack if entry.filename not in ("<string>", __file__)])
        return "".join(trace.format())

    return {"status": "interrupted" if isinstance(error, KeyboardInterrupt) else "error",
            "type": bounded(lambda: error_words(error)[0] if error_words else type(error).__name__, 200),
            "message": bounded(lambda: error_words(error)[1], 1 << 20) if error_words else bounded(lambda: str(error), 2000),
            "trace": bounded(traced, 20000)}


def source_known(filename: str, text: str) -> None:
    """Tracebacks and warnings show text's lines for filename, a file that does not exist (a cell, a check given as text)."""
    import linecache

    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)


def bounded(make, keep: int) -> str:
    """make()'s text, its middle cut beyond keep characters; a cell's exception may be huge, or fail to print at all."""
    try:
        text = make()
    except BaseException as failure:
        return f"<unprintable: {type(failure).__name__}>"
    return middle_cut(text, keep)


def middle_cut(text: str, keep: int, between: str = "\n") -> str:
    """text, or past keep characters its head and tail with the count of what was cut between them."""
    if len(text) <= keep:
        return text
    half = keep // 2
    return f"{text[:half]}{between}[... {len(text) - 2 * half} characters cut ...]{between}{text[-half:]}"


def restore_output(output_fd: int) -> None:
    """After a cell: its buffered output flushed, fds 1 and 2 and sys.stdout/stderr put back, whatever the cell did to them."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    if sys.__stdout__.closed or sys.__stderr__.closed:
        sys.__stdout__ = sys.__stderr__ = open(1, "w", buffering=1, closefd=False)
    sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__


# --- the unpickling guard: what a check's pickle may name, call, make and set -------------------------------------

SAFE_BUILTINS = {"list", "dict", "set", "frozenset", "tuple", "bytearray", "bytes", "complex", "float", "int", "str", "bool", "slice",
                 "range", "object", "NoneType", "Ellipsis", "NotImplemented"}
SAFE_STDLIB = {"collections": {"OrderedDict", "defaultdict", "deque", "Counter"}, "copyreg": {"_reconstructor"},
               "_codecs": {"encode"}, "datetime": {"date", "time", "datetime", "timedelta", "timezone"},
               "decimal": {"Decimal"}, "fractions": {"Fraction"}}
RECONSTRUCTORS = {"numpy._core.multiarray._reconstruct", "numpy.core.multiarray._reconstruct", "numpy._core.multiarray.scalar",
                  "numpy.core.multiarray.scalar", "numpy._core.numeric._frombuffer", "numpy.core.numeric._frombuffer",
                  "numpy.ma.core._mareconstruct", "numpy.random._pickle.__bit_generator_ctor", "numpy.random._pickle.__generator_ctor",
                  "numpy.random._pickle.__randomstate_ctor", "pandas._libs.internals._unpickle_block",
                  "pandas._libs.tslibs.timedeltas._timedelta_unpickle", "pandas._libs.tslibs.timestamps._unpickle_timestamp",
                  "pandas.core.indexes.base._new_Index", "pandas.core.indexes.datetimes._new_DatetimeIndex",
                  "pandas.core.indexes.period._new_PeriodIndex",
                  "pyarrow.lib._restore_array", "pyarrow.lib.py_buffer", "pyarrow.lib.type_for_alias",
                  "sklearn.metrics._dist_metrics.newObj", "sklearn.neighbors._kd_tree.newObj", "sklearn.neighbors._ball_tree.newObj"}
# The class (or the function) each reconstructor is given, by position, and what it must be: a reconstructor calls or
# makes it, so it is bound to the classes it exists to rebuild (a class or a subclass) or to one function. "own" is X or
# a subclass for Cython's __pyx_unpickle_X, a class of its own module for scikit-learn's newObj.
# Any other argument (or value of a dict argument) that is a class or a function is refused.
BOUND_ARGUMENTS = {"_reconstruct": {0: "numpy.ndarray"}, "_mareconstruct": {0: "numpy.ma.MaskedArray", 1: "numpy.ndarray"},
                   "__bit_generator_ctor": {0: "numpy.random.BitGenerator"},
                   "__generator_ctor": {0: "numpy.random.BitGenerator", 1: "numpy.random._pickle.__bit_generator_ctor"},
                   "__randomstate_ctor": {0: "numpy.random.BitGenerator", 1: "numpy.random._pickle.__bit_generator_ctor"},
                   "_new_Index": {0: "pandas.Index"}, "_new_DatetimeIndex": {0: "pandas.DatetimeIndex"},
                   "_new_PeriodIndex": {0: "pandas.PeriodIndex"}, "newObj": {0: "own"}, "__pyx_unpickle_": {0: "own"}}
NEVER_REBUILT = ("numpy.memmap",)  # a subclass of a bound class that opens a file: no reconstructor is given it
PICKLING_PACKAGES = ("numpy", "pandas", "sklearn", "scipy", "pyarrow", "joblib.numpy_pickle")
CLOSED_MODULES = ("pandas.io", "pandas.core.computation", "pandas._config", "pandas.plotting", "pandas.testing", "pandas._testing",
                  "pandas.util", "pandas._libs.parsers", "numpy.f2py", "numpy.testing", "numpy.distutils", "numpy._pytesttester",
                  "numpy.lib._datasource", "scipy._lib", "scipy.io", "sklearn.utils._testing", "sklearn.utils.parallel",
                  "sklearn._config", "sklearn.externals")


class Refused(Exception):
    """What a gate refused, in words; restrict_unpickling raises it as UnpicklingError."""


def under(module: str, roots) -> bool:
    return any(module == root or module.startswith(root + ".") for root in roots)


def named(value) -> str:
    return f"{getattr(value, '__module__', None) or '?'}.{getattr(value, '__qualname__', type(value).__name__)}"


def resolved(dotted: str):
    """A loaded library's attribute by its public dotted name ("pandas.Index"), or None when the library is not loaded."""
    module, _, name = dotted.rpartition(".")
    return getattr(sys.modules.get(module), name, None)


def admit_global(module: str, name: str, resolve) -> tuple[object, str]:
    """The find_class gate: (the global, its kind: "data" a data class, "reconstructor", "value") for what a pickle may
    name; resolve(module, name) is pickle's own lookup. Refused: a module, any other function, a mutable global."""
    if module == "builtins" and name in SAFE_BUILTINS:
        return resolve(module, name), "value"
    if name in SAFE_STDLIB.get(module, ()):
        found = resolve(module, name)
        return found, "data" if isinstance(found, type) else "reconstructor"
    loaded = sys.modules.get(module)  # a Cython module loaded under a name without its package (sklearn 1.5's "_loss")
    module = loaded.__name__ if "." not in module and isinstance(getattr(loaded, "__name__", None), str) else module
    if "." not in name and under(module, PICKLING_PACKAGES) and not under(module, CLOSED_MODULES):
        try:
            found = resolve(module, name)
        except (ImportError, AttributeError):
            found = None
        home = getattr(found, "__module__", None) or module
        home = getattr(sys.modules.get(home), "__name__", home)  # "_loss" is sklearn._loss._loss, as above
        if isinstance(found, type) and under(home, PICKLING_PACKAGES) and not under(home, CLOSED_MODULES):
            return found, "value"
        if f"{module}.{name}" in RECONSTRUCTORS or (name.startswith("__pyx_unpickle_") and callable(found)):
            return found, "reconstructor"
        if isinstance(found, (int, float, complex, str, bytes)) or type(found).__name__ in ("NAType", "NaTType"):
            return found, "value"  # constants and pandas' missing-value singletons, never a mutable global
    raise Refused(f"{module}.{name}")


def rebuilds(function, value, binding: str) -> bool:
    """Whether a class or function given to a reconstructor is one it exists to be given (BOUND_ARGUMENTS's binding)."""
    if not isinstance(value, type):
        return named(value) == binding
    if any(isinstance(never, type) and issubclass(value, never) for never in map(resolved, NEVER_REBUILT)):
        return False
    if binding == "own":  # Cython's __pyx_unpickle_X makes X.__new__(a subclass of X); newObj a class of its module
        rebuilt = getattr(sys.modules.get(function.__module__), function.__name__.removeprefix("__pyx_unpickle_"), None)
        return issubclass(value, rebuilt) if isinstance(rebuilt, type) else value.__module__ == function.__module__
    base = resolved(binding)
    return isinstance(base, type) and issubclass(value, base)


def bound_arguments_refusal(function, arguments: tuple, data_classes=frozenset()) -> str | None:
    """The reconstructor gate: why function may not be given these arguments, or None. A class or function among them
    (or among the values of a dict argument) is refused unless it is one of data_classes (a defaultdict's list), or
    at a position BOUND_ARGUMENTS binds and one of the classes bound there."""
    name = getattr(function, "__name__", "")
    bound = BOUND_ARGUMENTS.get("__pyx_unpickle_" if name.startswith("__pyx_unpickle_") else name, {})
    for position, value in enumerate(arguments):
        if position in bound and callable(value) and not rebuilds(function, value, bound[position]):
            return f"{named(function)} given {named(value)} where it takes only {bound[position]}"
    unbound = [value for position, value in enumerate(arguments) if position not in bound]
    unbound += [value for argument in arguments if isinstance(argument, dict) for value in argument.values()]
    chosen = [value for value in unbound if callable(value) and value not in data_classes]
    return f"{named(function)} given {named(chosen[0])}: a class or function the pickle chose" if chosen else None


def constructs_data(cls: type, data_classes: set) -> bool:
    """Whether a class may be called (REDUCE) or made by __new__ (NEWOBJ) with the pickle's arguments: a builtins or
    standard-library data class, a C or Cython class of the libraries (find_class admitted only theirs: numpy.dtype,
    scikit-learn's Tree), or a pandas dtype or block manager; never a Python class, whose constructor does what it likes
    (numpy's memmap opens a file)."""
    if cls in data_classes or not cls.__flags__ & (1 << 9):  # not a heap type: a C or Cython class
        return True
    pandas = resolved("pandas.core.dtypes.base.ExtensionDtype"), resolved("pandas.core.internals.managers.BaseBlockManager")
    return issubclass(cls, tuple(base for base in pandas if base))


def call_refusal(function, arguments: tuple, data_classes: set, reconstructors: set) -> str | None:
    """The REDUCE gate (and INST/OBJ's): why the pickle may not call function with arguments, or None."""
    import copyreg

    if isinstance(function, type) and constructs_data(function, data_classes):
        return bound_arguments_refusal(function, arguments, data_classes)
    if function is copyreg._reconstructor:
        bases = (object, list, dict, set, frozenset, tuple, bytearray, bytes, int, float, complex, str)
        return None if len(arguments) == 3 and arguments[1] in bases else f"copyreg._reconstructor with base {named(arguments[1:2])}"
    if function in reconstructors:
        return bound_arguments_refusal(function, arguments, data_classes)
    return f"a call of {named(function)}"


def new_refusal(cls, arguments: tuple, keywords: dict, data_classes: set) -> str | None:
    """The NEWOBJ gate: cls.__new__(cls, ...) takes arguments only where REDUCE may call cls; a Python class is made bare,
    as every honest pickle of these libraries makes it."""
    if not isinstance(cls, type):
        return f"{named(cls)}.__new__"
    if (arguments or keywords) and not constructs_data(cls, data_classes):
        return f"{cls.__qualname__}.__new__ with the pickle's arguments"
    return bound_arguments_refusal(cls, (*arguments, keywords), data_classes) if arguments or keywords else None


def build_refusal(target, state) -> str | None:
    """The BUILD gate: state is set on instances only, never on a class, module or function; attribute by attribute only
    where the class keeps the plain object.__setattr__ (pandas' options wrapper sets a global option in its own)."""
    import types

    if isinstance(target, (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        return f"state set on {getattr(target, '__name__', type(target).__name__)}"
    attributes = state[1] if isinstance(state, tuple) and len(state) == 2 and isinstance(state[1], dict) else None
    if attributes and getattr(target, "__setstate__", None) is None and type(target).__setattr__ is not object.__setattr__:
        return f"attributes set through {type(target).__qualname__}.__setattr__"
    return None


def restrict_unpickling() -> None:
    """Runs in the check jail before any check code (see check): every unpickler (pickle.load/loads/Unpickler, the
    Python one, pickle._Unpickler, that joblib.load and pandas use, and the C one, replaced by it) only rebuilds data.
    Each opcode that names, calls, makes or fills an object passes its gate (find_class: admit_global; REDUCE, INST
    and OBJ: call_refusal; NEWOBJ: new_refusal; BUILD: build_refusal; docs/jail.md lists what each admits), which
    refuses with UnpicklingError naming what it refused, failing the check."""
    import _compat_pickle
    import builtins
    import io
    import pickle

    # What find_class admitted so far: the data classes (builtins' from the start) and the reconstructor functions.
    data_classes = {getattr(builtins, name) for name in SAFE_BUILTINS if isinstance(getattr(builtins, name, None), type)}
    reconstructors = set()
    resolve = pickle._Unpickler.find_class

    def refuse(what: str | None) -> None:
        if what:
            raise pickle.UnpicklingError(f"refused to load {what}: a check loads only numpy, pandas, scikit-learn "
                                         "and plain Python data from pickles")

    def find_class(self, module: str, name: str):
        if getattr(self, "proto", 3) < 3 and getattr(self, "fix_imports", True):  # Python 2 names, as pickle maps them
            module, name = _compat_pickle.NAME_MAPPING.get((module, name), (_compat_pickle.IMPORT_MAPPING.get(module, module), name))
        try:
            found, kind = admit_global(module, name, lambda module, name: resolve(self, module, name))
        except Refused as refusal:
            refuse(str(refusal))
        (data_classes if kind == "data" else reconstructors if kind == "reconstructor" else set()).add(found)
        return found

    def call(function, arguments: tuple):
        refuse(call_refusal(function, arguments, data_classes, reconstructors))
        return function(*arguments)

    def load_reduce(self):
        arguments = self.stack.pop()
        self.stack[-1] = call(self.stack[-1], arguments)

    def instantiate(self, klass, arguments):  # INST and OBJ, protocols 0 and 1
        self.append(call(klass, tuple(arguments)) if arguments or not isinstance(klass, type) else klass.__new__(klass))

    def load_newobj(self, with_keywords=False):  # NEWOBJ, and NEWOBJ_EX with its keywords
        keywords = self.stack.pop() if with_keywords else {}
        arguments, cls = self.stack.pop(), self.stack[-1]
        refuse(new_refusal(cls, arguments, keywords, data_classes))
        self.stack[-1] = cls.__new__(cls, *arguments, **keywords)

    build = pickle._Unpickler.load_build

    def load_build(self):
        refuse(build_refusal(self.stack[-2], self.stack[-1]))
        build(self)

    class Unpickler(pickle._Unpickler):
        pass

    pickle._Unpickler.find_class = find_class
    pickle._Unpickler._instantiate = instantiate
    pickle._Unpickler.dispatch[pickle.REDUCE[0]] = load_reduce  # in place: joblib's unpickler copies this table when it loads
    pickle._Unpickler.dispatch[pickle.BUILD[0]] = load_build
    pickle._Unpickler.dispatch[pickle.NEWOBJ[0]] = load_newobj
    pickle._Unpickler.dispatch[pickle.NEWOBJ_EX[0]] = lambda self: load_newobj(self, True)
    pickle.Unpickler = Unpickler
    pickle.load = lambda file, **options: Unpickler(file, **options).load()
    pickle.loads = lambda data, /, **options: Unpickler(io.BytesIO(data), **options).load()
    import _pickle
    _pickle.load, _pickle.loads, _pickle.Unpickler = pickle.load, pickle.loads, Unpickler


# --- what the harness runs in a jail, its arguments passed as data -------------------------------------------------

def check(path: str, module: str, function: str, answer: str | None = None, output: str | None = None, data: str | None = None,
          trajectory: list | None = None, sources: dict[str, str] | None = None) -> None:
    """A task's check, under the unpickling guard: function of the module, called with the final answer and the output
    and data folders (our checks, whose modules come as text in sources), or with the message list (an original
    checkout's test_task_<index>, its module in folder path). It passes by returning; whatever it raises is its verdict."""
    from pathlib import Path

    restrict_unpickling()
    if sources:
        import_from_text(sources)
    else:
        sys.path.insert(0, path)
    checked = getattr(__import__(module), function)
    try:
        checked(*([trajectory] if trajectory is not None else [answer, Path(output), Path(data)]))
    except AssertionError as failed:
        if not hasattr(failed, "parts"):
            raise
        raise PartsAwarded(parts_json(failed.parts)) from None


class PartsAwarded(Exception):
    """A partial-credit check's parts (checks/common.py's Parts) on their way out of the jail: its message is the JSON
    list of [name, earned, possible, why] the check reported; the harness reads the values, never a reason's text."""


PARTS_JSON = 1800  # characters: under failure_report's bound on a message (2000), so that the list arrives whole


def parts_json(parts) -> str:
    """A check's parts as JSON, the whys cut until the whole fits PARTS_JSON; a teacher's part not of that shape raises."""
    rows, keep = [[str(name), earned, possible, str(why)] for name, earned, possible, why in parts], PARTS_JSON
    while True:
        text = json.dumps([row[:3] + [middle_cut(row[3], keep, between=" ")] for row in rows], ensure_ascii=False)
        if len(text) <= PARTS_JSON or keep < 10:
            return text
        keep //= 2


def import_from_text(sources: dict[str, str]) -> None:
    """Make the modules in sources ({name: text}) importable by name, each compiled as /checks/NAME.py (its tracebacks
    show its lines) though no such file exists in the jail."""
    import importlib.util

    class TextFinder:
        @classmethod
        def find_spec(cls, name, path=None, target=None):
            return importlib.util.spec_from_loader(name, cls, origin=f"/checks/{name}.py") if name in sources else None

        @staticmethod
        def create_module(spec):
            return None

        @staticmethod
        def exec_module(module):
            text, filename = sources[module.__name__], f"/checks/{module.__name__}.py"
            source_known(filename, text)
            module.__file__ = filename
            exec(compile(text, filename, "exec"), module.__dict__)

    sys.meta_path.insert(0, TextFinder)


def probe_imports(libraries: list[str], nltk_resources: list[str]) -> None:
    """doctor's probe of a jail environment: a line 'FAILED ...' for each library that does not import and each nltk
    resource nltk does not find."""
    import importlib

    for name in libraries:
        try:
            importlib.import_module(name)
        except Exception as error:
            print("FAILED", name, type(error).__name__, error)
    if nltk_resources:
        import nltk

        for resource in nltk_resources:
            try:
                nltk.data.find(resource)
            except LookupError:
                print("FAILED nltk data", resource)


class Outcome(Exception):
    """How a bash run ended: 'exit N' or 'timeout', raised so that it leaves on the result channel, which the script
    cannot write to."""


# Put first on PATH for the script that run_bash traces: each runs the real interpreter of its name (the next one on
# PATH) and records, in the jail's /tmp, its arguments, folder, exit status and, from inside the interpreter, which
# script it started (a Python through our sitecustomize's audit hook, a bash through BASH_ENV, the system's sh by the
# wrapper itself): docs/mlbench.md, "The two executed columns".
TRACED_INTERPRETERS = ("python", "python3", "bash", "sh")
TRACING_WRAPPER = """#!/bin/bash
name=${0##*/}
real=$(PATH=${PATH//"%(bin)s:"/} type -P "$name")
if [ -z "$real" ] || [ "$real" = "$0" ]; then echo "$name: command not found" >&2; exit 127; fi
record=%(log)s/$$.$RANDOM$RANDOM
printf '%%s\\0' "$name" "$@" > "$record.argv"
pwd -P > "$record.cwd"
case $name in
    python*) PYBENCH_TRACE_RECORD=$record PYBENCH_TRACE_PYTHONPATH=${PYTHONPATH-} PYTHONPATH=%(site)s${PYTHONPATH:+:$PYTHONPATH} "$real" "$@";;
    bash) PYBENCH_TRACE_RECORD=$record PYBENCH_BASH_ENV=${BASH_ENV-} BASH_ENV=%(site)s/bash_env "$real" "$@";;
    *) case $real:${1-} in /bin/sh:[!-]*|/usr/bin/sh:[!-]*) readlink -f -- "$1" > "$record.started";; esac; "$real" "$@";;
esac
status=$?
echo "$status" > "$record.status"
exit "$status"
"""
TRACING_SITECUSTOMIZE = """import os, sys
def _pybench_trace():
    record = os.environ.pop("PYBENCH_TRACE_RECORD", None)
    if record is None:
        return
    path = os.environ.pop("PYBENCH_TRACE_PYTHONPATH", "")
    if path:
        os.environ["PYTHONPATH"] = path
    else:
        os.environ.pop("PYTHONPATH", None)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or ".") != here]
    def started(event, arguments, record=record, realpath=os.path.realpath):
        if event == "cpython.run_file":
            with open(record + ".started", "w") as handle:
                handle.write(realpath(arguments[0]))
    sys.addaudithook(started)
    ours = sys.modules.pop("sitecustomize")
    try:
        import sitecustomize  # the environment's own, if it has one: site's import then ends with it
    except ImportError:
        sys.modules["sitecustomize"] = ours
_pybench_trace()
del _pybench_trace
"""
TRACING_BASH_ENV = """if [ -n "${PYBENCH_TRACE_RECORD-}" ]; then
    __pybench_record=$PYBENCH_TRACE_RECORD
    unset PYBENCH_TRACE_RECORD
    if [ -n "${PYBENCH_BASH_ENV-}" ]; then BASH_ENV=$PYBENCH_BASH_ENV; . "$PYBENCH_BASH_ENV"; else unset BASH_ENV; fi
    unset PYBENCH_BASH_ENV
    [ -z "${BASH_EXECUTION_STRING-}" ] && readlink -f -- "$0" > "$__pybench_record.started"
    unset __pybench_record
fi
"""


def tracing_folder(path_first: str) -> tuple[str, str]:
    """A fresh folder holding the tracing wrappers (bin/, one per TRACED_INTERPRETERS name and per pythonX.Y in
    path_first), what they start inside the interpreters (site/) and their records (log/): (bin, log)."""
    import re
    import tempfile

    top = tempfile.mkdtemp(prefix="pybench-trace-")
    bin_folder, site_folder, log_folder = (os.path.join(top, name) for name in ("bin", "site", "log"))
    for folder in (bin_folder, site_folder, log_folder):
        os.mkdir(folder)
    for name, text in (("sitecustomize.py", TRACING_SITECUSTOMIZE), ("bash_env", TRACING_BASH_ENV)):
        with open(os.path.join(site_folder, name), "w") as handle:
            handle.write(text)
    names = set(TRACED_INTERPRETERS)
    for folder in filter(None, [path_first, "/usr/bin"]):
        names |= {name for name in os.listdir(folder) if re.fullmatch(r"python3\.\d+", name)} if os.path.isdir(folder) else set()
    for name in names:
        path = os.path.join(bin_folder, name)
        with open(path, "w") as handle:
            handle.write(TRACING_WRAPPER % {"bin": bin_folder, "log": log_folder, "site": site_folder})
        os.chmod(path, 0o555)
    return bin_folder, log_folder


def script_argument(argv: list[str]) -> str | None:
    """The script a python or bash command line runs: its first argument that is no option (nor an option's value);
    None when it runs code given otherwise (-c, python's -m, stdin: "-" or no script)."""
    python = argv[0].startswith("python")
    arguments = iter(argv[1:])
    for argument in arguments:
        if argument in ("--", "-"):
            return next(arguments, None) if argument == "--" else None
        if argument.startswith("--"):
            if argument in ("--check-hash-based-pycs", "--rcfile", "--init-file"):
                next(arguments, None)
            continue
        if not argument.startswith("-") and (python or not argument.startswith("+")):
            return argument
        for at, letter in enumerate(argument[1:], 1):  # flags run together: python -uc CODE, bash -eo pipefail
            if letter in ("cm" if python else "c"):
                return None
            if letter in ("WX" if python else "oO"):  # an option with a value, attached or next
                if at == len(argument) - 1:
                    next(arguments, None)
                break
    return None


def task_runs(log_folder: str, values: list[str]) -> dict:
    """What the tracing wrappers recorded of the task's own runs (docs/mlbench.md, "The two executed columns"): those
    whose script_argument ends in .py or .sh, with arguments that, joined by spaces, hold every one of values, ignoring
    case. {"runs": n, "failed": n (never seen starting that very script, exited other than 0, or still running when
    the script ended), "seen": n (all traced runs), "shown": up to 4 of the task's runs}."""
    runs, names = [], sorted(name for name in os.listdir(log_folder) if name.endswith(".argv"))
    for name in names:
        record = os.path.join(log_folder, name[:-5])
        argv = read_record(record + ".argv").split("\0")[:-1]
        script = script_argument(argv) if argv else None
        if not (script and script.endswith((".py", ".sh")) and all(value.lower() in " ".join(argv).lower() for value in values)):
            continue
        try:
            status = int(read_record(record + ".status"))
        except ValueError:
            status = None
        expected = os.path.realpath(os.path.join(read_record(record + ".cwd").strip(), script))
        runs.append({"command": " ".join(argv)[:300], "status": status, "started": read_record(record + ".started").strip() == expected})
    return {"runs": len(runs), "failed": sum(run["status"] != 0 or not run["started"] for run in runs), "seen": len(names),
            "shown": sorted(runs, key=lambda run: run["status"] == 0 and run["started"])[:4]}


def read_record(path: str) -> str:
    """A tracing record's text, "" if it is not there."""
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


def run_bash(script: str, cwd: str | None, seconds: float, path_first: str = "", prefix: str = "",
             trace_values: list[str] | None = None) -> None:
    """ML-Bench's runs: `script` with /bin/bash, its whole process group stopped after `seconds`; ends by raising
    Outcome("exit N") or Outcome("timeout"). The setup lines in `prefix` run first, in a bash of their own with 60 s
    (their failure is printed but does not decide): the variables they export reach the script, which starts in cwd.
    Offline: pip and the Hugging Face libraries are told so. With trace_values, the interpreters the script starts by
    name are traced (tracing_folder) and the Outcome is JSON: {"outcome": "exit N" or "timeout", "task": task_runs()}."""
    import contextlib
    import shlex
    import signal
    import subprocess
    import tempfile

    environment = offline_environment(path_first)
    cwd = cwd or os.getcwd()
    if trace_values is not None:  # put first on PATH after what prefix_code exported, PATH included
        bin_folder, log_folder = tracing_folder(path_first)
        script = f"export PATH={shlex.quote(bin_folder)}:\"$PATH\"\n{script}"
    if prefix.strip():
        exported = tempfile.mkstemp(prefix="prefix-environment-")[1]
        try:
            setup = subprocess.run(["/bin/bash", "-c", f"{prefix}\nexport -p > {shlex.quote(exported)}"], cwd=cwd, env=environment,
                                   timeout=60)
            if setup.returncode:
                print(f"[setup lines (prefix_code) exited {setup.returncode}]", flush=True)
        except subprocess.TimeoutExpired:
            print("[setup lines (prefix_code) ran past 60 s]", flush=True)
        script = f"source {shlex.quote(exported)}; cd {shlex.quote(cwd)}\n{script}"
    process = subprocess.Popen(["/bin/bash", "-c", script], cwd=cwd, env=environment, start_new_session=True)
    try:
        outcome = f"exit {process.wait(timeout=seconds)}"
    except subprocess.TimeoutExpired:
        outcome = "timeout"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # the script past its time, and what it left running
    process.wait()
    if trace_values is not None:
        outcome = json.dumps({"outcome": outcome, "task": task_runs(log_folder, trace_values)})
    raise Outcome(outcome)


def process_children(pid: int) -> list[int]:
    """Every descendant of pid now alive (what psutil's children(recursive=True) gives), read from /proc; orphans are
    re-parented to the pid namespace's init, so the harness reads every jailed process as nsjail's descendants."""
    found, pending = [], [pid]
    while pending:
        parent = pending.pop()
        try:
            for task in os.listdir(f"/proc/{parent}/task"):
                with open(f"/proc/{parent}/task/{task}/children") as handle:
                    children = [int(child) for child in handle.read().split()]
                found += children
                pending += children
        except (OSError, ValueError):
            continue
    return found


def gone(pid: int) -> bool:
    """No such process, or a zombie that nobody reaps (an orphan under the jail's first process)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def terminate_children(pid: int) -> None:
    """ML-Bench's cleanup after a timeout (utils/exec.py, terminate_process_tree): SIGTERM to the descendants of the bash
    it started, not to that bash itself, SIGKILL to those still there after 5 s."""
    import contextlib
    import signal
    import time

    children = process_children(pid)
    for signum, grace in ((signal.SIGTERM, 5), (signal.SIGKILL, 0)):
        for child in children:
            if not gone(child):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, signum)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and not all(map(gone, children)):
            time.sleep(0.05)


def offline_environment(path_first: str) -> dict:
    """The environment of ML-Bench's runs: pip and the Hugging Face libraries told they are offline, path_first (a
    conda environment's bin) put first on PATH."""
    environment = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", HF_HUB_OFFLINE="1",
                       TRANSFORMERS_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    if path_first:
        environment["PATH"] = path_first + ":" + environment["PATH"]
    return environment


def run_as_mlbench(answer: str, cwd: str, path: str, seconds: float, path_first: str = "") -> None:
    """One sample as ML-Bench's utils/exec.py runs it (execute_output; docs/mlbench.md, "The two executed columns"):
    an answer holding '.sh ' or '.py ' is a bash command line, any other is written to temp.py in the task folder and
    run with `python temp.py`; `cd PATH; ...` under `bash -c` from the ML-Bench root (cwd), stdout a pipe never read.
    Past `seconds` only that bash's children are stopped (terminate_children). path_first is the conda environment
    (`source activate ENV`), put first on PATH. Raises Outcome("exit N") or Outcome("timeout")."""
    import subprocess

    environment = offline_environment(path_first)
    if ".sh " in answer or ".py " in answer:
        command = f"cd {path}; {answer}"
    else:
        with open(os.path.join(cwd, path + "/temp.py"), "w", encoding="utf-8") as handle:  # ML-Bench's path is from its root
            handle.write(answer)
        command = f"cd {path}; python temp.py"
    sub = subprocess.Popen(["bash", "-c", command], stdout=subprocess.PIPE, env=environment, cwd=cwd)
    try:
        status = sub.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        terminate_children(sub.pid)
        raise Outcome("timeout") from None
    raise Outcome(f"exit {status}")


KIT_CALLS = {"check": check, "probe_imports": probe_imports, "run_bash": run_bash, "run_as_mlbench": run_as_mlbench}
