"""A judge is a declaration: name, prompt, reply schema, scale, the inputs it needs. One body runs them.

    GROUNDEDNESS = Judge("groundedness", P.GROUNDEDNESS, SCORE_0_10, values=..., needs=("answer", "contexts"))
    result = await GROUNDEDNESS(question, answer, contexts, llm=client)

A scored judge (the default body) asks for one number on its scale plus the fields of its schema;
a structured judge (factuality, citation accuracy) brings its own body. Either way the result is a
MetricResult that is never raised and never NaN: a failure is value=None with the reason.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from ragmeter.judges.confidence import verdict_probability
from ragmeter.judges.core import ask, guarded, numbered, usage_details
from ragmeter.judges.parsing import ParseFailure, read_reply, validation_reason
from ragmeter.judges.prompts import Prompt
from ragmeter.judges.scales import Scale
from ragmeter.llm.base import LLMClient
from ragmeter.models import MetricResult

log = logging.getLogger("ragmeter.judges")

Need = Literal["answer", "contexts", "ground_truth"]
_MISSING: dict[Need, str] = {
    "answer": "the answer is empty",
    "contexts": "no contexts to ground in",
    "ground_truth": "needs a ground-truth answer",
}


class Reasoned(BaseModel):
    """The reply fields every scored judge reads besides its number."""

    model_config = ConfigDict(extra="ignore")

    reasoning: str = ""

    @field_validator("reasoning", mode="before")
    @classmethod
    def _text(cls, v: Any) -> Any:
        return "" if v is None else v if isinstance(v, str) else str(v)


@dataclass(frozen=True)
class JudgeInput:
    """Everything a judge may read about one query: plain data."""

    question: str
    answer: str | None = None
    contexts: Sequence[str] = ()  # retrieved texts in rank order
    ground_truth: str | None = None
    relevant_rank: int | None = None  # 1-based rank of the first relevant doc, None if not retrieved
    query_id: str | None = None

    def has(self, need: Need) -> bool:
        if need == "contexts":
            return bool(self.contexts)
        text = self.answer if need == "answer" else self.ground_truth
        return bool(text and text.strip())


NO_REFERENCE = "(none given)"


def layout_values(inp: JudgeInput, flags: list[str], **extra: str) -> dict[str, str]:
    """The fields of the shared prompt layout (`ragmeter.judges.prompts.layered`) for one query: question,
    contexts (numbered, cut and flagged the same way for every judge: the prefix stays byte-identical),
    answer, reference; plus a task's own fields. A layered prompt shows only the parts it reads."""
    return {
        "question": inp.question,
        "contexts": numbered(inp.contexts, flags),
        "answer": inp.answer or "",
        "reference": inp.ground_truth if inp.ground_truth and inp.ground_truth.strip() else NO_REFERENCE,
        **extra,
    }


Values = Callable[[JudgeInput, list[str]], dict[str, str]]
Body = Callable[["Judge", JudgeInput, LLMClient, list[str]], Awaitable[MetricResult]]


@dataclass(frozen=True)
class Judge:
    """One judge. `values` fills the prompt (it may append flags, e.g. for cut contexts); `known` gives
    details that need no model (given the number, or None when it failed); `shortcut` may answer
    without a call; `body` replaces the scored body."""

    name: str
    prompt: Prompt
    scale: Scale
    values: Values | None = None  # scored judges: the prompt's fields
    needs: tuple[Need, ...] = ("answer",)
    schema: type[Reasoned] = Reasoned
    body: Body | None = None
    known: Callable[[JudgeInput, float | None], dict[str, Any]] | None = None
    shortcut: Callable[[Judge, JudgeInput], MetricResult | None] | None = None
    description: str = field(default="", compare=False)

    @property
    def version(self) -> str:
        return self.prompt.version

    def result(
        self, value: float | None = None, *, error: str | None = None, details: dict[str, Any] | None = None
    ) -> MetricResult:
        return MetricResult(
            name=self.name, value=value, error=error, details=details or {}, version=self.version
        )

    def parse(self, text: str) -> tuple[tuple[float, Reasoned], list[str]]:
        """The reply parser of a scored judge: the number on its scale, then its schema's fields."""
        number, obj, flags = read_reply(text, self.scale)
        try:
            extras = self.schema.model_validate(obj)
        except ValidationError as exc:
            raise ParseFailure(validation_reason(exc)) from None
        return (number, extras), flags

    async def __call__(
        self,
        question: str,
        answer: str | None,
        contexts: Sequence[str] = (),
        *,
        llm: LLMClient,
        ground_truth: str | None = None,
        query_id: str | None = None,
        relevant_rank: int | None = None,
    ) -> MetricResult:
        return await self.run(
            JudgeInput(question, answer, contexts, ground_truth, relevant_rank, query_id), llm
        )

    async def run(self, inp: JudgeInput, llm: LLMClient) -> MetricResult:
        started = time.perf_counter()
        result = await guarded(self.name, self.prompt, lambda: self._body(inp, llm))
        if result.value is None and self.known is not None:
            # What needs no model is still known when the model failed.
            result.details = {**self.known(inp, None), **result.details}
        log_judgment(self.name, inp.query_id, llm, result, time.perf_counter() - started)
        return result

    async def _body(self, inp: JudgeInput, llm: LLMClient) -> MetricResult:
        for need in self.needs:
            if not inp.has(need):
                return self.result(error=_MISSING[need])
        if self.shortcut is not None:
            early = self.shortcut(self, inp)
            if early is not None:
                return early
        flags: list[str] = []
        if self.body is not None:
            return await self.body(self, inp, llm, flags)
        if self.values is None:
            raise TypeError(f"judge {self.name!r} declares neither values nor a body")
        reply = await ask(llm, self.prompt, self.values(inp, flags), self.parse, query_id=inp.query_id)
        number, extras = reply.value
        details: dict[str, Any] = {"reasoning": extras.reasoning, self.scale.detail: number}
        details.update(extras.model_dump(exclude={"reasoning"}))
        if self.known is not None:
            details.update(self.known(inp, number))
        details["flags"] = flags + reply.flags
        details.update(usage_details(reply))
        # asked for: the verdict's probability (ragmeter.judges.confidence)
        if getattr(llm, "logprobs", False):
            keys = (self.scale.key, *self.scale.aliases)
            details["confidence"] = verdict_probability(reply.logprobs or (), keys)
        return self.result(self.scale.to_value(number), details=details)


def log_judgment(
    name: str, query_id: str | None, llm: LLMClient, result: MetricResult, wall_s: float
) -> None:
    """One DEBUG line per judgment, the same for every judge."""
    if not log.isEnabledFor(logging.DEBUG):
        return
    tokens = result.details.get("tokens") or {}
    log.debug(
        "judge metric=%s query=%s model=%s value=%s error=%s tokens=%d+%d latency=%.3fs flags=%d",
        name,
        query_id,
        getattr(llm, "model", "?"),
        result.value,
        result.error,
        tokens.get("prompt", 0),
        tokens.get("completion", 0),
        wall_s,
        len(result.details.get("flags") or ()),
    )
