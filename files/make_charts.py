"""Deterministic generator for the `charts` group's input files.

Run from any cwd:  python make_charts.py   -> writes files/charts/*
Fixed seeds, no network, no timestamps inside files (xlsx zip entries and core properties are pinned).
"""
import datetime as dt
import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
OUT = HERE / "charts"
FIXED = dt.datetime(2024, 1, 1, 0, 0, 0)


def write_csv(df: pd.DataFrame, name: str) -> None:
    df.to_csv(OUT / name, index=False, lineterminator="\n")


def write_xlsx(sheets: dict, name: str) -> None:
    """sheets: {sheet_name: DataFrame}, written with openpyxl, then the zip is re-packed with fixed dates."""
    from openpyxl import Workbook

    wb = Workbook()
    wb.remove(wb.active)
    for sheet_name, df in sheets.items():
        ws = wb.create_sheet(sheet_name)
        ws.append(list(df.columns))
        for row in df.itertuples(index=False):
            ws.append([v.item() if hasattr(v, "item") else v for v in row])
    wb.properties.created = FIXED
    wb.properties.modified = FIXED
    wb.properties.creator = "pybench"
    buf = io.BytesIO()
    wb.save(buf)
    src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    with zipfile.ZipFile(OUT / name, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in sorted(src.infolist(), key=lambda i: i.filename):
            data = src.read(info.filename)
            if info.filename == "docProps/core.xml":
                import re

                data = re.sub(rb"<dcterms:(created|modified)([^>]*)>[^<]*</dcterms:\1>",
                              rb"<dcterms:\1\2>2024-01-01T00:00:00Z</dcterms:\1>", data)
            zi = zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0))
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = 0o644 << 16
            dst.writestr(zi, data)


def write_json(obj, name: str) -> None:
    (OUT / name).write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def write_text(text: str, name: str) -> None:
    (OUT / name).write_text(text, encoding="utf-8")


# --------------------------------------------------------------------------- 01 fruit sales
def fruit_sales():
    rows = [
        ("Apple", 980, 0.55), ("Banana", 1240, 0.35), ("Cherry", 310, 4.20), ("Grape", 540, 2.10),
        ("Mango", 610, 3.50), ("Orange", 870, 0.70), ("Pear", 420, 0.80), ("Kiwi", 390, 0.95),
    ]
    df = pd.DataFrame(rows, columns=["fruit", "units_sold", "unit_price"])
    df["revenue"] = (df.units_sold * df.unit_price).round(2)
    write_csv(df, "fruit_sales.csv")


# --------------------------------------------------------------------------- 02 quarterly sales by region
def quarterly_region():
    notes = pd.DataFrame({"note": [
        "Quarterly sales per region, thousands of USD.",
        "Source: internal ERP export, fiscal year 2023.",
        "Figures are final (audited).",
    ]})
    sales = pd.DataFrame({
        "Region": ["North", "South", "East", "West"],
        "Q1": [182.4, 140.2, 201.7, 95.3],
        "Q2": [190.1, 151.8, 188.2, 110.6],
        "Q3": [214.9, 168.5, 196.4, 131.2],
        "Q4": [175.3, 172.0, 209.9, 102.8],
    })
    write_xlsx({"Notes": notes, "Sales2023": sales}, "quarterly_region.xlsx")


# --------------------------------------------------------------------------- 03 energy mix (long format)
def energy_mix():
    base = {"Coal": 410, "Gas": 330, "Nuclear": 190, "Hydro": 95, "Wind": 70, "Solar": 25}
    growth = {"Coal": -0.09, "Gas": 0.01, "Nuclear": -0.01, "Hydro": 0.0, "Wind": 0.16, "Solar": 0.31}
    rng = np.random.default_rng(3)
    rows = []
    for i, year in enumerate(range(2018, 2024)):
        for src, b in base.items():
            v = b * (1 + growth[src]) ** i * (1 + rng.normal(0, 0.02))
            rows.append((year, src, round(v, 1)))
    df = pd.DataFrame(rows, columns=["year", "source", "generation_twh"])
    df = df.sample(frac=1, random_state=3).reset_index(drop=True)
    write_csv(df, "energy_mix.csv")


# --------------------------------------------------------------------------- 04 daily weather
def daily_weather():
    rng = np.random.default_rng(4)
    dates = pd.date_range("2023-01-01", "2023-12-31", freq="D")
    doy = np.arange(len(dates))
    season = 14 - 11 * np.cos(2 * np.pi * (doy - 15) / 365)
    tmax = season + 5 + rng.normal(0, 2.2, len(dates))
    tmin = season - 4 + rng.normal(0, 2.2, len(dates))
    tmax = np.round(tmax, 1)
    tmin = np.round(np.minimum(tmin, tmax - 1.0), 1)
    # a clear heat peak on 2023-07-19 for max, a warm night on 2023-08-03 for min
    i_max = list(dates).index(pd.Timestamp("2023-07-19"))
    i_min = list(dates).index(pd.Timestamp("2023-08-03"))
    tmax[i_max] = 36.4
    tmin[i_min] = 24.8
    tmax[i_min] = max(tmax[i_min], 29.9)
    precip = np.round(np.clip(rng.gamma(0.6, 3.5, len(dates)) - 1.0, 0, None), 1)
    df = pd.DataFrame({"date": dates.strftime("%Y-%m-%d"), "temp_max_c": tmax, "temp_min_c": tmin, "precip_mm": precip})
    write_csv(df, "daily_weather.csv")


# --------------------------------------------------------------------------- 05 stock prices (nested json)
def stock_prices():
    rng = np.random.default_rng(5)
    days = pd.bdate_range("2024-01-02", periods=60)
    spec = {"ACME": (182.0, 0.0004, 0.012), "BOLT": (24.5, 0.005, 0.02), "CRUX": (410.0, 0.0012, 0.009)}
    out = {"currency": "USD", "tickers": {}}
    for t, (p0, drift, vol) in spec.items():
        r = rng.normal(drift, vol, len(days))
        r[0] = 0
        p = p0 * np.exp(np.cumsum(r))
        out["tickers"][t] = [{"date": d.strftime("%Y-%m-%d"), "close": round(float(v), 2)} for d, v in zip(days, p)]
    write_json(out, "stock_prices.json")


# --------------------------------------------------------------------------- 06 OS survey
def survey_os():
    rng = np.random.default_rng(6)
    counts = {"Windows": 61, "macOS": 45, "Linux": 22, "Android": 19, "iOS": 13}
    os_list = [k for k, n in counts.items() for _ in range(n)]
    rng.shuffle(os_list)
    n = len(os_list)
    df = pd.DataFrame({
        "respondent_id": np.arange(1001, 1001 + n),
        "age": rng.integers(18, 66, n),
        "preferred_os": os_list,
        "satisfaction": rng.integers(1, 6, n),
    })
    write_csv(df, "survey_os.csv")


# --------------------------------------------------------------------------- 07 ad spend vs sales
def ad_sales():
    rng = np.random.default_rng(7)
    n = 52
    tv = np.round(rng.uniform(20, 80, n), 1)
    online = np.round(rng.uniform(5, 45, n), 1)
    sales = np.round(120 + 0.9 * tv + 3.2 * online + rng.normal(0, 12, n), 1)
    df = pd.DataFrame({"week": np.arange(1, n + 1), "tv_spend_k": tv, "online_spend_k": online, "sales_k": sales})
    write_csv(df, "ad_sales.csv")


# --------------------------------------------------------------------------- 08 employees (xlsx)
def employees():
    rng = np.random.default_rng(8)
    n = 240
    first = ["Ana", "Ben", "Chen", "Dara", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jia", "Kai", "Lea", "Max", "Nia", "Oli", "Pia"]
    last = ["Smith", "Lopez", "Ng", "Okafor", "Meyer", "Rossi", "Kim", "Haddad", "Silva", "Novak"]
    names = [f"{first[i % len(first)]} {last[(i * 7) % len(last)]}" for i in range(n)]
    dept = rng.choice(["Sales", "Engineering", "Support", "Finance", "HR"], n)
    age = rng.integers(22, 64, n)
    salary = np.round(np.exp(rng.normal(np.log(52000), 0.38, n)) / 100) * 100
    years = np.clip(np.round(rng.exponential(5, n)), 0, age - 21).astype(int)
    df = pd.DataFrame({"name": names, "department": dept, "age": age, "salary_usd": salary.astype(int), "years_at_company": years})
    write_xlsx({"Staff": df}, "employees.xlsx")


# --------------------------------------------------------------------------- 09 class scores
def class_scores():
    rng = np.random.default_rng(9)
    rows = []
    # Maple: left-skewed (high median, lower mean); Oak: right-skewed (lower median, higher mean)
    maple = np.concatenate([rng.normal(80, 4, 24), rng.normal(45, 6, 8)])
    oak = np.concatenate([rng.normal(72, 3, 22), rng.normal(96, 2, 10)])
    pine = rng.normal(70, 8, 30)
    cedar = rng.normal(66, 10, 31)
    for cls, arr in [("Maple", maple), ("Oak", oak), ("Pine", pine), ("Cedar", cedar)]:
        for s in arr:
            rows.append((cls, int(np.clip(round(s), 0, 100))))
    rng.shuffle(rows)
    df = pd.DataFrame(rows, columns=["class", "score"])
    df.insert(0, "student_id", [f"S{i:03d}" for i in range(1, len(df) + 1)])
    write_csv(df, "class_scores.csv")


# --------------------------------------------------------------------------- 10 housing features
def housing_features():
    rng = np.random.default_rng(10)
    n = 150
    area = rng.uniform(40, 180, n)
    rooms = np.clip(np.round(area / 30 + rng.normal(0, 0.7, n)), 1, 8)
    age = rng.uniform(0, 60, n)
    dist = rng.uniform(0.5, 25, n)
    price = 80 + 2.1 * area - 9.5 * dist - 0.6 * age + rng.normal(0, 25, n)
    df = pd.DataFrame({
        "listing": [f"L{i:04d}" for i in range(n)],
        "district": rng.choice(["Riverside", "Old Town", "Hillcrest", "Harbor"], n),
        "area_sqm": np.round(area, 1), "rooms": rooms.astype(int), "age_years": np.round(age, 1),
        "distance_km": np.round(dist, 2), "price_k": np.round(price, 1),
    })
    write_csv(df, "housing_features.csv")


# --------------------------------------------------------------------------- 11 web traffic (long)
def web_traffic():
    rng = np.random.default_rng(11)
    months = pd.period_range("2023-01", "2023-12", freq="M")
    base = {"Organic": 42000, "Paid": 18000, "Social": 12000, "Email": 6000}
    rows = []
    for i, m in enumerate(months):
        for ch, b in base.items():
            season = 1 + 0.25 * np.sin(2 * np.pi * (i - 2) / 12)
            v = b * season * (1 + 0.02 * i) * (1 + rng.normal(0, 0.05))
            rows.append((str(m), ch, int(round(v))))
    write_csv(pd.DataFrame(rows, columns=["month", "channel", "visits"]), "web_traffic.csv")


# --------------------------------------------------------------------------- 12 reviews text
def reviews_txt():
    rng = np.random.default_rng(12)
    sentences = [
        "The battery lasts all day and the battery charges quickly.",
        "Battery life is the best part of this phone.",
        "I love the screen, colors look sharp and bright.",
        "The camera takes decent photos in daylight but struggles at night.",
        "After a month the battery still holds a full charge.",
        "Shipping was fast and the packaging was neat.",
        "The phone feels light and the design is elegant.",
        "Customer support answered my question about the battery within an hour.",
        "Sound quality from the speaker is clear, though not very loud.",
        "The price is fair for what you get.",
        "My old battery died every afternoon, this battery does not.",
        "Setup was easy and the screen is responsive.",
        "Wireless charging works well with the case on.",
        "The battery indicator is accurate and the battery saver mode helps.",
        "Fingerprint sensor is quick and reliable.",
        "The camera app is simple, the phone rarely lags.",
    ]
    weights = np.array([3, 3, 2, 2, 3, 1, 2, 2, 1, 1, 2, 2, 1, 2, 1, 2], float)
    weights /= weights.sum()
    paras = []
    for _ in range(22):
        k = rng.integers(3, 6)
        idx = rng.choice(len(sentences), size=k, replace=False, p=weights)
        paras.append(" ".join(sentences[i] for i in idx))
    write_text("\n\n".join(paras) + "\n", "reviews.txt")


# --------------------------------------------------------------------------- 13 product reviews csv
def product_reviews():
    rng = np.random.default_rng(13)
    pos = [
        "Great blender, I love how smooth the smoothies turn out.",
        "Great value and great build quality, love it.",
        "Works great, quiet motor and easy to clean.",
        "Love the design, great for daily use.",
        "Powerful and great for crushing ice.",
        "Easy to clean and looks great on the counter.",
    ]
    neg = [
        "Arrived broken, I asked for a refund right away.",
        "Still waiting for my refund after three weeks.",
        "Motor died after two uses, refund requested.",
        "Lid leaks everywhere, want a refund.",
        "Support ignored my refund request twice.",
        "Blade broken on arrival, refund please.",
        "Too loud and the jar cracked, refund denied so far.",
    ]
    mid = [
        "It is okay, a bit loud but does the job.",
        "Average blender, nothing special.",
        "Decent for the price, lid is a little tight.",
    ]
    rows = []
    for i in range(96):
        r = rng.random()
        if r < 0.55:
            rating, text = int(rng.integers(4, 6)), " ".join(rng.choice(pos, 2, replace=False))
        elif r < 0.78:
            rating, text = int(rng.integers(1, 3)), " ".join(rng.choice(neg, 2, replace=False))
        else:
            rating, text = 3, str(rng.choice(mid))
        day = pd.Timestamp("2024-02-01") + pd.Timedelta(days=int(rng.integers(0, 90)))
        rows.append((f"R{i + 1:03d}", day.strftime("%Y-%m-%d"), rating, text))
    write_csv(pd.DataFrame(rows, columns=["review_id", "date", "rating", "review_text"]), "product_reviews.csv")


# --------------------------------------------------------------------------- 15 wifi json
def wifi_json():
    write_json({
        "venue": "Harbor Street Cafe",
        "network": {"ssid": "CafeGuest", "security": "WPA2", "password": "latte2024!", "hidden": False},
        "updated_by": "front desk",
    }, "wifi.json")


# --------------------------------------------------------------------------- 16 link txt
def link_txt():
    write_text(
        "# Spring campaign landing page\n"
        "# owner: marketing team, do not share before launch\n"
        "\n"
        "https://shop.example.net/spring-sale?utm_source=qr\n",
        "link.txt",
    )


# --------------------------------------------------------------------------- 17 transactions
def transactions():
    rng = np.random.default_rng(17)
    products = {"Notebook": 4.5, "Pen set": 7.0, "Backpack": 39.0, "Desk lamp": 24.0, "Stapler": 11.0, "Monitor stand": 55.0}
    names = list(products)
    rows = []
    oid = 5000
    for month in range(1, 13):
        n_orders = 40 + (28 if month == 12 else 0) + int(rng.integers(0, 10))
        for _ in range(n_orders):
            day = int(rng.integers(1, pd.Timestamp(2023, month, 1).days_in_month + 1))
            if month == 11:
                p = rng.choice(names, p=[0.05, 0.05, 0.3, 0.15, 0.05, 0.4])
                q = int(rng.integers(2, 7))
            elif month == 12:
                p = rng.choice(names, p=[0.4, 0.35, 0.05, 0.1, 0.08, 0.02])
                q = int(rng.integers(1, 3))
            else:
                p = rng.choice(names)
                q = int(rng.integers(1, 4))
            oid += 1
            rows.append((oid, f"2023-{month:02d}-{day:02d}", p, q, products[p]))
    df = pd.DataFrame(rows, columns=["order_id", "order_date", "product", "quantity", "unit_price"])
    df = df.sample(frac=1, random_state=17).reset_index(drop=True)
    write_csv(df, "transactions.csv")


# --------------------------------------------------------------------------- 18 store sales xlsx (two sheets)
def store_sales():
    rng = np.random.default_rng(18)
    months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    down = np.round(52000 + 6000 * np.sin(np.arange(12) / 2) + rng.normal(0, 2500, 12), -1)
    air = np.round(47000 + 14000 * np.sin((np.arange(12) - 3) / 3.8) + rng.normal(0, 2500, 12), -1)
    write_xlsx({
        "Downtown": pd.DataFrame({"Month": months, "Sales": down.astype(int)}),
        "Airport": pd.DataFrame({"Month": months, "Sales": air.astype(int)}),
    }, "store_sales.xlsx")


# --------------------------------------------------------------------------- 19 countries json
def countries_json():
    data = [
        ("India", 1428.6, "Asia"), ("China", 1425.7, "Asia"), ("United States", 339.996, "North America"),
        ("Indonesia", 277.5, "Asia"), ("Pakistan", 240.5, "Asia"), ("Nigeria", 223.8, "Africa"),
        ("Brazil", 216.4, "South America"), ("Bangladesh", 173.0, "Asia"), ("Russia", 144.4, "Europe"),
        ("Mexico", 128.5, "North America"), ("Ethiopia", 126.5, "Africa"), ("Japan", 123.3, "Asia"),
        ("Philippines", 117.3, "Asia"), ("Egypt", 112.7, "Africa"), ("DR Congo", 102.3, "Africa"),
        ("Vietnam", 98.9, "Asia"), ("Iran", 89.2, "Asia"), ("Turkey", 85.8, "Asia"), ("Germany", 83.3, "Europe"),
        ("Thailand", 71.8, "Asia"), ("United Kingdom", 67.7, "Europe"), ("Tanzania", 67.4, "Africa"),
        ("France", 64.8, "Europe"), ("South Africa", 60.4, "Africa"), ("Italy", 58.9, "Europe"),
    ]
    order = np.random.default_rng(19).permutation(len(data))
    recs = [{"country": data[i][0], "continent": data[i][2], "population_millions": data[i][1]} for i in order]
    write_json({"source": "UN World Population Prospects (rounded, 2023)", "unit": "millions", "records": recs}, "countries.json")


# --------------------------------------------------------------------------- 20 expenses xlsx
def expenses():
    rng = np.random.default_rng(20)
    rows = []
    for month in range(1, 7):
        rows.append((f"2024-{month:02d}-01", "Rent", 1450.0))
        for _ in range(int(rng.integers(7, 11))):
            rows.append((f"2024-{month:02d}-{int(rng.integers(2, 28)):02d}", "Groceries", round(float(rng.uniform(25, 140)), 2)))
        for _ in range(2):
            rows.append((f"2024-{month:02d}-{int(rng.integers(2, 28)):02d}", "Utilities", round(float(rng.uniform(60, 130)), 2)))
        for _ in range(int(rng.integers(4, 8))):
            rows.append((f"2024-{month:02d}-{int(rng.integers(2, 28)):02d}", "Transport", round(float(rng.uniform(8, 60)), 2)))
        for _ in range(int(rng.integers(2, 6))):
            rows.append((f"2024-{month:02d}-{int(rng.integers(2, 28)):02d}", "Entertainment", round(float(rng.uniform(15, 90)), 2)))
        if rng.random() < 0.7:
            rows.append((f"2024-{month:02d}-{int(rng.integers(2, 28)):02d}", "Health", round(float(rng.uniform(30, 200)), 2)))
    df = pd.DataFrame(rows, columns=["date", "category", "amount_eur"]).sort_values("date", kind="stable").reset_index(drop=True)
    write_xlsx({"2024H1": df}, "expenses.xlsx")


# --------------------------------------------------------------------------- 21/none penguins-like
def penguins():
    rng = np.random.default_rng(21)
    rows = []
    spec = {"Adelie": (38.8, 2.6, 190, 6.5, 3700, 450, 60), "Chinstrap": (48.8, 3.3, 196, 7.1, 3730, 380, 34),
            "Gentoo": (47.5, 3.0, 217, 6.5, 5080, 500, 50)}
    for sp, (bl, bls, fl, fls, bm, bms, n) in spec.items():
        b = rng.normal(bl, bls, n)
        f = fl + 0.9 * (b - bl) + rng.normal(0, fls, n)
        m = bm + 40 * (f - fl) + rng.normal(0, bms, n)
        for x, y, z in zip(b, f, m):
            rows.append((sp, round(float(x), 1), int(round(y)), int(round(z, -1))))
    df = pd.DataFrame(rows, columns=["species", "bill_length_mm", "flipper_length_mm", "body_mass_g"])
    df = df.sample(frac=1, random_state=21).reset_index(drop=True)
    df["bill_length_mm"] = df["bill_length_mm"].astype(float)
    df.loc[[5, 77], "bill_length_mm"] = np.nan
    write_csv(df, "penguins.csv")


# --------------------------------------------------------------------------- 22 deliveries
def deliveries():
    rng = np.random.default_rng(22)
    a = np.round(rng.gamma(2.2, 9.0, 180) + 6, 1)   # SwiftShip: right-skewed
    b = np.round(rng.normal(31, 6, 160), 1)          # ParcelPro
    rows = [("SwiftShip", x) for x in a] + [("ParcelPro", x) for x in b]
    order = rng.permutation(len(rows))
    df = pd.DataFrame([rows[i] for i in order], columns=["courier", "delivery_hours"])
    df.insert(0, "shipment", [f"SH{i:05d}" for i in range(len(df))])
    write_csv(df, "deliveries.csv")


# --------------------------------------------------------------------------- 23 daily visitors
def daily_visitors():
    rng = np.random.default_rng(23)
    dates = pd.date_range("2023-01-01", "2023-06-30", freq="D")
    t = np.arange(len(dates))
    weekly = np.where(dates.day_of_week >= 5, 1.35, 1.0)
    trend = 800 + 2.5 * t + 300 * np.exp(-((t - 120) / 6.0) ** 2)
    v = np.round(trend * weekly * (1 + rng.normal(0, 0.08, len(dates)))).astype(int)
    write_csv(pd.DataFrame({"date": dates.strftime("%Y-%m-%d"), "visitors": v}), "daily_visitors.csv")


# --------------------------------------------------------------------------- 24 orders log
def orders_log():
    rng = np.random.default_rng(24)
    start = pd.Timestamp("2023-03-06")  # a Monday
    hours = np.arange(24)
    hour_w = np.exp(-((hours - 13) / 4.5) ** 2) + 0.05
    day_w = np.array([1.0, 0.95, 1.0, 1.05, 1.25, 0.9, 0.7])
    w = np.outer(day_w, hour_w)
    w[4, 18] *= 4.5   # Friday 18:00 rush
    w = w / w.sum()
    n = 1600
    cells = rng.choice(7 * 24, size=n, p=w.ravel())
    rows = []
    for i, c in enumerate(cells):
        d, h = divmod(int(c), 24)
        week = int(rng.integers(0, 8))
        ts = start + pd.Timedelta(days=7 * week + d, hours=h, minutes=int(rng.integers(0, 60)), seconds=int(rng.integers(0, 60)))
        rows.append((ts, round(float(rng.gamma(2.0, 18.0)), 2)))
    rows.sort()
    df = pd.DataFrame({"order_id": np.arange(70001, 70001 + n), "created_at": [r[0].strftime("%Y-%m-%d %H:%M:%S") for r in rows],
                       "amount": [r[1] for r in rows]})
    write_csv(df, "orders_log.csv")


# --------------------------------------------------------------------------- 25 server latency json
def server_latency():
    rng = np.random.default_rng(25)
    recs = []
    spec = {"api-1": ("n", 120, 18), "api-2": ("skew", 70, 0), "api-3": ("n", 96, 6), "api-4": ("n", 140, 25), "api-5": ("n", 110, 12)}
    for s, (kind, mu, sd) in spec.items():
        if kind == "n":
            vals = rng.normal(mu, sd, 80)
        else:  # low median, heavy tail -> highest median rank good, mean bad
            vals = np.concatenate([rng.normal(mu, 6, 68), rng.normal(260, 40, 12)])
        for v in vals:
            recs.append({"server": s, "latency_ms": round(float(max(v, 5)), 1)})
    order = rng.permutation(len(recs))
    write_json([recs[i] for i in order], "server_latency.json")


# --------------------------------------------------------------------------- 26 house prices xlsx
def house_prices():
    rng = np.random.default_rng(26)
    rows = []
    spec = {"Riverside": (420, 60, 45), "Old Town": (380, 35, 50), "Hillcrest": (510, 110, 40), "Harbor": (450, 50, 44)}
    for nb, (mu, sd, n) in spec.items():
        vals = rng.normal(mu, sd, n)
        if nb == "Old Town":  # narrow IQR, but two extreme outliers -> largest range
            vals[:2] = [95, 990]
        for v in vals:
            rows.append((nb, round(float(v), 1), int(rng.integers(1, 6))))
    order = rng.permutation(len(rows))
    df = pd.DataFrame([rows[i] for i in order], columns=["neighbourhood", "price_k_eur", "bedrooms"])
    write_xlsx({"Listings": df}, "house_prices.xlsx")


# --------------------------------------------------------------------------- 27 likert survey
def likert():
    rng = np.random.default_rng(27)
    levels = ["Strongly disagree", "Disagree", "Neutral", "Agree", "Strongly agree"]
    probs = {"18-29": [0.05, 0.10, 0.20, 0.30, 0.35], "30-44": [0.08, 0.15, 0.25, 0.32, 0.20],
             "45-59": [0.12, 0.20, 0.28, 0.25, 0.15], "60+": [0.20, 0.25, 0.25, 0.20, 0.10]}
    sizes = {"18-29": 140, "30-44": 180, "45-59": 120, "60+": 90}
    rows = []
    for g, p in probs.items():
        for r in rng.choice(levels, sizes[g], p=p):
            rows.append((g, r))
    order = rng.permutation(len(rows))
    df = pd.DataFrame([rows[i] for i in order], columns=["age_group", "response"])
    df.insert(0, "respondent", np.arange(1, len(df) + 1))
    write_csv(df, "likert_survey.csv")


# --------------------------------------------------------------------------- 28 downloads json
def downloads():
    rng = np.random.default_rng(28)
    days = pd.date_range("2024-01-01", periods=75, freq="D")
    vals = np.round(90 + 2.6 * np.arange(75) + rng.normal(0, 20, 75)).astype(int)
    write_json({"app": "TrailMapper", "platform": "android",
                "daily": [{"day": d.strftime("%Y-%m-%d"), "downloads": int(v)} for d, v in zip(days, vals)]}, "downloads.json")


# --------------------------------------------------------------------------- 29 server log txt
def server_log():
    rng = np.random.default_rng(29)
    msgs = {
        "INFO": ["user login ok", "request served in {n} ms", "cache refreshed", "job {n} finished",
                 "error rate back to normal", "health check passed"],
        "DEBUG": ["payload size {n} bytes", "opening connection pool", "query plan cached"],
        "WARN": ["slow query took {n} ms", "retrying after error code 502", "disk usage at {n}%"],
        "ERROR": ["database connection lost", "failed to write file /var/data/{n}.bin", "unhandled exception in worker {n}"],
    }
    level_p = {"INFO": 0.58, "DEBUG": 0.2, "WARN": 0.13, "ERROR": 0.09}
    t = pd.Timestamp("2024-03-01 08:00:00")
    lines = []
    for _ in range(320):
        lvl = rng.choice(list(level_p), p=list(level_p.values()))
        m = str(rng.choice(msgs[lvl])).replace("{n}", str(int(rng.integers(10, 999))))
        t += pd.Timedelta(seconds=int(rng.integers(1, 90)))
        lines.append(f"{t:%Y-%m-%d %H:%M:%S} [{lvl}] {m}")
    write_text("\n".join(lines) + "\n", "server.log")


# --------------------------------------------------------------------------- 30 sensor readings
def sensor_readings():
    rng = np.random.default_rng(30)
    n = 500
    ts = pd.date_range("2024-05-01", periods=n, freq="h")
    df = pd.DataFrame({
        "timestamp": ts.strftime("%Y-%m-%d %H:%M"),
        "temperature_c": np.round(rng.normal(18, 4, n), 2),
        "humidity_pct": np.round(np.clip(100 - rng.gamma(3, 9, n), 5, 100), 1),
        "pressure_hpa": np.round(rng.normal(1013, 6, n), 1),
        "wind_speed_ms": np.round(rng.lognormal(1.0, 0.6, n), 2),
    })
    write_csv(df, "sensor_readings.csv")


# --------------------------------------------------------------------------- 31 org json
def org_json():
    write_json({"organization": {"name": "Northwind Trails", "founded": 2011,
                                 "homepage": "https://northwind-trails.example.org/",
                                 "contact": {"email": "hello@northwind-trails.example.org", "phone": "+44 20 7946 0011"}}},
               "org.json")


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for fn in [fruit_sales, quarterly_region, energy_mix, daily_weather, stock_prices, survey_os, ad_sales, employees,
               class_scores, housing_features, web_traffic, reviews_txt, product_reviews, wifi_json, link_txt, transactions,
               store_sales, countries_json, expenses, penguins, deliveries, daily_visitors, orders_log, server_latency,
               house_prices, likert, downloads, server_log, sensor_readings, org_json]:
        fn()
    print("wrote", len(list(OUT.iterdir())), "files to", OUT)


if __name__ == "__main__":
    main()
