"""The built-in metrics, declared once. Imported by ragmeter.metrics on first use."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import ragmeter.judges.prompts as prompts
from ragmeter.metrics.registry import _add, declare, lookup_template, specs

UNIT = (0.0, 1.0)
RUN_INPUTS = ("retrieved", "qrels")
RETRIEVAL_VERSION = "trec_eval-9.0.7"  # the rules these equal (ir_crosscheck/semantics_notes.md)


def _measure(name: str, description: str, *aliases: str, **extra: Any) -> None:
    """An IR measure: run level, computed from the ranking and the qrels by the engine's (trec_eval's) rules;
    a name ending in @k takes a cut-off."""
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
        **extra,
    )


def _retrieval() -> None:
    _measure("recall@k", "relevant docs in the top k / relevant docs in the qrels", "r@k")
    _measure("precision@k", "relevant docs in the top k / k (k even if fewer retrieved)", "p@k", "P_k")
    _measure("ndcg@k", "nDCG at k, linear gain (trec_eval)", "ndcg_cut_k")
    _measure("ndcg", "nDCG over the whole ranking, linear gain")
    _measure("ndcg_exp@k", "nDCG at k with exponential gain 2^grade - 1")
    _measure("ndcg_exp", "nDCG with exponential gain over the whole ranking")
    _measure("hit@k", "1 if a relevant doc is in the top k", "success@k", interval="wilson")
    _measure("mrr", "reciprocal rank of the first relevant doc, any rank", "recip_rank")
    _measure("mrr@k", "reciprocal rank of the first relevant doc within the top k")
    _measure("map", "average precision / relevant docs in the qrels")
    _measure("map@k", "average precision over the top k", "map_cut_k")
    _measure("rprec", "precision at R, R = relevant docs in the qrels", "Rprec")
    _measure(
        "aqwv@k",
        "1 - P_miss - beta * P_FA at k (beta 40; no detection threshold)",
        range=(None, 1.0),
        scale="<=1",
    )


def _lexical() -> None:
    ans, ctx, ver = ("answer", "gold_answers"), ("answer", "contexts"), "squad-v1.1"
    rows: list[tuple[str, tuple[str, ...], str, dict[str, Any]]] = [
        (
            "exact_match",
            ans,
            "normalised answer equals a gold answer (SQuAD rules)",
            {"interval": "wilson", "aliases": ("em",)},
        ),
        ("token_f1", ans, "token F1 against the best gold answer (SQuAD rules)", {"aliases": ("f1",)}),
        ("rouge_l", ans, "ROUGE-L F against the best gold", {}),
        ("answer_relevance", ("answer", "question"), "token F1 of the answer against the question", {}),
        ("support_coverage", ctx, "share of answer tokens found in the retrieved contexts", {}),
        ("support_density", ctx, "share of the answer covered by spans copied from the contexts", {}),
        (
            "hallucination_rate",
            ctx,
            "share of answer tokens found in no retrieved context",
            {"higher_is_better": False},
        ),
    ]
    for name, needs, what, extra in rows:
        declare(name, "lexical", "query", needs, UNIT, version=ver, description=what, **extra)


def _semantic() -> None:
    declare(
        "sbert_similarity",
        "semantic",
        "run",
        ("answer", "gold_answers"),
        UNIT,
        version="all-MiniLM-L6-v2/torch-fp32-256-norm",  # model / backend-precision-max length-normalised
        description="cosine of answer and best gold answer embeddings, clipped to [0, 1]",
    )
    declare(
        "cross_encoder_similarity",
        "semantic",
        "run",
        ("answer", "gold_answers"),
        UNIT,
        description="sigmoid of a cross-encoder's score of (gold, answer)",
    )


def _prompt_version(name: str) -> str:
    prompt: prompts.Prompt = getattr(prompts, name.upper())
    return prompt.version


def _judges() -> None:
    zero_one = {
        "factuality": "supported claims / claims, per-claim verdicts against the contexts",
        "groundedness": "how far the answer is grounded in the contexts (0-10 reply / 10)",
        "relevance": "how far the answer addresses the question (0-10 reply / 10)",
        "answer_correctness": "agreement with the ground-truth answer (0-10 reply / 10)",
        "coherence": "clarity and logical flow (0-10 reply / 10)",
        "completeness": "how much of the question is answered (0-10 reply / 10)",
        "citation_accuracy": "share of citations that support their sentence",
    }
    # A judge metric's version is its prompt's (name/vN+digest of the text): the version its values carry.
    for name, what in zero_one.items():
        needs = ("question", "answer", "contexts", "judge")
        declare(name, "judge", "query", needs, UNIT, version=_prompt_version(name), description=what)
    declare(
        "retrieval_grade",
        "judge",
        "query",
        ("question", "contexts", "judge"),
        (1.0, 10.0),
        scale="1-10",
        version=_prompt_version("retrieval_grade"),
        description="LLM grade 1-10 of how well the retrieved chunks answer the question",
    )
    declare(
        "total_score",
        "judge",
        "run",
        ("retrieval_grade", "qrels"),
        (0.0, 10.0),
        scale="0-10",
        description="retrieval grade x position weight (rank 1: 1.0, 2-3: 0.95, 4-5: 0.85, else 0.6)",
    )


def _summary(name: str, of: str, range: tuple[float, float], scale: str, what: str, **extra: Any) -> None:
    declare(name, "judge", "summary", (of,), range, scale=scale, interval="none", description=what, **extra)


def _grade_summary() -> None:
    """The retrieval-grade summary (DESIGN.md 3): one value per run, no per-query value."""
    for name, threshold in (("pass_rate_8", "8.0"), ("pass_rate_7", "7.0"), ("pass_rate_6_5", "6.5")):
        what = f"share of ALL queries with total_score >= {threshold} (a null grade does not pass)"
        _summary(name, "total_score", (0.0, 100.0), "%", what, unit="%")
    _summary(
        "avg_llm_grade", "retrieval_grade", (1.0, 10.0), "1-10", "mean retrieval grade over the valid grades"
    )
    _summary("avg_total_score", "total_score", (0.0, 10.0), "0-10", "mean total score over the valid grades")


# Headline metrics, best first (runs list, the demo's summary, the report's first rows): name -> (rank, k).
HEADLINES: dict[str, tuple[int, int | None]] = {
    "ndcg@k": (1, 10),
    "recall@k": (2, 5),
    "mrr": (3, None),
    "token_f1": (4, None),
    "rouge_l": (5, None),
    "sbert_similarity": (6, None),
    "answer_correctness": (7, None),
    "retrieval_grade": (8, None),
}


def _headlines() -> None:
    for name, (rank, k) in HEADLINES.items():
        _add(replace(lookup_template(name), headline=rank, headline_k=k), replace=True)


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
        description="wall time of one stage of one query (latency_<stage>_ms: retrieve, generate, judge...)",
    )
    declare(
        "ppi_mean",
        "agreement",
        "summary",
        ("judge", "human_labels"),
        (None, None),
        interval="none",
        description="prediction-powered estimate of a judge metric's mean, corrected by human labels",
    )
    people, rankings = ("judge", "human_labels"), ("runs", "qrels")
    for name, needs, what in (
        ("kappa", people, "Cohen's kappa of judge vs human labels (unweighted)"),
        ("weighted_kappa", people, "Cohen's kappa, quadratic weights (ordinal labels)"),
        ("kendall_tau", rankings, "Kendall's tau between system rankings under two qrels"),
        ("tau_ap", rankings, "tau_AP (Yilmaz et al. 2008): rank correlation weighted to the top"),
    ):
        declare(name, "agreement", "summary", needs, (-1.0, 1.0), scale="-1-1", description=what)


# What computes each built-in metric (MetricSpec.computed_by): by family, else by name.
_BY_FAMILY = {
    "retrieval": "ragmeter.ir.evaluate:evaluate",
    "lexical": "ragmeter.text.metrics:{name}",
    "diagnosis": "ragmeter.score.classes:class_of",
}
_JUDGE = "ragmeter.judges.answer:{upper}"
COMPUTED_BY: dict[str, str] = {
    **{n: _JUDGE for n in ("answer_correctness", "coherence", "completeness", "groundedness", "relevance")},
    "citation_accuracy": "ragmeter.judges.citation:CITATION_ACCURACY",
    "factuality": "ragmeter.judges.factuality:FACTUALITY",
    "retrieval_grade": "ragmeter.judges.retrieval:RETRIEVAL_GRADE",
    "total_score": "ragmeter.score.runlevel:total_scores",
    **{
        n: "ragmeter.judges.retrieval:summarize_retrieval_grades"
        for n in ("avg_llm_grade", "avg_total_score")
    },
    **{n: "ragmeter.judges.retrieval:summarize_retrieval_grades" for n in ("pass_rate_8", "pass_rate_7")},
    "pass_rate_6_5": "ragmeter.judges.retrieval:summarize_retrieval_grades",
    "sbert_similarity": "ragmeter.semantic.similarity:sbert_similarity_batch",
    "cross_encoder_similarity": "ragmeter.semantic.similarity:cross_encoder_similarity_batch",
    "latency_ms": "ragmeter.score.aggregate:latency_summaries",
    "kappa": "ragmeter.experiments.agreement:cohen_kappa",
    "weighted_kappa": "ragmeter.experiments.agreement:cohen_kappa",
    "kendall_tau": "ragmeter.experiments.agreement:kendall_tau",
    "tau_ap": "ragmeter.experiments.tau_ap:tau_ap",
    "ppi_mean": "ragmeter.score.ppi_mean:ppi_mean",
}


def name_computations() -> None:
    """Give every registered built-in spec its `computed_by` (run after all built-ins are declared)."""
    for spec in specs():
        if spec.computed_by or spec.compute is not None:
            continue
        ref = COMPUTED_BY.get(spec.name) or _BY_FAMILY.get(spec.family, "")
        if spec.name.startswith("rc_"):  # RAGChecker claim metrics: one function each in judges/claims.py
            ref = "ragmeter.judges.claims:" + spec.name.removeprefix("rc_")
        ref = ref.format(name=spec.name, upper=spec.name.upper())
        if ref:
            _add(replace(spec, computed_by=ref), replace=True)


def load() -> None:
    from ragmeter.metrics import incomplete

    _retrieval()
    incomplete.load()
    _lexical()
    _semantic()
    _judges()
    _grade_summary()
    _other()
    _headlines()
