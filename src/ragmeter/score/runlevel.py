"""Run-level scorers: one value per query, computed over the whole run at once from stored outputs.

Retrieval measures by the IR engine over all queries together; SBERT similarity in one batch; total_score
from each query's retrieval grade. Each returns new values ({query_id: {metric: MetricResult}}) and the
notes to show; nothing is changed in place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ragmeter.models import EvalQuery, MetricResult, QueryEvalResult
from ragmeter.score.plan import RETRIEVAL_GRADE, SEMANTIC, TOTAL_SCORE

Values = dict[str, dict[str, MetricResult]]


@dataclass
class RunLevel:
    values: Values = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    n_without_relevant: int = 0
    grades: dict[str, float | None] = field(default_factory=dict)

    def add(self, query_id: str, metric: MetricResult) -> None:
        self.values.setdefault(query_id, {})[metric.name] = metric


def retrieval_scores(
    results: Sequence[QueryEvalResult],
    queries: Mapping[str, EvalQuery],
    measures: Sequence[str],
    *,
    relevance_level: int = 1,
    out: RunLevel | None = None,
) -> RunLevel:
    """Retrieval measures of every successful query by the IR engine, all queries at once. A query with
    no relevant document is left out of the retrieval averages (and counted); one that retrieved nothing
    scores 0."""
    from ragmeter.ir import Qrels, Run, evaluate

    out = out if out is not None else RunLevel()
    ok = [r for r in results if r.status == "ok"]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    repeated = 0
    for r in ok:
        judged = queries[r.query_id].judgments()
        if judged:
            qrels[r.query_id] = judged
        docs: dict[str, float] = {}
        for doc in r.retrieved:
            if doc.doc_id in docs:
                repeated += 1
                continue
            # the system's order is its ranking: ties or unsorted scores must not reorder it
            docs[doc.doc_id] = -float(doc.rank)
        if docs:
            run[r.query_id] = docs
    out.n_without_relevant = sum(
        1 for r in ok if not any(g >= relevance_level for g in queries[r.query_id].judgments().values())
    )
    if repeated:
        out.notes.append(
            f"{repeated} repeated doc ids in retrieved lists: the first (highest-ranked) was kept"
        )
    if not measures:
        return out
    if not qrels:
        if ok:
            out.notes.append("no query has relevance judgments: retrieval metrics are not computed")
        return out
    wanted = list(measures)
    if "ndcg@10" in wanted and "judged@10" not in wanted:
        wanted.append("judged@10")  # shown beside nDCG@10 by the report and `runs show` when below 0.9
    evaluation = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), wanted, relevance_level=relevance_level)
    versions = {name: _version(name) for name in wanted}
    for r in ok:
        for name, value in (evaluation.per_query.get(r.query_id) or {}).items():
            out.add(r.query_id, MetricResult(name=name, value=float(value), version=versions.get(name)))
    if out.n_without_relevant:
        out.notes.append(
            f"{out.n_without_relevant} queries have no relevant document: left out of the retrieval averages "
            "(a query the system answered with nothing scores 0)"
        )
    return out


def _version(name: str) -> str | None:
    """The registry's version of a metric: stored with each value so that runs compare only like values."""
    from ragmeter import metrics

    spec = metrics.lookup(name)
    return spec.version if spec is not None else None


def semantic_scores(
    results: Sequence[QueryEvalResult], queries: Mapping[str, EvalQuery], *, out: RunLevel | None = None
) -> RunLevel:
    """SBERT similarity of each answer to its gold answers, in one batch over the run (when installed)."""
    out = out if out is not None else RunLevel()
    todo = [
        r for r in results if r.status == "ok" and r.answer is not None and queries[r.query_id].gold_answers()
    ]
    if not todo:
        return out
    try:
        from ragmeter import semantic
    except ImportError:
        semantic = None  # type: ignore[assignment]
    if semantic is None or not semantic.available():
        out.notes.append("semantic similarity skipped: the 'semantic' extra is not installed")
        return out
    values = semantic.sbert_similarity_batch(
        [r.answer or "" for r in todo], [queries[r.query_id].gold_answers() for r in todo]
    )
    for r, value in zip(todo, values, strict=True):
        out.add(r.query_id, value.model_copy(update={"name": SEMANTIC}))
    return out


def total_scores(
    results: Sequence[QueryEvalResult], grades: Mapping[str, MetricResult], *, out: RunLevel | None = None
) -> RunLevel:
    """total_score (retrieval grade x position weight) per graded query, and the run's grade summary
    (averages; pass rates over all queries, a null grade not passing). `grades`: query id -> grade."""
    from ragmeter.judges import summarize_retrieval_grades

    out = out if out is not None else RunLevel()
    graded = [r for r in results if r.status == "ok" and r.query_id in grades]
    if not graded:
        return out
    for r in graded:
        grade = grades[r.query_id]
        total = grade.details.get("total_score") if grade.value is not None else None
        out.add(
            r.query_id,
            MetricResult(
                name=TOTAL_SCORE,
                value=None if total is None else float(total),
                error=None if total is not None else (grade.error or "no retrieval grade"),
                version=grade.version,  # made from the grade: its prompt decides it
            ),
        )
    out.grades = summarize_retrieval_grades([grades[r.query_id] for r in graded])
    rates = ", ".join(
        f"{k} {v:.1f}%" for k, v in out.grades.items() if k.startswith("pass") and v is not None
    )
    out.notes.append(f"retrieval grade pass rates over all {len(results)} queries: {rates}")
    return out


def grades_of(results: Sequence[QueryEvalResult]) -> dict[str, MetricResult]:
    return {r.query_id: r.metrics[RETRIEVAL_GRADE] for r in results if RETRIEVAL_GRADE in r.metrics}
