"""The adapters' one id rule (metadata[id_key], else metadata["doc_id"], else the framework's own id), the
warning when a run's retrieved ids are all foreign to the dataset, and `id_key` accepted from the CLI."""

from __future__ import annotations

import logging
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from ragmeter.errors import InputError
from ragmeter.models import EvalConfig, EvalDataset, EvalQuery
from ragmeter.systems import aretrieve

# The most natural LangChain setup: documents carry the dataset's id in metadata, the store makes uuids.
DOCS = {"d-italy": "Rome is the capital of Italy.", "d-france": "Paris is the capital of France."}


def test_the_rule_itself() -> None:
    from ragmeter.systems.adapters._common import document_id

    assert document_id({"doc_id": "a", "src": "b"}, ["uuid"], id_key=None, source="x") == "a"
    assert document_id({"doc_id": "a", "src": "b"}, ["uuid"], id_key="src", source="x") == "b"
    assert document_id({}, [None, "uuid"], id_key=None, source="x") == "uuid"
    with pytest.raises(InputError, match=r"metadata\['src'\]"):
        document_id({"doc_id": "a"}, ["uuid"], id_key="src", source="x")
    with pytest.raises(InputError, match="no id"):
        document_id({}, [None], id_key=None, source="x")


async def test_langchain_prefers_metadata_doc_id_over_the_stores_generated_id() -> None:
    pytest.importorskip("langchain_core", reason="the langchain extra is not installed")
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    from ragmeter.systems import from_langchain

    vs = InMemoryVectorStore(embedding=DeterministicFakeEmbedding(size=16))
    vs.add_documents([Document(page_content=t, metadata={"doc_id": i}) for i, t in DOCS.items()])
    got = await aretrieve(from_langchain(vs.as_retriever()), "capital of Italy", 2)
    assert sorted(r.doc_id for r in got) == sorted(DOCS)


async def test_haystack_follows_the_same_rule() -> None:
    pytest.importorskip("haystack", reason="the haystack extra is not installed")
    from haystack import Document, Pipeline
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    from ragmeter.systems import from_haystack

    store = InMemoryDocumentStore()
    store.write_documents(
        [Document(content=t, meta={"doc_id": i, "source_id": f"parent-{i}"}) for i, t in DOCS.items()]
    )
    pipe = Pipeline()
    pipe.add_component("retriever", InMemoryBM25Retriever(document_store=store))
    got = await aretrieve(from_haystack(pipe), "capital of Italy", 2)
    assert got[0].doc_id == "d-italy" and sorted(r.doc_id for r in got) == sorted(DOCS)
    got = await aretrieve(from_haystack(pipe, id_key="source_id"), "capital of Italy", 2)
    assert got[0].doc_id == "parent-d-italy"


async def test_llamaindex_follows_the_same_rule() -> None:
    pytest.importorskip("llama_index.core", reason="the llamaindex extra is not installed")
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeRelationship, NodeWithScore, RelatedNodeInfo, TextNode

    from ragmeter.systems import from_llamaindex

    class Fixed(BaseRetriever):
        def _retrieve(self, query_bundle: Any) -> list[NodeWithScore]:
            out = []
            for n, (doc_id, text) in enumerate(DOCS.items()):
                node = TextNode(text=text, metadata={"doc_id": doc_id})
                node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=f"generated-{n}")
                out.append(NodeWithScore(node=node, score=1.0 - n / 10))
            return out

    got = await aretrieve(from_llamaindex(Fixed()), "capital of Italy", 2)
    assert [r.doc_id for r in got] == list(DOCS)


def _dataset() -> EvalDataset:
    queries = [
        EvalQuery(query_id="q1", question="capital of Italy?", relevant_doc_ids=["d-italy"]),
        EvalQuery(query_id="q2", question="capital of France?", relevant_doc_ids=["d-france"]),
    ]
    return EvalDataset(name="caps", queries=queries)


def test_a_run_whose_ids_are_all_foreign_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    from ragmeter.run import run_evaluation

    config = EvalConfig(retrieval_top_k=[1, 2], evaluate_generation=False)
    with caplog.at_level(logging.WARNING, logger="ragmeter"):
        foreign = run_evaluation(_dataset(), lambda q, k: ["4f1c-uuid", "9a2e-uuid"], config, store=False)
    assert foreign.aggregate["recall@2"].mean == 0.0
    assert any("not one of the 4 retrieved ids" in n for n in foreign.notes), foreign.notes
    assert any("not one of the 4 retrieved ids" in r.getMessage() for r in caplog.records)
    # One matching id anywhere in the run: no warning.
    mixed = run_evaluation(_dataset(), lambda q, k: ["4f1c-uuid", "d-italy"], config, store=False)
    assert not any("retrieved ids" in n for n in mixed.notes), mixed.notes


def test_id_key_is_an_ordinary_option_from_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("langchain_core", reason="the langchain extra is not installed")
    from in_process import run_main

    (tmp_path / "lc_ids_app.py").write_text(
        textwrap.dedent(
            """
            from langchain_core.documents import Document
            from langchain_core.retrievers import BaseRetriever

            class Fixed(BaseRetriever):
                def _get_relevant_documents(self, query, *, run_manager=None):
                    return [Document(page_content="Rome", metadata={"ref": "d-italy"}, id="uuid-1")]

            def build():
                return Fixed()
            """
        )
    )
    (tmp_path / "caps.json").write_text(_dataset().model_dump_json())
    (tmp_path / "opts.yaml").write_text("extra:\n  system_options: {id_key: ref}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lc_ids_app", raising=False)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "r.json"
    args = ["run", "-d", "caps.json", "-s", "langchain:lc_ids_app:build", "--config", "opts.yaml"]
    args += ["--no-generation", "--no-progress", "--db", str(tmp_path / "s.db"), "-o", str(out)]
    code, _, err = run_main(capsys, *args)
    assert code == 0, err
    import json

    result = json.loads(out.read_text())
    assert result["per_query"][0]["retrieved"][0]["doc_id"] == "d-italy"
    assert result["record"]["system"]["options"] == {"id_key": "ref"}
