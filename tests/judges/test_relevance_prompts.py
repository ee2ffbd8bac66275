"""`judge-qrels --prompt umbrela` sends UMBRELA's published prompt with its settings
(frequency penalty 0.5 through the client and its cache key, 100 tokens, no JSON mode, unusable replies scored
0); our prompt no longer re-asks after a reply that ran to its token limit; `judges validate` accepts the
relevance judge behind `judge-qrels`. All over real HTTP against the scripted server."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragmeter.llm import from_spec
from ragmeter.llm.scripted import ScriptedRequest, Step
from ragmeter.models import Document, EvalDataset, EvalQuery
from ragmeter.validity.qrels_judging import label_pairs

QUERIES = {"q1": "how long is the life cycle of a flea"}
DOCS = {"good": "The flea life cycle lasts 20 days to a year.", "odd": "Fleas.", "empty": "  "}


def umbrela_replies(req: ScriptedRequest) -> Step:
    if "20 days" in req.user:
        return Step(text="##final score: 3")
    return Step(text="I cannot tell.")  # no grade at all: UMBRELA scores it 0


async def test_umbrela_prompt_and_settings_are_the_published_ones(
    scripted: Callable[..., Any], tmp_path: Path
) -> None:
    server = await scripted(umbrela_replies)
    cache = str(tmp_path / "cache.sqlite")
    async with from_spec(f"openai-compatible:m@{server.url}", cache=cache) as llm:
        labels = await label_pairs(
            [("q1", "good"), ("q1", "odd")], queries=QUERIES, docs=DOCS, llm=llm, prompt="umbrela"
        )
    assert [(lab.doc_id, lab.grade) for lab in labels] == [("good", 3), ("odd", 0)]
    assert labels[1].flags == ("unusable reply scored 0 (UMBRELA's rule)",)
    body = next(r.body for r in server.requests if "20 days" in r.user)
    assert body["frequency_penalty"] == 0.5 and body["max_tokens"] == 100 and body["temperature"] == 0
    assert "response_format" not in body
    assert body["messages"][0] == {"role": "system", "content": "You are a helpful assistant."}
    user = body["messages"][1]["content"]
    assert user.endswith("##final score: score without providing any reasoning.")
    assert f"Passage: {DOCS['good']}\n" in user and "JSON" not in user
    assert len(server.requests) == 2  # no re-ask of the unusable reply

    # The frequency penalty is part of the cache key: the same request again is a hit, the same messages
    # without the penalty are not.
    async with from_spec(f"openai-compatible:m@{server.url}", cache=cache) as llm:
        await llm.complete(body["messages"], json=False, max_tokens=100, frequency_penalty=0.5)
        assert len(server.requests) == 2
        await llm.complete(body["messages"], json=False, max_tokens=100)
        assert len(server.requests) == 3 and "frequency_penalty" not in server.requests[2].body


async def test_a_reply_that_hits_the_token_limit_is_not_asked_again(scripted: Callable[..., Any]) -> None:
    loop = "the passage the passage the passage " * 50
    server = await scripted(lambda req: Step(text=loop, completion_tokens=400, finish_reason="length"))
    async with from_spec(f"openai-compatible:m@{server.url}") as llm:
        (label,) = await label_pairs([("q1", "good")], queries=QUERIES, docs=DOCS, llm=llm)
    assert label.grade is None and "not re-asked" in label.reason and "400-token limit" in label.reason
    assert len(server.requests) == 1  # main sent it twice: 800 tokens for nothing


async def test_judges_validate_accepts_the_relevance_judge(scripted: Callable[..., Any]) -> None:
    from ragmeter.validity.judge_validation import validate_judge

    def grade(req: ScriptedRequest) -> Step:
        g = 3 if "20 days" in req.user else 0
        return Step(text=json.dumps({"reasoning": "read it", "grade": g}))

    server = await scripted(grade)
    data = EvalDataset(
        name="rel",
        queries=[
            EvalQuery(
                query_id=f"p{i}",
                question=QUERIES["q1"],
                human_labels={"trec_relevance": label},
                metadata={"contexts": [DOCS[doc]]},
            )
            for i, (doc, label) in enumerate((("good", 3), ("odd", 0), ("good", 2), ("odd", 1)))
        ],
        corpus=[Document(doc_id=d, text=t) for d, t in DOCS.items() if t.strip()],
    )
    async with from_spec(f"openai-compatible:m@{server.url}") as llm:
        report = (
            await validate_judge(data, "trec_relevance", llm=llm, scale=(0, 3), n_resamples=50)
        ).to_dict()
    assert report["n"] == 4 and report["n_failed"] == 0
    assert [item["judge"] for item in report["items"]] == [3, 0, 3, 0]  # grades 0-3 kept on the 0-3 scale
    assert report["accuracy"] == 0.5
