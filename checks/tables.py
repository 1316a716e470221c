"""Checks for the `tables` group (category: chart, non-plot data analysis over tables).

Each check recomputes what the task asks for from the read-only inputs in `data` and compares
the agent's answer / output files with it. Heavy libraries are imported inside the functions.
"""
import re
import warnings
from pathlib import Path

from common import assert_claim, assert_number, assert_stated, dates_in, output_file, read_table


# ----------------------------------------------------------------------------- shared helpers
def _cols(df):
    """Column names lower-cased and stripped (tables are compared by the names the query asked for)."""
    df = df.copy()
    df.columns = [str(c).strip().lower() for c in df.columns]
    return df


def _need(df, names, what):
    missing = [n for n in names if n not in df.columns]
    assert not missing, f"{what} lacks column(s) {', '.join(missing)} (has {', '.join(map(str, df.columns))})"


def _assert_named(answer, expected, options, what):
    """The answer puts expected forward as the `what` (first named, or first in bold) and does not list most candidates."""
    assert_claim(answer, expected, options, what)


def _close(a, b, tol):
    import math
    if a is None or b is None:
        return False
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return abs(float(a) - float(b)) <= tol


def _num_series(s):
    import pandas as pd
    return pd.to_numeric(s, errors="coerce")


def _load_model(output, name):
    import joblib

    path = output_file(output, name)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = joblib.load(path)
    except Exception as error:  # the check jail's unpickler refuses globals outside its allow-list: say which
        refused = f": {error}" if str(error).startswith("refused to load") else ""
        raise AssertionError(f"./output/{name} does not load with joblib ({type(error).__name__}{refused})") from None
    return model


def _final(model):
    from sklearn.pipeline import Pipeline

    return model.steps[-1][1] if isinstance(model, Pipeline) else model


def _assert_fitted(model, name):
    from sklearn.base import BaseEstimator
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    assert isinstance(model, BaseEstimator), f"./output/{name} holds a {type(model).__name__}, not a scikit-learn estimator"
    try:
        check_is_fitted(model)
    except NotFittedError:
        raise AssertionError(f"the model in ./output/{name} is not fitted") from None


def _predict(model, X):
    """Predict on X (DataFrame, columns in the order the query named), matching the model's own feature names."""
    import numpy as np

    names = getattr(model, "feature_names_in_", None)
    n_in = getattr(model, "n_features_in_", None)
    assert n_in is None or n_in == X.shape[1], f"the model expects {n_in} features, the task names {X.shape[1]}"
    Xin = X.set_axis(list(names), axis=1) if names is not None and len(names) == X.shape[1] else np.asarray(X, dtype=float)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.asarray(model.predict(Xin))
    except Exception as error:
        raise AssertionError(f"the model cannot predict on the {X.shape[1]} named features ({type(error).__name__})") from None


def _assert_least_squares(model, X, y, name, excluded=None):
    """The model predicts what the least-squares fit on all rows of X does: one fitted on a sample of the rows, on other
    columns or with other targets does not (a scaler in a pipeline or a tiny ridge penalty changes nothing). excluded:
    (what, X', y'), the data with the rows the query leaves out kept; a model nearer the fit on those fails (cancelled
    flights kept with delays of 0 move the fit by less than the 1 % allowed, but they move it)."""
    import numpy as np
    from sklearn.linear_model import LinearRegression

    def gap_to_fit(rows, target):
        reference = LinearRegression().fit(np.asarray(rows, dtype=float), target).predict(np.asarray(X, dtype=float))
        return float(np.abs(_predict(model, X) - reference).mean() / np.std(y))
    gap = gap_to_fit(X, y)
    assert gap <= 0.01, f"./output/{name} predicts {gap:.1%} of the target's spread away from the least-squares fit on all rows"
    if excluded:
        what, rows, target = excluded
        assert gap < gap_to_fit(rows, target), f"./output/{name} is the least-squares fit with {what}, not without them"


def _fills_like(model, fills: dict, y_of, wanted: str) -> str | None:
    """Which way of filling the data a copy of model (its settings, seed included) must be fitted on to predict what
    model does on all of them (all but 0.1 % of the predictions): the name in fills (name -> the filled features), or
    None where no copy does (the fill cannot be told) or wanted's copy does too (the fills change nothing here: the
    mean and the median of monthly_charges give the same predictions)."""
    import numpy as np
    from sklearn.base import clone

    names = getattr(model, "feature_names_in_", None)
    predictions = {key: _as_binary(_predict(model, rows)) for key, rows in fills.items()}
    reproduced = []
    for key, rows in fills.items():
        copy = clone(model)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                copy.fit(rows.set_axis(list(names), axis=1) if names is not None else np.asarray(rows, dtype=float), y_of(model))
        except Exception:  # a model that cannot be refitted here: its fill cannot be told
            return None
        differ = sum(int((_as_binary(_predict(copy, other)) != predictions[k]).sum()) for k, other in fills.items())
        if differ <= 0.001 * sum(len(rows) for rows in fills.values()):  # an unseeded forest's copy differs by 1 in 3,000
            reproduced.append(key)
    return None if wanted in reproduced or not reproduced else reproduced[0]


def _as_binary(pred):
    import numpy as np

    yes = {"1", "1.0", "yes", "true", "y"}
    return np.array([str(p).strip().lower() in yes for p in pred], dtype=int)


# ----------------------------------------------------------------------------- data loaders (expected values)
def _sales(data):
    import pandas as pd

    df = pd.read_csv(data / "sales_2023.csv").drop_duplicates()
    df["date"] = pd.to_datetime(df["order_date"], format="mixed")
    df["revenue"] = df["units"] * df["unit_price"]
    return df


def _weather(data):
    import pandas as pd

    df = pd.read_csv(data / "weather_2022.csv", parse_dates=["date"])
    return df


def _flights(data):
    import json

    import pandas as pd

    with open(data / "flights.json", encoding="utf-8") as fh:
        df = pd.json_normalize(json.load(fh)["flights"])
    return df


def _students(data):
    import pandas as pd

    x = pd.read_excel(data / "students.xlsx", sheet_name=None)
    df = (x["info"].merge(x["math"].rename(columns={"score": "math"}), on="student_id", how="left")
          .merge(x["physics"].rename(columns={"score": "physics"}), on="student_id", how="left"))
    return df


def _employees(data):
    import json

    import pandas as pd

    e = pd.read_csv(data / "employees.csv")
    e["code"] = e["dept_code"].str.strip().str.upper()
    e["salary_num"] = e["salary"].astype(str).str.replace(r"[$,\s]", "", regex=True).astype(float)
    with open(data / "departments.json", encoding="utf-8") as fh:
        d = pd.DataFrame(json.load(fh)["departments"])
    return e.merge(d.rename(columns={"code": "code", "name": "dept_name"}), on="code", how="left")


def _stores(data):
    import pandas as pd

    s = pd.read_csv(data / "stores_de.csv", sep=";", encoding="latin-1", dtype=str)
    s["umsatz"] = s["Umsatz (EUR)"].str.replace(".", "", regex=False).str.replace(",", ".", regex=False).astype(float)
    s["flaeche"] = s["Fläche (m²)"].str.replace(".", "", regex=False).str.replace(",", ".", regex=False).astype(float)
    s["mitarbeiter"] = s["Mitarbeiter"].astype(int)
    s["eroeffnet"] = pd.to_datetime(s["Eröffnet"], format="%d.%m.%Y").dt.strftime("%Y-%m-%d")
    return s


def _energy(data):
    import pandas as pd

    e = pd.read_csv(data / "energy_hourly.csv")
    e["ts"] = pd.to_datetime(e["timestamp"], format="%d.%m.%Y %H:%M")
    return e


# ============================================================================= tasks
def sales_total(answer: str, output: Path, data: Path) -> None:
    """Verifies: the answer states the 2023 revenue (sum of units x unit_price) after duplicate rows are removed (0.01%),
    and not also the totals of the usual wrong readings (duplicates kept, missing units imputed)."""
    import pandas as pd

    df = _sales(data)
    raw = pd.read_csv(data / "sales_2023.csv")
    others = [float((raw["units"].fillna(0) * raw["unit_price"]).sum()),  # duplicates kept
              float((df["units"].fillna(df["units"].mean()) * df["unit_price"]).sum())]  # units imputed
    assert_stated(answer, float(df["revenue"].sum()), rel=1e-4, what="the total revenue", others=others, max_others=0)


def sales_clean(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/sales_clean.csv holds the deduplicated rows with units present, ISO dates, 'Unknown' for a
    missing region, revenue = units x unit_price (2 dp), sorted by order_date then order_id; the answer gives the row count."""
    exp = _sales(data).dropna(subset=["units"]).copy()
    exp["order_date"] = exp["date"].dt.strftime("%Y-%m-%d")
    exp["region"] = exp["region"].fillna("Unknown")
    exp = exp.set_index("order_id")
    got = _cols(read_table(output, "sales_clean.csv"))
    _need(got, ["order_id", "order_date", "region", "units", "unit_price", "revenue"], "sales_clean.csv")
    assert len(got) == len(exp), f"sales_clean.csv has {len(got)} rows, expected {len(exp)}"
    assert got["order_id"].is_unique, "sales_clean.csv still has duplicate order_ids"
    assert set(got["order_id"]) == set(exp.index), "sales_clean.csv does not hold the expected orders"
    g = got.set_index("order_id")
    dates = g["order_date"].astype(str).str.strip()
    assert (dates == exp.loc[g.index, "order_date"]).all(), "order_date is not the parsed date in YYYY-MM-DD form"
    assert (g["region"].astype(str) == exp.loc[g.index, "region"]).all(), "region values (with 'Unknown' for missing) differ"
    diff = (_num_series(g["revenue"]) - exp.loc[g.index, "revenue"]).abs()
    assert (diff <= 0.011).all(), "revenue is not units x unit_price"
    keys = list(zip(dates, got["order_id"]))
    assert keys == sorted(keys), "rows are not sorted by order_date then order_id"
    assert_number(answer, len(exp), rel=0, abs_tol=0.5, what="the row count")


def sales_pivot(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/region_quarter.xlsx is the region x quarter revenue pivot of the deduplicated sales, with an
    'Unknown' row for orders without a region (each cell to 0.1%)."""
    import pandas as pd

    df = _sales(data)
    df["region"] = df["region"].fillna("Unknown")
    df["q"] = "Q" + df["date"].dt.quarter.astype(str)
    exp = df.pivot_table(index="region", columns="q", values="revenue", aggfunc="sum")
    got = read_table(output, "region_quarter.xlsx")
    label = got.columns[0]
    got = got.set_index(got[label].astype(str).str.strip())
    qcols = {}
    for c in got.columns[1:]:
        m = re.search(r"Q([1-4])", str(c), re.I) or re.fullmatch(r"\s*([1-4])(\.0)?\s*", str(c))
        if m:
            qcols[f"Q{m.group(1)}"] = c
    assert set(qcols) == {"Q1", "Q2", "Q3", "Q4"}, f"quarter columns Q1-Q4 not found (columns: {list(got.columns)})"
    for region in exp.index:
        assert region in got.index, f"region_quarter.xlsx has no row for {region}"
        for q in ["Q1", "Q2", "Q3", "Q4"]:
            cell = got.loc[region, qcols[q]]
            cell = cell.iloc[0] if isinstance(cell, pd.Series) else cell
            v = float(pd.to_numeric(pd.Series([cell]), errors="coerce").iloc[0])
            e = float(exp.loc[region, q])
            assert abs(v - e) <= max(0.5, 1e-3 * e), f"{region} {q} revenue is {v}, expected {e:.2f}"


def sales_top_products(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/top_products.csv lists for each region (orders without region ignored) the 3 products with the
    highest revenue after deduplication, with revenue and rank 1-3, sorted by region then rank."""
    df = _sales(data).dropna(subset=["region"])
    tot = df.groupby(["region", "product"])["revenue"].sum().reset_index()
    tot = tot.sort_values(["region", "revenue"], ascending=[True, False]).groupby("region").head(3)
    got = _cols(read_table(output, "top_products.csv"))
    _need(got, ["region", "product", "revenue", "rank"], "top_products.csv")
    assert len(got) == len(tot), f"top_products.csv has {len(got)} rows, expected {len(tot)}"
    exp_rows = [(r.region, r.product, i % 3 + 1, r.revenue) for i, r in enumerate(tot.itertuples())]
    for (reg, prod, rank, rev), (_, g) in zip(exp_rows, got.iterrows()):
        assert str(g["region"]).strip() == reg and str(g["product"]).strip() == prod, \
            f"expected {prod} at rank {rank} in {reg}, found {g['product']} ({g['region']})"
        assert int(float(g["rank"])) == rank, f"{prod} in {reg} should have rank {rank}"
        assert abs(float(g["revenue"]) - rev) <= 0.5, f"{prod} in {reg}: revenue {g['revenue']} vs {rev:.2f}"


def weather_july_rain(answer: str, output: Path, data: Path) -> None:
    """Verifies: the answer names the city with the most July 2022 precipitation first and states its total (0.1 mm)."""
    w = _weather(data)
    tot = w[w["date"].dt.month == 7].groupby("city")["precip_mm"].sum()
    best = tot.idxmax()
    options = {c: [c] for c in tot.index}
    options.setdefault("Vienna", []).append("Wien")
    _assert_named(answer, best, options, "city")
    assert_stated(answer, float(tot.max()), rel=0, abs_tol=0.051, what="the July precipitation")


def weather_rolling(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/weather_rolling.csv has, per city, the 7-day rolling mean of temp_max_c (first 6 days empty)
    for every date/city row (to 0.01)."""
    import numpy as np
    import pandas as pd

    w = _weather(data).sort_values(["city", "date"])
    w["exp"] = w.groupby("city")["temp_max_c"].transform(lambda s: s.rolling(7).mean())
    got = _cols(read_table(output, "weather_rolling.csv"))
    _need(got, ["date", "city", "temp_max_7d"], "weather_rolling.csv")
    assert len(got) == len(w), f"weather_rolling.csv has {len(got)} rows, expected {len(w)}"
    got["date"] = pd.to_datetime(got["date"].astype(str).str[:10], errors="coerce")
    m = w.merge(got[["date", "city", "temp_max_7d"]], on=["date", "city"], how="left")
    v = _num_series(m["temp_max_7d"])
    both_nan = m["exp"].isna() & v.isna()
    ok = both_nan | ((v - m["exp"]).abs() <= 0.011)
    bad = m[~ok]
    assert bad.empty, f"temp_max_7d differs for {len(bad)} rows (e.g. {bad.iloc[0]['city']} {bad.iloc[0]['date'].date()})"
    assert int(np.isnan(v).sum()) == int(m["exp"].isna().sum()), "the first 6 days of each city should be empty"


def weather_monthly(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/weather_monthly.xlsx has 36 city/month rows with mean temp_max, mean temp_min (missing values
    ignored) and total precipitation (to 0.01), each rounded to 2 decimals as asked."""
    w = _weather(data)
    w["month"] = w["date"].dt.month
    exp = w.groupby(["city", "month"]).agg(avg_temp_max=("temp_max_c", "mean"), avg_temp_min=("temp_min_c", "mean"),
                                           total_precip=("precip_mm", "sum")).reset_index()
    got = _cols(read_table(output, "weather_monthly.xlsx"))
    _need(got, ["city", "month", "avg_temp_max", "avg_temp_min", "total_precip"], "weather_monthly.xlsx")
    assert len(got) == 36, f"weather_monthly.xlsx has {len(got)} rows, expected 36"
    got["month"] = _num_series(got["month"])
    m = exp.merge(got, on=["city", "month"], how="left", suffixes=("", "_got"))
    for col in ["avg_temp_max", "avg_temp_min", "total_precip"]:
        d = (_num_series(m[col + "_got"]) - m[col]).abs()
        assert (d <= 0.011).all(), f"{col} differs from the expected monthly value for {int((~(d <= 0.011)).sum())} rows"
    for col in ["avg_temp_max", "avg_temp_min", "total_precip"]:
        _assert_rounded_column(_num_series(got[col]), 2, f"weather_monthly.xlsx's {col}")


def _assert_rounded_column(values, decimals: int, what: str) -> None:
    """Every value of a numeric column is rounded to `decimals` places, as the query asks (12.35, not 12.3467)."""
    off = values[(values * 10 ** decimals - (values * 10 ** decimals).round()).abs() > 1e-6]
    assert off.empty, f"{what} is not rounded to {decimals} decimals ({off.iloc[0]!r})"


def house_model(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/house_price_model.pkl is a fitted scikit-learn linear regressor that agrees with the least-squares fit on all rows, on area_m2, bedrooms,
    age_years, distance_km whose R² on housing.csv is >= 0.85, and the answer reports that R² (0.01)."""
    import pandas as pd
    from sklearn.base import is_regressor
    from sklearn.metrics import r2_score

    model = _load_model(output, "house_price_model.pkl")
    _assert_fitted(model, "house_price_model.pkl")
    assert is_regressor(model), "the saved model is not a regressor"
    assert hasattr(_final(model), "coef_"), "the saved model is not a linear model (no coef_)"
    h = pd.read_csv(data / "housing.csv")
    X = h[["area_m2", "bedrooms", "age_years", "distance_km"]]
    _assert_least_squares(model, X, h["price_eur"], "house_price_model.pkl")
    r2 = r2_score(h["price_eur"], _predict(model, X))
    assert r2 >= 0.85, f"the model's R² on the data is {r2:.3f}, below 0.85"
    assert_number(answer, r2, rel=0, abs_tol=0.01, what="the reported R²")


def house_rank(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/neighborhood_rank.csv ranks neighbourhoods by median price per m² (rank 1 = most expensive),
    sorted by rank, medians to 0.5%."""
    import pandas as pd

    h = pd.read_csv(data / "housing.csv")
    h["ppm2"] = h["price_eur"] / h["area_m2"]
    exp = h.groupby("neighborhood")["ppm2"].median().sort_values(ascending=False)
    got = _cols(read_table(output, "neighborhood_rank.csv"))
    _need(got, ["neighborhood", "median_price_per_m2", "rank"], "neighborhood_rank.csv")
    assert [str(x).strip() for x in got["neighborhood"]] == list(exp.index), \
        f"neighbourhood order {list(got['neighborhood'])} is not {list(exp.index)}"
    assert [int(float(r)) for r in got["rank"]] == list(range(1, len(exp) + 1)), "rank should run 1..n from the top"
    for (name, e), g in zip(exp.items(), _num_series(got["median_price_per_m2"])):
        assert abs(g - e) <= 0.005 * e, f"{name}: median price per m² {g} vs {e:.1f}"


def house_filter_mean(answer: str, output: Path, data: Path) -> None:
    """Verifies: the answer states the mean price of houses with >= 3 bedrooms and age_years < 10 (0.1%)."""
    import pandas as pd

    h = pd.read_csv(data / "housing.csv")
    sel = h[(h["bedrooms"] >= 3) & (h["age_years"] < 10)]
    others = [h[(h["bedrooms"] > 3) & (h["age_years"] < 10)]["price_eur"].mean(),
              h[(h["bedrooms"] >= 3) & (h["age_years"] <= 10)]["price_eur"].mean(), h["price_eur"].mean()]
    assert_stated(answer, float(sel["price_eur"].mean()), rel=1e-3, what="the average price", others=others, max_others=0)


def flights_best_carrier(answer: str, output: Path, data: Path) -> None:
    """Verifies: the answer names first the carrier with the lowest mean arrival delay over non-cancelled flights and
    states that mean (1%)."""
    f = _flights(data)
    f = f[~f["cancelled"].astype(bool)]
    means = f.groupby("carrier")["delay.arrival_min"].mean()
    _assert_named(answer, means.idxmin(), {c: [c] for c in means.index}, "carrier")
    assert_stated(answer, float(means.min()), rel=0.01, what="the mean arrival delay")


def flights_routes(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/route_delays.csv has one row per origin/dest route with the number of non-cancelled flights
    and their mean arrival delay (0.06 min), sorted by mean delay descending."""
    f = _flights(data)
    f = f[~f["cancelled"].astype(bool)]
    exp = f.groupby(["route.origin", "route.destination"])["delay.arrival_min"].agg(["count", "mean"])
    got = _cols(read_table(output, "route_delays.csv"))
    _need(got, ["origin", "dest", "flights", "mean_arr_delay"], "route_delays.csv")
    assert len(got) == len(exp), f"route_delays.csv has {len(got)} rows, expected {len(exp)} routes"
    vals = list(_num_series(got["mean_arr_delay"]))
    assert vals == sorted(vals, reverse=True), "rows are not sorted by mean_arr_delay descending"
    for _, g in got.iterrows():
        key = (str(g["origin"]).strip(), str(g["dest"]).strip())
        assert key in exp.index, f"unknown route {key}"
        assert int(float(g["flights"])) == int(exp.loc[key, "count"]), f"route {key}: {g['flights']} flights, expected {int(exp.loc[key, 'count'])}"
        assert abs(float(g["mean_arr_delay"]) - exp.loc[key, "mean"]) <= 0.06, f"route {key}: mean delay {g['mean_arr_delay']} vs {exp.loc[key, 'mean']:.2f}"


def flights_model(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/delay_model.pkl is a fitted linear regressor (the least-squares fit on all rows) on (departure delay, distance) for non-cancelled
    flights (nearer that fit than the one with the cancelled flights kept at delay 0) with R² >= 0.9 on them, and the
    answer reports that R² (0.01)."""
    from sklearn.base import is_regressor
    from sklearn.metrics import r2_score

    model = _load_model(output, "delay_model.pkl")
    _assert_fitted(model, "delay_model.pkl")
    assert is_regressor(model) and hasattr(_final(model), "coef_"), "the saved model is not a linear regressor"
    f = _flights(data)
    f = f[~f["cancelled"].astype(bool)]
    X = f[["delay.departure_min", "route.distance_km"]]
    kept = _flights(data).fillna({"delay.departure_min": 0, "delay.arrival_min": 0})
    _assert_least_squares(model, X, f["delay.arrival_min"], "delay_model.pkl",
                          ("the cancelled flights kept (their delays as 0)", kept[X.columns], kept["delay.arrival_min"]))
    r2 = r2_score(f["delay.arrival_min"], _predict(model, X))
    assert r2 >= 0.9, f"the model's R² is {r2:.3f}, below 0.9"
    assert_number(answer, r2, rel=0, abs_tol=0.01, what="the reported R²")


def churn_model(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/churn_model.pkl is a fitted classifier on tenure_months, monthly_charges (median-filled),
    support_calls whose accuracy on churn.csv is >= 0.78 (majority class gives 0.69), and not one fitted with the
    missing charges filled otherwise (0, the mean): a copy of it (its settings and seed) refitted on such data predicts
    as it does and one refitted on the median-filled data does not. Cannot tell for a model without a seed."""
    import pandas as pd
    from sklearn.base import is_classifier

    model = _load_model(output, "churn_model.pkl")
    _assert_fitted(model, "churn_model.pkl")
    assert is_classifier(model), "the saved model is not a classifier"
    c = pd.read_csv(data / "churn.csv")
    features = ["tenure_months", "monthly_charges", "support_calls"]
    charges = c["monthly_charges"]
    fills = {f"filled with the {how}": c[features].assign(monthly_charges=charges.fillna(value))
             for how, value in (("median", charges.median()), ("mean", charges.mean()), ("value 0", 0.0))}
    c["monthly_charges"] = charges.fillna(charges.median())
    pred = _as_binary(_predict(model, c[features]))
    acc = float((pred == (c["churned"] == "Yes").to_numpy().astype(int)).mean())
    assert acc >= 0.78, f"the model's accuracy is {acc:.3f}, below 0.78"

    def target(fitted):  # the labels as the model was given them: 'Yes'/'No', or 1/0
        return c["churned"] if all(isinstance(label, str) for label in fitted.classes_) else (c["churned"] == "Yes").astype(int)
    other = _fills_like(model, fills, target, "filled with the median")
    assert other is None, f"the model was fitted with the missing monthly_charges {other}, not the median: a copy fitted so predicts as it does"


def mall_kmeans(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/kmeans_segments.pkl is a fitted KMeans with 5 clusters on the unscaled (annual_income_k,
    spending_score) of all customers (centres = their members' means in those units), whose labels agree with a reference 5-means clustering (adjusted Rand >= 0.9)."""
    import pandas as pd
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score

    model = _load_model(output, "kmeans_segments.pkl")
    _assert_fitted(model, "kmeans_segments.pkl")
    km = _final(model)
    assert isinstance(km, KMeans), f"the saved model is a {type(km).__name__}, not KMeans"
    assert km.n_clusters == 5, f"the model has {km.n_clusters} clusters, expected 5"
    m = pd.read_csv(data / "mall_customers.csv")
    X = m[["annual_income_k", "spending_score"]]
    # fitted on the raw columns of every customer: each centre is the mean of its customers' (income, score)
    labels = getattr(km, "labels_", None)
    assert labels is not None and len(labels) == len(X), "the model was not fitted on the customers of the file"
    for k, centre in enumerate(km.cluster_centers_):
        members = X.to_numpy(dtype=float)[labels == k]
        assert len(members) and abs(members.mean(axis=0) - centre).max() <= 1.0, \
            "the cluster centres are not the means of (annual_income_k, spending_score): scaled or other columns used"
    ref = KMeans(n_clusters=5, n_init=10, random_state=0).fit_predict(X)
    ari = adjusted_rand_score(ref, _predict(model, X))
    assert ari >= 0.9, f"the clusters do not match the 5 customer groups (ARI {ari:.2f})"


def patients_tree(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/diabetes_tree.pkl is a fitted DecisionTreeClassifier of depth <= 3 on age, bmi, glucose,
    blood_pressure with accuracy >= 0.9 on patients.csv."""
    import pandas as pd
    from sklearn.tree import DecisionTreeClassifier

    model = _load_model(output, "diabetes_tree.pkl")
    _assert_fitted(model, "diabetes_tree.pkl")
    tree = _final(model)
    assert isinstance(tree, DecisionTreeClassifier), f"the saved model is a {type(tree).__name__}, not a decision tree classifier"
    assert tree.get_depth() <= 3, f"the tree has depth {tree.get_depth()}, more than 3"
    p = pd.read_csv(data / "patients.csv")
    pred = _as_binary(_predict(model, p[["age", "bmi", "glucose", "blood_pressure"]]))
    acc = float((pred == p["diabetic"].to_numpy()).mean())
    assert acc >= 0.9, f"the tree's accuracy is {acc:.3f}, below 0.9"


def fruit_forest(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/fruit_rf.pkl is a fitted RandomForestClassifier grown on the rows of the 'train' sheet only (not
    train + test) over the 4 measurement columns, that predicts the fruit names of the 'test' sheet with accuracy
    >= 0.9, and the answer states that test accuracy (0.02)."""
    import pandas as pd
    from sklearn.ensemble import RandomForestClassifier

    model = _load_model(output, "fruit_rf.pkl")
    _assert_fitted(model, "fruit_rf.pkl")
    rf = _final(model)
    assert isinstance(rf, RandomForestClassifier), f"the saved model is a {type(rf).__name__}, not a random forest"
    te = pd.read_excel(data / "fruit.xlsx", sheet_name="test")
    train_rows = len(pd.read_excel(data / "fruit.xlsx", sheet_name="train"))
    # every tree of a forest is grown on (a bootstrap of) the training rows: their weighted count is the training size
    grown_on = {int(round(t.tree_.weighted_n_node_samples[0])) for t in rf.estimators_}
    if rf.bootstrap and rf.max_samples is not None:
        grown_on = {train_rows} if all(n <= train_rows for n in grown_on) else grown_on
    assert grown_on == {train_rows}, f"the forest was trained on {sorted(grown_on)[-1]} rows, not the {train_rows} of the 'train' sheet"
    pred = _predict(model, te[["weight_g", "diameter_cm", "sugar_brix", "color_hue"]])
    acc = float((pd.Series(pred).astype(str).str.strip().str.lower().to_numpy() == te["fruit"].str.lower().to_numpy()).mean())
    assert acc >= 0.9, f"test accuracy of the saved forest is {acc:.3f}, below 0.9"
    assert_number(answer, acc, rel=0, abs_tol=0.02, what="the test accuracy")


def cars_model(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/car_price_model.pkl is a fitted linear regressor (the least-squares fit on all rows) on (year, mileage km, engine litres) parsed
    from used_cars.csv with R² >= 0.93, and the answer reports that R² (0.01)."""
    import pandas as pd
    from sklearn.base import is_regressor
    from sklearn.metrics import r2_score

    model = _load_model(output, "car_price_model.pkl")
    _assert_fitted(model, "car_price_model.pkl")
    assert is_regressor(model) and hasattr(_final(model), "coef_"), "the saved model is not a linear regressor"
    u = pd.read_csv(data / "used_cars.csv")
    X = pd.DataFrame({"year": u["year"],
                      "mileage": u["mileage"].str.replace(r"[^0-9]", "", regex=True).astype(float),
                      "engine": u["engine"].str.extract(r"([0-9.]+)")[0].astype(float)})
    _assert_least_squares(model, X, u["price_cny"], "car_price_model.pkl")
    r2 = r2_score(u["price_cny"], _predict(model, X))
    assert r2 >= 0.93, f"the model's R² is {r2:.3f}, below 0.93"
    assert_number(answer, r2, rel=0, abs_tol=0.01, what="the reported R²")


def students_class_mean(answer: str, output: Path, data: Path) -> None:
    """Verifies: the answer states the mean math score of all class 3B students (0.1%)."""
    s = _students(data)
    means = s.groupby("class")["math"].mean()
    assert_stated(answer, float(means["3B"]), rel=1e-3, what="the 3B math average", others=list(means), max_others=0)


def students_report(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/report_card.xlsx has every student with math, physics, the mean of the available scores and
    a 'min' rank by that mean (1 = best), sorted by rank."""
    s = _students(data)
    s["average"] = s[["math", "physics"]].mean(axis=1)
    s["rank"] = s["average"].rank(ascending=False, method="min").astype(int)
    got = _cols(read_table(output, "report_card.xlsx"))
    _need(got, ["student_id", "name", "class", "math", "physics", "average", "rank"], "report_card.xlsx")
    assert len(got) == len(s), f"report_card.xlsx has {len(got)} rows, expected {len(s)}"
    g = got.set_index(got["student_id"].astype(str))
    e = s.set_index("student_id")
    assert set(g.index) == set(e.index), "report_card.xlsx does not list the expected students"
    d = (_num_series(g["average"]) - e.loc[g.index, "average"]).abs()
    assert (d <= 0.011).all(), "average is not the mean of the available scores"
    assert (_num_series(g["rank"]).astype(int) == e.loc[g.index, "rank"]).all(), "rank does not follow the average (ties share the lowest rank)"
    r = list(_num_series(got["rank"]))
    assert r == sorted(r), "rows are not sorted by rank"


def students_support(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/needs_support.csv lists exactly the students with a math or physics score below 60 (missing is
    not a fail), sorted by class then student_id."""
    s = _students(data)
    exp = s[(s["math"] < 60) | (s["physics"] < 60)].sort_values(["class", "student_id"])
    got = _cols(read_table(output, "needs_support.csv"))
    _need(got, ["student_id", "name", "class", "math", "physics"], "needs_support.csv")
    ids = [str(x).strip() for x in got["student_id"]]
    extra, missing = set(ids) - set(exp["student_id"]), set(exp["student_id"]) - set(ids)
    assert not extra and not missing, f"needs_support.csv: {len(extra)} student(s) wrongly listed, {len(missing)} missing"
    assert ids == list(exp["student_id"]), "rows are not sorted by class then student_id"


def employees_top_dept(answer: str, output: Path, data: Path) -> None:
    """Verifies: the answer names first the department (full name) with the highest mean salary, after normalising
    dept codes and salary strings, and states that mean (0.5%)."""
    e = _employees(data)
    means = e.groupby("dept_name")["salary_num"].mean()
    aliases = {"Engineering": ["工程", "研发"], "Sales": ["销售"], "Marketing": ["市场"], "Finance": ["财务"],
               "Human Resources": ["人力资源", "人事"], "Operations": ["运营"]}
    options = {n: [n] + aliases.get(n, []) for n in means.index}
    _assert_named(answer, means.idxmax(), options, "department")
    assert_stated(answer, float(means.max()), rel=5e-3, what="the mean salary", others=list(means), max_others=1)


def employees_sheets(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/by_department.xlsx has one sheet per department named by its full name, each with exactly that
    department's employees (codes normalised) and numeric salaries sorted descending."""
    import pandas as pd

    e = _employees(data)
    path = output_file(output, "by_department.xlsx")
    try:
        sheets = pd.read_excel(path, sheet_name=None)
    except Exception as error:
        raise AssertionError(f"./output/by_department.xlsx is not a readable workbook ({type(error).__name__})") from None
    names = set(e["dept_name"])
    assert set(s.strip() for s in sheets) == names, f"sheet names {sorted(sheets)} are not the department names {sorted(names)}"
    for title, df in sheets.items():
        df = _cols(df)
        _need(df, ["emp_id", "salary"], f"sheet {title}")
        exp = e[e["dept_name"] == title.strip()]
        assert set(df["emp_id"].astype(str)) == set(exp["emp_id"]), f"sheet {title} does not hold exactly its {len(exp)} employees"
        sal = _num_series(df["salary"])
        assert sal.notna().all(), f"sheet {title}: salary is not numeric"
        assert list(sal) == sorted(sal, reverse=True), f"sheet {title} is not sorted by salary descending"
        assert sorted(sal) == sorted(exp["salary_num"]), f"sheet {title}: salaries do not match the input"


def stores_bayern(answer: str, output: Path, data: Path) -> None:
    """Verifies: the answer states the total turnover (Umsatz) of the Bavarian stores in EUR (0.01%)."""
    s = _stores(data)
    totals = s.groupby("Bundesland")["umsatz"].sum()
    assert_stated(answer, float(totals["Bayern"]), rel=1e-4, what="the Bavarian turnover", others=list(totals), max_others=0)


def stores_clean(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/stores_clean.csv is UTF-8 comma-separated with correct umlaut city names, numeric umsatz_eur /
    flaeche_m2, ISO eroeffnet dates, umsatz_pro_mitarbeiter, sorted by umsatz_eur descending."""
    s = _stores(data).set_index("Filiale")
    got = _cols(read_table(output, "stores_clean.csv"))
    _need(got, ["filiale", "stadt", "bundesland", "umsatz_eur", "mitarbeiter", "flaeche_m2", "eroeffnet",
                "umsatz_pro_mitarbeiter"], "stores_clean.csv")
    assert len(got) == len(s), f"stores_clean.csv has {len(got)} rows, expected {len(s)}"
    g = got.set_index(got["filiale"].astype(str))
    assert set(g.index) == set(s.index), "stores_clean.csv does not hold the expected stores"
    assert (g["stadt"].astype(str) == s.loc[g.index, "Stadt"]).all(), "city names are garbled (encoding) or changed"
    assert ((_num_series(g["umsatz_eur"]) - s.loc[g.index, "umsatz"]).abs() <= 0.011).all(), "umsatz_eur is not the parsed turnover"
    assert ((_num_series(g["flaeche_m2"]) - s.loc[g.index, "flaeche"]).abs() <= 0.051).all(), "flaeche_m2 is not the parsed area"
    assert (g["eroeffnet"].astype(str).str.strip() == s.loc[g.index, "eroeffnet"]).all(), "eroeffnet is not YYYY-MM-DD"
    per = s.loc[g.index, "umsatz"] / s.loc[g.index, "mitarbeiter"]
    assert ((_num_series(g["umsatz_pro_mitarbeiter"]) - per).abs() <= 0.011).all(), "umsatz_pro_mitarbeiter is wrong"
    u = list(_num_series(got["umsatz_eur"]))
    assert u == sorted(u, reverse=True), "rows are not sorted by umsatz_eur descending"


def inventory_reorder(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/reorder.csv lists exactly the items with stock strictly below the reorder level, with intact
    accented product names and shortage = level - stock, sorted by shortage descending then ref."""
    import pandas as pd

    i = pd.read_csv(data / "inventory.tsv", sep="\t", encoding="latin-1")
    exp = i[i["stock"] < i["seuil_réappro"]].copy()
    exp["shortage"] = exp["seuil_réappro"] - exp["stock"]
    exp = exp.sort_values(["shortage", "réf"], ascending=[False, True])
    got = _cols(read_table(output, "reorder.csv"))
    _need(got, ["ref", "product", "stock", "reorder_level", "shortage"], "reorder.csv")
    ids = [str(x).strip() for x in got["ref"]]
    assert set(ids) == set(exp["réf"]), f"reorder.csv lists {len(ids)} items, expected the {len(exp)} below their level"
    assert ids == list(exp["réf"]), "rows are not sorted by shortage descending then ref"
    assert list(got["product"].astype(str)) == list(exp["produit"]), "product names differ (accents lost?)"
    assert [int(float(x)) for x in got["shortage"]] == list(exp["shortage"]), "shortage is not reorder_level - stock"


def energy_daily(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/daily_energy.csv has the 90 days (YYYY-MM-DD) with total_kwh (sum of hourly kW), peak_kw and
    peak_hour matching the hourly data."""
    e = _energy(data)
    e["date"] = e["ts"].dt.strftime("%Y-%m-%d")
    e["hour"] = e["ts"].dt.hour
    exp = e.groupby("date").agg(total_kwh=("load_kw", "sum"), peak_kw=("load_kw", "max"))
    exp["peak_hour"] = e.loc[e.groupby("date")["load_kw"].idxmax()].set_index("date")["hour"]
    got = _cols(read_table(output, "daily_energy.csv"))
    _need(got, ["date", "total_kwh", "peak_kw", "peak_hour"], "daily_energy.csv")
    got["date"] = got["date"].astype(str).str.strip()
    assert len(got) == len(exp), f"daily_energy.csv has {len(got)} rows, expected {len(exp)}"
    assert set(got["date"]) == set(exp.index), "dates are not the 90 days in YYYY-MM-DD form"
    g = got.set_index("date")
    assert ((_num_series(g["total_kwh"]) - exp.loc[g.index, "total_kwh"]).abs() <= 0.11).all(), "total_kwh is not the daily sum"
    assert ((_num_series(g["peak_kw"]) - exp.loc[g.index, "peak_kw"]).abs() <= 0.051).all(), "peak_kw is not the daily maximum"
    assert (_num_series(g["peak_hour"]) == exp.loc[g.index, "peak_hour"]).all(), "peak_hour is not the hour of the maximum"


def energy_rolling(answer: str, output: Path, data: Path) -> None:
    """Verifies: the answer states the highest 7-day rolling mean of daily consumption (kWh/day, 0.1%) and the day
    that trailing window ends on (a centred window names a day 3 days early)."""
    e = _energy(data).set_index("ts")
    daily = e["load_kw"].resample("D").sum()
    rolling = daily.rolling(7).mean()
    assert_stated(answer, float(rolling.max()), rel=1e-3, what="the highest 7-day average")
    end = rolling.idxmax()
    assert (end.month, end.day, end.year) in dates_in(answer) or (end.month, end.day, None) in dates_in(answer), \
        f"the answer does not name {end:%Y-%m-%d} as the day the highest window ends"


def orders_top_customers(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/top_customers.csv lists the 15 customers with the highest completed-order totals across all
    four quarterly sheets, with company and country, sorted descending (0.01 EUR)."""
    import pandas as pd

    o = pd.concat(pd.read_excel(data / "orders_2023.xlsx", sheet_name=None).values(), ignore_index=True)
    c = pd.read_csv(data / "customers.csv").set_index("customer_id")
    tot = o[o["status"] == "completed"].groupby("customer_id")["amount_eur"].sum().sort_values(ascending=False).head(15)
    got = _cols(read_table(output, "top_customers.csv"))
    _need(got, ["customer_id", "company", "country", "total_amount"], "top_customers.csv")
    assert len(got) == 15, f"top_customers.csv has {len(got)} rows, expected 15"
    assert [str(x).strip() for x in got["customer_id"]] == list(tot.index), "the top-15 customers or their order differ"
    assert ((_num_series(got["total_amount"]).to_numpy() - tot.to_numpy()) ** 2 <= 0.011 ** 2).all(), "total_amount differs"
    assert list(got["company"].astype(str)) == list(c.loc[tot.index, "company"]), "company names do not match the customers"
    assert list(got["country"].astype(str)) == list(c.loc[tot.index, "country"]), "countries do not match the customers"


def _survey_expected(data):
    import pandas as pd

    s = pd.read_csv(data / "survey.csv", dtype=str, keep_default_na=False).drop_duplicates()
    g = s["gender"].str.strip().str.lower()
    s["gender"] = g.map(lambda x: "Female" if x in ("f", "female") else ("Male" if x in ("m", "male") else "Unknown"))
    c = s["country"].str.strip().str.lower().str.replace(".", "", regex=False)
    cmap = {"usa": "United States", "us": "United States", "united states": "United States", "canada": "Canada",
            "can": "Canada", "uk": "United Kingdom", "united kingdom": "United Kingdom", "great britain": "United Kingdom"}
    s["country"] = c.map(cmap)
    s["satisfaction"] = pd.to_numeric(s["satisfaction"].str.strip(), errors="coerce")
    s = s.dropna(subset=["satisfaction"])
    s["would_recommend"] = s["would_recommend"].str.strip().str[0].str.upper().map({"Y": "Yes", "N": "No"})
    return s.sort_values("respondent_id")


def survey_clean(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/survey_clean.csv has one row per respondent with satisfaction present, gender in
    Female/Male/Unknown, country in 3 canonical names, integer satisfaction and Yes/No recommend, sorted by id."""
    exp = _survey_expected(data).set_index("respondent_id")
    got = _cols(read_table(output, "survey_clean.csv"))
    _need(got, ["respondent_id", "gender", "age", "country", "satisfaction", "would_recommend"], "survey_clean.csv")
    ids = [str(x).strip() for x in got["respondent_id"]]
    assert len(ids) == len(set(ids)), "survey_clean.csv still has duplicate respondents"
    assert set(ids) == set(exp.index), f"survey_clean.csv has {len(ids)} respondents, expected {len(exp)}"
    assert ids == sorted(ids), "rows are not sorted by respondent_id"
    g = got.set_index(got["respondent_id"].astype(str).str.strip())
    for col in ["gender", "country", "would_recommend"]:
        bad = (g[col].astype(str) != exp.loc[g.index, col]).sum()
        assert bad == 0, f"{col} is not normalised for {bad} respondent(s)"
    sat = _num_series(g["satisfaction"])
    assert (sat == exp.loc[g.index, "satisfaction"]).all(), "satisfaction values differ"


def stocks_monthly(answer: str, output: Path, data: Path) -> None:
    """Verifies: ./output/monthly_returns.csv holds, per ticker and month Feb-Dec 2023, the % change of the month's last
    close against the previous month's last close (0.011 percentage points), in long format."""
    import pandas as pd

    st = pd.read_csv(data / "stock_prices.csv", parse_dates=["date"]).sort_values(["ticker", "date"])
    last = st.groupby(["ticker", st["date"].dt.to_period("M")])["close"].last()
    ret = (last.groupby(level=0).pct_change() * 100).dropna()
    exp = {(t, str(p)): v for (t, p), v in ret.items()}
    got = _cols(read_table(output, "monthly_returns.csv"))
    _need(got, ["month", "ticker", "return_pct"], "monthly_returns.csv")
    got = got.dropna(subset=["return_pct"])
    months = pd.to_datetime(got["month"].astype(str).str.strip(), errors="coerce").dt.to_period("M").astype(str)
    keys = list(zip(got["ticker"].astype(str).str.strip(), months))
    assert set(keys) == set(exp), f"monthly_returns.csv has {len(keys)} ticker-months, expected {len(exp)} (Feb-Dec x 3)"
    for k, v in zip(keys, _num_series(got["return_pct"])):
        assert abs(v - exp[k]) <= 0.011, f"{k[0]} {k[1]}: return {v} vs {exp[k]:.2f}%"
