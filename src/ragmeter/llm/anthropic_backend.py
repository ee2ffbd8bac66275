"""Anthropic's Messages API via the `anthropic` SDK (the `anthropic` extra).

The SDK 2.x / API version 2026-10-21 reject sampling parameters (temperature, top_p, top_k) and take
no seed, so none is sent: determinism comes from the cache. JSON is asked for in the prompt.
"""

from __future__ import annotations

import os
from typing import Any

from ragmeter.errors import InputError, MissingExtraError
from ragmeter.llm import prefix
from ragmeter.llm.openai_backend import SDKBackend
from ragmeter.llm.types import PermanentError, RawReply, TokenUsage

_JSON_HINT = "Reply with one JSON object and nothing else: no prose, no code fences."


class AnthropicClient(SDKBackend):
    backend = "anthropic"

    def __init__(self, model: str, *, base_url: str | None = None, **kwargs: Any) -> None:
        super().__init__(model, base_url=base_url, **kwargs)
        # Not accepted by the API version the SDK speaks; recorded as None so stored params are honest.
        self.temperature = None
        self.seed = None
        if not (os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")):
            raise InputError("ANTHROPIC_API_KEY is not set in the environment", source=f"anthropic:{model}")

    def _client(self) -> Any:
        if self._sdk is None:
            try:
                import anthropic
            except ImportError as exc:  # pragma: no cover - depends on the environment
                raise MissingExtraError("anthropic", "the Anthropic backend") from exc
            self._sdk = anthropic.AsyncAnthropic(base_url=self.base_url, timeout=self.timeout, max_retries=0)
        return self._sdk

    # `extra` sampling parameters (frequency_penalty) are not sent: the API rejects them.
    async def _send(
        self, messages: list[dict[str, str]], *, json: bool, max_tokens: int, timeout: float, **extra: float
    ) -> RawReply:
        import anthropic

        system = "\n\n".join(m["content"] for m in messages if m.get("role") == "system")
        if json:
            system = f"{system}\n\n{_JSON_HINT}".strip()
        turns: list[dict[str, Any]] = [
            {"role": m["role"], "content": m["content"]} for m in messages if m.get("role") != "system"
        ]
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": turns,
            "max_tokens": max_tokens,
            "timeout": timeout,
        }
        split = prefix.split_user(turns[0]["content"]) if turns and turns[0]["role"] == "user" else None
        if split is not None:
            # The query's shared prefix (the judges' layout): cached by the API for the calls that follow,
            # the system text with it (a cache breakpoint covers everything before it).
            head, rest = split
            turns[0] = {
                "role": "user",
                "content": [
                    {"type": "text", "text": head, "cache_control": {"type": "ephemeral"}},
                    {"type": "text", "text": rest},
                ],
            }
        if system:
            kwargs["system"] = system
        client = self._client()
        resp = await self._mapped(
            anthropic,
            lambda: client.messages.create(**kwargs),
            timeout,
            lambda exc: str(getattr(exc, "message", exc))[:300],
        )
        text = "".join(
            getattr(block, "text", "") for block in resp.content if getattr(block, "type", "") == "text"
        )
        if getattr(resp, "stop_reason", None) == "refusal":
            raise PermanentError("the model refused to answer")
        tokens = _usage(resp.usage)
        return RawReply(text, tokens, getattr(resp, "stop_reason", None))


def _usage(usage: Any) -> TokenUsage:
    """Anthropic's `input_tokens` leaves out the prompt tokens read from and written to the prompt cache
    (`cache_read_input_tokens`, `cache_creation_input_tokens`): ragmeter's prompt tokens count all three."""

    def count(name: str) -> int:
        value = getattr(usage, name, None)
        return int(value) if isinstance(value, int) and value > 0 else 0

    read, write = count("cache_read_input_tokens"), count("cache_creation_input_tokens")
    return TokenUsage(count("input_tokens") + read + write, count("output_tokens"), read, write)
