"""Labels from people, as the rest of ragmeter uses them: checking a value against its scale, the queue of
items to label next, PPI and judge validation from a run's stored answers and their labels, and moving
labels to and from JSON and TREC qrels.

The queue: the run's answered queries in an order drawn by `random.Random(seed)` from their sorted ids;
"next" is the first query in that order whose current answer has no queue label for the metric. Labels
given from the queue are a uniform random sample of the run's queries (a prefix of a random permutation),
which is what PPI needs; labels given while browsing (source "browse") feed validation and agreement only.
"""

from __future__ import annotations

import json
import math
import random
import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ragmeter.metrics as rm
from ragmeter.errors import InputError
from ragmeter.models import EvalQuery, EvalRunResult, MetricResult, PPIEstimate, QueryEvalResult
from ragmeter.store.labels import LabelItem, add_labels, all_labels, labels_of_answers

if TYPE_CHECKING:
    from ragmeter.store.api import Store
    from ragmeter.validity.judge_validation import ValidationReport


def parse_grades(text: str | None) -> tuple[int, int] | None:
    """`--grades 0-3` -> (0, 3)."""
    if text is None:
        return None
    lo, sep, hi = text.partition("-")
    try:
        if not sep or int(lo) >= int(hi):
            raise ValueError
        return int(lo), int(hi)
    except ValueError:
        raise InputError(f"expected LO-HI with integers LO < HI, got {text!r}", source="--grades") from None


def check_grade(raw: Any, grades: tuple[int, int], *, field: str = "value") -> int:
    """A relevance grade: an integer inside grades (lo..hi)."""
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise InputError(f"not a number: {str(raw)[:40]!r}", source=field) from None
    if not math.isfinite(value) or value != int(value) or not grades[0] <= value <= grades[1]:
        raise InputError(
            f"a grade is an integer in {grades[0]}..{grades[1]}, got {str(raw)[:40]!r}", source=field
        )
    return int(value)


def check_answer_value(metric: str, raw: Any, *, field: str = "value") -> float:
    """A label of an answer on the metric's own scale (the registry's range)."""
    spec = rm.lookup(metric)
    if spec is None:
        raise InputError(f"unknown metric {metric!r}", source="metric")
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise InputError(f"not a number: {str(raw)[:40]!r}", source=field) from None
    if not math.isfinite(value) or not spec.in_range(value, tol=0.0):
        raise InputError(f"{metric} takes values in {spec.scale}, got {str(raw)[:40]!r}", source=field)
    return value


def queue_order(query_ids: Sequence[str], seed: int) -> list[str]:
    order = sorted(query_ids)
    random.Random(seed).shuffle(order)
    return order


def answer_labels(
    store: Store, run: EvalRunResult, per_query: Sequence[QueryEvalResult], *, queue_only: bool = False
) -> dict[str, dict[str, float]]:
    """{metric: {query id: label}} of the labels given to the run's answers as they are now (a label of
    another answer to the same query does not apply). With queue_only, only items labelled from the queue."""
    out: dict[str, dict[str, float]] = {}
    answers = {q.query_id: q.answer for q in per_query}
    for lab in labels_of_answers(store.engine, run.run_id, answers, queue_only=queue_only):
        item = lab.item
        if item.kind == "answer" and item.metric is not None:
            out.setdefault(item.metric, {})[item.query_id] = lab.value
    return out


def store_ppi(store: Store, run: EvalRunResult) -> tuple[dict[str, PPIEstimate], list[str], int]:
    """PPI of the run's judge metrics recomputed from the labels given from the queue: (estimates, notes,
    number of queue labels used)."""
    from ragmeter.score.ppi import run_ppi
    from ragmeter.validity.nugget_labels import ppi_labels

    labels = answer_labels(store, run, run.per_query, queue_only=True)
    for metric, values in ppi_labels(store, run).items():  # human nugget scores from assignment labels
        for qid, value in values.items():
            labels.setdefault(metric, {}).setdefault(qid, value)
    if not labels:
        return {}, [], 0
    by_query: dict[str, dict[str, float | int | bool]] = {}
    for metric, values in labels.items():
        for qid, value in values.items():
            by_query.setdefault(qid, {})[metric] = value
    queries = [EvalQuery(query_id=qid, question="", human_labels=h) for qid, h in by_query.items()]
    estimates, notes = run_ppi(queries, run.per_query)
    return estimates, notes, sum(len(v) for v in labels.values())


def validate_run(
    store: Store, run_id: str, metric: str, *, scale: tuple[float, float] | None = None, seed: int = 42
) -> ValidationReport:
    """The run's stored judge values of `metric` against the store's labels of the same answers (queue and
    browse labels alike); no judge call."""
    from ragmeter.validity.judge_validation import build_report
    from ragmeter.validity.nugget_labels import has_assignment_labels, validate_assignments

    if has_assignment_labels(store, run_id, metric):  # a nugget score: its assignments, nugget by nugget
        return validate_assignments(store, run_id, metric, seed=seed)
    run = store.get_run(run_id)
    labels = answer_labels(store, run, run.per_query).get(metric, {})
    if not labels:
        raise InputError(
            f"run {run.run_id} has no labels of {metric!r} on its current answers in the store",
            source="--run",
        )
    by_id = {q.query_id: q for q in run.per_query}
    queries = [
        EvalQuery(query_id=qid, question=by_id[qid].question, human_labels={metric: v})
        for qid, v in labels.items()
    ]
    missing = MetricResult(name=metric, value=None, error="the run has no value of this metric for the query")
    results = [by_id[q.query_id].metrics.get(metric, missing) for q in queries]
    judge = {"run_id": run.run_id, "model": run.config.judge_model, "from": "stored judge values"}
    return build_report(queries, results, metric, judge=judge, usage={}, seconds=0.0, scale=scale, seed=seed)


# ------------------------------------------------------------------ import / export


def export_labels(
    store: Store, path: str | Path, *, fmt: str, run_id: str | None, dataset_hash: str | None, history: bool
) -> int:
    from ragmeter.safety import write_text_atomic

    labels = all_labels(store.engine, run_id=run_id, dataset_hash=dataset_hash, history=history)
    if fmt == "qrels":
        rel = [lab for lab in labels if lab.item.kind == "relevance"]
        for n, lab in enumerate(rel, start=1):
            _check_qrels_ids(lab.item.query_id, lab.item.doc_id or "", n)
        text = "".join(f"{lab.item.query_id} 0 {lab.item.doc_id} {int(lab.value)}\n" for lab in rel)
        write_text_atomic(path, text, source="--output")
        return len(rel)
    write_text_atomic(path, json.dumps([lab.to_dict() for lab in labels], indent=1) + "\n", source="--output")
    return len(labels)


def _check_qrels_ids(query_id: str, doc_id: str, n: int) -> None:
    """TREC qrels are whitespace-separated fields on one line: an id with whitespace would not read back, and
    one with a line break would forge a line. Such a label is refused before anything is written."""
    for field, value in (("query id", query_id), ("doc id", doc_id)):
        bad = next(
            (c for c in value if c.isspace() or unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")), None
        )
        if not value or bad is not None:
            what = "is empty" if bad is None else f"holds {unicodedata.name(bad, repr(bad))}"
            raise InputError(
                f"relevance label {n} (query {query_id[:60]!r}, doc {doc_id[:60]!r}): the {field} {what}, "
                "which TREC qrels cannot carry; export it with --format json",
                source="--format qrels",
            )


def _run_answers(store: Store, run_id: str) -> dict[str, QueryEvalResult]:
    return {q.query_id: q for q in store.get_run(run_id).per_query}


def import_labels(
    store: Store,
    path: str | Path,
    *,
    fmt: str,
    annotator: str,
    run_id: str | None,
    grades: tuple[int, int] | None,
) -> int:
    """Read every label, check every one (ids known to the store, values on their scale), then store them all
    in one transaction; the first problem is an InputError naming file and line, and nothing is stored."""
    source = str(path)
    text = Path(path).read_text("utf-8")
    run = store.get_run(run_id, with_queries=False) if run_id else None
    items: list[tuple[LabelItem, float, str, str]] = []
    if fmt == "qrels":
        if run is None or not run.dataset_hash:
            raise InputError(
                "TREC qrels need --run RUN (a run with a dataset hash) to say which dataset", source="--run"
            )
        known = set(_run_answers(store, run.run_id or ""))
        scale = grades or (0, 3)
        for n, line in enumerate(text.splitlines(), start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 4:
                raise InputError("a qrels line is: query_id iteration doc_id grade", source=source, line=n)
            qid, _, doc, grade = parts
            if qid not in known:
                raise InputError(f"unknown query id {qid!r} (not in run {run.run_id})", source=source, line=n)
            value = check_grade(grade, scale, field=f"{source}:{n}: grade")
            items.append((LabelItem.relevance(run.dataset_hash, qid, doc), value, annotator, "import"))
    else:
        try:
            records = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"not JSON: {exc.msg}", source=source, line=exc.lineno) from None
        if not isinstance(records, list):
            raise InputError("expected a JSON list of labels (as `labels export` writes)", source=source)
        answers: dict[str, dict[str, QueryEvalResult]] = {}
        for n, rec in enumerate(records, start=1):
            items.append(_json_item(store, rec, n, source, answers, annotator, grades))
    return add_labels(store.engine, items)


def _json_item(
    store: Store,
    rec: Any,
    n: int,
    source: str,
    answers: dict[str, dict[str, QueryEvalResult]],
    annotator: str,
    grades: tuple[int, int] | None,
) -> tuple[LabelItem, float, str, str]:
    where = f"{source}: label {n}"
    if not isinstance(rec, Mapping) or rec.get("kind") not in ("relevance", "answer", "assignment"):
        raise InputError("each label needs kind relevance, answer or assignment", source=where)
    qid = str(rec.get("query_id") or "")
    who = str(rec.get("annotator") or annotator)
    if rec["kind"] == "assignment":
        from ragmeter.validity.nugget_labels import import_item

        return import_item(store, rec, where, answers, who)
    if rec["kind"] == "relevance":
        ds, doc = rec.get("dataset_hash"), rec.get("doc_id")
        if not ds or not doc or not qid:
            raise InputError("a relevance label needs dataset_hash, query_id and doc_id", source=where)
        if not any(r.dataset_hash == ds for r in store.list_runs()):
            raise InputError(
                f"unknown dataset hash {str(ds)[:20]!r} (no run of the store has it)", source=where
            )
        value = check_grade(rec.get("value"), grades or (0, 3), field=f"{where}: value")
        return LabelItem.relevance(str(ds), qid, str(doc)), value, who, "import"
    run_id, metric = str(rec.get("run_id") or ""), str(rec.get("metric") or "")
    try:
        run_id = store.resolve_run_id(run_id)
    except InputError:
        raise InputError(f"unknown run id {run_id!r}", source=where) from None
    if run_id not in answers:
        answers[run_id] = _run_answers(store, run_id)
    if qid not in answers[run_id]:
        raise InputError(f"unknown query id {qid!r} (not in run {run_id})", source=where)
    answer_value = check_answer_value(metric, rec.get("value"), field=f"{where}: value")
    item = LabelItem.answer(run_id, qid, metric, answers[run_id][qid].answer)
    if rec.get("answer_hash") and rec["answer_hash"] != item.answer_hash:
        raise InputError(
            f"the label is of another answer than run {run_id}'s answer to {qid!r}", source=where
        )
    return (
        item,
        answer_value,
        who,
        str(rec.get("source") or "import") if rec.get("source") in ("queue", "browse") else "import",
    )


def store_qrels(store: Store, run_id: str) -> dict[str, dict[str, float]]:
    """{query id: {doc id: grade}}: the current relevance labels of the dataset `run_id` was made on."""
    run = store.get_run(run_id, with_queries=False)
    if not run.dataset_hash:
        raise InputError(
            f"run {run.run_id} has no dataset hash: its relevance labels cannot be found",
            source="--store-labels",
        )
    out: dict[str, dict[str, float]] = {}
    for lab in all_labels(store.engine, dataset_hash=run.dataset_hash):
        if lab.item.kind == "relevance" and lab.item.doc_id is not None:
            out.setdefault(lab.item.query_id, {})[lab.item.doc_id] = lab.value
    return out


def human_qrels(path: str | None, store_labels: Mapping[str, Mapping[str, float]] | None) -> Any:
    """Human qrels from a file and/or the store's relevance labels; a store label wins over the file's
    grade of the same pair. None when neither is given."""
    from ragmeter.ir import Qrels

    merged: dict[str, dict[str, float]] = {}
    if path:
        merged = {q: dict(docs) for q, docs in Qrels.read(path).to_dict().items()}
    for qid, docs in (store_labels or {}).items():
        merged.setdefault(qid, {}).update(docs)
    if not merged:
        return None
    return Qrels.from_dict(merged, source=path or "store labels")
