"""The run loop asks a system that offers `retrieve_batch` for its queries in batches; the stored results
are the same as one query at a time, and a failing batch falls back to one query at a time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner_fakes import KeywordSystem, make_dataset

from ragmeter.models import EvalConfig
from ragmeter.run import run_evaluation
from ragmeter.run.batching import BatchedRetrieval


class BatchKeywordSystem(KeywordSystem):
    """The keyword system with a sync `retrieve_batch` that counts its calls."""

    name = "keyword-batch"

    def __init__(self, *args: Any, fail_batches: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.batches: list[list[str]] = []
        self.fail_batches = fail_batches

    def retrieve_batch(self, questions: list[str], k: int) -> list[list[tuple[str, float, str]]]:
        import asyncio

        self.batches.append(list(questions))
        if self.fail_batches:
            raise RuntimeError("batch endpoint down")
        out = [asyncio.run(KeywordSystem.retrieve(self, q, k)) for q in questions]
        del self.calls[-len(questions) :]  # count single calls only from the loop
        return out


def _retrieved(run: Any) -> dict[str, list[tuple[str, float]]]:
    return {r.query_id: [(d.doc_id, d.score) for d in r.retrieved] for r in run.per_query}


def test_the_loop_retrieves_in_batches_with_the_same_results(tmp_path: Path) -> None:
    ds = make_dataset()
    config = EvalConfig(dataset="capitals", retrieval_top_k=[1, 3], extra={"semantic": False}, concurrency=4)
    single = KeywordSystem(ds)
    one = run_evaluation(ds, single, config, store=f"sqlite:///{tmp_path / 'a.db'}", progress=False)
    batched = BatchKeywordSystem(ds)
    many = run_evaluation(ds, batched, config, store=f"sqlite:///{tmp_path / 'b.db'}", progress=False)
    assert len(single.calls) == 12
    assert batched.calls == [] and [len(b) for b in batched.batches] == [12]
    assert _retrieved(one) == _retrieved(many) and all(_retrieved(many).values())
    assert one.aggregate["ndcg@3"] == many.aggregate["ndcg@3"]
    reported = [
        r.latency_ms["retrieve_batch_of_12"] for r in many.per_query if "retrieve_batch_of_12" in r.latency_ms
    ]
    assert len(reported) == 1 and reported[0] >= 0  # the call's time, once for its batch
    assert all("retrieve" not in r.latency_ms for r in many.per_query)  # no query claims a share
    assert many.aggregate["latency_retrieve_batch_of_12_ms"].n == 1
    assert all(r.latency_ms["total"] >= reported[0] for r in many.per_query)  # each waited for the batch


def test_a_failing_batch_falls_back_to_one_query_at_a_time(tmp_path: Path) -> None:
    ds = make_dataset()
    config = EvalConfig(dataset="capitals", retrieval_top_k=[3], extra={"semantic": False}, concurrency=2)
    system = BatchKeywordSystem(ds, fail_batches=True, fail_on={"Spain"})
    run = run_evaluation(ds, system, config, store=f"sqlite:///{tmp_path / 'c.db'}", progress=False)
    assert len(system.batches) == 1 and len(system.calls) == 12
    failed = [r for r in run.per_query if r.status == "failed"]
    assert [r.question for r in failed] == ["What is the capital of Spain?"]
    assert "backend unreachable" in (failed[0].error or "")


async def test_batches_are_at_most_size_and_group_by_k() -> None:
    ds = make_dataset()
    system = BatchKeywordSystem(ds)
    k_of = {q.query_id: (5 if q.query_id == "q04" else 3) for q in ds.queries}
    batcher = BatchedRetrieval(system, lambda q: k_of[q.query_id], size=5)
    batcher.expect(ds.queries)
    got = [await batcher.retrieve(q, k_of[q.query_id]) for q in ds.queries]
    assert all(g is not None for g in got)
    assert [len(b) for b in system.batches] == [5, 1, 5, 1]  # q04 (k=5) never joins a k=3 batch
    assert system.batches[1] == ["What is the capital of Portugal?"]
    assert await batcher.retrieve(ds.queries[0], 3) is None  # handed out once


class SlowBatchSystem(BatchKeywordSystem):
    """A batch call that takes 0.2 s: a per-query share would be far below any query's own wall time."""

    def retrieve_batch(self, questions: list[str], k: int) -> list[list[tuple[str, float, str]]]:
        import time

        time.sleep(0.2)
        return super().retrieve_batch(questions, k)


def test_stage_times_are_each_query_s_own_at_concurrency_one(tmp_path: Path) -> None:
    """The old loop gave each query 1/n of the call as its retrieve time while its `total` (measured from
    when it took its ready results) was far less: total < retrieve for all but the first query."""
    ds = make_dataset()
    config = EvalConfig(dataset="capitals", retrieval_top_k=[3], extra={"semantic": False}, concurrency=1)
    system = SlowBatchSystem(ds)
    run = run_evaluation(ds, system, config, store=f"sqlite:///{tmp_path / 'd.db'}", progress=False)
    assert [len(b) for b in system.batches] == [12]
    for r in run.per_query:
        stages = {s: ms for s, ms in r.latency_ms.items() if s != "total"}
        assert all(r.latency_ms["total"] >= ms for ms in stages.values()), r.latency_ms
    batch = run.aggregate["latency_retrieve_batch_of_12_ms"]
    assert batch.n == 1 and batch.p50 is not None and batch.p50 >= 200
    from rich.console import Console

    from ragmeter.cli.options import latency_table

    console = Console(width=120, record=True)
    console.print(latency_table(run))
    assert "retrieve (per batch of 12)" in console.export_text()


def test_batch_size_from_a_config_file_sets_the_batches(tmp_path: Path) -> None:
    from ragmeter.run import load_config

    path = tmp_path / "c.yaml"
    path.write_text(
        "dataset: capitals\nretrieval_top_k: [3]\nconcurrency: 3\nbatch_size: 8\nextra:\n  semantic: false\n"
    )
    config = load_config(path)
    ds = make_dataset()
    system = BatchKeywordSystem(ds)
    run = run_evaluation(ds, system, config, store=f"sqlite:///{tmp_path / 'd.db'}", progress=False)
    assert [len(b) for b in system.batches] == [8, 4]  # 12 queries, 8 per call
    assert system.calls == [] and (run.record or {})["batch_size"] == 8
    from ragmeter.records import RunRecord

    before = {k: v for k, v in (run.record or {}).items() if k != "batch_size"}  # a run stored before
    assert RunRecord.model_validate(before).batch_size == 64  # batched as it was then


def test_a_batch_size_below_one_is_refused_naming_the_file(tmp_path: Path) -> None:
    import pytest

    from ragmeter.errors import InputError
    from ragmeter.run import load_config

    path = tmp_path / "c.yaml"
    path.write_text("dataset: capitals\nbatch_size: 0\n")
    with pytest.raises(InputError) as err:
        load_config(path)
    assert "batch_size" in str(err.value) and "c.yaml" in str(err.value)
