"""The one async LLM interface: retries, concurrency, budget, cache, usage and logging.

Backends implement only `_send` (one HTTP request, errors mapped to `TransientError` or
`PermanentError`); everything a judge relies on lives here, once.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ragmeter.errors import RagmeterError
from ragmeter.llm.cache import ResponseCache
from ragmeter.llm.logs import TRACE
from ragmeter.llm.pricing import estimate_cost
from ragmeter.llm.sampling import current as current_resample
from ragmeter.llm.spend import SpendRefused
from ragmeter.llm.types import (
    BudgetExceededError,
    LLMResponse,
    PermanentError,
    RawReply,
    TokenUsage,
    TransientError,
)
from ragmeter.llm.types import LLMError as LLMError  # re-exported: callers catch it from here
from ragmeter.llm.usage import ClientUsage, UsageMeter

log = logging.getLogger("ragmeter.llm")

# Backoff: full jitter on base * 2**attempt, capped; Retry-After wins when the server sends one.
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 30.0
RETRY_AFTER_CAP_S = 120.0
DEFAULT_MAX_TOKENS = 1024


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from `retry-after-ms` or `Retry-After` (seconds or an HTTP date); None if absent."""
    if not headers:
        return None
    lower = {k.lower(): v for k, v in headers.items()}
    raw_ms = lower.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = lower.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def backoff_delay(attempt: int, retry_after: float | None) -> float:
    """Delay before retry number `attempt` (0-based): Retry-After if given, else full jitter."""
    if retry_after is not None:
        return min(retry_after, RETRY_AFTER_CAP_S)
    return random.uniform(0.0, min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2**attempt))


def _short(messages: list[dict[str, str]]) -> str:
    return "\n".join(f"[{m.get('role', '?')}] {m.get('content', '')}" for m in messages)


class LLMClient:
    """Base class of every backend. Use `ragmeter.llm.from_spec` to make one."""

    backend: str = "base"

    def __init__(
        self,
        model: str,
        *,
        timeout: float = 60,
        max_retries: int = 4,
        concurrency: int = 16,
        cache: ResponseCache | None = None,
        budget: int | None = None,
        seed: int | None = 0,
        temperature: float | None = 0.0,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        prices: Mapping[str, tuple[float, float]] | None = None,
        frequency_penalty: float | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.model = model
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.concurrency = concurrency
        self.budget = budget
        self.seed = seed
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.frequency_penalty = frequency_penalty  # None: not sent (the server's default, 0)
        self._prices = dict(prices) if prices else None
        self._cache = cache
        self._semaphore: asyncio.Semaphore | None = None
        self._meter = UsageMeter()
        self._reserved = 0  # calls admitted against the budget
        # Ask for each reply token's log-probability (OpenAI-compatible `logprobs`; a verdict's confidence).
        # Such calls skip the response cache, which keeps no log-probabilities.
        self.logprobs = False
        # Injectable for tests: how the client waits between retries.
        self.sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    # --- what backends provide -------------------------------------------------------------
    async def _send(
        self, messages: list[dict[str, str]], *, json: bool, max_tokens: int, timeout: float, **extra: float
    ) -> RawReply:
        raise NotImplementedError

    def _public_extra(self) -> dict[str, Any]:
        return {}

    def _cost(self, usage: TokenUsage) -> float | None:
        return estimate_cost(
            self.model,
            usage.prompt_tokens,
            usage.completion_tokens,
            self._prices,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
        )

    async def _before_call(self) -> None:
        """Hook run before each request (the local backend starts its server here)."""

    # --- public -----------------------------------------------------------------------------
    @property
    def params(self) -> dict[str, Any]:
        """Request parameters that change answers: part of the cache key and of `spec_public`."""
        temperature, seed = self.sampling
        params: dict[str, Any] = {
            "temperature": temperature,
            "seed": seed,
            "max_tokens": self.max_tokens,
        }
        if self.frequency_penalty is not None:  # only when set: cache keys of earlier runs stay valid
            params["frequency_penalty"] = self.frequency_penalty
        return params

    @property
    def sampling(self) -> tuple[float | None, int | None]:
        """(temperature, seed) of a call made now: a `resampled` block's, else the client's own. A backend
        that sends none (None here) keeps sending none."""
        block = current_resample()
        if block is None:
            return self.temperature, self.seed
        return (
            block.temperature if self.temperature is not None else None,
            block.seed if self.seed is not None else None,
        )

    @property
    def spec_public(self) -> dict[str, Any]:
        """A secret-free description to store with a run: backend, model, parameters."""
        return {
            "backend": self.backend,
            "model": self.model,
            "params": self.params,
            "timeout_s": self.timeout,
            "max_retries": self.max_retries,
            "concurrency": self.concurrency,
            "budget": self.budget,
            "cache": self._cache is not None,
            **self._public_extra(),
        }

    @property
    def usage(self) -> ClientUsage:
        """Calls, tokens and cost so far, in total and per label (`metric=` of each call)."""
        return self._meter.summary(self.backend, self.model)

    async def aclose(self) -> None:
        if self._cache is not None:
            self._cache.close()

    async def __aenter__(self) -> LLMClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def complete(
        self,
        messages: list[dict[str, str]],
        *,
        json: bool = False,
        metric: str | None = None,
        query_id: str | None = None,
        max_tokens: int | None = None,
        frequency_penalty: float | None = None,
    ) -> LLMResponse:
        """Send one chat request. Raises `LLMError` (with the reason) when it fails for good.

        `metric` labels the call in `usage` (a judge's name, "generator"); unlabelled calls are
        counted under "unlabelled". `max_tokens` and `frequency_penalty` override the client's for this
        call (a prompt's own settings); both are part of the cache key."""
        limit = max_tokens if max_tokens is not None else self.max_tokens
        penalty = frequency_penalty if frequency_penalty is not None else self.frequency_penalty
        key = None
        block = current_resample()
        if self._cache is not None and not self.logprobs and (block is None or block.cache):
            params = {**self.params, "max_tokens": limit, "json": json}
            if penalty is not None:
                params["frequency_penalty"] = penalty
            key = self._cache.key(self.backend, self.model, params, messages)
            hit = self._cache.get(key)
            if hit is not None:
                text, usage, finish = hit
                resp = LLMResponse(text, usage, 0.0, 0.0, cached=True, attempts=0, finish_reason=finish)
                self._meter.answered(resp, metric)
                self._log(resp, messages, metric, query_id)
                return resp
        if self.budget is not None:
            if self._reserved >= self.budget:
                self._meter.failed(metric)
                raise BudgetExceededError(f"the run's budget of {self.budget} LLM calls is spent")
            self._reserved += 1
        try:
            raw, attempts, started = await self._send_with_retries(
                messages, json, limit, metric, query_id, penalty
            )
        except LLMError:
            self._meter.failed(metric)
            raise
        resp = LLMResponse(
            raw.text,
            raw.usage,
            time.perf_counter() - started,  # from the slot, not from the client's own queue
            self._cost(raw.usage),
            cached=False,
            attempts=attempts,
            finish_reason=raw.finish_reason,
            logprobs=raw.logprobs,
        )
        self._meter.answered(resp, metric)
        if self._cache is not None and key is not None:  # a key exists only when the cache may be used
            self._cache.put(key, self.backend, self.model, raw.text, raw.usage, raw.finish_reason)
        self._log(resp, messages, metric, query_id)
        return resp

    async def _send_with_retries(
        self,
        messages: list[dict[str, str]],
        json: bool,
        limit: int,
        metric: str | None,
        query_id: str | None,
        penalty: float | None = None,
    ) -> tuple[RawReply, int, float]:
        """(reply, attempts, when the first attempt got its slot): retries transient failures with
        backoff; anything else is an LLMError."""
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.concurrency)
        attempts = 0
        started: float | None = None
        sampling = {"frequency_penalty": penalty} if penalty is not None else {}
        while True:
            attempts += 1
            try:
                async with self._semaphore:
                    started = time.perf_counter() if started is None else started
                    await self._before_call()
                    self._meter.api_requests += 1
                    # The SDK has its own timeout; this one catches anything that slips past it. A
                    # timeout scope, unlike wait_for, wraps no extra task around each call.
                    async with asyncio.timeout(self.timeout + 5.0):
                        raw = await self._send_capped(messages, json, limit, sampling)
                return raw, attempts, started
            except TransientError as exc:
                reason, retry_after = exc.reason, exc.retry_after
            except TimeoutError:
                reason, retry_after = f"timed out after {self.timeout:g} s", None
            except PermanentError as exc:
                log.debug("llm call failed metric=%s query=%s: %s", metric, query_id, exc.reason)
                raise LLMError(exc.reason) from None
            except LLMError as exc:
                if isinstance(exc, SpendRefused):  # refused before it was sent
                    self._meter.api_requests -= 1
                raise
            except RagmeterError as exc:  # e.g. a missing extra: a clear reason, not a traceback
                raise LLMError(str(exc)) from None
            if attempts > self.max_retries:
                log.debug("llm call failed metric=%s query=%s: %s", metric, query_id, reason)
                raise LLMError(f"{reason} (gave up after {attempts} attempts)")
            self._meter.retries += 1
            delay = backoff_delay(attempts - 1, retry_after)
            log.debug(
                "llm retry %d in %.2f s metric=%s query=%s: %s", attempts, delay, metric, query_id, reason
            )
            await self.sleep(delay)

    async def _send_capped(
        self, messages: list[dict[str, str]], json: bool, limit: int, sampling: dict[str, float]
    ) -> RawReply:
        """One request, within the run's spend cap when it has one (ragmeter.llm.spend): its worst case
        reserved first (or the request refused), then charged as the reply's cost, or in full if it failed."""
        from ragmeter.llm import spend

        ledger = spend.current()
        if ledger is None:
            return await self._send(messages, json=json, max_tokens=limit, timeout=self.timeout, **sampling)
        role = spend.current_role()
        estimate = spend.estimate_input_tokens(messages)
        # The worst case prices every prompt token as a cache write (Anthropic: 1.25x the input price).
        worst = self._cost(TokenUsage(estimate, limit, 0, estimate))
        await ledger.reserve(role, worst, self.model)
        assert worst is not None  # reserve refuses an unpriced model
        charged = worst
        try:
            raw = await self._send(messages, json=json, max_tokens=limit, timeout=self.timeout, **sampling)
            cost = self._cost(raw.usage)
            charged = worst if cost is None else cost
            return raw
        finally:
            ledger.settle(role, worst, charged)

    def _log(
        self, resp: LLMResponse, messages: list[dict[str, str]], metric: str | None, query_id: str | None
    ) -> None:
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "llm call metric=%s query=%s model=%s latency=%.3fs tokens=%d+%d cached=%s attempts=%d",
                metric,
                query_id,
                self.model,
                resp.latency_s,
                resp.usage.prompt_tokens,
                resp.usage.completion_tokens,
                resp.cached,
                resp.attempts,
            )
        if log.isEnabledFor(TRACE):
            log.log(TRACE, "llm prompt metric=%s query=%s\n%s", metric, query_id, _short(messages))
            log.log(TRACE, "llm response metric=%s query=%s\n%s", metric, query_id, resp.text)
