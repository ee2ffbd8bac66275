"""Synthetic test-case generation against a real store (SQLite) and a scripted LLM over real HTTP."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmeter.datasets.generate import (
    DEFAULT_PROMPT,
    agenerate_test_cases,
    copies_chunk,
    extract_question,
    normalise_question,
    render_prompt,
    sample_chunks,
)
from ragmeter.errors import InputError
from ragmeter.models import Document
from scripted_servers import serve_in_thread

pytest.importorskip("sqlalchemy")
pytest.importorskip("aiohttp")

from ragmeter.llm.scripted import ScriptedRequest, ScriptedServer, Step
from ragmeter.store import ChunkRecord, open_store

CHUNKS = {
    "c-alpha": "The Alpha protocol was ratified in 1987 by the Geneva working group on packet routing.",
    "c-beta": "Beta blockers reduce heart rate by blocking adrenaline at beta-1 receptors in the heart.",
    "c-dup1": "Gamma rays have the shortest wavelength in the electromagnetic spectrum.",
    "c-dup2": "Gamma radiation is emitted by radioactive decay of atomic nuclei, among other sources.",
    "c-copy": "Saturn's rings are made mostly of water ice with a small amount of rocky debris.",
    "c-empty": "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.",
    "c-fail": "The Delta variant spread rapidly in the summer of 2021 across several continents.",
    "c-fence": "Photosynthesis in C4 plants fixes carbon dioxide into four-carbon compounds first.",
}


def responder(req: ScriptedRequest) -> Step:
    passage = re.search(r"<passage>\s*(.*?)\s*</passage>", req.user, re.S)
    text = passage.group(1) if passage else req.user
    if "Alpha protocol" in text:
        return Step(text=json.dumps({"question": "When was the Alpha packet routing protocol ratified?"}))
    if "Beta blockers" in text:
        return Step(text="Question: How do beta blockers lower heart rate?")
    if "Gamma" in text:
        return Step(text=json.dumps({"question": "What are gamma rays?"}))
    if "Saturn" in text:
        return Step(
            text=json.dumps({"question": "Saturn's rings are made mostly of water ice with rocky debris?"})
        )
    if "Lorem" in text:
        return Step(text=json.dumps({"question": "  "}))
    if "Delta" in text:
        return Step(status=400, text="bad request: model refuses")
    if "Photosynthesis" in text:
        return Step(
            text='```json\n{"question": "Which compounds do C4 plants make first when fixing CO2?"}\n```'
        )
    return Step(text=json.dumps({"question": f"A question about: {text[:40]}?"}))


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(url) as store:
        docs = []
        for i, (cid, text) in enumerate(CHUNKS.items()):
            doc = Document(doc_id=f"doc-{cid}", text=text)
            docs.append((doc, [ChunkRecord(chunk_id=cid, text=text, position=i)]))
        store.add_documents("kb", docs)
    return url


@pytest.fixture
def threaded_server() -> Iterator[ScriptedServer]:
    """The scripted server on its own event loop in a thread (the CLI runs its own loop)."""
    with serve_in_thread(responder) as server:
        yield server


def test_extract_question() -> None:
    assert extract_question('{"question": "What is X?"}') == "What is X?"
    assert extract_question('```json\n{"question": "Why Y?"}\n```') == "Why Y?"
    assert extract_question("Sure! Here it is:\nQuestion: Where is Z?\n") == "Where is Z?"
    assert extract_question("1. What about W?") == "What about W?"
    assert extract_question('"Quoted question?"') == "Quoted question?"
    assert extract_question('{"question": 3}') == ""
    assert extract_question("") == ""


def test_copies_chunk() -> None:
    chunk = CHUNKS["c-copy"]
    assert copies_chunk("Saturn's rings are made mostly of water ice with a small amount?", chunk)
    assert not copies_chunk("What are Saturn's rings made of?", chunk)  # short, shares a few words
    assert not copies_chunk("Which planet has rings made mostly of water ice and rocky debris?", chunk)


def test_sample_is_seeded_and_order_independent() -> None:
    docs = [Document(doc_id=f"c{i:02d}", text="t", metadata={"document": f"d{i % 3}"}) for i in range(50)]
    a = [d.doc_id for d in sample_chunks(docs, 5, seed=1)]
    b = [d.doc_id for d in sample_chunks(list(reversed(docs)), 5, seed=1)]
    c = [d.doc_id for d in sample_chunks(docs, 5, seed=2)]
    assert a == b and a != c and len(set(a)) == 5
    only = sample_chunks(docs, 100, seed=1, source_id="d1")
    assert {d.metadata["document"] for d in only} == {"d1"} and len(only) == 17


def test_render_prompt() -> None:
    assert "PASSAGE" in render_prompt(DEFAULT_PROMPT, "PASSAGE")
    assert '{"question": "..."}' in render_prompt(DEFAULT_PROMPT, "x")
    assert render_prompt("Q for {chunk_text} as {json}", "t") == "Q for t as {json}"
    with pytest.raises(InputError, match="chunk_text"):
        render_prompt("no field", "t")


async def test_generate_filters_and_counts(store_url: str) -> None:
    from ragmeter.llm import from_spec

    async with ScriptedServer(responder) as server:
        client = from_spec(f"openai-compatible:scripted@{server.url}", max_retries=0)
        try:
            with open_store(store_url) as store:
                report = await agenerate_test_cases(store, "kb", llm=client, sample_size=len(CHUNKS), seed=3)
                cases = store.test_cases("kb")
        finally:
            await client.aclose()
    assert report.sampled == len(CHUNKS)
    created = {c.chunk_id: c.question for c in report.created}
    assert created["c-alpha"] == "When was the Alpha packet routing protocol ratified?"
    assert created["c-beta"] == "How do beta blockers lower heart rate?"
    assert created["c-fence"] == "Which compounds do C4 plants make first when fixing CO2?"
    assert report.empty == ["c-empty"]
    assert report.copied == ["c-copy"]
    # Both gamma chunks got the same question: one is kept, the other is a duplicate.
    assert len(report.duplicate) == 1 and report.duplicate[0] in ("c-dup1", "c-dup2")
    assert sum(1 for c in created if c.startswith("c-dup")) == 1
    assert [chunk for chunk, _ in report.failed] == ["c-fail"]
    assert "400" in report.failed[0][1]
    # Every chunk is accounted for exactly once.
    accounted = [*created, *report.empty, *report.copied, *report.duplicate, *(c for c, _ in report.failed)]
    assert sorted(accounted) == sorted(CHUNKS)
    # Stored as synthetic test cases, each with its chunk as the relevant one.
    assert len(cases) == len(report.created)
    by_question = {q.question: q for q in cases}
    for chunk_id, question in created.items():
        stored = by_question[question]
        assert stored.relevant_doc_ids == [chunk_id]
        assert stored.metadata["source"] == "synthetic"
        assert stored.metadata["prompt_version"] == "generate-v1" and stored.metadata["seed"] == 3
        assert stored.metadata["source_document"] == f"doc-{chunk_id}"
        assert stored.metadata["generator"]["model"] == "scripted"
    assert "1 LLM failure(s)" in report.summary()


async def test_second_run_same_seed_adds_only_duplicates(store_url: str) -> None:
    from ragmeter.llm import from_spec

    async with ScriptedServer(responder) as server:
        client = from_spec(f"openai-compatible:scripted@{server.url}", max_retries=0)
        try:
            with open_store(store_url) as store:
                first = await agenerate_test_cases(store, "kb", llm=client, sample_size=3, seed=11)
                second = await agenerate_test_cases(store, "kb", llm=client, sample_size=3, seed=11)
        finally:
            await client.aclose()
    # The same seed samples the same chunks: what was created before is now a duplicate, the rest repeats.
    assert not second.created
    assert sorted(second.duplicate) == sorted([c.chunk_id for c in first.created] + first.duplicate)
    assert second.empty == first.empty and second.copied == first.copied
    assert [c for c, _ in second.failed] == [c for c, _ in first.failed]
    assert first.sampled == second.sampled == 3


def test_generate_cli(
    store_url: str, threaded_server: ScriptedServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragmeter.cli import main

    args = ["generate", "--collection", "kb", "--judge", f"openai-compatible:scripted@{threaded_server.url}"]
    with pytest.raises(SystemExit) as info:
        main([*args, "--sample-size", "8", "--seed", "5", "--db", store_url])
    assert info.value.code == 0
    out, err = capsys.readouterr()
    rows = [line.split("\t") for line in out.strip().splitlines()]
    assert {r[1] for r in rows} >= {"c-alpha", "c-beta", "c-fence"}
    assert "LLM failure on chunk c-fail" in err and "LLM failure(s)" in err
    assert "generate --judge is deprecated" in err  # the command went on: the warning is shown
    with pytest.raises(SystemExit) as info:
        main([*args, "--source-id", "doc-c-fail", "--db", store_url])
    assert info.value.code == 1  # nothing created, one failure
    with pytest.raises(SystemExit) as info:
        main([*args, "--collection", "nope", "--db", store_url])
    assert info.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_bad_inputs(store_url: str) -> None:
    class NoLLM:
        async def complete(self, *a: Any, **k: Any) -> Any:
            raise AssertionError("must not be called")

    with open_store(store_url) as store:
        with pytest.raises(InputError, match="chunk_text"):
            asyncio.run(agenerate_test_cases(store, "kb", llm=NoLLM(), prompt="no field"))
        with pytest.raises(InputError, match="no chunks of document"):
            asyncio.run(agenerate_test_cases(store, "kb", llm=NoLLM(), source_id="zzz"))
        with pytest.raises(InputError, match="sample size"):
            asyncio.run(agenerate_test_cases(store, "kb", llm=NoLLM(), sample_size=0))
    assert normalise_question("What's  X?") == "what s x"


def test_run_generate_when_the_collection_has_no_test_cases(
    store_url: str, threaded_server: ScriptedServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragmeter.cli import main

    judge = f"openai-compatible:scripted@{threaded_server.url}"
    args = ["run", "--collection", "kb", "--generate", "--judge", judge, "--no-llm-judge", "--no-generation"]
    args += ["--mode", "fulltext", "--sample-size", "8", "--seed", "5", "--format", "json", "--no-progress"]
    with pytest.raises(SystemExit) as info:
        main([*args, "--db", store_url])
    assert info.value.code in (0, None)
    out, err = capsys.readouterr()
    first = json.loads(out)
    assert "LLM failure on chunk c-fail" in err
    with open_store(store_url) as store:
        cases = store.test_cases("kb")
    assert len(cases) == first["n_queries"] >= 3 and all(c.relevant_doc_ids for c in cases)
    assert first["config"]["dataset"] == "store:kb"
    # a second run finds the test cases and does not ask the LLM again
    calls = len(threaded_server.requests)
    with pytest.raises(SystemExit) as info:
        main([*args, "--db", store_url])
    assert "already has test cases" in capsys.readouterr().err
    assert len(threaded_server.requests) == calls
    with pytest.raises(SystemExit) as info:
        main(["run", "--generate", "--judge", judge, "--db", store_url])
    assert info.value.code == 2 and "needs --collection" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--fail-under", "ndcg@7=0.5"], "--fail-under"),
        (["--set", "pipeline.nosuch=1", "-s", "cli_fakes:system_a"], "--set"),
        (["--config", "/nonexistent/run.yaml"], "run.yaml"),
    ],
)
def test_run_generate_refused_stores_no_test_case(
    store_url: str,
    threaded_server: ScriptedServer,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    needle: str,
) -> None:
    from ragmeter.cli import main

    judge = f"openai-compatible:scripted@{threaded_server.url}"
    args = ["run", "--collection", "kb", "--generate", "--judge", judge, "--no-llm-judge", "--no-generation"]
    with pytest.raises(SystemExit) as info:
        main([*args, "--no-progress", *extra, "--db", store_url])
    err = capsys.readouterr().err
    assert info.value.code == 2 and needle in err and "Traceback" not in err, err
    with open_store(store_url) as store:
        assert store.test_cases("kb") == []
    assert threaded_server.requests == []  # no question was asked of the LLM either
