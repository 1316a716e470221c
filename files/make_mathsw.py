"""Writes the input files of the `math` and `software` groups into files/math/ and files/software/.

Deterministic: fixed seeds, standard library only, no timestamps. Run from any cwd.
"""
import csv
import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
MATH = HERE / "math"
SOFTWARE = HERE / "software"


def write_ode() -> None:
    """math-04: a forced, damped oscillator described in JSON (names of parameters not given in the query)."""
    spec = {
        "description": "forced damped oscillator",
        "equation": "x'' + c*x' + k*x = F0*cos(omega*t)",
        "parameters": {"c": 0.4, "k": 4.0, "F0": 1.5, "omega": 1.2},
        "initial_conditions": {"t0": 0.0, "x0": 1.0, "v0": -0.5},
        "time_unit": "s",
    }
    (MATH / "ode.json").write_text(json.dumps(spec, indent=2) + "\n", encoding="utf-8")


def write_matrix() -> None:
    """math-06: a 6x6 symmetric matrix, semicolon-separated, with a label column and header.

    One strongly negative diagonal entry makes the dominant eigenvalue (largest |lambda|) negative,
    so taking the algebraic maximum gives a different answer.
    """
    rng = random.Random(606)
    n = 6
    labels = [f"s{i + 1}" for i in range(n)]
    a = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(i, n):
            if i == j:
                value = round(rng.uniform(1.0, 4.0), 2)
            else:
                value = round(rng.uniform(-2.0, 2.0), 2)
            a[i][j] = a[j][i] = value
    a[3][3] = -9.35
    with open(MATH / "matrix.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, delimiter=";")
        writer.writerow(["state"] + labels)
        for label, row in zip(labels, a):
            writer.writerow([label] + [f"{v:.2f}" for v in row])


def write_people() -> None:
    """software-01: a small CSV with ints, decimals, empty fields, quoted commas and non-ASCII names."""
    rows = [
        ["id", "name", "city", "age", "height_m", "member_since", "notes"],
        ["1", "Alice Martin", "Lyon", "34", "1.68", "2019", ""],
        ["2", "Bob Okafor", "Lagos", "41", "1.82", "2015", "prefers email"],
        ["3", "Chloé Dubois", "Paris", "", "1.59", "2021", "moved, new address pending"],
        ["4", "Dmitri Ivanov", "Riga", "29", "", "2020", ""],
        ["5", "Eun-ji Park", "Busan", "52", "1.63", "", "VIP"],
        ["6", "Farid Haddad", "Tunis", "38", "1.77", "2018", "two accounts, merged"],
        ["7", "Greta Nilsson", "Malmö", "23", "1.71", "2023", ""],
        ["8", "Hugo Silva", "Porto", "45", "1.80", "2012", "call after 6pm"],
        ["9", "Ines Costa", "", "31", "1.66", "2022", ""],
        ["10", "Jamal Reed", "Leeds", "60", "1.75", "2009", "retired"],
    ]
    with open(SOFTWARE / "people.csv", "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)


def write_sales() -> None:
    """software-03: monthly sales per region in long format, rows shuffled."""
    rng = random.Random(303)
    regions = {"North": 1.0, "South": 0.8, "East": 1.25, "West": 0.95, "Central": 0.6, "Online": 1.45}
    rows = []
    for month in range(1, 13):
        for region, scale in regions.items():
            units = int(rng.randint(80, 220) * scale)
            price = rng.uniform(18.0, 26.0)
            rows.append([f"2023-{month:02d}", region, units, f"{units * price:.2f}"])
    rng.shuffle(rows)
    with open(SOFTWARE / "sales_2023.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["month", "region", "units_sold", "revenue_usd"])
        writer.writerows(rows)


GUIDE = """# Field Guide to the Lab Wiki

Welcome to the **lab wiki**. This page explains how we *write* notes,
how we link them and where the `templates` live.

## Getting started

Every note starts with a title line and a short summary.
Keep summaries under 3 lines & avoid jargon.

- Create a page from the **daily** template
- Link related pages, e.g. [the index](https://wiki.example.org/index)
- Tag the page with `#draft` until it is reviewed

## Conventions

### Units

Use SI units; write 5 < x < 10 rather than prose.

### Code

Inline code such as `pip install -r requirements.txt` goes in backticks.
See [style rules](https://wiki.example.org/style) for *everything* else.
"""


def write_guide() -> None:
    """software-04: the Markdown file the agent converts with its own converter."""
    (SOFTWARE / "guide.md").write_text(GUIDE, encoding="utf-8")


def main() -> None:
    MATH.mkdir(parents=True, exist_ok=True)
    SOFTWARE.mkdir(parents=True, exist_ok=True)
    write_ode()
    write_matrix()
    write_people()
    write_sales()
    write_guide()


if __name__ == "__main__":
    main()
