"""The check jail's unpickling guard (issue 24, point 4): pickles that only rebuild data load; pickles that call
library callables with their own arguments, set attributes on classes or modules, or change global state are refused.
Each attack and each honest object is pickled and loaded in a jail environment's own Python (both of them), under
jailed.restrict_unpickling, as check() runs it."""
import json
import subprocess

import pytest

from kit import sandbox
from conftest import ROOT

pytestmark = pytest.mark.slow  # a Python with pandas and scikit-learn per environment

PROGRAM = r'''
import io, json, pickle, sys
sys.path.insert(0, sys.argv[1])
import joblib
import numpy as np, pandas as pd
from pandas._config.config import DictWrapper
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler, OneHotEncoder
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.cluster import KMeans
from sklearn.tree import DecisionTreeClassifier
from sklearn.ensemble import RandomForestClassifier, GradientBoostingClassifier
from sklearn.neighbors import KNeighborsClassifier
from sklearn.model_selection import GridSearchCV
from sklearn.svm import SVC

class Reduce:  # pickles as callable(*arguments), then state set by BUILD
    def __init__(self, *reduction):
        self.reduction = reduction
    def __reduce__(self):
        return self.reduction
    def __call__(self):  # the pickler wants a callable first item; this one is never called
        pass

def raw(*parts):  # a hand-made protocol-2 stream
    return b"\x80\x02" + b"".join(parts) + b"."

def global_(module, name):
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"

import numpy._pytesttester as tester_module
from sklearn.utils.parallel import Parallel
attacks = {
    "pandas option through DictWrapper's setattr": Reduce(DictWrapper, ({"max_rows": 1}, "display"), (None, {"max_rows": 7})),
    "pandas.set_option called": Reduce(pd.set_option, ("display.max_rows", 7)),
    "numpy's test runner called": Reduce(Reduce(tester_module.PytestTester, ("numpy",)), ("fast",)),
    "numpy.test called": Reduce(np.test, ("fast",)),
    "a Parallel instance called": Reduce(Reduce(Parallel, (1,)), ([(list, ("abc",), {})],)),
    "copyreg._reconstructor calling a library class": Reduce(__import__("copyreg")._reconstructor, (object, Parallel, 1)),
}
streams = {name: pickle.dumps(value, protocol=2) for name, value in attacks.items()}
# Class and module attributes set by BUILD: Index.equals replaced by bool (every index "equals" every other), a module's.
streams["Index.equals replaced"] = raw(global_("pandas.core.indexes.base", "Index"), b"N}X\x06\x00\x00\x00equals", global_("builtins", "bool"), b"s\x86b")
def text(value):
    return b"X" + len(value).to_bytes(4, "little") + value.encode()
# numpy.memmap.__new__(memmap, a file name, uint8, "w+", 0, (8,)) by NEWOBJ: it would create the file
streams["numpy.memmap opening a file"] = raw(global_("numpy", "memmap"), b"(", text("written-by-a-pickle"), global_("numpy", "uint8"),
                                             text("w+"), b"K\x00K\x08\x85t\x81")
streams["a module's attribute set"] = raw(global_("numpy", "linalg"), b"N}X\x03\x00\x00\x00inv", global_("builtins", "bool"), b"s\x86b")
# Reconstructors given a class they do not exist to rebuild (issue 30): each would map a file of the check jail with
# numpy.memmap (pandas' _new_Index and _new_DatetimeIndex call cls.__new__(cls, **d), numpy's __generator_ctor and
# __randomstate_ctor call ctor(name), __bit_generator_ctor calls cls(), _reconstruct makes a cls array).
with open("source-of-the-check.py", "w") as handle:
    handle.write("HIDDEN = 'the hidden check source'\n")
def mapping(**items):  # a dict of text values
    return b"}(" + b"".join(text(key) + text(value) for key, value in items.items()) + b"u"
memmap_fields = mapping(filename="source-of-the-check.py", dtype="uint8", mode="r")
streams["pandas' _new_DatetimeIndex given numpy.memmap"] = raw(global_("pandas.core.indexes.datetimes", "_new_DatetimeIndex"),
                                                               global_("numpy", "memmap"), memmap_fields, b"\x86R")
streams["pandas' _new_Index given numpy.memmap"] = raw(global_("pandas.core.indexes.base", "_new_Index"), global_("numpy", "memmap"),
                                                       memmap_fields, b"\x86R")
streams["numpy's __generator_ctor given numpy.memmap"] = raw(global_("numpy.random._pickle", "__generator_ctor"),
                                                             text("source-of-the-check.py"), global_("numpy", "memmap"), b"\x86R")
streams["numpy's __randomstate_ctor given numpy.memmap"] = raw(global_("numpy.random._pickle", "__randomstate_ctor"),
                                                               text("source-of-the-check.py"), global_("numpy", "memmap"), b"\x86R")
streams["numpy's __bit_generator_ctor given a class not a BitGenerator"] = raw(global_("numpy.random._pickle", "__bit_generator_ctor"),
                                                                               global_("numpy", "memmap"), b"\x85R")
streams["numpy's _reconstruct given numpy.memmap"] = raw(global_("numpy.core.multiarray", "_reconstruct"), global_("numpy", "memmap"),
                                                         b"K\x00\x85C\x01b\x87R")
streams["a data class given a class"] = raw(global_("numpy", "dtype"), global_("numpy", "memmap"), b"\x85R")

X = np.random.RandomState(0).rand(40, 3)
y = (X[:, 0] > .5).astype(int)
honest = [make_pipeline(StandardScaler(), LinearRegression()).fit(X, y), KMeans(3, n_init=2, random_state=0).fit(X),
          DecisionTreeClassifier().fit(X, y), RandomForestClassifier(5).fit(X, y), GradientBoostingClassifier(n_estimators=3).fit(X, y),
          KNeighborsClassifier().fit(X, y), SVC().fit(X, y), LogisticRegression().fit(X, y),
          GridSearchCV(DecisionTreeClassifier(), {"max_depth": [1, 2]}, cv=2).fit(X, y), OneHotEncoder().fit([["a"], ["b"]]),
          pd.DataFrame({"a": [1, 2], "b": ["x", "y"], "c": pd.to_datetime(["2020-01-01", "2021-01-01"]), "d": pd.Categorical(["u", "v"])}),
          pd.Series([1.5, None], index=pd.period_range("2020", periods=2, freq="M")), pd.MultiIndex.from_tuples([(1, 2)]),
          pd.Timestamp("2020"), pd.Timedelta(1), np.array([{"a": 1}], dtype=object), np.ma.masked_array([1, 2], [0, 1]),
          np.random.RandomState(0), np.random.default_rng(0), {"s": {1, 2}, "f": frozenset(), "c": 1j, "r": range(3), "sl": slice(1)}]
honest_streams = []
for value in honest:
    for protocol in (0, 2, 5):
        honest_streams.append((type(value).__name__, protocol, pickle.dumps(value, protocol=protocol)))
    buffer = io.BytesIO()
    joblib.dump(value, buffer)
    honest_streams.append((type(value).__name__, "joblib", buffer.getvalue()))

from kit import jailed
jailed.restrict_unpickling()
refused, loaded, failed = {}, [], []
for name, stream in streams.items():
    try:
        loaded_value = pickle.loads(stream)
        refused[name] = None if "hidden check source" not in repr(loaded_value) else "read the check's source"
    except pickle.UnpicklingError as error:
        refused[name] = str(error)
    except Exception as error:
        refused[name] = f"not refused, failed later: {type(error).__name__}: {error}"
for kind, protocol, stream in honest_streams:
    try:
        (joblib.load(io.BytesIO(stream)) if protocol == "joblib" else pickle.loads(stream))
        loaded.append(f"{kind} {protocol}")
    except Exception as error:
        failed.append(f"{kind} {protocol}: {type(error).__name__}: {error}")
import os
state = {"max_rows": pd.get_option("display.max_rows"), "equals": pd.Index.equals is not bool, "file": os.path.exists("written-by-a-pickle")}
print(json.dumps({"refused": refused, "loaded": loaded, "failed": failed, "state": state}))
'''


@pytest.fixture(scope="module", params=sorted(sandbox.JAIL_ENVIRONMENTS))
def outcome(request, tmp_path_factory):
    python = sandbox.jail_python(request.param)
    if not python.exists():
        pytest.skip(f"the {request.param} jail environment is not built")
    done = subprocess.run([str(python), "-I", "-c", PROGRAM, str(ROOT)], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path_factory.mktemp("unpickling"))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_every_attack_is_refused_by_the_guard(outcome):
    not_refused = {name: why for name, why in outcome["refused"].items() if not (why or "").startswith("refused to load")}
    assert not not_refused, not_refused


def test_no_attack_changed_anything(outcome):
    assert outcome["state"] == {"max_rows": 60, "equals": True, "file": False}, outcome["state"]


def test_honest_models_frames_and_arrays_still_load(outcome):
    assert not outcome["failed"] and len(outcome["loaded"]) == 80, outcome["failed"]
