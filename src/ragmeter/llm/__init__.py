"""LLM clients: one async interface over OpenAI(-compatible), Anthropic and the offline local judge.

`from_spec("openai:gpt-4o-mini")` gives a client; `await client.complete(messages)` gives an
`LLMResponse` (text, token usage, latency, estimated cost); `client.usage` counts calls, tokens and
cost per label; `Usage.of({"judge": j, "generator": g})` sums a run. SDKs are imported only when a
request is sent.
"""

from __future__ import annotations

from ragmeter.llm.base import LLMClient
from ragmeter.llm.logs import TRACE, configure_logging, parse_level
from ragmeter.llm.spec import from_spec
from ragmeter.llm.types import BudgetExceededError, LLMError, LLMResponse, TokenUsage
from ragmeter.llm.usage import ClientUsage, Usage, UsageLine

# The name of a client's usage before it became ClientUsage.
UsageSummary = ClientUsage

__all__ = [
    "TRACE",
    "BudgetExceededError",
    "ClientUsage",
    "LLMClient",
    "LLMError",
    "LLMResponse",
    "TokenUsage",
    "Usage",
    "UsageLine",
    "UsageSummary",
    "configure_logging",
    "from_spec",
    "parse_level",
]
