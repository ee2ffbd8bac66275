"""`run --repeat N` on Ray workers: they rebuild the judge and the repeat settings from the run record, so a
repeated run gives on Ray what it gives locally, each repeat included."""

from __future__ import annotations

from typing import Any

from ray_systems import make_dataset

from ragmeter.models import EvalConfig
from ragmeter.run.api import arun_evaluation


async def test_a_repeated_judged_run_is_identical_on_ray(ray_local: Any, scripted: Any) -> None:
    from ragmeter.llm.scripted import Step
    from ragmeter.run.ray_executor import RayExecutor

    def responder(req: Any) -> Step:  # the grade depends on the repeat (its seed) and on the query
        grade = 2 + (int(req.body["seed"]) - 42) * 3 + (1 if "Paris" in req.user else 0)
        return Step(text=f'{{"reasoning": "checked", "grade": {grade}}}')

    server = await scripted(responder)
    ds = make_dataset()
    judge = {"use_llm_judge": True, "judge_model": f"openai-compatible:judge@{server.url}"}
    repeats = {"repeat": 3, "repeat_temperature": 0.5, "metrics": ["retrieval_grade", "mrr"]}
    config = EvalConfig.model_validate(
        {"dataset": "capitals", "retrieval_top_k": [1, 5], "evaluate_generation": False, **judge, **repeats}
    )
    system, ray = "ray_systems:keyword_retrieve", RayExecutor(ds, workers=2, concurrency=3)
    local = await arun_evaluation(ds, system, config, store=False, progress=False)
    n_local = len(server.requests)
    remote = await arun_evaluation(ds, system, config, store=False, progress=False, executor=ray)
    assert n_local == len(server.requests) - n_local == 3 * len(ds.queries)
    assert {r.body["temperature"] for r in server.requests[n_local:]} == {0.5}
    by_id = {r.query_id: r for r in local.per_query}
    for r in remote.per_query:
        assert [v.value for v in r.repeats["retrieval_grade"]] == [
            v.value for v in by_id[r.query_id].repeats["retrieval_grade"]
        ]
        assert r.metrics["retrieval_grade"].value == by_id[r.query_id].metrics["retrieval_grade"].value
    assert remote.stability == local.stability and remote.stability["retrieval_grade"].repeats == 3
