"""The typed blocks of a run's results beside its aggregates: LLM usage, the sequential gates' outcome,
PPI-corrected means, judge stability across repeats and gates judged in repeats (re-exported by
ragmeter.models, where they were first defined)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer


def as_json(block: Any) -> dict[str, Any] | None:
    """A typed block's JSON (`JsonView.dump`), a plain mapping as a dict (a block assigned after the run was
    built, e.g. `run.usage = run_usage(...)`, is not validated into its model), None for None."""
    if block is None:
        return None
    if isinstance(block, JsonView):
        return block.dump()
    return dict(block)


class JsonView:
    """Read access by key to a record's JSON (`run.record["system"]["kind"]`), as when EvalRunResult.record
    was a dict: code written against the dict keeps working."""

    def dump(self) -> dict[str, Any]:
        assert isinstance(self, BaseModel)
        return self.model_dump(mode="json")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):  # compared with the dict it was
            return self.dump() == dict(other)
        return super().__eq__(other)

    def __getitem__(self, key: str) -> Any:
        return self.dump()[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.dump().get(key, default)

    def keys(self) -> Any:
        return self.dump().keys()

    def items(self) -> Any:
        return self.dump().items()


class UsageLine(BaseModel):
    """Calls, tokens and cost of one label, one client, or a total."""

    model_config = ConfigDict(extra="forbid")

    calls: int = Field(0, description="calls answered (cached ones included)")
    cached_calls: int = 0
    failed_calls: int = Field(0, description="calls that failed for good (after their retries)")
    input_tokens: int = Field(0, description="prompt tokens of the requests sent (cached calls: 0)")
    output_tokens: int = Field(0, description="completion tokens of the requests sent (cached calls: 0)")
    cache_read_tokens: int = Field(
        0,
        description="of input_tokens, those the server read from its prompt cache (billed at its cache rate)",
    )
    cache_write_tokens: int = Field(
        0, description="of input_tokens, those the server wrote to its prompt cache (Anthropic: 1.25x)"
    )
    cost_usd: float | None = Field(0.0, description="estimated from the price table; None when unknown")
    cost_note: str | None = Field(None, description="why cost_usd is None")


def given_only(model: BaseModel, data: Any) -> Any:
    """`data` (the JSON of `model`) with only the fields `model` was given, at every level: a block reads and
    writes as it was stored (a usage line written before `cache_read_tokens` existed gets none), and one built
    by today's code, which gives every field, is whole."""
    if not isinstance(data, dict):
        return data
    keep = model.model_fields_set | set(model.model_extra or {})
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key not in keep:
            continue
        inner = getattr(model, key, None)
        if isinstance(inner, BaseModel):
            value = given_only(inner, value)
        elif isinstance(inner, dict) and isinstance(value, dict):
            value = {
                k: given_only(v, value[k]) if isinstance(v, BaseModel) else value[k] for k, v in inner.items()
            }
        out[key] = value
    return out


class RunUsage(JsonView, BaseModel):
    """A run's LLM calls, tokens and cost (ragmeter.score.usage.run_usage): the judge in total and per judge
    metric, the generator, the total (a cost is null with cost_note when a price is unknown), the models."""

    model_config = ConfigDict(extra="allow")  # a block written by another version keeps what it holds

    judge: UsageLine | None = None
    judge_by_metric: dict[str, UsageLine] = Field(default_factory=dict)
    generator: UsageLine | None = None
    total: UsageLine | None = None
    models: dict[str, str | None] = Field(default_factory=dict)
    spend_cap: dict[str, Any] | None = None  # under `--max-cost`: what the ledger counted
    escalation: dict[str, Any] | None = None  # an escalating judge's coverage and costs

    @model_serializer(mode="wrap")
    def _as_given(self, handler: SerializerFunctionWrapHandler) -> Any:
        return given_only(self, handler(self))


class SequentialGateOutcome(BaseModel):
    model_config = ConfigDict(extra="allow")

    threshold: float
    higher_is_better: bool = True
    decision: Literal["pass", "fail", "undecided"]
    interval: list[float] | None = None


class SequentialOutcome(JsonView, BaseModel):
    """What a sequential run (`--sequential`, ragmeter.run.sequential) decided: each gate's decision and
    interval, the queries used, what stopping saved; or, for a stopped run resumed to the full run, the stop
    it no longer is (`resumed_after_stop`). Its JSON holds the fields it was given (`given_only`)."""

    model_config = ConfigDict(extra="allow")

    stopped_early: bool = False
    decision: Literal["pass", "fail", "undecided"] | None = None
    alpha: float | None = None
    order_seed: int | None = None
    queries_used: int | None = None
    queries_evaluated: int | None = None
    queries_total: int | None = None
    gates: dict[str, SequentialGateOutcome] | None = None
    saved: dict[str, Any] | None = None
    resumed_after_stop: dict[str, Any] | None = None

    @model_serializer(mode="wrap")
    def _as_given(self, handler: SerializerFunctionWrapHandler) -> Any:
        return given_only(self, handler(self))


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
