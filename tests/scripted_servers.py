"""Scripted OpenAI-compatible servers for tests that cannot share pytest's event loop, and scripted judges.

`serve_in_thread` runs a ScriptedServer on its own event loop in a thread, for code that runs its own loop
(the CLI, the demo, generation); tests on pytest's loop use the `scripted` fixture of tests/conftest.py.
`by_judge` answers each judge of the shared prompt layout in its own way."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from ragmeter.judges.prompts import layout_name
from ragmeter.llm.scripted import Responder, ScriptedRequest, ScriptedServer, Step


@contextmanager
def serve_in_thread(responder: Responder) -> Iterator[ScriptedServer]:
    """A ScriptedServer on its own event loop in a thread; stopped, and its loop closed, on leaving."""
    loop = asyncio.new_event_loop()
    server = ScriptedServer(responder)
    ready = threading.Event()

    def serve() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(server.start())
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert ready.wait(10)
    try:
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def by_judge(replies: Mapping[str, Responder], default: Responder | None = None) -> Responder:
    """A responder that sends a request to the reply of its judge (`layout_name` of its user text), else to
    `default`; a request no reply and no default takes fails the test."""

    def respond(req: ScriptedRequest) -> Step:
        reply = replies.get(layout_name(req.user) or "", default)
        if reply is None:
            raise AssertionError(f"no scripted reply for this prompt: {req.user[-200:]}")
        return reply(req)

    return respond
