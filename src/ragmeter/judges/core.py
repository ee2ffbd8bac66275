"""The judge call: send a template, parse leniently, validate strictly, re-ask once, never raise."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ragmeter.judges.parsing import ParseFailure
from ragmeter.judges.prompts import REASK, Prompt
from ragmeter.llm.base import LLMClient
from ragmeter.llm.logs import TRACE
from ragmeter.llm.prefix import shared_prefix
from ragmeter.llm.types import LLMError
from ragmeter.models import MetricResult

log = logging.getLogger("ragmeter.judges")
T = TypeVar("T")

# Long contexts are cut so that prompts fit small local models; the cut is flagged in details.
MAX_CONTEXT_CHARS = 4000
MAX_RAW_IN_DETAILS = 500


class JudgeFailure(Exception):
    """A judge cannot produce a value; the message is the result's error."""


@dataclass
class Reply:
    value: Any
    attempts: int
    flags: list[str] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    latency_s: float = 0.0
    logprobs: tuple[tuple[str, float], ...] | None = None  # of the reply that was used, when asked for


class _FirstCall:
    """The judge calls of one query: the first one runs alone, the others start once it has finished, so
    that the server has the query's shared prefix cached (or computed) before they send it again."""

    def __init__(self) -> None:
        self.claimed = False
        self.finished = asyncio.Event()


_QUERY_CALLS: ContextVar[_FirstCall | None] = ContextVar("ragmeter_query_calls", default=None)


@contextlib.contextmanager
def one_query() -> Iterator[None]:
    """Within this block (and the tasks started in it), the first judge call completes before any other
    starts: wrap the judges of one query in it (run_judges does)."""
    token = _QUERY_CALLS.set(_FirstCall())
    try:
        yield
    finally:
        _QUERY_CALLS.reset(token)


async def _complete(llm: LLMClient, messages: list[dict[str, str]], **kwargs: Any) -> Any:
    gate = _QUERY_CALLS.get()
    if gate is None or gate.finished.is_set():
        return await llm.complete(messages, **kwargs)
    if gate.claimed:
        await gate.finished.wait()
        return await llm.complete(messages, **kwargs)
    gate.claimed = True
    try:
        return await llm.complete(messages, **kwargs)
    finally:
        gate.finished.set()


def numbered(texts: Sequence[str], flags: list[str], *, what: str = "source") -> str:
    """Texts as '[1] ...' lines, each cut to MAX_CONTEXT_CHARS."""
    if not texts:
        return f"(no {what}s)"
    lines = []
    for i, text in enumerate(texts, 1):
        t = " ".join(str(text).split())
        if len(t) > MAX_CONTEXT_CHARS:
            t = t[:MAX_CONTEXT_CHARS] + " ..."
            flag = f"{what}s cut to {MAX_CONTEXT_CHARS} characters"
            if flag not in flags:
                flags.append(flag)
        lines.append(f"[{i}] {t}")
    return "\n".join(lines)


async def ask(
    llm: LLMClient,
    prompt: Prompt,
    values: dict[str, str],
    parse: Callable[[str], tuple[T, list[str]]],
    *,
    query_id: str | None,
) -> Reply:
    """Ask, parse; on a parse failure ask once more showing the reply and why it failed."""
    messages = prompt.messages(**values)
    reply = Reply(None, 0)
    last_text = reason = ""
    shared = prompt.shared_prefix(**values)
    for attempt in (1, 2):
        with shared_prefix(shared):
            resp = await _complete(
                llm, messages, json=True, metric=prompt.name, query_id=query_id, max_tokens=prompt.max_tokens
            )
        reply.attempts = attempt
        reply.prompt_tokens += resp.usage.prompt_tokens
        reply.completion_tokens += resp.usage.completion_tokens
        reply.cached = resp.cached
        reply.latency_s += resp.latency_s
        last_text = resp.text
        log.log(TRACE, "judge %s query=%s attempt %d reply:\n%s", prompt.name, query_id, attempt, resp.text)
        try:
            value, flags = parse(resp.text)
        except ParseFailure as exc:
            reason = str(exc)
            hit_limit = resp.finish_reason == "length"
            if hit_limit:
                reason += f" (the reply hit the {prompt.max_tokens}-token limit)"
            log.debug("judge %s query=%s attempt %d unusable: %s", prompt.name, query_id, attempt, reason)
            if hit_limit and attempt == 1:
                # A reply that ran to the limit (small models: a repetition loop) would run to it again.
                raise JudgeFailure(f"unusable reply, not re-asked: {reason}", last_text) from None
            if attempt == 2:
                raise JudgeFailure(f"unusable reply after a re-ask: {reason}", last_text) from None
            messages = [
                *messages,
                {"role": "assistant", "content": resp.text or "(empty reply)"},
                {"role": "user", "content": REASK.format(reason=reason)},
            ]
            continue
        reply.value = value
        reply.flags = flags
        reply.logprobs = resp.logprobs
        if attempt == 2:
            reply.flags.append(f"answered on the re-ask (the first reply: {reason})")
        return reply
    raise AssertionError("unreachable")


async def guarded(
    name: str,
    prompt: Prompt,
    body: Callable[[], Awaitable[MetricResult]],
) -> MetricResult:
    """Run a judge body; any failure becomes value=None with the reason. Never raises, never NaN."""
    try:
        return await body()
    except JudgeFailure as exc:
        details: dict[str, Any] = {}
        if len(exc.args) > 1 and isinstance(exc.args[1], str):
            details["raw_reply"] = exc.args[1][:MAX_RAW_IN_DETAILS]
        return MetricResult(
            name=name, value=None, error=str(exc.args[0]), details=details, version=prompt.version
        )
    except LLMError as exc:
        return MetricResult(
            name=name, value=None, error=f"LLM call failed: {exc.reason}", version=prompt.version
        )
    except Exception as exc:  # a judge must never take a run down
        log.exception("judge %s failed unexpectedly", name)
        return MetricResult(
            name=name,
            value=None,
            error=f"internal error: {type(exc).__name__}: {exc}",
            version=prompt.version,
        )


def usage_details(*replies: Reply) -> dict[str, Any]:
    """Attempts, cache and tokens of a judgment's replies, for its details."""
    return {
        "attempts": sum(r.attempts for r in replies),
        "cached": all(r.cached for r in replies),
        "tokens": {
            "prompt": sum(r.prompt_tokens for r in replies),
            "completion": sum(r.completion_tokens for r in replies),
        },
        "latency_s": round(sum(r.latency_s for r in replies), 6),
    }
