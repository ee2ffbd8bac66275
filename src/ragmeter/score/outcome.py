"""What happened to one answered query, read from its stored values (no LLM call): did the answer decline,
was it correct (or, without a reference, supported by its contexts), and were its contexts sufficient.

Shared by the failure classes (ragmeter.score.classes), the abstention rates (ragmeter.score.abstention) and
the sufficiency x outcome table (ragmeter.score.sufficiency).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ragmeter.models import EvalQuery, MetricResult, QueryEvalResult

SUFFICIENCY = "context_sufficiency"
ABSTAINED = "abstained"
# Without a reference, the reference-free groundedness judge decides supported (>=) vs unsupported (<).
GROUNDEDNESS = "groundedness"
GROUNDEDNESS_PASS = 0.5

Outcome = Literal["correct", "abstained", "wrong"]


@dataclass(frozen=True)
class Signal:
    value: bool
    reason: str


def correct_by(
    metrics: Mapping[str, MetricResult], rule: Sequence[tuple[str, float]]
) -> tuple[bool, str] | None:
    """The correctness rule: the first metric of `rule` with a value decides (value >= threshold)."""
    for name, threshold in rule:
        value = metrics[name].value if name in metrics else None
        if value is not None:
            return (
                value >= threshold,
                f"{name} {value:.3g} {'>=' if value >= threshold else '<'} {threshold:g}",
            )
    return None


def abstention(result: QueryEvalResult) -> Signal | None:
    """Did the answer decline: the `abstained` judge when it has a value, else the phrase list (None: no
    answer was generated, so nothing declined or answered)."""
    if result.answer is None:
        return None
    judged = result.metrics.get(ABSTAINED)
    if judged is not None and judged.value is not None:
        return Signal(judged.value >= 0.5, f"abstained judge {judged.value:g}")
    from ragmeter.text.abstention import PHRASES_VERSION, refusal_phrase

    phrase = refusal_phrase(result.answer)
    if phrase is None:
        return Signal(False, f"no refusal phrase ({PHRASES_VERSION})")
    said = "empty answer" if phrase == "" else f"refusal phrase {phrase!r}"
    return Signal(True, f"{said} ({PHRASES_VERSION})")


def correctness(
    query: EvalQuery, result: QueryEvalResult, rule: Sequence[tuple[str, float]]
) -> Signal | None:
    """Correct by the run's rule where the query has a reference answer; without one, supported by its
    contexts (groundedness >= GROUNDEDNESS_PASS). None: no signal has a value."""
    if query.gold_answers():
        found = correct_by(result.metrics, rule)
        return None if found is None else Signal(found[0], found[1])
    grounded = result.metrics.get(GROUNDEDNESS)
    if grounded is None or grounded.value is None:
        return None
    ok = grounded.value >= GROUNDEDNESS_PASS
    sign = ">=" if ok else "<"
    return Signal(ok, f"no reference: groundedness {grounded.value:.3g} {sign} {GROUNDEDNESS_PASS:g}")


def outcome(
    query: EvalQuery, result: QueryEvalResult, rule: Sequence[tuple[str, float]]
) -> tuple[Outcome, str] | None:
    """abstained / correct / wrong, with the signals that decided it (None: not known)."""
    declined = abstention(result)
    if declined is None:
        return None
    if declined.value:
        return "abstained", declined.reason
    right = correctness(query, result, rule)
    if right is None:
        return None
    return ("correct" if right.value else "wrong"), f"{right.reason}; {declined.reason}"


def sufficiency(result: QueryEvalResult) -> Signal | None:
    """The context_sufficiency judge's verdict (None: not judged, or the judgment failed)."""
    judged = result.metrics.get(SUFFICIENCY)
    if judged is None or judged.value is None:
        return None
    return Signal(judged.value >= 0.5, f"context_sufficiency {judged.value:g}")
