"""Executors: where the queries of a run are evaluated. The seam where work leaves the machine.

An executor gets the run record, the pending queries (position in the run, query) and a callback; it calls
`on_result(position, result)` once per query as each completes, in any order, from the event loop of
`execute`, and hands the queries out in the order given. When `on_result` returns True (a sequential gate
is settled) no further query is handed out: those in flight finish and are delivered, then `execute` returns. The caller stores each result at once (crash-safe) and scores the run afterwards from the store.
Workers build their system and LLM clients FROM THE RECORD (`QueryWorker.build`), so a remote executor
(Ray) ships the record and the queries, not Python objects. See docs/architecture.md.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from ragmeter.llm.spend import for_query
from ragmeter.models import EvalDataset, EvalQuery, QueryEvalResult
from ragmeter.records import RunRecord
from ragmeter.run.loop import QueryWorker

OnResult = Callable[[int, QueryEvalResult], Awaitable[bool | None] | bool | None]


async def deliver(on_result: OnResult, position: int, result: QueryEvalResult) -> bool:
    """Hand one result to the caller; True when the caller asks that no further query be started."""
    done = on_result(position, result)
    if inspect.isawaitable(done):
        done = await done
    return bool(done)


class Executor(Protocol):
    name: str

    async def execute(
        self, record: RunRecord, pending: Sequence[tuple[int, EvalQuery]], on_result: OnResult
    ) -> None: ...


class LocalExecutor:
    """asyncio in this process: one worker (system + clients) shared by `concurrency` tasks.

    `system`, `judge` and `generator` are in-process objects that replace what the record would build (an
    in-process system whose fingerprint matched the record's, clients passed through the Python API)."""

    name = "local"

    def __init__(
        self,
        dataset: EvalDataset,
        *,
        system: Any = None,
        judge: Any = None,
        generator: Any = None,
        concurrency: int | None = None,
    ) -> None:
        self.dataset = dataset
        self.system, self.judge, self.generator = system, judge, generator
        self.concurrency = concurrency

    async def execute(
        self, record: RunRecord, pending: Sequence[tuple[int, EvalQuery]], on_result: OnResult
    ) -> None:
        if not pending:
            return
        worker = QueryWorker.build(
            record, self.dataset, system=self.system, judge=self.judge, generator=self.generator
        )
        await worker.warm_up()
        worker.expect([q for _, q in pending])  # batched retrieval where the system offers it
        queue: asyncio.Queue[tuple[int, EvalQuery]] = asyncio.Queue()
        for item in pending:
            queue.put_nowait(item)

        stop = asyncio.Event()

        async def run_one() -> None:
            while not stop.is_set():
                try:
                    position, query = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                for_query(query.query_id)  # a request refused at a spend cap marks this query
                result = await worker.evaluate(query)
                if await deliver(on_result, position, result):
                    stop.set()

        n = max(1, min(self.concurrency or record.concurrency, len(pending)))
        try:
            await asyncio.gather(*(run_one() for _ in range(n)))
        finally:
            await worker.aclose()
