"""Speed and quality of the built-in pipeline on BEIR SciFact (5,183 abstracts, 300 test claims).

    python benchmarks/pipeline.py [--data-dir DIR] [--index-dir DIR] [--keep]

Runs two fresh processes: `cold` (empty index folder: chunk, index BM25, encode the corpus, retrieve and
evaluate fulltext / semantic / hybrid) and `warm` (the same with the saved indexes). Each reports wall
times per stage and nDCG@10 / recall@100 / MRR@10 from ragmeter's own IR engine. Peers measured in the
same run: raw bm25s over whole documents (BEIR's setting), and raw sentence-transformers encoding of a
500-chunk sample against the pipeline's encoder on the same sample.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
MEASURES = ["ndcg@10", "recall@100", "mrr@10"]


def _evaluate(dataset: Any, results: list[list[Any]]) -> dict[str, float]:
    from ragmeter.ir import Qrels, Run, evaluate

    qrels = Qrels.from_dict({q.query_id: q.judgments() for q in dataset.queries})
    run = Run.from_dict(
        {q.query_id: {r.doc_id: r.score for r in rs} for q, rs in zip(dataset.queries, results, strict=True)}
    )
    return {k: round(v, 4) for k, v in evaluate(qrels, run, MEASURES).aggregate.items()}


def phase(name: str, data_dir: str | None, index_dir: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    from ragmeter.datasets import load_dataset
    from ragmeter.systems import Pipeline

    out: dict[str, Any] = {"phase": name, "stages": {}, "quality": {}}
    stages = out["stages"]
    t = time.perf_counter()
    ds = load_dataset("scifact", data_dir=data_dir)
    stages["load dataset"] = time.perf_counter() - t
    questions = [q.question for q in ds.queries]
    configs: list[tuple[str, str, frozenset[str]]] = [
        ("fulltext", "fulltext", frozenset()),
        ("semantic", "semantic", frozenset()),
        ("hybrid", "hybrid", frozenset()),
        ("fulltext, no chunking", "fulltext", frozenset({"chunking"})),
    ]
    for label, mode, disable in configs:
        p = Pipeline(ds.corpus or [], mode=mode, collection="scifact", index_dir=index_dir, disable=disable)
        t = time.perf_counter()
        p.build()
        stages[f"{label}: index"] = time.perf_counter() - t
        t = time.perf_counter()
        results = p.retrieve_batch(questions, 100)
        stages[f"{label}: retrieve 300 queries"] = time.perf_counter() - t
        out["quality"][label] = _evaluate(ds, results)
        if label == "fulltext":
            out["n_chunks"] = len(p.chunks)
    out["total_s"] = time.perf_counter() - t0
    return out


def peers(ds: Any, questions: list[str]) -> dict[str, Any]:
    """The same work done with the libraries directly, to show what the pipeline adds."""
    import bm25s
    import numpy as np
    import Stemmer

    from ragmeter.datasets.chunking import chunk_documents
    from ragmeter.systems import Retrieved
    from ragmeter.systems.indexes import DenseIndex, load_embedder

    res: dict[str, Any] = {}
    docs = ds.corpus or []
    stemmer = Stemmer.Stemmer("english")
    t = time.perf_counter()
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(
            [f"{d.title}\n{d.text}" for d in docs], stopwords="en", stemmer=stemmer, show_progress=False
        ),
        show_progress=False,
    )
    res["raw bm25s: index"] = time.perf_counter() - t
    t = time.perf_counter()
    qtok = bm25s.tokenize(questions, stopwords="en", stemmer=stemmer, show_progress=False)
    ids, scores = retriever.retrieve(qtok, k=100, show_progress=False)
    res["raw bm25s: retrieve 300 queries"] = time.perf_counter() - t
    results = [
        [Retrieved(docs[i].doc_id, float(s), "") for i, s in zip(row_i, row_s, strict=True) if s > 0]
        for row_i, row_s in zip(ids, scores, strict=True)
    ]
    res["raw bm25s quality"] = _evaluate(ds, results)

    sample = [c.indexed_text for c in chunk_documents(docs)[:500]]
    model = load_embedder(None)
    model.encode(sample[:8], show_progress_bar=False)  # warm up
    t = time.perf_counter()
    raw = model.encode(sample, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
    res["raw sentence-transformers: encode 500 chunks"] = time.perf_counter() - t
    t = time.perf_counter()
    ours = DenseIndex()._encode(sample)
    res["pipeline encoder: encode 500 chunks"] = time.perf_counter() - t
    res["encoders agree (max abs diff)"] = float(np.abs(np.asarray(raw) - ours).max())
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--data-dir", default=os.environ.get("RAGMETER_DATA_DIR", str(REPO.parent / "shared" / "datasets"))
    )
    ap.add_argument("--index-dir", default=None, help="emptied first (default: a temporary folder)")
    ap.add_argument("--keep", action="store_true", help="keep the index folder")
    ap.add_argument("--phase", choices=["cold", "warm", "peers"], help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase == "peers":
        from ragmeter.datasets import load_dataset

        ds = load_dataset("scifact", data_dir=args.data_dir)
        Path(args.out).write_text(json.dumps(peers(ds, [q.question for q in ds.queries])))
        return
    if args.phase:
        result = phase(args.phase, args.data_dir, Path(args.index_dir))
        Path(args.out).write_text(json.dumps(result))
        return

    index_dir = Path(args.index_dir or tempfile.mkdtemp(prefix="ragmeter-bench-"))
    shutil.rmtree(index_dir, ignore_errors=True)
    index_dir.mkdir(parents=True)
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; index dir {index_dir}")
    reports = []
    for name in ("cold", "warm", "peers"):
        out = index_dir / f"{name}.json"
        t = time.perf_counter()
        cmd = [
            sys.executable,
            __file__,
            "--phase",
            name,
            "--data-dir",
            args.data_dir,
            "--index-dir",
            str(index_dir),
            "--out",
            str(out),
        ]
        subprocess.run(cmd, check=True, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
        report = json.loads(out.read_text())
        report["process_wall_s"] = time.perf_counter() - t
        reports.append(report)

    cold, warm, peer = reports
    print(
        f"\nSciFact test: {cold['n_chunks']} chunks (200 words, overlap 40) from 5,183 documents, 300 queries, k=100"
    )
    print(f"\n{'stage':<44}{'cold s':>10}{'warm s':>10}")
    for stage, secs in cold["stages"].items():
        print(f"{stage:<44}{secs:>10.2f}{warm['stages'][stage]:>10.2f}")
    print(
        f"{'whole process (imports, model load incl.)':<44}{cold['process_wall_s']:>10.2f}{warm['process_wall_s']:>10.2f}"
    )
    print(f"\n{'quality (ragmeter.ir)':<28}" + "".join(f"{m:>12}" for m in MEASURES))
    for label, q in cold["quality"].items():
        print(f"{label:<28}" + "".join(f"{q[m]:>12.4f}" for m in MEASURES))
        assert q == warm["quality"][label], f"{label}: warm run differs from cold run"
    q = peer["raw bm25s quality"]
    print(f"{'raw bm25s, whole docs':<28}" + "".join(f"{q[m]:>12.4f}" for m in MEASURES))
    print("\npeers (same run):")
    for key, value in peer.items():
        if key not in ("raw bm25s quality", "process_wall_s"):
            print(f"  {key:<48}{value:>10.4g}")
    s = cold["stages"]
    print("\nratios:")
    print(
        f"  pipeline BM25 no-chunk index / raw bm25s index: {s['fulltext, no chunking: index'] / peer['raw bm25s: index']:.2f}"
    )
    print(
        "  pipeline BM25 no-chunk retrieve / raw bm25s retrieve: "
        f"{s['fulltext, no chunking: retrieve 300 queries'] / peer['raw bm25s: retrieve 300 queries']:.2f}"
    )
    print(
        "  pipeline encoder / raw sentence-transformers (500 chunks): "
        f"{peer['pipeline encoder: encode 500 chunks'] / peer['raw sentence-transformers: encode 500 chunks']:.2f}"
    )
    print(f"  warm / cold whole process: {warm['process_wall_s'] / cold['process_wall_s']:.3f}")
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    if not args.keep:
        shutil.rmtree(index_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
