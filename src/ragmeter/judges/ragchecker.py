"""The rc_* judges: RAGChecker's claim-level metrics over the shared judge body.

Two judge declarations do the LLM work: RC_EXTRACT (claims of a text) and RC_CHECK (three-way verdicts of
a list of claims against one reference text). Per query: claims of the answer and of the reference answer,
then four checks (answer claims vs the reference; reference claims vs the answer; each claim set vs each
context chunk). The eleven rc_* metrics are computed from the verdicts (ragmeter.judges.claims); each
asks only for the calls it needs, and the calls of one query are shared between the metrics running at
the same time (an in-flight memo), so a query costs 2 + 2 x (1 + chunks) calls at most.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from ragmeter.judges.claims import RC_METRICS, ClaimChecks
from ragmeter.judges.core import Reply, ask, usage_details
from ragmeter.judges.judge import Judge, JudgeInput, Need
from ragmeter.judges.parsing import ParseFailure, parse_model
from ragmeter.judges.prompts import RC_CHECK, RC_EXTRACT, Prompt
from ragmeter.judges.scales import Scale
from ragmeter.llm.base import LLMClient
from ragmeter.models import MetricResult

MAX_CLAIMS = 20

RC_SCALE = Scale("claim proportion", 0.0, 1.0, key="verdicts", detail="proportion", asked=False)
Verdict = Literal["Entailment", "Neutral", "Contradiction"]


class _Claims(BaseModel):
    model_config = ConfigDict(extra="ignore")

    claims: list[str]


class _Verdicts(BaseModel):
    model_config = ConfigDict(extra="ignore")

    verdicts: list[Verdict]

    @field_validator("verdicts", mode="before")
    @classmethod
    def _normalise(cls, v: Any) -> Any:
        if isinstance(v, list):
            return [x.strip().capitalize() if isinstance(x, str) else x for x in v]
        return v


def _claims_parser(text: str) -> tuple[list[str], list[str]]:
    claims = [c.strip() for c in parse_model(_Claims, text).claims if c.strip()]
    flags = []
    if len(claims) > MAX_CLAIMS:
        flags.append(f"{len(claims)} claims extracted; the first {MAX_CLAIMS} were checked")
        claims = claims[:MAX_CLAIMS]
    return claims, flags


def _verdicts_parser(n: int) -> Callable[[str], tuple[list[str], list[str]]]:
    def parse(text: str) -> tuple[list[str], list[str]]:
        verdicts: list[str] = list(parse_model(_Verdicts, text).verdicts)
        if len(verdicts) != n:
            raise ParseFailure(f"{len(verdicts)} verdicts for {n} claims")
        return verdicts, []

    return parse


class _Memo:
    """Shared in-flight calls, keyed by what they ask: concurrent rc_* judges of one query make each call
    once. Bounded; an evicted entry is only asked again."""

    def __init__(self, size: int = 2048) -> None:
        self._tasks: OrderedDict[tuple[Any, ...], asyncio.Task[Reply]] = OrderedDict()
        self._size = size

    def get(self, key: tuple[Any, ...], make: Callable[[], Awaitable[Reply]]) -> asyncio.Task[Reply]:
        key = (id(asyncio.get_running_loop()), *key)
        task = self._tasks.get(key)
        if task is None or (task.done() and (task.cancelled() or task.exception() is not None)):
            task = asyncio.ensure_future(make())
            self._tasks[key] = task
            while len(self._tasks) > self._size:
                self._tasks.popitem(last=False)
        return task


_MEMO = _Memo()


class _Query:
    """The claims and verdicts of one query, each asked on first need."""

    def __init__(self, inp: JudgeInput, llm: LLMClient) -> None:
        self.inp, self.llm = inp, llm
        self.replies: list[Reply] = []

    async def _ask(self, key: tuple[Any, ...], prompt: Prompt, values: dict[str, str], parse: Any) -> Any:
        inp = self.inp
        full = (id(self.llm), inp.query_id, prompt.version, *key)
        reply = await _MEMO.get(full, lambda: ask(self.llm, prompt, values, parse, query_id=inp.query_id))
        if reply not in self.replies:
            self.replies.append(reply)
        return reply.value

    async def claims(self, side: str) -> list[str]:
        text = (self.inp.answer if side == "response" else self.inp.ground_truth) or ""
        values = {"question": self.inp.question, "text": text}
        claims: list[str] = await self._ask(("claims", text), RC_EXTRACT, values, _claims_parser)
        return claims

    async def check(self, claims: Sequence[str], reference: str) -> list[bool]:
        if not claims:
            return []
        listed = "\n".join(f"[{i}] {c}" for i, c in enumerate(claims, 1))
        values = {"reference": reference, "claims": listed, "n": str(len(claims))}
        key = ("check", tuple(claims), reference)
        verdicts: list[str] = await self._ask(key, RC_CHECK, values, _verdicts_parser(len(claims)))
        return [v == "Entailment" for v in verdicts]

    async def by_chunk(self, claims: Sequence[str]) -> list[list[bool]]:
        columns = await asyncio.gather(*(self.check(claims, c) for c in self.inp.contexts))
        return [[col[i] for col in columns] for i in range(len(claims))]

    async def checks(self, wanted: Sequence[str]) -> tuple[ClaimChecks, dict[str, list[str]]]:
        need_response = any(w in ("a2r", "r2a", "c2r") for w in wanted)
        need_reference = any(w in ("a2r", "r2a", "c2a") for w in wanted)
        response, reference = await asyncio.gather(
            self.claims("response") if need_response else _none(),
            self.claims("reference") if need_reference else _none(),
        )
        answer, truth = self.inp.answer or "", self.inp.ground_truth or ""
        parts = await asyncio.gather(
            self.check(response, truth) if "a2r" in wanted else _none(),
            self.check(reference, answer) if "r2a" in wanted else _none(),
            self.by_chunk(response) if "c2r" in wanted else _none(),
            self.by_chunk(reference) if "c2a" in wanted else _none(),
        )
        checks = ClaimChecks(*parts, n_chunks=len(self.inp.contexts))
        return checks, {"answer_claims": response or [], "reference_claims": reference or []}


async def _none() -> Any:
    return None


def _needs(wanted: Sequence[str]) -> tuple[Need, ...]:
    needs: list[Need] = []
    if any(w in ("a2r", "r2a", "c2r") for w in wanted):
        needs.append("answer")
    if any(w in ("a2r", "r2a", "c2a") for w in wanted):
        needs.append("ground_truth")
    if any(w in ("c2r", "c2a") for w in wanted):
        needs.append("contexts")
    return tuple(needs)


async def _body(judge: Judge, inp: JudgeInput, llm: LLMClient, flags: list[str]) -> MetricResult:
    compute, wanted = RC_METRICS[judge.name]
    query = _Query(inp, llm)
    checks, claims = await query.checks(wanted)
    value, reason = compute(checks)
    details: dict[str, Any] = {
        **claims,
        "verdicts": {
            "answer2response": checks.answer2response,
            "response2answer": checks.response2answer,
            "retrieved2response": checks.retrieved2response,
            "retrieved2answer": checks.retrieved2answer,
        },
        "flags": flags + [f for r in query.replies for f in r.flags],
        **usage_details(*query.replies),
    }
    return judge.result(value, error=reason, details=details)


RC_JUDGES: dict[str, Judge] = {
    name: Judge(
        name, RC_EXTRACT, RC_SCALE, needs=_needs(wanted), body=_body, description="RAGChecker " + name
    )
    for name, (_, wanted) in RC_METRICS.items()
}
