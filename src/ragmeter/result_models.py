"""The run's judge results beside its aggregates: PPI-corrected means, judge stability across repeats and
gates judged in repeats (re-exported by ragmeter.models, where they were first defined)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class PPIEstimate(BaseModel):
    """A judge metric's mean corrected with human labels by prediction-powered inference (ragmeter.score.ppi):
    the PPI estimate and its 95% interval (clipped into the metric's range) next to the plain judge mean."""

    model_config = ConfigDict(extra="forbid")

    estimate: float
    ci95: tuple[float, float]
    se: float
    judge_mean: float  # the plain mean of the judge over the n_total queries with a value
    human_mean: float  # the mean of the human labels alone (on the metric's scale)
    n_labeled: int  # human labels used: labelled queries with a judge value
    n_total: int
    clipped: bool = False
    labels: str = ""  # how the human labels were put on the metric's scale
    method: str = "ppi-mean (Angelopoulos et al. 2023), normal approximation"


class JudgeStability(BaseModel):
    """A judge metric judged N times per query (`run --repeat N`): Krippendorff's alpha across the repeats
    at the judge's level of measurement, its bootstrap interval over queries, the share of queries whose
    pass verdict (value >= threshold) is not the same in every repeat, and the mean per-query sd."""

    model_config = ConfigDict(extra="forbid")

    repeats: int
    items: int  # queries with at least two valid repeats
    level: Literal["interval", "ordinal"]
    alpha: float | None  # None: undefined (no variation at all, or no pairable query)
    alpha_ci95: tuple[float, float] | None = None
    flip_share: float | None = None
    threshold: float
    threshold_from: Literal["gate", "mid-range"]
    mean_sd: float | None = None
    temperature: float | None = None  # the temperature the repeats were asked for (None: not sent)
    seeds: list[int | None] = Field(default_factory=list)  # seed of each repeat, by repeat index


class GateAcrossRepeats(BaseModel):
    """A `--fail-under` gate on a metric judged in repeats (ragmeter.score.flaky): the run mean of each
    repeat, how many fall on the other side of the threshold from the run's verdict, that share with its
    Wilson 95% interval, and whether the gate is flaky (share above the tolerance)."""

    model_config = ConfigDict(extra="forbid")

    threshold: float
    higher_is_better: bool = True
    verdict: Literal["pass", "fail"]  # the gate rule on the run's mean over all repeats
    repeat_means: list[float | None]
    other_side: int
    repeats: int
    share: float
    share_ci95: tuple[float, float]
    tolerance: float = 0.0
    flaky: bool
    method: str = "wilson"
