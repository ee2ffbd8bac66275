"""`--executor ray`: the same numbers as the local executor, judged or not, and a worker killed mid-task."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from ray_systems import make_dataset

from ragmeter.models import EvalConfig, EvalRunResult
from ragmeter.run.api import arun_evaluation


def _values(result: EvalRunResult) -> dict[str, dict[str, float | None]]:
    """Per query, every metric but latencies (wall times differ between any two runs)."""
    return {
        r.query_id: {k: m.value for k, m in r.metrics.items() if not k.startswith("latency_")}
        for r in result.per_query
    }


def _means(result: EvalRunResult) -> dict[str, float | None]:
    return {k: s.mean for k, s in result.aggregate.items() if not k.startswith("latency_")}


async def test_retrieval_only_run_is_identical_on_ray(ray_local: Any, tmp_path: Path) -> None:
    from ragmeter.run.ray_executor import RayExecutor

    ds = make_dataset()
    config = EvalConfig(dataset="capitals", retrieval_top_k=[1, 3, 5], evaluate_generation=False)
    local = await arun_evaluation(ds, "ray_systems:keyword_retrieve", config, store=False, progress=False)
    remote = await arun_evaluation(
        ds,
        "ray_systems:keyword_retrieve",
        config,
        store=f"sqlite:///{tmp_path / 'r.db'}",
        progress=False,
        executor=RayExecutor(ds, workers=2, concurrency=2),
    )
    assert remote.n_queries == local.n_queries == 12 and remote.n_failed == 0
    assert _values(remote) == _values(local)
    assert _means(remote) == _means(local)
    assert [r.query_id for r in remote.per_query] == [r.query_id for r in local.per_query]


async def test_judged_run_is_identical_on_ray(ray_local: Any, scripted: Any) -> None:
    from ragmeter.llm.scripted import Step
    from ragmeter.run.ray_executor import RayExecutor

    def responder(req: object) -> Step:
        user = getattr(req, "user", "")
        grade = 9 if "Paris" in user or "Rome" in user else 4
        return Step(text=f'{{"reasoning": "checked", "grade": {grade}}}')

    server = await scripted(responder)
    ds = make_dataset()
    config = EvalConfig(
        dataset="capitals",
        retrieval_top_k=[1, 5],
        evaluate_generation=False,
        use_llm_judge=True,
        judge_model=f"openai-compatible:judge@{server.url}",
        metrics=["retrieval_grade", "ndcg@5", "mrr"],
    )
    local = await arun_evaluation(ds, "ray_systems:keyword_retrieve", config, store=False, progress=False)
    remote = await arun_evaluation(
        ds,
        "ray_systems:keyword_retrieve",
        config,
        store=False,
        progress=False,
        executor=RayExecutor(ds, workers=2, concurrency=3),
    )
    assert _values(remote) == _values(local)
    grades = [v["retrieval_grade"] for v in _values(remote).values()]
    assert sorted(set(grades)) == [4.0, 9.0]  # the judge really ran on the workers, over HTTP
    assert remote.aggregate["retrieval_grade"].mean == local.aggregate["retrieval_grade"].mean


async def test_a_worker_killed_mid_task_is_retried_and_each_query_counted_once(
    ray_local: Any, tmp_path: Path
) -> None:
    from ragmeter.run.ray_executor import RayExecutor
    from ragmeter.store import open_store

    marker = Path(os.environ["RAGMETER_TEST_MARKERS"]) / "died-once"
    marker.unlink(missing_ok=True)
    ds = make_dataset()
    config = EvalConfig(dataset="capitals", retrieval_top_k=[1, 5], evaluate_generation=False)
    local = await arun_evaluation(ds, "ray_systems:keyword_retrieve", config, store=False, progress=False)
    url = f"sqlite:///{tmp_path / 'k.db'}"
    remote = await arun_evaluation(
        ds,
        "ray_systems:die_once_retrieve",
        config,
        store=url,
        progress=False,
        executor=RayExecutor(ds, workers=2, concurrency=2),
    )
    assert marker.exists(), "the worker never died: the test did not test anything"
    assert remote.n_failed == 0 and remote.n_queries == 12
    assert _values(remote) == _values(local)
    with open_store(url) as store:
        stored = store.query_results(remote.run_id or "")
    assert sorted(r.query_id for r in stored) == sorted(q.query_id for q in ds.queries)  # each exactly once


def test_executor_spec_parsing() -> None:
    from ragmeter.distributed.cluster import parse_executor
    from ragmeter.errors import InputError

    assert parse_executor(None) == ("local", None)
    assert parse_executor("ray") == ("ray", None)
    assert parse_executor("ray:ray://head:10001") == ("ray", "ray://head:10001")
    for bad in ("dask", "local:x", "ray2"):
        with pytest.raises(InputError, match="executor"):
            parse_executor(bad)


async def test_ray_workers_judge_under_the_recorded_timeout_retries_and_budget(
    ray_local: Any, scripted: Any
) -> None:
    """A Ray worker gets only the record: the judge it rebuilds keeps the run's budget of 2 calls (one
    worker, so one client), its timeout and its retries; a default client would have graded all 12."""
    from ragmeter.llm.scripted import Step
    from ragmeter.run.ray_executor import RayExecutor

    calls: list[str] = []

    def responder(req: object) -> Step:
        calls.append(getattr(req, "user", ""))
        return Step(text='{"reasoning": "checked", "grade": 7}')

    server = await scripted(responder)
    ds = make_dataset()
    options = {"timeout": 9.0, "max_retries": 0, "budget": 2}
    config = EvalConfig(
        dataset="capitals",
        retrieval_top_k=[1, 5],
        evaluate_generation=False,
        use_llm_judge=True,
        judge_model=f"openai-compatible:judge@{server.url}",
        metrics=["retrieval_grade"],
        extra={"judge_options": options},
    )
    remote = await arun_evaluation(
        ds,
        "ray_systems:keyword_retrieve",
        config,
        store=False,
        progress=False,
        executor=RayExecutor(ds, workers=1, concurrency=1),
    )
    assert remote.record is not None and remote.record["judge"]["options"] == options
    grades = [r.metrics["retrieval_grade"] for r in remote.per_query]
    assert len(calls) == 2 and sum(g.value == 7 for g in grades) == 2
    assert sum(g.value is None and "budget" in (g.error or "") for g in grades) == 10
