"""The run record: everything that rebuilds a run, persisted with it (no secrets). A boundary record like
those of models.py: it names a system and never imports one (building a reference from a live object is
ragmeter.run.refs.system_ref; rebuilding from the record is ragmeter.run.rebuild).

Resume and rescore start from it: the system reference with all of its options (or the fingerprint of an
in-process object), the dataset and its hash, metrics, cut-offs, seed, the judge and generator specs with
credentials removed, concurrency and the executor.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from ragmeter.errors import InputError
from ragmeter.result_models import JsonView, RunUsage, SequentialOutcome
from ragmeter.safety import REDACTED, is_secret_option, redact_spec

# Version of the run record. 1: before `plan`; the settings that steer a run were keys of config.extra
# (lifted into EvalConfig's typed fields by ragmeter.upgrade.upgrade_config). 2: `plan`.
RECORD_SCHEMA_VERSION = 2
# How many of the top retrieved texts a generator and the judges get (EvalConfig.context_k overrides).
CONTEXT_K = 5

SystemKind = Literal["builtin", "reference", "http", "run_file", "object"]
# Any header naming a key, token, ... holds a credential (options: see safety.is_secret_option).
_SECRET_HEADER = re.compile(r"(key|token|secret|password|passwd|auth|signature|credential)", re.IGNORECASE)


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=_unjsonable)


def _unjsonable(value: Any) -> Any:
    if isinstance(value, set | frozenset):
        return sorted(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def sha256(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


class SystemRef(BaseModel):
    """What was evaluated. A reference (`builtin`, `module:attr`, a URL, a run file) is rebuilt from `spec`
    and `options`; an in-process object (`kind="object"`) only by passing an object with the same
    fingerprint through the Python API."""

    model_config = ConfigDict(extra="forbid")

    kind: SystemKind
    spec: str  # builtin | module:attr | URL | run file path | module.qualname of the object
    mode: str = "hybrid"
    namespace: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)  # every build_system keyword, JSON
    fingerprint: str
    rebuildable: bool = True
    why_not: str | None = None  # why it cannot be rebuilt (an object, an option that is not data...)
    # The built-in pipeline's embedding space (model, backend, precision, max_seq_length, normalize):
    # what its dense vectors depend on, so a run says which encoder produced its numbers.
    embedding: dict[str, Any] | None = None


class LLMRef(BaseModel):
    model_config = ConfigDict(extra="forbid")

    spec: str  # credentials removed
    public: dict[str, Any] | None = None  # the client's spec_public (backend, model, parameters)
    # Client settings the run was given (timeout, max_retries, budget): replayed by ragmeter.run.rebuild
    # on resume, on Ray workers and by rescore.
    options: dict[str, Any] = Field(default_factory=dict)
    credentials_removed: bool = False


class EscalationRef(BaseModel):
    """An escalating judge (`run --escalate-to STRONG --card FILE`): the record's judge is the cheap one; it
    answers `metric` at or above `threshold`, the strong judge the rest (ragmeter.judges.cascade)."""

    model_config = ConfigDict(extra="forbid")

    strong: LLMRef
    metric: str
    threshold: float | None
    guarantee: str
    calibration: dict[str, Any]  # the calibration file's content (ragmeter.validity.calibration)


class JudgeOptions(BaseModel):
    """The judge client's settings a run was given (`--judge-timeout`, `--judge-retries`, `--judge-budget`);
    recorded in LLMRef.options (only those given) and replayed on resume, on Ray workers and by rescore."""

    model_config = ConfigDict(extra="forbid")

    timeout: float | None = Field(default=None, gt=0)
    max_retries: int | None = Field(default=None, ge=0)
    budget: int | None = Field(default=None, ge=0)
    # Claims per factuality verification call (ragmeter.judges.factuality; RAGMETER_FACTUALITY_BATCH
    # overrides it); not a client option: recorded as RunRecord.factuality_batch.
    factuality_batch: int | None = Field(default=None, ge=1, le=12)

    @model_serializer(mode="wrap")
    def _only_given(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        return {k: v for k, v in data.items() if v is not None} if isinstance(data, dict) else data

    def given(self) -> dict[str, Any]:
        """The client's options that were set, as its keywords."""
        return self.model_dump(exclude_none=True, exclude={"factuality_batch"})


class SequentialGates(BaseModel):
    """A sequential run's gates (`--fail-under METRIC=VALUE --sequential [--alpha A]`); checked against the
    metric registry by ragmeter.run.sequential.sequential_spec."""

    model_config = ConfigDict(extra="forbid")

    gates: dict[str, float] = Field(default_factory=dict)
    alpha: float = 0.05


class EscalationSpec(BaseModel):
    """An escalating judge as the config asks for it (`--escalate-to STRONG --card FILE`,
    ragmeter.cli.run_escalation); recorded as EscalationRef, the strong judge's spec as an LLMRef."""

    model_config = ConfigDict(extra="forbid")

    strong: str
    metric: str
    threshold: float | None
    guarantee: str
    calibration: dict[str, Any]


class DatasetRef(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    source: str  # what resolves it again: a registered name, a path, or store:COLLECTION
    hash: str
    n_queries: int
    limit: int | None = None


class ReplayRef(BaseModel):
    """A diagnose replay's origin (ragmeter.diagnose.replay): the run it replays and the intervention."""

    model_config = ConfigDict(extra="forbid")

    parent: str
    intervention: str


class PlanRef(BaseModel):
    """The metric plan of a run (ragmeter.score.plan.MetricPlan, its nugget set aside: RunRecord.nuggets),
    derived once when the run is prepared; the loop, resume and Ray workers read it from here."""

    model_config = ConfigDict(extra="forbid")

    retrieval: list[str]
    lexical: list[str] | None  # None: every lexical metric that applies
    judges: list[str]
    semantic: bool
    custom: list[str]
    total_score: bool = False
    diagnosis: bool = True


class RunRecord(JsonView, BaseModel):
    """Persisted with every run (RunRow.record, EvalRunResult.record)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = RECORD_SCHEMA_VERSION
    system: SystemRef
    dataset: DatasetRef
    metrics: list[str] | None = None
    cutoffs: list[int]
    relevance_level: int = 1
    seed: int
    evaluate_generation: bool = True
    context_k: int = CONTEXT_K
    judge: LLMRef | None = None
    generator: LLMRef | None = None
    concurrency: int
    # Queries per `retrieve_batch` call (EvalConfig.batch_size); runs recorded before it batched by 64.
    batch_size: int = 64
    cache: bool = False
    executor: str = "local"
    # Judge repeats (`run --repeat N`): each judged query is judged `repeat` times, repeat r at
    # `repeat_temperature` with seed `seed + r` (ragmeter.run.repeats); 1 = one judgment, as before.
    repeat: int = 1
    repeat_temperature: float | None = None
    # A diagnose replay names its parent run and intervention (None for every other run); resume rebuilds
    # the replay from them (`ragmeter run --resume`).
    replay: ReplayRef | None = None
    # The nugget set of the nugget_* metrics: {"path", "hash", "prompt"} (ragmeter.score.nugget_plan).
    nuggets: dict[str, str] | None = None
    # A cheap judge that escalates to a strong one under its calibrated confidence threshold; None: no cascade.
    escalation: EscalationRef | None = None
    # Claims per factuality verification call (EvalConfig.judge_options.factuality_batch); None: the default.
    factuality_batch: int | None = None
    # The metric plan (schema 2); None in a record stored before, whose plan is derived from its fields.
    plan: PlanRef | None = None


# ------------------------------------------------------------------------------------- fingerprints


def object_fingerprint(obj: Any) -> tuple[str, str]:
    """(module.qualname, fingerprint) of an in-process system: its type (or the function itself) plus its
    `fingerprint()` method / `fingerprint` attribute, else its `options` dict, when it has one."""
    target = (
        obj if callable(obj) and not hasattr(obj, "retrieve") and hasattr(obj, "__qualname__") else type(obj)
    )
    qualname = f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', type(obj).__name__)}"
    extra: Any = None
    fp = getattr(obj, "fingerprint", None)
    if fp is not None:
        extra = fp() if callable(fp) else fp
    elif isinstance(getattr(obj, "options", None), Mapping):
        extra = dict(obj.options)
    try:
        text = canonical_json({"type": qualname, "fingerprint": extra})
    except TypeError:
        text = canonical_json({"type": qualname, "fingerprint": repr(extra)})
    return qualname, sha256(text)


def _scrub_options(options: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """Options as JSON data with secret-looking values removed; the reason when they cannot rebuild."""
    out: dict[str, Any] = {}
    why: str | None = None
    for key, value in options.items():
        if key == "headers" and isinstance(value, Mapping):
            value = {h: (REDACTED if _SECRET_HEADER.search(h) else v) for h, v in value.items()}
            if REDACTED in value.values():
                why = "its HTTP headers held credentials, which are not stored"
        elif is_secret_option(key) and isinstance(value, str):
            value, why = REDACTED, f"option {key!r} looked like a secret and is not stored"
        elif isinstance(value, set | frozenset):
            value = sorted(value)
        try:
            json.dumps(value)
        except TypeError:
            why = why or f"option {key!r} is a Python object ({type(value).__name__}), not data"
            value = repr(value)
        out[key] = value
    return out, why


def _kind_of(spec: str) -> SystemKind:
    from pathlib import Path

    if spec == "builtin":
        return "builtin"
    if spec.startswith(("http://", "https://")):
        return "http"
    if Path(spec).expanduser().is_file():
        return "run_file"
    return "reference"


def reference_ref(spec: str, *, mode: str, namespace: str | None, options: Mapping[str, Any]) -> SystemRef:
    kind = _kind_of(spec)
    clean, why = _scrub_options(options)
    shown = redact_spec(spec) or spec
    if kind == "http" and shown != spec:
        why = why or "its URL held credentials, which are not stored"
    body = {"kind": kind, "spec": shown, "mode": mode, "namespace": namespace, "options": clean}
    return SystemRef(
        kind=kind,
        spec=shown,
        mode=mode,
        namespace=namespace,
        options=clean,
        fingerprint=sha256(canonical_json(body)),
        rebuildable=why is None,
        why_not=why,
    )


def object_ref(obj: Any, *, mode: str, namespace: str | None) -> SystemRef:
    qualname, fingerprint = object_fingerprint(obj)
    return SystemRef(
        kind="object",
        spec=qualname,
        mode=mode,
        namespace=namespace,
        fingerprint=fingerprint,
        rebuildable=False,
        why_not=f"it evaluated an in-process Python object ({qualname})",
    )


def llm_ref(
    spec: str | None,
    client: Any = None,
    public: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
) -> LLMRef | None:
    if spec is None and client is None:
        return None
    if public is None and client is not None:
        public = getattr(client, "spec_public", None)
    shown = redact_spec(spec) if spec is not None else str((public or {}).get("model", "client"))
    return LLMRef(
        spec=shown or "",
        public=dict(public) if isinstance(public, Mapping) else None,
        credentials_removed=REDACTED in (shown or ""),
        options=dict(options or {}),
    )


def typed_block(name: str, value: Any) -> Any:
    """A run's typed block (usage, record, sequential) assigned as its JSON, as its model (as when read)."""
    blocks: dict[str, type[BaseModel]] = {
        "usage": RunUsage,
        "record": RunRecord,
        "sequential": SequentialOutcome,
    }
    block = blocks.get(name)
    return block.model_validate(value) if block is not None and isinstance(value, Mapping) else value


def parse_executor(spec: str | None) -> tuple[str, str | None]:
    """'local' | 'ray' | 'ray:ADDRESS' -> (kind, address)."""
    text = (spec or "local").strip()
    kind, _, address = text.partition(":")
    if kind not in ("local", "ray"):
        raise InputError(f"unknown executor {text!r}: use local, ray or ray:ADDRESS", source="--executor")
    if kind == "local" and address:
        raise InputError("the local executor takes no address", source="--executor")
    return kind, (address or None)
