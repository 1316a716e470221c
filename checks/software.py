"""Checks of the `software` group (small programs and a web page written to ./output/).

Programs are never imported into the checker: each is copied into a temporary folder and run there
with sys.executable in a subprocess with a timeout, on inputs the query does not show.
Web pages are parsed with html.parser.
"""
import html
import json
import math
import re
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path

from common import numbers_in, output_file

TIMEOUT_S = 10


# ---- running the agent's code --------------------------------------------------------------------

def _run(workdir: Path, args: list[str], what: str) -> subprocess.CompletedProcess:
    """python ARGS in workdir (isolated from PYTHON* variables and user site, UTF-8 mode), with a timeout."""
    try:
        return subprocess.run(
            [sys.executable, "-E", "-s", "-X", "utf8", *args],
            cwd=workdir, capture_output=True, text=True, encoding="utf-8", errors="replace",
            timeout=TIMEOUT_S, env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "MPLBACKEND": "Agg"},
        )
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{what} did not finish within {TIMEOUT_S} s") from None


def _copy_program(output: Path, name: str, workdir: Path) -> None:
    """./output/name copied into workdir (refusing symlinks and empty files)."""
    shutil.copyfile(output_file(output, name, max_bytes=1024 * 1024), workdir / name)


def _run_driver(output: Path, module: str, driver: str, cases) -> list:
    """Imports ./output/<module>.py in a subprocess and runs driver over cases (JSON in, JSON out)."""
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        _copy_program(output, f"{module}.py", workdir)
        (workdir / "cases.json").write_text(json.dumps(cases), encoding="utf-8")
        (workdir / "_driver.py").write_text(driver, encoding="utf-8")
        done = _run(workdir, ["_driver.py"], f"./output/{module}.py")
        result_file = workdir / "results.json"
        if done.returncode != 0 or not result_file.is_file():
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise AssertionError(f"importing ./output/{module}.py failed: {tail[0][:200]}")
        return json.loads(result_file.read_text(encoding="utf-8"))


# ---- software-01: csv -> json CLI ----------------------------------------------------------------

def _typed(value: str):
    value = value.strip()
    if value == "":
        return None
    if re.fullmatch(r"[-+]?\d+", value):
        return int(value)
    if re.fullmatch(r"[-+]?(?:\d+\.\d*|\.\d+)", value):
        return float(value)
    return value


def _csv_to_records(text: str, delimiter: str = ",") -> list[dict]:
    import csv
    import io

    rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))
    header = rows[0]
    return [{key: _typed(value) for key, value in zip(header, row)} for row in rows[1:] if row]


def _same_json(got, want, where: str = "") -> str | None:
    """None when got equals want with the same JSON types (int vs float vs null vs string), else a reason."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return f"{where or 'top level'} should be an object"
        if list(got.keys()) != list(want.keys()):
            return f"{where or 'object'} keys are {list(got.keys())}, expected {list(want.keys())} in that order"
        for key in want:
            reason = _same_json(got[key], want[key], f"{where}[{key!r}]")
            if reason:
                return reason
        return None
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return f"{where or 'top level'} should be an array of {len(want)} items"
        for i, (g, w) in enumerate(zip(got, want)):
            reason = _same_json(g, w, f"{where}[{i}]")
            if reason:
                return reason
        return None
    kinds = {bool: "boolean", int: "integer", float: "float", str: "string", type(None): "null"}
    if type(got) is not type(want):
        return f"{where} is {got!r} ({kinds.get(type(got), type(got).__name__)}), expected {want!r} ({kinds[type(want)]})"
    if isinstance(want, float):
        ok = math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-12)
    else:
        ok = got == want
    return None if ok else f"{where} is {got!r}, expected {want!r}"


_HIDDEN_SEMICOLON = (
    "sku;label;qty;price;discount;note\n"
    "A-01;Widget, large;12;3.50;;\n"
    " B-7 ; Gizmo ; -4 ; 0.25 ;0;  spaced out  \n"
    'C3;"quoted; semi";0;10;;x\n'
    "D4;Zoë 東京;7;-1.5;2.0;true\n"
)
_HIDDEN_COMMA = (
    "city,population,area_km2,mayor\n"
    '"Springfield, IL",114394,158.6,\n'
    "Shelbyville,,42.0,Joe Quimby\n"
    "Ogdenville,-12,0.5,N/A\n"
)


def csv_to_json_cli(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/people.json is ./data/people.csv converted as asked (keys in header order, ints,
    floats, null for empty, strings otherwise, types compared strictly), and ./output/csv2json.py, run in a
    subprocess on two unseen CSV files (one with --delimiter ';', quoted fields, padding, non-ASCII text),
    writes exactly the expected JSON."""
    people = output_file(output, "people.json")
    try:
        got = json.loads(people.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise AssertionError(f"./output/people.json is not valid UTF-8 JSON ({error})") from None
    want = _csv_to_records((data / "people.csv").read_text(encoding="utf-8"))
    reason = _same_json(got, want)
    assert reason is None, f"./output/people.json: {reason}"

    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        _copy_program(output, "csv2json.py", workdir)
        for name, text, extra in (("stock.csv", _HIDDEN_SEMICOLON, ["--delimiter", ";"]),
                                  ("towns.csv", _HIDDEN_COMMA, [])):
            (workdir / name).write_text(text, encoding="utf-8")
            target = name.replace(".csv", ".json")
            done = _run(workdir, ["csv2json.py", name, target, *extra], "csv2json.py")
            assert done.returncode == 0, f"csv2json.py {name} {target} {' '.join(extra)} exited with {done.returncode}"
            assert (workdir / target).is_file(), f"csv2json.py did not write {target}"
            try:
                got = json.loads((workdir / target).read_text(encoding="utf-8"))
            except (ValueError, UnicodeDecodeError) as error:
                raise AssertionError(f"csv2json.py wrote invalid JSON for an unseen file ({error})") from None
            reason = _same_json(got, _csv_to_records(text, extra[1] if extra else ","))
            assert reason is None, f"csv2json.py on an unseen {'semicolon' if extra else 'comma'} file: {reason}"


# ---- software-02: snake game logic ----------------------------------------------------------------

_SNAKE_DRIVER = r'''
import copy, json, traceback
import snake

def plain(value):
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value

results = []
for case in json.load(open("cases.json", encoding="utf-8")):
    try:
        kind = case["kind"]
        if kind == "step":
            body = [tuple(c) for c in case["snake"]]
            before = copy.deepcopy(body)
            out = snake.step(body, case["direction"], tuple(case["food"]), case["width"], case["height"])
            new, ate, alive = out
            results.append({"snake": plain(new), "ate": ate, "alive": alive, "untouched": body == before})
        elif kind == "turn":
            results.append({"value": snake.next_direction(case["current"], case["requested"])})
        elif kind == "food":
            body = [tuple(c) for c in case["snake"]]
            first = snake.spawn_food(body, case["width"], case["height"], case["seed"])
            again = snake.spawn_food(body, case["width"], case["height"], case["seed"])
            results.append({"value": plain(first), "again": plain(again)})
    except Exception as error:
        results.append({"error": f"{type(error).__name__}: {error}"})
json.dump(results, open("results.json", "w", encoding="utf-8"))
'''


def _snake_step(snake, direction, food, width, height):
    dx, dy = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}[direction]
    head = (snake[0][0] + dx, snake[0][1] + dy)
    if not (0 <= head[0] < width and 0 <= head[1] < height):
        return snake, False, False
    ate = head == tuple(food)
    body = snake if ate else snake[:-1]
    if head in body:
        return snake, False, False
    return [head] + body, ate, True


_STEP_CASES = [
    # (snake, direction, food, width, height)
    ([(4, 4), (3, 4), (2, 4)], "right", (0, 0), 10, 8),
    ([(4, 4), (3, 4), (2, 4)], "up", (0, 0), 10, 8),
    ([(4, 4), (3, 4), (2, 4)], "down", (0, 0), 10, 8),
    ([(4, 4), (4, 3), (4, 2)], "left", (9, 9), 10, 8),
    ([(9, 2), (8, 2), (7, 2)], "right", (0, 0), 10, 8),      # right wall
    ([(3, 0), (3, 1), (3, 2)], "up", (0, 0), 10, 8),         # top wall
    ([(0, 5), (1, 5)], "left", (0, 0), 10, 8),               # left wall
    ([(6, 7), (6, 6)], "down", (0, 0), 10, 8),               # bottom wall (height 8)
    ([(5, 5), (4, 5), (3, 5)], "right", (6, 5), 10, 8),      # eats
    ([(2, 2), (2, 3), (3, 3), (3, 2), (3, 1)], "right", (9, 9), 10, 8),  # bites its body
    ([(2, 2), (2, 3), (3, 3), (3, 2)], "right", (9, 9), 10, 8),          # follows its tail: allowed
    ([(4, 4), (3, 4), (2, 4)], "left", (0, 0), 10, 8),                   # reverses into its neck: fatal
    ([(0, 0)], "down", (0, 1), 1, 2),                                    # 1-wide board, eats
]
_TURN_CASES = [("up", "left"), ("up", "down"), ("left", "right"), ("right", "down"), ("down", "up"),
               ("left", "left"), ("down", "north"), ("right", "")]
_FOOD_CASES = [
    ([(0, 0), (1, 0), (2, 0), (2, 1), (1, 1), (0, 1), (0, 2), (1, 2)], 3, 3, 5),  # one free cell: (2, 2)
    ([(0, 0), (1, 0), (1, 1), (0, 1)], 2, 2, 1),                                  # full board: None
    ([(2, 2), (2, 3), (2, 4), (3, 4), (4, 4)], 5, 5, 11),
    ([(2, 2), (2, 3), (2, 4), (3, 4), (4, 4)], 5, 5, 12345),
    ([(0, 0)], 7, 3, 99),
]


def snake_logic(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/snake.py, imported in a subprocess, implements step() (13 unseen moves: directions with
    y growing downwards, all four walls, eating, biting the body, following the tail allowed, tail cell holding
    reversing into the neck fatal; input list unchanged), next_direction() (reversal and unknown names ignored) and spawn_food()
    (a free cell on the board, the same for the same seed, None on a full board)."""
    cases = ([{"kind": "step", "snake": s, "direction": d, "food": f, "width": w, "height": h}
              for s, d, f, w, h in _STEP_CASES]
             + [{"kind": "turn", "current": c, "requested": r} for c, r in _TURN_CASES]
             + [{"kind": "food", "snake": s, "width": w, "height": h, "seed": seed} for s, w, h, seed in _FOOD_CASES])
    results = _run_driver(output, "snake", _SNAKE_DRIVER, cases)
    assert len(results) == len(cases), "the snake test driver did not run every case"
    opposite = {"up": "down", "down": "up", "left": "right", "right": "left"}
    for case, got in zip(cases, results):
        assert "error" not in got, f"{case['kind']}() raised {got.get('error')}"
        if case["kind"] == "step":
            body = [tuple(c) for c in case["snake"]]
            new, ate, alive = _snake_step(body, case["direction"], case["food"], case["width"], case["height"])
            label = f"step({case['snake']}, {case['direction']!r}, food={case['food']}, {case['width']}x{case['height']})"
            assert got["alive"] is alive and got["ate"] is ate, (
                f"{label} returned ate={got['ate']}, alive={got['alive']}; expected ate={ate}, alive={alive}")
            assert [tuple(c) for c in got["snake"]] == new, f"{label} returned snake {got['snake']}, expected {new}"
            assert got["untouched"], f"{label} modified the input list"
        elif case["kind"] == "turn":
            cur, req = case["current"], case["requested"]
            want = cur if req not in opposite or req == opposite[cur] else req
            assert got["value"] == want, f"next_direction({cur!r}, {req!r}) returned {got['value']!r}, expected {want!r}"
        else:
            occupied = {tuple(c) for c in case["snake"]}
            free = {(x, y) for x in range(case["width"]) for y in range(case["height"])} - occupied
            label = f"spawn_food on a {case['width']}x{case['height']} board with {len(occupied)} snake cells"
            if not free:
                assert got["value"] is None, f"{label} (full) returned {got['value']}, expected None"
                continue
            assert isinstance(got["value"], list) and len(got["value"]) == 2, f"{label} returned {got['value']!r}"
            assert tuple(got["value"]) in free, f"{label} returned {got['value']}, not a free cell on the board"
            assert got["again"] == got["value"], f"{label} gave different cells for the same seed"


# ---- HTML parsing ----------------------------------------------------------------------------------

_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _Node:
    def __init__(self, tag: str, attrs: dict, parent=None):
        self.tag, self.attrs, self.parent, self.children = tag, attrs, parent, []

    def iter(self):
        yield self
        for child in self.children:
            if isinstance(child, _Node):
                yield from child.iter()

    def find_all(self, tag: str) -> list:
        return [n for n in self.iter() if n.tag == tag]

    def by_id(self, ident: str):
        return next((n for n in self.iter() if n.attrs.get("id") == ident), None)

    def text(self) -> str:
        parts = []
        for child in self.children:
            parts.append(child.text() if isinstance(child, _Node) else child)
        return " ".join(" ".join(parts).split())


class _TreeBuilder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = _Node("#root", {})
        self.current = self.root

    def handle_starttag(self, tag, attrs):
        node = _Node(tag, {k: (v or "") for k, v in attrs}, self.current)
        self.current.children.append(node)
        if tag not in _VOID:
            self.current = node

    def handle_startendtag(self, tag, attrs):
        self.current.children.append(_Node(tag, {k: (v or "") for k, v in attrs}, self.current))

    def handle_endtag(self, tag):
        node = self.current
        while node is not self.root and node.tag != tag:
            node = node.parent
        if node is not self.root:  # an unmatched end tag is ignored
            self.current = node.parent

    def handle_data(self, data):
        self.current.children.append(data)


def _parse_html(text: str) -> _Node:
    builder = _TreeBuilder()
    builder.feed(text)
    builder.close()
    return builder.root


def _read_html(output: Path, name: str) -> _Node:
    path = output_file(output, name, max_bytes=5 * 1024 * 1024)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise AssertionError(f"./output/{name} is not UTF-8 text") from None
    root = _parse_html(text)
    assert any(n.tag in ("body", "h1", "p", "table", "div") for n in root.iter()), f"./output/{name} holds no HTML elements"
    return root


# ---- software-03: sales dashboard page ------------------------------------------------------------

def _region_totals(data: Path) -> list[tuple[str, int, float]]:
    import csv

    totals: dict[str, list] = {}
    with open(data / "sales_2023.csv", newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            entry = totals.setdefault(row["region"], [0, 0.0])
            entry[0] += int(row["units_sold"])
            entry[1] += float(row["revenue_usd"])
    ranked = sorted(totals.items(), key=lambda item: -item[1][1])
    return [(region, units, round(revenue, 2)) for region, (units, revenue) in ranked]


def sales_dashboard(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/index.html parses and has the title and an <h1> 'Sales Dashboard 2023', a <nav> linking
    to #summary, #regions and #contact (all three ids present), the yearly total revenue in #summary (to 0.01), a
    table#region-table whose header row is Region, Units, Revenue and whose rows are the 6 regions' yearly
    units and revenue (to 0.01) sorted by revenue descending, a mailto:sales@example.com link inside #contact,
    and no external scripts, stylesheets or images."""
    root = _read_html(output, "index.html")
    title = root.find_all("title")
    assert title and title[0].text() == "Sales Dashboard 2023", "the <title> is not 'Sales Dashboard 2023'"
    assert any(h.text() == "Sales Dashboard 2023" for h in root.find_all("h1")), "no <h1> reads 'Sales Dashboard 2023'"

    navs = root.find_all("nav")
    assert navs, "the page has no <nav>"
    hrefs = {a.attrs.get("href", "").strip() for nav in navs for a in nav.find_all("a")}
    for target in ("summary", "regions", "contact"):
        assert f"#{target}" in hrefs, f"the <nav> has no link to #{target}"
        assert root.by_id(target) is not None, f"no element has id '{target}' (the nav link #{target} goes nowhere)"

    expected = _region_totals(data)
    total = round(sum(r for _, _, r in expected), 2)
    summary_numbers = numbers_in(root.by_id("summary").text().replace("$", " "))
    assert any(abs(v - total) <= 0.01 for v in summary_numbers), f"#summary does not state the total revenue {total:,.2f}"

    table = root.by_id("region-table")
    assert table is not None and table.tag == "table", "there is no <table id=\"region-table\">"
    rows = [[cell.text() for cell in tr.iter() if cell.tag in ("td", "th")] for tr in table.find_all("tr")]
    rows = [r for r in rows if r]
    assert rows, "table#region-table has no rows"
    header = [c.strip().lower() for c in rows[0]]
    assert header[:3] == ["region", "units", "revenue"], f"the header row is {rows[0]}, expected Region, Units, Revenue"
    body = [r for r in rows[1:] if r[0].strip().lower() != "total"]
    assert len(body) == len(expected), f"the table has {len(body)} region rows, expected {len(expected)}"
    for got, (region, units, revenue) in zip(body, expected):
        assert len(got) >= 3, f"the row {got} has fewer than 3 cells"
        if got[0].strip() != region:
            order = [r[0] for r in body]
            raise AssertionError(f"the region rows are {order}; expected {[e[0] for e in expected]} (revenue, highest first)")
        unit_values = numbers_in(got[1])
        assert unit_values and unit_values[0] == units, f"{region}: units {got[1]!r}, expected {units}"
        revenue_values = numbers_in(got[2].replace("$", " "))
        assert revenue_values and abs(revenue_values[0] - revenue) <= 0.01, f"{region}: revenue {got[2]!r}, expected {revenue:,.2f}"

    contact = root.by_id("contact")
    mails = [a.attrs.get("href", "").strip().lower() for a in contact.find_all("a")]
    assert "mailto:sales@example.com" in mails, "#contact has no mailto:sales@example.com link"

    for node in root.iter():
        ref = node.attrs.get("src", "") if node.tag in ("script", "img", "iframe") else (
            node.attrs.get("href", "") if node.tag == "link" else "")
        assert not re.match(r"\s*(https?:)?//", ref), f"the page loads an external resource ({ref})"


# ---- software-04: Markdown -> HTML converter -----------------------------------------------------

_BLOCK_TAGS = r"h[1-6]|p|ul|ol|li|div|br|hr"


class _Canonical(HTMLParser):
    """Serialises HTML as tags (only href kept) and escaped text, dropping <html>, <head>, <body> and doctype."""

    SKIP_CONTENT = {"head", "title", "style", "script"}
    # wrappers a page may put around the converted blocks; their content is kept
    DROP_TAG = {"html", "body", "head", "title", "style", "script", "meta", "link", "div", "main", "article",
                "section", "header", "footer"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out, self.skipping = [], 0

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP_CONTENT:
            self.skipping += 1
        if tag in self.DROP_TAG or self.skipping:
            return
        href = dict(attrs).get("href")
        self.out.append(f'<{tag} href="{html.escape(href or "")}">' if tag == "a" else f"<{tag}>")

    def handle_endtag(self, tag):
        if tag in self.SKIP_CONTENT:
            self.skipping = max(0, self.skipping - 1)
            return
        if tag in self.DROP_TAG or self.skipping:
            return
        self.out.append(f"</{tag}>")

    def handle_data(self, data):
        if not self.skipping:
            self.out.append(html.escape(data, quote=False))


class _StartTags(HTMLParser):
    """The names of the start tags of a page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags = set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)


def _canonical(markup: str) -> str:
    parser = _Canonical()
    parser.feed(markup)
    parser.close()
    text = re.sub(r"\s+", " ", "".join(parser.out))
    text = re.sub(rf"\s*(</?(?:{_BLOCK_TAGS})\b[^>]*>)\s*", r"\1", text)
    return text.strip()


def _first_difference(got: str, want: str) -> str:
    i = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
    return f"got ...{got[max(0, i - 40):i + 40]!r}..., expected ...{want[max(0, i - 40):i + 40]!r}..."


def _inline(text: str) -> str:
    codes = []

    def keep(match):
        codes.append(f"<code>{match.group(1)}</code>")
        return f"\x00{len(codes) - 1}\x00"

    text = html.escape(text, quote=False)
    text = re.sub(r"`([^`]+)`", keep, text)
    text = re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", r'<a href="\2">\1</a>', text)
    text = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", text)
    text = re.sub(r"\*(.+?)\*", r"<em>\1</em>", text)
    return re.sub(r"\x00(\d+)\x00", lambda m: codes[int(m.group(1))], text)


def _markdown(md: str) -> str:
    """The expected conversion (same rules as the query)."""
    out, para, items = [], [], []

    def flush():
        if para:
            out.append("<p>" + _inline(" ".join(para)) + "</p>")
            para.clear()
        if items:
            out.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in items) + "</ul>")
            items.clear()

    for raw in md.splitlines():
        line = raw.strip()
        heading = re.match(r"(#{1,3}) (.*)", line)
        if not line:
            flush()
        elif heading:
            flush()
            level = len(heading.group(1))
            out.append(f"<h{level}>{_inline(heading.group(2).strip())}</h{level}>")
        elif line.startswith("- "):
            if para:
                flush()
            items.append(line[2:].strip())
        else:
            if items:
                flush()
            para.append(line)
    flush()
    return "\n".join(out)


_HIDDEN_MARKDOWN = [
    "## Release notes\n\n"
    "Version **2.1** adds *faster* parsing & a new `--fast` flag.\n"
    "It also fixes <div> handling.\n\n"
    "- Bold in lists: **yes**\n"
    "- Links: [docs](https://example.com/docs?v=2)\n"
    "- Code: `x < y and **kwargs`\n\n"
    "### Known issues\n"
    "Escaping of &copy; must stay literal.\n"
    "# Last heading\n",
    "Plain line one\nline two with [a link](http://a.example/x) and *one* more\n- item A\n- item **B**\nafter the list\n",
    "Keep `**raw** <b>tag</b> *x*` as typed, but **this** is bold.\n",  # formatting inside code stays literal
]

_MD_DRIVER = r'''
import json
import md2html
results = []
for text in json.load(open("cases.json", encoding="utf-8")):
    try:
        results.append({"html": str(md2html.convert(text))})
    except Exception as error:
        results.append({"error": f"{type(error).__name__}: {error}"})
json.dump(results, open("results.json", "w", encoding="utf-8"))
'''


def markdown_converter(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/guide.html holds the correct conversion of ./data/guide.md, and md2html.convert() from
    ./output/md2html.py, called in a subprocess on two unseen Markdown texts (raw <div>, & and &copy; to escape,
    ** inside code, headings and lists without blank lines around them), returns HTML equal to the expected
    conversion once both are parsed with html.parser (whitespace between blocks and html/head/body wrappers ignored);
    guide.html is a complete document, as asked: it has <html> and <body>."""
    guide = output_file(output, "guide.html")
    want = _canonical(_markdown((data / "guide.md").read_text(encoding="utf-8")))
    page = guide.read_text(encoding="utf-8", errors="replace")
    tags = _StartTags()
    tags.feed(page)
    tags.close()
    assert {"html", "body"} <= tags.tags, "./output/guide.html is a bare fragment, not a complete HTML document (<html>, <body>)"
    got = _canonical(page)
    assert got == want, f"./output/guide.html differs from the expected conversion: {_first_difference(got, want)}"

    results = _run_driver(output, "md2html", _MD_DRIVER, _HIDDEN_MARKDOWN)
    assert len(results) == len(_HIDDEN_MARKDOWN), "the md2html test driver did not run every case"
    for number, (text, result) in enumerate(zip(_HIDDEN_MARKDOWN, results), 1):
        assert "error" not in result, f"convert() raised {result.get('error')} on unseen input {number}"
        got, want = _canonical(result["html"]), _canonical(_markdown(text))
        assert got == want, f"convert() on unseen input {number}: {_first_difference(got, want)}"
