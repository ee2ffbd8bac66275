"""A judge metric's registry version is the version its values are stored with: its prompt's
`name/vN+digest` (derived from the prompt, not copied), so the registry and the stored values never disagree."""

from __future__ import annotations

import json
import re

import ragmeter.metrics as rm
from ragmeter.judges import ALL_JUDGES
from ragmeter.judges.judge import Judge, JudgeInput
from ragmeter.llm import from_spec
from ragmeter.llm.scripted import ScriptedRequest, Step

PROMPT_VERSION = re.compile(r"^[a-z_]+/v\d+\+[0-9a-f]{8}$")


def _judge_specs() -> dict[str, Judge]:
    """Every judge metric in the registry that asks a model (input "judge"), with the Judge that grades it.
    The nugget metrics are apart: their values' version adds the nugget set's hash (tests/nuggets)."""
    asking = [
        s.name
        for s in rm.specs()
        if s.family == "judge" and "judge" in s.inputs and "nuggets" not in s.inputs
    ]
    missing = [name for name in asking if name not in ALL_JUDGES]
    assert not missing, f"registry metrics that ask a judge the judges package does not have: {missing}"
    return {name: ALL_JUDGES[name] for name in asking}


def test_every_judge_in_the_package_is_a_registry_metric() -> None:
    judges = _judge_specs()
    assert set(judges) == set(ALL_JUDGES)  # the 8 default judges and the 11 rc_* ones
    assert all(rm.get(name).family == "judge" for name in judges)


def test_spec_version_is_its_prompts_version() -> None:
    for name, judge in _judge_specs().items():
        version = rm.get(name).version
        assert PROMPT_VERSION.match(version), (name, version)
        assert version == judge.version == judge.prompt.version, name


def _reply(req: ScriptedRequest) -> Step:
    return Step(
        text=json.dumps(
            {"reasoning": "ok", "score": 7, "grade": 7, "claims": ["Paris is in France."], "verdicts": []}
        )
    )


async def test_stored_values_carry_the_spec_version(scripted) -> None:  # type: ignore[no-untyped-def]
    srv = await scripted(_reply)
    llm = from_spec(f"openai-compatible:m@{srv.url}")
    inp = JudgeInput(
        question="Where is Paris?",
        answer="Paris is in France [1].",
        contexts=("Paris is the capital of France.",),
        ground_truth="In France.",
        relevant_rank=1,
        query_id="q1",
    )
    judges = _judge_specs()
    assert len(judges) >= 19
    for name, judge in judges.items():
        result = await judge.run(inp, llm)
        assert result.name == name
        # what a run stores for this metric, valid or not, names the registry's version
        assert result.version == rm.get(name).version, (name, result.version, result.error)
