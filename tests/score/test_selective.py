"""Selective answering: a system that returns a confidence with each answer gets the
risk-coverage curve and its area in the run (JSON, store, runs show), equal to a hand computation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragmeter.models import Document, EvalConfig, EvalDataset, EvalQuery
from ragmeter.run import run_evaluation

# country -> (gold, the system's answer, its confidence)
CASES = {
    "France": ("Paris", "Paris", 0.9),
    "Peru": ("Lima", "Cusco", 0.8),
    "Chad": ("Ndjamena", "Ndjamena", 0.8),
    "Fiji": ("Suva", "I don't know", 0.1),
}


def _dataset() -> EvalDataset:
    return EvalDataset(
        name="selective",
        queries=[
            EvalQuery(query_id=c, question=f"Capital of {c}?", ground_truth_answer=g)
            for c, (g, _, _) in CASES.items()
        ],
        corpus=[Document(doc_id=c, text=f"About {c}.") for c in CASES],
    )


def system(question: str, k: int) -> dict[str, Any]:
    """A function system returning {results, answer, confidence} (the HTTP system's reply shape too)."""
    country = question.removeprefix("Capital of ").rstrip("?")
    _, answer, confidence = CASES[country]
    return {"results": [(country, 1.0, f"About {country}.")], "answer": answer, "confidence": confidence}


def test_risk_coverage_equals_a_hand_computation(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from ragmeter.cli import cli
    from ragmeter.store import open_store

    db = f"sqlite:///{tmp_path / 's.db'}"
    config = EvalConfig(
        dataset="selective", retrieval_top_k=[1], metrics=["token_f1"], extra={"semantic": False}
    )
    run = run_evaluation(_dataset(), system, config, store=db, progress=False)
    assert {r.query_id: r.confidence for r in run.per_query} == {c: v[2] for c, v in CASES.items()}
    curve = run.risk_coverage
    assert curve is not None and curve["n"] == 4
    # By confidence: 0.9 right (risk 0 at 1/4); 0.8 wrong and right together (1/3 at 3/4); 0.1 declined (2/4).
    assert [(p["threshold"], p["coverage"], p["risk"]) for p in curve["points"]] == [
        (0.9, 0.25, 0.0),
        (0.8, 0.75, pytest.approx(1 / 3)),
        (0.1, 1.0, 0.5),
    ]
    assert curve["aurc"] == pytest.approx((0 + 1 / 3 + 1 / 3 + 1 / 2) / 4)
    with open_store(db) as store:
        assert store.get_run(run.run_id or "").risk_coverage == curve
    shown = CliRunner().invoke(cli, ["runs", "show", run.run_id or "", "--db", db], catch_exceptions=False)
    assert f"AURC {curve['aurc']:.4f} over 4 answers" in shown.output


def test_a_run_without_confidences_has_no_curve(tmp_path: Path) -> None:
    def plain(question: str, k: int) -> dict[str, Any]:
        out = system(question, k)
        del out["confidence"]
        return out

    config = EvalConfig(
        dataset="selective", retrieval_top_k=[1], metrics=["token_f1"], extra={"semantic": False}
    )
    run = run_evaluation(_dataset(), plain, config, progress=False, store=f"sqlite:///{tmp_path / 'p.db'}")
    assert run.risk_coverage is None and all(r.confidence is None for r in run.per_query)
    assert "confidence" not in run.per_query[0].model_dump()
