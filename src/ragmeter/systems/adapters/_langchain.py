"""A LangChain retriever (or any runnable returning documents) and an optional answer chain as a system."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragmeter.errors import InputError
from ragmeter.systems.adapters._common import (
    answer_text,
    document_id,
    number_contexts,
    rank_score,
    require,
)
from ragmeter.systems.base import Retrieved, document_level

_SCORE_KEYS = ("score", "relevance_score")


class LangChainSystem:
    """`retrieve(query, k)` asks the retriever for k documents; `answer(query, contexts)` invokes the chain
    with `{question_key: query, context_key: "[1] ...\\n\\n[2] ..."}`, so the answer is built from exactly
    the contexts ragmeter records. Scores: a vector-store retriever is searched through its store's
    `similarity_search_with_score` (or `..._with_relevance_scores`), so they are the store's own; other
    retrievers give `metadata["score"]` when they set it, else a score from the rank."""

    def __init__(
        self,
        retriever: Any,
        chain: Any = None,
        *,
        name: str | None = None,
        id_key: str | None = None,
        question_key: str = "question",
        context_key: str = "context",
    ) -> None:
        require("langchain_core", "langchain", "the LangChain adapter")
        if not callable(getattr(retriever, "invoke", None)):
            raise InputError(
                f"a LangChain retriever or runnable needs invoke(), got {type(retriever).__name__}",
                source="from_langchain",
            )
        if chain is not None and not callable(getattr(chain, "invoke", None)):
            raise InputError(f"chain needs invoke(), got {type(chain).__name__}", source="from_langchain")
        self.retriever = retriever
        self.chain = chain
        self.name = name or f"langchain:{type(retriever).__name__}"
        self.id_key = id_key
        self.question_key = question_key
        self.context_key = context_key

    def _search(self, query: str, k: int) -> list[Any]:
        from langchain_core.retrievers import BaseRetriever
        from langchain_core.vectorstores import VectorStoreRetriever

        r = self.retriever
        if type(r) is VectorStoreRetriever and r.search_type != "mmr":
            kwargs = {**r.search_kwargs, "k": k}
            if r.search_type == "similarity":
                return list(r.vectorstore.similarity_search_with_score(query, **kwargs))
            return list(r.vectorstore.similarity_search_with_relevance_scores(query, **kwargs))
        if isinstance(r, BaseRetriever):
            return list(r.invoke(query, k=k))  # passed on only to retrievers that take extra kwargs
        raw = r.invoke(query)
        if raw is None or isinstance(raw, str | Mapping):
            raise InputError(
                f"the retriever must return documents, got {type(raw).__name__}", source=self.name
            )
        return list(raw)

    def _doc_id(self, doc: Any) -> str:
        meta = getattr(doc, "metadata", None) or {}
        own = (getattr(doc, "id", None), meta.get("id"))
        return document_id(meta, own, id_key=self.id_key, source=self.name)

    def retrieve(self, query: str, k: int) -> list[Retrieved]:
        items = self._search(query, k)
        out: list[Retrieved] = []
        for rank, item in enumerate(items):
            doc, score = item if isinstance(item, tuple) else (item, None)
            if score is None:
                meta = getattr(doc, "metadata", None) or {}
                score = next((meta[key] for key in _SCORE_KEYS if key in meta), None)
            text = str(getattr(doc, "page_content", ""))
            out.append(Retrieved(self._doc_id(doc), rank_score(score, rank, len(items)), text))
        return document_level(out)[:k]

    def answer(self, query: str, contexts: list[Retrieved]) -> str | None:
        if self.chain is None:
            return None
        result = self.chain.invoke({self.question_key: query, self.context_key: number_contexts(contexts)})
        return answer_text(result, source=self.name)


def from_langchain(retriever: Any, chain: Any = None, **options: Any) -> LangChainSystem:
    """A LangChain retriever (or runnable returning documents), with an optional answer chain, as a
    ragmeter system. Options: name, id_key (metadata key of the document id), question_key, context_key."""
    return LangChainSystem(retriever, chain, **options)
