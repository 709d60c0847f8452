"""The import rules docs/architecture.md states, checked on the source with `ast`: no module is
imported, so no TensorFlow starts and a rule broken anywhere (even inside a function) shows.

A module's imports are read two ways: `at_import`, what runs when it is imported (module-level
statements, and the package `__init__`s Python runs on the way), and `everywhere`, which adds
the imports inside functions and the names a lazily re-exporting package (common/lazy_exports.py:
`replication`, `experiments.data`) hands out on attribute access. The TensorFlow family of
third-party packages is one node, `<tensorflow>`.
"""
from __future__ import annotations

import ast
import pathlib
from dataclasses import dataclass

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("common", "replication", "sngan", "experiments", "benchmarks", "scripts")
TENSORFLOW = "<tensorflow>"
TENSORFLOW_ROOTS = {"tensorflow", "keras", "tf_keras", "tensorflow_gan", "tensorflow_hub",
                    "tensorflow_datasets"}

# -- the rules (docs/architecture.md, "What may import what") ----------------------------------
MAY_IMPORT = {  # top-level package -> the suite packages it may import besides itself
    "common": set(),
    "replication": {"common"},
    "sngan": {"common", "replication"},
    "experiments": {"common", "replication", "sngan"},
    "benchmarks": {"common", "replication", "sngan", "experiments"},
    "scripts": {"common", "replication", "sngan", "experiments"},
}
# running writes a point's files and reporting reads them: they meet only at these modules
SHARED_RECORDS = ("experiments.records", "experiments.record_base", "experiments.score_records",
                  "experiments.point_record", "experiments.sweep_files")
MAY_NOT_IMPORT = {  # module or package prefix -> prefixes it must not import
    "experiments.reporting": ("experiments.running", "experiments.evaluation",
                              "experiments.data", "experiments.trained_generator"),
    "experiments.reporting.lib": ("experiments.reporting.sections",
                                  "experiments.reporting.report"),
    "experiments.running": ("experiments.reporting",),
    "experiments.evaluation": ("experiments.reporting",),
    "experiments.data": ("experiments.reporting", "experiments.running",
                         "experiments.evaluation"),
    **{m: ("experiments.running", "experiments.evaluation", "experiments.reporting",
           "experiments.data") for m in SHARED_RECORDS},
}
REPORTING_IMPORTED_BY = ("experiments.cli",)  # the one door into reporting
# no TensorFlow at all, not even inside a function: a report rebuilds, and a config or a record
# is read, on a machine without TensorFlow
NO_TENSORFLOW = ("experiments.reporting", "experiments.config", "experiments.configs",
                 "sngan.config", "sngan.options", "replication.specs") + SHARED_RECORDS
# no TensorFlow when imported: the command line validates a config before TensorFlow starts
NO_TENSORFLOW_AT_IMPORT = ("experiments.cli", "experiments.__main__", "replication",
                           "replication.launch", "experiments.data")


# -- the graph ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class ImportGraph:
    modules: frozenset[str]
    at_import: dict[str, set[str]]  # module -> modules (and TENSORFLOW) it imports when imported
    everywhere: dict[str, set[str]]  # ... and inside functions, and lazy re-exports


def _module_name(path: pathlib.Path, root: pathlib.Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _lazy_exports(tree: ast.Module) -> dict[str, str]:
    """{name: submodule} of a package that re-exports through `_EXPORTS = {...}`."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None)
                                             for t in node.targets] == ["_EXPORTS"]:
            return {name: sub for sub, names in ast.literal_eval(node.value).items()
                    for name in names}
    return {}


def _module_level(tree: ast.Module) -> list[ast.stmt]:
    """The import statements that run on import: not those in function bodies."""
    found, todo = [], list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            todo.extend(n for n in ast.iter_child_nodes(node) if isinstance(n, ast.stmt))
    return found


def _parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def build_graph(root: pathlib.Path, packages=PACKAGES) -> ImportGraph:
    """The import graph of every module under `root`'s `packages` directories."""
    trees = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            trees[_module_name(path, root)] = (ast.parse(path.read_text()), path.name)
    modules = frozenset(trees)
    lazy = {m: _lazy_exports(tree) for m, (tree, _) in trees.items()}

    def resolve(name: str) -> str | None:
        if name.split(".")[0] in TENSORFLOW_ROOTS:
            return TENSORFLOW
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    def targets(node, module: str, is_package: bool) -> set[str]:
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            base = node.module or ""
            if node.level:  # relative: from the module's package up level - 1
                package = (module if is_package else module.rpartition(".")[0]).split(".")
                base = ".".join(package[:len(package) - node.level + 1] + [base]).strip(".")
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules
                     else f"{base}.{lazy[base][a.name]}" if a.name in lazy.get(base, {})
                     else base for a in node.names]
        return {resolve(n) for n in names} - {None, module}

    at_import, everywhere = {}, {}
    for module, (tree, filename) in trees.items():
        is_package = filename == "__init__.py"
        at_import[module] = set().union(
            *(targets(n, module, is_package) for n in _module_level(tree)))
        found = set(at_import[module]).union(
            *(targets(n, module, is_package) for n in ast.walk(tree)
              if isinstance(n, (ast.Import, ast.ImportFrom))))
        for node in ast.walk(tree):  # package.name where the package re-exports lazily
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.attr in lazy.get(node.value.id, {})):
                found.add(f"{node.value.id}.{lazy[node.value.id][node.attr]}")
        everywhere[module] = found - {module}
    return ImportGraph(modules, at_import, everywhere)


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """What importing `start` imports, directly or not; as Python does, importing a.b.c first
    runs the `__init__` of a and of a.b."""
    seen, todo = set(), [start]
    while todo:
        node = todo.pop()
        for nxt in sorted(graph.get(node, set()) | set(_parents(node))):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle [a, b, ..., a], or None. Edges to a module's own package `__init__`
    are not circles Python trips on and are left out by the caller."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done

    def visit(node, path):
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt, path + [nxt])):
                return cycle
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node, [node])):
            return cycle
    return None


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def violations(graph: ImportGraph) -> list[str]:
    """Every import that breaks a rule above, as 'importer -> imported (rule)'."""
    found = []
    for module in sorted(graph.modules):
        package = module.split(".")[0]
        for target in sorted(graph.everywhere[module] - {TENSORFLOW}):
            if target.split(".")[0] not in MAY_IMPORT[package] | {package}:
                found.append(f"{module} -> {target} ({package} imports only "
                             f"{sorted(MAY_IMPORT[package])})")
            for prefix, banned in MAY_NOT_IMPORT.items():
                if _within(module, prefix) and any(_within(target, b) for b in banned):
                    found.append(f"{module} -> {target} ({prefix} imports none of {banned})")
            if (_within(target, "experiments.reporting")
                    and not _within(module, "experiments.reporting")
                    and module not in REPORTING_IMPORTED_BY):
                found.append(f"{module} -> {target} (only {REPORTING_IMPORTED_BY} import "
                             "reporting)")
        if (any(_within(module, p) for p in NO_TENSORFLOW)
                and TENSORFLOW in reachable(graph.everywhere, module)):
            found.append(f"{module} -> {TENSORFLOW} (imports no TensorFlow)")
        if module in NO_TENSORFLOW_AT_IMPORT and TENSORFLOW in reachable(graph.at_import, module):
            found.append(f"{module} -> {TENSORFLOW} (no TensorFlow when imported)")
    return found


def module_cycle(graph: ImportGraph) -> list[str] | None:
    """An import circle between modules, counting imports inside functions too."""
    return find_cycle({m: {t for t in ts if t != TENSORFLOW and not _within(m, t)}
                       for m, ts in graph.everywhere.items()})


@pytest.fixture(scope="module")
def suite() -> ImportGraph:
    return build_graph(ROOT)


# -- the suite obeys them ----------------------------------------------------------------------
def test_the_suite_breaks_no_import_rule(suite):
    assert len(suite.modules) > 100  # the whole tree was read
    assert violations(suite) == []


def test_no_module_imports_itself_back_in_a_circle(suite):
    assert module_cycle(suite) is None


def test_the_graph_sees_what_the_rules_rest_on(suite):
    """Known edges, so an empty graph cannot pass the two tests above."""
    assert "experiments.records" in suite.everywhere["experiments.reporting.study"]
    assert "experiments.reporting.report" in suite.everywhere["experiments.cli"]
    assert "experiments.reporting.report" not in suite.at_import["experiments.cli"]
    assert TENSORFLOW in reachable(suite.everywhere, "experiments.cli")  # in its functions
    assert TENSORFLOW in suite.at_import["sngan.training"]
    # `replication.replica_normal` in a function reaches the module behind the lazy export
    assert "replication.randomness" in suite.everywhere["sngan.train_step"]
    assert "replication.randomness" not in suite.at_import["sngan.train_step"]


def test_architecture_doc_names_every_package_and_module(suite):
    """docs/architecture.md lists the layout down to each module, except inside reporting
    (named down to lib/ and sections/, whose modules are the sections' business) and configs/
    (one file per experiment)."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    missing = []
    for module in sorted(suite.modules):
        parts = module.split(".")
        if parts[0] in ("benchmarks", "scripts") or (
                parts[:2] in (["experiments", "reporting"], ["experiments", "configs"])
                and not (len(parts) == 2 or parts[2:] in (["lib"], ["sections"]))):
            continue
        is_package = (ROOT.joinpath(*parts) / "__init__.py").exists()
        if parts[-1] + ("/" if is_package else ".py") not in doc:
            missing.append(module)
    assert missing == []


# -- and they can fail -------------------------------------------------------------------------
def test_find_cycle_finds_a_circle_and_only_a_circle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"a"}}) == ["a", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set(), "d": {"a"}}) is None  # a diamond


def _tree(tmp_path, files: dict[str, str]) -> ImportGraph:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return build_graph(tmp_path, ("common", "replication", "sngan", "experiments"))


def test_a_broken_rule_and_a_circle_are_reported(tmp_path):
    graph = _tree(tmp_path, {
        "common/__init__.py": "",
        "replication/__init__.py": "",
        "sngan/__init__.py": "",
        "sngan/layers.py": "def f():\n    from experiments import records\n",  # upward
        "experiments/__init__.py": "",
        "experiments/records.py": "import numpy\nfrom experiments import sweep_files\n",
        "experiments/sweep_files.py": "from . import records\n",  # relative, closes a circle
        "experiments/reporting/__init__.py": "",
        "experiments/reporting/report.py": "from experiments.running.point import run\n",
        "experiments/running/__init__.py": "",
        "experiments/running/point.py": "import tensorflow as tf\n",
        "experiments/evaluation/__init__.py": "",
        "experiments/evaluation/cas.py": "def f():\n    import experiments.reporting\n",
    })
    assert violations(graph) == [
        "experiments.evaluation.cas -> experiments.reporting (experiments.evaluation imports "
        "none of ('experiments.reporting',))",
        "experiments.evaluation.cas -> experiments.reporting (only ('experiments.cli',) import "
        "reporting)",
        "experiments.reporting.report -> experiments.running.point ("
        "experiments.reporting imports none of ('experiments.running', "
        "'experiments.evaluation', 'experiments.data', 'experiments.trained_generator'))",
        "experiments.reporting.report -> <tensorflow> (imports no TensorFlow)",
        "sngan.layers -> experiments.records (sngan imports only ['common', 'replication'])",
    ]
    assert module_cycle(graph) == ["experiments.records", "experiments.sweep_files",
                                   "experiments.records"]


def test_tensorflow_behind_a_lazy_export_or_a_function_counts_only_everywhere(tmp_path):
    graph = _tree(tmp_path, {
        "common/__init__.py": "",
        "replication/__init__.py": "_EXPORTS = {'replicator': ['make_replicator']}\n",
        "replication/replicator.py": "import tensorflow\n",
        "replication/specs.py": "import replication\ndef f():\n"
                                "    return replication.make_replicator()\n",
        "experiments/__init__.py": "",
        "experiments/cli.py": "def main():\n    from replication import make_replicator\n",
    })
    assert "replication.replicator" in graph.everywhere["experiments.cli"]
    assert TENSORFLOW not in reachable(graph.at_import, "experiments.cli")
    assert violations(graph) == ["replication.specs -> <tensorflow> (imports no TensorFlow)"]
