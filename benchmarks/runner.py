"""Runner limits (spec NFR-1): 100 queries with generation and every judge, and the store's cost per query.

1. End to end: the built-in BM25 pipeline answers through an LLM, and all eight judges grade each answer,
   every call going over real HTTP to the scripted OpenAI-compatible server (in its own process) that
   waits 1 s per call; client concurrency 32. The bound: total <= 1.1 x (calls x 1 s / 32) + 5 s.
2. Store overhead per query, SQLite and PostgreSQL: the same fast run (no LLM) with and without the
   store, (with - without) / queries; and the cost of one per-query write alone. Budget: 5 ms.

    .venv/bin/python benchmarks/runner.py [--queries 100] [--latency 1.0] [--concurrency 32]
                                          [--pg postgresql+psycopg://...]   (default: $RAGMETER_TEST_PG_URL)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from ragmeter.models import (
    Document,
    EvalConfig,
    EvalDataset,
    EvalQuery,
    MetricResult,
    QueryEvalResult,
    RetrievedDoc,
)

COUNTRIES = [
    "France", "Germany", "Italy", "Spain", "Portugal", "Austria", "Norway", "Switzerland", "Ireland", "Poland",
    "Czechia", "Greece", "Sweden", "Finland", "Denmark", "Belgium", "Netherlands", "Hungary", "Romania",
    "Bulgaria",
]  # fmt: skip


def make_dataset(n: int) -> EvalDataset:
    corpus, queries = [], []
    for i in range(n):
        country = f"{COUNTRIES[i % len(COUNTRIES)]}{i}"
        city = f"City{i}"
        corpus.append(
            Document(doc_id=f"d{i}", text=f"{city} is the capital of {country}. It lies on a river.")
        )
        queries.append(
            EvalQuery(
                query_id=f"q{i:03d}",
                question=f"What is the capital of {country}?",
                ground_truth_answer=city,
                relevant_doc_ids=[f"d{i}"],
            )
        )
    return EvalDataset(name=f"bench-{n}", queries=queries, corpus=corpus)


# ----------------------------------------------------------------------------- the scripted server process


def _payload(name: str) -> dict[str, Any]:
    if name == "retrieval_grade":
        return {"reasoning": "chunk 1 states the answer", "grade": 9}
    if name == "factuality":  # claims first, then one verification call per batch of claims
        return {"claims": ["The city is the capital of the country."]}
    if name == "factuality_verify":
        return {"verdicts": [{"claim": 1, "reasoning": "source 1 states it", "verdict": "SUPPORTED"}]}
    if name == "citation_accuracy":
        return {
            "citations": [{"id": "C1", "reasoning": "source 1 says so", "supported": True}],
            "uncited_claims": [],
        }
    payload: dict[str, Any] = {"reasoning": "clear and supported", "score": 8}
    if name == "answer_correctness":
        payload.update(disagreements=[], missing=[])
    if name == "completeness":
        payload.update(missing=[])
    return payload


def serve(latency: float) -> None:
    from ragmeter.judges.prompts import layout_name
    from ragmeter.llm.scripted import ScriptedRequest, ScriptedServer, Step

    def respond(req: ScriptedRequest) -> Step:
        name = layout_name(req.user)
        if name is not None:
            return Step(text=json.dumps(_payload(name)))
        return Step(text="The capital is the city named in the passage [1].")  # generation

    async def main() -> None:
        server = await ScriptedServer(respond, latency=latency).start()
        print(server.url, flush=True)
        while True:
            line = await asyncio.to_thread(sys.stdin.readline)
            if line.strip() == "stats" or not line:
                print(
                    json.dumps({"calls": len(server.requests), "max_in_flight": server.max_in_flight}),
                    flush=True,
                )
            if not line or line.strip() == "quit":
                break
        await server.stop()

    asyncio.run(main())


class ServerProcess:
    def __init__(self, latency: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", "--latency", str(latency)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()

    def stats(self) -> dict[str, int]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("stats\n")
        self.proc.stdin.flush()
        return dict(json.loads(self.proc.stdout.readline()))

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        self.proc.wait(timeout=10)


# ----------------------------------------------------------------------------- 1. end to end


async def end_to_end(n: int, latency: float, concurrency: int, db: str) -> dict[str, float]:
    from ragmeter.judges import JUDGES
    from ragmeter.llm import from_spec
    from ragmeter.run import arun_evaluation
    from ragmeter.systems import Pipeline

    server = ServerProcess(latency)
    try:
        dataset = make_dataset(n)
        llm = from_spec(f"openai-compatible:scripted@{server.url}", concurrency=concurrency, timeout=60)
        system = Pipeline(dataset.corpus or [], mode="fulltext", llm=llm, persist=False)
        system.build()  # index outside the timed part (it is the system's cost, not the runner's)
        config = EvalConfig(
            dataset=dataset.name,
            mode="fulltext",
            use_llm_judge=True,
            judge_model="openai-compatible:scripted",
            concurrency=concurrency,
            extra={"semantic": False},
        )
        before = server.stats()["calls"]
        t0 = time.perf_counter()
        result = await arun_evaluation(dataset, system, config, store=db, llm=llm, progress=False)
        elapsed = time.perf_counter() - t0
        stats = server.stats()
        await llm.aclose()
    finally:
        server.close()
    calls = stats["calls"] - before
    nulls = sum(s.n_null for name, s in result.aggregate.items() if name in JUDGES)
    ideal = calls * latency / concurrency
    return {
        "queries": float(result.n_queries),
        "failed": float(result.n_failed),
        "judge_nulls": float(nulls),
        "calls": float(calls),
        "max_in_flight": float(stats["max_in_flight"]),
        "elapsed_s": elapsed,
        "ideal_s": ideal,
        "bound_s": 1.1 * ideal + 5.0,
    }


# ----------------------------------------------------------------------------- 2. store overhead


class InstantSystem:
    name = "instant"

    def __init__(self, dataset: EvalDataset) -> None:
        self.hits = [(d.doc_id, 1.0 / (i + 1), d.text) for i, d in enumerate((dataset.corpus or [])[:10])]

    async def retrieve(self, question: str, k: int) -> list[tuple[str, float, str]]:
        return self.hits[:k]

    async def answer(self, question: str, contexts: list[Any]) -> str:
        return "City1 is the capital."


def run_overhead(n: int, db: str | None, repeats: int) -> float:
    """Median seconds of a fast run of n queries (with generation and lexical metrics, no LLM)."""
    from ragmeter.run import run_evaluation

    dataset = make_dataset(n)
    times = []
    for _ in range(repeats):
        config = EvalConfig(dataset=dataset.name, concurrency=16, extra={"semantic": False})
        t0 = time.perf_counter()
        run_evaluation(dataset, InstantSystem(dataset), config, store=db if db else False, progress=False)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def write_cost(db: str, n: int) -> float:
    """Median seconds of one per-query write (a realistic row: 10 retrieved docs, 25 metrics)."""
    from ragmeter.store import open_store

    store = open_store(db)
    run = store.create_run(EvalConfig())
    assert run.run_id is not None
    text = "Some retrieved passage text of a realistic length, " * 8
    times = []
    for i in range(n):
        result = QueryEvalResult(
            query_id=f"q{i}",
            question="What is the capital of France?",
            retrieved=[
                RetrievedDoc(doc_id=f"d{j}", score=1.0 / (j + 1), rank=j + 1, text=text) for j in range(10)
            ],
            answer="Paris is the capital of France [1].",
            metrics={f"m{j}": MetricResult(name=f"m{j}", value=j / 25) for j in range(25)},
            latency_ms={"retrieve": 1.0, "generate": 1000.0, "total": 2000.0},
        )
        t0 = time.perf_counter()
        store.add_query_result(run.run_id, result, position=i)
        times.append(time.perf_counter() - t0)
    store.close()
    return statistics.median(times)


def fresh_pg(base: str) -> tuple[str, str]:
    import uuid

    import psycopg
    from sqlalchemy.engine import make_url

    url = make_url(base)
    name = f"ragmeter_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(
        host=url.host,
        port=url.port,
        user=url.username,
        password=url.password,
        dbname=url.database,
        autocommit=True,
    ) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return url.set(database=name).render_as_string(hide_password=False), name


def drop_pg(base: str, name: str) -> None:
    import psycopg
    from sqlalchemy.engine import make_url

    url = make_url(base)
    with psycopg.connect(
        host=url.host,
        port=url.port,
        user=url.username,
        password=url.password,
        dbname=url.database,
        autocommit=True,
    ) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--latency", type=float, default=1.0)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--overhead-queries", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--pg", default=os.environ.get("RAGMETER_TEST_PG_URL"))
    ap.add_argument("--skip-e2e", action="store_true")
    args = ap.parse_args()
    if args.serve:
        serve(args.latency)
        return

    tmp = Path(tempfile.mkdtemp(prefix="ragmeter-bench-runner-"))
    print(f"machine: {os.cpu_count()} cores; python {sys.version.split()[0]}")
    if not args.skip_e2e:
        e2e = asyncio.run(
            end_to_end(args.queries, args.latency, args.concurrency, f"sqlite:///{tmp / 'e2e.db'}")
        )
        ok = e2e["elapsed_s"] <= e2e["bound_s"]
        print(
            f"\n[1] {e2e['queries']:.0f} queries, generation + all 8 judges, scripted server {args.latency:g} s/call, "
            f"concurrency {args.concurrency}\n"
            f"    calls {e2e['calls']:.0f} (max {e2e['max_in_flight']:.0f} in flight), failed queries "
            f"{e2e['failed']:.0f}, null judge values {e2e['judge_nulls']:.0f}\n"
            f"    total {e2e['elapsed_s']:.1f} s; ideal calls x latency / concurrency = {e2e['ideal_s']:.1f} s; "
            f"ratio {e2e['elapsed_s'] / e2e['ideal_s']:.3f}x ideal; bound 1.1 x ideal + 5 s = {e2e['bound_s']:.1f} s "
            f"-> {'PASS' if ok else 'FAIL'}"
        )

    print(
        f"\n[2] store overhead per query ({args.overhead_queries}-query runs, generation + lexical metrics, "
        f"median of {args.repeats}; budget 5 ms)"
    )
    n = args.overhead_queries
    base = run_overhead(n, None, args.repeats)
    print(f"    no store: {base * 1000 / n:.3f} ms/query")
    backends: list[tuple[str, str, str | None]] = [("SQLite (WAL)", f"sqlite:///{tmp / 'overhead.db'}", None)]
    if args.pg:
        url, name = fresh_pg(args.pg)
        backends.append(("PostgreSQL", url, name))
    else:
        print("    PostgreSQL: skipped (give --pg URL or set RAGMETER_TEST_PG_URL)")
    for label, url, pg_name in backends:
        try:
            with_store = run_overhead(n, url, args.repeats)
            per_query = (with_store - base) * 1000 / n
            write = write_cost(url, 300) * 1000
        finally:
            if pg_name is not None and args.pg:
                drop_pg(args.pg, pg_name)
        verdict = "PASS" if per_query < 5 else "FAIL"
        print(
            f"    {label}: run with store {with_store * 1000 / n:.3f} ms/query -> overhead {per_query:.3f} ms/query "
            f"({per_query / 5:.2f}x of the 5 ms budget) {verdict}; one per-query write alone: {write:.3f} ms"
        )


if __name__ == "__main__":
    main()
