"""Corrected checks for the original PyBench tasks whose own tests are defective. One function per task index.

Written by us from each task's query (data/meta/task.json of the user's checkout), not from the original's tests:
the corrected figure of an original run replaces the defective test's verdict with this check's. A correction is
used only for a task whose query names the output it reads (pybench.py's ORIGINAL_CORRECTED), so a checkout whose
task of that index asks something else keeps its own test. Every check has the signature
check(answer: str, output: Path, data: Path) -> None and fails by raising AssertionError with a short reason; data
holds the task's inputs under their names in the checkout's data/ folder.
"""
import re
from pathlib import Path

from common import assert_chart, load_image, output_file, read_table


def _input_table(data: Path, name: str):
    import pandas as pd

    path = data / name
    return pd.read_excel(path) if path.suffix.lower() in (".xlsx", ".xls") else pd.read_csv(path)


def _same_columns(table, expected, name: str) -> None:
    missing = [str(column) for column in expected.columns if str(column) not in {str(c) for c in table.columns}]
    assert not missing, f"./output/{name} lacks the input's columns {', '.join(missing[:5])}"


def task_11(answer: str, output: Path, data: Path) -> None:
    """./output/11.xlsx is a real Excel file holding the input table: its rows and all its columns (of some input,
    when there are several)."""
    output_file(output, "11.xlsx")
    table = read_table(output, "11.xlsx")
    inputs = sorted(path for path in data.iterdir() if path.suffix.lower() == ".csv")
    assert inputs, "the task has no csv input"
    problems = []
    for path in inputs:  # the original task has one input; a checkout's variant may join several into the first
        expected = _input_table(data, path.name)
        try:
            assert len(table) == len(expected), f"./output/11.xlsx has {len(table)} rows, {path.name} has {len(expected)}"
            _same_columns(table, expected, "11.xlsx")
            return
        except AssertionError as error:
            problems.append(str(error))
    raise AssertionError("; ".join(problems))


def task_20(answer: str, output: Path, data: Path) -> None:
    """./output/20.png is a chart (a decodable, non-blank image of at least 100x100 pixels with several colours)."""
    assert_chart(output, "20.png", min_colors=4)


def task_59(answer: str, output: Path, data: Path) -> None:
    """A word-cloud image: at ./output/59.txt as the query says, or, since no plotting library writes an image under a
    .txt name, at ./output/59.png; it must decode and carry many colours (words), not be blank."""
    name = "59.txt" if (output / "59.txt").is_file() and _decodes(output / "59.txt") else "59.png"
    assert_chart(output, name, min_colors=6)


def _decodes(path: Path) -> bool:
    from PIL import Image

    try:
        with Image.open(path) as image:
            image.load()
        return True
    except Exception:
        return False


def task_63(answer: str, output: Path, data: Path) -> None:
    """./output/63.png is a chart (decodable, non-blank, several colours)."""
    assert_chart(output, "63.png", min_colors=3)


def task_68(answer: str, output: Path, data: Path) -> None:
    """./output/68.png (this task's own output, not task 67's) is a chart (decodable, non-blank, several colours)."""
    assert_chart(output, "68.png", min_colors=3)


def task_74(answer: str, output: Path, data: Path) -> None:
    """./output/74.xlsx (the query asks for xlsx) holds the two input tables merged: their columns, and as many rows as
    both together (stacked) or as their distinct rows."""
    import pandas as pd

    table = read_table(output, "74.xlsx")
    inputs = sorted(path for path in data.iterdir() if path.suffix.lower() in (".csv", ".xlsx", ".xls"))
    assert len(inputs) >= 2, "the task needs its two input tables"
    tables = [_input_table(data, path.name) for path in inputs[:2]]
    _same_columns(table, tables[0], "74.xlsx")
    stacked = pd.concat(tables, ignore_index=True)
    allowed = {len(stacked), len(stacked.astype(str).drop_duplicates())}
    assert len(table) in allowed, f"./output/74.xlsx has {len(table)} rows; merged, the inputs have {' or '.join(map(str, sorted(allowed)))}"


def task_82(answer: str, output: Path, data: Path) -> None:
    """./output/82.png (this task's own output) is the input image turned upside down: flipped vertically (or rotated
    by 180 degrees), closer to that than to the input itself or to a left-right mirror."""
    import numpy as np
    from PIL import Image

    inputs = sorted(path for path in data.iterdir() if path.suffix.lower() in (".jpg", ".jpeg", ".png"))
    assert inputs, "the task has no input image"
    with Image.open(inputs[0]) as image:
        source = np.asarray(image.convert("RGB")).astype(float)
    result = load_image(output, "82.png")
    assert (result.height, result.width) == source.shape[:2], f"./output/82.png is {result.width}x{result.height}, the input {source.shape[1]}x{source.shape[0]}"
    result = np.asarray(result).astype(float)
    distance = {name: float(np.abs(result - candidate).mean()) for name, candidate in
                (("flipped", source[::-1]), ("rotated", source[::-1, ::-1]), ("unchanged", source), ("mirrored", source[:, ::-1]))}
    best = min(distance, key=distance.get)
    assert best in ("flipped", "rotated") and distance[best] < 12, f"./output/82.png is not the input upside down (closest: {best})"


def task_138(answer: str, output: Path, data: Path) -> None:
    """The answer says that x^3 + 2x^2 + 3x + 4 has no local maximum or minimum (its derivative 3x^2 + 4x + 3 has no
    real root): some sentence names the extrema and denies them, and no sentence gives an extremum a value."""
    extremum = re.compile(r"maxim|minim|extrem|极大|极小|极值")
    negation = re.compile(r"\bno\b|\bnone\b|\bnot\b|n't\b|\bneither\b|没有|不存在|无")
    sentences = [part for part in re.split(r"[。；;\n]|\.(?=\s|$)", answer.lower()) if extremum.search(part)]
    assert any(negation.search(part) for part in sentences), "the answer does not say that there is no local maximum or minimum"
    claimed = [part for part in sentences if not negation.search(part) and re.search(r"\d", part)]
    assert not claimed, f"the answer gives an extremum a value ({claimed[0].strip()[:60]!r})"


def task_139(answer: str, output: Path, data: Path) -> None:
    """Some expression in the answer equals the second derivative of y = 2x + 1 + 1/(x+1), which is 2/(x+1)^3."""
    import sympy

    x = sympy.Symbol("x")
    expected = 2 / (x + 1) ** 3
    transformations = sympy.parsing.sympy_parser.standard_transformations + (
        sympy.parsing.sympy_parser.implicit_multiplication_application, sympy.parsing.sympy_parser.convert_xor)
    text = answer.replace("**", "^").replace("−", "-").replace("\\left", "").replace("\\right", "")
    text = re.sub(r"\\[()\[\]]|\$", " ", text).replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac").replace("\\cdot", "*")
    text = re.sub(r"\^\{([^{}]*)\}", r"^(\1)", text)  # LaTeX: delimiters gone; powers first, then fractions
    text = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", r"(\1)/(\2)", text).replace("{", "(").replace("}", ")")
    for candidate in set(re.findall(r"[0-9x+\-*/^(). ]{5,}", text)):
        candidate = candidate.strip(" .")
        if "x" not in candidate:
            continue
        try:
            value = sympy.parsing.sympy_parser.parse_expr(candidate, local_dict={"x": x}, transformations=transformations)
        except Exception:  # not an expression: prose, an equation's other side
            continue
        if sympy.simplify(value - expected) == 0:
            return
    raise AssertionError("the answer does not give the second derivative 2/(x+1)^3")


def task_146(answer: str, output: Path, data: Path) -> None:
    """./output/146.mp3 decodes, lasts as long as the input, and is about 10% louder (RMS ratio 1.03 to 1.25)."""
    import numpy as np
    import soundfile

    path = output_file(output, "146.mp3")
    inputs = sorted(path for path in data.iterdir() if path.suffix.lower() in (".mp3", ".wav"))
    assert inputs, "the task's input audio is missing"
    try:
        louder, rate = soundfile.read(path, always_2d=True)
    except Exception as error:
        raise AssertionError(f"./output/146.mp3 does not decode ({type(error).__name__})") from None
    source, source_rate = soundfile.read(inputs[0], always_2d=True)
    seconds, expected = len(louder) / rate, len(source) / source_rate
    assert abs(seconds - expected) < 0.5, f"./output/146.mp3 lasts {seconds:.1f} s, the input {expected:.1f} s"
    ratio = float(np.sqrt(np.mean(louder ** 2)) / max(np.sqrt(np.mean(source ** 2)), 1e-9))
    assert 1.03 <= ratio <= 1.25, f"./output/146.mp3 is {ratio:.2f} times as loud as the input, not about 1.1"
