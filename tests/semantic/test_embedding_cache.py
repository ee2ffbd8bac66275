"""The embedding cache: keyed by embedding space (model, backend, precision, max length, normalisation)
and text hash, so a second index of the same texts encodes only what is new. Counted with an embedder
that records every text it is asked to encode."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragmeter.datasets.chunking import chunk_documents
from ragmeter.models import Document
from ragmeter.semantic.cache import EmbeddingCache, EmbeddingSpace, encode_cached
from ragmeter.semantic.similarity import embedding_version
from ragmeter.systems.indexes import DenseIndex, embedding_space, fingerprint


class CountingEmbedder:
    """Deterministic 8-dim vectors from a text's hash; `seen` lists every text encoded."""

    max_seq_length = 256

    def __init__(self) -> None:
        self.seen: list[str] = []

    def get_sentence_embedding_dimension(self) -> int:
        return 8

    def encode(self, texts: list[str], **kwargs: Any) -> np.ndarray:
        self.seen.extend(texts)
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8) for t in texts]
        out = np.asarray(rows, dtype=np.float32) + 1.0
        if kwargs.get("normalize_embeddings"):
            out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out


SPACE = EmbeddingSpace(model="m", backend="torch", precision="fp32", max_seq_length=256)


def _corpus() -> list[Document]:
    return [Document(doc_id=f"d{i}", text=" ".join(f"w{i}x{j}" for j in range(50))) for i in range(6)]


def test_a_second_index_of_the_same_texts_encodes_only_what_is_new(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    whole = chunk_documents(_corpus(), enabled=False)
    first = DenseIndex(cache=cache, embedder=lambda _: embedder)
    first.load_or_build(whole, tmp_path / "a")
    assert first.encoded == len(embedder.seen) == 6 and cache.count() == 6

    # the same texts in another index folder (an ablation variant): nothing encoded
    again = DenseIndex(cache=cache, embedder=lambda _: embedder)
    again.load_or_build(whole, tmp_path / "b")
    assert again.encoded == 0 and len(embedder.seen) == 6
    assert again.matrix is not None and first.matrix is not None
    assert np.array_equal(again.matrix, first.matrix)

    # another chunking: 20-word windows are new texts, plus the whole documents already cached
    chunks = chunk_documents(_corpus(), size=20, overlap=5)
    mixed = whole[:3] + chunks
    third = DenseIndex(cache=cache, embedder=lambda _: embedder)
    third.load_or_build(mixed, tmp_path / "c")
    assert third.encoded == len(chunks) and len(embedder.seen) == 6 + len(chunks)
    assert third.matrix is not None and np.array_equal(third.matrix[:3], first.matrix[:3])

    # a resumed build of the same chunks in a fresh process: cache reopened from disk, nothing encoded
    cache.close()
    reopened = DenseIndex(cache=EmbeddingCache(tmp_path / "cache.sqlite"), embedder=lambda _: embedder)
    reopened.load_or_build(chunks, tmp_path / "d")
    assert reopened.encoded == 0 and len(embedder.seen) == 6 + len(chunks)


def test_duplicate_texts_are_encoded_once_and_spaces_do_not_mix(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    vectors, n = encode_cached(embedder, ["a", "b", "a", "c"], SPACE, cache)
    assert n == 3 and sorted(embedder.seen) == ["a", "b", "c"]
    assert np.array_equal(vectors[0], vectors[2])
    for other in (
        EmbeddingSpace(model="m", backend="onnx", precision="int8", max_seq_length=256),
        EmbeddingSpace(model="m", backend="torch", precision="fp32", max_seq_length=128),
        EmbeddingSpace(model="m", backend="torch", precision="fp32", max_seq_length=256, normalize=False),
        EmbeddingSpace(model="m2", backend="torch", precision="fp32", max_seq_length=256),
    ):
        assert other.key != SPACE.key
        _, n = encode_cached(embedder, ["a", "b"], other, cache)
        assert n == 2  # a different space never reads another's vectors
    _, n = encode_cached(embedder, ["c", "b", "a"], SPACE, cache)
    assert n == 0 and cache.count(SPACE) == 3


def test_the_space_is_in_the_index_fingerprint_and_the_sbert_version() -> None:
    chunks = chunk_documents(_corpus(), enabled=False)
    torch_space = embedding_space(None, "torch", 256)
    onnx_space = embedding_space(None, "onnx", 256)
    assert onnx_space.precision == "int8-block64" and torch_space.precision == "fp32"
    shorter = embedding_space(None, "torch", 128)
    prints = {fingerprint("dense", chunks, s.as_dict()) for s in (torch_space, onnx_space, shorter)}
    assert len(prints) == 3
    assert set(torch_space.as_dict()) == {"model", "backend", "precision", "max_seq_length", "normalize"}
    assert embedding_version("sentence-transformers/all-MiniLM-L6-v2", CountingEmbedder()) == (
        "1:all-MiniLM-L6-v2/torch-fp32-256-norm"
    )


def test_the_backend_is_recorded_and_an_unknown_one_refused() -> None:
    from ragmeter.errors import InputError
    from ragmeter.run.refs import system_ref

    ref = system_ref(
        None, spec="builtin", mode="hybrid", namespace=None, options={"embedding_backend": "onnx"}
    )
    assert ref.embedding is not None and ref.embedding["backend"] == "onnx"
    assert ref.embedding["precision"] == "int8-block64" and ref.embedding["max_seq_length"] == 256
    plain = system_ref(None, spec="builtin", mode="semantic", namespace=None, options={})
    assert plain.embedding is not None and plain.embedding["backend"] == "torch"
    assert plain.fingerprint != ref.fingerprint
    assert system_ref(None, spec="builtin", mode="fulltext", namespace=None, options={}).embedding is None
    with pytest.raises(InputError, match="unknown embedding backend 'tf'"):
        embedding_space(None, "tf")
    with pytest.raises(InputError, match="onnx embedding backend has only"):
        embedding_space("BAAI/bge-small-en-v1.5", "onnx")


def test_a_precision_is_part_of_the_space_and_each_backend_has_its_own() -> None:
    from ragmeter.errors import InputError
    from ragmeter.run.refs import system_ref

    assert embedding_space(None, "torch").precision == "fp32"
    bf16 = embedding_space(None, "torch", 256, "bf16")
    assert bf16.precision == "bf16" and bf16.key != embedding_space(None, "torch", 256).key
    assert embedding_space(None, "onnx", None, "fp32").precision == "fp32"
    with pytest.raises(
        InputError,
        match="'int8-block64' is not an embedding_precision of the torch backend; use one of fp32, bf16",
    ):
        embedding_space(None, "torch", None, "int8-block64")
    with pytest.raises(
        InputError,
        match="'bf16' is not an embedding_precision of the onnx backend; use one of int8-block64, fp32",
    ):
        embedding_space(None, "onnx", None, "bf16")
    ref = system_ref(
        None, spec="builtin", mode="semantic", namespace=None, options={"embedding_precision": "bf16"}
    )
    assert ref.embedding is not None and ref.embedding["precision"] == "bf16"
    plain = system_ref(None, spec="builtin", mode="semantic", namespace=None, options={})
    assert plain.fingerprint != ref.fingerprint


def test_a_recorded_precision_is_checked_before_a_resume_rebuilds_the_system() -> None:
    from ragmeter.errors import InputError
    from ragmeter.run.rebuild import _check_embedding
    from ragmeter.run.refs import system_ref

    ok = system_ref(
        None, spec="builtin", mode="hybrid", namespace=None, options={"embedding_precision": "bf16"}
    )
    _check_embedding(ok, source="--resume")
    bad = ok.model_copy(update={"options": {"embedding_precision": "fp16"}})
    with pytest.raises(InputError, match="'fp16' is not an embedding_precision of the torch backend") as err:
        _check_embedding(bad, source="--resume")
    assert err.value.source == "--resume"


def test_a_run_recorded_in_another_embedding_space_is_not_resumed_in_this_one() -> None:
    from ragmeter.errors import InputError
    from ragmeter.run.rebuild import _check_embedding
    from ragmeter.run.refs import system_ref

    ref = system_ref(
        None, spec="builtin", mode="hybrid", namespace=None, options={"embedding_backend": "onnx"}
    )
    _check_embedding(ref, source="--resume")  # recorded by this version: the same space
    assert ref.embedding is not None
    old = ref.model_copy(update={"embedding": {**ref.embedding, "precision": "int8"}})  # an older onnx graph
    with pytest.raises(
        InputError,
        match="encoded as all-MiniLM-L6-v2/onnx/int8/256; this ragmeter encodes "
        "all-MiniLM-L6-v2/onnx/int8-block64/256: resuming would mix two embedding spaces",
    ):
        _check_embedding(old, source="--resume")
    legacy = ref.model_copy(update={"embedding": None})  # recorded before spaces were: nothing to compare
    _check_embedding(legacy, source="--resume")
