"""The LangChain adapter against the real langchain-core / langchain-openai: an InMemoryVectorStore over
the demo corpus with ragmeter's offline MiniLM, a prompt | ChatOpenAI | parser chain talking real HTTP
to a scripted OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import itertools
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain_core", reason="the langchain extra is not installed")
pytest.importorskip("langchain_openai", reason="the langchain extra is not installed")

from adapters_support import Reader, brute_force, demo, embed
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore

from ragmeter.errors import InputError
from ragmeter.models import EvalConfig
from ragmeter.run import arun_evaluation
from ragmeter.systems import aanswer, aretrieve, build_system, from_langchain


class MiniLM(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return embed(texts)

    def embed_query(self, text: str) -> list[float]:
        return embed([text])[0]


@pytest.fixture(scope="module")
def store() -> InMemoryVectorStore:
    vs = InMemoryVectorStore(embedding=MiniLM())
    docs = [Document(page_content=d.text, metadata={"title": d.title}) for d in demo().corpus]
    vs.add_documents(docs, ids=[d.doc_id for d in demo().corpus])
    return vs


def chain(url: str) -> Any:
    from langchain_openai import ChatOpenAI

    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "Answer from the passages; cite them as [n]."),
            ("user", "{context}\n\nQuestion: {question}"),
        ]
    )
    llm = ChatOpenAI(base_url=url, api_key="test-key", model="scripted", temperature=0, max_retries=0)
    return prompt | llm | StrOutputParser()


async def test_retrieve_returns_the_stores_ranking_with_its_scores(store: InMemoryVectorStore) -> None:
    system = from_langchain(store.as_retriever(search_kwargs={"k": 2}))
    texts = {d.doc_id: d.text for d in demo().corpus}
    for query in demo().queries[:8]:
        got = await aretrieve(system, query.question, 5)
        want = brute_force(query.question, texts, 5)
        assert [r.doc_id for r in got] == [i for i, _ in want]  # k=5 wins over the retriever's own k=2
        assert [r.score for r in got] == pytest.approx([s for _, s in want], abs=1e-5)
        assert all(r.text == texts[r.doc_id] for r in got)


async def test_evaluation_records_answers_built_from_the_recorded_contexts(
    store: InMemoryVectorStore, scripted: Any
) -> None:
    dataset = demo()
    reader = Reader(dataset)
    server = await scripted(reader)
    system = from_langchain(store.as_retriever(), chain(server.url), name="lc-rag")
    config = EvalConfig(limit=6, retrieval_top_k=[1, 5], extra={"context_k": 3})
    result = await arun_evaluation(dataset, system, config, store=False, progress=False)

    assert len(result.per_query) == 6 and all(r.status == "ok" for r in result.per_query)
    assert len(server.requests) == 6
    for r in result.per_query:
        ids = [d.doc_id for d in r.retrieved]
        assert len(ids) == 5 and [d.rank for d in r.retrieved] == [1, 2, 3, 4, 5]
        assert all(a.score >= b.score for a, b in itertools.pairwise(r.retrieved))
        assert reader.seen[r.question] == ids[:3]  # the prompt held exactly the 3 recorded contexts
        assert r.answer == reader.expected(ids[0])
    relevant = {q.query_id: set(q.relevant_doc_ids) for q in dataset.queries}
    recalls = [
        len(relevant[r.query_id] & {d.doc_id for d in r.retrieved}) / len(relevant[r.query_id])
        for r in result.per_query
    ]
    assert result.aggregate["recall@5"].mean == pytest.approx(sum(recalls) / len(recalls))


async def test_chunks_map_to_documents_through_id_key() -> None:
    vs = InMemoryVectorStore(embedding=MiniLM())
    chunks = []
    for d in demo().corpus[:10]:
        words = d.text.split()
        half = len(words) // 2
        for n, part in enumerate((words[:half], words[half:])):
            chunks.append(Document(page_content=" ".join(part), metadata={"source_doc": d.doc_id, "n": n}))
    vs.add_documents(chunks)
    system = from_langchain(vs.as_retriever(), id_key="source_doc")
    got = await aretrieve(system, demo().queries[0].question, 8)
    ids = [r.doc_id for r in got]
    assert len(ids) == len(set(ids)) and set(ids) <= {d.doc_id for d in demo().corpus[:10]}
    assert all(a.score >= b.score for a, b in itertools.pairwise(got))


async def test_a_runnable_returning_scored_documents(store: InMemoryVectorStore) -> None:
    runnable = RunnableLambda(lambda q: store.similarity_search_with_score(q, k=4))
    system = from_langchain(runnable)
    query = demo().queries[3].question
    got = await aretrieve(system, query, 4)
    want = brute_force(query, {d.doc_id: d.text for d in demo().corpus}, 4)
    assert [(r.doc_id, round(r.score, 5)) for r in got] == [(i, round(s, 5)) for i, s in want]
    assert await aanswer(system, query, got) is None  # no chain: no answer


async def test_a_document_without_id_is_an_input_error() -> None:
    system = from_langchain(RunnableLambda(lambda q: [Document(page_content="no id here")]))
    with pytest.raises(InputError, match="no id"):
        await asyncio.to_thread(system.retrieve, "anything", 3)
    with pytest.raises(InputError, match="invoke"):
        from_langchain(object())


async def test_spec_langchain_module_attr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scripted: Any
) -> None:
    dataset = demo()
    reader = Reader(dataset)
    server = await scripted(reader)
    here = str(Path(__file__).parent)
    (tmp_path / "my_lc_app.py").write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.path.insert(0, {here!r})
            from langchain_core.documents import Document
            from langchain_core.vectorstores import InMemoryVectorStore
            from test_adapters_langchain import MiniLM, chain
            from adapters_support import demo

            def build():
                vs = InMemoryVectorStore(embedding=MiniLM())
                vs.add_documents([Document(page_content=d.text) for d in demo().corpus],
                                 ids=[d.doc_id for d in demo().corpus])
                return {{"retriever": vs.as_retriever(), "chain": chain({server.url!r})}}
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_lc_app", raising=False)
    system = build_system("langchain:my_lc_app:build")
    assert system.name == "langchain:my_lc_app:build"
    query = dataset.queries[0]
    got = await aretrieve(system, query.question, 3)
    want = brute_force(query.question, {d.doc_id: d.text for d in dataset.corpus}, 3)
    assert [g.doc_id for g in got] == [i for i, _ in want]
    answer = await aanswer(system, query.question, got[:2])
    assert answer == reader.expected(got[0].doc_id) and reader.seen[query.question] == [
        g.doc_id for g in got[:2]
    ]
    with pytest.raises(InputError, match="cannot import module"):
        build_system("langchain:no_such_module_here:x")
