"""Batched retrieval: one vectorised top-k for many queries, equal to bm25s's own `retrieve` (same index,
same ids and scores once ties are ordered by ragmeter's rule: score descending, then index ascending)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragmeter.datasets.chunking import Chunk, chunk_documents
from ragmeter.models import Document
from ragmeter.systems import Pipeline
from ragmeter.systems.indexes import BM25Index, top_rows


def _by_rule(scores: np.ndarray, depth: int) -> list[list[tuple[int, float]]]:
    out = []
    for row in scores:
        order = sorted(range(row.size), key=lambda i: (-row[i], i))[:depth]
        out.append([(i, float(row[i])) for i in order])
    return out


def test_top_rows_breaks_ties_by_index_even_across_the_cut() -> None:
    scores = np.array([[1, 3, 3, 2, 3, 3, 0], [5, 5, 5, 5, 5, 5, 5], [0, 1, 2, 3, 4, 5, 6]], dtype=np.float32)
    for depth in range(1, 9):
        assert top_rows(scores, depth) == _by_rule(scores, depth)
    rng = np.random.default_rng(3)
    tied = rng.integers(0, 4, size=(40, 300)).astype(np.float32)  # many ties at every cut
    for depth in (1, 7, 50, 299, 300, 400):
        assert top_rows(tied, depth) == _by_rule(tied, depth)
    assert top_rows(np.array([[0.0, -1.0, 2.0]], dtype=np.float32), 3, positive=True) == [[(2, 2.0)]]
    assert top_rows(np.zeros((2, 0), dtype=np.float32), 5) == [[], []]


def _chunks(texts: list[str]) -> list[Chunk]:
    docs = [Document(doc_id=f"d{i}", text=t) for i, t in enumerate(texts)]
    return chunk_documents(docs, enabled=False)


def _check_against_bm25s(index: BM25Index, queries: list[str], depth: int) -> int:
    """ragmeter's batched search vs bm25s.retrieve (numpy backend, 2 threads) over every document."""
    import bm25s

    retriever = index._retriever
    n_docs = int(retriever.scores["num_docs"])
    tokens = index._tokenize(queries)
    known = [[w for w in t if w and w in retriever.vocab_dict] for t in tokens]
    ours = index.search(queries, depth)
    compared = 0
    for q, (words, got) in enumerate(zip(known, ours, strict=True)):
        if not words:
            assert got == []
            continue
        ids, scores = retriever.retrieve(
            [words], k=n_docs, n_threads=2, backend_selection="numpy", show_progress=False
        )
        pairs = sorted(zip(ids[0].tolist(), scores[0].tolist(), strict=True), key=lambda p: (-p[1], p[0]))
        expected = [(int(i), float(s)) for i, s in pairs if s > 0][:depth]
        assert got == expected, f"query {q}"
        # and bm25s's own top-depth list has exactly the same scores
        _, top_scores = retriever.retrieve(
            [words], k=min(depth, n_docs), n_threads=2, backend_selection="numpy", show_progress=False
        )
        assert [s for _, s in got] == [float(s) for s in top_scores[0].tolist() if s > 0]
        compared += 1
    assert isinstance(bm25s.BM25, type)
    return compared


def test_bm25_batched_search_equals_bm25s_retrieve_with_ties() -> None:
    # Duplicated documents make exact ties in score; several straddle the cut at depth 3.
    texts = [
        "protein folding in the cell",
        "protein folding in the cell",
        "protein folding in the cell",
        "cell membrane proteins",
        "dna repair and protein synthesis",
        "dna repair and protein synthesis",
        "unrelated text about weather",
        "the weather and the cell",
    ]
    index = BM25Index()
    index.load_or_build(_chunks(texts), None)
    queries = ["protein cell", "dna", "weather cell protein", "nothing matches zzz", "", "protein"]
    assert _check_against_bm25s(index, queries, 3) == 4
    assert _check_against_bm25s(index, queries, 100) == 4


def test_bm25_batched_search_equals_bm25s_on_scifact(data_dir: Path) -> None:
    from ragmeter.datasets import load_dataset

    ds = load_dataset("scifact", data_dir=str(data_dir))
    index = BM25Index()
    index.load_or_build(chunk_documents(ds.corpus or [], enabled=False), None)
    queries = [q.question for q in ds.queries][:60]
    assert _check_against_bm25s(index, queries, 100) == 60


def test_pipeline_retrieve_batch_equals_one_query_at_a_time(tmp_path: Path) -> None:
    texts = [
        f"doc {i} about {'protein' if i % 3 else 'cell'} number {i % 5} " * (1 + i % 4) for i in range(40)
    ]
    docs = [Document(doc_id=f"d{i}", text=t) for i, t in enumerate(texts)]
    p = Pipeline(docs, mode="fulltext", persist=False, chunk_size=6, chunk_overlap=2)
    queries = ["protein number 3", "cell 4", "doc 7", "no such words"]
    batched = p.retrieve_batch(queries, 5)
    assert batched == [p.retrieve(q, 5) for q in queries]
    assert [len(r) for r in batched] == [5, 5, 5, 0]
    for results in batched:
        assert len({r.doc_id for r in results}) == len(results)
        assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)


@pytest.mark.parametrize("k", [1, 3])
def test_to_documents_keeps_each_document_at_its_best_chunk(k: int) -> None:
    docs = [Document(doc_id="a", text="alpha " * 20), Document(doc_id="b", text="beta " * 20)]
    p = Pipeline(docs, mode="fulltext", persist=False, chunk_size=5, chunk_overlap=0).build()
    ids = [c.doc_id for c in p.chunks]
    b_first = ids.index("b")
    hits = [(b_first + 1, 9.0), (0, 8.0), (b_first, 7.0), (1, 6.0)]
    got = p._to_documents(hits, k)
    assert [(r.doc_id, r.score) for r in got] == [("b", 9.0), ("a", 8.0)][:k]
    assert got[0].text == p.chunks[b_first + 1].text
