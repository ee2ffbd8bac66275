"""`ragmeter run --resume REPLAY`: a diagnose replay interrupted midway is completed like any run. Its record
names its parent and intervention (`RunRecord.replay`); the replay system is rebuilt from the parent's stored
outputs and the parent's system, then the run loop's resume evaluates the queries not stored yet."""

from __future__ import annotations

from typing import Any

from ragmeter.errors import InputError
from ragmeter.models import EvalRunResult


def replay_parent(run: EvalRunResult) -> tuple[str, str] | None:
    """(parent run id, intervention) of a replay; None for any other run."""
    replay = run.record.replay if run.record else None
    return (replay.parent, replay.intervention) if replay is not None and replay.parent else None


async def aresume_replay(
    run_id: str,
    *,
    store: Any,
    system: Any = None,
    llm: Any = None,
    generator: Any = None,
    dataset: Any = None,
    progress: bool = False,
) -> EvalRunResult:
    """Complete the stored replay `run_id`; `system=` passes the parent's system in-process (else it is
    rebuilt from the parent's record)."""
    from ragmeter.datasets.resolve import resolve_dataset
    from ragmeter.diagnose.attribution import _without_rerank, copied_metrics, copy_parent_values
    from ragmeter.diagnose.replay import NO_RERANK, replay_system
    from ragmeter.llm.meter import MeteredLLM
    from ragmeter.records import RunRecord
    from ragmeter.run.api import arun_evaluation
    from ragmeter.run.rebuild import SystemAdapter, build_clients, build_system

    replay = store.get_run(run_id)
    origin = replay_parent(replay)
    if origin is None:
        raise InputError(f"run {run_id} is not a diagnose replay", source="--resume")
    parent_id, intervention = origin
    parent_run = store.get_run(parent_id)
    parent_record = RunRecord.model_validate(parent_run.record)
    record = RunRecord.model_validate(replay.record)
    if system is None and (parent_record.system.kind == "object" or not parent_record.system.rebuildable):
        raise InputError(
            f"replay {run_id}'s parent run {parent_id} evaluated a system its record cannot rebuild "
            f"({parent_record.system.why_not}); resume it through the Python API: "
            "aresume_replay(RUN, store=..., system=...)",
            source="--resume",
        )
    if dataset is None:
        dataset = resolve_dataset(parent_run.config.dataset, seed=parent_run.config.seed, store=store)
    judge, gen, owned = build_clients(record, judge=llm, generator=generator, want_generator=system is None)
    try:
        metered = MeteredLLM(gen, "generator") if gen is not None else None
        parent = (
            SystemAdapter(system)
            if system is not None
            else build_system(parent_record.system, dataset, metered)
        )
        if intervention == NO_RERANK:
            replayed: Any = _without_rerank(parent.system, parent_id)
        else:
            replayed = replay_system(intervention, parent, parent_run, dataset, parent_record)
        result = await arun_evaluation(
            dataset, replayed, None, store=store, resume=run_id, llm=judge, progress=progress
        )
    finally:
        for client in owned:
            await client.aclose()
    if intervention == NO_RERANK:  # it re-ran retrieval: nothing was copied from the parent
        return result
    return copy_parent_values(store, parent_run, result, copied_metrics(parent_run))
