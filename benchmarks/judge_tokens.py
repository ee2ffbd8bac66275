"""Prompt tokens per judged query, before and after the shared prefix layout (issue 43), billing view.

    RAGMETER_DATA_DIR=/work/shared/datasets PYTHONPATH=src python benchmarks/judge_tokens.py \
        [--queries 50] [--k 5] [--before 732c6cb] [--claims 6]

The eight default judges judge `--queries` SciFact queries (the first ones, in file order) against a scripted
OpenAI-compatible server on 127.0.0.1, once with the judges of this checkout ("after") and once with those of
the `--before` commit ("before": its `src/` extracted with `git archive` and run in a child process, so each
side is the real code of its version). Inputs are the same for both: the top `--k` BM25 contexts of the
built-in full-text pipeline, a synthetic answer citing contexts [1] and [2] (their first sentences), and a
synthetic reference (the first sentence of the query's first relevant abstract; SciFact has no answers).
The scripted model extracts `--claims` claims for factuality.

Token counts are the declared estimate (`ragmeter.llm.spend.estimate_input_tokens`: 1 token per 3
characters plus 4 per message; no judge-model tokenizer is installed here), the same for both sides. The
billing view follows OpenAI's automatic prefix caching: a request whose prompt is at least 1,024 tokens has
the longest prefix it shares with an earlier, already answered request cached, counted in 128-token steps
from 1,024; cached tokens are reported as `prompt_tokens_details.cached_tokens`, and "full-price" tokens are
the prompt tokens less the cached ones. The server answers each request after `--latency` seconds, so a
request that starts before an earlier one has been answered finds nothing cached (as on a real server).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MIN_CACHED = 1024
CACHE_STEP = 128
SCORE = {"reasoning": "The answer is clear.", "score": 7, "missing": [], "disagreements": []}


# ----------------------------------------------------------------------------------------- inputs


def first_sentence(text: str) -> str:
    text = " ".join(text.split())
    m = re.match(r"(.+?[.!?])(\s|$)", text)
    return (m.group(1) if m else text)[:300]


def make_inputs(n: int, k: int) -> list[dict[str, Any]]:
    from ragmeter.datasets import load_dataset
    from ragmeter.systems import Pipeline, aretrieve

    ds = load_dataset("scifact")
    docs = {d.doc_id: d for d in ds.corpus or []}
    pipeline = Pipeline(list(docs.values()), mode="fulltext", persist=False)

    async def build() -> list[dict[str, Any]]:
        out = []
        for q in [q for q in ds.queries if q.relevant_doc_ids][:n]:
            contexts = [c.text or "" for c in await aretrieve(pipeline, q.question, k)]
            answer = f"{first_sentence(contexts[0])} [1] {first_sentence(contexts[1])} [2]"
            reference = first_sentence(docs[q.relevant_doc_ids[0]].text)
            out.append(
                {
                    "id": q.query_id,
                    "question": q.question,
                    "contexts": contexts,
                    "answer": answer,
                    "truth": reference,
                }
            )
        return out

    return asyncio.run(build())


# ----------------------------------------------------------------------------------------- the server


def shared_chars(a: str, b: str) -> int:
    """The length of the longest common prefix of a and b."""
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


class Billing:
    """The scripted server's view: every request's tokens, and the prefix cache of answered requests."""

    def __init__(self, latency: float, claims: int) -> None:
        self.latency = latency
        self.claims = claims
        self.answered: list[tuple[float, str]] = []  # (when it was answered, its prompt text)
        self.rows: list[dict[str, int]] = []

    def cached_tokens(self, text: str, tokens: int, now: float) -> int:
        if tokens < MIN_CACHED:
            return 0
        best = 0
        for done_at, earlier in self.answered:
            if done_at > now:
                continue
            n = shared_chars(text, earlier)
            best = max(best, n)
        cached = min(tokens, best // 3)  # the declared estimate: 3 characters a token
        if cached < MIN_CACHED:
            return 0
        return MIN_CACHED + (cached - MIN_CACHED) // CACHE_STEP * CACHE_STEP

    def reply(self, req: Any) -> Any:
        from ragmeter.llm.scripted import Step
        from ragmeter.llm.spend import estimate_input_tokens

        now = time.perf_counter()
        messages = req.messages
        text = "\n".join(str(m.get("content", "")) for m in messages)
        tokens = estimate_input_tokens(messages)
        cached = self.cached_tokens(text, tokens, now)
        self.answered.append((now + self.latency, text))
        self.rows.append({"prompt": tokens, "cached": cached})
        return Step(
            text=json.dumps(payload(req, self.claims)), prompt_tokens=tokens, cache_read_tokens=cached
        )


def payload(req: Any, n_claims: int) -> dict[str, Any]:
    """A valid reply for either layout's prompts."""
    system, user = req.system, req.user
    if "\nTask: " in user:  # after: the shared layout
        task = user.rsplit("\nTask: ", 1)[1]
        if task.startswith("check claims taken from the answer"):
            listed = task.split("Claims:\n", 1)[1].split("\n\n", 1)[0].splitlines()
            return {
                "verdicts": [
                    {"claim": i, "reasoning": "The texts say so.", "verdict": "SUPPORTED"}
                    for i in range(1, len(listed) + 1)
                ]
            }
        kind = task
    else:  # before: one system text per judge
        kind = system
        if "check one claim" in system:
            return {"reasoning": "The sources say so.", "verdict": "SUPPORTED"}
    if "split" in kind and "claims" in kind:
        return {"claims": [f"Finding {chr(65 + i)} of the answer holds." for i in range(n_claims)]}
    if "cite" in kind:
        ids = re.findall(r"^(C\d+): ", user, flags=re.MULTILINE)
        return {
            "citations": [{"id": i, "reasoning": "ok", "supported": True} for i in ids],
            "uncited_claims": [],
        }
    if "grade" in kind and "retrieved" in kind:
        return {"reasoning": "Text 1 states it.", "grade": 8}
    return SCORE


# ----------------------------------------------------------------------------------------- one side


CHILD = r"""
import asyncio, json, sys
from ragmeter.judges import JUDGES, run_judges
from ragmeter.llm import from_spec

async def main():
    inputs = json.load(open(sys.argv[1]))
    llm = from_spec("openai-compatible:bench@" + sys.argv[2], concurrency=8)
    errors = 0
    for q in inputs:
        res = await run_judges(list(JUDGES), question=q["question"], answer=q["answer"], contexts=q["contexts"],
                               ground_truth=q["truth"], llm=llm, relevant_rank=1, query_id=q["id"])
        errors += sum(1 for r in res.values() if r.value is None)
    await llm.aclose()
    print(json.dumps({"judges": list(JUDGES), "null_values": errors}))

asyncio.run(main())
"""


async def run_side(src: Path, inputs: Path, latency: float, claims: int) -> dict[str, Any]:
    from ragmeter.llm.scripted import ScriptedServer

    billing = Billing(latency, claims)
    async with ScriptedServer(billing.reply, latency=latency) as srv:
        env = {**os.environ, "PYTHONPATH": str(src)}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", CHILD, str(inputs), srv.url, env=env, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"the judges of {src} failed (exit {proc.returncode})")
    info = json.loads(out.decode().strip().splitlines()[-1])
    prompt = sum(r["prompt"] for r in billing.rows)
    cached = sum(r["cached"] for r in billing.rows)
    return {**info, "calls": len(billing.rows), "prompt": prompt, "cached": cached, "full": prompt - cached}


def before_src(commit: str, into: Path) -> Path:
    root = Path(__file__).resolve().parents[1]
    archive = subprocess.run(
        ["git", "-C", str(root), "archive", commit, "src"], check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into / "src"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--before", default="732c6cb", help="the commit whose judges are 'before'")
    ap.add_argument("--claims", type=int, default=6)
    ap.add_argument("--latency", type=float, default=0.05)
    args = ap.parse_args()
    after = Path(__file__).resolve().parents[1] / "src"
    with tempfile.TemporaryDirectory() as tmp:
        inputs_path = Path(tmp) / "inputs.json"
        inputs = make_inputs(args.queries, args.k)
        inputs_path.write_text(json.dumps(inputs))
        old = before_src(args.before, Path(tmp))
        sides = {}
        for name, src in (("before", old), ("after", after)):
            sides[name] = asyncio.run(run_side(src, inputs_path, args.latency, args.claims))
        shutil.rmtree(old, ignore_errors=True)
    n = len(inputs)
    ctx_chars = sum(len(" ".join(c.split())) for q in inputs for c in q["contexts"]) / n
    print(
        f"{n} SciFact queries, top-{args.k} contexts ({ctx_chars:.0f} characters a query), the 8 default judges, "
        f"{args.claims} claims per answer; tokens: the declared estimate (3 characters a token)"
    )
    print(
        f"{'':8} {'calls/q':>8} {'prompt tok/q':>13} {'cached/q':>9} {'full-price/q':>13} {'null values':>12}"
    )
    for name, s in sides.items():
        print(
            f"{name:8} {s['calls'] / n:8.1f} {s['prompt'] / n:13.0f} {s['cached'] / n:9.0f} "
            f"{s['full'] / n:13.0f} {s['null_values']:12d}"
        )
    b, a = sides["before"], sides["after"]
    print(
        f"after / before: full-price prompt tokens {a['full'] / b['full']:.3f}x "
        f"(vs before's prompt tokens without any caching: {a['full'] / b['prompt']:.3f}x); "
        f"all prompt tokens {a['prompt'] / b['prompt']:.3f}x; calls {a['calls'] / b['calls']:.3f}x"
    )
    print("acceptance (full-price <= 0.4x before):", "met" if a["full"] <= 0.4 * b["full"] else "NOT met")
    assert math.isfinite(a["full"] / b["full"])


if __name__ == "__main__":
    main()
