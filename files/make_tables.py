"""Deterministic generator for the `tables` group input files.

Run from any directory:  python make_tables.py
Writes every input file into files/tables/ next to this script. Fixed seeds, no network,
no timestamps inside the files (xlsx zips are rewritten with a fixed date).
"""
import csv
import datetime as dt
import io
import json
import math
import re
import zipfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE / "tables"
FIXED_ZIP_TIME = (2024, 1, 1, 0, 0, 0)
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


# ----------------------------------------------------------------------------- helpers
def write_csv(name, header, rows, delimiter=",", encoding="utf-8"):
    path = OUT / name
    with open(path, "w", newline="", encoding=encoding) as fh:
        w = csv.writer(fh, delimiter=delimiter, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def write_xlsx(name, sheets):
    """sheets: list of (sheet_name, header or None, rows). Output zip is made byte-stable."""
    from openpyxl import Workbook

    wb = Workbook()
    wb.remove(wb.active)
    for title, header, rows in sheets:
        ws = wb.create_sheet(title)
        if header:
            ws.append(header)
        for r in rows:
            ws.append(list(r))
    fixed = dt.datetime(2024, 1, 1)
    wb.properties.created = fixed
    wb.properties.modified = fixed
    wb.properties.creator = "tables generator"
    buf = io.BytesIO()
    wb.save(buf)
    src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == "docProps/core.xml":
                text = data.decode("utf-8")
                text = re.sub(r"(<dcterms:(created|modified)[^>]*>)[^<]*(</dcterms:\2>)",
                              r"\g<1>2024-01-01T00:00:00Z\g<3>", text)
                data = text.encode("utf-8")
            zi = zipfile.ZipInfo(info.filename, date_time=FIXED_ZIP_TIME)
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = 0o600 << 16
            dst.writestr(zi, data)
    (OUT / name).write_bytes(out.getvalue())


def fmt_de(x, decimals=2):
    """1234567.891 -> '1.234.567,89' (German number format)."""
    s = f"{x:,.{decimals}f}"
    return s.replace(",", "_").replace(".", ",").replace("_", ".")


FIRST = ["Emma", "Liam", "Olivia", "Noah", "Ava", "Lucas", "Mia", "Leo", "Sofia", "Elias", "Nora", "Oscar", "Ella",
         "Hugo", "Alma", "Felix", "Ida", "Max", "Clara", "Jonas", "Freya", "Isak", "Maja", "Anton", "Lea", "Theo",
         "Mila", "Adam", "Iris", "Victor", "Luna", "Otto", "Wilma", "Emil", "Sara", "Jakob", "Selma", "Filip",
         "Ronja", "Axel"]
LAST = ["Berg", "Lund", "Strand", "Holm", "Dahl", "Vik", "Moen", "Sand", "Lie", "Haug", "Brekke", "Eide", "Nilsen",
        "Bakke", "Aas", "Ruud", "Foss", "Hansen", "Karlsen", "Solberg", "Lien", "Tveit", "Myhre", "Hagen"]


def unique_names(rng, n):
    pool = [f"{f} {l}" for f in FIRST for l in LAST]
    idx = rng.permutation(len(pool))[:n]
    return [pool[i] for i in idx]


# ----------------------------------------------------------------------------- sales_2023.csv
def make_sales():
    rng = np.random.default_rng(101)
    products = [
        ("Wireless Mouse", "Electronics", 24.99), ("USB-C Hub", "Electronics", 39.90),
        ("Webcam HD", "Electronics", 59.00), ("Bluetooth Speaker", "Electronics", 79.50),
        ("Notebook A5", "Office", 3.49), ("Gel Pen Pack", "Office", 6.99),
        ("Desk Organizer", "Office", 18.75), ("Stapler", "Office", 9.95),
        ("Coffee Mug", "Home", 8.50), ("Desk Lamp", "Home", 34.00),
        ("Plant Pot", "Home", 12.25), ("Throw Pillow", "Home", 21.00),
    ]
    regions = ["North", "South", "East", "West"]
    pref = {r: rng.dirichlet(np.full(len(products), 1.3)) for r in regions}
    n = 1150
    rows = []
    start = dt.date(2023, 1, 1)
    for i in range(n):
        oid = f"SO-{10001 + i}"
        day = start + dt.timedelta(days=int(rng.integers(0, 365)))
        f = rng.choice(3, p=[0.6, 0.25, 0.15])
        if f == 0:
            ds = day.isoformat()
        elif f == 1:
            ds = f"{MONTHS[day.month - 1]} {day.day:02d}, {day.year}"
        else:
            ds = f"{day.year}/{day.month:02d}/{day.day:02d}"
        region = regions[int(rng.integers(0, 4))]
        p = int(rng.choice(len(products), p=pref[region]))
        name, cat, base = products[p]
        disc = float(rng.choice([0, 0, 0, 0.05, 0.10]))
        price = round(base * (1 - disc), 2)
        units = int(rng.integers(1, 21))
        region_s = "" if rng.random() < 0.025 else region
        units_s = "" if rng.random() < 0.025 else str(units)
        rows.append([oid, ds, region_s, name, cat, units_s, f"{price:.2f}"])
    order = rng.permutation(n)
    rows = [rows[i] for i in order]
    dups = rng.choice(n, size=45, replace=False)
    for d in sorted(dups, reverse=True):
        pos = int(rng.integers(0, len(rows)))
        rows.insert(pos, list(rows[d]))
    write_csv("sales_2023.csv", ["order_id", "order_date", "region", "product", "category", "units", "unit_price"], rows)


# ----------------------------------------------------------------------------- weather_2022.csv
def make_weather():
    rng = np.random.default_rng(202)
    cities = {"Bergen": (9.5, 7.0), "Madrid": (20.5, 10.5), "Vienna": (15.0, 11.0)}
    rain = {  # (probability of rain, gamma scale) normal / July
        "Bergen": ((0.62, 6.0), (0.40, 4.0)),
        "Madrid": ((0.18, 5.0), (0.06, 3.0)),
        "Vienna": ((0.33, 4.5), (0.45, 9.0)),
    }
    days = [dt.date(2022, 1, 1) + dt.timedelta(days=i) for i in range(365)]
    series = {}
    for c, (mean, amp) in cities.items():
        noise = 0.0
        vals = []
        for d in days:
            doy = d.timetuple().tm_yday
            noise = 0.7 * noise + rng.normal(0, 1.8)
            tmax = mean - amp * math.cos(2 * math.pi * (doy - 20) / 365) + noise
            tmin = tmax - rng.uniform(5, 10)
            p, s = rain[c][1] if d.month == 7 else rain[c][0]
            pr = rng.gamma(1.3, s) if rng.random() < p else 0.0
            vals.append((tmax, tmin, pr))
        series[c] = vals
    rows = []
    for i, d in enumerate(days):
        for c in cities:
            tmax, tmin, pr = series[c][i]
            tmin_s = "" if rng.random() < 0.025 else f"{tmin:.1f}"
            pr_s = "" if rng.random() < 0.01 else f"{pr:.1f}"
            rows.append([d.isoformat(), c, f"{tmax:.1f}", tmin_s, pr_s])
    write_csv("weather_2022.csv", ["date", "city", "temp_max_c", "temp_min_c", "precip_mm"], rows)


# ----------------------------------------------------------------------------- housing.csv
def make_housing():
    rng = np.random.default_rng(303)
    nbh = [("Old Town", 5200, 1.2), ("Harbor View", 4700, 3.0), ("Riverside", 3900, 4.8),
           ("Hillcrest", 3500, 7.0), ("Elm Park", 2900, 9.5), ("Northgate", 2400, 12.5)]
    rows = []
    for i in range(600):
        name, ppm2, dist0 = nbh[int(rng.integers(0, len(nbh)))]
        area = int(np.clip(rng.normal(92, 28), 32, 220))
        bedrooms = int(np.clip(round(area / 30 + rng.normal(0, 0.7)), 1, 6))
        age = int(rng.integers(0, 71))
        dist = round(float(np.clip(dist0 + rng.normal(0, 1.2), 0.3, 20)), 1)
        price = area * ppm2 * (1 - 0.003 * age) + 9000 * bedrooms + rng.normal(0, 22000)
        price = int(round(price / 100) * 100)
        rows.append([f"H{1001 + i}", name, area, bedrooms, age, dist, price])
    write_csv("housing.csv", ["house_id", "neighborhood", "area_m2", "bedrooms", "age_years", "distance_km", "price_eur"], rows)


# ----------------------------------------------------------------------------- flights.json
def make_flights():
    rng = np.random.default_rng(404)
    carriers = {  # code, scale of delay tail, share delayed, cancel rate
        "Aurora Air": ("AU", 22.0, 0.45, 0.02),
        "BlueFjord": ("BF", 18.0, 0.42, 0.03),
        "Coastal Wings": ("CW", 28.0, 0.50, 0.03),
        "Skylark Express": ("SX", 20.5, 0.44, 0.20),
    }
    routes = [("OSL", "BGO", 305), ("BGO", "OSL", 305), ("OSL", "TRD", 390), ("TRD", "OSL", 390),
              ("OSL", "SVG", 300), ("SVG", "OSL", 300), ("OSL", "TOS", 1115), ("TOS", "OSL", 1115),
              ("BGO", "TRD", 430), ("BGO", "SVG", 160)]
    recs = []
    names = list(carriers)
    for i in range(680):
        c = names[int(rng.integers(0, 4))]
        code, scale, share, canc = carriers[c]
        o, d, km = routes[int(rng.integers(0, len(routes)))]
        day = dt.date(2023, 6, 1) + dt.timedelta(days=int(rng.integers(0, 30)))
        cancelled = bool(rng.random() < canc)
        if cancelled:
            delay = {"departure_min": None, "arrival_min": None}
        else:
            dep = rng.exponential(scale) if rng.random() < share else rng.normal(-1, 3)
            dep = int(round(dep))
            arr = int(round(0.93 * dep - 4 + 0.006 * km + rng.normal(0, 5)))
            delay = {"departure_min": dep, "arrival_min": arr}
        recs.append({"flight": f"{code}{int(rng.integers(100, 999))}", "carrier": c, "date": day.isoformat(),
                     "route": {"origin": o, "destination": d, "distance_km": km},
                     "delay": delay, "cancelled": cancelled})
    recs.sort(key=lambda r: (r["date"], r["flight"]))
    body = ",\n".join("  " + json.dumps(r, ensure_ascii=False) for r in recs)
    text = '{"airline_group": "Nordic Regional", "month": "2023-06", "flights": [\n' + body + "\n]}\n"
    (OUT / "flights.json").write_text(text, encoding="utf-8")


# ----------------------------------------------------------------------------- churn.csv
def make_churn():
    rng = np.random.default_rng(505)
    rows = []
    effect = {"Month-to-month": 0.8, "One year": -0.4, "Two year": -1.2}
    for i in range(1000):
        tenure = int(rng.integers(1, 73))
        charges = round(float(rng.uniform(20, 120)), 2)
        contract = str(rng.choice(list(effect), p=[0.5, 0.3, 0.2]))
        calls = int(rng.poisson(1.6))
        logit = 1.6 - 0.09 * tenure + 0.045 * (charges - 70) + 0.9 * (calls - 1.6) + effect[contract]
        churn = rng.random() < 1 / (1 + math.exp(-logit))
        ch_s = "" if rng.random() < 0.04 else f"{charges:.2f}"
        rows.append([f"CU{20001 + i}", tenure, ch_s, contract, calls, "Yes" if churn else "No"])
    write_csv("churn.csv", ["customer_id", "tenure_months", "monthly_charges", "contract", "support_calls", "churned"], rows)


# ----------------------------------------------------------------------------- mall_customers.csv
def make_mall():
    rng = np.random.default_rng(606)
    centers = [(26, 20), (26, 80), (55, 50), (87, 18), (87, 82)]
    rows = []
    for k, (ci, cs) in enumerate(centers):
        for _ in range(44):
            inc = int(round(np.clip(rng.normal(ci, 5.5), 12, 140)))
            sc = int(round(np.clip(rng.normal(cs, 7), 1, 99)))
            rows.append([inc, sc])
    order = rng.permutation(len(rows))
    out = []
    for j, i in enumerate(order):
        inc, sc = rows[i]
        out.append([f"M{301 + j}", str(rng.choice(["Female", "Male"])), int(rng.integers(18, 70)), inc, sc])
    write_csv("mall_customers.csv", ["customer_id", "gender", "age", "annual_income_k", "spending_score"], out)


# ----------------------------------------------------------------------------- patients.csv
def make_patients():
    rng = np.random.default_rng(707)
    rows = []
    for i in range(700):
        age = int(rng.integers(21, 81))
        bmi = round(float(np.clip(rng.normal(30, 6), 17, 55)), 1)
        glucose = int(np.clip(rng.normal(120, 28), 60, 220))
        bp = int(np.clip(rng.normal(72, 11), 40, 120))
        pos = glucose > 145 or (glucose > 115 and bmi > 33)
        if rng.random() < 0.06:
            pos = not pos
        rows.append([f"P{5001 + i}", age, bmi, glucose, bp, int(pos)])
    write_csv("patients.csv", ["patient_id", "age", "bmi", "glucose", "blood_pressure", "diabetic"], rows)


# ----------------------------------------------------------------------------- fruit.xlsx
def make_fruit():
    rng = np.random.default_rng(808)
    spec = {  # weight_g, diameter_cm, sugar_brix, color_hue
        "apple": ((170, 25), (7.4, 0.6), (13.0, 1.5), (20, 14)),
        "orange": ((195, 28), (8.1, 0.7), (11.0, 1.4), (32, 5)),
        "pear": ((180, 25), (6.9, 0.6), (12.0, 1.5), (78, 12)),
        "lemon": ((110, 18), (6.0, 0.5), (3.0, 1.0), (55, 6)),
    }

    def draw(n):
        rows = []
        for _ in range(n):
            f = str(rng.choice(list(spec)))
            (w, ws), (d, ds), (s, ss), (h, hs) = spec[f]
            rows.append([round(float(rng.normal(w, ws)), 1), round(float(rng.normal(d, ds)), 2),
                         round(float(rng.normal(s, ss)), 1), int(round(rng.normal(h, hs))), f])
        return rows

    about = [["Fruit grading line, sensor export"], ["Sheet 'train': labelled measurements for model training"],
             ["Sheet 'test': held-out labelled measurements"], ["color_hue is the dominant hue angle in degrees"]]
    header = ["weight_g", "diameter_cm", "sugar_brix", "color_hue", "fruit"]
    write_xlsx("fruit.xlsx", [("about", None, about), ("train", header, draw(320)), ("test", header, draw(120))])


# ----------------------------------------------------------------------------- used_cars.csv
def make_cars():
    rng = np.random.default_rng(909)
    brands = {"Toyota": 6000, "Volkswagen": 4000, "Honda": 5000, "BYD": 0, "Ford": -2000, "Hyundai": -1000}
    rows = []
    for i in range(450):
        b = str(rng.choice(list(brands)))
        year = int(rng.integers(2008, 2023))
        km = int(max(1500, (2023 - year) * rng.normal(13000, 3500)))
        km = int(round(km / 100) * 100)
        eng = float(rng.choice([1.0, 1.2, 1.4, 1.5, 1.6, 1.8, 2.0, 2.5, 3.0], p=[.08, .12, .16, .16, .16, .1, .12, .06, .04]))
        price = 20000 + 7500 * (year - 2008) - 0.14 * km + 36000 * eng + brands[b] + rng.normal(0, 7000)
        price = int(round(price / 100) * 100)
        km_s = f"{km:,} km" if rng.random() < 0.85 else f"{km}km"
        eng_s = f"{eng:.1f}L" if rng.random() < 0.8 else f"{eng:.1f} L"
        rows.append([f"UC{7001 + i}", b, year, km_s, eng_s, price])
    write_csv("used_cars.csv", ["listing_id", "brand", "year", "mileage", "engine", "price_cny"], rows)


# ----------------------------------------------------------------------------- students.xlsx
def make_students():
    rng = np.random.default_rng(1010)
    n = 120
    names = unique_names(rng, n)
    classes = ["3A"] * 40 + ["3B"] * 40 + ["3C"] * 40
    classes = [classes[i] for i in rng.permutation(n)]
    ids = [f"S{i + 1:03d}" for i in range(n)]
    shift = {"3A": 0, "3B": 3, "3C": -4}
    math_s, phys_s = {}, {}
    for sid, c in zip(ids, classes):
        m = int(np.clip(round(rng.normal(70 + shift[c], 13)), 20, 100))
        p = int(np.clip(round(0.6 * m + 0.4 * rng.normal(68, 14) + rng.normal(0, 6)), 15, 100))
        math_s[sid], phys_s[sid] = m, p
    # a few scores of exactly 60 (borderline) and missing physics scores, incl. strong 3B students
    b_ids = [s for s, c in zip(ids, classes) if c == "3B"]
    a_ids = [s for s, c in zip(ids, classes) if c == "3A"]
    math_s[a_ids[3]] = 60
    phys_s[b_ids[5]] = 60
    phys_s[a_ids[8]] = 60
    missing = [b_ids[0], b_ids[1], b_ids[2], a_ids[0], a_ids[1], [s for s, c in zip(ids, classes) if c == "3C"][0]]
    math_s[b_ids[0]], math_s[b_ids[1]], math_s[b_ids[2]] = 97, 94, 91
    math_s[a_ids[0]] = 55  # absent from physics and failing math
    info = [[sid, nm, c] for sid, nm, c in zip(ids, names, classes)]
    m_rows = [[sid, math_s[sid]] for sid in ids]
    m_rows = [m_rows[i] for i in rng.permutation(n)]
    p_rows = [[sid, phys_s[sid]] for sid in ids if sid not in missing]
    p_rows = [p_rows[i] for i in rng.permutation(len(p_rows))]
    write_xlsx("students.xlsx", [("info", ["student_id", "name", "class"], info),
                                 ("math", ["student_id", "score"], m_rows),
                                 ("physics", ["student_id", "score"], p_rows)])


# ----------------------------------------------------------------------------- employees.csv + departments.json
def make_employees():
    rng = np.random.default_rng(1111)
    depts = [("ENG", "Engineering", "Oslo", 36, 88000, 9000), ("SAL", "Sales", "Stockholm", 30, 64000, 11000),
             ("MKT", "Marketing", "Copenhagen", 20, 67000, 8000), ("FIN", "Finance", "Oslo", 20, 79000, 7000),
             ("HR", "Human Resources", "Helsinki", 14, 61000, 6000), ("OPS", "Operations", "Gothenburg", 30, 58000, 7000)]
    names = unique_names(rng, 150)
    rows = []
    k = 0
    for code, _, _, count, mu, sd in depts:
        for j in range(count):
            sal = int(round(rng.normal(mu, sd) / 100) * 100)
            if code == "FIN" and j < 3:
                sal = [198000, 214000, 226000][j]
            hired = dt.date(2012, 1, 1) + dt.timedelta(days=int(rng.integers(0, 4000)))
            rows.append([None, names[k], code, hired.isoformat(), sal])
            k += 1
    order = rng.permutation(len(rows))
    rows = [rows[i] for i in order]
    out = []
    for i, (_, nm, code, hired, sal) in enumerate(rows):
        c = code
        r = rng.random()
        if r < 0.06:
            c = code.lower()
        elif r < 0.10:
            c = f" {code}"
        if code == "FIN" and sal > 190000 and sal < 200000:
            c = "fin"
        s = f"${sal:,}" if rng.random() < 0.7 else str(sal)
        out.append([f"E{1001 + i}", nm, c, hired, s])
    write_csv("employees.csv", ["emp_id", "name", "dept_code", "hire_date", "salary"], out)
    dj = {"departments": [{"code": code, "name": name, "location": loc, "budget_eur": int(count * mu * 1.35 // 1000 * 1000)}
                          for code, name, loc, count, mu, _ in depts]}
    (OUT / "departments.json").write_text(json.dumps(dj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


# ----------------------------------------------------------------------------- stores_de.csv (latin-1, ';', decimal comma)
def make_stores():
    rng = np.random.default_rng(1212)
    states = {
        "Bayern": ["München", "Nürnberg", "Augsburg", "Würzburg", "Regensburg", "Fürth"],
        "Nordrhein-Westfalen": ["Köln", "Düsseldorf", "Münster", "Dortmund", "Essen", "Mönchengladbach"],
        "Baden-Württemberg": ["Stuttgart", "Tübingen", "Freiburg im Breisgau", "Karlsruhe", "Göppingen"],
        "Niedersachsen": ["Hannover", "Göttingen", "Osnabrück", "Lüneburg"],
        "Schleswig-Holstein": ["Lübeck", "Kiel"],
        "Hamburg": ["Hamburg"], "Berlin": ["Berlin"],
        "Hessen": ["Frankfurt am Main", "Gießen", "Wiesbaden"],
        "Saarland": ["Saarbrücken"], "Sachsen": ["Leipzig", "Dresden", "Görlitz"],
    }
    pairs = [(s, c) for s, cs in states.items() for c in cs]
    rows = []
    for i in range(90):
        s, c = pairs[i % len(pairs)] if i < len(pairs) else pairs[int(rng.integers(0, len(pairs)))]
        staff = int(rng.integers(6, 48))
        umsatz = staff * rng.normal(68000, 12000) + rng.normal(150000, 60000)
        flaeche = round(float(staff * rng.uniform(22, 40)), 1)
        opened = dt.date(1995, 1, 1) + dt.timedelta(days=int(rng.integers(0, 10000)))
        rows.append([f"DE-{i + 1:03d}", c, s, fmt_de(umsatz, 2), staff, fmt_de(flaeche, 1), opened.strftime("%d.%m.%Y")])
    order = rng.permutation(len(rows))
    rows = [rows[i] for i in order]
    write_csv("stores_de.csv", ["Filiale", "Stadt", "Bundesland", "Umsatz (EUR)", "Mitarbeiter", "Fläche (m²)", "Eröffnet"],
              rows, delimiter=";", encoding="latin-1")


# ----------------------------------------------------------------------------- inventory.tsv (latin-1, tab)
def make_inventory():
    rng = np.random.default_rng(1313)
    items = [
        ("Café moulu", "Épicerie", ["250 g", "500 g", "1 kg"], 4.2), ("Café en grains", "Épicerie", ["500 g", "1 kg"], 8.9),
        ("Thé vert", "Épicerie", ["20 sachets", "100 g"], 3.1), ("Chocolat noir 70 %", "Épicerie", ["100 g", "200 g"], 2.4),
        ("Sucre glace", "Épicerie", ["500 g", "1 kg"], 1.6), ("Farine T55", "Épicerie", ["1 kg", "5 kg"], 1.1),
        ("Crème fraîche", "Frais", ["20 cl", "50 cl"], 1.9), ("Beurre doux", "Frais", ["250 g", "500 g"], 2.7),
        ("Lait entier", "Frais", ["1 L", "6 x 1 L"], 1.2), ("Yaourt à la grecque", "Frais", ["4 x 125 g", "500 g"], 2.3),
        ("Pâte feuilletée", "Frais", ["230 g", "2 x 230 g"], 1.8), ("Fromage râpé", "Frais", ["200 g", "500 g"], 2.6),
        ("Pâté de campagne", "Traiteur", ["180 g", "350 g"], 3.4), ("Quiche lorraine", "Traiteur", ["400 g", "individuelle"], 4.5),
        ("Crêpes", "Boulangerie", ["x6", "x12"], 2.8), ("Madeleines", "Boulangerie", ["x12", "x24"], 3.2),
        ("Brioche tranchée", "Boulangerie", ["500 g"], 2.9), ("Éclair au café", "Pâtisserie", ["x2", "x4"], 3.9),
        ("Tarte aux pommes", "Pâtisserie", ["6 parts", "8 parts"], 7.5), ("Mille-feuille", "Pâtisserie", ["x2"], 4.1),
        ("Jus d'orange pressé", "Boissons", ["1 L", "25 cl"], 2.9), ("Bière blonde", "Boissons", ["33 cl", "6 x 25 cl"], 1.7),
        ("Eau gazeuse", "Boissons", ["50 cl", "1,5 L"], 0.7), ("Limonade artisanale", "Boissons", ["33 cl", "75 cl"], 2.2),
        ("Confiture d'abricot", "Épicerie", ["370 g"], 3.3), ("Miel de châtaignier", "Épicerie", ["250 g", "500 g"], 6.8),
        ("Crème brûlée", "Pâtisserie", ["x2", "x4"], 3.6), ("Gâteau basque", "Pâtisserie", ["individuel", "6 parts"], 5.2),
        ("Sel de Guérande", "Épicerie", ["250 g", "1 kg"], 2.1), ("Moutarde de Dijon", "Épicerie", ["210 g", "370 g"], 1.9),
        ("Huile d'olive vierge", "Épicerie", ["50 cl", "1 L"], 7.4), ("Riz de Camargue", "Épicerie", ["500 g", "1 kg"], 2.5),
        ("Pain de mie complet", "Boulangerie", ["500 g"], 2.0), ("Croissants surgelés", "Surgelés", ["x10", "x20"], 4.8),
        ("Glace vanille", "Surgelés", ["500 mL", "1 L"], 4.3), ("Épinards hachés", "Surgelés", ["600 g"], 2.2),
        ("Frites allumettes", "Surgelés", ["1 kg", "2,5 kg"], 2.6), ("Poêlée de légumes", "Surgelés", ["750 g"], 3.1),
        ("Crème dessert caramel", "Frais", ["4 x 125 g"], 1.8), ("Œuf bio", "Frais", ["x6", "x12"], 2.4),
    ]
    rows = []
    k = 0
    for name, cat, sizes, price in items:
        name = name.replace("Œuf", "Oeufs")  # Œ is not in latin-1
        for s in sizes:
            level = int(rng.integers(8, 41))
            r = rng.random()
            if r < 0.22:
                stock = int(rng.integers(0, level))
            elif r < 0.30:
                stock = level
            else:
                stock = int(level + rng.integers(1, 90))
            p = price * (1 + 0.9 * (sizes.index(s)))
            k += 1
            rows.append([f"R-{k:04d}", f"{name} {s}", cat, stock, level, f"{p:.2f}".replace(".", ",")])
    order = rng.permutation(len(rows))
    rows = [rows[i] for i in order]
    write_csv("inventory.tsv", ["réf", "produit", "catégorie", "stock", "seuil_réappro", "prix_unitaire"], rows,
              delimiter="\t", encoding="latin-1")


# ----------------------------------------------------------------------------- energy_hourly.csv
def make_energy():
    rng = np.random.default_rng(1414)
    t0 = dt.datetime(2023, 1, 1)
    rows = []
    temp_noise = 0.0
    daily_temp = 0.0
    for h in range(90 * 24):
        t = t0 + dt.timedelta(hours=h)
        if t.hour == 0:
            daily_temp = 0.8 * daily_temp + rng.normal(0, 2.5)
        temp_noise = 0.6 * temp_noise + rng.normal(0, 0.6)
        temp = -1 + 0.07 * (h / 24) + daily_temp + 3.5 * math.sin(2 * math.pi * (t.hour - 9) / 24) + temp_noise
        workday = t.weekday() < 5
        profile = math.exp(-((t.hour - 13) / 4.0) ** 2)
        load = 210 + (150 if workday else 35) * profile - 4.5 * temp + rng.normal(0, 9)
        rows.append([t.strftime("%d.%m.%Y %H:%M"), f"{load:.1f}", f"{temp:.1f}"])
    write_csv("energy_hourly.csv", ["timestamp", "load_kw", "outdoor_temp_c"], rows)


# ----------------------------------------------------------------------------- orders.xlsx + customers.csv
def make_orders():
    rng = np.random.default_rng(1515)
    adj = ["Nordic", "Blue", "Golden", "Silver", "Green", "Polar", "Coastal", "Summit", "Bright", "Iron", "Maple", "Cedar", "Harbor", "Aspen"]
    noun = ["Bakery", "Logistics", "Studio", "Outfitters", "Foods", "Labs", "Works", "Traders", "Clinic", "Designs", "Garage", "Books"]
    pool = [f"{a} {b}" for a in adj for b in noun]
    pick = rng.permutation(len(pool))[:150]
    countries = ["Norway", "Sweden", "Denmark", "Finland", "Germany"]
    cust = []
    for i, j in enumerate(pick):
        country = countries[int(rng.integers(0, 5))]
        suf = {"Norway": "AS", "Sweden": "AB", "Denmark": "ApS", "Finland": "Oy", "Germany": "GmbH"}[country]
        seg = str(rng.choice(["Retail", "Wholesale", "Online"]))
        cust.append([f"C{i + 1:04d}", f"{pool[j]} {suf}", country, seg])
    write_csv("customers.csv", ["customer_id", "company", "country", "segment"], cust)
    activity = rng.gamma(1.2, 1.0, size=150)
    activity /= activity.sum()
    sheets = []
    oid = 50001
    for q in range(4):
        rows = []
        for _ in range(int(rng.integers(200, 240))):
            c = int(rng.choice(150, p=activity))
            month = 3 * q + int(rng.integers(1, 4))
            day = int(rng.integers(1, 29))
            amount = round(float(rng.lognormal(6.2, 0.7)), 2)
            status = str(rng.choice(["completed", "refunded", "cancelled"], p=[0.84, 0.08, 0.08]))
            rows.append((dt.date(2023, month, day), [f"O{oid}", cust[c][0], None, amount, status]))
            oid += 1
        rows.sort(key=lambda r: (r[0], r[1][0]))
        out = []
        for d, r in rows:
            r[2] = dt.datetime(d.year, d.month, d.day)
            out.append(r)
        sheets.append((f"Q{q + 1}", ["order_id", "customer_id", "order_date", "amount_eur", "status"], out))
    write_xlsx("orders_2023.xlsx", sheets)


# ----------------------------------------------------------------------------- survey.csv
def make_survey():
    rng = np.random.default_rng(1616)
    g_f = ["Female", "female", "F", "f", " Female", "FEMALE", "Female "]
    g_m = ["Male", "male", "M", "m", " male", "MALE", "Male "]
    g_u = ["", "Prefer not to say"]
    c_us = ["USA", "US", "U.S.", "United States", "united states", "usa "]
    c_ca = ["Canada", "canada", "CAN", " Canada"]
    c_uk = ["UK", "U.K.", "United Kingdom", "united kingdom", "Great Britain"]
    rows = []
    for i in range(420):
        r = rng.random()
        gender = str(rng.choice(g_f)) if r < 0.47 else (str(rng.choice(g_m)) if r < 0.94 else str(rng.choice(g_u)))
        r = rng.random()
        country = str(rng.choice(c_us)) if r < 0.5 else (str(rng.choice(c_ca)) if r < 0.75 else str(rng.choice(c_uk)))
        sat = int(rng.integers(1, 6))
        r = rng.random()
        sat_s = "" if r < 0.04 else ("N/A" if r < 0.07 else (f" {sat}" if r < 0.12 else str(sat)))
        rec_yes = rng.random() < (0.15 + 0.17 * sat)
        rec = str(rng.choice(["Yes", "yes", "Y", "y"])) if rec_yes else str(rng.choice(["No", "no", "N", "n"]))
        rows.append([f"R{i + 1:04d}", gender, int(rng.integers(18, 76)), country, sat_s, rec])
    dups = rng.choice(len(rows), size=14, replace=False)
    for d in sorted(dups, reverse=True):
        rows.insert(int(rng.integers(0, len(rows))), list(rows[d]))
    write_csv("survey.csv", ["respondent_id", "gender", "age", "country", "satisfaction", "would_recommend"], rows)


# ----------------------------------------------------------------------------- stock_prices.csv
def make_stocks():
    rng = np.random.default_rng(1717)
    holidays = {dt.date(2023, 1, 2), dt.date(2023, 4, 7), dt.date(2023, 4, 10), dt.date(2023, 5, 1),
                dt.date(2023, 5, 17), dt.date(2023, 12, 25), dt.date(2023, 12, 26), dt.date(2023, 6, 30)}
    days = [dt.date(2023, 1, 1) + dt.timedelta(days=i) for i in range(365)]
    days = [d for d in days if d.weekday() < 5 and d not in holidays]
    tickers = {"HZT": (42.0, 0.0006, 0.018), "QLN": (118.0, 0.0002, 0.012), "MXR": (9.5, -0.0003, 0.027)}
    rows = []
    for t, (p0, mu, sd) in tickers.items():
        p = p0
        for d in days:
            p *= math.exp(rng.normal(mu, sd))
            rows.append([d.isoformat(), t, f"{p:.2f}", int(rng.integers(20000, 900000))])
    write_csv("stock_prices.csv", ["date", "ticker", "close", "volume"], rows)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for f in (make_sales, make_weather, make_housing, make_flights, make_churn, make_mall, make_patients, make_fruit,
              make_cars, make_students, make_employees, make_stores, make_inventory, make_energy, make_orders,
              make_survey, make_stocks):
        f()
    for p in sorted(OUT.iterdir()):
        print(f"{p.name:24s} {p.stat().st_size:8d}")


if __name__ == "__main__":
    main()
