"""A scripted, priced OpenAI-compatible model for the cost tests: it answers the built-in pipeline's
generator and the judges, and reports usage that grows with the prompt and the reply (about 4 characters a
token), so that what a run spends depends on what it sends, as with a real provider."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

from ragmeter.llm.scripted import ScriptedRequest, Step

PRICE_IN, PRICE_OUT = 2.0, 8.0  # USD per million tokens, given in the prices file (model "priced")
MODEL = "priced"


def tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def reply(req: ScriptedRequest) -> Step:
    rng = random.Random(req.user)  # the same request gets the same reply
    if "numbered passages" in req.system:  # the built-in pipeline's generator: answers of varied length
        text = "The passages say so [1]. " + "It also adds detail [2]. " * rng.randint(0, 12)
    else:  # a judge
        text = json.dumps({"reasoning": "checked " * rng.randint(1, 20), "score": rng.randint(0, 10)})
    prompt = "".join(str(m.get("content", "")) for m in req.messages)
    return Step(text=text, prompt_tokens=tokens(prompt), completion_tokens=tokens(text))


def cost_of(requests: list[ScriptedRequest]) -> float:
    """What the server billed for `requests` (every answered request), at the prices file's price."""
    total = 0.0
    for req in requests:
        step = reply(req)
        total += step.prompt_tokens * PRICE_IN + step.completion_tokens * PRICE_OUT
    return total / 1_000_000


def prices_file(folder: Path) -> Path:
    path = folder / "prices.json"
    path.write_text(json.dumps({MODEL: [PRICE_IN, PRICE_OUT]}))
    return path


def run_args(url: str, db: str, *extra: Any) -> list[str]:
    """`ragmeter run` on the 60 demo queries: built-in full-text pipeline, generator and judge both the
    priced scripted model."""
    spec = f"openai-compatible:{MODEL}@{url}"
    return [
        "run", "-d", "demo", "--mode", "fulltext", "--generator", spec, "--judge", spec,
        "--metrics", "mrr,groundedness,relevance", "--db", db, "--no-progress", "--format", "json",
        *[str(x) for x in extra],
    ]  # fmt: skip
