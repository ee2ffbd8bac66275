"""A scripted OpenAI- and Anthropic-compatible server on 127.0.0.1, for tests and benchmarks.

It speaks real HTTP (aiohttp, from the `test` extra) and plays what a responder function returns
for each request: a reply text, an HTTP error with headers (429 + Retry-After), a delay (a hang), a
raw malformed body. Use it to test an evaluation pipeline's judge handling without any model:

    async with ScriptedServer(lambda req: Step(text='{"grade": 9, "reasoning": "ok"}')) as srv:
        client = from_spec(f"openai-compatible:scripted@{srv.url}")
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ragmeter.errors import MissingExtraError


@dataclass
class Step:
    """One scripted answer."""

    text: str | None = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    raw_body: str | None = None  # sent as is (e.g. a truncated HTTP body)
    prompt_tokens: int = 11
    completion_tokens: int = 7
    finish_reason: str = "stop"  # "length": the reply ran to its token limit
    # (token, logprob) of each reply token, sent when the request asks for `logprobs` (OpenAI only)
    logprobs: list[tuple[str, float]] | None = None
    # Of prompt_tokens, those the server says it read from / wrote to its prompt cache (OpenAI reports reads
    # in usage.prompt_tokens_details.cached_tokens; Anthropic both, outside its input_tokens).
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@dataclass
class ScriptedRequest:
    """What the responder sees: the parsed body, the API it came through, and how many times the
    exact same messages were seen before (0 for a first try, 1+ for retries)."""

    body: dict[str, Any]
    api: str  # "openai" or "anthropic"
    seen: int
    index: int
    headers: dict[str, str]

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The messages, each content as one string (Anthropic's content blocks joined)."""
        msgs = [{**m, "content": _text(m.get("content"))} for m in self.body.get("messages", [])]
        if self.api == "anthropic" and self.body.get("system"):
            msgs.insert(0, {"role": "system", "content": _text(self.body["system"])})
        return msgs

    @property
    def system(self) -> str:
        return "\n".join(str(m.get("content", "")) for m in self.messages if m.get("role") == "system")

    @property
    def user(self) -> str:
        users = [str(m.get("content", "")) for m in self.messages if m.get("role") == "user"]
        return users[0] if users else ""

    @property
    def is_reask(self) -> bool:
        return any(m.get("role") == "assistant" for m in self.messages)


def _text(content: Any) -> str:
    """A message content as text: a string as is, a list of content blocks ({"type": "text", ...}) joined."""
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return "" if content is None else str(content)


Responder = Callable[[ScriptedRequest], Step]


class ScriptedServer:
    def __init__(self, responder: Responder, *, latency: float = 0.0) -> None:
        try:
            from aiohttp import web
        except ImportError as exc:  # pragma: no cover
            raise MissingExtraError("test", "the scripted LLM server (aiohttp)") from exc
        self._web = web
        self.responder = responder
        self.latency = latency
        self.requests: list[ScriptedRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.first_request_at: float | None = None
        self.last_reply_at: float | None = None
        self._seen: dict[str, int] = {}
        self._runner: Any = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.port = 0

    @property
    def url(self) -> str:
        """Base URL for OpenAI clients (ends in /v1)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root(self) -> str:
        """Base URL for the Anthropic SDK (it appends /v1/messages itself)."""
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> ScriptedServer:
        web = self._web
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._openai)
        app.router.add_post("/v1/messages", self._anthropic)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self.port = int(server.sockets[0].getsockname()[1])
        return self

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> ScriptedServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _models(self, request: Any) -> Any:
        return self._web.json_response({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

    async def _play(self, request: Any, api: str) -> tuple[Step, ScriptedRequest]:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        body = await request.json()
        key = json.dumps([body.get("system"), body.get("messages")], sort_keys=True)
        seen = self._seen.get(key, 0)
        self._seen[key] = seen + 1
        req = ScriptedRequest(body, api, seen, len(self.requests), dict(request.headers))
        self.requests.append(req)
        if self.first_request_at is None:
            self.first_request_at = time.perf_counter()
        step = self.responder(req)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.latency or step.delay:
                await asyncio.sleep(self.latency + step.delay)
        finally:
            self.in_flight -= 1
            if task is not None:
                self._tasks.discard(task)
        self.last_reply_at = time.perf_counter()
        return step, req

    def _error(self, step: Step) -> Any:
        body = {"error": {"message": f"scripted status {step.status}", "type": "scripted"}}
        return self._web.json_response(body, status=step.status, headers=step.headers)

    async def _openai(self, request: Any) -> Any:
        step, req = await self._play(request, "openai")
        if step.raw_body is not None:
            return self._web.Response(text=step.raw_body, status=step.status, content_type="application/json")
        if step.status != 200:
            return self._error(step)
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": step.text},
            "finish_reason": step.finish_reason,
        }
        if req.body.get("logprobs") and step.logprobs is not None:
            content = [{"token": t, "logprob": lp, "top_logprobs": []} for t, lp in step.logprobs]
            choice["logprobs"] = {"content": content}
        payload = {
            "id": f"chatcmpl-{req.index}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": req.body.get("model", "scripted"),
            "choices": [choice],
            "usage": {
                "prompt_tokens": step.prompt_tokens,
                "completion_tokens": step.completion_tokens,
                "total_tokens": step.prompt_tokens + step.completion_tokens,
            },
        }
        if step.cache_read_tokens:
            payload["usage"]["prompt_tokens_details"] = {"cached_tokens": step.cache_read_tokens}
        return self._web.json_response(payload, headers=step.headers)

    async def _anthropic(self, request: Any) -> Any:
        step, req = await self._play(request, "anthropic")
        if step.raw_body is not None:
            return self._web.Response(text=step.raw_body, status=step.status, content_type="application/json")
        if step.status != 200:
            body = {"type": "error", "error": {"type": "scripted", "message": f"status {step.status}"}}
            return self._web.json_response(body, status=step.status, headers=step.headers)
        payload = {
            "id": f"msg_{req.index}",
            "type": "message",
            "role": "assistant",
            "model": req.body.get("model", "scripted"),
            "content": [{"type": "text", "text": step.text or ""}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": max(0, step.prompt_tokens - step.cache_read_tokens - step.cache_write_tokens),
                "output_tokens": step.completion_tokens,
                "cache_read_input_tokens": step.cache_read_tokens,
                "cache_creation_input_tokens": step.cache_write_tokens,
            },
        }
        return self._web.json_response(payload, headers=step.headers)


def main(argv: list[str] | None = None) -> None:
    """Serve one fixed reply with a fixed latency until killed; prints the base URL (for benchmarks)."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m ragmeter.llm.scripted")
    ap.add_argument("--text", required=True)
    ap.add_argument("--latency", type=float, default=0.0)
    args = ap.parse_args(argv)

    async def serve() -> None:
        async with ScriptedServer(lambda req: Step(text=args.text), latency=args.latency) as srv:
            print(srv.url, flush=True)
            await asyncio.Event().wait()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
