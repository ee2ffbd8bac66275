"""Judge loop overhead: ragmeter's judge vs a bare `openai.AsyncOpenAI` behind an equal semaphore.

    PYTHONPATH=src python benchmarks/judge_throughput.py [--calls 200] [--concurrency 32] [--latency 0.2] [--repeats 5]

Both send `--calls` retrieval-grade requests to the same scripted OpenAI-compatible server, which runs in
its own process and answers each after `--latency` seconds. ragmeter: `retrieval_grade` through the
client of `from_spec` (prompt building, JSON parsing, usage and latency accounting, concurrency limit),
wrapped as the run loop wraps it (`MeteredLLM`, each judgment inside its own per-query `query_usage`).
Bare: the same messages with `AsyncOpenAI.chat.completions.create` behind `asyncio.Semaphore(concurrency)`
and a `json.loads` of the reply. Start-up (imports, first connection) is excluded with one warm-up call
each; the two alternate, `--repeats` runs each, and the ratio is of the medians. Target: <= 1.05.
Wall time on a shared machine is noisy, so the CPU seconds this (client) process spent in each run are
printed too: that is the loop's own cost, which the server's process and other load do not inflate.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import subprocess
import sys
import time
from typing import Any

from ragmeter.judges import retrieval_grade
from ragmeter.llm import from_spec
from ragmeter.llm.meter import MeteredLLM, query_usage

REPLY = json.dumps({"reasoning": "Chunk 1 states the expected answer.", "grade": 9})


def start_server(latency: float) -> tuple[subprocess.Popen[str], str]:
    """The scripted server in its own process, as a real server would be: its CPU is not ours."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragmeter.llm.scripted", "--text", REPLY, "--latency", str(latency)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def _case(i: int) -> tuple[str, str, list[str]]:
    return f"question {i}?", f"answer {i}", [f"chunk {i}a", f"chunk {i}b"]


async def ours(llm: Any, calls: int) -> int:
    judge = MeteredLLM(llm, "judge")  # as the run loop holds it: usage counted per query

    async def one(i: int) -> float | None:
        q, a, c = _case(i)
        with query_usage() as usage:
            result = await retrieval_grade(q, a, c, llm=judge, relevant_rank=1, query_id=str(i))
        assert usage["judge"]["retrieval_grade"]["calls"] == 1
        return result.value

    values = await asyncio.gather(*(one(i) for i in range(calls)))
    return sum(v == 9.0 for v in values)


async def bare(client: Any, messages: list[list[dict[str, str]]], concurrency: int) -> int:
    sem = asyncio.Semaphore(concurrency)

    async def one(msgs: list[dict[str, str]]) -> float:
        async with sem:
            response = await client.chat.completions.create(
                model="scripted",
                messages=msgs,
                temperature=0.0,
                max_tokens=512,
                response_format={"type": "json_object"},
            )
        return float(json.loads(response.choices[0].message.content or "{}")["grade"])

    grades = await asyncio.gather(*(one(m) for m in messages))
    return sum(g == 9.0 for g in grades)


def _messages(calls: int) -> list[list[dict[str, str]]]:
    """The exact messages ragmeter's judge sends (its own prompt and values), so both send the same bytes."""
    from ragmeter.judges.judge import JudgeInput
    from ragmeter.judges.retrieval import RETRIEVAL_GRADE

    judge: Any = RETRIEVAL_GRADE
    out = []
    for q, a, c in map(_case, range(calls)):
        values = judge.values(JudgeInput(q, None, c, a, 1, None), [])
        out.append(judge.prompt.messages(**values))
    return out


async def main(calls: int, concurrency: int, latency: float, repeats: int) -> None:
    import openai

    proc, url = start_server(latency)
    try:
        llm = from_spec(f"openai-compatible:scripted@{url}", concurrency=concurrency)
        base = url if url.rstrip("/").endswith("/v1") else f"{url}/v1"
        client = openai.AsyncOpenAI(base_url=base, api_key="none", max_retries=0)
        messages = _messages(calls)
        assert await ours(llm, 1) == 1 and await bare(client, messages[:1], concurrency) == 1  # warm-up
        times: dict[str, list[float]] = {"ragmeter": [], "bare": []}
        cpu: dict[str, list[float]] = {"ragmeter": [], "bare": []}
        for _ in range(repeats):
            for name in ("ragmeter", "bare"):
                t, c = time.perf_counter(), time.process_time()
                ok = await (ours(llm, calls) if name == "ragmeter" else bare(client, messages, concurrency))
                times[name].append(time.perf_counter() - t)
                cpu[name].append(time.process_time() - c)
                assert ok == calls, f"{name}: {ok}/{calls} graded"
        await llm.aclose()
        await client.close()
    finally:
        proc.terminate()
        proc.wait()
    med = {k: statistics.median(v) for k, v in times.items()}
    floor = math.ceil(calls / concurrency) * latency
    print(
        f"calls={calls} concurrency={concurrency} server latency={latency:g}s (own process); floor {floor:.2f} s"
    )
    for name, runs in times.items():
        print(
            f"  {name:<9} median {med[name]:.3f} s  runs "
            + ", ".join(f"{r:.3f}" for r in runs)
            + f"  client CPU median {statistics.median(cpu[name]) * 1000 / calls:.2f} ms/call"
        )
    ratio = med["ragmeter"] / med["bare"]
    cpu_ratio = statistics.median(cpu["ragmeter"]) / statistics.median(cpu["bare"])
    print(f"ratio ragmeter / bare AsyncOpenAI (medians of {repeats} alternating runs): {ratio:.3f}")
    print(f"client CPU ratio ragmeter / bare (medians): {cpu_ratio:.3f}")
    print(f"load average (1 min) at the end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"target: ratio <= 1.05 -> {'PASS' if ratio <= 1.05 else 'FAIL'}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    asyncio.run(main(args.calls, args.concurrency, args.latency, args.repeats))
