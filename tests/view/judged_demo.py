"""A judged run of the demo (BM25 over the demo corpus, the extractive answerer) whose judges are a scripted
OpenAI-compatible server on 127.0.0.1: real HTTP, real judge parsing, real store. The scripted replies vary
by question (a deterministic hash), and one in eight questions has its answer-correctness call fail, so the
run has low and high grades, claims with verdicts, RAGChecker verdicts and nulls with reasons."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from pathlib import Path
from typing import Any

JUDGES = ["retrieval_grade", "answer_correctness", "factuality", "rc_faithfulness"]


def _h(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def responder(req: Any, salt: str = "") -> Any:
    from ragmeter.llm.scripted import Step

    text = " ".join(str(m.get("content", "")) for m in req.messages)
    user = req.user
    h = _h(salt + user.split("\n\n")[0])
    from ragmeter.judges.prompts import layout_name

    name = layout_name(user)  # the default judges share one prompt layout; RAGChecker's keep their own
    if name == "factuality" or "split texts into factual claims" in text:
        return Step(
            text=json.dumps({"claims": ["The passage names the system.", "It is an evaluation tool."]})
        )
    if "check claims against a reference" in text:
        n = max(1, len([ln for ln in user.splitlines() if ln.startswith("[")]))
        return Step(
            text=json.dumps({"verdicts": ["Entailment" if (h >> i) & 1 else "Neutral" for i in range(n)]})
        )
    if name == "factuality_verify":
        n = int(re.search(r"\((\d+) entries\)", user).group(1))  # type: ignore[union-attr]
        verdicts = [
            {
                "claim": i + 1,
                "reasoning": "The sources state it.",
                "verdict": "SUPPORTED" if (h >> i) % 3 else "NOT_SUPPORTED",
            }
            for i in range(n)
        ]
        return Step(text=json.dumps({"verdicts": verdicts}))
    if name == "answer_correctness":
        if h % 8 == 0:
            return Step(status=400, text="bad request")
        score = h % 11
        return Step(
            text=json.dumps(
                {
                    "reasoning": f"The answer matches the reference on {score} of 10 points.",
                    "disagreements": [],
                    "missing": ["the year"] if score < 8 else [],
                    "score": score,
                }
            )
        )
    if name == "retrieval_grade":
        grade = 1 + h % 10
        return Step(
            text=json.dumps({"reasoning": f"Chunk 1 covers {grade * 10}% of the question.", "grade": grade})
        )
    return Step(status=400, text="unscripted prompt")


def make_judged_demo(
    db: Path,
    n: int | None = None,
    *,
    salt: str = "",
    extra: dict[str, Any] | None = None,
    name: str | None = None,
) -> str:
    """A judged demo run of the first n questions (all 60 by default: then the viewer finds the demo's
    relevance labels, which are tied to the whole dataset's hash) in a store at db; returns its run id. `salt` changes the
    scripted grades (a second run to compare); `extra` goes into the run's config."""
    from ragmeter.datasets import demo_dataset
    from ragmeter.llm import from_spec
    from ragmeter.llm.scripted import ScriptedServer
    from ragmeter.models import EvalConfig
    from ragmeter.run.api import arun_evaluation
    from ragmeter.systems.demo import DemoFulltext

    dataset = demo_dataset()
    if n is not None:
        dataset = dataset.model_copy(update={"queries": dataset.queries[:n]})

    async def go() -> str:
        async with ScriptedServer(lambda req: responder(req, salt)) as server:
            spec = "openai-compatible:judge@" + server.url
            llm = from_spec(spec, max_retries=0, concurrency=4)
            config = EvalConfig(
                dataset="demo",
                retrieval_top_k=[1, 5, 10],
                use_llm_judge=True,
                judge_model=spec,
                metrics=JUDGES,
                mode="fulltext",
                extra={"semantic": False, **(extra or {})},
            )
            run = await arun_evaluation(
                dataset,
                DemoFulltext(),
                config,
                store=f"sqlite:///{db}",
                llm=llm,
                progress=False,
                name=name or "demo fulltext judged (scripted judge)",
            )
            await llm.aclose()
            assert run.run_id is not None
            return run.run_id

    return asyncio.run(go())


if __name__ == "__main__":
    import sys

    first = make_judged_demo(Path(sys.argv[1]))
    print(first)
    replay = {"replay": {"parent": first, "intervention": "oracle_contexts"}}
    print(
        make_judged_demo(Path(sys.argv[1]), salt="b", extra=replay, n=24, name="demo replay (scripted judge)")
    )
