"""The built-in pipeline: chunking, BM25 via bm25s, RRF, reranking, document-level results, persistence."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from ragmeter.datasets import demo_dataset
from ragmeter.datasets.chunking import chunk_documents, chunk_words
from ragmeter.errors import InputError
from ragmeter.models import Document
from ragmeter.systems import Pipeline, Retrieved, build_system
from ragmeter.systems.indexes import rrf


def test_chunk_windows_overlap_and_cover_every_word() -> None:
    words = [f"w{i}" for i in range(25)]
    windows = chunk_words(words, 10, 3)
    assert [w[0] for w in windows] == ["w0", "w7", "w14", "w21"]
    assert windows[-1][-1] == "w24" and all(len(w) <= 10 for w in windows)
    for a, b in itertools.pairwise(windows):
        assert a[-3:] == b[:3]  # the overlap
    assert chunk_words(words[:10], 10, 3) == [words[:10]]
    with pytest.raises(ValueError):
        chunk_words(words, 5, 5)


def test_chunk_ids_are_doc_id_hash_n() -> None:
    docs = [
        Document(doc_id="long", text=" ".join(["x"] * 450), title="T"),
        Document(doc_id="short", text="a b"),
    ]
    chunks = chunk_documents(docs, size=200, overlap=40)
    assert [c.chunk_id for c in chunks] == ["long#0", "long#1", "long#2", "short#0"]
    assert chunks[0].indexed_text.startswith("T\n")
    whole = chunk_documents(docs, enabled=False)
    assert [c.chunk_id for c in whole] == ["long#0", "short#0"] and len(whole[0].text.split()) == 450


def test_rrf_matches_the_formula() -> None:
    a = [(1, 9.0), (2, 8.0), (3, 7.0)]
    b = [(3, 0.9), (4, 0.8)]
    fused = dict(rrf([(a, 1.0), (b, 2.0)], k=60))
    assert fused[1] == pytest.approx(1 / 61)
    assert fused[3] == pytest.approx(1 / 63 + 2 / 61)
    assert fused[4] == pytest.approx(2 / 62)
    assert [i for i, _ in rrf([(a, 1.0), (b, 2.0)], k=60)] == [3, 4, 1, 2]


def test_bm25_on_the_demo_finds_the_relevant_docs(tmp_path: Path) -> None:
    ds = demo_dataset()
    system = build_system("builtin", dataset=ds, mode="bm25", index_dir=tmp_path)
    assert isinstance(system, Pipeline) and system.mode == "fulltext"
    hits = 0
    for q in ds.queries:
        results = system.retrieve(q.question, 5)
        assert all(isinstance(r, Retrieved) for r in results)
        assert len({r.doc_id for r in results}) == len(results)
        assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)
        hits += any(r.doc_id in q.relevant_doc_ids for r in results)
    assert hits / len(ds.queries) >= 0.9


def _long_corpus() -> list[Document]:
    filler = " ".join(f"filler{i}" for i in range(300))
    return [
        Document(doc_id="big", text=f"zebra stripes {filler} zebra herd {filler} zebra again"),
        Document(doc_id="small", text="a zebra in a zoo"),
        Document(doc_id="other", text="lions and tigers"),
    ]


def test_results_are_documents_at_their_best_chunk(tmp_path: Path) -> None:
    p = Pipeline(_long_corpus(), mode="fulltext", index_dir=tmp_path, chunk_size=100, chunk_overlap=10)
    results = p.retrieve("zebra", 10)
    assert sorted(r.doc_id for r in results) == ["big", "small"]  # 'other' has no match: not returned
    assert len(p.chunks) > 3 and all("#" not in r.doc_id for r in results)
    assert "zebra" in results[0].text
    # k larger than the number of documents is fine; k=0 gives nothing.
    assert len(p.retrieve("zebra lions", 50)) == 3
    assert p.retrieve("zebra", 0) == []
    assert p.retrieve("the of and", 5) == []  # only stop words


def test_index_persists_and_a_changed_corpus_rebuilds(tmp_path: Path) -> None:
    corpus = _long_corpus()
    first = Pipeline(corpus, mode="fulltext", index_dir=tmp_path, collection="zoo").build()
    assert first.bm25 is not None and first.bm25.built
    saved = list((tmp_path / "zoo").iterdir())
    assert len(saved) == 1 and (saved[0] / "meta.json").is_file()
    again = Pipeline(corpus, mode="fulltext", index_dir=tmp_path, collection="zoo").build()
    assert again.bm25 is not None and not again.bm25.built
    assert again.retrieve("zebra zoo", 3) == first.retrieve("zebra zoo", 3)
    changed = [*corpus[:2], Document(doc_id="other", text="zebra zoo keepers")]
    rebuilt = Pipeline(changed, mode="fulltext", index_dir=tmp_path, collection="zoo").build()
    assert rebuilt.bm25 is not None and rebuilt.bm25.built
    assert rebuilt.retrieve("keepers", 1)[0].doc_id == "other"
    assert not [p for p in (tmp_path / "zoo").iterdir() if p.name.startswith(".")]  # no temp folders left


class Alphabetical:
    """A reranker that prefers passages whose text sorts first: easy to check by hand."""

    def __init__(self) -> None:
        self.calls: list[list[tuple[str, str]]] = []

    def predict(self, pairs: list[tuple[str, str]]) -> list[float]:
        self.calls.append(pairs)
        ranked = sorted(range(len(pairs)), key=lambda i: pairs[i][1])
        return [float(len(pairs) - ranked.index(i)) for i in range(len(pairs))]


def test_reranker_reorders_the_top_candidates(tmp_path: Path) -> None:
    docs = [Document(doc_id=f"d{i}", text=f"{chr(97 + i)} apple " * (i + 1)) for i in range(5)]
    reranker = Alphabetical()
    p = Pipeline(docs, mode="fulltext", persist=False, reranker=reranker, rerank_depth=10)
    assert [r.doc_id for r in p.retrieve("apple", 5)] == ["d0", "d1", "d2", "d3", "d4"]
    assert reranker.calls and all(q == "apple" for q, _ in reranker.calls[0])
    plain = Pipeline(docs, mode="fulltext", persist=False, reranker=Alphabetical(), disable={"rerank"})
    assert [r.doc_id for r in plain.retrieve("apple", 5)] == ["d4", "d3", "d2", "d1", "d0"]  # BM25: tf


def test_bad_configurations_are_clear_errors() -> None:
    docs = [Document(doc_id="a", text="x")]
    with pytest.raises(InputError, match="unknown mode"):
        Pipeline(docs, mode="magic")
    with pytest.raises(InputError, match="unknown component"):
        Pipeline(docs, disable={"bm26"})
    with pytest.raises(InputError, match="leaves no retriever"):
        Pipeline(docs, mode="fulltext", disable={"bm25"})
    with pytest.raises(InputError, match="needs a corpus"):
        Pipeline([])
    with pytest.raises(InputError, match="bad pipeline option"):
        build_system("builtin", dataset=demo_dataset(), colour="red")
