"""Sequential gates in a real run: stored in a SQLite file, judges over HTTP (the scripted server).

A clearly passing gate stops early with the full run's decision; a borderline one goes to every query; a
stopped run resumes to the full run; the gate reads the seeded-order prefix, never completion order."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from seq_fakes import even_retrieve, good_retrieve, make_seq_dataset

from ragmeter.errors import InputError
from ragmeter.metrics.gate import check
from ragmeter.models import EvalConfig, MetricResult
from ragmeter.run import run_evaluation
from ragmeter.run.sequential import SequentialGate, SequentialSpec, seeded_order
from ragmeter.store import open_store


def _config(gates: dict[str, float] | None, *, alpha: float = 0.05, **over: Any) -> EvalConfig:
    extra: dict[str, Any] = {"semantic": False}
    if gates is not None:
        extra["sequential"] = {"gates": gates, "alpha": alpha}
    fields: dict[str, Any] = {
        "dataset": "synthetic-gate",
        "retrieval_top_k": [1, 3],
        "metrics": ["hit@1", "ndcg@3"],
        "evaluate_generation": False,
        "extra": extra,
    }
    return EvalConfig(**{**fields, **over})


def _rows(db: Path, run_id: str) -> int:
    with sqlite3.connect(db) as conn:
        (n,) = conn.execute("select count(*) from query_results where run_id = ?", (run_id,)).fetchone()
    return int(n)


def test_a_clearly_passing_gate_stops_early_with_the_full_runs_decision(tmp_path: Path) -> None:
    db = tmp_path / "seq.db"
    ds = make_seq_dataset()
    gates = {"hit@1": 0.7, "ndcg@3": 0.6}
    result = run_evaluation(ds, good_retrieve, _config(gates), store=f"sqlite:///{db}", progress=False)
    seq = result.sequential
    assert seq is not None and seq["stopped_early"] is True
    assert seq["decision"] == "pass"
    assert 0 < seq["queries_used"] <= seq["queries_evaluated"] < 200
    assert result.status == "completed" and result.n_queries == seq["queries_evaluated"]
    for metric, threshold in gates.items():
        lo, hi = seq["gates"][metric]["interval"]
        assert threshold <= lo <= hi <= 1.0
    # the full run decides the same
    full = run_evaluation(ds, good_retrieve, _config(None), store=f"sqlite:///{db}", progress=False)
    assert full.n_queries == 200 and check({m: full.aggregate[m].mean for m in gates}, gates) == []
    # stored: completed, the decision, the queries used, only the evaluated queries' rows
    with open_store(f"sqlite:///{db}") as store:
        stored = store.get_run(result.run_id or "")
    assert stored.status == "completed" and stored.sequential == seq
    assert _rows(db, result.run_id or "") == seq["queries_evaluated"]
    assert seq["saved"]["queries_not_evaluated"] == 200 - seq["queries_evaluated"]


def test_a_clearly_failing_gate_stops_early_and_fails(tmp_path: Path) -> None:
    ds = make_seq_dataset()
    result = run_evaluation(
        ds, even_retrieve, _config({"hit@1": 0.8}), store=f"sqlite:///{tmp_path / 'f.db'}", progress=False
    )
    seq = result.sequential
    assert seq is not None and seq["stopped_early"] and seq["decision"] == "fail"
    assert seq["gates"]["hit@1"]["interval"][1] < 0.8 and seq["queries_used"] < 200


def test_a_borderline_gate_goes_to_every_query(tmp_path: Path) -> None:
    ds = make_seq_dataset()  # even_retrieve: hit@1 is exactly 0.5 over the 200 queries
    db = tmp_path / "b.db"
    result = run_evaluation(
        ds, even_retrieve, _config({"hit@1": 0.5}), store=f"sqlite:///{db}", progress=False
    )
    seq = result.sequential
    assert seq is not None and seq["stopped_early"] is False and "saved" not in seq
    assert seq["queries_used"] == 200 and result.n_queries == 200 and _rows(db, result.run_id or "") == 200
    assert seq["decision"] == "pass" and seq["gates"]["hit@1"]["interval"] == pytest.approx([0.5, 0.5])


def test_a_stopped_run_resumes_to_the_full_run(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    ds = make_seq_dataset()
    stopped = run_evaluation(
        ds, good_retrieve, _config({"hit@1": 0.7}), store=f"sqlite:///{db}", progress=False
    )
    assert stopped.sequential is not None and stopped.sequential["stopped_early"]
    used = stopped.n_queries
    resumed = run_evaluation(
        ds, good_retrieve, None, store=f"sqlite:///{db}", resume=stopped.run_id, progress=False
    )
    assert resumed.run_id == stopped.run_id and resumed.status == "completed"
    assert resumed.n_queries == 200 and _rows(db, stopped.run_id or "") == 200  # each query once
    assert resumed.aggregate["hit@1"].mean == pytest.approx(0.9)
    seq = resumed.sequential
    assert seq is not None and seq["stopped_early"] is False
    assert seq["resumed_after_stop"]["queries_evaluated"] == used
    with open_store(f"sqlite:///{db}") as store:
        assert store.get_run(stopped.run_id or "").sequential == seq
    again = run_evaluation(
        ds, good_retrieve, None, store=f"sqlite:///{db}", resume=stopped.run_id, progress=False
    )
    assert again.n_queries == 200 and again.sequential == seq  # a second resume keeps the record of the stop


def test_the_gate_reads_the_seeded_order_prefix_not_completion_order() -> None:
    ds = make_seq_dataset(40)
    gate = SequentialGate(SequentialSpec({"hit@1": 0.5}, 0.05, seed=7), ds.queries)
    assert gate.order == seeded_order(40, 7) and sorted(gate.order) == list(range(40))
    order = [ds.queries[i] for i in gate.order]

    def result(q: Any, value: float) -> Any:
        from ragmeter.models import QueryEvalResult

        r = QueryEvalResult(query_id=q.query_id, question=q.question)
        return r.model_copy(update={"metrics": {"hit@1": MetricResult(name="hit@1", value=value)}})

    for q in reversed(order[1:]):  # everything but the first of the order finishes first
        assert gate.observe(result(q, 1.0)) is False
        assert gate.used == 0 and gate.bounds == {}
    gate.observe(result(order[0], 1.0))
    assert gate.used == 40 and gate.decisions["hit@1"] is True


def test_a_missing_value_counts_against_the_gate_on_both_sides() -> None:
    ds = make_seq_dataset(30)
    gate = SequentialGate(SequentialSpec({"exact_match": 0.5}, 0.05, seed=1), ds.queries)
    from ragmeter.models import QueryEvalResult

    for i in gate.order:
        q = ds.queries[i]
        r = QueryEvalResult(query_id=q.query_id, question=q.question)
        gate.observe(
            r.model_copy(update={"metrics": {"exact_match": MetricResult(name="exact_match", value=None)}})
        )
    # every value missing: the mean of the valid values could be anything in the range, so no decision
    assert (
        gate.used == 30 and gate.bounds["exact_match"] == (0.0, 1.0) and gate.decisions["exact_match"] is None
    )


def test_retrieval_measures_are_computed_per_query_as_the_full_run_computes_them(tmp_path: Path) -> None:
    ds = make_seq_dataset(50)
    full = run_evaluation(ds, good_retrieve, _config(None), store=False, progress=False)
    gate = SequentialGate(SequentialSpec({"ndcg@3": 0.5, "hit@1": 0.5}, 0.05, seed=3), ds.queries)
    for r in full.per_query:  # as the loop delivers them: the IR values are not there yet
        bare = r.model_copy(update={"metrics": {}})
        gate.observe(bare)
        for metric in ("ndcg@3", "hit@1"):
            assert gate.value(r.query_id, metric) == pytest.approx(r.metrics[metric].value, abs=1e-12)


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        ({"sequential": {"gates": {}, "alpha": 0.05}}, "needs --fail-under"),
        ({"sequential": {"gates": {"hit@1": 0.5}, "alpha": 1.0}}, r"alpha must be a number in \(0, 1\)"),
        ({"sequential": {"gates": {"hit@1": 0.5}, "alpha": 0.0}}, r"alpha must be a number in \(0, 1\)"),
        ({"sequential": {"gates": {"pass_rate_8": 50}, "alpha": 0.05}}, "no value per query"),
        ({"sequential": {"gates": {"latency_total_ms": 50}, "alpha": 0.05}}, "unbounded"),
    ],
)
def test_bad_sequential_settings_are_refused_before_anything_is_stored(
    tmp_path: Path, extra: dict[str, Any], match: str
) -> None:
    db = tmp_path / "bad.db"
    config = _config(None, extra={"semantic": False, **extra})  # the shape stored before typed fields
    with pytest.raises(InputError, match=match):
        run_evaluation(make_seq_dataset(20), good_retrieve, config, store=f"sqlite:///{db}", progress=False)
    with open_store(f"sqlite:///{db}") as store:
        assert store.list_runs() == []


async def test_a_judge_gate_over_http_stops_early_and_says_what_it_saved(tmp_path: Path) -> None:
    pytest.importorskip("aiohttp")
    from ragmeter.llm import from_spec
    from ragmeter.llm.scripted import ScriptedServer, Step
    from ragmeter.run import arun_evaluation

    def responder(req: Any) -> Step:
        number = re.search(r"Question: question (\d+)", req.user)
        if number is not None and int(number.group(1)) % 10 == 3:
            return Step(status=400, text="bad request")  # a failed judge call: a null grade
        return Step(text='{"reasoning": "fine", "grade": 9}')

    ds = make_seq_dataset()
    db = tmp_path / "judge.db"
    async with ScriptedServer(responder) as server:
        spec = f"openai-compatible:judge@{server.url}"
        llm = from_spec(spec, max_retries=0, concurrency=4)
        config = _config(
            {"retrieval_grade": 5.0}, use_llm_judge=True, judge_model=spec, metrics=["retrieval_grade"]
        )
        result = await arun_evaluation(
            ds, good_retrieve, config, store=f"sqlite:///{db}", llm=llm, progress=False
        )
        await llm.aclose()
    seq = result.sequential
    assert seq is not None and seq["stopped_early"] and seq["decision"] == "pass"
    n = seq["queries_evaluated"]
    assert result.aggregate["retrieval_grade"].n_null > 0  # the nulls counted low, and it still passed
    assert n < 200 and result.usage is not None
    calls = result.usage["judge"]["calls"] + result.usage["judge"]["failed_calls"]
    assert calls >= n - 2  # one judge call per evaluated query
    saved = seq["saved"]
    assert saved["judge_calls"] == pytest.approx(result.usage["judge"]["calls"] / n * (200 - n), rel=1e-6)
    assert saved["judge_calls"] > 0


def test_a_sequential_run_that_died_resumes_sequentially(tmp_path: Path) -> None:
    from ragmeter.run.executor import LocalExecutor

    class DiesAfterFive(LocalExecutor):
        """The local executor, and the process 'dies' (an error escapes the loop) after five results."""

        async def execute(self, record: Any, pending: Any, on_result: Any) -> None:
            seen: list[str] = []

            def counting(position: int, result: Any) -> Any:
                seen.append(result.query_id)
                if len(seen) > 5:
                    raise RuntimeError("the machine went away")
                return on_result(position, result)

            await super().execute(record, pending, counting)

    db = tmp_path / "died.db"
    ds = make_seq_dataset()
    config = _config({"hit@1": 0.7}, concurrency=1)
    with pytest.raises(RuntimeError, match="went away"):
        run_evaluation(
            ds,
            good_retrieve,
            config,
            store=f"sqlite:///{db}",
            progress=False,
            executor=DiesAfterFive(ds, system=good_retrieve),
        )
    with open_store(f"sqlite:///{db}") as store:
        (dead,) = store.list_runs()
    assert dead.status == "failed" and dead.run_id is not None and _rows(db, dead.run_id) == 5
    resumed = run_evaluation(
        ds, good_retrieve, None, store=f"sqlite:///{db}", resume=dead.run_id, progress=False
    )
    seq = resumed.sequential
    assert seq is not None and seq["stopped_early"] and seq["decision"] == "pass"
    # the five stored results are the start of the seeded order, counted once; it stopped where a run
    # that never died stops
    fresh = run_evaluation(
        ds, good_retrieve, _config({"hit@1": 0.7}, concurrency=1), store=False, progress=False
    )
    assert fresh.sequential is not None
    assert seq["queries_used"] == fresh.sequential["queries_used"] == _rows(db, dead.run_id) < 200
