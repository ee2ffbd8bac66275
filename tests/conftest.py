"""Shared test fixtures: where the real data and the IR cross-check fixtures live."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


def _shared(env: str, sub: str) -> Path:
    value = os.environ.get(env)
    return Path(value) if value else REPO.parent / "shared" / sub


@pytest.fixture(scope="session")
def data_dir() -> Path:
    path = _shared("RAGMETER_DATA_DIR", "datasets")
    if not path.is_dir():
        pytest.skip(f"real datasets not found at {path} (set RAGMETER_DATA_DIR)")
    return path


@pytest.fixture(scope="session")
def crosscheck_dir() -> Path:
    path = _shared("RAGMETER_CROSSCHECK_DIR", "ir_crosscheck")
    if not path.is_dir():
        pytest.skip(f"IR cross-check fixtures not found at {path} (set RAGMETER_CROSSCHECK_DIR)")
    return path


@pytest.fixture
async def scripted() -> AsyncIterator[Callable[..., Any]]:
    """Start scripted OpenAI/Anthropic-compatible servers on 127.0.0.1; all stopped after the test."""
    from ragmeter.llm.scripted import Responder, ScriptedServer

    servers: list[ScriptedServer] = []

    async def start(responder: Responder, latency: float = 0.0) -> ScriptedServer:
        server = await ScriptedServer(responder, latency=latency).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        await server.stop()
