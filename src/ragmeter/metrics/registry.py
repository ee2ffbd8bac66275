"""The metric registry: the one place that knows what a metric is.

Nobody else keeps a list of metric names, directions or ranges: the runner asks which metrics a run
computes, the gate and `--metrics` ask whether a name exists, compare/report/ablations ask for direction,
range and scale, the aggregator asks how to build an interval.

Each metric family declares its records beside its code: the retrieval, diagnosis, latency and agreement
records in this package, the lexical ones in `ragmeter.text.specs`, the semantic ones in
`ragmeter.semantic.specs`, the judges' in `ragmeter.judges.specs` (FAMILY_MODULES). Those three are loaded
the first time a name is not found among the records loaded so far, or the whole list is asked for, so that
`ragmeter eval` (retrieval measures only) never imports text/, semantic/ or judges/.
"""

from __future__ import annotations

import importlib
import re
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ragmeter.errors import InputError
from ragmeter.metrics.spec import Family, Interval, MetricSpec, ScoreInput, Stage

_SPECS: dict[str, MetricSpec] = {}  # canonical name (or family template such as "ndcg@k") -> spec
_ALIASES: dict[str, str] = {}
_LATENCY = re.compile(r"^latency_([a-z0-9_]+)_ms$")
# A per-query judge metric judged in repeats has its all-k pass beside its mean (ragmeter.score.flaky).
_PASS_ALL = re.compile(r"^(.+)_pass_all$")

# Modules that declare a family's records beside its code, each as a tuple `SPECS` of MetricSpec; light
# modules (no model, no LLM client), imported by name because the registry sits below those families.
FAMILY_MODULES: tuple[str, ...] = ("ragmeter.text.specs", "ragmeter.semantic.specs", "ragmeter.judges.specs")
_pending: list[str] = list(FAMILY_MODULES)
_loading = threading.RLock()


def load_families() -> None:
    """Collect the records of every family module not loaded yet (idempotent, thread-safe)."""
    with _loading:
        while _pending:
            module = importlib.import_module(_pending[0])
            for spec in module.SPECS:
                _add(spec)
            _pending.pop(0)


def loaded_families() -> list[str]:
    """The family modules whose records are in the registry now (a test asks: eval loads none)."""
    return [m for m in FAMILY_MODULES if m not in _pending]


def _add(spec: MetricSpec, *, replace: bool = False) -> MetricSpec:
    taken = spec.name in _SPECS or spec.name in _ALIASES
    if taken and not replace:
        raise InputError(f"metric {spec.name!r} is already registered", source="metrics")
    _SPECS[spec.name] = spec
    for alias in spec.aliases:
        _ALIASES[alias] = spec.name
    return spec


def register(
    name: str,
    compute: Callable[[ScoreInput], float | None],
    *,
    range: tuple[float | None, float | None] = (0.0, 1.0),
    higher_is_better: bool = True,
    inputs: Sequence[str] = ("answer", "gold_answers"),
    scale: str | None = None,
    interval: Interval = "bootstrap",
    version: str = "1",
    description: str = "",
    aliases: Sequence[str] = (),
    headline: int = 0,
    replace: bool = False,
) -> MetricSpec:
    """Register a metric of your own in one call. `compute(inp: ScoreInput) -> float | None` is called
    once per answered query (None = undefined for that query); its values are aggregated, compared,
    gated, exported and reported like every built-in metric. `headline` > 0 makes it a headline metric
    of that rank (1 = first: the runs list, the viewer and the demo show it before the others).

        ragmeter.metrics.register("answer_length", lambda i: float(len((i.answer or "").split())),
                                  range=(0, None), higher_is_better=False, scale="words")
    """
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise InputError(f"a metric name is lower-case letters, digits and _: {name!r}", source="metrics")
    if not callable(compute):
        raise InputError(f"metric {name!r}: compute must be callable", source="metrics")
    lo, hi = range
    if lo is not None and hi is not None and lo >= hi:
        raise InputError(f"metric {name!r}: range {range} is empty", source="metrics")
    load_families()  # a user metric may not take a built-in's name, loaded yet or not
    scale = scale or (f"{lo:g}-{hi:g}" if lo is not None and hi is not None else "unbounded")
    shown: dict[str, Any] = {"scale": scale, "interval": interval, "version": version}
    shown |= {"description": description, "aliases": tuple(aliases), "compute": compute, "headline": headline}
    spec = MetricSpec(name, "custom", "query", tuple(inputs), (lo, hi), higher_is_better, **shown)
    return _add(spec, replace=replace)


def unregister(name: str) -> None:
    """Remove a user metric (tests, notebooks)."""
    spec = _SPECS.get(name)
    if spec is None or spec.family != "custom":
        raise InputError(f"no user metric {name!r}", source="metrics")
    del _SPECS[name]
    for alias in spec.aliases:
        _ALIASES.pop(alias, None)


def declare(
    name: str,
    family: Family,
    stage: Stage,
    inputs: Sequence[str],
    range: tuple[float | None, float | None],
    *,
    higher_is_better: bool = True,
    replace: bool = False,
    **kw: Any,
) -> MetricSpec:
    """Register a metric record now (the retrieval family in ragmeter.metrics.builtin; `register` for user
    metrics). A family declared beside its code lists its records in a module of FAMILY_MODULES instead."""
    return _add(
        MetricSpec(name, family, stage, tuple(inputs), range, higher_is_better, **kw), replace=replace
    )


def lookup_template(name: str) -> MetricSpec:
    """A registered record by its exact name, family templates (`ndcg@k`) included."""
    if name not in _SPECS:
        load_families()
    return _SPECS[name]


def _retrieval(name: str) -> MetricSpec | None:
    from ragmeter.ir.measures import parse_measure

    try:
        measure = parse_measure(name)
    except InputError:
        return None
    base = measure.family
    template = _SPECS.get(f"{base}@k") if measure.k else _SPECS.get(base)
    if template is None:  # e.g. rprec@k is rejected by parse_measure already; defensive
        return None
    return template.with_name(measure.name, parameters=())


def lookup(name: str) -> MetricSpec | None:
    """The spec of a concrete metric name (aliases and trec_eval names accepted), or None."""
    key = name.strip()
    spec = _find(key)
    # A name is a record's or an IR measure's, never both (tests/metrics/test_families.py), so the order
    # only decides what is imported: the IR parser first for a retrieval-shaped name (`ragmeter eval` then
    # loads no family), else the families' records first (no IR engine imported to find token_f1).
    if spec is None and _pending and not _ir_first(key):
        load_families()
        spec = _find(key)
    if spec is None:
        spec = _retrieval(key)
    if spec is None and _pending:
        load_families()
        spec = _find(key)
    return spec


def _ir_first(key: str) -> bool:
    """Ask the IR parser before the families: it is loaded already, or `key` has the shape of a retrieval
    record's name or alias (a trailing cut-off read as k: ndcg@10 -> ndcg@k, P_5 -> P_k)."""
    if "ragmeter.ir.measures" in sys.modules:
        return True
    for shape in (key, re.sub(r"\d+$", "k", key)):
        spec = _SPECS.get(_ALIASES.get(shape, shape))
        if spec is not None and spec.family == "retrieval":
            return True
    return False


def _find(key: str) -> MetricSpec | None:
    """A record (or alias, or stage latency) among those loaded so far; IR measure names aside."""
    if key in _SPECS and not _SPECS[key].parameters:
        return _SPECS[key]
    if key in _ALIASES and not _SPECS[_ALIASES[key]].parameters:
        return _SPECS[_ALIASES[key]]
    at_k = re.fullmatch(r"(.+)@([1-9]\d*)", key)  # a per-query family@k (nugget_recall@5); IR's are parsed
    template = _SPECS.get(f"{at_k.group(1)}@k") if at_k else None
    if at_k and template is not None and template.family != "retrieval":
        return template.with_name(key, parameters=())
    m = _LATENCY.match(key)
    if m:
        return _SPECS["latency_ms"].with_name(key, parameters=(), description=f"{m.group(1)} stage latency")
    m = _PASS_ALL.match(key)
    base = _find(m.group(1)) if m else None
    if base is not None and base.family == "judge" and base.stage == "query":
        return _pass_all(base, key)
    return None


def _pass_all(base: MetricSpec, name: str) -> MetricSpec:
    """`<judge>_pass_all`: 1 when every repeat of a query passes (tau-bench's pass^k), else 0."""
    what = f"1 when every repeat of {base.name} passes its threshold (pass^k), else 0; run --repeat N"
    return base.with_name(
        name,
        parameters=(),
        aliases=(),
        range=(0.0, 1.0),
        higher_is_better=True,
        scale="0-1",
        interval="wilson",
        level="interval",
        headline=0,
        default=False,
        plannable=False,
        computed_by="ragmeter.score.flaky:pass_all_values",
        description=what,
    )


def get(name: str, *, source: str = "metrics") -> MetricSpec:
    """The spec of `name`, or an InputError that lists what exists."""
    spec = lookup(name)
    if spec is None:
        raise InputError(f"unknown metric {name!r}; known: {', '.join(known_names())}", source=source)
    return spec


def canonical(name: str, *, source: str = "metrics") -> str:
    return get(name, source=source).name


def check(names: Iterable[str], *, source: str = "metrics") -> list[str]:
    """Canonical names of `names`, or one InputError naming the first unknown one."""
    return [canonical(n, source=source) for n in names]


def specs() -> list[MetricSpec]:
    """Every registered record (families as templates), in display order."""
    load_families()
    return sorted(_SPECS.values(), key=lambda s: (_FAMILY_ORDER.index(s.family), _order(s.name)))


def known_names() -> list[str]:
    return [s.name for s in specs()]


def names(
    family: str | None = None,
    stage: str | None = None,
    *,
    default: bool | None = None,
    plannable: bool | None = None,
) -> list[str]:
    """The names of the records that match every filter given, in display order (templates as `ndcg@k`)."""
    wanted = {"family": family, "stage": stage, "default": default, "plannable": plannable}
    filters = {k: v for k, v in wanted.items() if v is not None}
    return [s.name for s in specs() if all(getattr(s, k) == v for k, v in filters.items())]


_FAMILY_ORDER: list[str] = [
    "retrieval",
    "lexical",
    "semantic",
    "judge",
    "diagnosis",
    "custom",
    "latency",
    "agreement",
]
_RETRIEVAL_ORDER = ["recall", "precision", "ndcg", "ndcg_exp", "hit", "mrr", "map", "rprec", "aqwv"]
_RETRIEVAL_ORDER += ["bpref", "infap", "judged"]


def _order(name: str) -> tuple[int, int, str]:
    base, _, k = name.partition("@")
    rank = _RETRIEVAL_ORDER.index(base) if base in _RETRIEVAL_ORDER else 99
    return (rank, int(k) if k.isdigit() else 0, name)


def sort_key(name: str) -> tuple[int, int, int, str]:
    """Display order of concrete metric names: retrieval (by family, then cut-off), lexical, ..."""
    spec = lookup(name)
    fam = _FAMILY_ORDER.index(spec.family) if spec is not None else len(_FAMILY_ORDER)
    return (fam, *_order(name))


def higher_is_better(name: str) -> bool:
    spec = lookup(name)
    return True if spec is None else spec.higher_is_better


def family_of(name: str) -> str | None:
    spec = lookup(name)
    return None if spec is None else spec.family


# The cut-off shown for a family@k when nothing else is asked for (headline_cutoff).
HEADLINE_K = 10


def headline_cutoff(ks: Iterable[int], preferred: int | None = None) -> int:
    """The one cut-off of a family@k shown first: `preferred` (a record's headline_k) when present, else
    HEADLINE_K when present, else the largest."""
    have = set(ks)
    return preferred if preferred in have else (HEADLINE_K if HEADLINE_K in have else max(have))


def headline(names: Iterable[str], *, limit: int | None = None) -> list[str]:
    """The headline metrics among `names`, best first: the registry's declared headline metrics, one
    cut-off per family (headline_cutoff with its headline_k)."""
    by_family: dict[str, list[tuple[int, str]]] = {}
    ranked: list[tuple[int, str]] = []
    for name in dict.fromkeys(names):
        spec = lookup(name)
        if spec is None:
            continue
        base, _, k = name.partition("@")
        template = _SPECS.get(f"{base}@k") if k.isdigit() else None
        rank = template.headline if template is not None else spec.headline
        if rank <= 0:
            continue
        if template is not None:
            by_family.setdefault(base, []).append((int(k), name))
        else:
            ranked.append((rank, name))
    for base, options in by_family.items():
        template = _SPECS[f"{base}@k"]
        ks = {k: n for k, n in options}
        ranked.append((template.headline, ks[headline_cutoff(ks, template.headline_k)]))
    out = [name for _, name in sorted(ranked)]
    return out[:limit] if limit is not None else out
