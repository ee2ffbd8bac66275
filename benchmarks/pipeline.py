"""The built-in pipeline on BEIR SciFact (5,183 abstracts, 300 test claims), end to end through the CLI.

    PYTHONPATH=src RAGMETER_DATA_DIR=/work/shared/datasets python benchmarks/pipeline.py \
        [--backend torch|onnx] [--modes fulltext,semantic,hybrid] [--save after.json] [--before before.json] \
        [--set pipeline.max_seq_length=128]

For each mode it runs, as a fresh process each time, the command it prints:

    ragmeter run -d scifact -s builtin --mode MODE --no-generation [--embedding-backend onnx] --db ... -o ...

`cold` with an empty RAGMETER_CACHE_DIR (no index, no embedding cache), then `warm` with what the cold run
left. It prints wall seconds per process, nDCG@10 from the run's own output, the chunks per second of
each cold dense build (chunks / (cold - warm) of the semantic and hybrid modes), and the load average
around each run (the machine is shared: say what it was). `--before` prints a saved result of an older checkout beside.

`--bm25-only` skips the CLI runs and times BM25 alone: ragmeter's batched `BM25Index.search` against bm25s's
own `retrieve` (numpy backend, 2 threads) on the SAME index, 300 queries, k=100, median of 5 alternating
runs, and checks that ids and scores are equal once ties are ordered by ragmeter's rule.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def _command(mode: str, backend: str, work: Path, sets: list[str]) -> list[str]:
    cmd = ["ragmeter", "run", "-d", "scifact", "-s", "builtin", "--mode", mode, "--no-generation"]
    if backend != "torch":
        cmd += ["--embedding-backend", backend]
    for item in sets:
        cmd += ["--set", item]
    return [*cmd, "--db", f"sqlite:///{work / 'runs.db'}", "-o", str(work / f"{mode}.json")]


def _run(cmd: list[str], cache: Path, data_dir: str) -> tuple[float, float, float]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "RAGMETER_CACHE_DIR": str(cache)}
    env["RAGMETER_DATA_DIR"] = data_dir
    load = os.getloadavg()[0]
    t = time.perf_counter()
    argv = [sys.executable, "-m", "ragmeter", *cmd[1:]]
    subprocess.run(argv, check=True, env=env, stdout=subprocess.DEVNULL, cwd=cache)
    return time.perf_counter() - t, load, os.getloadavg()[0]


def _ndcg(path: Path) -> float:
    data = json.loads(path.read_text())
    agg = data.get("aggregate") or data.get("metrics") or {}
    value = agg.get("ndcg@10")
    if isinstance(value, dict):  # the run JSON: {"mean": ..., "ci95": ..., ...}
        value = value["mean"] if "mean" in value else value["value"]
    return float(value)


def cli_runs(modes: list[str], backend: str, data_dir: str, sets: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"backend": backend, "sets": sets, "modes": {}}
    for mode in modes:
        cache = Path(tempfile.mkdtemp(prefix=f"ragmeter-bench-{mode}-"))
        try:
            cmd = _command(mode, backend, cache, sets)
            print("$ RAGMETER_CACHE_DIR=" + str(cache) + " " + " ".join(cmd), flush=True)
            row: dict[str, Any] = {}
            for phase in ("cold", "warm"):
                secs, before, after = _run(cmd, cache, data_dir)
                row[phase] = secs
                row[f"{phase} load"] = f"{before:.1f}->{after:.1f}"
                print(
                    f"  {mode:<9}{phase:<5}{secs:>9.1f} s   load average {before:.1f} -> {after:.1f}",
                    flush=True,
                )
            row["ndcg@10"] = _ndcg(cache / f"{mode}.json")
            # the chunks the dense index holds (--set may change the chunking, or switch dense off)
            metas = sorted((cache / "indexes").glob("*/dense-*/meta.json"))
            if metas:
                row["chunks"] = json.loads(metas[0].read_text())["n_chunks"]
                row["chunks/s"] = row["chunks"] / max(1e-9, row["cold"] - row["warm"])
            out["modes"][mode] = row
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    if "chunks/s" in out["modes"].get("semantic", {}):
        out["chunks/s (cold - warm, semantic)"] = out["modes"]["semantic"]["chunks/s"]
    return out


def bm25_peer(data_dir: str, repeats: int = 5) -> dict[str, Any]:
    import bm25s

    from ragmeter.datasets import load_dataset
    from ragmeter.datasets.chunking import chunk_documents
    from ragmeter.systems.indexes import BM25Index

    ds = load_dataset("scifact", data_dir=data_dir)
    questions = [q.question for q in ds.queries]
    index = BM25Index()
    index.load_or_build(chunk_documents(ds.corpus or []), None)
    retriever = index._retriever
    stemmer = index._modules()[1]

    def theirs() -> Any:
        tokens = bm25s.tokenize(questions, stopwords="en", stemmer=stemmer, show_progress=False)
        return retriever.retrieve(tokens, k=100, n_threads=2, backend_selection="numpy", show_progress=False)

    ours_t: list[float] = []
    theirs_t: list[float] = []
    ours = index.search(questions, 100)
    ref = theirs()
    for _ in range(repeats):
        t = time.perf_counter()
        ours = index.search(questions, 100)
        ours_t.append(time.perf_counter() - t)
        t = time.perf_counter()
        ref = theirs()
        theirs_t.append(time.perf_counter() - t)
    same = 0
    for hits, ids, scores in zip(ours, ref.documents, ref.scores, strict=True):
        pairs = sorted(zip(ids.tolist(), scores.tolist(), strict=True), key=lambda p: (-p[1], p[0]))
        expected = [(int(i), float(s)) for i, s in pairs if s > 0]
        # bm25s keeps an arbitrary member of a tie straddling its k-th place: compare scores there
        same += hits == expected or [s for _, s in hits] == [s for _, s in expected]
    return {
        "ragmeter BM25Index.search (s)": statistics.median(ours_t),
        "bm25s retrieve numpy, 2 threads (s)": statistics.median(theirs_t),
        "queries equal": f"{same}/{len(questions)}",
        "n_chunks": int(retriever.scores["num_docs"]),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--data-dir", default=os.environ.get("RAGMETER_DATA_DIR", str(REPO.parent / "shared" / "datasets"))
    )
    ap.add_argument("--backend", choices=["torch", "onnx"], default="torch")
    ap.add_argument("--modes", default="fulltext,semantic,hybrid")
    ap.add_argument("--save", help="write the results as JSON")
    ap.add_argument("--before", help="a saved result of an older checkout, printed beside")
    ap.add_argument("--bm25-only", action="store_true")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="passed to ragmeter run, e.g. pipeline.max_seq_length=128 (repeatable)",
    )
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs", flush=True)
    peer = bm25_peer(args.data_dir)
    print(f"\nBM25 over {peer['n_chunks']} chunks, 300 queries, k=100 (median of 5 alternating runs):")
    for key, value in peer.items():
        print(f"  {key:<40}{value:>10.4f}" if isinstance(value, float) else f"  {key:<40}{value:>10}")
    ratio = peer["ragmeter BM25Index.search (s)"] / peer["bm25s retrieve numpy, 2 threads (s)"]
    print(f"  ratio ragmeter / bm25s: {ratio:.2f} (target <= 1.5)")
    if args.bm25_only:
        return
    print()
    result = cli_runs(args.modes.split(","), args.backend, args.data_dir, args.set)
    result["bm25"] = peer
    before = json.loads(Path(args.before).read_text()) if args.before else {"modes": {}}
    sets = "".join(f" --set {s}" for s in args.set)
    print(f"\nSciFact, 300 test queries, --no-generation, backend {args.backend}{sets}")
    print(
        f"{'mode':<10}{'cold s':>9}{'warm s':>9}{'nDCG@10':>9}   {'before cold':>11}{'warm':>7}{'nDCG@10':>9}"
    )
    for mode, row in result["modes"].items():
        b = before["modes"].get(mode, {})
        old = (
            f"{b['cold']:>11.1f}{b['warm']:>7.1f}{b['ndcg@10']:>9.4f}" if b else f"{'-':>11}{'-':>7}{'-':>9}"
        )
        print(f"{mode:<10}{row['cold']:>9.1f}{row['warm']:>9.1f}{row['ndcg@10']:>9.4f}   {old}")
    for mode, row in result["modes"].items():
        if "chunks/s" in row:
            b = before["modes"].get(mode, {})
            was = f" (before: {b['chunks/s']:.1f})" if "chunks/s" in b else ""
            print(f"dense build in {mode}: {row['chunks']} chunks, {row['chunks/s']:.1f} chunks/s{was}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if args.save:
        Path(args.save).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
