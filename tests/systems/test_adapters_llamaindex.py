"""The LlamaIndex adapter against the real llama-index-core: a VectorStoreIndex (its in-memory
SimpleVectorStore) over the demo corpus with ragmeter's offline MiniLM, and a query engine whose LLM
talks real HTTP to a scripted OpenAI-compatible server on 127.0.0.1.

The LLM is a llama-index `CustomLLM` over the `openai` client: llama-index-llms-openai pins openai<3,
which cannot be installed next to ragmeter's `llm` extra (openai>=3)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_index.core", reason="the llamaindex extra is not installed")

from adapters_support import Reader, brute_force, demo, embed
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import CompletionResponse, CompletionResponseGen, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.query_engine import CustomQueryEngine

from ragmeter.errors import InputError
from ragmeter.models import EvalConfig
from ragmeter.run import arun_evaluation
from ragmeter.systems import aanswer, aretrieve, build_system, from_llamaindex


class MiniLMEmbedding(BaseEmbedding):
    def _get_query_embedding(self, query: str) -> list[float]:
        return embed([query])[0]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return embed([query])[0]

    def _get_text_embedding(self, text: str) -> list[float]:
        return embed([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return embed(texts)


class ScriptedOpenAI(CustomLLM):
    base_url: str

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted", is_chat_model=False)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        from openai import OpenAI

        with OpenAI(base_url=self.base_url, api_key="test-key", max_retries=0) as client:
            reply = client.chat.completions.create(
                model="scripted", messages=[{"role": "user", "content": prompt}], temperature=0
            )
        return CompletionResponse(text=reply.choices[0].message.content or "")

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        raise NotImplementedError("not streamed in these tests")


@pytest.fixture(scope="module")
def index() -> VectorStoreIndex:
    docs = [Document(text=d.text, id_=d.doc_id) for d in demo().corpus]
    return VectorStoreIndex.from_documents(docs, embed_model=MiniLMEmbedding())


def _texts() -> dict[str, str]:
    return {d.doc_id: d.text for d in demo().corpus}


async def test_retriever_gives_source_documents_with_index_scores(index: VectorStoreIndex) -> None:
    retriever = index.as_retriever(similarity_top_k=2)
    system = from_llamaindex(retriever)
    texts = _texts()
    for query in demo().queries[10:16]:
        got = await aretrieve(system, query.question, 5)
        want = brute_force(query.question, texts, 5)
        assert [r.doc_id for r in got] == [i for i, _ in want]  # ref_doc_id, k=5 over the retriever's 2
        assert [r.score for r in got] == pytest.approx([s for _, s in want], abs=1e-5)
        assert [r.text for r in got] == [texts[r.doc_id] for r in got]
    assert retriever.similarity_top_k == 2  # restored after each call
    assert await aanswer(system, "q", got) is None


async def test_query_engine_answers_from_the_recorded_contexts(
    index: VectorStoreIndex, scripted: Any
) -> None:
    dataset = demo()
    reader = Reader(dataset)
    server = await scripted(reader)
    engine = index.as_query_engine(llm=ScriptedOpenAI(base_url=server.url), similarity_top_k=3)
    system = from_llamaindex(engine, name="li-rag")
    config = EvalConfig(limit=5, retrieval_top_k=[1, 5], extra={"context_k": 2})
    result = await arun_evaluation(dataset, system, config, store=False, progress=False)

    assert [r.status for r in result.per_query] == ["ok"] * 5 and len(server.requests) == 5
    for r in result.per_query:
        ids = [d.doc_id for d in r.retrieved]
        assert len(ids) == 5 and all(a.score >= b.score for a, b in itertools.pairwise(r.retrieved))
        assert ids == [i for i, _ in brute_force(r.question, _texts(), 5)]
        assert reader.seen[r.question] == ids[:2]  # synthesized from exactly the 2 recorded contexts
        assert r.answer == reader.expected(ids[0])
    assert result.aggregate["recall@5"].n == 5  # retrieval metrics were computed on the adapter's ids


async def test_an_engine_without_a_retriever_is_queried_once(index: VectorStoreIndex, scripted: Any) -> None:
    reader = Reader(demo())
    server = await scripted(reader)
    inner = index.as_query_engine(llm=ScriptedOpenAI(base_url=server.url), similarity_top_k=3)

    class Wrapped(CustomQueryEngine):
        def custom_query(self, query_str: str) -> Any:
            return inner.query(query_str)

    system = from_llamaindex(Wrapped())
    question = demo().queries[20].question
    got = await aretrieve(system, question, 5)
    assert len(server.requests) == 1 and len(got) == 3  # the engine's own 3 source nodes
    assert reader.seen[question] == [r.doc_id for r in got]
    assert await aanswer(system, question, got) == reader.expected(got[0].doc_id)
    assert len(server.requests) == 1  # the answer came from the same query


def test_not_a_llamaindex_object_is_an_input_error() -> None:
    with pytest.raises(InputError, match="retriever or query engine"):
        from_llamaindex(object())


async def test_spec_llamaindex_module_attr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    here = str(Path(__file__).parent)
    (tmp_path / "my_li_app.py").write_text(
        "import sys\n"
        f"sys.path.insert(0, {here!r})\n"
        "from llama_index.core import Document, VectorStoreIndex\n"
        "from test_adapters_llamaindex import MiniLMEmbedding\n"
        "from adapters_support import demo\n"
        "docs = [Document(text=d.text, id_=d.doc_id) for d in demo().corpus]\n"
        "retriever = VectorStoreIndex.from_documents(docs, embed_model=MiniLMEmbedding()).as_retriever()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    system = build_system("llamaindex:my_li_app:retriever")
    question = demo().queries[30].question
    got = await aretrieve(system, question, 4)
    assert system.name == "llamaindex:my_li_app:retriever"
    assert [r.doc_id for r in got] == [i for i, _ in brute_force(question, _texts(), 4)]
