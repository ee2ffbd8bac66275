"""`judges validate`: a judge on the scripted server against human labels, failures kept, the report stored,
the CLI's JSON; plus human-label validation in native datasets."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ragmeter.cli import cli
from ragmeter.datasets import validate_dataset
from ragmeter.llm import from_spec
from ragmeter.llm.scripted import ScriptedRequest, Step
from ragmeter.models import EvalDataset, EvalQuery
from ragmeter.validity.judge_validation import (
    HumanScale,
    infer_scale,
    to_human_scale,
    validate_judge,
)

sklearn_metrics = pytest.importorskip("sklearn.metrics")

# The answer each item carries says what the scripted judge will reply: "score=N" -> a 0-10 score,
# "broken" -> an unusable reply twice (a failed judgment).
ITEMS = [
    ("q1", "score=9", True),
    ("q2", "score=2", False),
    ("q3", "score=8", False),
    ("q4", "score=10", True),
    ("q5", "broken", True),
    ("q6", "score=1", False),
    ("q7", "score=6", True),
    ("q8", "score=3", True),
]


def _dataset(items: list[tuple[str, str, Any]] = ITEMS, metric: str = "relevance") -> EvalDataset:
    return EvalDataset(
        name="labelled",
        queries=[
            EvalQuery(
                query_id=qid,
                question=f"question {qid}?",
                human_labels={metric: label},
                metadata={"answer": answer},
            )
            for qid, answer, label in items
        ]
        + [EvalQuery(query_id="unlabelled", question="no label?", metadata={"answer": "score=5"})],
    )


def responder(req: ScriptedRequest) -> Step:
    m = re.search(r"score=(\d+)", req.user)
    if m is None:
        return Step(text="I cannot grade this.")
    return Step(text=json.dumps({"reasoning": f"graded {m.group(1)}", "score": int(m.group(1))}))


def test_scales_and_mapping_rule() -> None:
    assert infer_scale([True, False]).kind == "binary"
    assert infer_scale([0, 1, 1]).kind == "binary"
    s = infer_scale([0, 1, 3])
    assert (s.kind, s.lo, s.hi, s.labels) == ("ordinal", 0.0, 3.0, [0, 1, 2, 3])
    assert infer_scale([0.2, 0.5]).kind == "continuous"
    binary = HumanScale("binary", 0, 1)
    assert to_human_scale(0.5, (0, 1), binary) == 1.0
    assert to_human_scale(0.49, (0, 1), binary) == 0.0
    assert to_human_scale(5.5, (1, 10), binary) == 1.0  # retrieval_grade's 1-10 scale, normalised
    ordinal = HumanScale("ordinal", 0, 3)
    assert [to_human_scale(v, (0, 1), ordinal) for v in (0.0, 0.16, 0.17, 0.5, 0.84, 1.0)] == [
        0,
        0,
        1,
        2,
        3,
        3,
    ]


async def test_validate_on_the_scripted_judge(scripted: Callable[..., Any]) -> None:
    server = await scripted(responder)
    llm = from_spec(f"openai-compatible:scripted@{server.url}", concurrency=4)
    async with llm:
        report = await validate_judge(
            _dataset(), "relevance", llm=llm, concurrency=3, n_resamples=200, seed=1
        )
    out = report.to_dict()
    assert out["n_items"] == 8 and out["n_failed"] == 1 and out["n"] == 7
    failed = [i for i in out["items"] if i["judge"] is None]
    assert [i["id"] for i in failed] == ["q5"]
    assert failed[0]["reason"] and failed[0]["human"] is True
    ok = [i for i in out["items"] if i["judge"] is not None]
    human = [int(i["human"]) for i in ok]
    judge = [int(i["judge"]) for i in ok]
    assert judge == [1, 0, 1, 1, 0, 1, 0]  # scores / 10 >= 0.5
    assert out["kappa"] == pytest.approx(sklearn_metrics.cohen_kappa_score(human, judge))
    assert out["accuracy"] == pytest.approx(sum(h == j for h, j in zip(human, judge, strict=True)) / 7)
    assert len(out["kappa_ci"]) == 2 and out["weighted_kappa"] is not None
    assert (
        out["confusion"]["matrix"] == sklearn_metrics.confusion_matrix(human, judge, labels=[0, 1]).tolist()
    )
    assert out["usage"]["calls"] == 9  # 7 answered + the failed one asked twice
    tokens = out["usage"].get("input_tokens", out["usage"].get("prompt_tokens"))
    assert tokens > 0 and out["judge"]["model"] == "scripted"
    assert server.max_in_flight <= 3


async def test_sample_is_seeded(scripted: Callable[..., Any]) -> None:
    server = await scripted(responder)
    ids = []
    for _ in range(2):
        llm = from_spec(f"openai-compatible:scripted@{server.url}")
        async with llm:
            report = await validate_judge(_dataset(), "relevance", llm=llm, sample=4, seed=5, n_resamples=50)
        ids.append([i["id"] for i in report.items])
    assert ids[0] == ids[1] and len(ids[0]) == 4


async def test_unknown_metric_or_no_labels(scripted: Callable[..., Any]) -> None:
    from ragmeter.errors import InputError

    server = await scripted(responder)
    llm = from_spec(f"openai-compatible:scripted@{server.url}")
    async with llm:
        with pytest.raises(InputError, match="unknown judge"):
            await validate_judge(_dataset(), "no_such_judge", llm=llm)
        with pytest.raises(InputError, match="has human labels for: relevance"):
            await validate_judge(_dataset(), "coherence", llm=llm)
    assert not server.requests


async def test_cli_validate_json_and_store(
    scripted: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = await scripted(responder)
    path = tmp_path / "labelled.jsonl"
    path.write_text(
        "\n".join(q.model_dump_json(exclude_defaults=True) for q in _dataset().queries) + "\n",
        encoding="utf-8",
    )
    db = tmp_path / "store.db"
    args = [
        "judges", "validate", "--dataset", str(path), "--judge", f"openai-compatible:scripted@{server.url}",
        "--metric", "relevance", "--format", "json", "--db", str(db), "--seed", "3",
    ]  # fmt: skip
    # The CLI runs its own event loop: give it a thread so that this loop keeps serving the judge.
    result = await asyncio.to_thread(CliRunner().invoke, cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    for key in ("n", "kappa", "kappa_ci", "weighted_kappa", "accuracy", "items", "spearman", "kendall"):
        assert key in out
    assert out["n_failed"] == 1 and len(out["items"]) == 8

    from ragmeter.store import open_store

    with open_store(str(db)) as store:
        run = store.get_run(out["run_id"])
    assert run.name == "validate:relevance" and run.status == "completed"
    assert run.config.system == "judge-validation"
    assert run.aggregate["kappa"].mean == pytest.approx(out["kappa"])
    assert run.n_failed == 1 and len(run.per_query) == 8

    md = await asyncio.to_thread(
        CliRunner().invoke, cli, [*args[:8], "--format", "markdown", "--no-store"], catch_exceptions=False
    )
    assert md.exit_code == 0, md.output
    assert "| Cohen's kappa |" in md.output and "human \\ judge" in md.output


def test_native_human_labels_are_validated(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    rows = [
        {"query_id": "a", "question": "q?", "human_labels": {"factuality": True}},
        {"query_id": "b", "question": "q?", "human_labels": {"factuality": 0.5, "bad name!": 1}},
        {"query_id": "c", "question": "q?", "human_labels": {"answer_correctness": "yes"}},
        {"query_id": "d", "question": "q?", "human_labels": {"answer_correctness": 2}},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    problems = validate_dataset(path)
    assert any(p.startswith(f"{path}:2") and "boolean labels" in p for p in problems), problems
    assert any(p.startswith(f"{path}:2") and "'bad name!' is not a metric name" in p for p in problems)
    assert any(p.startswith(f"{path}:3") and "human_labels.answer_correctness" in p for p in problems)
    assert not any(f"{path}:4" in p for p in problems)
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps(rows[3]) + "\n", encoding="utf-8")
    assert validate_dataset(good) == []


async def test_budget_failures_are_counted_not_dropped(scripted: Callable[..., Any]) -> None:
    server = await scripted(responder)
    llm = from_spec(f"openai-compatible:scripted@{server.url}", budget=4, concurrency=1)
    async with llm:
        report = await validate_judge(_dataset(), "relevance", llm=llm, concurrency=1, n_resamples=50)
    assert report.n_items == 8 and report.n_failed == 4 and report.stats["n"] == 4
    failed = [i for i in report.items if i["judge"] is None]
    assert [i["id"] for i in failed] == ["q5", "q6", "q7", "q8"]
    assert all("budget" in i["reason"] for i in failed)
    assert len(server.requests) == 4
