"""Plain types shared by the client, its backends and the cache (no imports of other llm modules)."""

from __future__ import annotations

from dataclasses import dataclass

from ragmeter.errors import RagmeterError


class LLMError(RagmeterError):
    """An LLM call failed for good (after its retries); `reason` is what a judge records."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class BudgetExceededError(LLMError):
    """The per-run budget of calls is spent."""


class TransientError(Exception):
    """A failure worth retrying: 429, 5xx, connection error, timeout."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


class PermanentError(Exception):
    """A failure not worth retrying: 4xx other than 408/409/429, a refusal, a malformed reply."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# (token text, natural-log probability) of each token of a reply, in order (OpenAI's `logprobs.content`).
TokenLogprobs = tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class TokenUsage:
    """Tokens of one call. `prompt_tokens` counts every prompt token; of them, `cache_read_tokens` were read
    from the server's prompt cache and `cache_write_tokens` written to it (billed at their own rates:
    ragmeter.llm.pricing.CACHE_RATES); the rest are full-price input."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class RawReply:
    """What a backend returns for one successful request."""

    text: str
    usage: TokenUsage
    finish_reason: str | None = None
    logprobs: TokenLogprobs | None = None  # when asked for and the server sent them


@dataclass(frozen=True)
class LLMResponse:
    text: str
    usage: TokenUsage
    latency_s: float
    cost_usd: float | None
    cached: bool = False
    attempts: int = 1
    finish_reason: str | None = None
    logprobs: TokenLogprobs | None = None  # (token, log-probability) of each reply token, when asked for
