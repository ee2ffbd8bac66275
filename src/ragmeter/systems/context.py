"""The query being evaluated, for the system that answers it: `current_query()` inside `retrieve` or
`answer` returns its id, question and metadata (None outside a run).

The protocol passes a system the question text only, and two queries may ask the same question; a system
that keeps per-query state (a diagnose replay's stored contexts, a user's cache or trace) reads the id here.
The run loop sets it around each query's work (ragmeter.run.loop); asyncio tasks and `to_thread` carry it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class QueryContext:
    query_id: str
    question: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


_CURRENT: contextvars.ContextVar[QueryContext | None] = contextvars.ContextVar(
    "ragmeter_current_query", default=None
)


def current_query() -> QueryContext | None:
    """The query the run loop is evaluating now, or None (called outside a run, or in a batch call that
    serves several queries at once: `retrieve_batch`)."""
    return _CURRENT.get()


@contextmanager
def query_context(
    query_id: str, question: str, metadata: Mapping[str, Any] | None = None
) -> Iterator[QueryContext]:
    """Make `query_id` the current query inside the block."""
    ctx = QueryContext(query_id, question, dict(metadata or {}))
    token = _CURRENT.set(ctx)
    try:
        yield ctx
    finally:
        _CURRENT.reset(token)
