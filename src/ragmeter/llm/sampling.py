"""Sampling for repeated judgments (`run --repeat N`): a temperature and seed that the calls made inside a
`resampled` block use instead of the client's own, with the response cache optionally bypassed.

A context variable rather than a copy of the client: the repeats share the client's concurrency limit,
budget, usage meter and (for the local judge) its model server. asyncio tasks copy the context, so the
repeats of one query may run at once, each in its own block.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class Resample:
    temperature: float
    seed: int
    cache: bool  # False: neither read nor write the response cache (a repeat must be a fresh judgment)


_CURRENT: contextvars.ContextVar[Resample | None] = contextvars.ContextVar("ragmeter_resample", default=None)


@contextmanager
def resampled(temperature: float, seed: int, *, cache: bool) -> Iterator[Resample]:
    """Calls inside the block sample at `temperature` with `seed` (where the backend sends them)."""
    value = Resample(temperature, seed, cache)
    token = _CURRENT.set(value)
    try:
        yield value
    finally:
        _CURRENT.reset(token)


def current() -> Resample | None:
    return _CURRENT.get()
