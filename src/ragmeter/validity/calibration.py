"""The calibration of an escalating judge (Trust or Escalate, Jung et al., ICLR 2025): the confidence threshold
at or above which a cheap judge's verdict is kept, with the guarantee it carries, as one JSON file.

`EscalationCalibration` is what a judge card embeds (its field name is `CARD_FIELD`): the cheap judge's spec,
the metric and prompt version, how confidence was measured, the target agreement and risk, the threshold and
the coverage it gave on the calibration labels, and every threshold tested (ragmeter.stats.fixed_sequence).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragmeter.errors import InputError
from ragmeter.safefiles import write_text_atomic
from ragmeter.stats.fixed_sequence import DEFAULT_GRID, fixed_sequence_threshold

SCHEMA_VERSION = 1
CARD_FIELD = "escalation"  # the field of a judge card that holds an EscalationCalibration
METHOD = (
    "fixed-sequence testing over decreasing confidence thresholds, an exact one-sided binomial test per "
    "threshold (Trust or Escalate: Jung, Brahman and Choi, ICLR 2025)"
)

ConfidenceSource = Literal["logprob", "repeats"]


class TestedThreshold(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    threshold: float
    n: int
    disagreements: int
    p_value: float
    rejected: bool


class EscalationCalibration(BaseModel):
    """A cheap judge's escalation threshold and its guarantee: with probability at least 1 - risk, the cheap
    judge agrees with people on at least `target_agreement` of the items whose confidence reaches
    `threshold` (None: no threshold qualified, so every item escalates)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    judge: str  # the cheap judge's spec, as given (no secrets: specs carry none)
    metric: str
    prompt_version: str | None = None
    confidence: ConfidenceSource
    repeats: int | None = None  # confidence "repeats": how many
    target_agreement: float = Field(gt=0.0, lt=1.0)
    risk: float = Field(gt=0.0, lt=1.0)
    threshold: float | None
    coverage: float = Field(ge=0.0, le=1.0)
    empirical_agreement: float | None = None
    agreement_lower_bound: float | None = None
    n_labels: int = Field(ge=0)  # calibration items judged
    n_failed: int = Field(default=0, ge=0)  # of them, failed judgments (left out)
    labels: str | None = None  # where the labels came from
    method: str = METHOD
    tests: list[TestedThreshold] = Field(default_factory=list)
    created_at: str = ""

    @property
    def guarantee(self) -> str:
        """The stated guarantee, in one sentence."""
        if self.threshold is None:
            return (
                f"no confidence threshold of {self.judge} reached {self.target_agreement:.0%} agreement at risk "
                f"{self.risk:g}: every item escalates"
            )
        return (
            f"{self.judge} answers items with {self.confidence} confidence >= {self.threshold:g}: agreement with "
            f"people >= {self.target_agreement:.0%} on them with probability >= {1 - self.risk:.0%} "
            f"(calibrated on {self.n_labels - self.n_failed} labels, coverage {self.coverage:.0%})"
        )


def calibrate(
    confidences: Sequence[float],
    agreements: Sequence[bool],
    *,
    judge: str,
    metric: str,
    confidence: ConfidenceSource,
    target_agreement: float,
    risk: float,
    repeats: int | None = None,
    prompt_version: str | None = None,
    n_failed: int = 0,
    labels: str | None = None,
    grid: Sequence[float] = DEFAULT_GRID,
) -> EscalationCalibration:
    """The calibration of one cheap judge from its confidence and agreement with people on each labelled item."""
    out = fixed_sequence_threshold(
        confidences, agreements, target_agreement=target_agreement, risk=risk, grid=grid
    )
    return EscalationCalibration(
        judge=judge,
        metric=metric,
        prompt_version=prompt_version,
        confidence=confidence,
        repeats=repeats,
        target_agreement=target_agreement,
        risk=risk,
        threshold=out.threshold,
        coverage=out.coverage,
        empirical_agreement=out.empirical_agreement,
        agreement_lower_bound=out.agreement_lower_bound,
        n_labels=out.n_calibration + n_failed,
        n_failed=n_failed,
        labels=labels,
        tests=[TestedThreshold(**t.__dict__) for t in out.tests],
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def save_calibration(cal: EscalationCalibration, path: str | Path) -> Path:
    return write_text_atomic(path, cal.model_dump_json(indent=2) + "\n", source=str(path))


def load_calibration(path: str | Path) -> EscalationCalibration:
    """Read a calibration file; a bad one is an InputError naming the file and the field."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeError) as exc:
        raise InputError(f"cannot read the calibration file: {exc}", source=source) from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc.msg}", source=source, line=exc.lineno) from None
    if isinstance(raw, dict) and CARD_FIELD in raw and "threshold" not in raw:
        raw = raw[CARD_FIELD]  # a judge card that embeds its calibration
    try:
        cal = EscalationCalibration.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        raise InputError(f"field {where}: {err['msg']}", source=source) from None
    if cal.schema_version > SCHEMA_VERSION:
        raise InputError(
            f"field schema_version: {cal.schema_version} is newer than this ragmeter reads ({SCHEMA_VERSION})",
            source=source,
        )
    return cal
