"""LLM qrels: pooling, labelling on the scripted judge (UMBRELA-style prompt, failures left unjudged),
the merge where people win, TREC output, and the meta-evaluation (kappa on shared pairs, Kendall tau and
tau_AP between system rankings) checked against sklearn, scipy and the IR engine."""

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
from ragmeter.ir import Qrels, Run, evaluate
from ragmeter.judges.trec_relevance import TREC_RELEVANCE, trec_relevance
from ragmeter.llm import from_spec
from ragmeter.llm.scripted import ScriptedRequest, Step
from ragmeter.models import Document, EvalDataset, EvalQuery
from ragmeter.validity.qrels_judging import (
    judge_pool,
    judged_pairs,
    merge_qrels,
    meta_evaluate,
    pairs_to_label,
    pool,
)

sklearn_metrics = pytest.importorskip("sklearn.metrics")
scipy_stats = pytest.importorskip("scipy.stats")

# Each doc's text says the grade the scripted judge gives it ("grade=N"); "garbage" gets a reply
# with no grade at all (a failed pair).
DOCS = {
    "d1": "grade=3 the answer",
    "d2": "grade=2 part of it",
    "d3": "grade=1 related",
    "d4": "grade=0 unrelated",
    "d5": "garbage",
    "d6": "grade=3 also the answer",
}
RUN_A = {"q1": {"d1": 3.0, "d2": 2.0, "d3": 1.0}, "q2": {"d6": 2.0, "d4": 1.0}}
RUN_B = {"q1": {"d4": 3.0, "d5": 2.0, "d1": 1.0}, "q2": {"d4": 2.0, "d6": 1.0}}
HUMAN = {"q1": {"d1": 1, "d4": 0}, "q2": {"d6": 1}}


def responder(req: ScriptedRequest) -> Step:
    m = re.search(r"Passage: grade=(\d)", req.user)
    if m is None:
        return Step(text="no idea")
    return Step(text=json.dumps({"reasoning": "because", "grade": int(m.group(1))}))


def dataset() -> EvalDataset:
    return EvalDataset(
        name="toy",
        queries=[EvalQuery(query_id=q, question=f"what about {q}?") for q in ("q1", "q2")],
        corpus=[Document(doc_id=d, text=t) for d, t in DOCS.items()],
    )


def test_pool_and_pairs() -> None:
    runs = [Run.from_dict(RUN_A), Run.from_dict(RUN_B)]
    pooled = pool(runs, 2)
    assert pooled == {"q1": ["d1", "d2", "d4", "d5"], "q2": ["d6", "d4"]}
    human = Qrels.from_dict(HUMAN)
    assert pairs_to_label(pooled, human) == [("q1", "d2"), ("q1", "d5"), ("q2", "d4")]
    assert len(pairs_to_label(pooled, human, all_pairs=True)) == 6
    with pytest.raises(ValueError):
        pool(runs, 0)


def test_merge_human_wins() -> None:
    human = Qrels.from_dict({"q1": {"d1": 1, "d9": -1}})
    llm = Qrels.from_dict({"q1": {"d1": 3, "d2": 2, "d9": 2}, "q2": {"d4": 0}})
    merged = merge_qrels(human, llm).to_dict()
    assert merged == {"q1": {"d1": 1, "d2": 2, "d9": 2}, "q2": {"d4": 0}}


def test_prompt_is_umbrela_with_reasoning_first_json() -> None:
    text = TREC_RELEVANCE.text
    assert "0 = represent that the passage has nothing to do with the query" in text
    assert "Measure how trustworthy the passage is (T)" in text
    assert text.index('"reasoning"') < text.index('"grade"')
    assert TREC_RELEVANCE.version.startswith("trec_relevance/v1+")


async def test_trec_relevance_fail_soft(scripted: Callable[..., Any]) -> None:
    server = await scripted(
        lambda req: Step(text="##final score: 2") if "FREE" in req.user else responder(req)
    )
    async with from_spec(f"openai-compatible:scripted@{server.url}") as llm:
        good = await trec_relevance("q?", "grade=3 x", llm=llm, doc_id="d")
        free = await trec_relevance("q?", "FREE text", llm=llm)
        bad = await trec_relevance("q?", "garbage", llm=llm)
        empty = await trec_relevance("q?", "  ", llm=llm)
    assert good.value == 3.0 and good.details["reasoning"] == "because" and good.details["doc_id"] == "d"
    assert free.value == 2.0 and any("free text" in f for f in free.details["flags"])
    assert bad.value is None and bad.error and "re-ask" in bad.error
    assert empty.value is None and empty.error == "the passage is empty"


async def test_judge_pool_writes_merged_qrels(scripted: Callable[..., Any]) -> None:
    server = await scripted(responder)
    runs = [Run.from_dict(RUN_A), Run.from_dict(RUN_B)]
    data = dataset()
    async with from_spec(f"openai-compatible:scripted@{server.url}") as llm:
        qrels, labels, report = await judge_pool(
            runs,
            depth=2,
            queries={q.query_id: q.question for q in data.queries},
            docs=DOCS,
            llm=llm,
            human=Qrels.from_dict(HUMAN),
            concurrency=2,
        )
    assert qrels is not None
    assert qrels.to_dict() == {"q1": {"d1": 1, "d2": 2, "d4": 0}, "q2": {"d4": 0, "d6": 1}}
    out = report.to_dict()
    assert (out["n_pooled"], out["n_human_judged"], out["n_sent_to_judge"]) == (6, 3, 3)
    assert (out["n_labelled"], out["n_failed"]) == (2, 1)
    assert out["failures"][0]["doc_id"] == "d5"
    assert out["grades"] == {"0": 1, "2": 1}
    assert server.max_in_flight <= 2
    assert [(lab.query_id, lab.doc_id, lab.grade) for lab in labels] == [
        ("q1", "d2", 2),
        ("q1", "d5", None),
        ("q2", "d4", 0),
    ]


def _random_world(seed: int) -> tuple[Qrels, Qrels, dict[str, Run]]:
    import numpy as np

    rng = np.random.default_rng(seed)
    docs = [f"d{i}" for i in range(30)]
    human: dict[str, dict[str, float]] = {}
    llm: dict[str, dict[str, float]] = {}
    for q in range(12):
        grades = rng.integers(0, 4, len(docs))
        human[f"q{q}"] = {d: float(g) for d, g in zip(docs, grades, strict=True)}
        noisy = np.clip(grades + rng.integers(-1, 2, len(docs)), 0, 3)
        llm[f"q{q}"] = {d: float(g) for d, g in zip(docs, noisy, strict=True)}
    runs = {
        f"run{r}": Run.from_dict({q: {d: float(rng.random()) for d in docs} for q in human}) for r in range(6)
    }
    return Qrels.from_dict(human), Qrels.from_dict(llm), runs


def test_meta_evaluation_against_the_oracles() -> None:
    human, llm, runs = _random_world(4)
    res = meta_evaluate(human, llm, runs, measure="ndcg@10", n_resamples=200, seed=1).to_dict()
    hp, lp = judged_pairs(human), judged_pairs(llm)
    shared = sorted(set(hp) & set(lp))
    h = [hp[p] for p in shared]
    lab = [lp[p] for p in shared]
    assert res["n_pairs"] == len(shared) == 360
    assert res["kappa"] == pytest.approx(sklearn_metrics.cohen_kappa_score(h, lab))
    assert res["weighted_kappa"] == pytest.approx(
        sklearn_metrics.cohen_kappa_score(h, lab, weights="quadratic", labels=[0, 1, 2, 3])
    )
    human_scores = [evaluate(human, runs[n], ["ndcg@10"]).aggregate["ndcg@10"] for n in runs]
    llm_scores = [evaluate(llm, runs[n], ["ndcg@10"]).aggregate["ndcg@10"] for n in runs]
    assert [r["human"] for r in res["runs"]] == pytest.approx(human_scores)
    assert [r["llm"] for r in res["runs"]] == pytest.approx(llm_scores)
    assert res["kendall_tau"] == pytest.approx(scipy_stats.kendalltau(human_scores, llm_scores).statistic)
    assert res["tau_ap"] is not None and -1 <= res["tau_ap"] <= 1
    lo, hi = res["kendall_tau_ci"]
    assert lo is not None and lo <= hi
    for key in ("n_pairs", "kappa", "weighted_kappa", "kappa_ci", "kendall_tau", "tau_ap", "runs"):
        assert key in res


def test_meta_evaluation_binarises_llm_grades_against_binary_human_qrels() -> None:
    human = Qrels.from_dict({"q1": {"a": 1, "b": 0, "c": 1}, "q2": {"a": 0, "b": 1}})
    llm = Qrels.from_dict({"q1": {"a": 3, "b": 1, "c": 2}, "q2": {"a": 2, "b": 3}})
    runs = {
        n: Run.from_dict({"q1": s, "q2": s})
        for n, s in (("x", {"a": 2.0, "b": 1.0}), ("y", {"b": 2.0, "a": 1.0}))
    }
    res = meta_evaluate(human, llm, runs, measure="ndcg@10", n_resamples=50)
    assert res.labels["confusion"]["matrix"] == [[1, 1], [0, 3]]
    assert any("binary" in n for n in res.notes)


async def test_cli_judge_qrels_then_agreement(scripted: Callable[..., Any], tmp_path: Path) -> None:
    server = await scripted(responder)
    data_path = tmp_path / "toy.json"
    data_path.write_text(dataset().model_dump_json(), encoding="utf-8")
    run_paths = []
    for name, run in (("a", RUN_A), ("b", RUN_B)):
        p = tmp_path / f"{name}.trec"
        Run.from_dict(run).to_trec(p)
        run_paths.append(str(p))
    human_path = tmp_path / "human.qrels"
    Qrels.from_dict(HUMAN).to_trec(human_path)
    out_path = tmp_path / "llm.qrels"
    args = [
        "judge-qrels", "--runs", *run_paths, "--depth", "3", "--judge", f"openai-compatible:scripted@{server.url}",
        "--output", str(out_path), "--dataset", str(data_path), "--all", "--format", "json",
        "--labels", str(tmp_path / "labels.jsonl"), "--cache", str(tmp_path / "cache.sqlite"),
    ]  # fmt: skip
    result = await asyncio.to_thread(CliRunner().invoke, cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["n_sent_to_judge"] == report["n_pooled"] == 7 and report["n_failed"] == 1
    assert Qrels.read(out_path).to_dict()["q1"] == {"d1": 3, "d2": 2, "d3": 1, "d4": 0}
    assert len((tmp_path / "labels.jsonl").read_text().splitlines()) == 7
    sent = len(server.requests)
    again = await asyncio.to_thread(CliRunner().invoke, cli, args, catch_exceptions=False)
    assert again.exit_code == 0
    assert len(server.requests) == sent  # every reply (even the unusable one) came from the cache

    agree = [
        "judges", "agreement", "--qrels", str(human_path), "--llm-qrels", str(out_path),
        "--runs", *run_paths, "--measure", "ndcg@10", "--format", "json",
    ]  # fmt: skip
    result = CliRunner().invoke(cli, agree, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["n_pairs"] == 3 and out["measure"] == "ndcg@10"
    assert {r["run"] for r in out["runs"]} == {"a.trec", "b.trec"}
    for key in ("kappa", "weighted_kappa", "kappa_ci", "kendall_tau", "tau_ap"):
        assert key in out
    table = CliRunner().invoke(cli, agree[:-2], catch_exceptions=False)
    assert table.exit_code == 0 and "tau_AP" in table.output


@pytest.mark.slow
async def test_local_judge_labels_a_handful_of_pairs() -> None:
    """The real local model (Qwen2.5-Coder-1.5B) on three pairs: every grade valid, the on-topic passage
    graded above the off-topic ones."""
    from ragmeter.llm.local import local_model_installed
    from ragmeter.validity.qrels_judging import label_pairs

    if not local_model_installed():
        pytest.skip("local judge weights not installed (`make setup` installs them)")
    queries = {"q": "What is the capital of Australia?"}
    docs = {
        "on": "Canberra is the capital city of Australia. It was chosen in 1908 as a compromise between "
        "Sydney and Melbourne, and Parliament has met there since 1927.",
        "off1": "The mitochondrion is the powerhouse of the cell, producing most of its ATP.",
        "off2": "Basketball was invented by James Naismith in 1891 in Springfield, Massachusetts.",
    }
    # One request at a time: llama.cpp batches concurrent requests of its slots together, and a grade then
    # depends on what ran beside it (seen once in CI: the on-topic passage graded 0).
    llm = from_spec("local", concurrency=1)
    async with llm:
        labels = await label_pairs([("q", d) for d in docs], queries=queries, docs=docs, llm=llm)
    grades = {lab.doc_id: lab.grade if lab.grade is not None else -1 for lab in labels}
    assert all(0 <= g <= 3 for g in grades.values()), labels
    assert grades["on"] > max(grades["off1"], grades["off2"]), labels
