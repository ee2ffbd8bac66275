"""`ragmeter diagnose`: replays along run -> oracle-rank -> oracle-context over real HTTP (scripted judge).
The system answers RIGHT when a relevant passage is among its contexts, except on q_wrong (always wrong)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from diagnose_fakes import ScriptedSystem, dataset, judged_run

from ragmeter.diagnose.attribution import adiagnose
from ragmeter.errors import InputError
from ragmeter.models import EvalConfig
from ragmeter.run import arun_evaluation

pytest.importorskip("aiohttp")


class ContextAnswerer(ScriptedSystem):
    def answer(self, question: str, contexts: list[Any]) -> str | None:
        q = self.by_question[question]
        self.answer_calls.append((q, [c.doc_id for c in contexts]))
        if q == "q_wrong":
            return "WRONG reading"
        return "RIGHT and SUPPORTED" if any(c.doc_id.startswith("rel-") for c in contexts) else "WRONG guess"


async def test_oracle_context_lifts_retrieval_failures_and_parts_sum_to_the_gap(
    scripted, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    from ragmeter.diagnose.attribution import adiagnose
    from ragmeter.store import open_store

    db = f"sqlite:///{tmp_path / 'd.db'}"
    _, llm, run = await judged_run(scripted, ContextAnswerer(), db, ["token_f1", "answer_correctness"])
    classes = {r.query_id: r.metrics["class_correct"].details["class"] for r in run.per_query}
    system = ContextAnswerer()
    with open_store(db) as store:
        out = await adiagnose(
            run.run_id or "", store=store, system=system, llm=llm, dataset=dataset(), n_resamples=500
        )
        replays = {k: store.get_run(v) for k, v in out["replays"].items()}
    await llm.aclose()

    assert system.retrieve_calls == 0 and system.answer_calls  # a replay never calls retrieve
    for name, replay in replays.items():
        assert replay.config.replay.model_dump() == {"parent": run.run_id, "intervention": name}
        # the parent's retrieved lists are reused, so its retrieval metrics are the parent's
        assert {r.query_id: r.metrics["ndcg@3"].value for r in replay.per_query if "ndcg@3" in r.metrics} == {
            r.query_id: r.metrics["ndcg@3"].value for r in run.per_query if "ndcg@3" in r.metrics
        }
    before = {r.query_id: r.metrics["answer_correctness"].value for r in run.per_query}
    after = {r.query_id: r.metrics["answer_correctness"].value for r in replays["oracle-context"].per_query}
    lifted = [q for q, c in classes.items() if c in ("no_relevant_retrieved", "relevant_not_in_context")]
    assert lifted and all(after[q] > before[q] for q in lifted)  # type: ignore[operator]
    wrong = [q for q, c in classes.items() if c == "answer_wrong_with_evidence"]
    assert wrong and all(after[q] == before[q] for q in wrong)
    for m in out["metrics"]:
        assert m["n"] > 0
        total = sum(p["mean"] for p in m["parts"].values())
        assert abs(total - m["gap"]) <= 1e-9, m
        for p in m["parts"].values():
            assert p["ci95"][0] <= p["mean"] <= p["ci95"][1]
    correctness = next(m for m in out["metrics"] if m["metric"] == "answer_correctness")
    assert (
        correctness["parts"]["retrieval"]["mean"] > 0
        and correctness["parts"]["ranking_and_context"]["mean"] > 0
    )


def test_refusals_are_one_line_exit_2_and_store_nothing(ragmeter_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from ragmeter.run import run_evaluation
    from ragmeter.store import open_store

    db = f"sqlite:///{tmp_path / 'r.db'}"
    config = EvalConfig(
        dataset="classes", retrieval_top_k=[3], metrics=["token_f1"], extra={"semantic": False}
    )
    run = run_evaluation(dataset(), ContextAnswerer(), config, store=db, progress=False)
    for args, words in (
        ((), "cannot be rebuilt from its record"),  # an in-process object
        (("--also", "bogus"), "unknown intervention"),
        (("--also", "context-k=99"), "stored depth"),
        (("--metrics", "ndcg@3"), "not a bounded answer metric"),
    ):
        code, out = ragmeter_cli("diagnose", run.run_id or "", "--db", db, *args)
        assert code == 2 and words in out and "Traceback" not in out, (args, out)
        assert len(out.strip().splitlines()) == 1, out
        with open_store(db) as store:
            assert [r.run_id for r in store.list_runs()] == [run.run_id]


async def test_api_refuses_runs_without_labels_or_answers(tmp_path: Path) -> None:
    from ragmeter.diagnose.attribution import adiagnose
    from ragmeter.errors import InputError
    from ragmeter.store import open_store

    db = f"sqlite:///{tmp_path / 'n.db'}"
    unlabelled = dataset()
    for q in unlabelled.queries:
        q.relevant_doc_ids = []
    config = EvalConfig(
        dataset="classes", retrieval_top_k=[3], metrics=["token_f1"], extra={"semantic": False}
    )
    run = await arun_evaluation(unlabelled, ContextAnswerer(), config, store=db, progress=False)
    no_gen = config.model_copy(update={"evaluate_generation": False, "metrics": ["ndcg@3"]})
    silent = await arun_evaluation(dataset(), ContextAnswerer(), no_gen, store=db, progress=False)
    with open_store(db) as store:
        with pytest.raises(InputError, match="no relevance labels"):
            await adiagnose(run.run_id or "", store=store, system=ContextAnswerer(), dataset=unlabelled)
        with pytest.raises(InputError, match="no answers"):
            await adiagnose(silent.run_id or "", store=store, system=ContextAnswerer(), dataset=dataset())
        assert len(store.list_runs()) == 2  # nothing stored by the refusals


class RetrieveOnly:
    """A system with `retrieve` and no `answer`."""

    name = "retrieve-only"

    def retrieve(self, question: str, k: int) -> list[tuple[str, float, str]]:
        return ScriptedSystem().retrieve(question, k)


def test_a_system_without_answer_is_refused_in_one_line_and_nothing_is_stored(
    ragmeter_cli, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    from ragmeter.run import run_evaluation
    from ragmeter.store import open_store

    db = f"sqlite:///{tmp_path / 'a.db'}"
    config = EvalConfig(
        dataset="classes", retrieval_top_k=[3], metrics=["token_f1"], extra={"semantic": False}
    )
    # the run has answers (recorded from a rebuildable class), the system given to diagnose has no answer()
    run = run_evaluation(dataset(), "diagnose_fakes:ScriptedSystem", config, store=db, progress=False)
    assert any(r.answer for r in run.per_query)
    with open_store(db) as store:
        with pytest.raises(InputError, match=r"has no answer\(\)") as exc:
            asyncio.run(adiagnose(run.run_id or "", store=store, system=RetrieveOnly(), dataset=dataset()))
        assert "\n" not in str(exc.value)
        assert [r.run_id for r in store.list_runs()] == [run.run_id]
