"""Stage latency is the stage's own time: measured from the worker thread starting the system's call to its
return (not the time spent waiting for a free thread), with the system warmed up before any clock starts."""

from __future__ import annotations

import threading
import time

from ragmeter.models import EvalConfig, EvalDataset, EvalQuery
from ragmeter.run import run_evaluation


def _dataset(n: int) -> EvalDataset:
    queries = [
        EvalQuery(query_id=f"q{i}", question=f"question {i}", relevant_doc_ids=["d1"]) for i in range(n)
    ]
    return EvalDataset(name="lat", queries=queries)


class Sleepy:
    """A sync system whose retrieve sleeps; it records the time it spent inside each call."""

    name = "sleepy"

    def __init__(self) -> None:
        self.own_ms: dict[str, float] = {}
        self.events: list[str] = []
        self.lock = threading.Lock()

    def warm_up(self) -> None:
        with self.lock:
            self.events.append("warm_up")

    def retrieve(self, query: str, k: int) -> list[str]:
        t = time.perf_counter()
        time.sleep(0.03)
        with self.lock:
            self.events.append("retrieve")
            self.own_ms[query] = (time.perf_counter() - t) * 1000
        return ["d1"]


def test_retrieve_latency_excludes_waiting_for_a_worker_thread() -> None:
    system = Sleepy()
    # 32 queries in flight, far more than the default thread pool: most wait for a thread first.
    config = EvalConfig(concurrency=32, retrieval_top_k=[1], evaluate_generation=False)
    result = run_evaluation(_dataset(48), system, config, store=False)
    extra = [q.latency_ms["retrieve"] - system.own_ms[q.question] for q in result.per_query]
    assert min(extra) >= 0.0
    # The call's own time plus the wrapper's few microseconds; waiting for a thread was >= 30 ms each.
    assert max(extra) < 10.0, sorted(extra)[-5:]


def test_the_system_is_warmed_up_once_before_the_first_query() -> None:
    system = Sleepy()
    config = EvalConfig(concurrency=4, retrieval_top_k=[1], evaluate_generation=False)
    run_evaluation(_dataset(6), system, config, store=False)
    assert system.events[0] == "warm_up" and system.events.count("warm_up") == 1


def test_the_builtin_pipeline_builds_its_indexes_in_warm_up() -> None:
    from ragmeter.datasets import load_dataset
    from ragmeter.systems import build_system

    dataset = load_dataset("demo", seed=1)
    pipe = build_system("builtin", dataset=dataset, mode="fulltext", disable={"generation"})
    assert not pipe._ready
    pipe.warm_up()
    assert pipe._ready and pipe.chunks
