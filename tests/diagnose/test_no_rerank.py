"""`ragmeter diagnose --also no-rerank`: the built-in pipeline with its reranker switched off re-runs
retrieval (counted), is stored as a run naming parent and intervention; other systems are refused."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from diagnose_fakes import dataset as classes_dataset

from ragmeter.diagnose.attribution import adiagnose
from ragmeter.errors import InputError
from ragmeter.models import Document, EvalConfig, EvalDataset, EvalQuery
from ragmeter.run import run_evaluation
from ragmeter.store import open_store
from ragmeter.systems import Retrieved
from ragmeter.systems.pipeline import Pipeline

TOPICS = ("alpha", "beta", "gamma")


def dataset() -> EvalDataset:
    """Per topic: a relevant passage BM25 ranks first, and a noise passage the reranker prefers."""
    corpus = []
    for t in TOPICS:
        corpus.append(Document(doc_id=f"rel-{t}", text=f"{t} {t} {t} the fact"))
        corpus.append(Document(doc_id=f"x-{t}", text=f"{t} noise"))
    queries = [
        EvalQuery(query_id=t, question=f"{t}?", ground_truth_answer="RIGHT", relevant_doc_ids=[f"rel-{t}"])
        for t in TOPICS
    ]
    return EvalDataset(name="rerank", queries=queries, corpus=corpus)


class NoiseFirst:
    """A cross-encoder that prefers passages saying 'noise'; counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def predict(self, pairs: list[tuple[str, str]]) -> list[float]:
        self.calls += 1
        return [1.0 if "noise" in text else 0.0 for _, text in pairs]


class AnsweringPipeline(Pipeline):
    """The built-in pipeline answering RIGHT when a relevant passage is in its contexts; records each
    question it retrieves for and whether it reranked (the list is shared by the copy `without_rerank`
    makes; its warm-up query is left out)."""

    calls: list[tuple[str, bool]]

    def retrieve_batch(self, queries: Sequence[str], k: int) -> list[list[Retrieved]]:
        self.calls.extend((q, self.reranks) for q in queries if q != "warm up")
        return super().retrieve_batch(queries, k)

    async def answer(self, query: str, contexts: list[Any]) -> str | None:
        return "RIGHT" if any(c.doc_id.startswith("rel-") for c in contexts) else "WRONG"


def pipeline(tmp_path: Path, reranker: Any) -> AnsweringPipeline:
    p = AnsweringPipeline(
        dataset().corpus or [], mode="fulltext", index_dir=tmp_path / "idx", persist=False, reranker=reranker
    )
    p.calls = []
    return p


CONFIG = EvalConfig(
    dataset="rerank",
    retrieval_top_k=[2],
    metrics=["token_f1"],
    extra={"semantic": False, "context_k": 1},
)


def test_no_rerank_reruns_retrieval_without_the_reranker_counted_and_stored(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'nr.db'}"
    reranker = NoiseFirst()
    system = pipeline(tmp_path, reranker)
    run = run_evaluation(dataset(), system, CONFIG, store=db, progress=False)
    assert all(r.retrieved[0].doc_id.startswith("x-") for r in run.per_query)  # the reranker put noise first
    assert sorted(system.calls) == [(f"{t}?", True) for t in TOPICS]
    system.calls.clear()
    predicted = reranker.calls
    with open_store(db) as store:
        out = asyncio.run(
            adiagnose(run.run_id or "", store=store, system=system, dataset=dataset(), also=["no-rerank"])
        )
        replay = store.get_run(out["replays"]["no-rerank"])
    # only no-rerank called retrieve: once per query, never through the reranker
    assert sorted(system.calls) == [(f"{t}?", False) for t in TOPICS]
    assert out["retrieve_calls"] == {"oracle-rank": 0, "oracle-context": 0, "no-rerank": len(TOPICS)}
    assert reranker.calls == predicted
    assert "re-ran retrieval" in out["calls"] and f"({len(TOPICS)} retrieve calls)" in out["calls"]
    assert replay.config.replay.model_dump() == {"parent": run.run_id, "intervention": "no-rerank"}
    assert all(r.retrieved[0].doc_id.startswith("rel-") for r in replay.per_query)
    assert {r.query_id: r.answer for r in replay.per_query} == dict.fromkeys(TOPICS, "RIGHT")
    (f1,) = out["also"]["no-rerank"]
    assert f1["metric"] == "token_f1" and f1["n"] == len(TOPICS) and f1["delta"] == pytest.approx(1.0)


def test_no_rerank_is_refused_without_a_pipeline_with_a_reranker(ragmeter_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    db = f"sqlite:///{tmp_path / 'nf.db'}"
    plain = pipeline(tmp_path, None)
    run = run_evaluation(dataset(), plain, CONFIG, store=db, progress=False)
    with open_store(db) as store:
        with pytest.raises(InputError, match="without a reranker") as exc:
            asyncio.run(
                adiagnose(run.run_id or "", store=store, system=plain, dataset=dataset(), also=["no-rerank"])
            )
        assert "\n" not in str(exc.value) and all(not r for _, r in plain.calls)
        assert [r.run_id for r in store.list_runs()] == [run.run_id]
    # through the CLI: a rebuildable system that is not the built-in pipeline
    path = tmp_path / "classes.json"
    path.write_text(classes_dataset().model_dump_json())
    config = CONFIG.model_copy(update={"dataset": str(path)})
    other = run_evaluation(str(path), "diagnose_fakes:ScriptedSystem", config, store=db, progress=False)
    code, text = ragmeter_cli("diagnose", other.run_id or "", "--db", db, "--also", "no-rerank")
    assert code == 2 and "not the built-in pipeline" in text and "Traceback" not in text, text
    assert len(text.strip().splitlines()) == 1, text
    with open_store(db) as store:
        assert {r.run_id for r in store.list_runs()} == {run.run_id, other.run_id}
