"""Checks for the `charts` group (category `chart`): plots saved under ./output plus, for most tasks, a number or
name stated in the answer. Image checks go beyond "not blank": size, how many distinct chart colours there are
(hue bins of clearly coloured pixels, or large flat colour areas), a requested colour, an exact pixel size, or
for QR codes the decoded text (cv2.QRCodeDetector).
"""
import re
from pathlib import Path

from common import assert_chart, assert_number, assert_words, load_image, numbers_in

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]


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
def assert_any_word(answer: str, *options: str, what: str = "the answer") -> None:
    low = answer.lower()
    assert any(o.lower() in low for o in options), f"{what} should mention {options[0]}"


def assert_date(answer: str, year: int, month: int, day: int) -> None:
    """The answer names the date (ISO, numeric, 'July 19', '19 July', '7月19日' ...)."""
    full, abbr = MONTHS[month - 1], MONTHS[month - 1][:3]
    d, m = str(day), str(month)
    nd = r"(?<!\d)"
    na = r"(?!\d)"
    pats = [
        rf"{nd}{year}[-/.]0?{m}[-/.]0?{d}{na}",
        rf"{nd}0?{m}/0?{d}/{year}{na}", rf"{nd}0?{d}[/.]0?{m}[/.]{year}{na}",
        rf"\b(?:{full}|{abbr})\.?\s+0?{d}(?:st|nd|rd|th)?{na}",
        rf"{nd}0?{d}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{full}|{abbr})\b",
        rf"{nd}{m}\s*月\s*{d}\s*日",
    ]
    assert any(re.search(p, answer, re.IGNORECASE) for p in pats), f"the answer should name the date {year}-{month:02d}-{day:02d}"


def assert_month(answer: str, year: int, month: int) -> None:
    full, abbr = MONTHS[month - 1], MONTHS[month - 1][:3]
    pats = [rf"\b{full}\b", rf"\b{abbr}\b\.?", rf"(?<!\d){year}[-/]0?{month}(?!\d)", rf"(?<!\d)0?{month}/{year}(?!\d)",
            rf"(?<!\d){month}\s*月"]
    flags = 0 if month == 5 else re.IGNORECASE  # 'may' is also a verb
    assert any(re.search(p, answer, flags) for p in pats), f"the answer should name the month {full} {year}"


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
def fruit_units_bar(answer: str, output: Path, data: Path) -> None:
    """Verifies: chart-01.png is a bar chart whose bars are green; the answer names the top fruit by units (Banana) and its units (1240)."""
    df = _csv(data, "fruit_sales.csv")
    top = df.loc[df["units_sold"].idxmax()]
    image = chart(output, "chart-01.png")
    hue = dominant_hue(image)
    assert hue is not None and 70 <= hue <= 170, f"the bars are not green (main hue {hue} degrees)"
    assert_words(answer, top["fruit"])
    assert_number(answer, float(top["units_sold"]), what="units sold")


def quarterly_grouped_bar(answer: str, output: Path, data: Path) -> None:
    """Verifies: chart-02.png is a grouped bar chart with >= 4 bar colours (Q1-Q4); the answer names Q3 and its all-region total (711.0)."""
    import pandas as pd

    df = pd.read_excel(data / "quarterly_region.xlsx", sheet_name="Sales2023").set_index("Region")
    totals = df.sum()
    q = totals.idxmax()
    chart(output, "chart-02.png", min_colours=4)
    n = q[1]
    ordinal = {"1": "first", "2": "second", "3": "third", "4": "fourth"}[n]
    assert_any_word(answer, q, f"quarter {n}", f"{ordinal} quarter", what="the best quarter")
    assert_number(answer, float(totals.max()), what="the quarter total")


def energy_stacked_bar(answer: str, output: Path, data: Path) -> None:
    """Verifies: energy_stacked.png is a stacked bar chart with >= 6 segment colours; the answer gives the 2023 wind+solar share (about 21.85%)."""
    df = _csv(data, "energy_mix.csv")
    y = df[df["year"] == df["year"].max()]
    share = y[y["source"].isin(["Wind", "Solar"])]["generation_twh"].sum() / y["generation_twh"].sum()
    chart(output, "energy_stacked.png", min_colours=df["source"].nunique())
    assert_number(answer, share * 100, rel=0.004, what="the wind+solar share")


def max_temp_line(answer: str, output: Path, data: Path) -> None:
    """Verifies: max_temp.png is a line chart; the answer names the hottest day by daily maximum (2023-07-19) and its temperature (36.4)."""
    import pandas as pd

    df = _csv(data, "daily_weather.csv")
    row = df.loc[df["temp_max_c"].idxmax()]
    ts = pd.Timestamp(row["date"])
    chart(output, "max_temp.png")
    assert_date(answer, ts.year, ts.month, ts.day)
    assert_number(answer, float(row["temp_max_c"]), what="the maximum temperature")


def stocks_multiline(answer: str, output: Path, data: Path) -> None:
    """Verifies: stocks.png shows one line per ticker (>= 3 line colours); the answer names the best % gainer (BOLT) and its gain (about 10.2%)."""
    j = _json(data, "stock_prices.json")
    gains = {t: (v[-1]["close"] / v[0]["close"] - 1) * 100 for t, v in j["tickers"].items()}
    best = max(gains, key=gains.get)
    chart(output, "stocks.png", min_colours=len(gains))
    assert_words(answer, best)
    assert_number(answer, gains[best], rel=0.005, what="the percentage gain")


def os_pie(answer: str, output: Path, data: Path) -> None:
    """Verifies: os_pie.png is a pie with >= 5 slice colours (one per OS); the answer names Windows and its share (38.125%)."""
    df = _csv(data, "survey_os.csv")
    vc = df["preferred_os"].value_counts(normalize=True)
    chart(output, "os_pie.png", min_colours=len(vc))
    assert_words(answer, vc.index[0])
    assert_number(answer, float(vc.iloc[0]) * 100, rel=0.004, what="the share of the top OS")


def ad_regression(answer: str, output: Path, data: Path) -> None:
    """Verifies: ad_regression.png contains a red regression line; the answer states the OLS slope of sales on online spend (about 2.727)."""
    import numpy as np

    df = _csv(data, "ad_sales.csv")
    slope = float(np.polyfit(df["online_spend_k"], df["sales_k"], 1)[0])
    image = chart(output, "ad_regression.png")
    bins = hue_bins(image, min_share=0.0005)
    assert any(b in bins for b in (340, 350, 0, 10)), "no red regression line found in the chart"
    assert_number(answer, slope, rel=0.01, what="the slope")


def salary_histogram(answer: str, output: Path, data: Path) -> None:
    """Verifies: salary_hist.png is a non-empty histogram chart; the answer states the median salary (51450)."""
    import pandas as pd

    df = pd.read_excel(data / "employees.xlsx")
    chart(output, "salary_hist.png")
    assert_number(answer, float(df["salary_usd"].median()), what="the median salary")


def scores_boxplot(answer: str, output: Path, data: Path) -> None:
    """Verifies: scores_box.png is a box plot (boxes drawn, not empty axes); the answer names Maple and its median (78)."""
    df = _csv(data, "class_scores.csv")
    med = df.groupby("class")["score"].median()
    box_chart(output, "scores_box.png")
    assert_words(answer, med.idxmax())
    assert_number(answer, float(med.max()), what="the highest median")


def corr_heatmap(answer: str, output: Path, data: Path) -> None:
    """Verifies: corr_heatmap.png is a multi-colour heatmap; the answer names distance_km & price_k and their correlation (about -0.556)."""
    import numpy as np

    df = _csv(data, "housing_features.csv").select_dtypes("number")
    c = df.corr().to_numpy(copy=True)
    np.fill_diagonal(c, np.inf)
    i, j = np.unravel_index(np.argmin(c), c.shape)
    chart(output, "corr_heatmap.png", min_colours=3, greys=True)
    for col in (df.columns[i], df.columns[j]):
        assert_words(answer, col.split("_")[0])
    assert_abs_number(answer, float(c[i, j]), abs_tol=0.006, what="the correlation")


def traffic_area(answer: str, output: Path, data: Path) -> None:
    """Verifies: traffic_area.png is 1200x600 pixels (+-1%) and a stacked area chart with >= 4 channel colours."""
    df = _csv(data, "web_traffic.csv")
    image = chart(output, "traffic_area.png", min_colours=df["channel"].nunique())
    w, h = image.size
    assert abs(w - 1200) <= 12 and abs(h - 600) <= 6, f"traffic_area.png is {w}x{h}, expected 1200x600"


def reviews_wordcloud(answer: str, output: Path, data: Path) -> None:
    """Verifies: wordcloud.png is a multi-coloured word-cloud image; the answer names the most frequent non-stopword ('battery')."""
    chart(output, "wordcloud.png", min_colours=3)
    assert_words(answer, "battery")


def negative_wordcloud(answer: str, output: Path, data: Path) -> None:
    """Verifies: negative_wordcloud.png is a multi-coloured word cloud; the answer names 'refund' (top word of rating<=2 reviews)."""
    chart(output, "negative_wordcloud.png", min_colours=3)
    assert_words(answer, "refund")


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


def monthly_revenue(answer: str, output: Path, data: Path) -> None:
    """Verifies: monthly_revenue.png is a bar chart; the answer names November 2023 and its revenue (quantity*unit_price, 6937.00)."""
    import pandas as pd

    df = _csv(data, "transactions.csv")
    df["m"] = pd.to_datetime(df["order_date"]).dt.month
    rev = (df["quantity"] * df["unit_price"]).groupby(df["m"]).sum()
    chart(output, "monthly_revenue.png")
    assert_month(answer, 2023, int(rev.idxmax()))
    assert_number(answer, float(rev.max()), what="the best month's revenue")


def stores_line(answer: str, output: Path, data: Path) -> None:
    """Verifies: stores_line.png has one line per store (>= 2 colours); the answer names Downtown and the annual difference (4980)."""
    import pandas as pd

    sheets = pd.read_excel(data / "store_sales.xlsx", sheet_name=None)
    totals = {k: float(v["Sales"].sum()) for k, v in sheets.items()}
    best = max(totals, key=totals.get)
    diff = max(totals.values()) - min(totals.values())
    chart(output, "stores_line.png", min_colours=2)
    assert_words(answer, best)
    assert_number(answer, diff, what="the difference in annual totals")


def top10_population(answer: str, output: Path, data: Path) -> None:
    """Verifies: top10_population.png is a bar chart; the answer names the 10th most populous country (Mexico) and 128.5 million."""
    import pandas as pd

    df = pd.DataFrame(_json(data, "countries.json")["records"]).sort_values("population_millions", ascending=False)
    tenth = df.iloc[9]
    chart(output, "top10_population.png")
    assert_words(answer, tenth["country"])
    pop = float(tenth["population_millions"])
    try:
        assert_number(answer, pop, rel=2e-3, what="its population (millions)")
    except AssertionError:
        assert_number(answer, pop * 1e6, rel=2e-3, what="its population (millions)")


def expenses_pie(answer: str, output: Path, data: Path) -> None:
    """Verifies: expenses_pie.png is a pie with >= 6 slice colours; the answer gives rent's share of total spending (about 52.48%)."""
    import pandas as pd

    df = pd.read_excel(data / "expenses.xlsx")
    tot = df.groupby("category")["amount_eur"].sum()
    chart(output, "expenses_pie.png", min_colours=len(tot))
    assert_number(answer, float(tot["Rent"] / tot.sum() * 100), rel=0.004, what="rent's share")


def penguins_scatter(answer: str, output: Path, data: Path) -> None:
    """Verifies: penguins_scatter.png is a scatter with points in >= 3 colours (one per species)."""
    df = _csv(data, "penguins.csv")
    chart(output, "penguins_scatter.png", min_colours=df["species"].nunique())


def delivery_hist(answer: str, output: Path, data: Path) -> None:
    """Verifies: delivery_hist.png shows >= 2 histogram colours; the answer names SwiftShip and the mean difference (about 3.62 h)."""
    df = _csv(data, "deliveries.csv")
    m = df.groupby("courier")["delivery_hours"].mean()
    chart(output, "delivery_hist.png", min_colours=2)
    assert_words(answer, m.idxmin())
    assert_number(answer, float(m.max() - m.min()), rel=0.01, what="the difference in mean delivery time")


def visitors_ma(answer: str, output: Path, data: Path) -> None:
    """Verifies: visitors_ma.png has >= 2 line colours (daily + 7-day MA); the answer states the maximum 7-day moving average (about 1555.14)."""
    df = _csv(data, "daily_visitors.csv")
    chart(output, "visitors_ma.png", min_colours=2)
    assert_number(answer, float(df["visitors"].rolling(7).mean().max()), rel=1e-3, what="the maximum 7-day average")


def orders_heatmap(answer: str, output: Path, data: Path) -> None:
    """Verifies: orders_heatmap.png is a coloured heatmap; the answer names the busiest weekday (Friday) and hour (18 / 6 pm)."""
    import pandas as pd

    df = _csv(data, "orders_log.csv")
    ts = pd.to_datetime(df["created_at"])
    counts = df.groupby([ts.dt.day_name(), ts.dt.hour]).size()
    day, hour = counts.idxmax()
    chart(output, "orders_heatmap.png", min_colours=3, greys=True)
    assert_words(answer, day)
    h12 = hour % 12 or 12
    suffix = "pm" if hour >= 12 else "am"
    ok = re.search(rf"(?<!\d){hour}(?::00|h|\s*时|\s*点|\b)", answer) or re.search(rf"(?<!\d){h12}(?::00)?\s*{suffix}", answer, re.I)
    assert ok, f"the answer should name the hour {hour}:00"


def latency_bars(answer: str, output: Path, data: Path) -> None:
    """Verifies: latency_bars.png is a bar chart; the answer names the server with the lowest mean latency (api-3) and its mean (about 96.01 ms)."""
    import pandas as pd

    df = pd.DataFrame(_json(data, "server_latency.json"))
    m = df.groupby("server")["latency_ms"].mean()
    chart(output, "latency_bars.png")
    assert_words(answer, m.idxmin())
    assert_number(answer, float(m.min()), rel=2e-3, what="its mean latency")


def prices_boxplot(answer: str, output: Path, data: Path) -> None:
    """Verifies: prices_box.png is a box plot; the answer names the neighbourhood with the widest IQR (Hillcrest) and the IQR (about 115.8)."""
    import pandas as pd

    df = pd.read_excel(data / "house_prices.xlsx")
    q = df.groupby("neighbourhood")["price_k_eur"].quantile([0.25, 0.75]).unstack()
    iqr = q[0.75] - q[0.25]
    box_chart(output, "prices_box.png")
    assert_words(answer, iqr.idxmax())
    assert_number(answer, float(iqr.max()), rel=0.005, what="the IQR")


def likert_stacked(answer: str, output: Path, data: Path) -> None:
    """Verifies: likert_stacked.png is a stacked bar chart with >= 4 segment colours; the answer gives the 18-29 'Strongly agree' share (about 36.43%)."""
    df = _csv(data, "likert_survey.csv")
    g = df[df["age_group"] == "18-29"]
    share = (g["response"] == "Strongly agree").mean() * 100
    chart(output, "likert_stacked.png", min_colours=4)
    assert_number(answer, float(share), rel=0.003, what="the 'Strongly agree' share of 18-29")


def cumulative_downloads(answer: str, output: Path, data: Path) -> None:
    """Verifies: cumulative_downloads.png is a filled/line chart; the answer names the first date the cumulative total reached 10,000 (2024-03-01)."""
    import pandas as pd

    df = pd.DataFrame(_json(data, "downloads.json")["daily"])
    cs = df["downloads"].cumsum()
    ts = pd.Timestamp(df.loc[(cs >= 10000).idxmax(), "day"])
    chart(output, "cumulative_downloads.png")
    assert_date(answer, ts.year, ts.month, ts.day)


def log_levels(answer: str, output: Path, data: Path) -> None:
    """Verifies: log_levels.png is a bar chart with a distinct colour per level (>= 4); the answer states the number of [ERROR] lines (32)."""
    text = (data / "server.log").read_text(encoding="utf-8")
    n_error = len(re.findall(r"^\S+ \S+ \[ERROR\]", text, re.M))
    chart(output, "log_levels.png", min_colours=4)
    assert_number(answer, n_error, what="the ERROR line count")


def sensor_hists(answer: str, output: Path, data: Path) -> None:
    """Verifies: sensor_hists.png is a histogram figure; the answer names wind speed as most right-skewed and its skewness (about 1.55, 2%)."""
    df = _csv(data, "sensor_readings.csv").select_dtypes("number")
    sk = df.skew()
    chart(output, "sensor_hists.png")
    assert_words(answer, sk.idxmax().split("_")[0])
    assert_number(answer, float(sk.max()), rel=0.02, what="the skewness")


def green_qr(answer: str, output: Path, data: Path) -> None:
    """Verifies: qr_green.png decodes to the homepage URL from org.json and its dark modules are green, not black."""
    import numpy as np

    url = _json(data, "org.json")["organization"]["homepage"]
    image = qr(output, "qr_green.png", url)
    hsv = np.asarray(_small(image).convert("HSV")).reshape(-1, 3).astype(int)
    dark = hsv[hsv[:, 2] < 200]
    assert len(dark) > 0, "qr_green.png has no dark modules"
    hue_deg = dark[:, 0] * 360 / 256
    green = (dark[:, 1] >= 100) & (hue_deg >= 90) & (hue_deg <= 150)
    assert green.mean() >= 0.6, f"the QR modules are not dark green (only {green.mean():.0%} of dark pixels are green)"
