"""The house's rules, read from the code: short functions, a stated public surface per module, a core that imports
no feature, each default written once, a flag declared once (its help, its resume key, docs/runs.md's table), and
the README's "where to change what" rows true."""
import ast
import dataclasses
import re

from conftest import ROOT
from kit import settings
from kit.sandbox import JailLimits

KIT = [ROOT / "pybench.py", *sorted((ROOT / "kit").glob("*.py"))]
MODULES = {path.stem: path for path in sorted((ROOT / "kit").glob("*.py")) if path.stem != "__init__"}

# The core knows no benchmark and no feature; each feature sits on the core (docs/code.md says so, and why for
# each exception below).
CORE = {"engine", "harness", "sandbox", "jailed", "settings", "untrusted"}
FEATURE_ON_FEATURE = {
    ("classroom", "report"): "the teacher's pages are the report's pages (one jinja2 environment, one page style)",
    ("classroom", "suite"): "an assignment is a suite: its tasks file is read by the suite's one reader",
    ("judge", "report"): "the judge's records are read by the report, which owns their reader",
    ("airgap", "gpu"): "a pack carries the GPU build setup made",
    ("airgap", "original_pybench"): "a pack carries the original's jail environment",
}


def tree(path):
    return ast.parse(path.read_text())


def kit_imports(path) -> set[str]:
    """The kit modules path imports (at the top or inside a function)."""
    found = set()
    for node in ast.walk(tree(path)):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "kit":
                found |= {alias.name for alias in node.names}
            elif node.module.startswith("kit."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {alias.name.split(".")[1] for alias in node.names if alias.name.startswith("kit.")}
    return found


def test_no_function_of_the_kit_is_over_80_lines():
    long = [f"{path.name}:{node.name} {node.end_lineno - node.lineno + 1}" for path in KIT for node in ast.walk(tree(path))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 80]
    assert not long, long


def test_every_module_says_what_it_offers():
    for name, path in MODULES.items():
        module = tree(path)
        declared = [node for node in module.body if isinstance(node, ast.Assign) and any(getattr(target, "id", "") == "__all__" for target in node.targets)]
        assert declared, f"kit/{name}.py has no __all__"
        offered = ast.literal_eval(declared[0].value)
        defined = {target.id for node in module.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                   for target in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(target, ast.Name)}
        defined |= {node.name for node in module.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
        defined |= {alias.asname or alias.name for node in module.body if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
        assert set(offered) <= defined, f"kit/{name}.py offers what it does not define: {set(offered) - defined}"


def test_the_core_imports_no_feature_and_features_only_the_core():
    for name, path in MODULES.items():
        ours = kit_imports(path) - {name}
        if name in CORE:
            assert ours <= CORE, f"kit/{name}.py is core but imports {ours - CORE}"
        else:
            assert ours - CORE <= {other for feature, other in FEATURE_ON_FEATURE if feature == name}, \
                f"kit/{name}.py imports {ours - CORE} beside the core; README's map must say why"
    text = (ROOT / "docs" / "code.md").read_text()
    for feature, other in FEATURE_ON_FEATURE:
        assert re.search(rf"{feature} uses {other}:", text), f"docs/code.md's map does not say why {feature} imports {other}"


def test_the_jail_memory_default_is_written_once():
    """JailLimits holds it; --memory (a run's, grade's) and the checks' limits take it from there."""
    for path in KIT:
        for node in ast.walk(tree(path)):
            if isinstance(node, ast.keyword) and node.arg == "memory_gib" and isinstance(node.value, ast.Constant):
                raise AssertionError(f"{path.name} line {node.value.lineno}: a memory default of its own")
            if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == "--memory":
                raise AssertionError(f"{path.name} line {node.lineno}: a --memory flag of its own (settings.add_flags gives the run's)")
    assert settings.Settings().memory == JailLimits().memory_gib


def test_a_flag_is_declared_once_and_its_resume_key_follows():
    """A sampling flag is a field of Settings: --help lists it, a resumed run must share it, and it is in the run
    folder's digest (default_run_dir hashes the manifest's resume keys), with nothing else to write."""
    verdict = [item.name for item in dataclasses.fields(settings.Settings) if item.metadata["verdict"] is True]
    assert list(settings.resume_keys("suite")) == [*settings.RESUME_FACTS, *verdict]
    assert {"temperature", "top_p", "max_tokens", "max_turns", "seed", "samples", "ctx"} == set(verdict)
    assert "mlbench_setting" in settings.resume_keys("mlbench") and "mlbench_setting" not in settings.resume_keys("suite")
    help_text = settings.run_parser().format_help()
    for item in dataclasses.fields(settings.Settings):
        assert f"--{item.name.replace('_', '-')}" in help_text
    for path in KIT:
        if path.name != "settings.py":
            assert '"--top-p"' not in path.read_text() and '"--temperature"' not in path.read_text(), path.name


def test_the_flags_table_of_docs_runs_is_the_settings():
    rows = re.findall(r"^\|\s*(`--[^|]*?)\s*\|([^|]*)\|", (ROOT / "docs" / "runs.md").read_text(), re.MULTILINE)
    documented, defaults = set(), {}
    for flags, default in rows:
        names = re.findall(r"--([a-z][a-z-]*\*?)", flags)
        documented |= set(names)
        if len(names) == 1:
            defaults[names[0]] = default.strip()
    fields = {item.name.replace("_", "-"): item for item in dataclasses.fields(settings.Settings)}
    wildcard = {name[:-1] for name in documented if name.endswith("*")}
    undocumented = {name for name in fields if name not in documented and not any(name.startswith(prefix) for prefix in wildcard)}
    assert not undocumented, f"docs/runs.md's table lacks {undocumented}"
    assert not {name for name in documented if not name.endswith("*")} - set(fields), "docs/runs.md names flags a run has not"
    for name, shown in defaults.items():
        number = re.match(r"-?[\d.]+\b", shown)
        if number:
            default = fields[name].default if fields[name].default is not None else settings.PAPER_DEFAULTS[fields[name].name]
            assert float(number.group()) == float(default), f"docs/runs.md says --{name} defaults to {shown}, Settings {default}"


def test_where_to_change_what_names_places_that_exist():
    """Every row of the README's table names files that exist and names that are defined in them."""
    text = (ROOT / "README.md").read_text()
    table = text[text.index("## Where to change what"):text.index("## Documentation")]
    for row in table.splitlines()[4:]:
        for path in re.findall(r"`((?:kit/|checks/|tests/|docs/)[\w/.]+|[\w.]+\.py)`", row):
            if "<" not in path:
                assert (ROOT / path).exists(), f"README names {path}, which does not exist"
        for module, name in re.findall(r"`(\w+)\.(\w+)`", row):
            if module in MODULES:
                assert re.search(rf"^(def|class) {name}\b|^{name}\b|^    (def )?{name}\b", MODULES[module].read_text(), re.MULTILINE), \
                    f"README names {module}.{name}, not defined in kit/{module}.py"
