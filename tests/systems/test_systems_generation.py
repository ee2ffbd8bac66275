"""Generation through the LLM client, over real HTTP to a scripted OpenAI-compatible server."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmeter.models import Document
from ragmeter.systems import Pipeline, Retrieved, aanswer, aretrieve
from ragmeter.systems.pipeline import build_messages, cited_numbers

pytest.importorskip("aiohttp")
pytest.importorskip("openai")

from ragmeter.llm.scripted import ScriptedRequest, ScriptedServer, Step
from ragmeter.llm.spec import from_spec


def test_prompt_numbers_the_passages() -> None:
    messages = build_messages("Who?", [Retrieved("a", 1.0, "first"), Retrieved("b", 0.5, "second")])
    user = messages[-1]["content"]
    assert "[1] first" in user and "[2] second" in user and user.index("[1]") < user.index("[2]")
    assert "Question: Who?" in user and "[1]" in messages[0]["content"]


def test_cited_numbers() -> None:
    assert cited_numbers("Paris [2]. Also [1][2] and [3, 4].") == [2, 1, 3, 4]
    assert cited_numbers("no citations") == []


async def test_pipeline_answers_through_the_llm_client(tmp_path: Path) -> None:
    docs = [
        Document(doc_id="paris", text="Paris is the capital of France."),
        Document(doc_id="rome", text="Rome is the capital of Italy."),
    ]

    def respond(req: ScriptedRequest) -> Step:
        # Answer with the number of the passage that mentions France, as a model would.
        for line in req.user.splitlines():
            if "France" in line and line.startswith("["):
                return Step(text=f"Paris is the capital {line[: line.index(']') + 1]}.")
        return Step(text="I do not know.")

    async with ScriptedServer(respond) as server:
        client = from_spec(f"openai-compatible:scripted@{server.url}")
        try:
            p = Pipeline(docs, mode="fulltext", persist=False, llm=client)
            contexts = await aretrieve(p, "capital of France", 2)
            assert contexts[0].doc_id == "paris"
            answer = await aanswer(p, "What is the capital of France?", contexts)
            assert answer == "Paris is the capital [1]."
            assert cited_numbers(answer) == [1]
            reversed_answer = await aanswer(p, "What is the capital of France?", contexts[::-1])
            assert reversed_answer == "Paris is the capital [2]."
            assert len(server.requests) == 2
            assert "What is the capital of France?" in server.requests[0].user
        finally:
            await client.aclose()
    no_llm = Pipeline(docs, mode="fulltext", persist=False)
    assert await aanswer(no_llm, "q", contexts) is None
    disabled = Pipeline(docs, mode="fulltext", persist=False, llm=object(), disable={"generation"})
    assert await aanswer(disabled, "q", contexts) is None
