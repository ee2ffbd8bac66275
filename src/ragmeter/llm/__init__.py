"""LLM clients: one async interface over OpenAI(-compatible), Anthropic and the offline local judge.

`from_spec("openai:gpt-4o-mini")` gives a client; `await client.complete(messages)` gives an
`LLMResponse` (text, token usage, latency, estimated cost); `client.usage` sums a run. SDKs are
imported only when a request is sent.
"""

from __future__ import annotations

from ragmeter.llm.base import (
    TRACE,
    BudgetExceededError,
    LLMClient,
    LLMError,
    LLMResponse,
    TokenUsage,
    UsageSummary,
)
from ragmeter.llm.spec import from_spec

__all__ = [
    "TRACE",
    "BudgetExceededError",
    "LLMClient",
    "LLMError",
    "LLMResponse",
    "TokenUsage",
    "UsageSummary",
    "from_spec",
]
