"""OpenAI and OpenAI-compatible servers (Azure, vLLM, Ollama, llama.cpp, LM Studio) via the `openai` SDK."""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ragmeter.errors import InputError, MissingExtraError
from ragmeter.llm.base import LLMClient, parse_retry_after
from ragmeter.llm.types import PermanentError, RawReply, TokenLogprobs, TokenUsage, TransientError

# OpenAI reasoning models reject any temperature but the default.
_NO_TEMPERATURE = re.compile(r"^(o\d|gpt-5)")


def public_url(url: str) -> str:
    """The URL without user info, query or fragment (where secrets hide) for storing with a run."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def is_retryable_status(status: int) -> bool:
    return status in (408, 409, 425, 429) or status >= 500


class SDKBackend(LLMClient):
    """A backend that talks through a vendor SDK client: created lazily, closed with the client."""

    def __init__(self, model: str, *, base_url: str | None = None, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        self.base_url = base_url
        self._sdk: Any = None

    def _public_extra(self) -> dict[str, Any]:
        return {"base_url": public_url(self.base_url)} if self.base_url else {}

    async def aclose(self) -> None:
        if self._sdk is not None:
            await self._sdk.close()
            self._sdk = None
        await super().aclose()

    @staticmethod
    async def _mapped(
        sdk: Any, call: Callable[[], Awaitable[Any]], timeout: float, message: Callable[[Any], str]
    ) -> Any:
        """Await `call`, mapping the SDK's errors (OpenAI's and Anthropic's share their names) to
        TransientError (worth a retry) or PermanentError."""
        try:
            return await call()
        except sdk.APITimeoutError:
            raise TransientError(f"timed out after {timeout:g} s") from None
        except sdk.APIConnectionError as exc:
            raise TransientError(f"connection error: {exc}") from None
        except sdk.APIStatusError as exc:
            status = exc.status_code
            reason = f"HTTP {status}: {message(exc)}"
            if is_retryable_status(status):
                raise TransientError(reason, parse_retry_after(dict(exc.response.headers))) from None
            raise PermanentError(reason) from None
        except sdk.APIError as exc:
            raise PermanentError(f"API error: {exc}") from None


class OpenAIClient(SDKBackend):
    """`openai:MODEL` (api.openai.com, or OPENAI_BASE_URL) and `openai-compatible:MODEL@URL`."""

    def __init__(
        self, model: str, *, base_url: str | None = None, compatible: bool = False, **kwargs: Any
    ) -> None:
        super().__init__(model, base_url=base_url, **kwargs)
        self.backend = "openai-compatible" if compatible else "openai"
        self._compatible = compatible
        self._json_mode_ok = True
        if not compatible and not os.environ.get("OPENAI_API_KEY"):
            raise InputError("OPENAI_API_KEY is not set in the environment", source=f"openai:{model}")
        if not compatible and _NO_TEMPERATURE.match(model):
            self.temperature = None

    def _extra_body(self) -> dict[str, Any]:
        """Server-specific fields of a request (the local backend: its llama.cpp slot)."""
        return {}

    def _client(self) -> Any:
        if self._sdk is None:
            try:
                import openai
            except ImportError as exc:  # pragma: no cover - depends on the environment
                raise MissingExtraError("llm", "the OpenAI backend") from exc
            key = os.environ.get("OPENAI_API_KEY")
            if self._compatible:
                # Local servers rarely check keys; a real one can be given in RAGMETER_LLM_API_KEY.
                key = os.environ.get("RAGMETER_LLM_API_KEY") or key or "unused"
            self._sdk = openai.AsyncOpenAI(
                api_key=key, base_url=self.base_url, timeout=self.timeout, max_retries=0
            )
        return self._sdk

    async def _send(
        self, messages: list[dict[str, str]], *, json: bool, max_tokens: int, timeout: float, **extra: float
    ) -> RawReply:
        import openai

        client = self._client()
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages}
        temperature, seed = self.sampling  # a repeat's (ragmeter.llm.sampling), else the client's own
        if temperature is not None:
            kwargs["temperature"] = temperature
        if seed is not None:
            kwargs["seed"] = seed
        kwargs["max_tokens" if self._compatible else "max_completion_tokens"] = max_tokens
        kwargs.update(extra)  # sampling: frequency_penalty, only when a prompt or the client sets it
        if self.logprobs:
            kwargs["logprobs"] = True
        kwargs.update(self._extra_body())
        want_json = json and self._json_mode_ok
        if want_json:
            kwargs["response_format"] = {"type": "json_object"}

        async def post() -> Any:
            try:
                return await self._post(client, kwargs, timeout)
            except openai.BadRequestError as exc:
                # Some compatible servers reject response_format: ask once more without it, and remember.
                if not (want_json and "response_format" in str(exc)):
                    raise
                self._json_mode_ok = False
                del kwargs["response_format"]
                return await self._post(client, kwargs, timeout)

        body = await self._mapped(openai, post, timeout, _message)
        return _reply(body)

    @staticmethod
    async def _post(client: Any, payload: dict[str, Any], timeout: float) -> Any:
        """POST /chat/completions through the SDK's low-level `post` (its documented way to send a
        raw body): errors, auth and timeouts as `create`, at half its CPU cost per call."""
        import httpx2

        response = await client.post(
            "/chat/completions", cast_to=httpx2.Response, body=payload, options={"timeout": timeout}
        )
        try:
            return response.json()
        except ValueError:
            raise PermanentError(f"malformed reply: not JSON: {response.text[:200]!r}") from None


def _reply(body: Any) -> RawReply:
    if not isinstance(body, dict):
        raise PermanentError("malformed reply: not a JSON object")
    if body.get("error"):
        raise PermanentError(f"error in reply: {str(body['error'])[:300]}")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise PermanentError("malformed reply: no choices")
    choice = choices[0]
    message = choice.get("message") or {}
    if message.get("refusal"):
        raise PermanentError(f"the model refused: {message['refusal']}")
    tokens = _usage(body)
    content = message.get("content")
    text = content if isinstance(content, str) else ""
    return RawReply(text, tokens, choice.get("finish_reason"), _logprobs(choice.get("logprobs")))


def _logprobs(raw: Any) -> TokenLogprobs | None:
    """(token, logprob) pairs from a choice's `logprobs.content` (OpenAI, llama.cpp's server, vLLM); None when
    absent or not in that shape (a reply is never refused for its log-probabilities)."""
    content = raw.get("content") if isinstance(raw, dict) else None
    if not isinstance(content, list):
        return None
    out: list[tuple[str, float]] = []
    for item in content:
        if not isinstance(item, dict) or not isinstance(item.get("token"), str):
            return None
        lp = item.get("logprob")
        if isinstance(lp, bool) or not isinstance(lp, int | float) or not lp <= 0.0:
            return None
        out.append((item["token"], float(lp)))
    return tuple(out)


def _int(value: Any) -> int:
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0


def _usage(body: dict[str, Any]) -> TokenUsage:
    """Tokens of a reply; the prompt tokens read from the server's prompt cache from OpenAI's
    `usage.prompt_tokens_details.cached_tokens`, else llama.cpp's `timings.cache_n`."""
    raw = body.get("usage")
    usage: dict[str, Any] = raw if isinstance(raw, dict) else {}
    prompt = _int(usage.get("prompt_tokens"))
    details = usage.get("prompt_tokens_details")
    cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else 0
    timings = body.get("timings")
    if not cached and isinstance(timings, dict):
        cached = _int(timings.get("cache_n"))
    return TokenUsage(prompt, _int(usage.get("completion_tokens")), min(cached, prompt) if prompt else cached)


def _message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:300]
        if isinstance(err, str):
            return err[:300]
    return str(getattr(exc, "message", exc))[:300]
