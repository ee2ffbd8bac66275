"""A LlamaIndex retriever or query engine as a system."""

from __future__ import annotations

import threading
from typing import Any

from ragmeter.errors import InputError
from ragmeter.systems.adapters._common import answer_text, document_id, rank_score, require
from ragmeter.systems.base import Retrieved, document_level


class LlamaIndexSystem:
    """`retrieve(query, k)` returns the source documents of the top nodes (ids by the adapters' one rule:
    `metadata[id_key]`, else `metadata["doc_id"]`, else `node.ref_doc_id`, else the node id; each document once, at its best node), with the nodes' scores and texts. A retriever with
    `similarity_top_k` is asked for k nodes. A query engine with a retriever and `synthesize`
    (RetrieverQueryEngine, what `index.as_query_engine()` builds) retrieves through the engine (node
    postprocessors included) and `answer(query, contexts)` synthesizes from exactly those contexts. Any
    other query engine is queried once per question: its source nodes are the results, its response the
    answer."""

    def __init__(self, target: Any, *, name: str | None = None, id_key: str | None = None) -> None:
        require("llama_index.core", "llamaindex", "the LlamaIndex adapter")
        from llama_index.core.base.base_query_engine import BaseQueryEngine
        from llama_index.core.base.base_retriever import BaseRetriever

        self.engine: Any = None
        self.retriever: Any = None
        if isinstance(target, BaseQueryEngine):
            self.engine = target
            self.retriever = getattr(target, "retriever", None)
        elif isinstance(target, BaseRetriever):
            self.retriever = target
        else:
            raise InputError(
                f"expected a LlamaIndex retriever or query engine, got {type(target).__name__}",
                source="from_llamaindex",
            )
        self.synthesizes = self.retriever is not None and callable(getattr(self.engine, "synthesize", None))
        self.name = name or f"llamaindex:{type(target).__name__}"
        self.id_key = id_key
        self._lock = threading.Lock()  # similarity_top_k is set per call
        self._nodes: dict[str, dict[str, Any]] = {}  # query -> doc id -> node, for synthesize()
        self._answers: dict[str, str | None] = {}  # query -> answer, for engines queried once

    def _nodes_for(self, query: str, k: int) -> list[Any]:
        from llama_index.core.schema import QueryBundle

        if self.retriever is None:  # an engine that only answers queries
            response = self.engine.query(query)
            self._answers[query] = answer_text(response, source=self.name)
            return list(getattr(response, "source_nodes", None) or [])
        source = self.engine if self.synthesizes else self.retriever
        if not hasattr(self.retriever, "similarity_top_k"):
            return list(source.retrieve(QueryBundle(query)))
        with self._lock:
            before = self.retriever.similarity_top_k
            self.retriever.similarity_top_k = k
            try:
                return list(source.retrieve(QueryBundle(query)))
            finally:
                self.retriever.similarity_top_k = before

    def retrieve(self, query: str, k: int) -> list[Retrieved]:
        nodes = self._nodes_for(query, k)
        out: list[Retrieved] = []
        by_doc: dict[str, Any] = {}
        for rank, hit in enumerate(nodes):
            node = hit.node
            doc_id = document_id(
                node.metadata, (node.ref_doc_id, node.node_id), id_key=self.id_key, source=self.name
            )
            by_doc.setdefault(doc_id, hit)
            out.append(Retrieved(doc_id, rank_score(hit.score, rank, len(nodes)), node.get_content()))
        if self.synthesizes:
            self._nodes[query] = by_doc
        return document_level(out)[:k]

    def answer(self, query: str, contexts: list[Retrieved]) -> str | None:
        if self.engine is None:
            return None
        if not self.synthesizes:
            return self._answers.pop(query, None)
        from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

        known = self._nodes.pop(query, {})
        nodes = [
            known.get(c.doc_id) or NodeWithScore(node=TextNode(text=c.text, id_=c.doc_id), score=c.score)
            for c in contexts
        ]
        return answer_text(self.engine.synthesize(QueryBundle(query), nodes), source=self.name)


def from_llamaindex(retriever_or_query_engine: Any, **options: Any) -> LlamaIndexSystem:
    """A LlamaIndex retriever or query engine as a ragmeter system (options: name, id_key)."""
    return LlamaIndexSystem(retriever_or_query_engine, **options)
