"""Quality of the ONNX int8 MiniLM against the fp32 sentence-transformers one over ALL SciFact chunks.

    PYTHONPATH=src RAGMETER_DATA_DIR=/work/shared/datasets python benchmarks/embedding_quality.py [--cache /tmp/x] \
        [--variants torch-fp32,onnx-int8,onnx-int8-128]

Encodes every chunk of the built-in pipeline's chunking (200 words, overlap 40) and the 300 test claims
with each backend once, saving the matrices under --cache (a second call reuses them), then prints the
cosine between the two backends' vectors of each chunk (mean, 1st percentile, min), nDCG@10 of dense
retrieval with each backend (documents ranked by their best chunk), the chunks per second measured while
encoding and the load average. The quality bar for int8: mean >= 0.999, p1 >= 0.995, |delta nDCG@10| <= 0.005.
A variant named `...-128` (or any `-N`) encodes with that maximum sequence length instead of 256: a
faster option whose cost in quality is its nDCG@10 beside the reference's.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np


def _encode(variant: str, texts: list[str]) -> tuple[np.ndarray, float]:
    backend, length = _split(variant)
    if backend == "onnx-int8":
        from ragmeter.semantic.onnx import load_onnx_embedder

        model: Any = load_onnx_embedder(max_seq_length=length)
    else:
        from ragmeter.semantic import load_embedder

        model = load_embedder(None)
        model.max_seq_length = length
    model.encode(texts[:8], normalize_embeddings=True)  # warm-up
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    t = time.perf_counter()
    emb = model.encode([texts[i] for i in order], batch_size=32, normalize_embeddings=True)
    secs = time.perf_counter() - t
    out = np.zeros((len(texts), 384), dtype=np.float32)
    out[np.asarray(order)] = np.asarray(emb, dtype=np.float32)
    return out, secs


def _split(variant: str) -> tuple[str, int]:
    """("onnx-int8", 128) from "onnx-int8-128"; the length is 256 when not given."""
    parts = variant.split("-")
    if len(parts) == 3 and parts[2].isdigit():
        return f"{parts[0]}-{parts[1]}", int(parts[2])
    return variant, 256


def _ndcg(ds: Any, chunks: Any, cmat: np.ndarray, qmat: np.ndarray) -> float:
    from ragmeter.ir import Qrels, Run, evaluate

    doc_of = np.array([c.doc_id for c in chunks])
    run: dict[str, dict[str, float]] = {}
    for q, row in zip(ds.queries, qmat @ cmat.T, strict=True):
        best: dict[str, float] = {}
        for i in np.argsort(-row)[:2000]:
            d = str(doc_of[i])
            if d not in best:
                best[d] = float(row[i])
            if len(best) == 100:
                break
        run[q.query_id] = best
    qrels = Qrels.from_dict({q.query_id: q.judgments() for q in ds.queries})
    return float(evaluate(qrels, Run.from_dict(run), ["ndcg@10"]).aggregate["ndcg@10"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", default="/tmp/ragmeter-embedding-quality")
    ap.add_argument("--variants", default="torch-fp32,onnx-int8", help="the first is the reference")
    args = ap.parse_args()
    from ragmeter.datasets import load_dataset
    from ragmeter.datasets.chunking import chunk_documents

    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    ds = load_dataset("scifact")
    chunks = chunk_documents(ds.corpus or [], size=200, overlap=40)
    texts = [c.indexed_text for c in chunks]
    questions = [q.question for q in ds.queries]
    mats: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    variants = args.variants.split(",")
    for backend in variants:
        cfile, qfile, info = (cache / f"{backend}.{n}" for n in ("chunks.npy", "queries.npy", "json"))
        if not info.exists():
            load = os.getloadavg()[0]
            cmat, secs = _encode(backend, texts)
            qmat, _ = _encode(backend, questions)
            np.save(cfile, cmat)
            np.save(qfile, qmat)
            meta = {"seconds": secs, "load_before": load, "load_after": os.getloadavg()[0]}
            info.write_text(json.dumps(meta))
        meta = json.loads(info.read_text())
        mats[backend] = (np.load(cfile), np.load(qfile))
        print(
            f"{backend:<11} {len(texts)} chunks in {meta['seconds']:.1f} s = "
            f"{len(texts) / meta['seconds']:.1f} chunks/s (load average {meta['load_before']:.2f} -> "
            f"{meta['load_after']:.2f} on {os.cpu_count()} CPUs)"
        )
    reference = variants[0]
    ref, qref = mats[reference]
    n_ref = _ndcg(ds, chunks, ref, qref)
    print(f"nDCG@10 dense, {reference}: {n_ref:.4f}")
    for name in variants[1:]:
        new, qnew = mats[name]
        cos = (ref * new).sum(axis=1) / (np.linalg.norm(ref, axis=1) * np.linalg.norm(new, axis=1))
        qcos = (qref * qnew).sum(axis=1)
        mean, p1 = float(cos.mean()), float(np.percentile(cos, 1))
        n_new = _ndcg(ds, chunks, new, qnew)
        print(f"{name} vs {reference}:")
        print(f"  cosine over {len(cos)} chunks: mean {mean:.5f}, p1 {p1:.5f}, min {cos.min():.5f}")
        print(f"  cosine over the {len(qcos)} queries: mean {qcos.mean():.5f}, min {qcos.min():.5f}")
        print(f"  nDCG@10 dense: {n_new:.4f}, delta {n_new - n_ref:+.4f}")
        ok = mean >= 0.999 and p1 >= 0.995 and abs(n_new - n_ref) <= 0.005
        verdict = "MET" if ok else "NOT MET"
        print(f"  quality bar (mean >= 0.999, p1 >= 0.995, |delta nDCG@10| <= 0.005): {verdict}")


if __name__ == "__main__":
    main()
