"""`diagnose --also closed-book`: the generator replayed with no context, with or without qrels; per query
closed_book_correct stored on the diagnosed run."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from ragmeter.diagnose.attribution import adiagnose
from ragmeter.errors import InputError
from ragmeter.models import Document, EvalConfig, EvalDataset, EvalQuery
from ragmeter.run import run_evaluation
from ragmeter.store import open_store

CAPITALS = {"France": "Paris", "Peru": "Lima", "Chad": "Ndjamena", "Fiji": "Suva"}
KNOWN_BY_HEART = {"France"}  # the generator answers these right with no context


def _dataset() -> EvalDataset:
    return EvalDataset(
        name="closed",
        queries=[
            EvalQuery(query_id=c, question=f"Capital of {c}?", ground_truth_answer=a)
            for c, a in CAPITALS.items()
        ],
        corpus=[Document(doc_id=f"d-{c}", text=f"{a} is the capital of {c}.") for c, a in CAPITALS.items()],
    )


class Reader:
    """Reads the answer off its first context; with none, answers from 'memory' (right only for some)."""

    name = "reader"

    def __init__(self) -> None:
        self.given: list[int] = []

    def retrieve(self, question: str, k: int) -> list[tuple[str, float, str]]:
        country = question.removeprefix("Capital of ").rstrip("?")
        return [(f"d-{country}", 1.0, f"{CAPITALS[country]} is the capital of {country}.")]

    def answer(self, question: str, contexts: list[Any]) -> str:
        self.given.append(len(contexts))
        country = question.removeprefix("Capital of ").rstrip("?")
        if contexts:
            return str(contexts[0].text.split(" ", 1)[0])
        return CAPITALS[country] if country in KNOWN_BY_HEART else "I am not sure"


def _run(db: str) -> Any:
    config = EvalConfig(
        dataset="closed", retrieval_top_k=[1], metrics=["token_f1"], extra={"semantic": False}
    )
    return run_evaluation(_dataset(), Reader(), config, store=db, progress=False)


def test_closed_book_without_qrels_counts_what_answers_owe_to_retrieval(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'c.db'}"
    run = _run(db)
    reader = Reader()
    with open_store(db) as store:
        out = asyncio.run(
            adiagnose(run.run_id or "", store=store, system=reader, dataset=_dataset(), also=["closed-book"])
        )
        stored = store.get_run(run.run_id or "")
    assert reader.given == [0] * len(CAPITALS)  # the generator got no context at all, once per query
    assert out["metrics"] == [] and set(out["replays"]) == {"closed-book"}  # no oracle arms without qrels
    book = out["closed_book"]
    assert book["n"] == 4 and book["closed_book_correct"] == pytest.approx(1 / 4)
    assert book["owed_to_retrieval"] == {**book["owed_to_retrieval"], "n": 3, "of": 4}
    lo, hi = book["ci95"]
    assert 0 < lo < 0.25 < hi < 1
    values = {r.query_id: r.metrics["closed_book_correct"].value for r in stored.per_query}
    assert values == {c: float(c in KNOWN_BY_HEART) for c in CAPITALS}
    # the run's aggregate and versions carry the new metric (runs show, compare and the report read them),
    # and what was there before stays as it was
    summary = stored.aggregate["closed_book_correct"]
    assert summary.mean == pytest.approx(1 / 4) and summary.n == 4
    assert stored.versions["closed_book_correct"] == "1"
    assert stored.aggregate["token_f1"] == run.aggregate["token_f1"]


def test_the_oracle_arms_still_need_qrels(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'c.db'}"
    run = _run(db)
    with open_store(db) as store:
        for also in ([], ["closed-book", "context-k=1"]):
            with pytest.raises(InputError, match="no relevance labels"):
                asyncio.run(
                    adiagnose(run.run_id or "", store=store, system=Reader(), dataset=_dataset(), also=also)
                )
