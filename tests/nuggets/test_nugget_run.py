"""Nugget metrics end to end over real HTTP: a run with --nuggets against the constructed case (answers that
support known nuggets get known scores; contexts lacking a vital nugget show it lost; ceil(nuggets / 10) calls
per distinct passage), a failed batch as null with the reason, and rescore against an edited set, which
`runs compare` then refuses for the nugget metrics only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from nugget_fakes import NUGGETS, Assigner, FixedSystem, dataset, write_set

from ragmeter.errors import InputError
from ragmeter.llm.scripted import Step
from ragmeter.models import EvalConfig, EvalRunResult
from ragmeter.score.nugget_plan import default_names

pytest.importorskip("aiohttp")


async def _run(server_url: str, db: str, nuggets: Path, style: str = "nuggetizer") -> EvalRunResult:
    from ragmeter.run import arun_evaluation

    config = EvalConfig(
        dataset="nuggets-case",
        retrieval_top_k=[1, 3],
        use_llm_judge=True,
        judge_model=f"openai-compatible:judge@{server_url}",
        metrics=["ndcg@3", *default_names([1, 3])],
        extra={"semantic": False, "context_k": 1, "nuggets": {"path": str(nuggets), "prompt": style}},
    )
    return await arun_evaluation(dataset(), FixedSystem(), config, store=db, progress=False)


def _values(run: EvalRunResult, qid: str) -> dict[str, Any]:
    row = next(r for r in run.per_query if r.query_id == qid)
    return {n: m.value for n, m in row.metrics.items()}


@pytest.mark.parametrize("style", ["nuggetizer", "ours"])
async def test_known_scores_lost_nuggets_and_call_counts(tmp_path: Path, scripted: Any, style: str) -> None:
    assigner = Assigner()
    server = await scripted(assigner)
    nuggets = write_set(tmp_path / "set.jsonl")
    run = await _run(server.url, f"sqlite:///{tmp_path / 'r.db'}", nuggets, style)
    qa = _values(run, "qa")
    # answer: n1 support, n3 partial (its first three words), the rest not: 2 vital, 12 nuggets
    assert qa["nugget_vital"] == 0.5 and qa["nugget_vital_strict"] == 0.5
    assert qa["nugget_all"] == pytest.approx(1.5 / 12) and qa["nugget_all_strict"] == pytest.approx(1 / 12)
    assert qa["nugget_weighted"] == pytest.approx(1.25 / 7) and qa["nugget_weighted_strict"] == pytest.approx(
        1 / 7
    )
    assert qa["nugget_recall@1"] == pytest.approx(1 / 12) and qa["nugget_recall@3"] == pytest.approx(2 / 12)
    assert qa["nugget_context_vital"] == 0.5  # context_k 1: only d-capital was given
    # n2 (vital) was retrieved (d-seine, rank 2) but not given to the generator
    row = next(r for r in run.per_query if r.query_id == "qa")
    assert qa["nugget_lost_context"] == 0.5 and row.metrics["nugget_lost_context"].details["nugget_ids"] == [
        "n2"
    ]
    assert qa["nugget_lost_retrieval"] == 0.0 and qa["nugget_lost_generation"] == 0.0
    qb = _values(run, "qb")
    qb_row = next(r for r in run.per_query if r.query_id == "qb")
    assert qb["nugget_lost_retrieval"] == 1.0  # nothing about Rome was retrieved
    assert qb_row.metrics["nugget_lost_retrieval"].details["nugget_ids"] == ["m1", "m2"]
    assert qb["nugget_unsourced"] == 0.5  # the answer states m1 from no context
    assert qb_row.metrics["nugget_unsourced"].details["nugget_ids"] == ["m1"]
    qc_row = next(r for r in run.per_query if r.query_id == "qc")
    assert qc_row.metrics["nugget_vital"].value is None and "no vital nuggets" in (
        qc_row.metrics["nugget_vital"].error or ""
    )
    assert qc_row.metrics["nugget_all"].value == 1.0
    # calls: ceil(nuggets / 10) per distinct passage (the answer, the contexts, each top-k set)
    # qa: answer, [d-capital] (contexts = top-1), [d-capital, d-seine, d-weather] (top-3 = all): 3 x 2
    # qb: answer, [d-weather] (contexts = top-1 = top-3 = all): 2 x 1; qc: answer, [d-seine]: 2 x 1
    assert assigner.calls == {
        "What is the capital of France?": 6,
        "What is the capital of Italy?": 2,
        "Where is Paris?": 2,
    }
    version = row.metrics["nugget_vital"].version or ""
    assert version.endswith(";nuggets=" + json.loads(run.versions["nuggets"])["hash"])
    assert ("nugget_assign_nuggetizer/" if style == "nuggetizer" else "nugget_assign/") in version
    if style == "nuggetizer":  # the registry's version is the default prompt's; each value adds the set
        import ragmeter.metrics as rm

        assert (
            version
            == rm.get("nugget_vital").version + ";nuggets=" + json.loads(run.versions["nuggets"])["hash"]
        )


async def test_a_failed_batch_is_null_with_its_reason(tmp_path: Path, scripted: Any) -> None:
    server = await scripted(Assigner(fail_when="Filler fact number 11"))  # qa's second batch (n11, n12)
    run = await _run(server.url, f"sqlite:///{tmp_path / 'r.db'}", write_set(tmp_path / "set.jsonl"))
    row = next(r for r in run.per_query if r.query_id == "qa")
    m = row.metrics["nugget_all"]
    assert m.value is None and "n11" in (m.error or "") and "unusable reply" in (m.error or "")
    assert m.details["assignments"]["n1"] == "support"  # the first batch's labels are kept
    # the lost-at-stage metrics read only the vital nuggets (first batch): they keep their values
    assert row.metrics["nugget_lost_context"].value == 0.5
    assert _values(run, "qb")["nugget_vital"] == 0.5  # other queries unaffected


async def test_rescore_with_an_edited_set_and_compare_refuses_nugget_metrics_only(
    tmp_path: Path, scripted: Any
) -> None:
    from ragmeter.experiments.version_guard import check_comparable, version_conflicts
    from ragmeter.run.rescore import arescore
    from ragmeter.store.api import open_store

    server = await scripted(Assigner())
    db = f"sqlite:///{tmp_path / 'r.db'}"
    first = write_set(tmp_path / "set.jsonl")
    a = await _run(server.url, db, first)
    b = await _run(server.url, db, first)
    assert version_conflicts(a, b) == []
    edited = json.loads(json.dumps(NUGGETS))
    edited[0]["nuggets"][1]["importance"] = "okay"  # n2 is okay now: qa has one vital nugget
    second = write_set(tmp_path / "edited.jsonl", edited)
    store = open_store(db)
    try:
        assert b.run_id is not None
        b2 = await arescore(b.run_id, store=store, nuggets=str(second), dataset=dataset())
    finally:
        store.close()
    assert _values(b2, "qa")["nugget_vital"] == 1.0  # n1 of 1 vital
    assert _values(b2, "qa")["nugget_lost_context"] == 0.0
    conflicts = version_conflicts(a, b2)
    assert conflicts and all(c.startswith("nugget_") for c in conflicts)
    assert {c.split(":")[0] for c in conflicts} == set(default_names([1, 3]))
    with pytest.raises(InputError, match="nugget_"):
        check_comparable([a, b2], metrics=None)
    assert check_comparable([a, b2], metrics=["ndcg@3"]) == []
    assert json.loads(b2.versions["nuggets"])["path"].endswith("edited.jsonl")


async def test_a_changed_set_is_refused_on_resume_and_nugget_metrics_need_a_set(tmp_path: Path) -> None:
    from ragmeter.run.prepare import validate

    nuggets = write_set(tmp_path / "set.jsonl")
    base = EvalConfig(
        dataset="nuggets-case", use_llm_judge=True, judge_model="openai-compatible:j@http://127.0.0.1:9/v1"
    )
    with pytest.raises(InputError, match="needs a nugget set"):
        validate(dataset(), FixedSystem(), base.model_copy(update={"metrics": ["nugget_vital"]}))
    stale = {"path": str(nuggets), "hash": "000000000000"}
    with pytest.raises(InputError, match="changed since the run was made"):
        validate(dataset(), FixedSystem(), base.model_copy(update={"nuggets": stale}))
    ok = validate(dataset(), FixedSystem(), base.model_copy(update={"nuggets": {"path": str(nuggets)}}))
    assert "nugget_vital" in ok.plan.judges and ok.config.nuggets["hash"]


async def test_with_repeats_nugget_metrics_are_judged_once(tmp_path: Path, scripted: Any) -> None:
    from ragmeter.run import arun_evaluation

    assigner = Assigner()
    server = await scripted(assigner)
    config = EvalConfig(
        dataset="nuggets-case",
        retrieval_top_k=[3],
        use_llm_judge=True,
        judge_model=f"openai-compatible:judge@{server.url}",
        metrics=["nugget_vital", "groundedness"],
        repeat=2,
        extra={"semantic": False, "context_k": 1, "nuggets": {"path": str(write_set(tmp_path / "s.jsonl"))}},
    )
    run = await arun_evaluation(
        dataset(), FixedSystem(), config, store=f"sqlite:///{tmp_path / 'r.db'}", progress=False
    )
    assert _values(run, "qa")["nugget_vital"] == 0.5
    row = next(r for r in run.per_query if r.query_id == "qa")
    assert "groundedness" in row.repeats and "nugget_vital" not in row.repeats


async def test_without_an_answer_the_answer_metrics_are_null_and_retrieval_ones_kept() -> None:
    from ragmeter.judges.nuggets import NuggetQuery, nugget_scores
    from ragmeter.nuggets.model import QueryNuggets

    class NoCalls:
        async def complete(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("an empty passage needs no call")

    qn = QueryNuggets.model_validate(NUGGETS[1])
    q = NuggetQuery(question="q", nuggets=qn, answer=None, contexts=[], retrieved=[], query_id="qb")
    names = ["nugget_vital", "nugget_unsourced", "nugget_lost_retrieval", "nugget_recall@3"]
    got = await nugget_scores(names, q, NoCalls(), style="ours", set_hash="h")
    assert got["nugget_vital"].value is None and "no answer" in (got["nugget_vital"].error or "")
    assert got["nugget_unsourced"].value is None
    assert got["nugget_lost_retrieval"].value == 1.0  # nothing retrieved: both vital nuggets lost there
    assert got["nugget_recall@3"].value == 0.0


async def test_a_reply_cut_at_the_token_limit_is_not_re_asked(scripted: Any) -> None:
    from ragmeter.judges.nuggets import assign
    from ragmeter.llm import from_spec
    from ragmeter.nuggets.model import Nugget

    calls: list[int] = []

    def reply(req: Any) -> Step:
        calls.append(1)
        return Step(text="['support', 'supp", finish_reason="length")

    server = await scripted(reply)
    llm = from_spec(f"openai-compatible:m@{server.url}", max_retries=0)
    got = await assign(llm, "nuggetizer", "q", "a passage", [Nugget(id="1", text="x", importance="vital")])
    await llm.aclose()
    assert calls == [1] and got.labels == {"1": None} and "token limit" in got.errors[0]
