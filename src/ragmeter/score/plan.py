"""Which metrics a run computes: its `metrics` list and cut-offs read through the metric registry.

With no list: every default metric (retrieval measures at each cut-off plus mrr and map, every lexical
metric that applies, SBERT similarity when installed, the judges when a judge is set, every user metric).
With a list, per family: the named retrieval measures (else the defaults), the named lexical metrics (else
all), the named judges (else the defaults), SBERT only when named, user metrics only when named.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragmeter.errors import InputError

DEFAULT_RETRIEVAL = ("recall", "precision", "ndcg", "hit")
SEMANTIC = "sbert_similarity"
TOTAL_SCORE = "total_score"
RETRIEVAL_GRADE = "retrieval_grade"


@dataclass(frozen=True)
class MetricPlan:
    retrieval: tuple[str, ...]
    lexical: tuple[str, ...] | None  # None: every lexical metric that applies
    judges: tuple[str, ...]
    semantic: bool
    custom: tuple[str, ...]
    total_score: bool = False  # from each query's retrieval grade (computed now, or stored)
    diagnosis: bool = True  # the failure class of each query (ragmeter.score.classes), no LLM call


def judge_names() -> list[str]:
    """The per-query judge metrics a judged run computes by default (opt-in ones only when named)."""
    import ragmeter.metrics as rm

    return [s.name for s in rm.specs() if s.family == "judge" and s.stage == "query" and s.default]


def plan_metrics(
    metrics: Sequence[str] | None,
    cutoffs: Sequence[int],
    *,
    evaluate_generation: bool = True,
    judged: bool = False,
    semantic: bool = True,
    strict: bool = False,
    source: str = "metrics",
) -> MetricPlan:
    """The plan of a run; an unknown or non-computable name is an InputError naming `source`.
    `strict` (rescore --metrics): exactly the named metrics, no family defaults."""
    import ragmeter.metrics as rm

    ks = sorted(set(cutoffs or [10]))
    bad = [k for k in ks if k < 1]
    if bad:
        raise InputError(f"cut-offs must be integers >= 1, got {bad[0]}", source="retrieval_top_k")
    names = rm.check(metrics, source=source) if metrics else []
    by_family: dict[str, list[str]] = {}
    for name in dict.fromkeys(names):
        spec = rm.get(name, source=source)
        if spec.family in ("latency", "agreement"):
            raise InputError(
                f"{name!r} is not computed per run from outputs ({spec.family}); leave it out", source=source
            )
        if spec.family == "semantic" and name != SEMANTIC:
            raise InputError(f"{name!r} is not computed by runs; use {SEMANTIC}", source=source)
        by_family.setdefault(spec.family, []).append(name)
    retrieval = by_family.get("retrieval") or [f"{f}@{k}" for f in DEFAULT_RETRIEVAL for k in ks] + [
        "mrr",
        "map",
    ]
    named_judges = _judges(by_family)
    judges: list[str] = []
    if judged:
        judges = named_judges or (judge_names() if evaluate_generation else [RETRIEVAL_GRADE])
    lexical = by_family.get("lexical")
    return MetricPlan(
        retrieval=tuple(retrieval),
        lexical=tuple(lexical) if lexical else None,
        judges=tuple(judges),
        semantic=evaluate_generation and semantic and (not metrics or SEMANTIC in names),
        custom=tuple(by_family.get("custom", []) if metrics else _custom_names()),
        total_score=RETRIEVAL_GRADE in judges,
        diagnosis=not strict or "diagnosis" in by_family,
    )


def _judges(by_family: dict[str, list[str]]) -> list[str]:
    """The per-query judges named; total_score and the grade summaries (pass rates, averages) are computed
    from retrieval_grade, so naming them asks for that judge."""
    import ragmeter.metrics as rm

    names = by_family.get("judge", [])
    named = [n for n in names if rm.get(n).stage == "query"]
    if len(named) < len(names) and RETRIEVAL_GRADE not in named:
        named.append(RETRIEVAL_GRADE)
    return named


def _custom_names() -> list[str]:
    import ragmeter.metrics as rm

    return [s.name for s in rm.specs() if s.family == "custom"]
