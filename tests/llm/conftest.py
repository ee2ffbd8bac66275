"""A scripted OpenAI/Anthropic-compatible server on 127.0.0.1, started per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from ragmeter.llm.scripted import Responder, ScriptedServer


@pytest.fixture
async def scripted() -> AsyncIterator[Callable[..., object]]:
    servers: list[ScriptedServer] = []

    async def start(responder: Responder, latency: float = 0.0) -> ScriptedServer:
        server = await ScriptedServer(responder, latency=latency).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        await server.stop()
