"""Checks of the `math` group (symbolic and numeric mathematics).

Named maths.py, not math.py, so that it does not shadow the standard library module.
Answers are matched as numbers with tolerance (fractions such as 22/7 count as numbers) or, for
closed forms, as expressions compared with sympy after a conservative parse of the answer text.
"""
import re
from pathlib import Path

from common import assert_labelled, assert_rounded, halfwidth, numbers_in, quantities, read_table

# a value as written in an answer: -3, 3.142857, 22/7
_VALUE = r"[-+]?\d+(?:\.\d+)?(?:\s*/\s*\d+(?:\.\d+)?)?"


def _braced(text: str, start: int) -> tuple[str, int] | None:
    """The content of the {...} group opening at text[start] (nested braces allowed) and the index after it."""
    if start >= len(text) or text[start] != "{":
        return None
    depth = 0
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start + 1:i], i + 1
    return None


def _clean(text: str) -> str:
    """Full-width punctuation and brackets, Unicode minus, LaTeX sizing (\\left( ... \\right)) and fractions (nested
    braces too) as plain ASCII arithmetic."""
    text = halfwidth(text)
    text = re.sub(r"\\(?:left|right|[bB]igg?)\s*\\?([()\[\]|])", r"\1", text).replace("\\,", " ").replace("\\!", "").replace("\\ ", " ")
    for _ in range(20):
        match = re.search(r"\\[dt]?frac\s*(?=\{)", text)
        if not match:
            break
        num = _braced(text, match.end())
        den = _braced(text, num[1]) if num else None
        if not den:
            break
        text = text[:match.start()] + f"({num[0]})/({den[0]})" + text[den[1]:]
    return text


def _to_float(token: str) -> float:
    token = token.replace(" ", "")
    if "/" in token:
        num, den = token.split("/")
        return float(num) / float(den)
    return float(token)


def _values(answer: str) -> list[float]:
    """Every plain number and every fraction a/b in the answer."""
    text = _clean(answer)
    found = numbers_in(text)
    for match in re.finditer(r"(?<![\d.])([-+]?\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)(?![\d.])", text):
        den = float(match.group(2))
        if den:
            found.append(float(match.group(1)) / den)
    return found


def _assert_value(answer: str, expected: float, tol: float, what: str) -> None:
    """Some number or fraction in the answer lies within tol (absolute) of expected."""
    values = _values(answer)
    assert any(abs(v - expected) <= tol for v in values), f"{what} should be {expected:.6g}; not found in the answer"


# ---- expressions ---------------------------------------------------------------------------------

_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
_ALLOWED_NAMES = {"x", "E", "exp", "sin", "cos", "pi", "sqrt"}
# a bracketed note, not maths: brackets holding a Chinese character or a word that is not one of the allowed names
_NOTE = re.compile(r"\((?=[^()]*(?:[\u4e00-\u9fff]|(?<![A-Za-z])(?!(?:x|E|e|exp|sin|cos|pi|sqrt)(?![A-Za-z]))[A-Za-z]{2,}))[^()]*\)")


def _expression_candidates(answer: str) -> list[str]:
    """Pieces of the answer that may be a formula: split on =, ≈, :, ; and $ (full-width ones too), on Chinese text,
    at a comma before a word and at a sentence's end, markdown and bracketed notes in words ('(approx.)', '（约）')
    stripped."""
    pieces = []
    for line in _clean(answer).splitlines():
        line = _NOTE.sub(" ", line.replace("`", " "))
        # a formula also ends at a comma before a word (', about 1.15') and at a sentence's end
        for piece in re.split(r"=|≈|:|;|\$|\\approx|\bis\b|\bequals\b|[，、。\u4e00-\u9fff]+"
                              r"|,(?=\s*[A-Za-z]{2,})|\.(?=\s+[A-Z])", line):
            piece = piece.strip().strip("*").strip().rstrip(".。").strip()
            if piece and len(piece) <= 160:
                pieces.append(piece)
    return pieces


def _normalise(piece: str) -> str | None:
    """The piece as a Python-syntax expression over x, E, exp, sin, cos, pi, sqrt, or None."""
    s = piece
    s = re.sub(r"\+\s*(?:O\s*\([^()]*\)|\\mathcal\{O\}\s*\([^()]*\)|\.\.\.|…|\\cdots|\\ldots)", "", s)
    s = re.sub(r"[+\-]\s*$", "", s)  # '... + ...' lost its dots to the sentence-end strip
    s = re.sub(r"[⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺]+", lambda m: "**(" + m.group().translate(_SUPERSCRIPTS) + ")", s)
    s = s.replace("\\left", "").replace("\\right", "").replace("\\,", " ").replace("\\!", "")
    s = s.replace("\\cdot", "*").replace("\\times", "*").replace("·", "*").replace("×", "*")
    s = s.replace("\\mathrm{e}", "e").replace("\\exp", "exp").replace("\\sin", "sin").replace("\\cos", "cos")
    s = s.replace("\\pi", "pi").replace("π", "pi").replace("\\sqrt", "sqrt")
    s = s.replace("{", "(").replace("}", ")").replace("[", "(").replace("]", ")").replace("^", "**")
    s = re.sub(r"(?<![A-Za-z_])e(?![A-Za-z_])", "E", s)  # Euler's e written alone
    s = re.sub(r"(\d)\s*(?=[A-Za-z(])", r"\1*", s)  # 17e -> 17*E, 2x -> 2*x
    if re.search(r"[^0-9A-Za-z+\-*/(). ]", s):
        return None
    names = set(re.findall(r"[A-Za-z_]+", s))
    if not names <= _ALLOWED_NAMES or not re.search(r"\d|x|E|pi", s):
        return None
    if re.search(r"\*\*\s*\(?\s*[-+]?\d{3,}", s) or re.search(r"\*\*\s*\(?[\d.\s]*\)?\s*\*\*", s):
        return None  # huge exponents or power towers: not an answer, and slow to evaluate
    return s


def _parse(s: str):
    """The normalised string parsed by sympy (only whitelisted names can reach it), or None."""
    import sympy
    from sympy.parsing.sympy_parser import (
        convert_xor,
        implicit_multiplication_application,
        parse_expr,
        standard_transformations,
    )

    x = sympy.Symbol("x")
    names = {"x": x, "E": sympy.E, "exp": sympy.exp, "sin": sympy.sin, "cos": sympy.cos, "pi": sympy.pi,
             "sqrt": sympy.sqrt}
    try:
        return parse_expr(s, local_dict=names,
                          transformations=standard_transformations + (implicit_multiplication_application, convert_xor))
    except Exception:
        return None


def _has_expression(answer: str, test) -> bool:
    """Some formula piece of the answer parses and satisfies test(expr)."""
    for piece in _expression_candidates(answer):
        s = _normalise(piece)
        if s is None:
            continue
        expr = _parse(s)
        if expr is None:
            continue
        try:
            if test(expr):
                return True
        except Exception:
            continue
    return False


# ---- math-01 -------------------------------------------------------------------------------------

def _triples(answer: str) -> list[tuple[float, float, float]]:
    """(x, y, z) triples written as tuples/lists or as x = .., y = .., z = .. ."""
    text = _clean(answer)
    text = re.sub(r"\((\s*[-+]?\d+(?:\.\d+)?\s*)\)\s*/\s*\((\s*\d+(?:\.\d+)?\s*)\)", r"\1/\2", text)  # (22)/(7)
    found = []
    tuple_re = rf"[(\[]\s*({_VALUE})\s*,\s*({_VALUE})\s*,\s*({_VALUE})\s*[)\]]"
    named_re = rf"x\s*[=:]\s*({_VALUE})[^xyz\n]{{0,40}}?y\s*[=:]\s*({_VALUE})[^xyz\n]{{0,40}}?z\s*[=:]\s*({_VALUE})"
    for pattern in (tuple_re, named_re):
        for match in re.finditer(pattern, text):
            try:
                found.append(tuple(_to_float(g) for g in match.groups()))
            except (ValueError, ZeroDivisionError):
                continue
    return found + _table_triples(text)


def _table_triples(text: str) -> list[tuple[float, float, float]]:
    """(x, y, z) rows of a Markdown table whose header names the columns x, y and z ('| x | y | z |')."""
    found, columns = [], None
    for line in text.splitlines():
        cells = [c.strip().strip("*`$ ").strip() for c in line.strip().strip("|").split("|")] if line.strip().startswith("|") else None
        if cells is None:
            columns = None
        elif columns is None:
            columns = [cells.index(v) for v in "xyz"] if {"x", "y", "z"} <= set(cells) else None
        elif not all(re.fullmatch(r"[-:\s]+", c) for c in cells):
            try:
                found.append(tuple(_to_float(cells[i]) for i in columns))
            except (ValueError, ZeroDivisionError, IndexError):
                continue
    return found


def system_solutions(answer: str, output: Path, data: Path) -> None:
    """Verifies: the answer lists both real solutions (x, y, z) = (1, 2, 3) and (22/7, 9/7, 11/7) of the
    system (as tuples, x=.., y=.., z=.. or rows of an x | y | z table) with the exact values asked (integers or
    fractions; decimals beside them within 1e-4 allowed, 3.1429 alone is not exact) and no other triple."""
    expected = [(1.0, 2.0, 3.0), (22 / 7, 9 / 7, 11 / 7)]
    found = _triples(answer)
    assert found, "the answer gives no (x, y, z) solution"

    def close(a, b, tol=1e-4):
        return all(abs(p - q) <= tol for p, q in zip(a, b))

    for want in expected:
        assert any(close(want, got) for got in found), f"the solution ({want[0]:.6g}, {want[1]:.6g}, {want[2]:.6g}) is missing"
        assert any(close(want, got, 1e-12) for got in found), \
            f"the solution ({want[0]:.6g}, {want[1]:.6g}, {want[2]:.6g}) is given in decimals only, not with exact values"
    extra = [got for got in found if not any(close(want, got) for want in expected)]
    assert not extra, f"the answer also lists ({extra[0][0]:g}, {extra[0][1]:g}, {extra[0][2]:g}), which is not a solution"


# ---- math-02 -------------------------------------------------------------------------------------

def integral_and_bound(answer: str, output: Path, data: Path) -> None:
    """Verifies: the answer gives the exact value 2 - 17*e^(-3) of the integral of x^2 e^(-x) over [0, 3]
    (a closed form equal to it under sympy), its decimal 1.153620 and the upper limit b = 2.674060 at which the
    integral from 0 to b equals 1, both to the 6 decimal places asked."""
    import sympy

    exact = 2 - 17 * sympy.exp(-3)
    assert_rounded(answer, 1.1536198377, 6, what="the decimal value of the integral")
    assert_rounded(answer, 2.6740603137, 6, what="the upper limit b")

    def is_exact(expr):
        return (not expr.free_symbols and expr.has(sympy.exp, sympy.E)
                and abs(float(sympy.N(expr - exact, 30))) < 1e-12)

    assert _has_expression(answer, is_exact), "the answer does not give the exact closed form 2 - 17/e^3"


# ---- math-03 -------------------------------------------------------------------------------------

def series_derivative_limit(answer: str, output: Path, data: Path) -> None:
    """Verifies: for f(x) = exp(sin x), the answer gives f'(pi/3) = 1.188721 (the 6 decimals asked), the limit
    (f(x) - e^x)/x^3 -> -1/6 as x -> 0 (to 1e-5), and the Taylor polynomial to x^5,
    1 + x + x^2/2 - x^4/8 - x^5/15 (a formula equal to it under sympy; '+ O(x^6)' allowed)."""
    import sympy

    x = sympy.Symbol("x")
    poly = 1 + x + x**2 / 2 - x**4 / 8 - x**5 / 15
    assert_rounded(answer, 1.1887213376, 6, "f'(pi/3)")
    _assert_value(answer, -1 / 6, 1e-5, "the limit")

    def is_poly(expr):
        return expr.free_symbols == {x} and sympy.expand(expr - poly) == 0

    assert _has_expression(answer, is_poly), "the answer does not give the Taylor polynomial 1 + x + x^2/2 - x^4/8 - x^5/15"


# ---- math-04 -------------------------------------------------------------------------------------

def ode_oscillator(answer: str, output: Path, data: Path) -> None:
    """Verifies: for x'' + 0.4 x' + 4 x = 1.5 cos(1.2 t), x(0)=1, x'(0)=-0.5 (from ./data/ode.json) the
    answer gives x(10) = 0.41803 and the first zero t = 0.95656, each next to its label and to the 4 decimal places asked, and
    from the figure record ./output/ode_solution.png plots x(t) over 0 <= t <= 20: a line that spans it and lies within
    0.02 of the solution."""
    at_ten, zero = ["x(10)", "x(t=10)", "t = 10", "t=10"], ["zero", "crossing", "crosses", "x(t) = 0", "x(t)=0", "零点"]
    assert_labelled(answer, at_ten, 0.4180256140, rel=0, abs_tol=3e-4, what="x(10)")
    assert_labelled(answer, zero, 0.9565564, rel=0, abs_tol=3e-4, what="the first zero crossing time", unit="s")  # a time
    assert_rounded(answer, 0.4180256140, 4, "x(10)", at_ten)
    assert_rounded(answer, 0.9565564, 4, "the first zero crossing time", zero, unit="s")
    _assert_plots_solution(output, data)


def _assert_plots_solution(output: Path, data: Path) -> None:
    """ode_solution.png (its figure record, held against the picture) draws x(t) over [0, 20]."""
    import json

    import numpy as np
    from figures import saved_figure
    from scipy.integrate import solve_ivp

    spec = json.loads((data / "ode.json").read_text(encoding="utf-8"))
    p, ic = spec["parameters"], spec["initial_conditions"]
    solution = solve_ivp(lambda t, u: [u[1], p["F0"] * np.cos(p["omega"] * t) - p["c"] * u[1] - p["k"] * u[0]], (0, 20),
                         [ic["x0"], ic["v0"]], rtol=1e-10, atol=1e-12, dense_output=True).sol
    figure = saved_figure(output, "ode_solution.png", every_sample=True)  # its first zero is graded

    def plots_solution(line: dict) -> bool:
        points = np.array([(x, y) for x, y in zip(line["x"], line["y"]) if isinstance(x, (int, float)) and isinstance(y, (int, float))])
        cut = line["n"] > len(line["x"])  # the record keeps a long line's first points only
        if len(points) < 20 or points[:, 0].min() > 0.5 or not cut and points[:, 0].max() < 19.5:
            return False
        inside = (points[:, 0] >= 0) & (points[:, 0] <= 20)
        return float(np.max(np.abs(points[inside, 1] - solution(points[inside, 0])[0]))) <= 0.02

    lines = [line for ax in figure.axes for line in ax.data_lines()]
    assert any(plots_solution(line) for line in lines), "ode_solution.png does not plot x(t) for 0 <= t <= 20"


# ---- math-05 -------------------------------------------------------------------------------------

def global_minimum(answer: str, output: Path, data: Path) -> None:
    """Verifies: the answer gives the global minimum of f(x, y) = x^4 - 3x^2 + x + 2y^2 + xy,
    f = -3.72913 at (x, y) = (-1.32341, 0.33085), each to the 4 decimal places asked, stated before the local minimum -1.23436 at (1.16065, -0.29016) if that is named too."""
    assert_rounded(answer, -3.7291277400, 4, what="the minimum value")
    assert_rounded(answer, -1.3234070979, 4, what="the x of the minimiser")
    assert_rounded(answer, 0.3308517745, 4, what="the y of the minimiser")
    # the minimum the answer states first is its result: the local one named first (then the global) fails
    minima = [v for v in (q.value for q in quantities(answer)) if abs(v + 3.72913) <= 2e-4 or abs(v + 1.23436) <= 2e-4]
    assert abs(minima[0] + 3.72913) <= 2e-4, "the answer states the local minimum -1.23436 before the global one"


# ---- math-06 -------------------------------------------------------------------------------------

def _matrix(data: Path):
    import csv

    import numpy as np

    with open(data / "matrix.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle, delimiter=";"))
    return np.array([[float(v) for v in row[1:]] for row in rows[1:]])


def dominant_eigenvalue(answer: str, output: Path, data: Path) -> None:
    """Verifies: the answer states the dominant (largest |lambda|) eigenvalue of the matrix in ./data/matrix.csv,
    -9.99377 with its sign (to 1e-4), and ./output/eigenvalues.csv has a column 'eigenvalue' holding all
    6 eigenvalues in ascending order (each to 1e-4)."""
    import numpy as np

    expected = np.linalg.eigvalsh(_matrix(data))
    dominant = float(expected[np.argmax(np.abs(expected))])
    assert_labelled(answer, ["dominant", "largest absolute", "largest in absolute", "主特征值", "绝对值最大"], dominant, rel=0,
                    abs_tol=1e-4, what="the dominant eigenvalue")
    table = read_table(output, "eigenvalues.csv")
    columns = {str(c).strip().lower(): c for c in table.columns}
    assert "eigenvalue" in columns, f"eigenvalues.csv has no 'eigenvalue' column (columns: {list(table.columns)})"
    values = table[columns["eigenvalue"]].astype(float).to_numpy()
    assert len(values) == len(expected), f"eigenvalues.csv has {len(values)} rows, expected {len(expected)}"
    assert np.all(np.diff(values) >= 0), "eigenvalues.csv is not in ascending order"
    assert np.allclose(values, expected, atol=1e-4, rtol=0), "eigenvalues.csv values do not match the matrix's eigenvalues"
