"""Retrieval in batches for the run loop, for systems that offer `retrieve_batch(queries, k)`.

The executor tells the batcher which queries are coming (`expect`); the first query of a run asks for
its results and the batcher fetches it together with the next queries still to come that need the same
k, in ONE `retrieve_batch` call (on a worker thread when the method is sync). The call's time (the
system's own, measured where it runs) is reported once per batch, by the query that asked for it, as the
stage `retrieve_batch_of_<size>`: its p50/p95 are over batches, and no query claims a share it did not
spend alone. Every query of the batch knows when the call started, so that its `total` runs from its first
stage (the batch) to its last. A batch that fails is not retried as a batch: each of its queries then
retrieves on its own, so a bad query fails alone.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ragmeter.models import EvalQuery
from ragmeter.systems import Retrieved
from ragmeter.systems.base import coerce_results

BATCH_SIZE = 64  # a batcher made without a size (runs recorded before `batch_size` was wired also used 64)


def batch_method(system: Any) -> Any:
    """The system's `retrieve_batch`, or None when it has none."""
    fn = getattr(system, "retrieve_batch", None)
    return fn if callable(fn) else None


@dataclass(frozen=True)
class Batched:
    """One query's results from a batch call, and that call's timing."""

    results: list[Retrieved]
    seconds: float  # the whole call's time
    started: float  # time.perf_counter() when the call began
    size: int  # queries in the call
    reports: bool  # this query asked for the batch: it records the call's time (once per batch)

    @property
    def stage(self) -> str:
        return f"retrieve_batch_of_{self.size}"


class BatchedRetrieval:
    """Results fetched ahead in batches, handed out once per query id."""

    def __init__(self, system: Any, k_of: Callable[[EvalQuery], int], size: int = BATCH_SIZE) -> None:
        self.system = system
        self.fn = batch_method(system)
        self.k_of = k_of
        self.size = max(1, size)
        self._upcoming: list[EvalQuery] = []
        self._position: dict[str, int] = {}
        self._ready: dict[str, tuple[int, Batched]] = {}
        self._asked: set[str] = set()  # fetched, in flight, or given up on
        self._lock = asyncio.Lock()
        self.calls = 0  # retrieve_batch calls made (for tests and progress)

    def expect(self, queries: Sequence[EvalQuery]) -> None:
        self._upcoming = list(queries)
        self._position = {q.query_id: i for i, q in enumerate(self._upcoming)}

    async def retrieve(self, query: EvalQuery, k: int) -> Batched | None:
        """`query`'s results at `k` from a batch, with the batch's timing, or None: retrieve it on its own."""
        if self.fn is None or query.query_id not in self._position:
            return None
        async with self._lock:
            if query.query_id not in self._asked:
                await self._fetch(query, k)
            got = self._ready.pop(query.query_id, None)
        if got is None or got[0] != k:
            return None
        return got[1]

    async def _fetch(self, first: EvalQuery, k: int) -> None:
        batch = [first]
        for q in self._upcoming[self._position[first.query_id] + 1 :]:
            if len(batch) == self.size:
                break
            if q.query_id not in self._asked and self.k_of(q) == k:
                batch.append(q)
        self._asked.update(q.query_id for q in batch)
        questions = [q.question for q in batch]
        source = getattr(self.system, "name", type(self.system).__name__)
        fn = self.fn

        def timed() -> tuple[Any, float, float]:  # the system's own time, measured in the thread it runs in
            t = time.perf_counter()
            out = fn(questions, k)
            return out, t, time.perf_counter() - t

        try:
            if inspect.iscoroutinefunction(fn):
                started = time.perf_counter()
                raw = await fn(questions, k)
                seconds = time.perf_counter() - started
            else:
                raw, started, seconds = await asyncio.to_thread(timed)
            raw = list(raw)
            if len(raw) != len(batch):
                return  # a system that answered the wrong number of lists: each query goes alone
            results = [coerce_results(r, source=source) for r in raw]
        except Exception:  # the queries retrieve one by one and each records its own error
            return
        finally:
            self.calls += 1
        for q, r in zip(batch, results, strict=True):
            self._ready[q.query_id] = (k, Batched(r, seconds, started, len(batch), reports=q is first))
