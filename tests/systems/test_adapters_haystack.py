"""The Haystack adapter against the real haystack-ai: an InMemoryDocumentStore over the demo corpus,
embedded by ragmeter's offline MiniLM (two small @component embedders: Haystack 3 moved its
sentence-transformers embedders out of haystack-ai), InMemoryEmbeddingRetriever -> ChatPromptBuilder ->
OpenAIChatGenerator (real HTTP to a scripted OpenAI-compatible server on 127.0.0.1) -> AnswerBuilder."""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # no phoning home from tests
pytest.importorskip("haystack", reason="the haystack extra is not installed")

from adapters_support import Reader, brute_force, demo, embed
from haystack import Document, Pipeline, component
from haystack.components.builders import AnswerBuilder, ChatPromptBuilder
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.dataclasses import ChatMessage
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.utils import Secret

from ragmeter.errors import InputError
from ragmeter.models import EvalConfig
from ragmeter.run import arun_evaluation
from ragmeter.systems import aanswer, aretrieve, build_system, from_haystack

TEMPLATE = [
    ChatMessage.from_system("Answer from the passages; cite them as [n]."),
    ChatMessage.from_user(
        "{% for d in documents %}[{{ loop.index }}] {{ d.content }}\n\n{% endfor %}Question: {{ question }}"
    ),
]


@component
class MiniLMTextEmbedder:
    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict[str, Any]:
        return {"embedding": embed([text])[0]}


@component
class MiniLMDocumentEmbedder:
    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        vectors = embed([d.content or "" for d in documents])
        return {
            "documents": [
                Document(id=d.id, content=d.content, meta=d.meta, embedding=v)
                for d, v in zip(documents, vectors, strict=True)
            ]
        }


def _texts() -> dict[str, str]:
    return {d.doc_id: d.text for d in demo().corpus}


@pytest.fixture(scope="module")
def doc_store() -> InMemoryDocumentStore:
    store = InMemoryDocumentStore()
    docs = [Document(id=d.doc_id, content=d.text, meta={"title": d.title}) for d in demo().corpus]
    store.write_documents(MiniLMDocumentEmbedder().run(docs)["documents"])
    return store


def rag_pipeline(store: InMemoryDocumentStore, url: str | None) -> Pipeline:
    p = Pipeline()
    p.add_component("embedder", MiniLMTextEmbedder())
    p.add_component("retriever", InMemoryEmbeddingRetriever(document_store=store, top_k=2))
    p.connect("embedder.embedding", "retriever.query_embedding")
    if url is None:
        return p
    p.add_component("prompt", ChatPromptBuilder(template=TEMPLATE, required_variables=["question"]))
    key = Secret.from_token("test-key")
    p.add_component(
        "llm", OpenAIChatGenerator(api_key=key, model="scripted", api_base_url=url, max_retries=0)
    )
    p.add_component("answers", AnswerBuilder())
    p.connect("retriever.documents", "prompt.documents")
    p.connect("prompt.prompt", "llm.messages")
    p.connect("llm.replies", "answers.replies")
    p.connect("retriever.documents", "answers.documents")
    return p


async def test_retrieval_only_pipeline(doc_store: InMemoryDocumentStore) -> None:
    system = from_haystack(rag_pipeline(doc_store, None))
    texts = _texts()
    for query in demo().queries[40:46]:
        got = await aretrieve(system, query.question, 5)
        want = brute_force(query.question, texts, 5)
        assert [r.doc_id for r in got] == [i for i, _ in want]  # k=5 reached the retriever's top_k
        assert [r.score for r in got] == pytest.approx([s for _, s in want], abs=1e-5)
        assert [r.text for r in got] == [texts[r.doc_id] for r in got]
        assert await aanswer(system, query.question, got) is None


async def test_rag_pipeline_evaluation(doc_store: InMemoryDocumentStore, scripted: Any) -> None:
    dataset = demo()
    reader = Reader(dataset)
    server = await scripted(reader)
    system = from_haystack(rag_pipeline(doc_store, server.url), name="hs-rag")
    assert (system.retriever, system.answerer) == ("retriever", "answers")
    assert system.question_inputs == {"embedder": ["text"], "prompt": ["question"], "answers": ["query"]}
    config = EvalConfig(limit=5, retrieval_top_k=[1, 3], extra={"context_k": 3})
    result = await arun_evaluation(dataset, system, config, store=False, progress=False)

    assert [r.status for r in result.per_query] == ["ok"] * 5 and len(server.requests) == 5  # one run each
    for r in result.per_query:
        ids = [d.doc_id for d in r.retrieved]
        assert ids == [i for i, _ in brute_force(r.question, _texts(), 3)]
        assert all(a.score >= b.score for a, b in itertools.pairwise(r.retrieved))
        # one pipeline run: the prompt held the k=3 documents the run retrieved, the ones recorded
        assert reader.seen[r.question] == ids
        assert r.answer == reader.expected(ids[0])
    assert result.aggregate["recall@3"].n == 5


async def test_explicit_components_and_errors(doc_store: InMemoryDocumentStore) -> None:
    pipeline = rag_pipeline(doc_store, None)
    system = from_haystack(pipeline, retriever="retriever", top_k=False, id_key="title")
    got = await aretrieve(system, demo().queries[0].question, 5)
    assert len(got) == 2  # top_k=False: the retriever's own top_k=2
    titles = {d.title for d in demo().corpus}
    assert {r.doc_id for r in got} <= titles
    with pytest.raises(InputError, match="no component 'nope'"):
        from_haystack(pipeline, retriever="nope")
    with pytest.raises(InputError, match="Haystack Pipeline"):
        from_haystack(object())
    bare = Pipeline()
    bare.add_component("answers", AnswerBuilder())
    with pytest.raises(InputError, match="outputs 'documents'"):
        from_haystack(bare)


async def test_spec_haystack_module_attr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    here = str(Path(__file__).parent)
    (tmp_path / "my_hs_app.py").write_text(
        "import sys\n"
        f"sys.path.insert(0, {here!r})\n"
        "from haystack.document_stores.in_memory import InMemoryDocumentStore\n"
        "from haystack import Document\n"
        "from test_adapters_haystack import MiniLMDocumentEmbedder, rag_pipeline\n"
        "from adapters_support import demo\n"
        "def build():\n"
        "    store = InMemoryDocumentStore()\n"
        "    docs = [Document(id=d.doc_id, content=d.text) for d in demo().corpus]\n"
        "    store.write_documents(MiniLMDocumentEmbedder().run(docs)['documents'])\n"
        "    return rag_pipeline(store, None)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    system = build_system("haystack:my_hs_app:build", retriever="retriever")
    question = demo().queries[50].question
    got = await aretrieve(system, question, 4)
    assert system.name == "haystack:my_hs_app:build"
    assert [r.doc_id for r in got] == [i for i, _ in brute_force(question, _texts(), 4)]
    with pytest.raises(InputError, match="bad adapter option"):
        build_system("haystack:my_hs_app:build", no_such_option=1)
