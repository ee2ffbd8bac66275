"""Checking a whole invocation before anything is stored or any system or model is called.

`validate` resolves the dataset, checks its structure, the metric names (registry), cut-offs, the judge and
generator specs, the system reference and, on resume, that the recorded system can be rebuilt; it returns
the `Prepared` run (config, dataset, sampled queries, record, metric plan). An invalid invocation raises
one InputError naming the flag, file or field, and leaves no run row.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragmeter.datasets.resolve import dataset_hash as dataset_hash  # its home; this name kept
from ragmeter.errors import InputError
from ragmeter.models import EvalConfig, EvalDataset, EvalQuery, EvalRunResult
from ragmeter.records import DatasetRef, EscalationRef, RunRecord, llm_ref
from ragmeter.run.refs import system_ref
from ragmeter.run.sequential import sequential_spec
from ragmeter.score.classes import parse_rule
from ragmeter.score.plan import MetricPlan, check_computable, from_ref, plan_for, to_ref

if TYPE_CHECKING:
    from ragmeter.store import Store


@dataclass
class Prepared:
    config: EvalConfig  # as stored (EvalConfig itself keeps LLM specs without credentials)
    dataset: EvalDataset
    queries: list[EvalQuery]
    dataset_hash: str
    record: RunRecord
    plan: MetricPlan
    system: Any = None  # an in-process system (else the record's is built by the executor)
    resumed: EvalRunResult | None = None  # the stored header of the run being resumed


def sample_queries(dataset: EvalDataset, limit: int | None, seed: int) -> list[EvalQuery]:
    """The queries of a run: all of them, or `limit` drawn with `seed` (kept in dataset order)."""
    queries = list(dataset.queries)
    if limit is None or limit >= len(queries):
        return queries
    if limit < 1:
        raise InputError(f"limit must be at least 1, not {limit}", source="--limit")
    keep = set(random.Random(seed).sample(range(len(queries)), limit))
    return [q for i, q in enumerate(queries) if i in keep]


def validate(
    dataset: EvalDataset | str | None,
    system: Any,
    config: EvalConfig | None = None,
    *,
    store: Store | None = None,
    resume: str | None = None,
    llm: Any = None,
    generator_llm: Any = None,
    system_options: Mapping[str, Any] | None = None,
    fail_under: Sequence[str] = (),
) -> Prepared:
    """The run that `arun_evaluation` would make, checked; raises InputError on the first problem."""
    import ragmeter.metrics as rm

    stored: EvalRunResult | None = None
    if resume:
        if store is None:
            raise InputError("resuming a run needs the store", source="--resume")
        stored = store.get_run(resume, with_queries=False)
        config = stored.config
        if system is None:  # an in-process object cannot be rebuilt here: say so before anything else
            from ragmeter.run.rebuild import build_system

            recorded = _stored_record(stored).system
            if recorded.kind == "object":
                build_system(recorded, EvalDataset(name=config.dataset, queries=[]))
    config = config or EvalConfig()
    if isinstance(dataset, EvalDataset):
        data = dataset
    else:
        from ragmeter.datasets.resolve import resolve_dataset

        data = resolve_dataset(dataset or config.dataset, seed=config.seed, store=store)
        if dataset and dataset != config.dataset:
            config = config.model_copy(update={"dataset": dataset})
    if stored is None and isinstance(system, str) and system != config.system:
        config = config.model_copy(update={"system": system})
    plan = plan_for(config)
    if stored is None:  # a name the plan would drop: refused (a resumed run was checked when it began)
        check_computable(
            config.metrics, evaluate_generation=config.evaluate_generation, judged=config.use_llm_judge
        )
    from ragmeter.score.nugget_plan import attach

    plan, nuggets = attach(plan, config.nuggets, config.retrieval_top_k, dataset=config.dataset)
    if nuggets is not None:  # the set's path, hash and prompt style go with the run (a resume checks them)
        config = config.model_copy(update={"nuggets": nuggets.extra()})
    rm.check(fail_under, source="--fail-under")
    if config.repeat > 1 and not plan.judges:
        raise InputError(
            f"--repeat {config.repeat} judges each query {config.repeat} times: it needs a judge (--judge) "
            "and at least one judge metric",
            source="--repeat",
        )
    if config.context_k < 1:  # a config changed by model_copy was not validated
        raise InputError(f"context_k must be at least 1, not {config.context_k}", source="context_k")
    parse_rule(config.correct_if)  # a bad rule is refused before anything is stored
    sequential_spec(config)  # --sequential: its gates and alpha
    publics = _check_llms(config, llm, generator_llm)
    queries = sample_queries(data, config.limit, config.seed)
    if not queries:
        raise InputError("the dataset has no queries", source=config.dataset)
    ds_hash = dataset_hash(data)
    if stored is not None:
        record = _resume_record(stored, system, ds_hash)
        if record.plan is not None:  # the plan it was started with
            plan = from_ref(record.plan, plan.nuggets)
    else:
        # build_system options: RunOptions.system_options, else the config's system_options (YAML, --set)
        options = dict(system_options or config.system_options)
        record = _new_record(config, data, system, options, ds_hash, len(queries), llm, publics)
        record.plan = to_ref(plan)
    if record.system.kind == "object" and (system is None or isinstance(system, str)):
        from ragmeter.run.rebuild import build_system

        build_system(record.system, data)  # raises: an object cannot be rebuilt here
    if record.system.kind != "object":
        from ragmeter.run.rebuild import check_system

        check_system(record.system, data, source="--resume" if stored is not None else "--system")
    in_process = system if system is not None and not isinstance(system, str) else None
    _check_executor(config.executor, in_process)
    return Prepared(config, data, queries, ds_hash, record, plan, in_process, stored)


def _check_executor(spec: str, in_process: Any) -> None:
    """A Ray run needs the extra, and a system that workers can rebuild from the record."""
    if not spec.startswith("ray"):
        return
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        raise InputError(
            "the Ray executor needs the 'ray' extra: pip install 'ragmeter[ray]'", source="--executor"
        )
    if in_process is not None:
        raise InputError(
            "an in-process system cannot be rebuilt on Ray workers: give it as --system module:attr",
            source="--executor",
        )


def _check_llms(config: EvalConfig, llm: Any, generator_llm: Any) -> dict[str, dict[str, Any] | None]:
    """Parse the judge and generator specs; their public descriptions (None where a client was given)."""
    from ragmeter.run.rebuild import check_llm_spec

    out: dict[str, dict[str, Any] | None] = {"judge": None, "generator": None}
    if config.use_llm_judge and llm is None:
        if not config.judge_model:
            raise InputError(
                "LLM judging is on but no judge model is set: give --judge MODEL", source="--judge"
            )
        out["judge"] = check_llm_spec(config.judge_model, source="--judge")
    if config.evaluate_generation and config.generator_model and generator_llm is None:
        out["generator"] = check_llm_spec(config.generator_model, source="--generator")
    return out


def _new_record(
    config: EvalConfig,
    data: EvalDataset,
    system: Any,
    options: Mapping[str, Any],
    ds_hash: str,
    n_queries: int,
    llm: Any,
    publics: Mapping[str, Mapping[str, Any] | None] | None = None,
) -> RunRecord:
    import ragmeter.metrics as rm

    judged = config.use_llm_judge
    return RunRecord(
        system=system_ref(
            system, spec=config.system, mode=config.mode, namespace=config.namespace, options=options
        ),
        dataset=DatasetRef(
            name=data.name, source=config.dataset, hash=ds_hash, n_queries=n_queries, limit=config.limit
        ),
        metrics=rm.check(config.metrics) if config.metrics else None,
        cutoffs=sorted(set(config.retrieval_top_k or [10])),
        relevance_level=config.relevance_level,
        seed=config.seed,
        evaluate_generation=config.evaluate_generation,
        context_k=config.context_k,
        judge=llm_ref(config.judge_model, llm, (publics or {}).get("judge"), config.judge_options.given())
        if judged
        else None,
        generator=llm_ref(config.generator_model, None, (publics or {}).get("generator"))
        if config.evaluate_generation
        else None,
        concurrency=config.concurrency,
        batch_size=config.batch_size,
        cache=config.cache,
        executor=config.executor,
        **_repeat_fields(config, judged),
        replay=config.replay,
        factuality_batch=config.judge_options.factuality_batch if judged else None,
        nuggets=config.nuggets if judged else None,
        escalation=_escalation(config) if judged else None,
    )


def _escalation(config: EvalConfig) -> EscalationRef | None:
    """config.escalation as a record: the strong judge's spec as an LLMRef, with the judge's options."""
    asked = config.escalation
    if asked is None:
        return None
    strong = llm_ref(asked.strong, None, None, config.judge_options.given())
    assert strong is not None
    return EscalationRef(**{**asked.model_dump(), "strong": strong})


def _repeat_fields(config: EvalConfig, judged: bool) -> dict[str, Any]:
    """The record's repeat settings: only a judged run with more than one repeat records them."""
    if config.repeat <= 1 or not judged:
        return {}
    from ragmeter.run.repeats import DEFAULT_TEMPERATURE

    temperature = config.repeat_temperature
    return {
        "repeat": config.repeat,
        "repeat_temperature": DEFAULT_TEMPERATURE if temperature is None else temperature,
    }


def legacy_record(stored: EvalRunResult) -> RunRecord:
    """The record of a run stored before records existed: its config, and the experiment's pipeline
    options that `ragmeter experiment` kept in the config's system_options."""
    c = stored.config
    options = c.system_options if c.system == "builtin" else None
    data = EvalDataset(name=c.dataset, queries=[])
    return _new_record(c, data, None, dict(options or {}), stored.dataset_hash or "", 0, None)


def _stored_record(stored: EvalRunResult) -> RunRecord:
    return stored.record if stored.record else legacy_record(stored)


def _resume_record(stored: EvalRunResult, system: Any, ds_hash: str) -> RunRecord:
    from ragmeter.records import object_fingerprint

    run_id = stored.run_id
    record = _stored_record(stored)
    if stored.dataset_hash and stored.dataset_hash != ds_hash:
        raise InputError(
            f"the dataset changed since run {run_id} started ({stored.dataset_hash[:19]}... "
            f"now {ds_hash[:19]}...): resuming would mix two datasets",
            source="--resume",
        )
    for role, llm in (("judge", record.judge), ("generator", record.generator)):
        if llm is not None and llm.credentials_removed:
            raise InputError(
                f"the {role} URL of run {run_id} held credentials, which are not stored: it cannot be resumed "
                "(give keys through the environment, not the URL)",
                source="--resume",
            )
    ref = record.system
    if isinstance(system, str) and system != ref.spec:
        raise InputError(f"run {run_id} evaluated {ref.spec!r}, not {system!r}", source="--resume")
    if system is not None and not isinstance(system, str):
        if ref.kind != "object":
            raise InputError(
                f"run {run_id} evaluated {ref.spec!r}, which resume rebuilds from its record: pass system=None",
                source="--resume",
            )
        qualname, fingerprint = object_fingerprint(system)
        if fingerprint != ref.fingerprint:
            raise InputError(
                f"the system passed ({qualname}) is not the one run {run_id} evaluated ({ref.spec}): "
                "its fingerprint differs",
                source="--resume",
            )
    return record
