"""factuality = supported claims / claims: one call extracts the answer's claims, then one call per claim
checks it against the contexts (and the ground truth, when given). If any claim cannot be checked, the
value is null: a score over the claims that happened to be checked would mislead."""

from __future__ import annotations

import asyncio
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

import ragmeter.judges.prompts as P
from ragmeter.judges.core import JudgeFailure, Reply, ask, numbered, usage_details
from ragmeter.judges.judge import Judge, JudgeInput
from ragmeter.judges.parsing import ParseFailure, parse_model
from ragmeter.judges.scales import PROPORTION
from ragmeter.llm.base import LLMClient
from ragmeter.llm.types import LLMError
from ragmeter.models import MetricResult

MAX_CLAIMS = 12
VERDICTS = ("SUPPORTED", "NOT_SUPPORTED", "CONTRADICTED")
Verdict = Literal["SUPPORTED", "NOT_SUPPORTED", "CONTRADICTED"]
_VERDICT_ALIASES = {
    "SUPPORTS": "SUPPORTED",
    "UNSUPPORTED": "NOT_SUPPORTED",
    "NOTSUPPORTED": "NOT_SUPPORTED",
    "CONTRADICTS": "CONTRADICTED",
    "CONTRADICTORY": "CONTRADICTED",
}
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


class Claims(BaseModel):
    model_config = ConfigDict(extra="ignore")

    claims: list[str]


class ClaimVerdict(BaseModel):
    model_config = ConfigDict(extra="ignore")

    reasoning: str = ""
    verdict: Verdict

    @field_validator("verdict", mode="before")
    @classmethod
    def _normalise(cls, v: Any) -> Any:
        if isinstance(v, str):
            key = re.sub(r"[\s\-]+", "_", v.strip().upper())
            return _VERDICT_ALIASES.get(key, key)
        return v


def _claims_parser(text: str) -> tuple[list[str], list[str]]:
    claims = [c.strip() for c in parse_model(Claims, text).claims if c.strip()]
    if not claims:
        raise ParseFailure("no claims were extracted from a non-empty answer")
    flags = []
    if len(claims) > MAX_CLAIMS:
        flags.append(f"{len(claims)} claims extracted; the first {MAX_CLAIMS} were checked")
        claims = claims[:MAX_CLAIMS]
    return claims, flags


def _verdict_parser(text: str) -> tuple[ClaimVerdict, list[str]]:
    return parse_model(ClaimVerdict, text), []


def invented(claims: list[str], answer: str) -> tuple[list[str], list[str]]:
    """Split extracted claims into those the answer can state and those it cannot: a claim with a number
    that the answer does not contain was invented by the extractor (small models do this), not taken from
    the answer, so it is not checked. Rephrasing and resolved pronouns are kept: only numbers are tested."""
    numbers = set(_NUMBER.findall(answer))
    kept = [c for c in claims if set(_NUMBER.findall(c)) <= numbers]
    return kept, [c for c in claims if c not in kept]


def _row(i: int, claim: str, check: Any, failures: list[str], flags: list[str]) -> dict[str, Any]:
    """One claim's row of details; a failed check adds to `failures`."""
    if isinstance(check, JudgeFailure):
        failures.append(f"claim {i}: {check.args[0]}")
    elif isinstance(check, LLMError):
        failures.append(f"claim {i}: LLM call failed: {check.reason}")
    elif isinstance(check, BaseException):
        raise check
    else:
        flags.extend(f"claim {i}: {f}" for f in check.flags)
        return {"claim": claim, "verdict": check.value.verdict, "reasoning": check.value.reasoning}
    return {"claim": claim, "verdict": None, "reasoning": ""}


async def _body(judge: Judge, inp: JudgeInput, llm: LLMClient, flags: list[str]) -> MetricResult:
    answer = inp.answer or ""
    sources = numbered(inp.contexts, flags)
    if inp.ground_truth:
        sources += f"\n[reference answer] {inp.ground_truth}"
    values = {"question": inp.question, "answer": answer}
    extracted = await ask(llm, judge.prompt, values, _claims_parser, query_id=inp.query_id)
    claims, dropped = invented(extracted.value, answer)
    if dropped:
        flags.append(f"{len(dropped)} extracted claim(s) state numbers the answer does not: not checked")
    if not claims:
        return judge.result(
            error="every extracted claim states numbers the answer does not contain",
            details={"invented_claims": dropped, "flags": flags},
        )
    verify = P.FACTUALITY_VERIFY
    checks = await asyncio.gather(
        *(
            ask(llm, verify, {"contexts": sources, "claim": c}, _verdict_parser, query_id=inp.query_id)
            for c in claims
        ),
        return_exceptions=True,
    )
    failures: list[str] = []
    rows = [
        _row(i, c, check, failures, flags) for i, (c, check) in enumerate(zip(claims, checks, strict=True), 1)
    ]
    counts = {v: sum(r["verdict"] == v for r in rows) for v in VERDICTS}
    replies = [extracted, *(c for c in checks if isinstance(c, Reply))]
    details: dict[str, Any] = {
        "claims": rows,
        "invented_claims": dropped,
        "n_claims": len(claims),
        "n_supported": counts["SUPPORTED"],
        "n_not_supported": counts["NOT_SUPPORTED"],
        "n_contradicted": counts["CONTRADICTED"],
        "flags": flags + extracted.flags,
        **usage_details(*replies),
    }
    if failures:
        error = f"{len(failures)} of {len(claims)} claims could not be checked: " + "; ".join(failures)
        return judge.result(error=error, details=details)
    return judge.result(counts["SUPPORTED"] / len(claims), details=details)


FACTUALITY = Judge(
    "factuality",
    P.FACTUALITY,
    PROPORTION,
    body=_body,
    description="supported claims / claims, per-claim verdicts against the contexts",
)
