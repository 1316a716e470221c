"""untrusted: the one door through which text the kit does not control reaches a destination.

What an attempt prints and answers, a student's name or notebook, a model's reply, a tasks file's fields, a path the
user typed: each reaches a record, a terminal, a page, a model's prompt, a CSV cell, a command to paste, a batch
script or a file name only through the one function here for that destination, which promises what the destination
needs (tests/test_untrusted.py holds each promise against a hostile corpus):

    for_record(value)      JSON records (results.jsonl, manifests): valid UTF-8, long texts and lists cut and counted
    for_jsonl(record)      one line of a JSONL file: for_record's copy, no line break inside it for any line reader
    for_terminal(text)     one line on a terminal: no control character, escape sequence or bidi control acts
    visible(text)          a notebook's or page's text: controls and bidi controls shown as symbols, lines kept
    for_page(value)        the jinja2 finalize of every page (kit/templates): visible, then escaped once by jinja2
    markdown_html(text)    a student's Markdown as a page's HTML (raw HTML off); MarkdownBudget, a page's bound on it
    data_uri(kind, data)   a picture whole in a page; these three make the only Markup of the kit's pages
    for_prompt(text)       material quoted inside a model's prompt: every line indented, so none can be a heading,
                           a verdict line or a fence of the prompt's own
    for_csv(text)          a spreadsheet cell: a formula's first character (= + - @ tab CR) defused with a quote
    for_shell(text)        a word of a command the user pastes: quoted; refused if it holds a line break or control
    for_batch(text)        a value on an #SBATCH line: refused unless absolute, without whitespace or controls;
                           Slurm's filename patterns (%j, %u, ...) written as %% so none expands
    command(*words)        a command the kit prints for its user to paste, with the interpreter and pybench.py that
                           ran (shown(path): a path in it)
    file_name(text)        a name the kit gives a file: letters, marks, digits and -_. of any script
    name_key(text)         what two names are compared by, so that none differ only by what cannot be seen

Standard library only (setup prints paths before the venv exists); markupsafe and markdown-it are imported where a
page needs them.
"""

import base64
import csv
import hashlib
import json
import os
import re
import shlex
import signal
import sys
import time
import unicodedata
from pathlib import Path

from kit.jailed import middle_cut as cut  # the one text cutter: head and tail, the count of what went between

__all__ = ["Unsafe", "cut", "for_record", "for_jsonl", "for_terminal", "visible", "for_page", "markdown_html",
           "MarkdownBudget", "data_uri", "for_prompt", "for_csv", "write_csv", "for_shell", "for_batch",
           "SCRIPT", "shown", "interpreter", "command", "file_name", "name_key", "TEXT_KEEP",
           "ERROR_KEEP"]


class Unsafe(ValueError):
    """A value no rendering makes safe for its destination (a line break in a path bound for a batch script): the
    command line reports it in one line, exit status 2."""


# --- records: valid UTF-8, bounded ---------------------------------------------------------------------------------

TEXT_KEEP = 100_000      # characters of one string kept in a record (head and tail)
LIST_KEEP = 1_000        # items of one list kept in a record
SURROGATES = re.compile("[\ud800-\udfff]")


def for_record(value, keep: int = TEXT_KEEP):
    """A JSON-ready copy of value: each string valid UTF-8 (a byte that was not UTF-8, U+DC80..U+DCFF, shows as \\xNN,
    any other lone surrogate as \\uXXXX), its middle cut and counted past `keep` characters; each list bounded (a last
    item counts the rest); anything else as it is."""
    if isinstance(value, str):
        return SURROGATES.sub(lambda m: f"\\x{ord(m[0]) - 0xDC00:02x}" if 0xDC80 <= ord(m[0]) <= 0xDCFF else f"\\u{ord(m[0]):04x}",
                              cut(value, keep, between=""))
    if isinstance(value, dict):
        return {for_record(str(key), 1000): for_record(item, keep) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        kept = [for_record(item, keep) for item in value[:LIST_KEEP]]
        return kept + [f"[... {len(value) - LIST_KEEP} more items not kept ...]"] if len(value) > LIST_KEEP else kept
    return value


# JSON leaves these raw in a string, and Python's str.splitlines breaks a line at each: for a reader that uses it, a
# cell that printed one (random bytes do, now and then) would split its attempt's record in two
JSON_RAW_LINE_BREAKS = {0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}


def for_jsonl(record) -> str:
    """One line of a JSONL file (results.jsonl, judge.jsonl): for_record's copy of record as JSON, readable text kept
    as it is, the line breaks JSON leaves raw written as escapes, ended by its one newline."""
    return json.dumps(for_record(record), ensure_ascii=False).translate(JSON_RAW_LINE_BREAKS) + "\n"


# --- what a reader sees: terminals, notebooks, pages ------------------------------------------------------------

ERROR_KEEP = 4000  # characters of an error's one line: what it quotes (a path, sbatch's words) shown, not cut short
CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f]")
BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")  # embeddings, overrides, isolates: they reorder what is read
INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # controls but tab and line feed


def bidi_shown(text: str) -> str:
    return BIDI.sub(lambda m: f"<U+{ord(m[0]):04X}>", text)


def for_terminal(text, keep: int = 200) -> str:
    """One line on a terminal: every control character (ESC, CR, BEL, NUL, a line break, C1) as \\xNN, every bidi
    control as <U+202E>; at most `keep` characters, the middle cut."""
    return bidi_shown(CONTROLS.sub(lambda m: f"\\x{ord(m[0]):02x}", for_record(str(text), keep)))


def symbol(code: int) -> str:
    if code < 0x20:
        return chr(0x2400 + code)        # ␀ ␁ … ␛ …
    return "\u2421" if code == 0x7F else f"\\x{code:02x}"  # ␡, or a C1 code


def visible(text: str, keep: int = TEXT_KEEP) -> str:
    """Text for a notebook or a page, lines and tabs kept: control characters (NUL, ESC, DEL, C1) shown as symbols or
    escapes, bidi controls as <U+202E>, lone surrogates as escapes; nothing raw reaches a reader."""
    return bidi_shown(INVISIBLE.sub(lambda m: symbol(ord(m[0])), for_record(text, keep)))


def for_page(value):
    """The finalize of every page's jinja2 environment: a text made visible (jinja2 then escapes it once); Markup (a
    macro's output, a data: URI made here) and numbers as they are."""
    return visible(value) if isinstance(value, str) and not hasattr(value, "__html__") else value


# --- the pages' Markup: a student's Markdown rendered, a picture in the page; nowhere else does the kit make Markup ---

MARKDOWN_CHARS = 10_000   # a Markdown cell rendered up to this many characters, the rest shown as text
MARKDOWN_SECONDS = 2.0    # a page's Markdown rendered for at most this long, the rest shown as text


def markdown_html(text: str, seconds: float = MARKDOWN_SECONDS):
    """A student's Markdown, made visible, as HTML (CommonMark, raw HTML off: any tag shown as text; no javascript:,
    vbscript:, file: or data: link but images), or None when rendering takes longer than `seconds` (Markdown nested
    to make it crawl)."""
    import markupsafe
    from markdown_it import MarkdownIt

    def too_slow(signum, frame):
        raise TimeoutError
    previous = signal.signal(signal.SIGALRM, too_slow)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        return markupsafe.Markup(MarkdownIt("commonmark", {"html": False}).render(visible(text)))
    except TimeoutError:
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class MarkdownBudget:
    """The `markdown` filter of one page: each cell rendered up to MARKDOWN_CHARS, the page for MARKDOWN_SECONDS in
    all; what is past either bound is shown as text, made visible."""

    def __init__(self, seconds: float = MARKDOWN_SECONDS):
        self.left = seconds

    def __call__(self, text: str):
        import markupsafe

        text = visible(text, 10 * MARKDOWN_CHARS)
        began = time.monotonic()
        rendered = markdown_html(text[:MARKDOWN_CHARS], self.left) if self.left > 0 else None
        self.left -= time.monotonic() - began
        rest = text if rendered is None else text[MARKDOWN_CHARS:]
        return (rendered or markupsafe.Markup("")) + (markupsafe.Markup('<pre class="as-text">%s</pre>') % rest if rest else "")


def data_uri(kind: str, data: bytes):
    """A picture (kind: png, jpeg, gif) as a data: URI for a page, whole: markup-safe as it is (base64 has no character
    HTML escapes), so the pages' text bound never cuts it."""
    import markupsafe

    return markupsafe.Markup(f"data:image/{kind};base64,{base64.b64encode(data).decode()}")


# --- a model's prompt ----------------------------------------------------------------------------------------------

def for_prompt(text: str, keep: int) -> str:
    """Material quoted in a prompt: stripped, cut to `keep` characters, made visible, and every line indented by four
    spaces, so that no line of it can start like a line of the prompt's own (a heading, `Verdict:`, a fence)."""
    lines = visible(cut(str(text).strip(), keep)).split("\n")
    return "\n".join(f"    {line}" if line.strip() else "" for line in lines)


# --- spreadsheets --------------------------------------------------------------------------------------------------

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def for_csv(text: str, reveal: bool = True) -> str:
    """A CSV cell a spreadsheet will not run: a leading formula character (= + - @ tab CR) gets a single quote before
    it (OWASP's advice on CSV injection); with reveal, controls and bidi controls shown as in visible(). A name a
    school's import matches on keeps its spelling: reveal=False."""
    text = visible(text) if reveal else str(text)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def write_csv(path, rows, reveal: bool = True) -> None:
    """A CSV file (UTF-8) of rows, every cell through for_csv."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        for row in rows:
            writer.writerow([for_csv(str(cell), reveal) for cell in row])


# --- commands and batch scripts -------------------------------------------------------------------------------------

def for_shell(text: str) -> str:
    """A word of a command the user pastes into a shell, quoted; Unsafe for a control character (a line break would
    run the rest of the word as a command of its own)."""
    if CONTROLS.search(str(text)):
        raise Unsafe(f"{for_terminal(text)} holds a line break or control character: it cannot be given as one word of a command")
    return shlex.quote(str(text))


def for_batch(text: str, what: str, pattern: bool = True) -> str:
    """A path on an #SBATCH line (sbatch splits those lines at whitespace): Unsafe unless absolute, without whitespace,
    quotes or control characters; where Slurm expands %j, %u, ... (pattern: the log files' names), a percent sign
    written as %%. Slurm's --chdir expands nothing (measured, 22.05): pattern=False."""
    text = str(text)
    if not text.startswith("/") or re.search(r"[\s\"'\\]", text) or CONTROLS.search(text) or BIDI.search(text):
        raise Unsafe(f"{what} {for_terminal(text)} cannot go into a Slurm batch script: give an absolute path without "
                     "spaces, quotes or control characters")
    return text.replace("%", "%%") if pattern else text


# --- commands the user pastes: written with the interpreter and the pybench.py that ran --------------------------

SCRIPT = Path(__file__).resolve().parent.parent / "pybench.py"


def shown(path: Path | str) -> str:
    """A path as the user can paste it here (for_shell): relative to the current folder inside it, else absolute."""
    path = Path(os.path.abspath(path))
    return for_shell(str(path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path))


def interpreter(python: Path | str | None = None) -> str:
    """An interpreter (default: the one running now) as the user can type it: its path, never a bare name (under pyenv,
    PATH's `python3.12` is a shim that fails unless a version is selected; inside, PATH leads to the version itself)."""
    text = shown(python or sys.executable)
    return text if "/" in text else f"./{text}"


def command(*words: str, python: Path | str | None = None) -> str:
    """`PYTHON pybench.py WORDS...`, pasteable: python is the interpreter running now unless given (a venv's); each word
    a constant or shown()."""
    return " ".join([interpreter(python), shown(SCRIPT), *words])


# --- file names and names ------------------------------------------------------------------------------------------

WINDOWS_DEVICES = {"con", "prn", "aux", "nul", *(f"{kind}{number}" for kind in ("com", "lpt") for number in range(1, 10))}


def file_name(text: str, taken: set[str] | None = None, ascii_only: bool = False, empty: str = "_", limit: int = 120) -> str:
    """The one rule for the names the kit gives files: text after NFC with its letters, marks and digits (of any
    script, or ASCII's only) and '-', '_', '.' kept and anything else '_', '.', '_' and '-' taken off both ends; never
    empty (`empty`), never a Windows device name; past `limit` UTF-8 bytes, its tail behind a digest of the whole.
    With taken (the names given so far, compared without case): never one of them ('-2', '-3', ... added), and the
    name joins them."""
    text = unicodedata.normalize("NFC", text)
    kept = (lambda char: char.isascii() and char.isalnum()) if ascii_only else (lambda char: unicodedata.category(char)[0] in "LMN")
    name = "".join(char if kept(char) or char in "-_." else "_" for char in text).strip("._-") or empty
    stem, dot, rest = name.partition(".")
    name = f"{stem}_{dot}{rest}" if stem.casefold() in WINDOWS_DEVICES else name
    if len(name.encode()) > limit:  # the tail: the last whole characters that fit in limit - 13 bytes
        tail = name.encode()[13 - limit:].decode(errors="ignore")
        name = f"{hashlib.sha256(text.encode('utf-8', 'surrogateescape')).hexdigest()[:12]}-{tail}"
    if taken is None:
        return name
    unique, number = name, 1
    while unique.casefold() in taken:
        number += 1
        unique = f"{name}-{number}"
    taken.add(unique.casefold())
    return unique


def name_key(text: str) -> str:
    """What two names are told apart by: NFC, without the characters that cannot be seen (format characters such as
    zero-width joiners and bidi controls), case folded. Zero-width joiners belong to many real names (Persian, Indic
    scripts, emoji) and stay in the name itself; two names with one key are one name to a reader."""
    text = unicodedata.normalize("NFC", str(text))
    return "".join(char for char in text if unicodedata.category(char) != "Cf").casefold()
