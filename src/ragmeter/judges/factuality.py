"""factuality = supported claims / claims: one call extracts the answer's claims, then the claims are checked
against the contexts (and the ground truth, when given) in batches of FACTUALITY_BATCH claims, one call a
batch. Each batch fails on its own: a batch whose call or reply is unusable leaves only its claims without a
verdict, each with the reason. If any claim cannot be checked, the value is null: a score over the claims
that happened to be checked would mislead."""

from __future__ import annotations

import asyncio
import math
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

import ragmeter.judges.prompts as P
from ragmeter.errors import InputError
from ragmeter.judges.core import JudgeFailure, Reply, ask, usage_details
from ragmeter.judges.judge import Judge, JudgeInput, layout_values
from ragmeter.judges.parsing import ParseFailure, parse_model
from ragmeter.judges.scales import PROPORTION
from ragmeter.llm.base import LLMClient
from ragmeter.llm.types import LLMError
from ragmeter.models import MetricResult

MAX_CLAIMS = 12
# Claims checked per call: the run's judge_options.factuality_batch, else this; RAGMETER_FACTUALITY_BATCH
# overrides both (1 = one call per claim).
FACTUALITY_BATCH = 5
BATCH_ENV = "RAGMETER_FACTUALITY_BATCH"
_RUN_BATCH: ContextVar[int | None] = ContextVar("factuality_batch", default=None)


@contextmanager
def run_batch(size: int | None) -> Iterator[None]:
    """Within the block, factuality checks `size` claims per call (None: the default), unless
    RAGMETER_FACTUALITY_BATCH says otherwise: what a run's judge_options.factuality_batch asks for."""
    token = _RUN_BATCH.set(size)
    try:
        yield
    finally:
        _RUN_BATCH.reset(token)


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


class _Numbered(ClaimVerdict):
    claim: int | None = None


class _Batch(BaseModel):
    model_config = ConfigDict(extra="ignore")

    verdicts: list[_Numbered]


def batch_size() -> int:
    """Claims per verification call: RAGMETER_FACTUALITY_BATCH when set (an integer from 1 to MAX_CLAIMS;
    anything else is an InputError naming the variable), else the run's (`run_batch`), else FACTUALITY_BATCH."""
    raw = os.environ.get(BATCH_ENV)
    if raw is None or not raw.strip():
        return _RUN_BATCH.get() or FACTUALITY_BATCH
    try:
        size = int(raw)
    except ValueError:
        size = 0
    if not 1 <= size <= MAX_CLAIMS:
        raise InputError(f"expected an integer from 1 to {MAX_CLAIMS}, got {raw!r}", source=BATCH_ENV)
    return size


def _batch_parser(n: int) -> Any:
    def parse(text: str) -> tuple[list[ClaimVerdict], list[str]]:
        verdicts = parse_model(_Batch, text).verdicts
        if len(verdicts) != n:
            raise ParseFailure(f"{len(verdicts)} verdicts for {n} claims")
        numbers = [v.claim for v in verdicts]
        if all(k is not None for k in numbers) and numbers != list(range(1, n + 1)):
            raise ParseFailure(f"verdicts numbered {numbers}, expected 1 to {n} in order")
        return [ClaimVerdict(reasoning=v.reasoning, verdict=v.verdict) for v in verdicts], []

    return parse


def skeleton(n: int) -> str:
    """The reply's shape with all `n` entries written out: a small model shown one entry replies with one."""
    entries = ", ".join(
        f'{{"claim": {i}, "reasoning": "<comparison>", "verdict": "<verdict>"}}' for i in range(1, n + 1)
    )
    return f'{{"verdicts": [{entries}]}}'


def invented(claims: list[str], answer: str) -> tuple[list[str], list[str]]:
    """Split extracted claims into those the answer can state and those it cannot: a claim with a number
    that the answer does not contain was invented by the extractor (small models do this), not taken from
    the answer, so it is not checked. Rephrasing and resolved pronouns are kept: only numbers are tested."""
    numbers = set(_NUMBER.findall(answer))
    kept = [c for c in claims if set(_NUMBER.findall(c)) <= numbers]
    return kept, [c for c in claims if c not in kept]


def _failure(check: BaseException) -> str:
    if isinstance(check, JudgeFailure):
        return str(check.args[0])
    if isinstance(check, LLMError):
        return f"LLM call failed: {check.reason}"
    raise check


async def _body(judge: Judge, inp: JudgeInput, llm: LLMClient, flags: list[str]) -> MetricResult:
    answer = inp.answer or ""
    size = batch_size()
    extracted = await ask(llm, judge.prompt, layout_values(inp, flags), _claims_parser, query_id=inp.query_id)
    claims, dropped = invented(extracted.value, answer)
    if dropped:
        flags.append(f"{len(dropped)} extracted claim(s) state numbers the answer does not: not checked")
    if not claims:
        return judge.result(
            error="every extracted claim states numbers the answer does not contain",
            details={"invented_claims": dropped, "flags": flags},
        )
    batches = [claims[i : i + size] for i in range(0, len(claims), size)]
    assert len(batches) == math.ceil(len(claims) / size)
    verify = P.FACTUALITY_VERIFY

    def values(batch: list[str]) -> dict[str, str]:
        listed = "\n".join(f"[{i}] {c}" for i, c in enumerate(batch, 1))
        return layout_values(inp, [], claims=listed, n=str(len(batch)), skeleton=skeleton(len(batch)))

    checks = await asyncio.gather(
        *(ask(llm, verify, values(b), _batch_parser(len(b)), query_id=inp.query_id) for b in batches),
        return_exceptions=True,
    )
    failures: list[str] = []
    rows: list[dict[str, Any]] = []
    first = 1
    for batch, check in zip(batches, checks, strict=True):
        last = first + len(batch) - 1
        if isinstance(check, BaseException):
            reason = _failure(check)
            failures.append(
                f"claims {first}-{last}: {reason}" if last > first else f"claim {first}: {reason}"
            )
            rows += [{"claim": c, "verdict": None, "reasoning": "", "error": reason} for c in batch]
        else:
            flags.extend(f"claims {first}-{last}: {f}" for f in check.flags)
            rows += [
                {"claim": c, "verdict": v.verdict, "reasoning": v.reasoning}
                for c, v in zip(batch, check.value, strict=True)
            ]
        first = last + 1
    counts = {v: sum(r["verdict"] == v for r in rows) for v in VERDICTS}
    replies = [extracted, *(c for c in checks if isinstance(c, Reply))]
    details: dict[str, Any] = {
        "claims": rows,
        "invented_claims": dropped,
        "n_claims": len(claims),
        "n_supported": counts["SUPPORTED"],
        "n_not_supported": counts["NOT_SUPPORTED"],
        "n_contradicted": counts["CONTRADICTED"],
        "batch_size": size,
        "n_batches": len(batches),
        "flags": flags + extracted.flags,
        **usage_details(*replies),
    }
    if failures:
        unchecked = sum(1 for r in rows if r["verdict"] is None)
        error = f"{unchecked} of {len(claims)} claims could not be checked: " + "; ".join(failures)
        return judge.result(error=error, details=details)
    return judge.result(counts["SUPPORTED"] / len(claims), details=details)


FACTUALITY = Judge(
    "factuality",
    P.FACTUALITY,
    PROPORTION,
    body=_body,
    description="supported claims / claims, per-claim verdicts against the contexts",
)
