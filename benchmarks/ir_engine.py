"""IR engine benchmark: ragmeter vs pytrec_eval vs ranx (vs ir_measures), side by side, one process each.

    python benchmarks/ir_engine.py --queries 10000 100000 --pairs 3

For each Q, a seeded workload (Q queries x 100 retrieved docs, graded qrels with 1-20 relevant per
query, 5% of queries with none, ~30% of queries with tied scores) is written as TREC files, then each
library runs in a fresh process: files -> structures ("parse"), structures -> six measures ("compute":
ndcg@10, map, map@100, recall@100, p@10, mrr, with means), and the peak RSS of the whole process. ranx's
numba code is compiled once before any timing (its on-disk cache), so its numbers are warm.
ragmeter also times bpref, infAP and judged@10 on the same arrays, and each measure alone.
Then the whole `ragmeter eval` command against the same job written with pytrec_eval (interpreter start,
imports, parsing, measures, JSON out), in alternating pairs: wall time and peak RSS of each process, the
ratio of each pair and their median; and `import ragmeter` alone.
Needs: pytrec-eval-terrier; ranx and ir-measures are optional (`pip install ragmeter[bench]`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

SIX = ["ndcg@10", "map", "map@100", "recall@100", "precision@10", "mrr"]
PYTREC_SIX = {"ndcg_cut.10", "map", "map_cut.100", "recall.100", "P.10", "recip_rank"}
RANX_SIX = ["ndcg@10", "map", "map@100", "recall@100", "precision@10", "mrr"]


def make_workload(q: int, seed: int, out: Path) -> tuple[Path, Path]:
    qrels_path, run_path = out / f"w{q}_{seed}.qrels", out / f"w{q}_{seed}.run"
    if qrels_path.exists() and run_path.exists():
        return qrels_path, run_path
    rng = np.random.default_rng(seed)
    depth = 100
    base = rng.integers(0, 10_000_000, size=q)
    stride = rng.choice([7919, 104729, 1299709], size=q)
    docs = (base[:, None] + np.arange(depth)[None, :] * stride[:, None]) % 10_000_000
    raw = np.sort(rng.gamma(2.0, 3.0, size=(q, depth)), axis=1)[:, ::-1]
    tied = rng.random(q) < 0.3
    scores = np.where(tied[:, None], np.round(raw, 1), np.round(raw, 4))
    n_rel = rng.integers(1, 21, size=q)
    none = rng.random(q) < 0.05
    with open(run_path, "w") as fr, open(qrels_path, "w") as fq:
        for i in range(q):
            qid = f"q{i:07d}"
            d = docs[i]
            s = scores[i]
            fr.write("".join(f"{qid} Q0 D{d[j]:07d} {j + 1} {s[j]:.4f} bench\n" for j in range(depth)))
            # relevant: some retrieved (biased to the top), some not retrieved
            k = int(n_rel[i])
            picks = np.unique(np.minimum(rng.geometric(0.08, size=k) - 1, depth - 1))
            lines = [f"{qid} 0 D{d[j]:07d} {0 if none[i] else int(rng.integers(1, 4))}\n" for j in picks]
            lines += [
                f"{qid} 0 X{i:07d}_{j} {0 if none[i] else int(rng.integers(1, 4))}\n"
                for j in range(k - len(picks))
            ]
            lines += [
                f"{qid} 0 D{d[j]:07d} 0\n" for j in range(depth - 5, depth) if j not in set(picks.tolist())
            ]
            fq.write("".join(lines))
    return qrels_path, run_path


RAGMETER_JOB = """
import resource, time, json, sys
t0 = time.perf_counter(); c0 = time.process_time()
import ragmeter
from ragmeter.ir import Qrels, Run, evaluate
t_import = time.perf_counter() - t0
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter(); c0 = time.process_time()
qrels = Qrels.from_trec(sys.argv[1]); run = Run.from_trec(sys.argv[2])
t_load = time.perf_counter() - t0; c_load = time.process_time() - c0
t0 = time.perf_counter(); c0 = time.process_time()
res = evaluate(qrels, run, SIX, no_relevant="zero", missing="ignore")
agg = res.aggregate
t_compute = time.perf_counter() - t0; c_compute = time.process_time() - c0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
alone = {}
for m in SIX + ["bpref", "infap", "judged@10"]:
    t0 = time.perf_counter(); c0 = time.process_time()
    evaluate(qrels, run, [m], no_relevant="zero", missing="ignore").aggregate
    alone[m] = time.perf_counter() - t0
t0 = time.perf_counter(); c0 = time.process_time()
evaluate(qrels, run, SIX + ["bpref", "infap", "judged@10"], no_relevant="zero", missing="ignore").aggregate
t_nine = time.perf_counter() - t0
print(json.dumps({"import": t_import, "load": t_load, "compute": t_compute, "load_cpu": c_load, "compute_cpu": c_compute, "extra_mb": (peak - base) / 1024,
                  "peak_mb": peak / 1024, "means": agg, "alone": alone, "nine": t_nine}))
"""

PYTREC_JOB = """
import resource, time, json, sys
t0 = time.perf_counter(); c0 = time.process_time()
import pytrec_eval
t_import = time.perf_counter() - t0
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter(); c0 = time.process_time()
with open(sys.argv[1]) as f: qrels = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f: run = pytrec_eval.parse_run(f)
t_load = time.perf_counter() - t0; c_load = time.process_time() - c0
t0 = time.perf_counter(); c0 = time.process_time()
ev = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_SIX)
per = ev.evaluate(run)
names = {"ndcg@10": "ndcg_cut_10", "map": "map", "map@100": "map_cut_100", "recall@100": "recall_100",
         "precision@10": "P_10", "mrr": "recip_rank"}
agg = {k: sum(v[t] for v in per.values()) / len(per) for k, t in names.items()}
t_compute = time.perf_counter() - t0; c_compute = time.process_time() - c0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"import": t_import, "load": t_load, "compute": t_compute, "load_cpu": c_load, "compute_cpu": c_compute, "extra_mb": (peak - base) / 1024,
                  "peak_mb": peak / 1024, "means": agg}))
"""

IR_MEASURES_JOB = """
import resource, time, json, sys
t0 = time.perf_counter(); c0 = time.process_time()
import ir_measures
from ir_measures import nDCG, AP, R, P, RR
t_import = time.perf_counter() - t0
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter(); c0 = time.process_time()
qrels = list(ir_measures.read_trec_qrels(sys.argv[1])); run = list(ir_measures.read_trec_run(sys.argv[2]))
t_load = time.perf_counter() - t0; c_load = time.process_time() - c0
t0 = time.perf_counter(); c0 = time.process_time()
ms = [nDCG@10, AP, AP@100, R@100, P@10, RR]
agg = ir_measures.calc_aggregate(ms, qrels, run)
t_compute = time.perf_counter() - t0; c_compute = time.process_time() - c0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
names = dict(zip(map(str, ms), SIX))
print(json.dumps({"import": t_import, "load": t_load, "compute": t_compute, "load_cpu": c_load, "compute_cpu": c_compute, "extra_mb": (peak - base) / 1024,
                  "peak_mb": peak / 1024, "means": {names[str(k)]: float(v) for k, v in agg.items()}}))
"""

RANX_JOB = """
import resource, time, json, sys
t0 = time.perf_counter(); c0 = time.process_time()
from ranx import Qrels, Run, evaluate
t_import = time.perf_counter() - t0
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter(); c0 = time.process_time()
qrels = Qrels.from_file(sys.argv[1], kind="trec"); run = Run.from_file(sys.argv[2], kind="trec")
t_load = time.perf_counter() - t0; c_load = time.process_time() - c0
t0 = time.perf_counter(); c0 = time.process_time()
agg = evaluate(qrels, run, RANX_SIX, make_comparable=True)
t_compute = time.perf_counter() - t0; c_compute = time.process_time() - c0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
# the numba kernels alone, on ranx's typed lists (already compiled and converted above)
from ranx.meta.evaluate import extract_metric_and_params
from ranx.metrics import metric_switch
tq, tr = qrels.to_typed_list(), run.make_comparable(qrels).to_typed_list()
t0 = time.perf_counter(); c0 = time.process_time()
for metric in RANX_SIX:
    m, k, rel_lvl = extract_metric_and_params(metric)
    metric_switch(m)(tq, tr, k, rel_lvl)
t_kernels = time.perf_counter() - t0
print(json.dumps({"import": t_import, "load": t_load, "compute": t_compute, "load_cpu": c_load, "compute_cpu": c_compute, "extra_mb": (peak - base) / 1024,
                  "peak_mb": peak / 1024, "kernels": t_kernels, "means": {k: float(v) for k, v in agg.items()}}))
"""

PYTREC_CLI_JOB = """
import sys, json, pytrec_eval
with open(sys.argv[1]) as f: qrels = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f: run = pytrec_eval.parse_run(f)
per = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_SIX).evaluate(run)
names = ["ndcg_cut_10", "map", "map_cut_100", "recall_100", "P_10", "recip_rank"]
print(json.dumps({"aggregate": {t: sum(v[t] for v in per.values()) / len(per) for t in names}}))
"""


def run_job(code: str, *args: str) -> dict[str, float]:
    prelude = f"SIX = {SIX!r}\nPYTREC_SIX = {PYTREC_SIX!r}\nRANX_SIX = {RANX_SIX!r}\n"
    out = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def timed(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one process, measured by a fresh parent that waits for it alone."""
    probe = (
        "import resource, subprocess, sys, time; t = time.perf_counter(); "
        "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True); "
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)"
    )
    out = subprocess.run([sys.executable, "-c", probe, *cmd], capture_output=True, text=True, check=True)
    secs, mb = out.stdout.split()
    return float(secs), float(mb)


def have(module: str) -> bool:
    return subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode == 0


def phases(nq: int, qrels: Path, run: Path, with_ranx: bool, with_irm: bool) -> None:
    results = {"ragmeter": run_job(RAGMETER_JOB, str(qrels), str(run))}
    results["pytrec_eval"] = run_job(PYTREC_JOB, str(qrels), str(run))
    if with_ranx:
        results["ranx"] = run_job(RANX_JOB, str(qrels), str(run))
    if with_irm:
        results["ir_measures"] = run_job(IR_MEASURES_JOB, str(qrels), str(run))
    print(
        f"{'library':<12} {'import s':>9} {'parse s':>8} {'compute s':>10} {'parse+compute':>14} {'peak MB':>8}"
        f" {'parse cpu s':>12} {'compute cpu s':>14}"
    )
    for name, r in results.items():
        print(
            f"{name:<12} {r['import']:>9.3f} {r['load']:>8.3f} {r['compute']:>10.3f} "
            f"{r['load'] + r['compute']:>14.3f} {r['peak_mb']:>8.0f} {r['load_cpu']:>12.3f} {r['compute_cpu']:>14.3f}"
        )
    print("(cpu s: user + system time of all the process's threads: what a phase costs whatever the load)")
    ours = results["ragmeter"]
    for name, r in results.items():
        if name == "ragmeter":
            continue
        diff = max(abs(ours["means"][m] - r["means"][m]) for m in SIX)
        print(
            f"{name} / ragmeter: parse {r['load'] / ours['load']:.1f}x, compute {r['compute'] / ours['compute']:.1f}x, "
            f"parse+compute {(r['load'] + r['compute']) / (ours['load'] + ours['compute']):.1f}x, "
            f"peak RSS {r['peak_mb'] / ours['peak_mb']:.1f}x; max |mean difference| {diff:.1e}"
        )
    if with_ranx:
        rx = results["ranx"]
        print(
            f"ranx numba kernels alone (typed lists ready): {rx['kernels']:.3f} s vs ragmeter evaluate "
            f"{ours['compute']:.3f} s (doc matching included)"
        )
    alone = " ".join(f"{m} {t:.3f}" for m, t in ours["alone"].items())
    print(f"ragmeter evaluate, one measure per call (s): {alone}; all nine in one call: {ours['nine']:.3f}")


def whole_process(nq: int, qrels: Path, run: Path, pairs: int) -> None:
    ragmeter_bin = str(Path(sys.executable).with_name("ragmeter"))
    ours_cmd = [ragmeter_bin, "eval", str(qrels), str(run), "-m", ",".join(SIX), "--format", "json"]
    prelude = f"PYTREC_SIX = {PYTREC_SIX!r}\n"
    pt_cmd = [sys.executable, "-c", prelude + textwrap.dedent(PYTREC_CLI_JOB), str(qrels), str(run)]
    print(
        f"\n== whole process at Q = {nq:,}: `ragmeter eval` vs the pytrec_eval script, {pairs} alternating pairs"
        f" (load average {os.getloadavg()[0]:.1f})"
    )
    print(
        f"{'pair':<5} {'ragmeter s':>10} {'pytrec s':>9} {'ratio':>6} {'ragmeter MB':>11} {'pytrec MB':>9} {'ratio':>6}"
    )
    ratios, mem = [], []
    for i in range(pairs):
        order = [("ours", ours_cmd), ("pt", pt_cmd)] if i % 2 == 0 else [("pt", pt_cmd), ("ours", ours_cmd)]
        got = {k: timed(c) for k, c in order}
        (to, mo), (tp, mp) = got["ours"], got["pt"]
        ratios.append(to / tp)
        mem.append(mo / mp)
        print(f"{i + 1:<5} {to:>10.3f} {tp:>9.3f} {to / tp:>6.3f} {mo:>11.0f} {mp:>9.0f} {mo / mp:>6.3f}")
    if ratios:
        print(
            f"median ratio ragmeter / pytrec_eval: wall {statistics.median(ratios):.3f}, "
            f"peak RSS {statistics.median(mem):.3f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--pairs", type=int, default=3, help="alternating whole-process pairs at each Q")
    ap.add_argument("--ir-measures-max", type=int, default=10_000, help="largest Q that ir_measures runs")
    ap.add_argument(
        "--ranx-max", type=int, default=100_000, help="largest Q that ranx runs (its parse is slow)"
    )
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "ragmeter-bench")
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    with_ranx, with_irm = have("ranx"), have("ir_measures")
    if with_ranx:  # numba compiles on first use (~40 s) and caches on disk: warm it outside the timings
        q, r = make_workload(200, 1, args.workdir)
        run_job(RANX_JOB, str(q), str(r))
    print(
        f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; python {sys.version.split()[0]}"
    )
    for nq in args.queries:
        t0 = time.perf_counter()
        qrels, run = make_workload(nq, args.seed, args.workdir)
        print(
            f"\n== Q = {nq:,} x 100 ({run.stat().st_size / 1e6:.0f} MB run; workload {time.perf_counter() - t0:.1f} s;"
            f" load average {os.getloadavg()[0]:.1f})"
        )
        phases(nq, qrels, run, with_ranx and nq <= args.ranx_max, with_irm and nq <= args.ir_measures_max)
        whole_process(nq, qrels, run, args.pairs)
    t_imp = min(timed([sys.executable, "-c", "import ragmeter"])[0] for _ in range(5))
    t_py = min(timed([sys.executable, "-c", "pass"])[0] for _ in range(5))
    print(f"\nimport ragmeter: {t_imp - t_py:.3f} s over a bare interpreter ({t_imp:.3f} s process)")


if __name__ == "__main__":
    main()
