"""The Ray executor: the queries of a run evaluated by a pool of Ray actors.

Each actor builds its own system and LLM clients FROM THE RUN RECORD (`QueryWorker.build`, as the local
executor does), evaluates up to `concurrency` queries at once (an async actor), and returns plain JSON. The
driver streams results back as they complete and hands each to `on_result`, which stores it once: scoring
and the store stay on the driver. What is sent to workers: the run record (no secrets: credentials are
removed from specs, API keys come from the workers' environment through `runtime_env`), the dataset once
through the object store, and one query per call.

Failures: an actor that dies is restarted by Ray and its in-flight calls are retried (`max_restarts`,
`max_task_retries`); a query whose calls keep failing is recorded as a failed query with the reason; if
every actor is gone, the run stops and is resumable.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from ragmeter.distributed.cluster import ensure_ray
from ragmeter.models import EvalDataset, EvalQuery, QueryEvalResult
from ragmeter.records import RunRecord
from ragmeter.run.executor import OnResult, deliver

DEFAULT_CONCURRENCY_PER_WORKER = 8
# A query whose actor died (after Ray's own restarts and retries) goes to another actor this many times in all.
MAX_ACTOR_ATTEMPTS = 2


class QueryActor:
    """Runs inside a Ray worker process (wrapped by `ray.remote` in RayExecutor)."""

    def __init__(self, record: dict[str, Any], dataset: EvalDataset) -> None:
        self.record = RunRecord.model_validate(record)
        self.dataset = dataset
        self.worker: Any = None
        self.lock = asyncio.Lock()

    async def prepare(self) -> None:
        """Build the system and warm it up, once per actor (the executor awaits this before sending queries)."""
        from ragmeter.run.loop import QueryWorker

        async with self.lock:  # calls may arrive together: build the system once
            if self.worker is None:
                self.worker = QueryWorker.build(self.record, self.dataset)
                await self.worker.warm_up()

    async def evaluate(self, query: dict[str, Any]) -> dict[str, Any]:
        if self.worker is None:  # prepared by the executor; built here only if it was not
            await self.prepare()
        result: QueryEvalResult = await self.worker.evaluate(EvalQuery.model_validate(query))
        return result.model_dump(mode="json")

    def pid(self) -> int:
        import os

        return os.getpid()


@dataclass(eq=False)
class RayExecutor:
    """`--executor ray[:ADDRESS]`: `workers` actors x `concurrency` queries in flight each."""

    name = "ray"

    dataset: EvalDataset
    _: KW_ONLY
    address: str | None = None
    workers: int | None = None
    concurrency: int | None = None
    max_restarts: int = 2
    max_task_retries: int = 2
    num_cpus_per_worker: float = 0.5
    actors: list[Any] = field(default_factory=list, init=False, repr=False)

    def _per_worker(self, record: RunRecord) -> int:
        """Queries in flight per worker: as asked, else the run's concurrency up to the default."""
        return self.concurrency or max(1, min(DEFAULT_CONCURRENCY_PER_WORKER, record.concurrency))

    def _pool(self, ray: Any, record: RunRecord, n_pending: int) -> list[Any]:
        cpus = int(ray.cluster_resources().get("CPU", 1))
        n = max(1, min(self.workers or cpus, n_pending))
        per = self._per_worker(record)
        actor_cls = ray.remote(
            num_cpus=self.num_cpus_per_worker,
            max_restarts=self.max_restarts,
            max_task_retries=self.max_task_retries,
        )(QueryActor)
        dataset_ref = ray.put(self.dataset)
        record_json = record.dump()
        return [actor_cls.options(max_concurrency=per).remote(record_json, dataset_ref) for _ in range(n)]

    async def execute(
        self, record: RunRecord, pending: Sequence[tuple[int, EvalQuery]], on_result: OnResult
    ) -> None:
        if not pending:
            return
        ray = ensure_ray(self.address)
        from ray.exceptions import RayActorError, RayError

        self.actors = self._pool(ray, record, len(pending))
        per = self._per_worker(record)
        queue: asyncio.Queue[tuple[int, EvalQuery]] = asyncio.Queue()
        for item in pending:
            queue.put_nowait(item)
        dead: set[int] = set()
        attempts: dict[int, int] = {}
        remaining = [len(pending)]  # queries not yet delivered (a requeued one is still remaining)
        stop = asyncio.Event()  # on_result asked for no further query (a settled sequential gate)

        async def hand_back(position: int, result: QueryEvalResult) -> None:
            remaining[0] -= 1
            if await deliver(on_result, position, result):
                stop.set()

        def mark_dead(actor_index: int, exc: BaseException) -> None:
            dead.add(actor_index)
            if len(dead) == len(self.actors):
                raise RuntimeError(f"every Ray worker died; last: {_reason(exc)}") from None

        async def start(actor_index: int) -> None:
            """Build the actor's system once, then run its `per` query loops: no query waits on a slow start."""
            try:
                await self.actors[actor_index].prepare.remote()
            except RayActorError as exc:
                mark_dead(actor_index, exc)
                return
            except RayError:
                pass  # building the system failed in the worker: each query it takes reports why, as before
            await asyncio.gather(*(drive(actor_index) for _ in range(per)))

        async def drive(actor_index: int) -> None:
            actor = self.actors[actor_index]
            while actor_index not in dead and not stop.is_set():
                try:
                    position, query = queue.get_nowait()
                except asyncio.QueueEmpty:
                    if remaining[0] <= 0:
                        return
                    await asyncio.sleep(0.05)  # a query in flight elsewhere may come back (its actor died)
                    continue
                try:
                    payload = await actor.evaluate.remote(query.model_dump(mode="json"))
                    result = QueryEvalResult.model_validate(payload)
                except RayActorError as exc:  # the actor is gone for good (its restarts are used up)
                    mark_dead(actor_index, exc)
                    attempts[position] = attempts.get(position, 0) + 1
                    if attempts[position] < MAX_ACTOR_ATTEMPTS:  # perhaps only in flight on a dying actor
                        queue.put_nowait((position, query))
                        return
                    result = _failed(query, f"its worker died {attempts[position]} times: {_reason(exc)}")
                except RayError as exc:  # the task raised inside the worker, after Ray's retries
                    result = _failed(query, f"ray worker error: {_reason(exc)}")
                await hand_back(position, result)

        try:
            await asyncio.gather(*(start(i) for i in range(len(self.actors))))
        finally:
            for actor in self.actors:
                ray.kill(actor, no_restart=True)
            self.actors = []


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:500]


def _failed(query: EvalQuery, reason: str) -> QueryEvalResult:
    return QueryEvalResult(
        query_id=query.query_id,
        question=query.question,
        ground_truth_answer=query.ground_truth_answer,
        status="failed",
        error=reason,
    )


def executor_from_spec(spec: str | None, dataset: EvalDataset, **kwargs: Any) -> Any:
    """'local' -> None (the caller's default LocalExecutor); 'ray[:ADDRESS]' -> a RayExecutor."""
    from ragmeter.models import parse_executor

    kind, address = parse_executor(spec)
    if kind == "local":
        return None
    return RayExecutor(dataset, address=address, **kwargs)
