"""The records of the families this package computes or knows by name: the retrieval measures (the IR
engine's, trec_eval's rules), stage latency and the agreement statistics. Loaded with ragmeter.metrics.

The lexical, semantic and judge families declare their records beside their code (`text/specs.py`,
`semantic/specs.py`, `judges/specs.py`); the registry loads those on first need (FAMILY_MODULES).
"""

from __future__ import annotations

from typing import Any

from ragmeter.metrics.registry import declare, specs

UNIT = (0.0, 1.0)
RUN_INPUTS = ("retrieved", "qrels")
RETRIEVAL_VERSION = "trec_eval-9.0.7"  # the rules these equal (ir_crosscheck/semantics_notes.md)
IR_ENGINE = "ragmeter.ir.evaluate:evaluate"


def _measure(name: str, description: str, *aliases: str, **extra: Any) -> None:
    """An IR measure: run level, computed from the ranking and the qrels by the engine's (trec_eval's) rules;
    a name ending in @k takes a cut-off. Only the ones marked default=True are in a run's default plan."""
    extra.setdefault("default", False)
    declare(
        name,
        "retrieval",
        "run",
        RUN_INPUTS,
        extra.pop("range", UNIT),
        parameters=("k",) if name.endswith("@k") else (),
        version=RETRIEVAL_VERSION,
        aliases=aliases,
        description=description,
        computed_by=IR_ENGINE,
        **extra,
    )


def _retrieval() -> None:
    # The headline metrics, best first (runs list, the demo, the report's first rows): nDCG@10, recall@5, MRR.
    at_10, at_5 = {"headline": 1, "headline_k": 10}, {"headline": 2, "headline_k": 5}
    _measure(
        "recall@k", "relevant docs in the top k / relevant docs in the qrels", "r@k", default=True, **at_5
    )
    _measure(
        "precision@k",
        "relevant docs in the top k / k (k even if fewer retrieved)",
        "p@k",
        "P_k",
        default=True,
    )
    _measure("ndcg@k", "nDCG at k, linear gain (trec_eval)", "ndcg_cut_k", default=True, **at_10)
    _measure("ndcg", "nDCG over the whole ranking, linear gain")
    _measure("ndcg_exp@k", "nDCG at k with exponential gain 2^grade - 1")
    _measure("ndcg_exp", "nDCG with exponential gain over the whole ranking")
    _measure("hit@k", "1 if a relevant doc is in the top k", "success@k", interval="wilson", default=True)
    _measure(
        "mrr", "reciprocal rank of the first relevant doc, any rank", "recip_rank", default=True, headline=3
    )
    _measure("mrr@k", "reciprocal rank of the first relevant doc within the top k")
    _measure("map", "average precision / relevant docs in the qrels", default=True)
    _measure("map@k", "average precision over the top k", "map_cut_k")
    _measure("rprec", "precision at R, R = relevant docs in the qrels", "Rprec")
    _measure(
        "aqwv@k",
        "1 - P_miss - beta * P_FA at k (beta 40; no detection threshold)",
        range=(None, 1.0),
        scale="<=1",
    )


def _other() -> None:
    declare(
        "latency_ms",
        "latency",
        "query",
        (),
        (0.0, None),
        higher_is_better=False,
        scale="ms",
        unit="ms",
        aggregation="p50/p95/max",
        interval="none",
        parameters=("stage",),
        plannable=False,  # measured for every stage of every query
        computed_by="ragmeter.score.aggregate:latency_summaries",
        description="wall time of one stage of one query (latency_<stage>_ms: retrieve, generate, judge...)",
    )
    declare(
        "ppi_mean",
        "agreement",
        "summary",
        ("judge", "human_labels"),
        (None, None),
        interval="none",
        plannable=False,
        computed_by="ragmeter.stats.ppi:ppi_mean",
        description="prediction-powered estimate of a judge metric's mean, corrected by human labels",
    )
    people, rankings = ("judge", "human_labels"), ("runs", "qrels")
    for name, needs, what, by in (
        ("kappa", people, "Cohen's kappa of judge vs human labels (unweighted)", "agreement:cohen_kappa"),
        (
            "weighted_kappa",
            people,
            "Cohen's kappa, quadratic weights (ordinal labels)",
            "agreement:cohen_kappa",
        ),
        (
            "kendall_tau",
            rankings,
            "Kendall's tau between system rankings under two qrels",
            "agreement:kendall_tau",
        ),
        (
            "tau_ap",
            rankings,
            "tau_AP (Yilmaz et al. 2008): rank correlation weighted to the top",
            "tau_ap:tau_ap",
        ),
    ):
        extra: dict[str, Any] = {
            "scale": "-1-1",
            "plannable": False,
            "computed_by": "ragmeter.validity." + by,
        }
        declare(name, "agreement", "summary", needs, (-1.0, 1.0), description=what, **extra)


def load() -> None:
    from ragmeter.metrics import incomplete

    _retrieval()
    incomplete.load()
    _other()


def __getattr__(name: str) -> Any:
    """Names this module had before the families moved beside their code: derived now, with a warning."""
    import warnings

    if name not in ("HEADLINES", "COMPUTED_BY", "name_computations"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"ragmeter.metrics.builtin.{name} is deprecated: each MetricSpec carries its headline, headline_k and "
        "computed_by; read them from ragmeter.metrics.specs()",
        DeprecationWarning,
        stacklevel=2,
    )
    if name == "HEADLINES":
        return {s.name: (s.headline, s.headline_k) for s in specs() if s.headline}
    if name == "COMPUTED_BY":
        return {s.name: s.computed_by for s in specs() if s.computed_by}
    return lambda: None  # name_computations: every record is declared with its computed_by now
