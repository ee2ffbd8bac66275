"""Judge means of a run corrected with the dataset's human labels (prediction-powered inference).

For each per-query judge metric of the registry (family "judge", stage "query") with values on the run's
queries and human labels (`EvalQuery.human_labels[metric]`, or an alias of it) on at least two of the
queries it judged: the PPI estimate of the metric's mean with its 95% interval, clipped into the metric's
range (`ragmeter.stats.ppi.ppi_mean`: judge values on every judged query, judge minus human on the
labelled ones), next to the plain judge mean.

Human labels must be on the judge metric's own scale, since PPI subtracts one from the other:
- a number inside the metric's range is used as it is (1 or 0.5 on a 0-1 metric, 7 on retrieval_grade's 1-10);
- a bool is the range's ends: False -> its low end, True -> its high end (0/1 on a 0-1 metric);
- a metric with any label outside its range gets no estimate and a note (labels on another scale, such as
  1-5 on a 0-1 metric, would need a mapping that only their author knows).

Queries whose judgment failed (null value) are left out of both sides, as they are of the plain mean. The
labelled queries should be a random sample of the queries, not chosen by their judge score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import ragmeter.metrics as rm
from ragmeter.metrics.spec import MetricSpec
from ragmeter.models import EvalDataset, EvalQuery, EvalRunResult, PPIEstimate, QueryEvalResult

LABEL_RULE = "numbers on the metric's scale as given; bools as the range's ends (False -> low, True -> high)"
MIN_LABELS = 2
# What a PPIEstimate takes from ppi_mean's PPIResult under the same name (its `ci` becomes `ci95`).
_FROM_RESULT = ("estimate", "se", "judge_mean", "human_mean", "n_labeled", "n_total", "clipped")


def judge_metrics(per_query: Sequence[QueryEvalResult]) -> list[str]:
    """The per-query judge metrics the results hold, in display order."""
    names = {n for r in per_query for n in r.metrics}
    return sorted(
        (n for n in names if (s := rm.lookup(n)) is not None and s.family == "judge" and s.stage == "query"),
        key=rm.sort_key,
    )


def label_on_scale(label: float | int | bool, spec: MetricSpec) -> float | None:
    """A human label on the metric's scale (the rule in the module docstring), or None when outside it."""
    lo, hi = spec.range
    if isinstance(label, bool):
        return float((hi if hi is not None else 1.0) if label else (lo if lo is not None else 0.0))
    value = float(label)
    return value if spec.in_range(value, tol=0.0) else None


def _labels_by_metric(queries: Sequence[EvalQuery]) -> dict[str, dict[str, float | int | bool]]:
    """{canonical metric: {query id: raw label}}; label names the registry does not know are ignored."""
    out: dict[str, dict[str, float | int | bool]] = {}
    for q in queries:
        for key, label in q.human_labels.items():
            spec = rm.lookup(key)
            if spec is not None:
                out.setdefault(spec.name, {})[q.query_id] = label
    return out


def _one(
    spec: MetricSpec, judged: Mapping[str, float], labels: Mapping[str, float | int | bool]
) -> tuple[PPIEstimate | None, str | None]:
    from ragmeter.stats.ppi import ppi_mean

    on_scale = {qid: label_on_scale(label, spec) for qid, label in labels.items()}
    outside = [labels[qid] for qid, v in on_scale.items() if v is None]
    mapped = {qid: v for qid, v in on_scale.items() if v is not None}
    lo, hi = spec.range
    if outside:
        return None, (
            f"no PPI estimate for {spec.name}: human label {outside[0]!r} is outside its scale {spec.scale}; "
            "give the labels on the metric's own scale"
        )
    used = [qid for qid in judged if qid in mapped]
    if len(used) < MIN_LABELS:
        return None, (
            f"no PPI estimate for {spec.name}: {len(used)} labelled quer{'y' if len(used) == 1 else 'ies'} "
            f"with a judge value; it needs at least {MIN_LABELS}"
        )
    res = ppi_mean(
        list(judged.values()),
        [judged[qid] for qid in used],
        [mapped[qid] for qid in used],
        range=(None if lo is None else float(lo), None if hi is None else float(hi)),
    )
    same = {name: getattr(res, name) for name in _FROM_RESULT}
    return PPIEstimate(**same, ci95=res.ci, labels=LABEL_RULE), None


def run_ppi(
    queries: Sequence[EvalQuery], per_query: Sequence[QueryEvalResult]
) -> tuple[dict[str, PPIEstimate], list[str]]:
    """The PPI estimate of each judge metric with enough human labels, and a note for each metric that has
    labels but no estimate (too few judged, or labels off the metric's scale)."""
    labels = _labels_by_metric(queries)
    estimates: dict[str, PPIEstimate] = {}
    notes: list[str] = []
    for name in judge_metrics(per_query):
        if name not in labels:
            continue
        judged = {
            r.query_id: m.value
            for r in per_query
            if r.status == "ok" and (m := r.metrics.get(name)) is not None and m.value is not None
        }
        estimate, note = _one(rm.get(name), judged, labels[name])
        if estimate is not None:
            estimates[name] = estimate
        if note is not None:
            notes.append(note)
    return estimates, notes


def ppi_for_run(result: EvalRunResult, dataset: EvalDataset | Sequence[EvalQuery]) -> dict[str, PPIEstimate]:
    """The PPI estimates of a finished run's judge metrics, with the human labels of `dataset` (the dataset
    the run was made on, or its queries): {metric: PPIEstimate}, as stored in `EvalRunResult.ppi`."""
    queries = dataset.queries if isinstance(dataset, EvalDataset) else list(dataset)
    ids = {r.query_id for r in result.per_query}
    if ids and not ids & {q.query_id for q in queries}:
        raise ValueError("none of the run's query ids is in the dataset: is it the dataset of the run?")
    return run_ppi(queries, result.per_query)[0]


__all__ = ["LABEL_RULE", "judge_metrics", "label_on_scale", "ppi_for_run", "run_ppi"]
