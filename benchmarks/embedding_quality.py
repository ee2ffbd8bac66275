"""Quality of the ONNX int8 MiniLM against the fp32 sentence-transformers one over ALL SciFact chunks.

    PYTHONPATH=src RAGMETER_DATA_DIR=/work/shared/datasets python benchmarks/embedding_quality.py [--cache /tmp/x]

Encodes every chunk of the built-in pipeline's chunking (200 words, overlap 40) and the 300 test claims
with each backend once, saving the matrices under --cache (a second call reuses them), then prints the
cosine between the two backends' vectors of each chunk (mean, 1st percentile, min), nDCG@10 of dense
retrieval with each backend (documents ranked by their best chunk), the chunks per second measured while
encoding and the load average. The quality bar for int8: mean >= 0.999, p1 >= 0.995, |delta nDCG@10| <= 0.005.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np


def _encode(backend: str, texts: list[str]) -> tuple[np.ndarray, float]:
    if backend == "onnx-int8":
        from ragmeter.semantic.onnx import load_onnx_embedder

        model: Any = load_onnx_embedder()
    else:
        from ragmeter.semantic import load_embedder

        model = load_embedder(None)
    model.encode(texts[:8], normalize_embeddings=True)  # warm-up
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    t = time.perf_counter()
    emb = model.encode([texts[i] for i in order], batch_size=32, normalize_embeddings=True)
    secs = time.perf_counter() - t
    out = np.zeros((len(texts), 384), dtype=np.float32)
    out[np.asarray(order)] = np.asarray(emb, dtype=np.float32)
    return out, secs


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
    for backend in ("torch-fp32", "onnx-int8"):
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
    ref, new = mats["torch-fp32"][0], mats["onnx-int8"][0]
    cos = (ref * new).sum(axis=1) / (np.linalg.norm(ref, axis=1) * np.linalg.norm(new, axis=1))
    qcos = (mats["torch-fp32"][1] * mats["onnx-int8"][1]).sum(axis=1)
    mean, p1 = float(cos.mean()), float(np.percentile(cos, 1))
    n_ref = _ndcg(ds, chunks, *mats["torch-fp32"])
    n_new = _ndcg(ds, chunks, *mats["onnx-int8"])
    print(f"cosine int8 vs fp32 over {len(cos)} chunks: mean {mean:.5f}, p1 {p1:.5f}, min {cos.min():.5f}")
    print(f"cosine over the 300 queries: mean {qcos.mean():.5f}, min {qcos.min():.5f}")
    print(f"nDCG@10 dense: fp32 {n_ref:.4f}, int8 {n_new:.4f}, delta {n_new - n_ref:+.4f}")
    ok = mean >= 0.999 and p1 >= 0.995 and abs(n_new - n_ref) <= 0.005
    print(f"quality bar (mean >= 0.999, p1 >= 0.995, |delta nDCG@10| <= 0.005): {'MET' if ok else 'NOT MET'}")


if __name__ == "__main__":
    main()
