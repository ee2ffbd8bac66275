"""Imports run one way (shared DESIGN.md, "Imports run one way").

Every module under src/ragmeter is parsed (not imported); every `import`/`from ... import` in it, at module
level or inside a function, is resolved to the ragmeter module it names and checked against the layer order:

    fronts (cli/, the pytest plugin) -> the package root (lazy public API) -> report/, view/ -> experiments/,
    validity/, diagnose/
    -> run/ (and its executors) -> score/ -> ir/ text/ semantic/ judges/ metrics/ systems/ datasets/ store/
    -> llm/ -> stats/ -> models.py, safety.py, errors.py (and the leaf helpers)

A module may import its own package, and any module in a lower layer. Inside one layer, a package may import
another only along the edges of PEERS (the order DESIGN.md spells out in words: a system may read a dataset,
the registry knows the IR measures' names, a judge needs no store, a record never imports a system).
The IR engine imports nothing of ours but its own files, errors.py and safety.py; stats/ (every estimator)
nothing but its own files and errors.py; leaf helpers import no domain package.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "ragmeter"

# Highest layer first. A key names a module or a package (every module under it).
LAYERS: list[tuple[str, ...]] = [
    (
        "ragmeter.__main__",
        "ragmeter.runner",
    ),  # entry point and compatibility shim: nothing of ours imports them
    ("ragmeter.cli", "ragmeter.pytest_plugin"),
    ("ragmeter",),  # the package root: the public API, re-exported lazily
    ("ragmeter.report", "ragmeter.view", "ragmeter.integrations"),
    ("ragmeter.experiments", "ragmeter.validity", "ragmeter.diagnose"),
    ("ragmeter.run", "ragmeter.distributed"),
    ("ragmeter.score",),
    (
        "ragmeter.ir",
        "ragmeter.text",
        "ragmeter.semantic",
        "ragmeter.judges",
        "ragmeter.nuggets",
        "ragmeter.metrics",
        "ragmeter.systems",
        "ragmeter.datasets",
        "ragmeter.store",
    ),
    ("ragmeter.llm",),
    ("ragmeter.stats",),  # every estimator: numpy/scipy only, below the metric registry
    ("ragmeter.models", "ragmeter.yamlfile", "ragmeter._lazy", "ragmeter._version"),
    # the run record, the typed parts of a config and of a run's results, and the reader of old configs:
    # EvalConfig and EvalRunResult (models.py) are made of them
    ("ragmeter.records", "ragmeter.upgrade"),
    ("ragmeter.result_models",),
    ("ragmeter.safety",),
    ("ragmeter.safefiles", "ragmeter.paths"),  # safety.py re-exports its file helpers
    ("ragmeter.errors",),
]

# Imports between two groups of one layer: importer -> the groups it may import.
PEERS: dict[str, set[str]] = {
    # the viewer shows what the report renders; a report needs no viewer
    "ragmeter.view": {"ragmeter.report"},
    "ragmeter.run": {"ragmeter.distributed"},
    # a comparison shows agreement statistics and PPI from people's labels beside the runs it compares
    "ragmeter.experiments": {"ragmeter.validity"},  # the Ray executor starts Ray through distributed.cluster
    "ragmeter.systems": {"ragmeter.datasets", "ragmeter.semantic", "ragmeter.ir", "ragmeter.store"},
    "ragmeter.datasets": {"ragmeter.store"},  # ingesting a corpus writes it to the store
    # the demo nugget set is a data file beside the demo dataset's (found by package name, no code called)
    "ragmeter.nuggets": {"ragmeter.datasets"},
    # the registry knows the IR engine's measures; the other families declare their records beside their
    # code (text/, semantic/, judges/ import the record type) and the registry loads those by name
    "ragmeter.metrics": {"ragmeter.ir"},
    "ragmeter.judges": {"ragmeter.metrics", "ragmeter.nuggets"},  # nugget assignment reads nugget sets
    "ragmeter.text": {"ragmeter.metrics"},
    "ragmeter.semantic": {"ragmeter.metrics"},
}

# The IR engine and the leaf helpers: whatever their layer, they may import only these.
ONLY: dict[str, set[str]] = {
    "ragmeter.ir": {"ragmeter.errors", "ragmeter.safety"},
    "ragmeter.stats": {"ragmeter.errors"},
    "ragmeter.yamlfile": {"ragmeter.errors", "ragmeter.safety"},
    "ragmeter.judges.prompts": set(),
    "ragmeter._lazy": set(),
    "ragmeter._version": set(),
    "ragmeter.errors": set(),
    "ragmeter.safety": {"ragmeter.errors", "ragmeter.safefiles"},
    "ragmeter.safefiles": {"ragmeter.errors"},
    "ragmeter.paths": set(),
}


# Deprecated locations kept so that old imports still work: each warns and names its replacement, and defines
# nothing of its own (checked below). They look their new home up by name when an old name is used, so no package imports upward.
# A value of "*" means the shim's `_MOVED` maps each old name to its own new module.
SHIMS: dict[str, str] = {
    "ragmeter.runner": "*",
    "ragmeter.run.record": "*",
    "ragmeter.run.meter": "*",
    "ragmeter.run.systems": "*",
    "ragmeter.systems.chunking": "*",
    "ragmeter.score.rescore": "ragmeter.run.rescore",
    "ragmeter.distributed.executor": "ragmeter.run.ray_executor",
    "ragmeter.score.ppi_mean": "ragmeter.stats.ppi",
    "ragmeter.score.confseq": "ragmeter.stats.confseq",
    "ragmeter.experiments.paired_tests": "ragmeter.stats.paired",
    "ragmeter.experiments.power": "ragmeter.stats.power",
    "ragmeter.experiments.ppi": "ragmeter.stats.ppi",
    "ragmeter.experiments.repeats": "ragmeter.stats.krippendorff",
    "ragmeter.experiments.agreement": "ragmeter.validity.agreement",
    "ragmeter.experiments.human_labels": "ragmeter.validity.human_labels",
    "ragmeter.experiments.judge_validation": "ragmeter.validity.judge_validation",
    "ragmeter.experiments.qrels_judging": "ragmeter.validity.qrels_judging",
    "ragmeter.experiments.qrels_meta": "ragmeter.validity.qrels_meta",
    "ragmeter.experiments.qrels_provenance": "ragmeter.validity.qrels_provenance",
    "ragmeter.experiments.tau_ap": "ragmeter.validity.tau_ap",
    "ragmeter.experiments.validation_report": "ragmeter.validity.validation_report",
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    """Every module: its .py file, or the .pyi stub of a compiled one (ir/_native), so that
    `from ragmeter.ir import _native` names that module and not its package."""
    found = {module_name(p): p for p in sorted(SRC.rglob("*.pyi"))}
    found.update({module_name(p): p for p in sorted(SRC.rglob("*.py"))})
    return found


MODULES = all_modules()


def resolve(name: str) -> str:
    """The longest prefix of dotted `name` that is one of our modules (`ragmeter.ir.data.Qrels` -> ragmeter.ir.data)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in MODULES:
            return candidate
        parts.pop()
    return name


def imports_of(module: str, path: Path) -> list[tuple[int, str]]:
    """(line, ragmeter module) for every import in the file, nested in functions or not."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [
                (node.lineno, resolve(a.name)) for a in node.names if a.name.split(".")[0] == "ragmeter"
            ]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                drop = node.level - (1 if is_package else 0)
                base = base[: len(base) - drop] if drop else base
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "ragmeter":
                continue
            for alias in node.names:  # `from ragmeter import metrics` imports the module ragmeter.metrics
                found.append((node.lineno, resolve(f"{target}.{alias.name}")))
    return found


def group_of(module: str) -> tuple[int, str]:
    """(layer index, the LAYERS key that holds `module`); the longest matching key wins."""
    best: tuple[int, str] | None = None
    for index, keys in enumerate(LAYERS):
        for key in keys:
            matches = module == key or (key != "ragmeter" and module.startswith(key + "."))
            if matches and (best is None or len(key) > len(best[1])):
                best = (index, key)
    if best is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS in {__file__}")
    return best


def only_key(module: str) -> str | None:
    keys = [k for k in ONLY if module == k or module.startswith(k + ".")]
    return max(keys, key=len) if keys else None


def violation(importer: str, imported: str) -> str | None:
    if SHIMS.get(importer) == imported:
        return None
    src_layer, src_group = group_of(importer)
    dst_layer, dst_group = group_of(imported)
    if src_group == dst_group:
        return None
    key = only_key(importer)
    limit = ONLY[key] if key is not None else None
    if limit is not None and dst_group not in limit and imported not in limit:
        return f"{src_group} may import only {sorted(limit) or 'nothing of ours'}"
    if dst_layer > src_layer:
        return None
    peers = PEERS.get(src_group, set())
    if dst_layer == src_layer and (dst_group in peers or imported in peers):
        return None
    if dst_layer < src_layer:
        return f"{dst_group} is a higher layer than {src_group}"
    return f"{dst_group} is a peer {src_group} may not import"


def layer_violations() -> list[str]:
    found = []
    for module, path in MODULES.items():
        for line, imported in imports_of(module, path):
            reason = violation(module, imported)
            if reason:
                rel = path.relative_to(SRC.parent.parent)
                found.append(f"{rel}:{line}: {module} imports {imported} ({reason})")
    return found


# Imports made by name (a module named in a string: importlib, resources, lazy export tables, forwarders'
# tables, "module:attr" targets) follow the same layers. The one upward edge allowed, with its reason:
BY_NAME_ALLOWED: dict[tuple[str, str], str] = {
    # the registry sits below the families that compute metrics, and loads their records (light modules of
    # MetricSpec tuples, no model or client) by name on first need, so `ragmeter eval` imports none of them
    ("ragmeter.metrics.registry", "ragmeter.text.specs"): "registry loads family records by name",
    ("ragmeter.metrics.registry", "ragmeter.semantic.specs"): "registry loads family records by name",
    ("ragmeter.metrics.registry", "ragmeter.judges.specs"): "registry loads family records by name",
}
_NAMED = re.compile(r"^(ragmeter(?:\.[A-Za-z_][A-Za-z_0-9]*)+)(?::[A-Za-z_][\w.]*|[.:])?$")


def _prefix(node: ast.AST) -> str | None:
    """The leading text of a string expression: a constant, an f-string's first part, `"..." + x`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        return _prefix(node.values[0])
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _prefix(node.left)
    return None


def _computed_by_nodes(tree: ast.AST) -> set[int]:
    """ids of the string expressions given as a metric record's `computed_by` (keyword, dict key, name)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "computed_by":
            out.add(id(node.value))
        elif isinstance(node, ast.Dict):
            out.update(
                id(v)
                for k, v in zip(node.keys, node.values, strict=True)
                if isinstance(k, ast.Constant) and k.value == "computed_by"
            )
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "computed_by" for t in node.targets
        ):
            out.add(id(node.value))
    return out


def named_imports_of(module: str, path: Path) -> list[tuple[int, str, bool]]:
    """(line, ragmeter module, is a computed_by) for every string in the file that names one of our modules
    (exactly, as `module:attr`, or as the prefix `"ragmeter.pkg." + name`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    computed = _computed_by_nodes(tree)
    found: list[tuple[int, str, bool]] = []
    for node in ast.walk(tree):
        text = _prefix(node)
        if text is None:
            continue
        hit = _NAMED.match(text)
        partial = text.endswith((".", ":"))  # only the head of a longer string names a module so
        if hit is None or hit.group(1) not in MODULES or (partial and isinstance(node, ast.Constant)):
            continue
        found.append((node.lineno, hit.group(1), id(node) in computed))
    return found


def test_imports_made_by_name_run_one_way() -> None:
    problems = []
    for module, path in MODULES.items():
        for line, imported, computed_by in named_imports_of(module, path):
            if computed_by or imported == module or module in SHIMS:
                continue  # a record's computed_by is a name (next test); a forwarder names its new home
            reason = violation(module, imported)
            if reason and (module, imported) not in BY_NAME_ALLOWED:
                rel = path.relative_to(SRC.parent.parent)
                problems.append(f"{rel}:{line}: {module} names {imported} ({reason})")
    assert not problems, "imports by name against DESIGN.md's layer order:\n" + "\n".join(problems)


def test_a_metric_records_computed_by_is_never_imported_by_the_library() -> None:
    """`computed_by` names what computes a metric (scoring, validity) from the registry below it; it stays
    a name because nothing in the library resolves it (`MetricSpec.computation()` is for tests and users)."""
    calls = [
        f"{module}:{node.lineno}"
        for module, path in MODULES.items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "computation"
    ]
    assert not calls, calls


def test_the_by_name_rule_sees_a_string_import(tmp_path: Path) -> None:
    source = (
        "import importlib\n"
        "TARGET = 'ragmeter.run.rescore'\n"
        "def f():\n"
        "    return importlib.import_module(TARGET), 'ragmeter.score.classes:class_of'\n"
    )
    named = named_imports_of("ragmeter.metrics.x", _write(tmp_path, source))
    assert [(m, c) for _, m, c in named] == [
        ("ragmeter.run.rescore", False),
        ("ragmeter.score.classes", False),
    ]
    assert violation("ragmeter.metrics.x", "ragmeter.run.rescore") is not None
    assert ("ragmeter.metrics.registry", "ragmeter.judges.specs") in BY_NAME_ALLOWED


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        group_of(module)


def test_imports_run_one_way() -> None:
    problems = layer_violations()
    assert not problems, "imports against DESIGN.md's layer order:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    ("importer", "imported", "allowed"),
    [
        ("ragmeter.cli.run", "ragmeter.run.api", True),
        ("ragmeter.score.rescore", "ragmeter.run.meter", False),
        ("ragmeter.systems.demo", "ragmeter.run.meter", False),
        ("ragmeter.datasets.ingest", "ragmeter.systems.chunking", False),
        ("ragmeter.models", "ragmeter.distributed.cluster", False),
        ("ragmeter.yamlfile", "ragmeter.ir._bytes", False),
        ("ragmeter.ir.data", "ragmeter.models", False),
        ("ragmeter.cli.runs", "ragmeter.runner", False),
        ("ragmeter.report.html", "ragmeter", False),
        ("ragmeter.pytest_plugin", "ragmeter", True),
        ("ragmeter.score.rescore", "ragmeter.run.rescore", True),
        ("ragmeter.score.finish", "ragmeter.run.rescore", False),
        ("ragmeter.judges.core", "ragmeter.store", False),
        ("ragmeter.records", "ragmeter.systems.external", False),
        ("ragmeter.metrics.builtin", "ragmeter.judges.prompts", False),
        ("ragmeter.metrics.builtin", "ragmeter.judges.answer", False),
        ("ragmeter.judges.specs", "ragmeter.metrics.spec", True),
        ("ragmeter.text.specs", "ragmeter.metrics.spec", True),
        ("ragmeter.judges.prompts", "ragmeter.models", False),
        ("ragmeter.metrics.aggregate", "ragmeter.stats.resample", True),
        ("ragmeter.stats.intervals", "ragmeter.stats.resample", True),
        ("ragmeter.stats.effects", "ragmeter.errors", True),
        ("ragmeter.stats.ppi", "ragmeter.models", False),
        ("ragmeter.stats.effects", "ragmeter.metrics", False),
        ("ragmeter.stats.resample", "ragmeter.safety", False),
        ("ragmeter.llm.client", "ragmeter.stats.resample", True),
    ],
)
def test_the_rule_itself(importer: str, imported: str, allowed: bool) -> None:
    assert (violation(importer, imported) is None) is allowed


def test_function_local_imports_are_seen(tmp_path: Path) -> None:
    source = "def f():\n    from ragmeter.run.meter import MeteredLLM\n    return MeteredLLM\n"
    path = SRC / "score" / "rescore.py"
    tree_imports = [m for _, m in imports_of("ragmeter.score.x", _write(tmp_path, source))]
    assert tree_imports == ["ragmeter.run.meter"]
    assert path.exists()


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "x.py"
    p.write_text(text)
    return p


@pytest.mark.parametrize(("shim", "target"), sorted(SHIMS.items()))
def test_shims_only_forward_with_a_deprecation(shim: str, target: str) -> None:
    import importlib
    import warnings

    tree = ast.parse(MODULES[shim].read_text(encoding="utf-8"))
    defined = [
        n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    ]
    assert defined == ["__getattr__"], f"{shim} defines more than its forwarding: {defined}"
    module = importlib.import_module(shim)
    assert module._MOVED
    for name in module._MOVED:
        new = module._MOVED[name] if target == "*" else target
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = getattr(module, name)
        assert value is getattr(importlib.import_module(new), name)
        assert any(
            issubclass(w.category, DeprecationWarning) and f"{new}.{name}" in str(w.message) for w in caught
        )
    with pytest.raises(AttributeError):
        module.not_a_moved_name  # noqa: B018


def test_nothing_in_src_or_docs_uses_a_deprecated_path() -> None:
    """No module imports a forwarder, and no code example in docs/ does (docs may name one as deprecated)."""
    import re

    found = [
        f"{module} imports {imported}"
        for module, path in MODULES.items()
        for _, imported in imports_of(module, path)
        if imported in SHIMS and imported != module
    ]
    root = SRC.parent.parent
    in_code = re.compile(r"\b(?:from|import)\s+(" + "|".join(re.escape(s) for s in SHIMS) + r")\b(?!\.)")
    for path in sorted((root / "docs").rglob("*.md")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if in_code.search(line):
                found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    assert not found, "old paths still used:\n" + "\n".join(found)


def import_circles() -> list[list[str]]:
    """The strongly connected groups of more than one module in the graph of file imports (function-local
    imports included): each group imports itself in a circle."""
    graph = {m: {i for _, i in imports_of(m, p) if i in MODULES and i != m} for m, p in MODULES.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan; the graph is a few hundred modules deep at most
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return circles


def test_no_import_circle_between_files() -> None:
    circles = import_circles()
    assert not circles, "modules that import each other in a circle:\n" + "\n".join(
        map(" <-> ".join, circles)
    )


def test_the_circle_finder_sees_a_function_local_circle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = _write(tmp_path, "def f():\n    from ragmeter.stats import paired\n")
    modules = {**MODULES, "ragmeter.stats.resample": a}  # resample importing paired, paired resample
    monkeypatch.setitem(globals(), "MODULES", modules)
    assert ["ragmeter.stats.paired", "ragmeter.stats.resample"] in import_circles()


def test_the_viewer_reads_no_run_layer_code() -> None:
    """The viewer reads datasets (their hash, their resolution by name) from datasets/, not through run/."""
    found = [
        f"{module} imports {imported}"
        for module, path in MODULES.items()
        if module.startswith("ragmeter.view")
        for _, imported in imports_of(module, path)
        if imported == "ragmeter.run" or imported.startswith("ragmeter.run.")
    ]
    assert not found, "\n".join(found)


def test_the_run_commands_options_pass_through_no_experiment_module() -> None:
    """`ragmeter run` checks its gates against the plan's own names (MetricPlan.names), not experiments/."""
    path = MODULES["ragmeter.cli.run_options"]
    used = [
        m for _, m in imports_of("ragmeter.cli.run_options", path) if m.startswith("ragmeter.experiments")
    ]
    assert not used, used
