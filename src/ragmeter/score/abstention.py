"""The abstention rates of a run, from stored values (no LLM call): each a 0/1 value on the queries where the
rate is defined (ragmeter.metrics.abstention), so its mean is the rate over exactly those queries and its n
says how many. A query is unanswerable when the dataset marks it `answerable: false`; refusal precision and
recall, and the answered-unanswerable rate, are computed only for a run whose queries include one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragmeter.models import EvalQuery, MetricResult, QueryEvalResult
from ragmeter.score.outcome import abstention, correctness

Values = dict[str, dict[str, MetricResult]]
VERSION = "1"


def _value(name: str, hit: bool, reason: str, version: str = VERSION) -> MetricResult:
    return MetricResult(name=name, value=float(hit), details={"reason": reason}, version=version)


def abstention_values(
    results: Sequence[QueryEvalResult],
    queries: Mapping[str, EvalQuery],
    rule: Sequence[tuple[str, float]],
) -> Values:
    """{query id: {metric: 0/1}} for every successful query with an answer (None: no generation)."""
    from ragmeter.text.abstention import PHRASES_VERSION, refusal_phrase

    marked = any(not queries[r.query_id].answerable for r in results if r.query_id in queries)
    out: Values = {}
    for r in results:
        if r.status != "ok" or r.answer is None or r.query_id not in queries:
            continue
        query = queries[r.query_id]
        declined = abstention(r)
        assert declined is not None  # an answer was generated
        phrase = refusal_phrase(r.answer)
        said = "no refusal phrase" if phrase is None else f"refusal phrase {phrase!r}" if phrase else "empty"
        values = [
            _value("abstained_lexical", phrase is not None, said, PHRASES_VERSION),
            _value("abstention_rate", declined.value, declined.reason),
        ]
        why = f"{declined.reason}; the query is {'answerable' if query.answerable else 'unanswerable'}"
        if query.answerable:
            values.append(_value("over_refusal_rate", declined.value, why))
        elif marked:
            values.append(_value("answered_unanswerable_rate", not declined.value, why))
            values.append(_value("refusal_recall", declined.value, why))
        if declined.value and marked:
            values.append(_value("refusal_precision", not query.answerable, why))
        if not declined.value:
            right = correctness(query, r, rule)
            if right is not None:
                values.append(_value("correct_when_answered", right.value, right.reason))
        out[r.query_id] = {v.name: v for v in values}
    return out
