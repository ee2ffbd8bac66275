"""The built-in RAG pipeline: chunking, BM25, dense, hybrid (RRF), optional reranking and generation,
each a named component that can be switched off for ablations (`disable={"dense", "rerank", ...}`)."""

from __future__ import annotations

import copy
import re
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.datasets.chunking import Chunk, chunk_documents
from ragmeter.errors import InputError
from ragmeter.models import Document
from ragmeter.semantic.cache import EmbeddingCache
from ragmeter.systems.base import Retrieved
from ragmeter.systems.indexes import BM25Index, DenseIndex, Hits, index_folder, rrf

COMPONENTS = frozenset({"chunking", "bm25", "dense", "rerank", "generation"})
MODES = {
    "fulltext": "fulltext",
    "bm25": "fulltext",
    "semantic": "semantic",
    "dense": "semantic",
    "hybrid": "hybrid",
}

SYSTEM_PROMPT = (
    "You answer questions using only the numbered passages you are given. After each sentence, cite the "
    "passages that support it with their numbers in square brackets, like [1] or [2][3]. If the passages "
    "do not contain the answer, say that you do not know. Be concise."
)


def build_messages(
    query: str, contexts: Sequence[Retrieved], *, max_chars: int = 2000
) -> list[dict[str, str]]:
    """The generation prompt: passages numbered [1]..[n] in the order given, then the question."""
    blocks = [f"[{i}] {c.text[:max_chars]}" for i, c in enumerate(contexts, start=1)]
    passages = "\n\n".join(blocks) if blocks else "(no passages)"
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {
            "role": "user",
            # A bare "Answer with [n] citations:" made a small local model reply "[1]" and nothing else.
            "content": f"Passages:\n\n{passages}\n\nQuestion: {query}\n"
            "Answer in one or two sentences; after each sentence, the numbers of its passages, like [1].",
        },
    ]


def cited_numbers(answer: str) -> list[int]:
    """The passage numbers an answer cites, in order of first citation (`[2]`, `[1, 3]`, `[1][2]`)."""
    seen: list[int] = []
    for group in re.findall(r"\[(\d+(?:\s*,\s*\d+)*)\]", answer):
        for part in group.split(","):
            n = int(part)
            if n not in seen:
                seen.append(n)
    return seen


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "collection"


def default_index_dir() -> Path:
    from ragmeter.datasets.registry import cache_dir

    return cache_dir().parent / "indexes"


class Pipeline:
    """Retrieve (and optionally answer) over a corpus.

    `retrieve(query, k)` returns documents (ids of the corpus, never chunk ids): chunks are ranked, then
    each document is kept once at the rank of its best chunk, with that chunk's text and score.
    """

    def __init__(
        self,
        corpus: Sequence[Document],
        *,
        mode: str = "hybrid",
        collection: str | None = None,
        index_dir: str | Path | None = None,
        persist: bool = True,
        disable: set[str] | frozenset[str] = frozenset(),
        llm: Any | None = None,
        chunk_size: int = 200,
        chunk_overlap: int = 40,
        bm25_k1: float = 1.5,
        bm25_b: float = 0.75,
        model: str | None = None,
        embedding_backend: str = "torch",
        embedding_precision: str | None = None,
        max_seq_length: int | None = None,
        embedding_cache: bool = True,
        batch_size: int = 32,
        rrf_k: int = 60,
        weights: Mapping[str, float] | None = None,
        depth: int = 100,
        reranker: Any | None = None,
        rerank_depth: int = 30,
        max_context_chars: int = 2000,
        name: str | None = None,
    ) -> None:
        if mode not in MODES:
            raise InputError(f"unknown mode {mode!r}; use one of {', '.join(MODES)}", source="pipeline")
        unknown = set(disable) - COMPONENTS
        if unknown:
            raise InputError(
                f"unknown component(s) {', '.join(sorted(unknown))}; "
                f"components: {', '.join(sorted(COMPONENTS))}",
                source="pipeline",
            )
        if not corpus:
            raise InputError("the built-in pipeline needs a corpus (the dataset has none)", source="pipeline")
        self.mode = MODES[mode]
        self.disabled = frozenset(disable)
        use_bm25 = self.mode in ("fulltext", "hybrid") and "bm25" not in self.disabled
        use_dense = self.mode in ("semantic", "hybrid") and "dense" not in self.disabled
        if not (use_bm25 or use_dense):
            raise InputError(
                f"mode {mode!r} with {sorted(self.disabled)} disabled leaves no retriever", source="pipeline"
            )
        if chunk_size < 1 or not 0 <= chunk_overlap < chunk_size:
            raise InputError("need chunk_size >= 1 and 0 <= chunk_overlap < chunk_size", source="pipeline")
        self.corpus = list(corpus)
        self.collection = _slug(collection or "default")
        self.index_dir = Path(index_dir).expanduser() if index_dir is not None else default_index_dir()
        self.persist = persist
        self.llm = llm if "generation" not in self.disabled else None
        self.chunk_size, self.chunk_overlap = chunk_size, chunk_overlap
        self.rrf_k = rrf_k
        w = {"bm25": 1.0, "dense": 1.0, **(weights or {})}
        self.weights = {"bm25": float(w["bm25"]), "dense": float(w["dense"])}
        self.depth = depth
        self.rerank_depth = rerank_depth
        self.max_context_chars = max_context_chars
        self.bm25 = BM25Index(k1=bm25_k1, b=bm25_b) if use_bm25 else None
        self.dense: DenseIndex | None = None
        if use_dense:
            try:
                self.dense = DenseIndex(
                    model,
                    batch_size=batch_size,
                    backend=embedding_backend,
                    precision=embedding_precision,
                    max_seq_length=max_seq_length,
                    cache=self._embedding_cache() if embedding_cache else None,
                )
            except InputError as exc:
                raise InputError(exc.reason, source="pipeline") from None
        self._reranker_spec = reranker if "rerank" not in self.disabled else None
        self._reranker: Any = None
        self.chunks: list[Chunk] = []
        self._chunk_doc = np.zeros(0, dtype=np.int64)  # chunk index -> document number
        self._ready = False
        self._build_lock = threading.Lock()
        parts = [self.mode] + [f"-{c}" for c in sorted(self.disabled)]
        self.name = name or f"builtin:{'/'.join(parts)}"

    # --- indexing ---------------------------------------------------------------------------------
    def _folder(self, kind: str) -> Path | None:
        if not self.persist:
            return None
        chunking = "nochunk" if "chunking" in self.disabled else f"c{self.chunk_size}-{self.chunk_overlap}"
        return index_folder(self.index_dir, self.collection, f"{kind}-{chunking}")

    def _embedding_cache(self) -> EmbeddingCache | None:
        """The embedding cache shared by every index under `index_dir` (none when nothing persists)."""
        if not self.persist:
            return None
        return EmbeddingCache(self.index_dir / "embedding-cache.sqlite")

    @property
    def embedding(self) -> dict[str, Any] | None:
        """The embedding space of the dense index (model, backend, precision, max length, normalised)."""
        return self.dense.space.as_dict() if self.dense is not None else None

    def build(self) -> Pipeline:
        """Chunk the corpus and load or build each index (done lazily by the first retrieve)."""
        with self._build_lock:
            if self._ready:
                return self
            self.chunks = chunk_documents(
                self.corpus,
                size=self.chunk_size,
                overlap=self.chunk_overlap,
                enabled="chunking" not in self.disabled,
            )
            doc_number: dict[str, int] = {}
            self._chunk_doc = np.fromiter(
                (doc_number.setdefault(c.doc_id, len(doc_number)) for c in self.chunks),
                dtype=np.int64,
                count=len(self.chunks),
            )
            if self.bm25 is not None:
                self.bm25.load_or_build(self.chunks, self._folder("bm25"))
            if self.dense is not None:
                slug = _slug(self.dense.model_name)
                space = self.dense.space
                default = space.backend == "torch" and space.precision == "fp32"
                if not default or space.max_seq_length not in (None, 256):  # the default keeps its old folder
                    slug = f"{slug}-{space.tag}"
                folder = self._folder(f"dense-{slug}")
                self.dense.load_or_build(self.chunks, folder)
            self._ready = True
        return self

    def warm_up(self) -> None:
        """Build the indexes and load every model a query uses (one throwaway query), so that the first
        timed queries do not carry the loading."""
        self.build()
        self.retrieve_batch(["warm up"], 1)

    @property
    def reranks(self) -> bool:
        """Whether retrieval ends with a reranker."""
        return self._reranker_spec is not None

    def without_rerank(self) -> Pipeline:
        """This pipeline with its reranker switched off (the `rerank` ablation), sharing its built indexes,
        its generator and its name with ` -rerank` added."""
        self.build()
        off = copy.copy(self)
        off.disabled = self.disabled | {"rerank"}
        off._reranker_spec, off._reranker = None, None
        off._build_lock = threading.Lock()
        off.name = f"{self.name} -rerank"
        return off

    # --- retrieval --------------------------------------------------------------------------------
    def _first_stage(self, queries: Sequence[str], depth: int) -> list[Hits]:
        bm25 = self.bm25.search(queries, depth) if self.bm25 is not None else None
        dense = self.dense.search(queries, depth) if self.dense is not None else None
        if bm25 is not None and dense is not None:
            return [
                rrf([(b, self.weights["bm25"]), (d, self.weights["dense"])], k=self.rrf_k)
                for b, d in zip(bm25, dense, strict=True)
            ]
        only = bm25 if bm25 is not None else dense
        assert only is not None
        return only

    def _rerank(self, query: str, hits: Hits) -> Hits:
        if self._reranker_spec is None or not hits:
            return hits
        if self._reranker is None:
            self._reranker = _load_reranker(self._reranker_spec)
        head, tail = hits[: self.rerank_depth], hits[self.rerank_depth :]
        pairs = [(query, self.chunks[i].indexed_text) for i, _ in head]
        scores = [float(s) for s in self._reranker.predict(pairs)]
        # Reranked candidates come first; the rest keep their order below the lowest reranked score.
        ranked = sorted(zip((i for i, _ in head), scores, strict=True), key=lambda t: (-t[1], t[0]))
        floor = min(scores) if scores else 0.0
        return ranked + [(i, floor - 1.0 - n) for n, (i, _) in enumerate(tail)]

    def _to_documents(self, hits: Hits, k: int) -> list[Retrieved]:
        """Each document once, at the rank of its best chunk, with that chunk's text and score."""
        if not hits:
            return []
        idx = np.fromiter((i for i, _ in hits), dtype=np.int64, count=len(hits))
        _, first = np.unique(self._chunk_doc[idx], return_index=True)
        out: list[Retrieved] = []
        for pos in np.sort(first)[:k].tolist():
            chunk = self.chunks[hits[pos][0]]
            out.append(Retrieved(chunk.doc_id, float(hits[pos][1]), chunk.text))
        return out

    def retrieve_batch(self, queries: Sequence[str], k: int) -> list[list[Retrieved]]:
        """Top-k documents of each query (one batched encode/score for many queries)."""
        if k < 1:
            return [[] for _ in queries]
        self.build()
        depth = max(self.depth, 3 * k, self.rerank_depth if self._reranker_spec is not None else 0)
        results: list[list[Retrieved] | None] = [None] * len(queries)
        pending = list(range(len(queries)))
        while pending:
            batch = [queries[i] for i in pending]
            hits = self._first_stage(batch, depth)
            still: list[int] = []
            for i, h in zip(pending, hits, strict=True):
                docs = self._to_documents(self._rerank(queries[i], h), k)
                # Too few distinct documents in `depth` chunks: look deeper, unless the list is exhausted.
                if len(docs) < k and len(h) >= depth and depth < len(self.chunks):
                    still.append(i)
                else:
                    results[i] = docs
            pending = still
            depth *= 4
        return [r if r is not None else [] for r in results]

    def retrieve(self, query: str, k: int) -> list[Retrieved]:
        return self.retrieve_batch([query], k)[0]

    # --- generation -------------------------------------------------------------------------------
    async def answer(self, query: str, contexts: list[Retrieved]) -> str | None:
        """An answer citing `contexts` as [1]..[n] through the LLM client; None without a client."""
        if self.llm is None:
            return None
        messages = build_messages(query, contexts, max_chars=self.max_context_chars)
        response = await self.llm.complete(messages, metric="generator")  # its label in the client's usage
        text = getattr(response, "text", response)
        return str(text)


def _load_reranker(spec: Any) -> Any:
    """A cross-encoder: an object with `predict(list[(query, passage)]) -> scores`, or a model name or
    path loaded with `ragmeter.semantic.load_cross_encoder` (no cross-encoder weights ship offline)."""
    if hasattr(spec, "predict"):
        return spec
    if not isinstance(spec, str):
        raise InputError("reranker must be a model name/path or an object with predict()", source="pipeline")
    from ragmeter.semantic.models import load_cross_encoder

    return load_cross_encoder(spec)
