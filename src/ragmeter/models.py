"""Pydantic records that cross a boundary (files, database, API, CLI output).

Hot paths use numpy and dataclasses; these models are for what is read, stored and reported.
The record names (EvalQuery, EvalDataset, MetricResult, QueryEvalResult,
EvalRunResult, EvalConfig) are part of the public API and of stored JSON.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from ragmeter.records import CONTEXT_K, EscalationSpec, JudgeOptions, ReplayRef, RunRecord, SequentialGates
from ragmeter.records import parse_executor as parse_executor  # its home: records
from ragmeter.result_models import GateAcrossRepeats as GateAcrossRepeats  # their home: result_models
from ragmeter.result_models import JudgeStability as JudgeStability
from ragmeter.result_models import PPIEstimate as PPIEstimate
from ragmeter.result_models import RunUsage, SequentialOutcome
from ragmeter.upgrade import upgrade_config, upgrade_run


class Document(BaseModel):
    """One document (or chunk) of a corpus."""

    model_config = ConfigDict(extra="forbid")

    doc_id: str
    text: str
    title: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)


class EvalQuery(BaseModel):
    """One test case: a question, its gold answer(s) and the ids of the relevant documents."""

    model_config = ConfigDict(extra="forbid")

    query_id: str
    question: str
    ground_truth_answer: str | None = None
    # Every acceptable gold answer (SQuAD/NQ have several); empty means [ground_truth_answer].
    answers: list[str] = Field(default_factory=list)
    relevant_doc_ids: list[str] = Field(default_factory=list)
    # Optional graded judgments {doc_id: grade}; when given it is the qrels of this query.
    relevance: dict[str, int] | None = None
    # Human judgments of this query's answer, named after the judge metric they validate
    # (e.g. {"answer_correctness": 1, "factuality": 0.5}); read by `ragmeter judges validate`.
    human_labels: dict[str, float | int | bool] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    # False: the corpus does not hold the answer (SQuAD v2's is_impossible; `datasets unanswerable`); read by
    # the abstention rates. Written only when False, so that files and dataset hashes stay as they were.
    answerable: bool = Field(default=True, strict=True)

    @model_serializer(mode="wrap")
    def _omit_answerable(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict) and data.get("answerable") is True:
            del data["answerable"]
        return data

    def gold_answers(self) -> list[str]:
        if self.answers:
            return list(self.answers)
        return [self.ground_truth_answer] if self.ground_truth_answer is not None else []

    def judgments(self) -> dict[str, int]:
        """The qrels of this query: graded relevance when given, else grade 1 for each relevant id."""
        if self.relevance is not None:
            return dict(self.relevance)
        return {doc_id: 1 for doc_id in self.relevant_doc_ids}


class EvalDataset(BaseModel):
    """A dataset in ragmeter's native JSON format, optionally carrying its corpus."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    version: str = "1.0"
    queries: list[EvalQuery]
    corpus: list[Document] | None = None
    # Path of a corpus file (JSONL of Document) when the corpus is not inline.
    corpus_path: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class MetricResult(BaseModel):
    """The value of one metric for one query. value is None when undefined or failed; error says why."""

    model_config = ConfigDict(extra="forbid")

    name: str
    value: float | None
    details: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    # Prompt/template version for judges, metric definition version otherwise.
    version: str | None = None

    @field_validator("value")
    @classmethod
    def _no_nan(cls, v: float | None) -> float | None:
        if v is not None and not math.isfinite(v):
            raise ValueError("metric values must be finite; use None with an error instead of NaN")
        return v


class RetrievedDoc(BaseModel):
    model_config = ConfigDict(extra="forbid")

    doc_id: str
    score: float
    rank: int
    text: str = ""


class QueryEvalResult(BaseModel):
    """Everything measured for one query of a run."""

    model_config = ConfigDict(extra="forbid")

    query_id: str
    question: str = ""
    status: Literal["ok", "failed"] = "ok"
    error: str | None = None
    retrieved: list[RetrievedDoc] = Field(default_factory=list)
    # What the generator was given (ids and texts, in the order given). None: an older run, or one without
    # generation: the contexts are then the top `context_k` of `retrieved` (ragmeter.score.query.contexts_of).
    contexts: list[RetrievedDoc] | None = None
    answer: str | None = None
    ground_truth_answer: str | None = None
    metrics: dict[str, MetricResult] = Field(default_factory=dict)
    latency_ms: dict[str, float] = Field(default_factory=dict)
    # LLM usage of this query: {role ("judge", "generator"): {label (judge metric...): usage line}} with
    # ragmeter.llm.usage.UsageLine fields. Summed into the run's usage block, so that the totals survive a
    # resume and work with any executor.
    usage: dict[str, dict[str, dict[str, Any]]] = Field(default_factory=dict)
    # A judge metric judged more than once (`run --repeat N`): its value in each repeat, by repeat index.
    # `metrics[name]` is then their mean (see mean_of_repeats). Empty for a metric judged once.
    repeats: dict[str, list[MetricResult]] = Field(default_factory=dict)
    # The system's confidence in its answer, when it gives one (selective answering: ragmeter.score.selective).
    # Written only when given, so that results without one read and write as they did.
    confidence: float | None = None

    @model_serializer(mode="wrap")
    def _omit_no_confidence(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict) and data.get("confidence", 0) is None:
            del data["confidence"]
        return data


def mean_of_repeats(name: str, values: list[MetricResult]) -> MetricResult:
    """A metric's value for a query judged in repeats: the mean over the repeats with a value (null with the
    first repeat's error when none has one); details["repeats"] holds n, valid, sd (ddof 1) and the values."""
    valid = [v.value for v in values if v.value is not None]
    mean = math.fsum(valid) / len(valid) if valid else None
    sd = None
    if mean is not None and len(valid) > 1:
        sd = math.sqrt(math.fsum((x - mean) ** 2 for x in valid) / (len(valid) - 1))
    first = values[0] if values else MetricResult(name=name, value=None)
    details = _common_details([v for v in values if v.value is not None] or values)
    details["repeats"] = {
        "n": len(values),
        "valid": len(valid),
        "sd": sd,
        "values": [v.value for v in values],
    }
    error = None if valid else next((v.error for v in values if v.error), "no repeat has a value")
    return MetricResult(name=name, value=mean, details=details, error=error, version=first.version)


def _common_details(values: list[MetricResult]) -> dict[str, Any]:
    """The details of a mean over repeats: a number that every repeat has is averaged (a grade, the total
    score that a grade times a fixed weight gives), anything else is kept when every repeat agrees on it
    (a rank, a weight) and left to the repeats themselves otherwise (a reasoning)."""
    out: dict[str, Any] = {}
    for key in values[0].details if values else ():
        each = [v.details.get(key) for v in values]
        if key == "sampling":
            continue
        if all(x == each[0] for x in each):
            out[key] = each[0]
        elif all(isinstance(x, int | float) and not isinstance(x, bool) for x in each):
            out[key] = math.fsum(x for x in each if isinstance(x, int | float)) / len(each)
    return out


class MetricSummary(BaseModel):
    """Aggregate of one metric over a run: mean and std over the valid (non-null) values."""

    model_config = ConfigDict(extra="forbid")

    mean: float | None
    std: float | None
    n: int
    n_null: int = 0
    ci95: tuple[float, float] | None = None
    # How ci95 was computed: "bootstrap-percentile" or "wilson" (None: no interval, or an older run).
    ci_method: str | None = None
    # Percentiles, for metrics that aggregate as p50/p95/max (latency_<stage>_ms).
    p50: float | None = None
    p95: float | None = None
    max: float | None = None


class EvalConfig(BaseModel):
    """How a run is made. Never holds secrets (API keys come from the environment only)."""

    model_config = ConfigDict(extra="forbid")

    dataset: str = "demo"
    namespace: str | None = None
    retrieval_top_k: list[int] = Field(default_factory=lambda: [1, 3, 5, 10])
    evaluate_generation: bool = True
    use_llm_judge: bool = False
    judge_model: str | None = None
    # LLM spec of the built-in pipeline's answer generator (None: the system's own default).
    generator_model: str | None = None
    # Queries per `retrieve_batch` call, for a system that offers it (ragmeter.run.batching).
    batch_size: int = 16
    seed: int = 42
    system: str = "builtin"
    mode: str = "hybrid"
    metrics: list[str] | None = None
    concurrency: int = 16
    cache: bool = False
    limit: int | None = None
    output: str | None = None
    relevance_level: int = 1
    # Where the queries run: "local" (asyncio in this process) or "ray" / "ray:ADDRESS" (docs/scale-out.md).
    executor: str = "local"
    # Judge each judged query this many times (`run --repeat N`), at `repeat_temperature` (None: the default
    # of ragmeter.run.repeats, DEFAULT_TEMPERATURE); one judgment (1) is what runs always did.
    repeat: int = 1
    repeat_temperature: float | None = None
    # How many of the top retrieved texts the generator and the judges get (`--context-k`).
    context_k: int = CONTEXT_K  # at least 1: checked with the run (ragmeter.run.prepare)
    semantic: bool = True  # False: no semantic similarity metric unless named (it loads an embedding model)
    # The rule that calls an answer correct for the failure classes (ragmeter.score.classes.parse_rule).
    correct_if: str | None = None
    # build_system keywords of the built-in pipeline (`--set pipeline.OPTION`, `ragmeter experiment`).
    system_options: dict[str, Any] = Field(default_factory=dict)
    # The judge client's timeout, retries and budget (`--judge-timeout`, `--judge-retries`, `--judge-budget`).
    judge_options: JudgeOptions = Field(default_factory=JudgeOptions)
    # `--sequential`: the gates decided while the run runs (ragmeter.run.sequential); None: not sequential.
    sequential: SequentialGates | None = None
    # The nugget set of the nugget_* metrics: {"path", "hash", "prompt"} (ragmeter.score.nugget_plan).
    nuggets: dict[str, str] | None = None
    # A cheap judge escalating to a strong one (`--escalate-to`, ragmeter.judges.cascade); None: no cascade.
    escalation: EscalationSpec | None = None
    # A diagnose replay's parent run and intervention (ragmeter.diagnose.replay); None for any other run.
    replay: ReplayRef | None = None
    # The user's own entries (`--set extra.KEY=VALUE`, a config file's `extra:`): stored with the run,
    # never read by ragmeter (older runs kept the settings above here: ragmeter.upgrade lifts them).
    extra: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _lift_old_extra(cls, data: Any) -> Any:
        return upgrade_config(data)

    @field_validator("repeat")
    @classmethod
    def _positive_repeat(cls, v: int) -> int:
        if v < 1:
            raise ValueError(f"must be at least 1, got {v}")
        return v

    @field_validator("repeat_temperature")
    @classmethod
    def _sane_temperature(cls, v: float | None) -> float | None:
        if v is not None and not (math.isfinite(v) and 0.0 <= v <= 2.0):
            raise ValueError(f"must be a number from 0 to 2, got {v}")
        return v

    @field_validator("executor")
    @classmethod
    def _known_executor(cls, v: str) -> str:
        kind, address = parse_executor(v)
        return kind if address is None else f"{kind}:{address}"

    @field_validator("retrieval_top_k")
    @classmethod
    def _positive_cutoffs(cls, v: list[int]) -> list[int]:
        bad = [k for k in v if k < 1]
        if bad:
            raise ValueError(f"cut-offs must be integers >= 1, got {bad[0]}")
        return v

    @field_validator("concurrency", "batch_size")
    @classmethod
    def _positive_concurrency(cls, v: int) -> int:
        if v < 1:
            raise ValueError(f"must be at least 1, got {v}")
        return v

    @field_validator("judge_model", "generator_model")
    @classmethod
    def _no_secret_in_llm_spec(cls, v: str | None) -> str | None:
        # The config holds the spec without URL credentials; the LLM client gets the real one back from
        # this process's memory (ragmeter.safety.reveal), so no secret is ever stored.
        from ragmeter.safety import redact_spec

        return redact_spec(v)

    @model_serializer(mode="wrap")
    def _serialize_redacted(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Last wall: a system/dataset URL with credentials (or one set by model_copy) is never written.
        from ragmeter.safety import redact_data

        return redact_data(handler(self))


# Version of the run JSON (EvalRunResult). 1: the 0.1 format, no `schema_version` field (still read).
# 2: schema_version, usage, record, per-query usage. 3: the settings that config.extra held are typed
# config fields (EvalConfig reads 1 and 2 through ragmeter.upgrade.upgrade_config).
RUN_SCHEMA_VERSION = 3


class EvalRunResult(BaseModel):
    """A finished (or partial) evaluation run with its per-query results."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = RUN_SCHEMA_VERSION
    run_id: str | None = None
    name: str = ""
    status: Literal["running", "completed", "failed"] = "completed"
    config: EvalConfig = Field(default_factory=EvalConfig)
    dataset_hash: str | None = None
    versions: dict[str, str] = Field(default_factory=dict)
    started_at: datetime | None = None
    completed_at: datetime | None = None
    aggregate: dict[str, MetricSummary] = Field(default_factory=dict)
    per_query: list[QueryEvalResult] = Field(default_factory=list)
    n_queries: int = 0
    n_failed: int = 0
    n_queries_without_relevant: int = 0
    error: str | None = None
    notes: list[str] = Field(default_factory=list)
    # LLM calls, tokens and cost (null with cost_note when a price is unknown); None without an LLM.
    usage: RunUsage | None = None
    # What rebuilds the run (secret-free); None for runs stored before run records (0.1).
    record: RunRecord | None = None
    # Judge means corrected with the dataset's human labels: {judge metric: PPIEstimate}; empty without labels.
    ppi: dict[str, PPIEstimate] = Field(default_factory=dict)
    # What a sequential run (`--sequential`, ragmeter.run.sequential) decided; None otherwise.
    sequential: SequentialOutcome | None = None
    # How far each judge metric agrees with itself across repeats (`run --repeat N`); empty for N = 1.
    stability: dict[str, JudgeStability] = Field(default_factory=dict)
    # Each gate on a metric judged in repeats, flaky or stable (`run --repeat N --fail-under ...`); a flaky
    # gate is left out of the exit code unless `--flaky fail` (ragmeter.score.flaky).
    gates_across_repeats: dict[str, GateAcrossRepeats] = Field(default_factory=dict)
    # The sufficiency x outcome table (ragmeter.score.sufficiency): cells with counts and Wilson intervals;
    # None when no query has a context_sufficiency value.
    sufficiency: dict[str, Any] | None = None
    # The risk-coverage curve and its area when the system gave confidences (ragmeter.score.selective).
    risk_coverage: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _readable_record(cls, data: Any) -> Any:
        return upgrade_run(data, RunRecord.model_validate)

    def __setattr__(self, name: str, value: Any) -> None:
        from ragmeter.records import typed_block  # `run.usage = {...}` becomes its model

        super().__setattr__(name, typed_block(name, value))

    def system_label(self) -> str:
        """What was evaluated, as lists show it: `builtin (hybrid)` only for the built-in pipeline; an
        in-process Python object (a callable, a System) by its name, as its run record says."""
        replay = (self.record.replay if self.record else None) or self.config.replay
        if replay is not None and replay.parent:
            return f"{replay.intervention} replay of run {replay.parent}"
        system = self.record.system if self.record else None
        spec = system.spec if system is not None else self.config.system
        if system is not None and system.kind == "object":
            return f"{spec} (Python object)"
        if (system.kind if system else self.config.system) == "builtin":
            return f"builtin ({system.mode if system else self.config.mode})"
        return spec
