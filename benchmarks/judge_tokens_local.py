"""Prompt tokens the local judge's server actually evaluates per judged query, before and after the shared
prefix layout, with the seconds per judged query and the agreement of the two layouts' verdicts.

    RAGMETER_DATA_DIR=/work/shared/datasets PYTHONPATH=src python benchmarks/judge_tokens_local.py \
        [--queries 10] [--k 3] [--before 732c6cb] [--threads 2] [--json OUT]

One llama.cpp server (the local judge: Qwen2.5-Coder-1.5B Q4_K_M, `ragmeter.llm.local.start_server`, two
slots as `local` runs it) serves both sides through a recording proxy on 127.0.0.1. Each side is the real
code of its version run in a child process with the `local` judge spec (its server start is pointed at the
proxy): "before" is the `--before` commit's `src/` (extracted with `git archive`), "after" this checkout's.
Each side judges the same `--queries` SciFact queries (the first ones with a relevant abstract, in file
order) with the eight default judges, one query after the other, on the same inputs as
benchmarks/judge_tokens.py (top-`--k` BM25 contexts, an answer citing [1] and [2], a one-sentence reference).

From every reply the proxy records llama.cpp's `timings`: `prompt_n` (prompt tokens the server evaluated)
and `cache_n` (prompt tokens it reused from the slot's KV cache). Reported per judged query and side: calls,
prompt tokens, evaluated tokens, reused tokens, wall seconds; and the agreement of the two sides' verdicts
over (query, judge) pairs: each value made a verdict at its scale's midpoint (value >= midpoint: pass),
Cohen's kappa with a 95% percentile bootstrap interval over queries (2,000 resamples, seed 0), and the
share of equal verdicts. The before side runs first, so the server's caches hold nothing of the after side.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from judge_tokens import before_src, make_inputs

CHILD = r"""
import asyncio, json, sys, time

import ragmeter.llm.local as local


class Proxied:
    def __init__(self, url):
        self.url, self.alive = url, True
    def stop(self):
        pass


local.start_server = lambda *a, **k: Proxied(sys.argv[2])

from ragmeter.judges import JUDGES, run_judges
from ragmeter.llm import from_spec

async def main():
    inputs = json.load(open(sys.argv[1]))
    llm = from_spec("local", concurrency=2, timeout=900)
    rows = []
    for q in inputs:
        t0 = time.perf_counter()
        res = await run_judges(list(JUDGES), question=q["question"], answer=q["answer"], contexts=q["contexts"],
                               ground_truth=q["truth"], llm=llm, relevant_rank=1, query_id=q["id"])
        rows.append({"id": q["id"], "seconds": time.perf_counter() - t0,
                     "values": {k: r.value for k, r in res.items()},
                     "reasons": {k: r.error for k, r in res.items() if r.value is None}})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    await llm.aclose()
    print(json.dumps({"judges": list(JUDGES), "rows": rows}))

asyncio.run(main())
"""


class Recorder:
    """A proxy in front of the llama.cpp server that keeps each chat reply's timings."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.rows: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        rec = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self, body: bytes | None) -> None:
                path = self.path[len("/v1") :] if self.path.startswith("/v1") else self.path
                req = urllib.request.Request(rec.upstream + path, data=body, method=self.command)
                req.add_header("Content-Type", "application/json")
                t0 = time.perf_counter()
                try:
                    with urllib.request.urlopen(req, timeout=1800) as r:
                        status, data = r.status, r.read()
                except urllib.error.HTTPError as e:
                    status, data = e.code, e.read()
                if body is not None and status == 200:
                    reply = json.loads(data)
                    t = reply.get("timings") or {}
                    with rec.lock:
                        rec.rows.append(
                            {
                                "prompt": int(reply.get("usage", {}).get("prompt_tokens", 0)),
                                "evaluated": int(t.get("prompt_n", 0)),
                                "reused": int(t.get("cache_n", 0)),
                                "seconds": time.perf_counter() - t0,
                            }
                        )
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._forward(None)

            def do_POST(self) -> None:
                self._forward(self.rfile.read(int(self.headers.get("Content-Length", 0))))

        return Handler


def run_side(src: Path, inputs: Path, proxy_url: str) -> dict[str, Any]:
    import os
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(src)}
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(inputs), proxy_url], env=env, stdout=subprocess.PIPE, check=False
    )
    if out.returncode != 0:
        raise SystemExit(f"the judges of {src} failed (exit {out.returncode})")
    info: dict[str, Any] = json.loads(out.stdout.decode().strip().splitlines()[-1])
    info["wall"] = time.perf_counter() - t0
    return info


def verdicts(side: dict[str, Any], judges: list[str], scales: dict[str, tuple[float, float]]) -> list[Any]:
    out = []
    for row in side["rows"]:
        per = []
        for j in judges:
            v = row["values"].get(j)
            lo, hi = scales[j]
            per.append(None if v is None else int(v >= (lo + hi) / 2))
        out.append(per)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=10)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--before", default="732c6cb", help="the commit whose judges are 'before'")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", dest="json_out")
    args = ap.parse_args()

    import numpy as np

    from ragmeter.judges import JUDGES
    from ragmeter.llm.local import start_server
    from ragmeter.stats.resample import bootstrap, per_resample
    from ragmeter.validity.agreement import cohen_kappa

    after = Path(__file__).resolve().parents[1] / "src"
    server = start_server(threads=args.threads, parallel=2)
    recorder = Recorder(server.url)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), recorder.handler())
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    proxy_url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    sides: dict[str, dict[str, Any]] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            inputs_path = Path(tmp) / "inputs.json"
            inputs = make_inputs(args.queries, args.k)
            inputs_path.write_text(json.dumps(inputs))
            old = before_src(args.before, Path(tmp))
            for name, src in (("before", old), ("after", after)):
                start = len(recorder.rows)
                sides[name] = run_side(src, inputs_path, proxy_url)
                sides[name]["calls"] = recorder.rows[start:]
                print(f"{name}: done in {sides[name]['wall']:.0f} s", flush=True)
    finally:
        httpd.shutdown()
        server.stop()

    n = len(inputs)
    judges = [j for j in sides["after"]["judges"] if j in sides["before"]["judges"]]
    scales = {j: JUDGES[j].scale.range for j in judges}
    print(
        f"{n} SciFact queries, top-{args.k} contexts, the {len(judges)} default judges, local judge "
        f"(Qwen2.5-Coder-1.5B Q4_K_M, llama.cpp, {args.threads} threads, 2 slots); per judged query:"
    )
    print(
        f"{'':8} {'calls':>6} {'prompt tok':>11} {'evaluated':>10} {'reused':>8} {'seconds':>8} {'nulls':>6}"
    )
    table = {}
    for name, s in sides.items():
        calls = s["calls"]
        row = {
            "calls": len(calls) / n,
            "prompt": sum(c["prompt"] for c in calls) / n,
            "evaluated": sum(c["evaluated"] for c in calls) / n,
            "reused": sum(c["reused"] for c in calls) / n,
            "seconds": sum(r["seconds"] for r in s["rows"]) / n,
            "nulls": sum(1 for r in s["rows"] for v in r["values"].values() if v is None),
        }
        table[name] = row
        print(
            f"{name:8} {row['calls']:6.1f} {row['prompt']:11.0f} {row['evaluated']:10.0f} {row['reused']:8.0f} "
            f"{row['seconds']:8.1f} {row['nulls']:6d}"
        )
    b, a = table["before"], table["after"]
    ratio = a["evaluated"] / b["evaluated"]
    print(
        f"after / before: evaluated prompt tokens {ratio:.3f}x, prompt tokens {a['prompt'] / b['prompt']:.3f}x, "
        f"seconds per judged query {a['seconds'] / b['seconds']:.3f}x"
    )
    print("acceptance (evaluated prompt tokens <= 0.5x before):", "met" if ratio <= 0.5 else "NOT met")

    vb, va = verdicts(sides["before"], judges, scales), verdicts(sides["after"], judges, scales)

    def pairs(idx: Any) -> tuple[list[int], list[int]]:
        x, y = [], []
        for i in idx:
            for p, q in zip(vb[i], va[i], strict=True):
                if p is not None and q is not None:
                    x.append(p)
                    y.append(q)
        return x, y

    x, y = pairs(range(n))
    kappa = cohen_kappa(x, y, labels=[0, 1]) if x else None
    same = sum(1 for p, q in zip(x, y, strict=True) if p == q) / len(x) if x else float("nan")
    boot = bootstrap(
        per_resample(lambda idx: cohen_kappa(*pairs(idx), labels=[0, 1]) if pairs(idx)[0] else None),
        n,
        n_resamples=2000,
        seed=0,
    )
    ci = boot.interval()
    print(
        f"verdict agreement over {len(x)} (query, judge) pairs with both values: "
        f"equal {same:.3f}, Cohen's kappa {kappa if kappa is None else round(kappa, 3)} "
        f"(95% CI {'undefined' if ci is None else f'{ci[0]:.3f} to {ci[1]:.3f}'})"
    )
    per_judge = {}
    for jx, j in enumerate(judges):
        both = [(vb[i][jx], va[i][jx]) for i in range(n) if vb[i][jx] is not None and va[i][jx] is not None]
        per_judge[j] = {"n": len(both), "equal": sum(1 for p, q in both if p == q)}
    print("equal verdicts per judge:", ", ".join(f"{j} {d['equal']}/{d['n']}" for j, d in per_judge.items()))
    assert np.isfinite(ratio)
    if args.json_out:
        Path(args.json_out).write_text(
            json.dumps(
                {
                    "table": table,
                    "ratio_evaluated": ratio,
                    "kappa": kappa,
                    "kappa_ci": ci,
                    "equal": same,
                    "per_judge": per_judge,
                    "sides": sides,
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
