"""Failure classes: why each query failed, from its stored outputs and metric values (no LLM call).

Assigned in order, the first that holds (ragmeter.metrics.diagnosis.FAILURE_CLASSES):
no_relevant_retrieved -> relevant_not_in_context -> answer_wrong_with_evidence -> unsupported -> correct;
a query without relevance labels is classed by its context_sufficiency verdict crossed with its outcome
(`without_qrels`); `unknown` names the input that is missing (no qrels nor sufficiency, no answer, no
correctness signal). Each class is a 0/1 metric (class_<name>), exactly one of them 1 per scored query, so
their means are the class shares.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ragmeter.errors import InputError
from ragmeter.metrics.diagnosis import FAILURE_CLASSES, class_metric
from ragmeter.models import EvalQuery, MetricResult, QueryEvalResult
from ragmeter.score.outcome import abstention, correct_by, outcome, sufficiency
from ragmeter.score.query import context_docs

# The correctness rule: the first of these with a value decides (value >= threshold is correct).
DEFAULT_CORRECT = (("answer_correctness", 0.5), ("token_f1", 0.5), ("exact_match", 1.0))
# What says a right answer is supported by its contexts, the first with a value, and the value from which it
# is: every answer claim entailed by a context (RAGChecker's faithfulness), else the groundedness judge's
# midpoint. Verdicts made against the contexts only: `factuality` adds the reference answer to its sources,
# so a right answer the contexts do not support would pass it.
SUPPORT = (("rc_faithfulness", 1.0), ("groundedness", 0.5))
_RULE = re.compile(r"^\s*([a-z][a-z0-9_@]*)\s*>=\s*([-+]?\d+(?:\.\d*)?|\.\d+)\s*$")


@dataclass(frozen=True)
class Assigned:
    name: str
    reason: str


def parse_rule(text: str | None, *, source: str = "extra.correct_if") -> tuple[tuple[str, float], ...]:
    """The correctness rule: the default chain, or one `METRIC>=VALUE` (an InputError naming `source`)."""
    if text is None or not str(text).strip():
        return DEFAULT_CORRECT
    import ragmeter.metrics as rm

    m = _RULE.match(str(text))
    if m is None:
        raise InputError(
            f"a correctness rule is METRIC>=VALUE, e.g. token_f1>=0.5; got {text!r}", source=source
        )
    name = rm.canonical(m.group(1), source=source)
    return ((name, float(m.group(2))),)


_correct = correct_by


def _supported(metrics: Mapping[str, MetricResult]) -> tuple[bool, str] | None:
    for name, threshold in SUPPORT:
        value = metrics[name].value if name in metrics else None
        if value is not None:
            ok = value >= threshold
            return ok, f"{name} {value:.3g} {'>=' if ok else '<'} {threshold:g}"
    return None


def classify(
    query: EvalQuery,
    result: QueryEvalResult,
    *,
    context_k: int,
    relevance_level: int = 1,
    rule: Sequence[tuple[str, float]] = DEFAULT_CORRECT,
) -> Assigned:
    """The failure class of one answered query."""
    qrels = query.judgments()
    if not qrels:
        return without_qrels(query, result, "the query has no relevance judgments", rule)
    relevant = {d for d, g in qrels.items() if g >= relevance_level}
    if not relevant:
        return without_qrels(query, result, f"no document is graded >= {relevance_level}", rule)
    # What the generator was given decides first: a replay (ragmeter.diagnose.replay) gives contexts that
    # are not in its stored retrieved list (oracle-context), and an answer made from a relevant passage is
    # no retrieval failure. In a plain run the contexts are a prefix of the retrieved list: same classes.
    given = [d.doc_id for d in context_docs(result, context_k) if d.doc_id in relevant]
    if not given:
        if not any(d.doc_id in relevant for d in result.retrieved):
            return Assigned("no_relevant_retrieved", "no relevant document in the retrieved list")
        return Assigned(
            "relevant_not_in_context", "relevant documents retrieved, none given to the generator"
        )
    if result.answer is None or not result.answer.strip():
        return Assigned("unknown", "no answer")
    correct = _correct(result.metrics, rule)
    if correct is None:
        names = ", ".join(n for n, _ in rule)
        return Assigned("unknown", f"no correctness signal (none of {names} has a value)")
    ok, why = correct
    if not ok:
        return Assigned("answer_wrong_with_evidence", f"relevant context {given[0]} given; {why}")
    support = _supported(result.metrics)
    if support is not None and not support[0]:
        return Assigned("unsupported", f"{why}; not supported: {support[1]}")
    note = (
        f"; supported: {support[1]}"
        if support is not None
        else "; support not judged (neither rc_faithfulness nor groundedness has a value)"
    )
    return Assigned("correct", why + note)


# Without qrels: (sufficient, outcome) -> class (the table; "correct" is the existing class).
_BY_SUFFICIENCY = {
    (False, "abstained"): "insufficient_context",
    (False, "correct"): "answered_beyond_context",
    (False, "wrong"): "answered_beyond_context",
    (True, "abstained"): "over_refused",
    (True, "wrong"): "wrong_with_sufficient_context",
    (True, "correct"): "correct",
}


def without_qrels(
    query: EvalQuery, result: QueryEvalResult, why: str, rule: Sequence[tuple[str, float]]
) -> Assigned:
    """The class of a query without relevance labels: the context_sufficiency judge crossed with the
    outcome (declined / correct or supported / wrong or unsupported); the reason names every signal used.
    An insufficient context that was answered is `answered_beyond_context` whether or not the answer is
    right, so it needs no correctness signal."""
    enough = sufficiency(result)
    if enough is None:
        return Assigned("unknown", f"no qrels ({why}) and no context_sufficiency value")
    if result.answer is None:
        return Assigned("unknown", f"no qrels ({why}); {enough.reason}; no answer")
    got = outcome(query, result, rule)
    if got is None and not enough.value:
        declined = abstention(result)
        if declined is not None and not declined.value:
            got = ("wrong", f"answered ({declined.reason}); correctness not needed")
    if got is None:
        return Assigned("unknown", f"no qrels ({why}); {enough.reason}; no correctness signal")
    name = _BY_SUFFICIENCY[(enough.value, got[0])]
    return Assigned(name, f"no qrels; {enough.reason}; {got[0]}: {got[1]}")


def class_values(
    results: Sequence[QueryEvalResult],
    queries: Mapping[str, EvalQuery],
    *,
    context_k: int,
    relevance_level: int = 1,
    correct_if: str | None = None,
) -> dict[str, dict[str, MetricResult]]:
    """{query id: {class_<name>: 0/1}} for every successful query; details name the class and why."""
    rule = parse_rule(correct_if)
    out: dict[str, dict[str, MetricResult]] = {}
    for r in results:
        if r.status != "ok":
            continue
        got = classify(
            queries[r.query_id], r, context_k=context_k, relevance_level=relevance_level, rule=rule
        )
        details: dict[str, object] = {"class": got.name, "reason": got.reason}
        enough = sufficiency(r)
        if enough is not None:  # shown beside the class, with qrels or without
            details["context_sufficiency"] = enough.value
        out[r.query_id] = {
            class_metric(name): MetricResult(
                name=class_metric(name), value=float(name == got.name), details=details, version="1"
            )
            for name in FAILURE_CLASSES
        }
    return out


def class_of(result: QueryEvalResult) -> str | None:
    """The stored failure class of a query result (None when the run was not classified)."""
    for name in FAILURE_CLASSES:
        metric = result.metrics.get(class_metric(name))
        if metric is not None and metric.value == 1.0:
            return name
    return None
