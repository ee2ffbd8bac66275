"""`run --escalate-to STRONG --card FILE`: check the flags and the calibration file, and give what the run's
config carries (EvalConfig.escalation, recorded as RunRecord.escalation; ragmeter.judges.cascade)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragmeter.errors import InputError

if TYPE_CHECKING:  # pydantic is imported by the commands that need it, not by `ragmeter eval`
    from ragmeter.records import EscalationSpec


def escalation_extra(
    strong: str | None,
    card: str | None,
    judge: str | None,
    repeat: int | None,
    *,
    max_drift: float | None = None,
) -> EscalationSpec | None:
    """EvalConfig.escalation from the flags, or None without them; a bad combination or card is an
    InputError naming the flag or the file's field."""
    if strong is None and (card is None or max_drift is not None):
        return None  # no cascade (a --card given with --max-drift alone is its anchor card)
    if strong is None or card is None:
        missing, given = ("--escalate-to", "--card") if strong is None else ("--card", "--escalate-to")
        raise InputError(f"needs {missing} too", source=given)
    if judge is None:
        raise InputError("needs --judge CHEAP (the judge the card calibrates)", source="--escalate-to")
    if repeat is not None and repeat > 1:
        raise InputError("an escalating judge judges each query once: leave out --repeat", source="--repeat")
    from ragmeter.records import EscalationSpec
    from ragmeter.run.rebuild import check_llm_spec
    from ragmeter.validity.calibration import load_calibration

    check_llm_spec(strong, source="--escalate-to")
    cal = load_calibration(card)
    if cal.judge != judge:
        raise InputError(
            f"field judge: the card calibrates {cal.judge!r}, the run's --judge is {judge!r}", source=card
        )
    if cal.confidence != "logprob":
        raise InputError(
            f"field confidence: a run reads the verdict's probability (logprob); this card was calibrated on "
            f"{cal.confidence}",
            source=card,
        )
    return EscalationSpec(
        strong=strong,
        metric=cal.metric,
        threshold=cal.threshold,
        guarantee=cal.guarantee,
        calibration=cal.model_dump(mode="json"),
    )
