"""The answer reader: numbers and claims read out of an agent's final answer as a careful grader reads them.

quantities(text) finds every number a person would see in the text: digits with thousands separators
(1,234 / 1.234,5 / 6 010 600) told apart from lists (9,3 and 1, 2, 3 are two and three numbers), signs
only where they are signs (2023-03-05 is a date, not -3; **−9.99** and $-4$ are negative), full-width digits,
punctuation and brackets read as ASCII (halfwidth), scale words (k, thousand, million, bn, 万, 亿),
units (%, ms, s, min, h, pages and page numbers: "4 pages", "a 4-page PDF", "p. 3", "第3页"), numbers in
words (English "twenty-three", "one hundred and five"; Chinese 二十三, 一百零五) and LaTeX / sympy printing
(\\left( 22/7, \\frac{9}{7} \\right)). Each Quantity keeps the precision it was written with, so "EUR 6.01
million" matches 6,010,600 (the writer rounded) while "6,011,000" does not.

The claim checks hold the answer to what it states, not to what it mentions somewhere:
- stated_item / assert_claim: the item put forward as the result (the first one named in bold, else the
  first one named at all) must be the expected one, and naming most of the candidates is a spray that fails;
- assert_stated: the expected number is in the answer and the answer does not spray many numbers of the
  asked kind (other candidates' values, or many numbers of the same size and unit); a range or a value given
  twice ('about 300 Hz (≈323 Hz)') is one value (stated_values);
- assert_labelled: the number that belongs to a label ("448 words", "sentences: 35", "“茶”字出现了25次"; a number
  belongs to the noun it counts, see labelled_numbers) is the expected one, so "3 words and 9 sentences" fails a
  count of 9 words and 3 sentences, and in "7 of the 24 reviews gave 5 stars" the 5-star count is 7;
- assert_rounded: the rounding the query states ("to 4 decimal places").
"""
import math
import re
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Quantity:
    value: float  # scale applied (6.01 million -> 6010000.0); a percentage keeps its written value (12.5% -> 12.5)
    unit: str  # "", "%", "ms", "s", "min", "h", "pages" (a count of pages), "page" (a page number)
    step: float  # half a unit of the last written digit, scale applied: the rounding the writer claimed
    scaled: bool  # written with a scale word (k, million, 万): then matched to its rounding, not exactly
    scale: float  # the scale word's factor (1 without one): "115.8k" also matches 115.825 given in thousands
    start: int
    end: int


# ---------------------------------------------------------------------------------------------- text clean-up
# full-width digits, punctuation and brackets (Chinese writing) as their ASCII forms, one character for one
_FULLWIDTH = str.maketrans("０１２３４５６７８９．，－＋％；：（）［］｛｝！？＝＜＞／﹣", "0123456789.,-+%;:()[]{}!?=<>/-")
_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")


def _latex_to_plain(text: str) -> str:
    """LaTeX and sympy printing as plain arithmetic: \\left( \\right) dropped, \\frac{a}{b} -> (a)/(b), \\cdot -> *."""
    text = re.sub(r"\\(?:left|right|big{1,2}|Big{1,2})\s*(\\?[()\[\]{}|.])", lambda m: m.group(1).lstrip("\\").replace(".", ""), text)
    text = re.sub(r"\\[,;:! ]|\\quad|\\qquad", " ", text)
    for _ in range(20):
        match = re.search(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}", text)
        if not match:
            break
        text = text[:match.start()] + f"({match.group(1)})/({match.group(2)})" + text[match.end():]
    text = text.replace("\\cdot", "*").replace("\\times", "×").replace("\\approx", "≈").replace("\\%", "%")
    return text


def halfwidth(text: str) -> str:
    """Full-width digits, punctuation and brackets as ASCII, and the Unicode minus and dashes as '-' (same length)."""
    return str(text).translate(_FULLWIDTH).replace("−", "-").replace("–", "-").replace("‒", "-")


# Where a traceback says its cell and line are ('File "<cell 1>", line 1', 'Cell In[3], line 2', '----> 1 x = f()'): the
# place of an error, never a number of the answer.
_TRACEBACK_PLACE = re.compile(r'File "[^"\n]*", line \d+|Cell In ?\[\d+\], line \d+|Input In ?\[\d+\]|<ipython-input-\d+-\w+>'
                              r"|^\s*-*> ?\d+(?= )", re.M)
# A footnote mark after a word ('Total[1]', 'count[^2]', '<sup>1</sup>'): a reference, not a number.
_FOOTNOTE = re.compile(r"(?<=[^\W\d_])\[\^?\d{1,2}\]|\[\^\d+\]|<sup>[^<]{0,8}</sup>", re.I)
_HTML_TAG = re.compile(r"<(/?)(tr|td|th|[a-z][a-z0-9]*)\b[^<>]*>", re.I)


def _blank(match: re.Match) -> str:
    return " " * len(match.group())


def _html_as_markdown(match: re.Match) -> str:
    """An HTML table's row as a Markdown row, its cells as '|' (same length); other tags blanked."""
    closing, name, length = match.group(1), match.group(2).lower(), len(match.group())
    if name == "tr" and not closing:
        return "\n" + " " * (length - 1)
    if name in ("td", "th") and not closing:
        return "|" + " " * (length - 1)
    return " " * length


def _prepare(text: str) -> str:
    """One spelling per symbol, same length as far as possible so spans still point into the answer: HTML tables as
    Markdown's, footnote marks and a traceback's places blanked."""
    text = _latex_to_plain(halfwidth(text))
    text = text.replace("\u00a0", " ").replace("\u2009", " ").replace("\u202f", " ")
    text = _FOOTNOTE.sub(_blank, _TRACEBACK_PLACE.sub(_blank, text))
    return _HTML_TAG.sub(_html_as_markdown, text)


# ---------------------------------------------------------------------------------------------- digits
_GROUPED = r"\d{1,3}(?:,\d{3})+(?![\d])(?:\.\d+)?"  # 1,234,567.89
_EUROPEAN = r"\d{1,3}(?:\.\d{3}){2,}(?:,\d+)?|\d{1,3}(?:\.\d{3})+,\d+"  # 1.234.567 or 1.234,56
_SPACED = r"\d{1,3}(?:[ '’]\d{3})+(?:[.,]\d+)?"  # 6 010 600 / 1'234 (SI and Swiss grouping)
_PLAIN = r"\d+(?:\.\d+)?|\.\d+"
_DOT_GROUPS = r"\d{1,3}(?:\.\d{3})+(?![\d.,])"  # 1.240 where dots group thousands (a German answer)
_DECIMAL_COMMA = r"\d+,\d+"  # 131,1 where the comma is the decimal mark
_EXPONENT = r"(?P<exp>[eE][-+]?\d+|\s*[×x*]\s*10\s*(?:\^|\*\*)\s*\{?\(?[-+]?\d+\)?\}?|\s*×\s*10[⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺]+)?"
_DIGITS = {  # by the answer's way of writing decimals (see decimal_mark): dot, comma, comma with dots grouping
    mark: re.compile(rf"(?<![A-Za-z0-9_.])(?P<num>{forms})" + _EXPONENT)
    for mark, forms in (("dot", f"{_EUROPEAN}|{_GROUPED}|{_SPACED}|{_PLAIN}"),
                        ("comma", f"{_EUROPEAN}|{_SPACED}|{_DECIMAL_COMMA}|{_PLAIN}"),
                        ("comma, dot groups", f"{_EUROPEAN}|{_SPACED}|{_DOT_GROUPS}|{_DECIMAL_COMMA}|{_PLAIN}"))}
# Words of the languages that write a decimal comma (German, French, Spanish, Italian, Dutch) and of English; words
# both use ('in', 'an', 'per') are left out.
_COMMA_LANGUAGE = set("der die das und ist sind mit von im vom zum zur den dem des für wurde wurden beträgt betrug insgesamt "
                      "eine einer einem nicht auf bei etwa rund ungefähr liegt lag hat hatte am meisten höchste stadt "
                      "le la les et est sont avec pour dans du une au aux par sur environ était été plus avec "
                      "el los las es con para del una por fue son más "
                      "il di che è sono gli della "
                      "het een van zijn werd".split())
_ENGLISH = set("the and is are was were of with for to that this which from by on it has have had its most than".split())


def decimal_mark(text: str) -> str:
    """How the answer writes decimals: 'dot' (English, Chinese: 1,234.5), 'comma' (German, French: 131,1 and 1.234,5)
    or 'comma, dot groups' (a comma answer whose dots all group thousands: 1.240 Stück is 1240).

    Decided by the answer alone: a number written the English way only (1,234.5 / 1,234,567) makes it 'dot'; one
    written the continental way only (1.234,5 / 1.234.567 / 1 234,5) makes it 'comma'; else its language, by its words
    (at least 2 of German, French, ... or with their letters, ä ß é ç ñ, and more of them than English words). Not by
    the value a check expects, which would let either reading of an ambiguous 1,234 pass whichever was asked."""
    text = text.replace("'", " ")
    english = re.search(r"\d,\d{3}(?:,\d{3})*\.\d|\d,\d{3},\d{3}", text)
    continental = re.search(r"\d\.\d{3}(?:\.\d{3})*,\d|\d\.\d{3}\.\d{3}|(?<![\d,.])\d{1,3} \d{3},\d", text)
    if english or continental:
        comma = bool(continental) and not english
    else:
        words = re.findall(r"[^\W\d_]+", text.lower())
        theirs = sum(w in _COMMA_LANGUAGE or bool(re.search("[äöüßéèêàçñ]", w)) for w in words)
        ours = sum(w in _ENGLISH for w in words)
        comma = theirs >= 2 and theirs > ours
    if not comma:
        return "dot"
    dot_decimals = re.search(r"\d\.(?:\d{1,2}|\d{4,})(?![\d.])|(?<![\d.])0\.\d", text)
    return "comma" if dot_decimals else "comma, dot groups"
_SCALES = [
    (r"\s?(?:thousand)\b|\s?k(?![a-zA-Z])|\s?K(?![a-zA-Z])|\s?千(?!克|米|瓦)", 1e3),
    (r"\s?(?:million|mn|mio\.?|Mio\.?)\b|\s?M(?![a-zA-Z])|\s?百万", 1e6),
    (r"\s?(?:billion|bn|Bn)\b|\s?十亿", 1e9),  # a bare B is not read: "class 3B"
    (r"\s?万", 1e4),
    (r"\s?亿", 1e8),
]
_UNITS = [
    (r"\s?(?:%|percent\b|per cent\b|个百分点|百分点)", "%"),
    (r"\s?(?:ms\b|msec\b|milliseconds?\b|毫秒)", "ms"),
    (r"\s?(?:s\b|sec\b|secs\b|seconds?\b|Sekunden?\b|secondes?\b|秒)", "s"),
    (r"\s?(?:min\b|mins\b|minutes?\b|Minuten?\b|分钟)", "min"),
    (r"\s?(?:h\b|hrs?\b|hours?\b|Stunden?\b|Std\.|heures?\b|小时)", "h"),
    (r"(?:\s|-)?(?:pages?\b|页|頁)", "pages"),
    (r"\s?(?:kHz\b|khz\b|千赫兹?)", "kHz"),  # read as Hz, times 1000
    (r"\s?(?:Hz\b|hz\b|赫兹?)", "Hz"),
]
# A sign: after a space, a bracket, a relation or punctuation, with Markdown / LaTeX markup opening on either side
# of it (**-3.2**, -**3.2**, `-7`, $-4$, \textbf{-9.99}), never after a digit or a letter.
_MARKUP = r"*_`~"
_SIGN = re.compile(rf"(?:^|[\s(\[{{=:,;≈~<>/|$€£¥])[{_MARKUP}]*(?P<sign>[-+])[{_MARKUP}]*\s*$")
_PAGE_BEFORE = re.compile(r"(?:\bpages?|\bpp?\.|\bpg\.?|第)\s*(?:no\.?\s*|number\s*|#\s*)?$", re.I)
_TIME_SECONDS = {"ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}


def _digits_value(token: str, mark: str = "dot") -> tuple[float, int]:
    """The number a digit token writes, and how many decimals it was written with (mark: see decimal_mark)."""
    token = token.replace("'", "").replace("’", "")
    if mark != "dot" and ("," in token or mark == "comma, dot groups" and re.fullmatch(_DOT_GROUPS, token)):
        token = token.replace(" ", "").replace(".", "").replace(",", ".")
    elif re.fullmatch(_EUROPEAN, token):
        whole, _, frac = token.partition(",")
        token = whole.replace(".", "") + ("." + frac if frac else "")
    elif re.fullmatch(_SPACED, token) and " " in token or re.fullmatch(r"\d{1,3}(?:[ '’]\d{3})+,\d+", token):
        token = token.replace(" ", "").replace(",", ".")
    else:
        token = token.replace(",", "")
    decimals = len(token.partition(".")[2])
    return float(token), decimals


def _exponent(text: str) -> int:
    if not text:
        return 0
    text = text.translate(_SUPERSCRIPT)
    if text[0] in "eE":
        return int(text[1:])
    return int(re.search(r"10\D*?([-+]?\d+)\D*$", text).group(1))


def _digit_quantities(text: str) -> list[Quantity]:
    found = []
    mark = decimal_mark(text)
    for match in _DIGITS[mark].finditer(text):
        start, end = match.start(), match.end()
        if re.match(r"[eE]$", text[start - 1:start]) and re.search(r"\d[eE]$", text[:start]):
            continue
        value, decimals = _digits_value(match.group("num"), mark)
        power = _exponent(match.group("exp") or "")
        value *= 10 ** power
        step = 0.5 * 10 ** (power - decimals)
        before = text[max(0, start - 12):start]
        # a sign only where it is one: not the dash of a date (2023-03-05), a range (3-5) or a subtraction (x-3)
        sign = _SIGN.search(before)
        unit, scale, scaled = "", 1.0, False
        rest = text[end:end + 16]
        for pattern, factor in _SCALES:
            m = re.match(pattern, rest)
            if m:
                scale, scaled, end = factor, True, end + m.end()
                rest = text[end:end + 16]
                break
        for pattern, name in _UNITS:
            m = re.match(pattern, rest)
            if m:
                unit, end = name, end + m.end()
                if name == "kHz":
                    unit, scale = "Hz", scale * 1000
                break
        if sign and unit and re.search(r"\d[^\S\n]*(?:[A-Za-z%]{1,3}[^\S\n]*)?-[^\S\n]+$", before):
            sign = None  # the dash of a range of a unit written with spaces: '300 - 320 Hz', '300 Hz – 320 Hz'
        if sign:
            if sign.group("sign") == "-":
                value = -value
            start -= len(before) - sign.start("sign")
        if _PAGE_BEFORE.search(text[max(0, start - 16):start]):
            unit = "page"
        found.append(Quantity(value * scale, unit, step * scale, scaled, scale, start, end))
    return found


# ---------------------------------------------------------------------------------------------- words
_ONES = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                                     "fourteen fifteen sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * i for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)}
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
             "ninth": 9, "tenth": 10}
_BIG = {"hundred": 100, "thousand": 1000, "million": 10 ** 6, "billion": 10 ** 9}
_WORD = "|".join(sorted(list(_ONES) + list(_TENS) + list(_BIG) + list(_ORDINALS), key=len, reverse=True))
_WORD_RUN = re.compile(rf"\b(?:{_WORD})(?:(?:\s+and\s+|[\s-]+)(?:{_WORD}))*\b", re.I)


def _english_value(words: list[str]) -> int | None:
    total, current = 0, 0
    for word in words:
        if word in _ONES or word in _TENS or word in _ORDINALS:
            current += _ONES.get(word, 0) + _TENS.get(word, 0) + _ORDINALS.get(word, 0)
        elif word == "hundred":
            current = max(current, 1) * 100
        else:
            total += max(current, 1) * _BIG[word]
            current = 0
    return total + current


def _english_quantities(text: str) -> list[Quantity]:
    found = []
    for match in _WORD_RUN.finditer(text):
        words = [w for w in re.split(r"[\s-]+", match.group().lower()) if w != "and"]
        if words == ["second"] and re.match(r"s?\b", text[match.end():]) and re.search(r"\d\s*$", text[:match.start()]):
            continue
        value = _english_value(words)
        if words[0] in _BIG:  # "6.01 million", "a thousand": the scale of a number, not one itself
            continue
        if words == ["one"] and re.search(r"\b(?:the|this|that|which|each|every|any|no)\s+$", text[:match.start()], re.I):
            continue  # "the one with the largest value": a pronoun, not a number
        unit = ""
        rest = text[match.end():match.end() + 12]
        if words[-1] in _ORDINALS and re.match(r"\s+page\b", rest, re.I) or _PAGE_BEFORE.search(text[max(0, match.start() - 16):match.start()]):
            unit = "page"
        elif re.match(r"(?:\s|-)pages?\b", rest, re.I):
            unit = "pages"
        found.append(Quantity(float(value), unit, 0.5, False, 1.0, match.start(), match.end()))
    return found


_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_CN_UNITS = {"十": 10, "百": 100, "千": 1000}
_CN_RUN = re.compile(r"[零〇一二两三四五六七八九十百千万亿]+")
_CN_NOT_NUMBERS = ("一些", "一起", "一样", "一般", "一直", "一定", "一切", "一共", "一下", "一点", "万一", "千万", "统一",
                   "唯一", "一致", "十分", "万分", "第一时间", "之一", "一旦", "一边", "一方面", "百分之")


def _chinese_value(run: str) -> int | None:
    total, section, digit = 0, 0, None
    for char in run:
        if char in _CN_DIGITS:
            digit = _CN_DIGITS[char] if digit is None or char not in "零〇" else digit
            if char in "零〇":
                digit = None
        elif char in _CN_UNITS:
            section += (1 if digit is None else digit) * _CN_UNITS[char]
            digit = None
        else:  # 万, 亿
            section += digit or 0
            total = (total + section) * (10_000 if char == "万" else 100_000_000)
            section, digit = 0, None
    return total + section + (digit or 0)


def _chinese_quantities(text: str) -> list[Quantity]:
    found = []
    for match in _CN_RUN.finditer(text):
        run, start, end = match.group(), match.start(), match.end()
        around = text[max(0, start - 2):end + 3]
        if run in ("一", "万", "亿", "千", "百") or any(w in around and (w.find(run) >= 0 or run in w) for w in _CN_NOT_NUMBERS):
            if not (run == "一" and re.match(r"[个条次页人章]", text[end:end + 1])):
                continue
        if len(run) > 1 and all(c in _CN_DIGITS for c in run):  # 二〇二四 read digit by digit
            value = int("".join(str(_CN_DIGITS[c]) for c in run))
        else:
            value = _chinese_value(run)
        after = text[end:end + 1]
        unit = "" if not after or after not in "页頁" else "page" if text[max(0, start - 1):start] == "第" else "pages"
        found.append(Quantity(float(value), unit, 0.5, False, 1.0, start, end))
    return found


# ---------------------------------------------------------------------------------------------- the reader
_RANGE = r"[\s*_`]*(?:-|~|to|up to|bis|à|至|到|→)[\s*_`]*"
_RESTATED = (r"[\s*_`]*[(\[（]\s*(?:≈|~|=|about|approx\.?|approximately|roughly|around|circa|ca\.|exactly|precisely|i\.e\.,?|"
             r"or|etwa|rund|genau|environ|soit|约|大约|约为|即)?\s*[≈~=:]?[\s*_`]*")


def quantities(text: str) -> list[Quantity]:
    """Every number written in text (digits, words, Chinese numerals), in order of appearance. A range's first number
    takes the unit written after its second ('300-320 Hz', '3 to 5 s')."""
    text = _prepare(text)
    found = sorted(_digit_quantities(text) + _english_quantities(text) + _chinese_quantities(text), key=lambda q: q.start)
    for i, (first, second) in enumerate(zip(found, found[1:])):
        if not first.unit and second.unit and re.fullmatch(_RANGE, text[first.end:second.start], re.I):
            factor = 1000.0 if second.unit == "Hz" and second.scale >= 1000 and not first.scaled else 1.0
            found[i] = replace(first, value=first.value * factor, step=first.step * factor, unit=second.unit,
                               scale=first.scale * factor)
    return found


def stated_values(text: str, brackets: bool = True) -> list[tuple[Quantity, ...]]:
    """The values an answer states, in order; a range ('300-320 Hz', '300 to 320 Hz') or a value given twice ('about 300 Hz
    (≈323 Hz)', '131,1 mm [131.1]') is one value, its numbers together: the same unit and within 25 % of each other
    ('from 300 to 3000 Hz' is two values). A bracket right after a value restates it wherever in the bracket a number of
    its unit and size stands ('300 Hz (≈ 323 Hz in the first frame; the fit gives 300.0 Hz at t = 0)'); brackets=False:
    only right after its opening."""
    prepared = _prepare(text)
    groups: list[tuple[Quantity, ...]] = []
    bracket = (-1, -1)  # (index of the group a bracket restates, where the bracket closes)
    for q in quantities(text):
        last = groups[-1][-1] if groups else None
        owner = groups[bracket[0]] if 0 <= bracket[0] and q.start < bracket[1] else None
        if owner and _one_value(prepared, owner[0], q, restated=True):
            groups[bracket[0]] += (q,)
            continue
        if last and _one_value(prepared, last, q):
            groups[-1] += (q,)
        else:
            groups.append((q,))
        opened = re.compile(r"[\s*_`]*[(\[（]").match(prepared, groups[-1][-1].end)
        if brackets and opened and q.start >= bracket[1]:
            close = re.compile(r"[)\]）]").search(prepared, opened.end())
            bracket = (len(groups) - 1, close.start() if close else len(prepared))
    return groups


def _one_value(text: str, first: Quantity, second: Quantity, restated: bool = False) -> bool:
    """first and second write one value: a range or a restatement (restated: second is in a bracket after first), in one
    unit, within 25 % of each other."""
    if first.unit != second.unit and first.unit and second.unit or first.value * second.value <= 0:
        return False
    if max(abs(first.value), abs(second.value)) > 1.25 * min(abs(first.value), abs(second.value)):
        return False
    between = text[first.end:second.start]
    return restated or bool(re.fullmatch(_RANGE, between, re.I) or re.fullmatch(_RESTATED, between, re.I))


def numbers_in(text: str) -> list[float]:
    """Every number written in text, as values (scale words applied), in order of appearance."""
    return [q.value for q in quantities(text)]


def _matches(q: Quantity, expected: float, rel: float, abs_tol: float, unit: str | None) -> bool:
    values = [q.value]
    if unit in _TIME_SECONDS and q.unit in _TIME_SECONDS:
        values = [q.value * _TIME_SECONDS[q.unit] / _TIME_SECONDS[unit]]
    elif unit and q.unit and q.unit != unit and not (unit == "%" or q.unit == "%"):
        return False
    elif q.unit == "%":
        values.append(q.value / 100)  # 12.5% is the share 0.125
    elif abs(q.value) <= 1 and abs(expected) > 1:
        values.append(q.value * 100)  # 0.125 for a share asked in percent
    elif abs(expected) <= 1 < abs(q.value) <= 100:
        values.append(q.value / 100)  # "accuracy 93" for 0.93
    for value in values:
        if math.isclose(value, expected, rel_tol=rel, abs_tol=abs_tol):
            return True
    if q.scaled:
        # "about 6.01 million": the writer rounded to 3+ significant digits; the exact value must round to it (in
        # units or in the scale word's units: 115.8k matches 115,825 and 115.825 thousand)
        for value, step in ((q.value, q.step), (q.value / q.scale, q.step / q.scale)):
            if math.isclose(value, expected, rel_tol=rel, abs_tol=abs_tol):
                return True
            if abs(value) >= 100 * step and abs(value - expected) <= step * 1.0001:
                return True
    return False


def assert_number(answer: str, expected: float, rel: float = 1e-3, abs_tol: float = 1e-6, what: str = "the answer",
                  unit: str | None = None) -> None:
    """Some number in the answer equals expected within rel (relative) or abs_tol (absolute) tolerance.

    12.5% matches 0.125, 0.125 matches 12.5 and 93 matches 0.93, so both ways of writing a share pass; a number written with a
    scale word ("6.01 million", 3+ significant digits) matches what rounds to it; with unit ("s", "min", "ms", "h")
    times in other units are converted ("2,310 ms" is 2.31 s).
    """
    found = quantities(answer)
    if any(_matches(q, expected, rel, abs_tol, unit) for q in found):
        return
    shown = ", ".join(f"{q.value:g}{q.unit}" for q in found[:8]) or "no number"
    raise AssertionError(f"{what} should contain {expected:g}; found {shown}")


def decimals_written(q: Quantity) -> int:
    """How many decimals q was written with (0.4180 -> 4, 12 -> 0; 1.5e-3 -> 4)."""
    return max(0, round(-math.log10(2 * q.step / q.scale)))


def assert_rounded(answer: str, expected: float, decimals: int, what: str = "the answer", aliases: list[str] | None = None,
                   unit: str | None = None) -> None:
    """The rounding the query states: the answer writes expected with at least `decimals` decimals, correct to half a
    unit of the last asked decimal ('0.4180' or '0.41803' for 0.4180256 to 4 places; '0.418' and '0.4183' fail). With
    aliases, only the numbers that belong to that label count (see labelled_numbers; unit: the asked kind)."""
    found = labelled_numbers(answer, aliases, unit=unit) if aliases else quantities(answer)
    half = 0.5 * 10 ** -decimals * (1 + 1e-9)
    near = [q for q in found if not q.scaled and abs(q.value - expected) <= half]
    assert near, f"{what} should be {expected:.{decimals}f} (to {decimals} decimals); the answer does not give it"
    assert any(decimals_written(q) >= decimals for q in near), \
        f"{what} is given with fewer than the {decimals} decimals asked for"


# ---------------------------------------------------------------------------------------------- claims
def _mentions(answer: str, options: dict[str, list[str]], marked: tuple[str, ...] = ()) -> list[tuple[int, str]]:
    """(position, label) for every mention of an option's alias, in order (longer aliases win overlaps). An option in
    marked is a mention only where the answer marks it as a word: quoted, in bold or in code ('"the"', '**the**',
    `the`), as a word that is also part of ordinary prose (a stopword put forward as the top word) is named. A name of
    4 letters or more is also named in the plural, English or German ('Bananas', 'Bananen', 'Cherries')."""
    low = answer.lower()
    hits, taken = [], set()
    aliases = sorted(((a.lower(), label) for label, names in options.items() for a in names), key=lambda p: -len(p[0]))
    for alias, label in aliases:
        named = re.escape(alias)
        if len(alias) >= 4 and alias.isalpha():  # Bananas, Bananen, Cherries
            named = rf"(?:{named}(?:e?s|e?n)?|{re.escape(alias[:-1])}(?:e|en|es|ies))" if alias[-1] in "aey" else rf"{named}(?:e?s|e?n)?"
        pattern = (r"(?<=[\"“‘'`*「])" + re.escape(alias) + r"(?=[\"”’'`*」])" if label in marked
                   else r"(?<![a-z])" + named + r"(?![a-z])")
        for m in re.finditer(pattern, low):
            if not taken & set(range(m.start(), m.end())):
                hits.append((m.start(), label))
                taken |= set(range(m.start(), m.end()))
    return sorted(hits)


def _bold_spans(answer: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"\*\*[^*\n]+\*\*|__[^_\n]+__|【[^】\n]+】", answer)]


def stated_item(answer: str, options: dict[str, list[str]], marked: tuple[str, ...] = ()) -> str | None:
    """The option the answer puts forward as its result: the first named in bold, else the first named at all (the
    options in marked only where marked as words, see _mentions)."""
    hits = _mentions(answer, options, marked)
    for start, end in _bold_spans(answer):
        inside = [label for pos, label in hits if start <= pos < end]
        if inside:
            return inside[0]
    return hits[0][1] if hits else None


def assert_claim(answer: str, expected: str, options: dict[str, list[str]], what: str, max_named: int | None = None,
                 marked: tuple[str, ...] = ()) -> None:
    """The answer states expected as the `what` (see stated_item; options in marked count only where marked as words)
    and does not spray the candidates: unless it puts the result in bold, it names at most max_named of the options
    (default: half of them, at least 2)."""
    got = stated_item(answer, options, marked)
    assert got is not None, f"the answer names no {what}"
    assert got == expected, f"the answer names {got} as the {what}, expected {expected}"
    hits = _mentions(answer, options, marked)
    claimed = any(start <= pos < end for start, end in _bold_spans(answer) for pos, label in hits if label == expected)
    if claimed:  # the result is put forward in bold: the other candidates around it are context, not a spray
        return
    named = {label for _, label in hits}
    limit = max_named if max_named is not None else max(2, len(set(options) - set(marked)) // 2)
    assert len(named) <= limit, f"the answer names {len(named)} {what} candidates, not one result (at most {limit})"


def assert_stated(answer: str, expected: float, rel: float = 1e-3, abs_tol: float = 1e-6, what: str = "the answer",
                  others=(), max_others: int = 1, unit: str | None = None, spray: int = 4) -> None:
    """assert_number, and the answer is not a number spray: it states at most max_others of the other candidates'
    values (others: what wrong readings of the task give) and fewer than `spray` numbers of the expected's size
    (within a factor of 2, same sign) besides it. An answer that puts the expected value forward in bold, and no
    other candidate's, states the others as context (a ranking), not as a spray."""
    assert_number(answer, expected, rel, abs_tol, what, unit)
    bold = _bold_spans(_prepare(answer))

    def in_bold(value: float) -> bool:
        return any(start <= q.start < end and _matches(q, value, rel, abs_tol, unit) for q in quantities(answer) for start, end in bold)
    if in_bold(expected) and not any(in_bold(o) for o in others if not math.isclose(o, expected, rel_tol=rel, abs_tol=abs_tol)):
        return
    found = [q for group in stated_values(answer, brackets=False)
             if not any(_matches(q, expected, rel, abs_tol, unit) for q in group)
             for q in group]  # a value given twice or a range holding the expected is that one value
    wrong = {o for o in others if not math.isclose(o, expected, rel_tol=rel, abs_tol=abs_tol)
             and any(_matches(q, o, rel, abs_tol, unit) for q in found)}
    assert len(wrong) <= max_others, f"the answer also states {len(wrong)} other candidate values for {what}, not one result"
    if expected:
        alike = {round(q.value, 9) for q in found if q.unit in ("", unit or "", "%")
                 and 0.5 <= q.value / expected <= 2 and q.value != expected}
        assert len(alike) < spray, f"the answer sprays {len(alike) + 1} numbers like {what}, not one result"


def _clauses(answer: str, found: list[Quantity] = ()) -> list[tuple[int, int]]:
    """(start, end) of the clauses of the answer: split at line ends, ; , ， 。 ； and sentence-ending dots, and at | outside
    a Markdown table, never inside a number of found (131,1); a table row ('| red | 3 |', '| 汉字（不算标点和数字） | 199 |')
    is one clause, notes and all, so a row's label and its value belong together."""
    bounds, start = [], 0
    for m in re.finditer(r"\n|[;，。；|,]|\.(?=\s|$)|\band\b|以及|和|及", answer):
        line_start = answer.rfind("\n", 0, m.start()) + 1
        if m.group() != "\n" and answer[line_start:m.start() + 1].lstrip().startswith("|"):
            continue
        if any(q.start < m.start() < q.end for q in found):
            continue
        bounds.append((start, m.start()))
        start = m.end()
    bounds.append((start, len(answer)))
    return bounds


# Words a number can stand before without modifying them ("7 of the 24", "9 in total", "35 were found"), and the
# words that may come between a number and the noun it counts ("448 distinct words").
_NOT_NOUNS = set("of out in on at and or to for from by with than as is are was were be been being has have had gave give "
                 "gives given got get received receive which that who whose the a an per each times time more less over under "
                 "about around roughly approximately exactly only just so here there it they this these those all".split())
_MODIFIERS = r"(?:(?:total|distinct|unique|different|separate|individual|non-stop-?words?|english|chinese)\s+)*"
_CN_COUNTERS = "个条篇次名位人项张处句段章本份种"
_PARTITIVE_TOTAL = re.compile(r"(?:\bout\s+of|\bof(?:\s+the|\s+all)?|\bamong(?:\s+the)?|\bfrom(?:\s+the)?|/)\s*$", re.I)


def _modified_noun(text: str, q: Quantity) -> str | None:
    """The noun the number q counts ('24 reviews' -> 'reviews', '199个汉字' -> '汉字'), or None when it counts nothing
    written after it ('7 of the 24', 'words: 448', '出现了25次')."""
    rest = text[q.end:q.end + 40]
    chinese = re.match(rf"\s*[{_CN_COUNTERS}]?([\u4e00-\u9fff]*)", rest)
    if chinese and re.match(r"\s*[\u4e00-\u9fff]", rest):
        run = chinese.group(1)
        return run if run and run[0] not in "了的是在中有为共和与及或" else None
    word = re.match(rf"[\s-]*{_MODIFIERS}([a-z]+)", rest, re.I)
    return word.group(1).lower() if word and word.group(1).lower() not in _NOT_NOUNS else None


def _is_partitive_total(text: str, q: Quantity, clause_start: int, found: list[Quantity]) -> bool:
    """q is the whole of a part named before it: 24 in '7 of the 24 reviews', '7 out of 24', '7/24', '24条评论中有7条'."""
    earlier = any(clause_start <= other.start and other.end <= q.start for other in found)
    if earlier and _PARTITIVE_TOTAL.search(text[clause_start:q.start]):
        return True
    return bool(re.match(rf"\s*[{_CN_COUNTERS}]?[\u4e00-\u9fff]{{0,4}}?中", text[q.end:q.end + 8]))


def _unit_fits(q: Quantity, unit: str | None) -> bool:
    """q is written as a number of the asked kind: a plain count (unit None), a time, a share."""
    if unit in _TIME_SECONDS:
        return q.unit in _TIME_SECONDS or not q.unit
    return q.unit in ("", unit or "")


def _after_appositive(text: str, end: int, found: list[Quantity]) -> list[Quantity]:
    """For a label whose clause (ending at end) holds no number: the first number of a later clause of its sentence
    that opens with 'is', '=' or ':', past an appositive ('The dominant eigenvalue, the one with the largest absolute
    value, is -9.99')."""
    stop = re.compile(r"\n|[;。；]|\.(?=\s|$)").search(text, end)
    stop = stop.start() if stop else len(text)
    for start, clause_end in _clauses(text, found):
        if end <= start < stop and re.match(r"\s*(?:is|was|are|were|equals|[=:])(?![a-z])", text[start:clause_end], re.I):
            return [q for q in found if start <= q.start and q.end <= clause_end][:1]
    return []


def _cells(text: str, line_start: int) -> list[tuple[int, int]]:
    """(start, end) of the cells of the Markdown table row starting at line_start ([] if the line is no row)."""
    line_end = text.find("\n", line_start)
    line_end = len(text) if line_end < 0 else line_end
    line = text[line_start:line_end]
    if not line.lstrip().startswith("|"):
        return []
    bars = [line_start + i for i, char in enumerate(line) if char == "|"]
    return [(a + 1, b) for a, b in zip(bars, bars[1:])] + ([(bars[-1] + 1, line_end)] if line[bars[-1] - line_start + 1:].strip() else [])


def _table_value(text: str, pos: int, found: list[Quantity], unit: str | None) -> Quantity | None:
    """For a label in a Markdown (or HTML) table cell: the first number of the cells after it in its row ('| 汉字总数
    （不算标点）[1] | **199** |': the label's notes and footnote marks are not its value), else, for a label heading a
    column of a table of one row ('| 汉字 | 茶 |' over '| 199 | 25 |'), the number under it; None outside tables."""
    line_start = text.rfind("\n", 0, pos) + 1
    cells = _cells(text, line_start)
    column = next((i for i, (a, b) in enumerate(cells) if a <= pos < b), None)
    if column is None:
        return None

    def first_in(spans):
        inside = [q for q in found if any(a <= q.start and q.end <= b for a, b in spans)]
        return ([q for q in inside if _unit_fits(q, unit)] or inside or [None])[0]
    value = first_in(cells[column + 1:])
    if value or any(a <= q.start < b for q in found for a, b in cells):
        return value
    header = re.compile(r"[^\n]*\n[ \t]*\|?[ \t]*:?-{3,}[-:| \t]*\n").match(text, line_start)  # a row over |---|---|
    row = _cells(text, header.end()) if header else []
    after = text.find("\n", header.end()) + 1 if header else 0
    if len(row) != len(cells) or after and _cells(text, after):
        return None  # a header over several rows: which row's number is the label's cannot be told
    return first_in(row[column:column + 1])


def labelled_numbers(answer: str, aliases: list[str], nouns: tuple[str, ...] = (), unit: str | None = None) -> list[Quantity]:
    """For each mention of a label (any alias), in order, the number that belongs to it in the same clause.

    A number belongs to the noun phrase it modifies: '448 words' is the words' number wherever the label is, and in
    '7 of the 24 reviews gave 5 stars' the number of '5 stars' is 7 (24 counts the reviews, and is the whole the 7 are
    part of). So for each mention: the number written right before it ('448 words', '199个汉字'); else the nearest
    number that modifies no other noun (nouns: further words such a number may count, e.g. 'reviews' for a count of
    5-star reviews) and is no partitive whole; else the nearest number that is no partitive whole. Numbers of the asked
    unit (none: a plain count; a time; a share) are preferred to others ('7 reviews (29%) gave 5 stars'). A number
    right after the label and a colon, '=' or 'is' ('red: 3', '| red | 3 |') comes next after one right before it. A
    label starts a word ('red' is not in 'coloured', 'review' is in 'reviews'); a Markdown table row is one clause."""
    text = _prepare(answer)
    found = quantities(answer)
    low = text.lower()
    labels = [alias.lower() for alias in aliases]
    allowed = labels + [noun.lower() for noun in nouns]
    picked = []
    for start, end in _clauses(text, found):
        for alias in labels:
            word_start = r"(?<![a-z])" if re.match(r"[a-z]", alias) else ""  # 'red' is no label inside 'coloured'
            for m in re.finditer(word_start + re.escape(alias), low[start:end]):
                pos, stop = start + m.start(), start + m.end()
                cell = _table_value(text, pos, found, unit)
                if cell:
                    picked.append((pos, cell))
                    continue
                near = [q for q in found if start <= q.start and q.end <= end and (q.end <= pos or q.start >= stop)]
                near = [q for q in near if _unit_fits(q, unit)] or near
                direct = [q for q in near if q.end <= pos and re.fullmatch(rf"[\s-]*{_MODIFIERS}[{_CN_COUNTERS}]?\s*", low[q.end:pos])]
                direct = direct or [q for q in near if q.start >= stop and re.fullmatch(r"[\s*_`|]*(?:[:=]|\bis\b|\bare\b)?[\s*_`|]*",
                                                                                        low[stop:q.start])]
                wholes = [q for q in near if _is_partitive_total(text, q, start, found)]
                parts = [q for q in near if q not in wholes]
                free = [q for q in parts if (noun := _modified_noun(low, q)) is None
                        or any(noun.startswith(word) or word.startswith(noun) for word in allowed)]
                choice = direct or free or parts or _after_appositive(text, end, found)
                if choice:
                    picked.append((pos, min(choice, key=lambda q: pos - q.end if q.end <= pos else q.start - stop)))
    return [q for _, q in sorted(picked, key=lambda pair: pair[0])]


def assert_labelled(answer: str, aliases: list[str], expected: float, rel: float = 0, abs_tol: float = 0.5,
                    what: str = "the answer", unit: str | None = None, nouns: tuple[str, ...] = ()) -> None:
    """The number that belongs to a label (e.g. ['words', '词']; see labelled_numbers) is expected: '448 words', 'words: 448'."""
    got = labelled_numbers(answer, aliases, nouns, unit)
    assert got, f"the answer gives no number for {what}"
    assert any(_matches(q, expected, rel, abs_tol, unit) for q in got), \
        f"{what} should be {expected:g}; the answer gives {', '.join(f'{q.value:g}' for q in got[:4])}"


# ---------------------------------------------------------------------------------------------- dates
MONTHS = {m: i + 1 for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"])}
MONTHS.update({name[:3]: num for name, num in list(MONTHS.items())})
MONTH_RE = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"


def dates_in(text: str) -> set:
    """(month, day, year-or-None) triples for the dates written in text, in the usual formats.

    Slashed and dotted numeric dates are read day first (the suite's files are European).
    """
    found = set()
    low = text.lower()
    for y, m, d in re.findall(r"\b(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})\b", low):
        found.add((int(m), int(d), int(y)))
    for d, m, y in re.findall(r"\b(\d{1,2})[/.](\d{1,2})[/.](\d{4})\b", low):
        found.add((int(m), int(d), int(y)))
    for y, m, d in re.findall(r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*日", text):
        found.add((int(m), int(d), int(y)))
    for d, mon, y in re.findall(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + MONTH_RE + r"(?:,?\s+(\d{4}))?", low):
        found.add((MONTHS[mon[:3]], int(d), int(y) if y else None))
    for mon, d, y in re.findall(MONTH_RE + r"\s+(\d{1,2})(?:st|nd|rd|th)?\b(?:,?\s+(\d{4}))?", low):
        found.add((MONTHS[mon[:3]], int(d), int(y) if y else None))
    return found


def assert_date(answer: str, iso: str, what: str) -> None:
    """The answer writes the date iso (YYYY-MM-DD) in some common format; a missing year is tolerated."""
    y, m, d = (int(x) for x in iso.split("-"))
    dates = dates_in(answer)
    assert (m, d, y) in dates or (m, d, None) in dates, f"{what}: the answer does not give the date {iso}"
