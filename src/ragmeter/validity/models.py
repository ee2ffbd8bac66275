"""The judge card's records (pydantic: a card is stored, written to JSON and read back)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ragmeter.validity import perturb as P
from ragmeter.validity.calibration import EscalationCalibration

CARD_SCHEMA = "ragmeter.judge_card/1"


class Shift(BaseModel):
    """One perturbation's net shift: (verdicts moved in its favour - against) / n over items."""

    model_config = ConfigDict(extra="forbid")
    perturbation: str
    baseline: str
    n: int
    n_failed: int
    favour: int
    against: int
    ties: int
    net_shift: float | None
    ci95: tuple[float, float] | None
    ci_method: str = "percentile bootstrap of the mean sign, 2,000 resamples"
    p_value: float
    flagged: bool
    direction: str  # "in favour", "against" or "" (inside tolerance)


class Consistency(BaseModel):
    model_config = ConfigDict(extra="forbid")
    repeats: int
    n: int
    flips: int
    flip_share: float | None
    flip_share_ci95: tuple[float, float] | None
    ci_method: str = "Wilson"
    alpha: float | None
    alpha_ci95: tuple[float, float] | None


class Anchors(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ids: list[str]
    fingerprint: str
    values: dict[str, float | None]


class Drift(BaseModel):
    """Label flips against an earlier card's anchors (pass verdicts: value >= the middle of the range)."""

    model_config = ConfigDict(extra="forbid")
    against: str
    against_judge: str
    n: int
    n_failed: int
    flips: int
    share: float | None
    ci95: tuple[float, float] | None
    ci_method: str = "Wilson"
    items: list[str]
    kappa_before: float | None = None
    kappa_after: float | None = None
    kappa_change: float | None = None


class JudgeCard(BaseModel):
    model_config = ConfigDict(extra="forbid")
    schema_version: str = Field(default=CARD_SCHEMA, alias="schema")
    card_id: str | None = None
    judge_spec: str
    judge: dict[str, Any]
    metric: str
    prompt_version: str | None
    dataset: str
    n_items: int
    seed: int
    tolerance: float
    battery_version: str = P.PERTURBATIONS_VERSION
    master_keys: dict[str, Any]
    created_at: str
    agreement: dict[str, Any] | None
    consistency: Consistency | None
    bias: list[Shift]
    self_judging: dict[str, Any]
    anchors: Anchors
    drift: Drift | None = None
    # the threshold of an escalating judge calibrated on people's labels (`ragmeter judges calibrate`); `run
    # --escalate-to STRONG --card CARD.json` reads it from a card as from a calibration file
    escalation: EscalationCalibration | None = None
    usage: dict[str, Any]
    seconds: float
    notes: list[str] = Field(default_factory=list)

    @property
    def flagged(self) -> list[str]:
        out = [s.perturbation for s in self.bias if s.flagged]
        if self.self_judging.get("flagged"):
            out.append("self_judging")
        return out

    def dump(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)
