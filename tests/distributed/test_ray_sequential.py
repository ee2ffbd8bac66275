"""`--sequential --executor ray`: the Ray executor starts no further query once the gates are decided."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ragmeter.models import EvalConfig
from ragmeter.run.api import arun_evaluation

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runner"))
from seq_fakes import make_seq_dataset

GATE = EvalConfig(  # hit@1 >= 0.7 at alpha 0.05 on the 200 synthetic queries of seq_fakes (true hit@1 0.9)
    dataset="synthetic-gate",
    retrieval_top_k=[1],
    metrics=["hit@1"],
    evaluate_generation=False,
    extra={"semantic": False, "sequential": {"gates": {"hit@1": 0.7}, "alpha": 0.05}},
)


async def _on_ray(system: str, tmp_path: Path) -> Any:
    """The gated run of `system` on 2 Ray actors x 2 queries in flight, stored in a SQLite file."""
    from ragmeter.run.ray_executor import RayExecutor

    ds = make_seq_dataset()
    executor = RayExecutor(ds, workers=2, concurrency=2)
    store = f"sqlite:///{tmp_path / 'seq.db'}"
    return await arun_evaluation(ds, system, GATE, store=store, progress=False, executor=executor)


async def test_a_sequential_run_on_ray_stops_early_with_the_local_decision(
    ray_local: Any, tmp_path: Path
) -> None:
    # one query at a time, the local run stops at the first prefix that decides (t*); with more in flight,
    # the finished prefix can jump past t* before the gate looks again
    in_order = GATE.model_copy(update={"concurrency": 1})
    system = "ray_systems:seq_good_retrieve"
    local = await arun_evaluation(make_seq_dataset(), system, in_order, store=False, progress=False)
    remote = await _on_ray(system, tmp_path)
    for run in (local, remote):
        assert run.sequential is not None and run.sequential["stopped_early"]
        assert run.sequential["decision"] == "pass"
    # the same seeded order decides both: Ray stops at t* or at a longer prefix (the bounds only narrow), and
    # also stores the queries that were in flight (or done beyond the prefix) when it stopped
    assert remote.sequential["queries_used"] >= local.sequential["queries_used"]
    assert (
        remote.sequential["queries_used"] <= remote.sequential["queries_evaluated"] == remote.n_queries < 200
    )


async def test_an_actor_slow_to_load_its_system_holds_no_query_so_the_gate_still_stops_early(
    ray_local: Any, tmp_path: Path
) -> None:
    # one of the two actors needs 4 s to load its system; the other would run all 200 queries meanwhile. An
    # early query held by the slow actor would stall the gate's prefix until the end: no early stop
    run = await _on_ray("slow_start_systems:retrieve", tmp_path)
    assert (
        run.sequential is not None
        and run.sequential["stopped_early"]
        and run.sequential["decision"] == "pass"
    )
    assert run.n_queries < 200
