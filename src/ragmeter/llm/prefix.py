"""The shared prompt prefix of the calls being made: set by whoever lays prompts out for caching (the judges:
ragmeter.judges.prompts.layered), read by the backends that can use it.

    with shared_prefix(user_text_prefix):
        await client.complete(messages)

The Anthropic backend marks the system text and this prefix of the first user message with
`cache_control` (the API then caches them), the local backend sends every call with the same prefix to the
same llama.cpp slot (which then reuses the prefix's KV cache). Other backends need nothing: OpenAI and
vLLM cache any repeated prefix by themselves.
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Iterator
from contextvars import ContextVar

_PREFIX: ContextVar[str | None] = ContextVar("ragmeter_shared_prefix", default=None)


@contextlib.contextmanager
def shared_prefix(text: str | None) -> Iterator[None]:
    """Calls made in this block start their first user message with `text` (None: no shared prefix)."""
    token = _PREFIX.set(text or None)
    try:
        yield
    finally:
        _PREFIX.reset(token)


def current() -> str | None:
    return _PREFIX.get()


def split_user(content: str) -> tuple[str, str] | None:
    """(the shared prefix, the rest) of a user message that starts with the current prefix, else None."""
    prefix = _PREFIX.get()
    if not prefix or not content.startswith(prefix) or len(content) == len(prefix):
        return None
    return prefix, content[len(prefix) :]


def slot_of(n_slots: int) -> int | None:
    """The server slot for calls with the current prefix (a stable hash of it), None without a prefix."""
    prefix = _PREFIX.get()
    if not prefix or n_slots < 1:
        return None
    return zlib.crc32(prefix.encode("utf-8")) % n_slots
