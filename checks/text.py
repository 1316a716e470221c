"""Checks for the `text` group (text mining and question answering over txt, md, pdf and docx files).

Expected values are recomputed from ./data where that is cheap, otherwise hard-coded from the generated
files (files/make_text.py); the comments say where each number comes from.
"""
import re
from pathlib import Path

from charts import graded_panel, one_chart
from common import (assert_chart, assert_claim, assert_date, assert_labelled, assert_number, assert_stated, assert_words,
                    dates_in, decimals_written, output_file, quantities, read_table)

def assert_pair(answer: str, word: str, number: int, what: str) -> None:
    """Some line of the answer names word and also carries number (e.g. 'lantern: 9')."""
    for line in answer.splitlines():
        if word.lower() in line.lower() and re.search(rf"(?<![\d.,]){number}(?![\d]|[.,]\d)", line):
            return
    raise AssertionError(f"{what}: no line of the answer gives '{word}' with {number}")


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


# ---------------------------------------------------------------------------------------------- story
def story_counts(answer: str, output: Path, data: Path) -> None:
    """Verifies: the answer gives the story's word count (448, title included) and sentence count (35), each number
    next to its label (so '35 words and 448 sentences' fails)."""
    text = (data / "lighthouse_story.txt").read_text(encoding="utf-8")
    words = len(text.split())  # 448: the story has no hyphens, apostrophes or digits
    sentences = len(re.findall(r"[.!?]+", text))  # 35
    assert_labelled(answer, ["word", "词", "单词"], words, what="the word count")
    assert_labelled(answer, ["sentence", "句"], sentences, what="the sentence count")


def story_facts(answer: str, output: Path, data: Path) -> None:
    """Verifies: the answer names the dog (Biscuit) and the ship that is saved (the Alder Queen)."""
    assert_words(answer, "Biscuit", "Alder Queen")


def story_top_words(answer: str, output: Path, data: Path) -> None:
    """Verifies: the top three non-stopwords of the story with their counts: lantern 9, harbor 7, storm 6."""
    # Counted with sklearn's ENGLISH_STOP_WORDS on the generated file (hard-coded: importing sklearn takes ~1.5 s);
    # the 4th word (marta/beam/biscuit) has only 4, so any common stopword list gives the same top three.
    for word, n in (("lantern", 9), ("harbor", 7), ("storm", 6)):
        assert_pair(answer, word, n, "top words")


def story_wordcloud(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/story_wordcloud.png decodes, is about 800x400 pixels and is not blank."""
    image = assert_chart(output, "story_wordcloud.png", min_colors=5)
    w, h = image.size
    assert abs(w - 800) <= 40 and abs(h - 400) <= 20, f"the word cloud is {w}x{h}, not 800x400"


# ---------------------------------------------------------------------------------------------- minutes
def minutes_summary(answer: str, output: Path, data: Path) -> None:
    """Verifies: meeting in Tallinn on 14 March 2024 chaired by Ingrid Solberg; next one in Riga on 9 May 2024."""
    assert_words(answer, "Tallinn", "Ingrid Solberg", "Riga")
    assert_date(answer, "2024-03-14", "meeting date")
    assert_date(answer, "2024-05-09", "next meeting date")


def _items(answer: str) -> list[str]:
    """The answer cut into items: lines, sentences, ';' and 'and' / 和 / 以及 / '，' between two of them (not English
    commas, which also sit inside dates such as 'April 12, 2024')."""
    return [part for part in re.split(r"\n|[;；。]|\.(?=\s|$)|\band\b|以及|和|及|，", answer) if part.strip()]


def assert_paired(answer: str, word: str, iso: str, what: str) -> None:
    """Some item of the answer (see _items) names word and gives the date iso with it: pairs checked as pairs."""
    y, m, d = (int(x) for x in iso.split("-"))
    for item in _items(answer):
        dates = dates_in(item)
        if word.lower() in item.lower() and ((m, d, y) in dates or (m, d, None) in dates):
            return
    raise AssertionError(f"{what}: no item of the answer gives '{word}' with its date {iso}")


def minutes_owner_actions(answer: str, output: Path, data: Path) -> None:
    """Verifies: both of Tomas Reyes's actions, each with its own due date: venue contract (12 April 2024) and
    translation quotes (26 April 2024), and none of the other owners' items."""
    assert_words(answer, "contract", "translation")
    assert_date(answer, "2024-04-12", "venue contract due date")
    assert_date(answer, "2024-04-26", "translation quotes due date")
    assert_paired(answer, "contract", "2024-04-12", "the venue contract")
    assert_paired(answer, "translation", "2024-04-26", "the translation quotes")
    others = [iso for iso in ("2024-03-29", "2024-03-22", "2024-04-05", "2024-04-19")  # the other owners' items
              if any(d[:2] == (int(iso[5:7]), int(iso[8:])) for d in dates_in(answer))]
    assert not others, f"the answer also lists items of other owners (due {', '.join(others)})"


def minutes_attendance(answer: str, output: Path, data: Path) -> None:
    """Verifies: 8 people attended (2 of them remotely) and the apologies came from Sofia Marchetti and Henrik Dahl."""
    assert_labelled(answer, ["people", "attend", "present", "participant", "人", "参会", "出席", "person", "teilnehm", "teilgenommen",
                             "anwesend", "présent"], 8, what="the attendance")  # the labels in the answer's language too
    assert_words(answer, "Sofia Marchetti", "Henrik Dahl")


# ---------------------------------------------------------------------------------------------- extraction
EMAILS = sorted([
    "partnerships@fjordline.io", "maria.lopez@fjordline.io", "j.smith+invoices@example.org",
    "ops-team@harbor-logistics.co.uk", "planning@harbor-logistics.co.uk", "support@norvale.com",
    "priya.natarajan@example.org", "priya.n@oldmail.net", "dispatch@harbor-logistics.co.uk",
    "status-page@norvale.com", "lauri.maki@norvale.com", "ap@example.org",
])


def _column(output: Path, name: str, column: str) -> list[str]:
    """The non-empty values of ./output/name's column `column` (its header matched case-insensitively), as stripped text."""
    df = read_table(output, name)
    cols = [str(c).strip().lower() for c in df.columns]
    assert column in cols, f"{name} has no '{column}' column (columns: {list(df.columns)})"
    return [str(v).strip() for v in df[df.columns[cols.index(column)]].dropna()]


def _same_items(values: list[str], expected: list[str], name: str, items: str, source: str) -> None:
    """values hold every expected item once and nothing else."""
    assert len(values) == len(set(values)), f"{name} has duplicate {items}"
    missing = sorted(set(expected) - set(values))
    extra = sorted(set(values) - set(expected))
    assert not missing, f"{name} misses {', '.join(missing[:4])}"
    assert not extra, f"{name} has {items} not in {source}: {', '.join(extra[:4])}"


def extract_emails(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/emails.csv has one column 'email' holding the 12 distinct addresses, lowercase, sorted."""
    values = _column(output, "emails.csv", "email")
    assert values == [v.lower() for v in values], "some addresses are not lowercase"
    _same_items(values, EMAILS, "emails.csv", "addresses", "the file")
    assert values == sorted(values), "emails.csv is not sorted alphabetically"


LOG_DATES = ["2024-01-08", "2024-01-15", "2024-01-22", "2024-02-09", "2024-02-12", "2024-03-01", "2024-03-05",
             "2024-03-28", "2024-04-04", "2024-06-03"]


def extract_dates(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/dates.csv column 'date' holds the 10 distinct log dates as YYYY-MM-DD (slashed = day/month), ascending."""
    values = _column(output, "dates.csv", "date")
    bad = [v for v in values if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", v)]
    assert not bad, f"not YYYY-MM-DD: {', '.join(bad[:3])}"
    _same_items(values, LOG_DATES, "dates.csv", "dates", "the log")
    assert values == sorted(values), "dates.csv is not in ascending order"


# ---------------------------------------------------------------------------------------------- pdf
def pdf_region_growth(answer: str, output: Path, data: Path) -> None:
    """Verifies: West had the highest Q2->Q3 growth (16.0%) and total Q3 revenue is EUR 6,010,600."""
    # page 2 table: West 760,000 -> 881,600 (+16.0%); South has the largest absolute gain (+127,400, 13.0%)
    regions = {r: [r] for r in ("North", "South", "East", "West", "Central")}
    assert_claim(answer, "West", regions, "region", max_named=3)
    assert_stated(answer, 16.0, rel=0.01, what="West's growth rate")
    assert_number(answer, 6010600, rel=1e-6, what="total Q3 revenue")


def pdf_structure(answer: str, output: Path, data: Path) -> None:
    """Verifies: the report has 4 pages and the Risk Factors section is on page 3 (1-based)."""
    found = quantities(answer)
    counts = [q.value for q in found if q.unit == "pages"]
    pages = [q.value for q in found if q.unit == "page"]
    if not counts:  # "Pages: 4", "页数：4"
        counts = [q.value for q in found if re.search(r"pages?\W{0,3}$|页数\W{0,3}$", answer[:q.start], re.I)]
    assert 4 in counts, f"the answer does not say the PDF has 4 pages (page counts read: {counts or 'none'})"
    assert pages, "the answer gives no page number for Risk Factors"
    assert pages[0] == 3, f"the answer places Risk Factors on page {pages[0]:g}, not page 3"
    assert len(set(pages)) <= 2, f"the answer names pages {sorted(set(pages))}, not one start page"


def pdf_headcount(answer: str, output: Path, data: Path) -> None:
    """Verifies: total headcount at 30 September is 446 and Retail (214) is the largest department."""
    # page 3 table, Q3 column: 214 + 96 + 31 + 58 + 47 = 446 (the 30 June column sums to 425)
    assert_stated(answer, 446, rel=0, abs_tol=0.5, what="total Q3 headcount", others=[425], max_others=0)
    departments = {d: [d] for d in ("Retail", "Logistics", "Design", "Corporate", "Online")}
    assert_claim(answer, "Retail", departments, "department", max_named=5)


# ---------------------------------------------------------------------------------------------- docx
def docx_to_txt(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/remote_work_policy.txt holds every paragraph of the docx in order, plus every table cell."""
    from docx import Document

    path = output_file(output, "remote_work_policy.txt")
    try:
        text = _norm(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise AssertionError("remote_work_policy.txt is not UTF-8 text") from None
    doc = Document(str(data / "remote_work_policy.docx"))
    pos = 0
    for para in doc.paragraphs:
        want = _norm(para.text)
        if not want:
            continue
        found = text.find(want, pos)
        assert found >= 0, f"paragraph missing or out of order: {want[:50]!r}"
        pos = found + len(want)
    for table in doc.tables:
        for row in table.rows:
            for cell in row.cells:
                want = _norm(cell.text)
                assert want in text, f"table cell missing from the text: {want!r}"


def docx_policy_facts(answer: str, output: Path, data: Path) -> None:
    """Verifies: roles allowed 3+ remote days are Engineering, Data Science and Design; the equipment stipend is EUR 450."""
    assert_words(answer, "Engineering", "Data Science", "Design")
    low = answer.lower()
    listed = [r for r in ("sales", "customer support", "finance") if re.search(rf"\b{r}\b", low)]
    assert not listed, f"the answer also lists {', '.join(listed)}, which have fewer than 3 remote days"
    assert_stated(answer, 450, rel=0, abs_tol=0.5, what="equipment stipend")


def press_companies(answer: str, output: Path, data: Path) -> None:
    """Verifies: the four companies with their cities: Norvale Systems/Tampere, Brightwater Labs/Cork, Kestrel Dynamics/Graz,
    Halvorsen & Pike/Bergen, each city being the one named nearest to its company on a line (a list of companies
    followed by a list of cities fails)."""
    pairs = (("Norvale", "Tampere"), ("Brightwater", "Cork"), ("Kestrel", "Graz"), ("Halvorsen", "Bergen"))
    cities = [c for _, c in pairs] + ["Rotterdam", "Aarhus"]
    for line in answer.splitlines():
        low = line.lower()
        found = [(m.start(), c) for c in cities for m in re.finditer(c.lower(), low)]
        for company, city in pairs:
            for m in re.finditer(company.lower(), low):
                if found and min(found, key=lambda f: abs(f[0] - m.start()))[1] == city:
                    pairs = tuple(p for p in pairs if p[0] != company)
    assert not pairs, f"the answer does not give {pairs[0][0]} with {pairs[0][1]} (the city named next to it)"


# ---------------------------------------------------------------------------------------------- reviews
def _reviews(data: Path):
    """[(product, rating, text)] parsed from product_reviews.txt."""
    raw = (data / "product_reviews.txt").read_text(encoding="utf-8")
    out = []
    for block in raw.split("-" * 50)[1:]:
        product = re.search(r"Product: (.*)", block).group(1).strip()
        rating = int(re.search(r"Rating: (\d)/5", block).group(1))
        out.append((product, rating, block))
    return out


def review_summary_docx(answer: str, output: Path, data: Path) -> None:
    """Verifies: review_summary.docx has the 'Product Review Summary' heading and a table Product/Reviews/Average Rating, by average descending,
    the averages rounded to 2 decimals (4.33, or 2.6 for 2.60; not 4.333333)."""
    from docx import Document

    path = output_file(output, "review_summary.docx")
    try:
        doc = Document(str(path))
    except Exception as error:
        raise AssertionError(f"review_summary.docx does not open as a docx ({type(error).__name__})") from None
    assert any("product review summary" in p.text.lower() for p in doc.paragraphs), "no 'Product Review Summary' heading"
    stats = {}
    for product, rating, _ in _reviews(data):
        stats.setdefault(product, []).append(rating)
    expected = sorted(((p, len(r), sum(r) / len(r)) for p, r in stats.items()), key=lambda x: -x[2])
    assert doc.tables, "the document has no table"
    table = doc.tables[0]
    rows = [[_norm(c.text) for c in row.cells] for row in table.rows]
    header = [h.lower() for h in rows[0]]
    try:
        i_prod = next(i for i, h in enumerate(header) if "product" in h)
        i_avg = next(i for i, h in enumerate(header) if "average" in h or "rating" in h)
        i_cnt = next(i for i, h in enumerate(header) if "review" in h and i not in (i_prod, i_avg))
    except StopIteration:
        raise AssertionError(f"table header {rows[0]} lacks Product / Reviews / Average Rating") from None
    body = [r for r in rows[1:] if any(r)]
    assert len(body) == len(expected), f"the table has {len(body)} product rows, expected {len(expected)}"
    for row, (product, count, avg) in zip(body, expected):
        assert row[i_prod] == product, f"row order: expected {product} but found {row[i_prod]!r} (sort by average, descending)"
        assert_number(row[i_cnt], count, rel=0, abs_tol=0.5, what=f"{product} review count")
        assert_number(row[i_avg], avg, rel=0, abs_tol=0.0051, what=f"{product} average rating")
        written = max(decimals_written(q) for q in quantities(row[i_avg]) if abs(q.value - avg) <= 0.0051)
        assert written <= 2, f"{product}'s average rating {row[i_avg]!r} is not rounded to 2 decimals"


def review_battery(answer: str, output: Path, data: Path) -> None:
    """Verifies: 9 reviews mention 'battery' (any case) and their average rating is 3.56."""
    hits = [r for _, r, block in _reviews(data) if "battery" in block.lower()]
    assert_labelled(answer, ["review", "mention", "条", "篇", "avis", "commentaire", "bewertung", "rezension", "erwähn", "reseña"],
                    len(hits), what="the number of battery reviews")  # 9; the labels in the answer's language
    assert_stated(answer, sum(hits) / len(hits), rel=0, abs_tol=0.006, what="their average rating")  # 3.556


@graded_panel
def review_rating_chart(answer: str, output: Path, data: Path) -> None:
    """Verifies from the figure record: ./output/rating_distribution.png is a bar chart with one bar per star rating 1-5
    (each found by the digit of its tick label, else by its position), each as long as the number of reviews that gave
    that rating (1, 3, 5, 8, 7); the answer says 7 reviews gave 5 stars. The bars are proven by the picture
    (figures.assert_picture_shows), the tick labels by their text at its place (figures.keep_shown_texts)."""
    from collections import Counter

    ratings = Counter(r for _, r, _ in _reviews(data))
    _, ax = one_chart(output, "rating_distribution.png", "bar chart")
    bars = ax.bars
    assert len(bars) == 5, f"rating_distribution.png has {len(bars)} bars, expected one per star rating (5)"
    shown = {}
    for bar in bars:
        digit = re.search(r"[1-5]", str(ax.nearest_label(bar)))
        shown[int(digit.group()) if digit else round(ax.bar_position(bar))] = ax.bar_value(bar)
    expected = {stars: ratings.get(stars, 0) for stars in range(1, 6)}
    assert shown == expected, f"rating_distribution.png shows {dict(sorted(shown.items()))} reviews per rating, expected {expected}"
    fives = sum(1 for _, r, _ in _reviews(data) if r == 5)  # 7
    assert_labelled(answer, ["5 star", "5-star", "five star", "five-star", "5 stars", "5星", "五星", "5 分", "5分"], fives,
                    what="the number of 5-star reviews", nouns=("review", "rating", "customer", "评论", "评价"))


def review_best_product(answer: str, output: Path, data: Path) -> None:
    """Verifies: the best-rated product is VoltGo Power Bank with 6 reviews and an average of 4.33."""
    products = {p: [p, p.split()[0]] for p in
                ("VoltGo Power Bank", "TrailBuds Wireless Earbuds", "AeroBlend Pro Blender", "Lumo Desk Lamp")}
    assert_claim(answer, "VoltGo Power Bank", products, "product")
    assert_labelled(answer, ["review", "评论", "条"], 6, what="its review count")
    assert_stated(answer, 26 / 6, rel=0, abs_tol=0.006, what="its average rating", others=[3.857, 3.833, 2.6], max_others=1)


# ---------------------------------------------------------------------------------------------- novel
def _chapters(data: Path):
    raw = (data / "the_salt_road.txt").read_text(encoding="utf-8")
    parts = re.split(r"^(Chapter \d+: .*)$", raw, flags=re.M)
    return [(h.strip(), b.strip()) for h, b in zip(parts[1::2], parts[2::2])]


def novel_split(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/chapters/ holds chapter_01.txt..chapter_05.txt, each the heading line followed by that chapter's text."""
    folder = output / "chapters"
    assert folder.is_dir() and not folder.is_symlink(), "./output/chapters/ was not created"
    chapters = _chapters(data)
    names = sorted(p.name for p in folder.iterdir() if p.suffix == ".txt")
    want = [f"chapter_{i:02d}.txt" for i in range(1, len(chapters) + 1)]
    assert names == want, f"./output/chapters/ holds {names[:7]}, expected {want}"
    for name, (head, body) in zip(want, chapters):
        got = _norm(output_file(folder, name).read_text(encoding="utf-8"))
        assert got.startswith(head), f"{name} does not start with {head!r}"
        assert got == _norm(head + " " + body), f"{name} does not hold exactly the text of {head!r}"


def novel_longest(answer: str, output: Path, data: Path) -> None:
    """Verifies: the longest chapter is Chapter 3 'Salt and Silver', with about 280 words (heading in or out)."""
    chapters = _chapters(data)
    lengths = [len(b.split()) for _, b in chapters]
    best = max(range(len(chapters)), key=lambda i: lengths[i])
    head = chapters[best][0]  # "Chapter 3: Salt and Silver", 280 words
    title = head.split(":", 1)[1].strip()
    assert title.lower() in answer.lower() or re.search(rf"chapter\s*{best + 1}\b|第\s*{best + 1}\s*章", answer, re.I), \
        f"the answer does not name {head!r}"
    others = [n for i, n in enumerate(lengths) if i != best]
    assert_stated(answer, lengths[best], rel=0, abs_tol=8, what="its word count", others=others, max_others=1)


# ---------------------------------------------------------------------------------------------- others
def zh_char_count(answer: str, output: Path, data: Path) -> None:
    """Verifies: the essay has 199 Chinese characters (CJK ideographs only) and 茶 occurs 25 times."""
    text = (data / "tea_essay_zh.txt").read_text(encoding="utf-8")
    han = len(re.findall(r"[\u4e00-\u9fff]", text))  # 199
    assert_labelled(answer, ["汉字", "字符", "个字", "characters"], han, what="the Chinese character count")
    assert_labelled(answer, ["茶"], text.count("茶"), what="the count of 茶")  # 25


def news_keywords(answer: str, output: Path, data: Path) -> None:
    """Verifies: the top keyword of each of the four articles: reservoir, tram, orchard, library."""
    assert_words(answer, "reservoir", "tram", "orchard", "library")
