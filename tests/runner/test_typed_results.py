"""A run's record, usage and sequential blocks are typed models whose JSON is the dict each block was, and
the metric plan is derived once, stored in the record, and read back from it by the loop."""

from __future__ import annotations

import json
from pathlib import Path

from runner_fakes import KeywordSystem, make_dataset
from seq_fakes import good_retrieve, make_seq_dataset

from ragmeter.models import EvalConfig, EvalRunResult, QueryEvalResult
from ragmeter.records import PlanRef, RunRecord
from ragmeter.result_models import RunUsage, SequentialOutcome
from ragmeter.run import run_evaluation
from ragmeter.run.loop import record_plan
from ragmeter.run.sequential import SequentialGate, SequentialSpec, sequential_block
from ragmeter.score.usage import run_usage

LINE = {"calls": 2, "input_tokens": 30, "output_tokens": 4, "cost_usd": None, "cost_note": "no price for m"}


def test_the_usage_block_reads_and_writes_as_the_dict_it_was() -> None:
    results = [
        QueryEvalResult(
            query_id=f"q{i}", usage={"judge": {"answer_correctness": LINE}, "generator": {"gen": LINE}}
        )
        for i in range(3)
    ]
    block = run_usage(results, {"judge": "m"})
    assert block is not None
    block["spend_cap"] = {"cap_usd": 1.0, "spent_usd": 0.5}
    typed = RunUsage.model_validate(block)
    assert typed.judge is not None and typed.judge.calls == 6 and typed.total is not None
    assert typed.total.cost_usd is None and typed.model_dump(mode="json") == block
    assert typed["judge_by_metric"]["answer_correctness"]["calls"] == 6  # read by key, as the dict was
    assert "escalation" not in typed.model_dump(mode="json")  # absent blocks stay absent


def test_the_sequential_block_reads_and_writes_as_the_dict_it_was() -> None:
    ds = make_seq_dataset(20)
    gate = SequentialGate(SequentialSpec({"hit@1": 0.5, "ndcg@3": 0.2}, 0.05, 7), ds.queries)
    block = sequential_block(gate, None, 20, None)
    assert block is not None and block["gates"]["hit@1"]["interval"] is None  # nothing observed yet
    typed = SequentialOutcome.model_validate(block)
    assert typed.gates is not None and typed.gates["hit@1"].decision == "undecided"
    assert typed.model_dump(mode="json") == block
    resumed = sequential_block(None, {**block, "stopped_early": True}, 20, None)
    assert SequentialOutcome.model_validate(resumed).model_dump(mode="json") == resumed


def test_a_run_json_keeps_its_blocks_and_reads_back_typed(tmp_path: Path) -> None:
    ds = make_seq_dataset(30)
    config = EvalConfig(
        dataset=ds.name,
        retrieval_top_k=[1, 3],
        metrics=["hit@1"],
        evaluate_generation=False,
        semantic=False,
        sequential={"gates": {"hit@1": 0.2}, "alpha": 0.05},
        output=str(tmp_path / "run.json"),
    )
    run = run_evaluation(ds, good_retrieve, config, store=False, progress=False)
    assert isinstance(run.sequential, SequentialOutcome) and isinstance(run.record, RunRecord)
    data = json.loads((tmp_path / "run.json").read_text())
    assert data["sequential"] == run.sequential.dump() and data["record"] == run.record.dump()
    back = EvalRunResult.model_validate(data)
    assert back.sequential == run.sequential and back.record == run.record


def test_the_plan_is_stored_in_the_record_and_the_loop_reads_it() -> None:
    ds = make_dataset(3)
    config = EvalConfig(
        dataset="capitals", retrieval_top_k=[1, 3], metrics=["mrr", "token_f1"], semantic=False
    )
    run = run_evaluation(ds, KeywordSystem(ds), config, store=False, progress=False)
    assert run.record is not None and run.record.plan is not None
    assert run.record.plan.retrieval == ["mrr"] and run.record.plan.lexical == ["token_f1"]
    # the loop plans from the record, not from its metrics list: a stored plan is what it computes
    other = run.record.model_copy(
        update={"plan": PlanRef(retrieval=["hit@1"], lexical=None, judges=[], semantic=False, custom=[])}
    )
    assert record_plan(other, judged=False).retrieval == ("hit@1",)
    # a record stored before plans were (schema 1) has its plan derived from its metrics and cut-offs
    old = RunRecord.model_validate({**run.record.dump(), "schema_version": 1, "plan": None})
    assert record_plan(old, judged=False).retrieval == ("mrr",)
