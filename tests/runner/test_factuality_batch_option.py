"""The factuality judge's claims per verification call is a judge option of the config
(`judge_options.factuality_batch`), recorded with the run; RAGMETER_FACTUALITY_BATCH still overrides it."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from runner_fakes import KeywordSystem, make_dataset

from ragmeter.errors import InputError
from ragmeter.judges.factuality import BATCH_ENV
from ragmeter.judges.prompts import PROMPTS_IN_LAYOUT, task_of
from ragmeter.llm.scripted import ScriptedRequest, Step
from ragmeter.models import EvalConfig
from ragmeter.run import arun_evaluation
from ragmeter.run.config import load_config

N_CLAIMS = 7
OPENS = {name: task_of(p.user).split("\n", 1)[0] for name, p in PROMPTS_IN_LAYOUT.items()}


def _respond(req: ScriptedRequest) -> Step:
    task = task_of(req.user)
    if task.startswith(OPENS["factuality_verify"]):
        listed = task.split("Claims:\n", 1)[1].split("\n\n", 1)[0].splitlines()
        verdicts = [
            {"claim": i, "reasoning": "ok", "verdict": "SUPPORTED"} for i in range(1, len(listed) + 1)
        ]
        return Step(text=json.dumps({"verdicts": verdicts}))
    claims = [f"Claim number {chr(65 + i)} holds." for i in range(N_CLAIMS)]
    return Step(text=json.dumps({"claims": claims}))


def _verify_calls(requests: list[Any]) -> int:
    return sum(task_of(r.user).startswith(OPENS["factuality_verify"]) for r in requests)


@pytest.mark.parametrize(("option", "env", "per_call"), [(None, None, 5), (2, None, 2), (2, "3", 3)])
async def test_the_configs_factuality_batch_sets_the_claims_per_call(
    scripted: Any, monkeypatch: pytest.MonkeyPatch, option: int | None, env: str | None, per_call: int
) -> None:
    if env is not None:
        monkeypatch.setenv(BATCH_ENV, env)
    else:
        monkeypatch.delenv(BATCH_ENV, raising=False)
    srv = await scripted(_respond)
    ds = make_dataset(3)
    config = EvalConfig(
        dataset="capitals",
        retrieval_top_k=[1],
        metrics=["factuality"],
        use_llm_judge=True,
        judge_model=f"openai-compatible:m@{srv.url}",
        judge_options={"factuality_batch": option},
        semantic=False,
    )
    run = await arun_evaluation(ds, KeywordSystem(ds), config, store=False, progress=False)
    assert all(r.metrics["factuality"].value == 1.0 for r in run.per_query)
    assert _verify_calls(srv.requests) == 3 * math.ceil(N_CLAIMS / per_call)
    assert run.record is not None and run.record.factuality_batch == option
    assert (
        run.record.judge is not None and "factuality_batch" not in run.record.judge.options
    )  # no client option


def test_a_bad_factuality_batch_names_its_field() -> None:
    with pytest.raises(InputError, match=r"judge_options\.factuality_batch"):
        load_config(None, {"judge_options": {"factuality_batch": 0}})
