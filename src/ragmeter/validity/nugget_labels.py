"""Assignment labels: a person says how far one answer supports one nugget (support / partial_support /
not_support), for the set version the run was scored against. They flow where answer labels flow:

- `judges validate --run RUN --metric nugget_all_strict` (or any nugget score): the assignment judge's
  label of each labelled (query, nugget) against the person's, on the three-point scale not_support 0,
  partial_support 1, support 2 (kappa, weighted kappa and their bootstrap intervals, as for any judge);
- PPI: a query whose every nugget a person labelled from the queue has a human value of each nugget score
  (nuggetizer's formula over the person's labels), used as an answer label of that metric.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ragmeter.errors import InputError
from ragmeter.models import EvalQuery, EvalRunResult, MetricResult, QueryEvalResult
from ragmeter.nuggets.model import NuggetSet
from ragmeter.nuggets.scores import SCORES, nuggetizer_score
from ragmeter.store.labels import (
    ASSIGNMENT_VALUES,
    Label,
    LabelItem,
    all_labels,
    assignment_name,
    labels_of_answers,
    save_label,
)

if TYPE_CHECKING:
    from ragmeter.store.api import Store
    from ragmeter.validity.judge_validation import ValidationReport

SCALE = (0.0, 2.0)  # not_support, partial_support, support, for agreement


def _set_hash(store: Store, run: EvalRunResult) -> str:
    from ragmeter.validity.nugget_versions import run_nuggets

    return run_nuggets(store, run).hash


def save_assignment(
    store: Store,
    run: EvalRunResult,
    query_id: str,
    nugget_id: str,
    assignment: str,
    *,
    annotator: str,
    source: str,
    expected_version: int,
) -> Label:
    """Store a person's label of the run's current answer to `query_id` for one nugget of the run's set."""
    from ragmeter.validity.nugget_versions import run_nuggets

    nuggets = run_nuggets(store, run)
    if assignment not in ASSIGNMENT_VALUES:
        raise InputError(
            f"assignment {assignment!r} is not one of {', '.join(ASSIGNMENT_VALUES)}", source="value"
        )
    q = nuggets.get(query_id)
    if q is None or all(n.id != nugget_id for n in q.nuggets):
        raise InputError(
            f"the run's nugget set has no nugget {nugget_id!r} for query {query_id!r}", source="nugget"
        )
    row = next((r for r in run.per_query if r.query_id == query_id), None)
    if row is None:
        raise InputError(f"run {run.run_id} has no query {query_id!r}", source="query")
    item = LabelItem.assignment(run.run_id or "", query_id, row.answer, nuggets.hash, nugget_id)
    return save_label(
        store.engine,
        item,
        ASSIGNMENT_VALUES[assignment],
        annotator=annotator,
        source=source,
        expected_version=expected_version,
    )


def assignment_labels(
    store: Store, run: EvalRunResult, *, queue_only: bool = False, set_hash: str | None = None
) -> dict[str, dict[str, Label]]:
    """{query id: {nugget id: label}}: the current labels of the run's current answers for the set version
    it was scored against (labels of another answer or another version do not apply)."""
    set_hash = set_hash or _set_hash(store, run)
    out: dict[str, dict[str, Label]] = {}
    answers = {q.query_id: q.answer for q in run.per_query}
    for lab in labels_of_answers(store.engine, run.run_id, answers, queue_only=queue_only):
        item = lab.item
        if item.kind == "assignment" and item.nugget_set == set_hash and item.nugget_id is not None:
            out.setdefault(item.query_id, {})[item.nugget_id] = lab
    return out


def human_scores(nuggets: NuggetSet, labels: dict[str, dict[str, Label]]) -> dict[str, dict[str, float]]:
    """{nugget score: {query id: value}} of the queries whose every nugget has a label."""
    out: dict[str, dict[str, float]] = {}
    for qid, by_nugget in labels.items():
        q = nuggets.get(qid)
        if q is None or any(n.id not in by_nugget for n in q.nuggets):
            continue
        rows = [(n.importance, assignment_name(by_nugget[n.id].value)) for n in q.nuggets]
        for name in SCORES:
            score = nuggetizer_score(name, rows)
            if score.value is not None:
                out.setdefault(name, {})[qid] = score.value
    return out


def ppi_labels(store: Store, run: EvalRunResult) -> dict[str, dict[str, float]]:
    """The human nugget scores PPI uses: from queue labels only (a uniform sample of the run's queries)."""
    from ragmeter.validity.nugget_versions import run_nuggets

    if not _has_nuggets(run):
        return {}
    nuggets = run_nuggets(store, run)
    return human_scores(nuggets, assignment_labels(store, run, queue_only=True, set_hash=nuggets.hash))


def _has_nuggets(run: EvalRunResult) -> bool:
    return bool(run.versions.get("nuggets") or run.config.nuggets)


def has_assignment_labels(store: Store, run_id: str, metric: str) -> bool:
    """Whether `judges validate --run` of `metric` reads assignment labels: a nugget score of a run with a
    nugget set and at least one assignment label."""
    import ragmeter.metrics as rm

    spec = rm.lookup(metric)
    if spec is None or spec.name not in SCORES:
        return False
    run = store.get_run(run_id, with_queries=False)
    if not _has_nuggets(run):
        return False
    return any(lab.item.kind == "assignment" for lab in all_labels(store.engine, run_id=run.run_id))


def validate_assignments(store: Store, run_id: str, metric: str, *, seed: int = 42) -> ValidationReport:
    """The assignment judge's labels (stored with `metric`'s values) against people's, item by item."""
    from ragmeter.validity.judge_validation import build_report

    run = store.get_run(run_id)
    labels = assignment_labels(store, run)
    if not labels:
        raise InputError(
            f"run {run.run_id} has no assignment labels of its current answers in the store", source="--run"
        )
    by_id = {q.query_id: q for q in run.per_query}
    queries: list[EvalQuery] = []
    results: list[MetricResult] = []
    for qid in sorted(labels):
        judged = _judge_labels(by_id[qid], metric)
        for nid, lab in sorted(labels[qid].items()):
            queries.append(
                EvalQuery(query_id=f"{qid}/{nid}", question="", human_labels={metric: int(lab.value * 2)})
            )
            results.append(_judge_result(metric, judged, nid))
    judge = {"run_id": run.run_id, "model": run.config.judge_model, "from": "stored nugget assignments"}
    report = build_report(
        queries, results, metric, judge=judge, usage={}, seconds=0.0, scale=SCALE, seed=seed
    )
    report.notes.append(
        "items are (query/nugget) assignments: not_support 0, partial_support 1, support 2, the judge's "
        f"labels as stored with {metric}'s values"
    )
    return report


def _judge_labels(row: QueryEvalResult, metric: str) -> dict[str, str | None] | str:
    m = row.metrics.get(metric)
    if m is None:
        return f"the run has no value of {metric} for the query"
    got = (m.details or {}).get("assignments")
    if not isinstance(got, dict):
        return m.error or "no assignments stored with the value"
    return {str(k): (str(v) if v is not None else None) for k, v in got.items()}


def _judge_result(metric: str, judged: dict[str, str | None] | str, nugget_id: str) -> MetricResult:
    if isinstance(judged, str):
        return MetricResult(name=metric, value=None, error=judged)
    label = judged.get(nugget_id)
    if label is None:
        why = "the judge's assignment of this nugget failed" if nugget_id in judged else "nugget not judged"
        return MetricResult(name=metric, value=None, error=why)
    # on the metric's 0..1 range: rescaled linearly onto 0..2 by the report
    return MetricResult(name=metric, value=ASSIGNMENT_VALUES[label])


def import_item(
    store: Store, rec: Mapping[str, Any], where: str, answers: dict[str, dict[str, QueryEvalResult]], who: str
) -> tuple[LabelItem, float, str, str]:
    """An assignment label of a JSON file (as `labels export` writes it), checked: a known run, query and
    answer, a nugget set hash and nugget id, and an assignment (or its value)."""
    run_id = str(rec.get("run_id") or "")
    try:
        run_id = store.resolve_run_id(run_id)
    except InputError:
        raise InputError(f"unknown run id {run_id!r}", source=where) from None
    if run_id not in answers:
        answers[run_id] = {q.query_id: q for q in store.get_run(run_id).per_query}
    qid, nid, set_hash = (str(rec.get(k) or "") for k in ("query_id", "nugget_id", "nugget_set"))
    if qid not in answers[run_id]:
        raise InputError(f"unknown query id {qid!r} (not in run {run_id})", source=where)
    if not nid or not set_hash:
        raise InputError("an assignment label needs nugget_set and nugget_id", source=where)
    name = rec.get("assignment")
    if name is None and rec.get("value") in ASSIGNMENT_VALUES.values():
        name = assignment_name(float(rec["value"]))
    if name not in ASSIGNMENT_VALUES:
        raise InputError(f"assignment {name!r} is not one of {', '.join(ASSIGNMENT_VALUES)}", source=where)
    item = LabelItem.assignment(run_id, qid, answers[run_id][qid].answer, set_hash, nid)
    if rec.get("answer_hash") and rec["answer_hash"] != item.answer_hash:
        raise InputError(
            f"the label is of another answer than run {run_id}'s answer to {qid!r}", source=where
        )
    source = str(rec["source"]) if rec.get("source") in ("queue", "browse") else "import"
    return item, ASSIGNMENT_VALUES[str(name)], who, source
