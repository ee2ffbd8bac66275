"""Hand-verified values: each expected number is worked out in the comment beside it."""

from __future__ import annotations

import math

import pytest

from ragmeter.ir import Qrels, Run, evaluate


def one(qrels: dict[str, int], ranking: list[str], measure: str, **kw) -> float:
    run = {d: float(len(ranking) - i) for i, d in enumerate(ranking)}  # strictly decreasing scores
    res = evaluate(Qrels.from_dict({"q": qrels}), Run.from_dict({"q": run} if run else {}), [measure], **kw)
    return res.per_query["q"][measure] if "q" in res.per_query else res.aggregate[measure]


REL3 = {"a": 1, "b": 1, "c": 1}


def test_recall_perfect_partial_miss_truncated() -> None:
    assert one({"a": 1, "b": 1}, ["a", "b", "x"], "recall@3") == 1.0  # 2 of 2
    assert one({"a": 1, "b": 1}, ["a", "x", "y"], "recall@3") == 0.5  # 1 of 2
    assert one({"a": 1, "b": 1}, ["x", "y", "z"], "recall@3") == 0.0  # 0 of 2
    assert one({"a": 1, "b": 1}, ["x", "a", "b"], "recall@1") == 0.0  # relevant docs below the cutoff
    assert one({"a": 1, "b": 1}, ["x", "a", "b"], "recall@2") == 0.5


def test_mrr_rank_1_3_not_found() -> None:
    assert one({"a": 1}, ["a", "x", "y"], "mrr") == 1.0
    assert one({"a": 1}, ["x", "y", "a"], "mrr") == pytest.approx(1 / 3)
    assert one({"a": 1}, ["x", "y", "z"], "mrr") == 0.0
    assert one({"a": 1}, ["x", "y", "a"], "mrr@2") == 0.0  # cutoff applied (trec_eval would say 1/3)


def test_map_perfect_mixed_empty() -> None:
    assert one(REL3, ["a", "b", "c", "x"], "map") == 1.0
    ranking = ["x1", "a", "x2", "x3", "b", "x4", "x5", "c"]  # relevant at ranks 2, 5, 8
    assert one(REL3, ranking, "map") == pytest.approx((1 / 2 + 2 / 5 + 3 / 8) / 3)
    assert one(REL3, ranking, "map@5") == pytest.approx((1 / 2 + 2 / 5) / 3)  # divides by all relevant
    # empty ground truth: no relevant doc -> left out of the means and counted
    res = evaluate(Qrels.from_dict({"q": {"a": 0}}), Run.from_dict({"q": {"a": 1.0}}), ["map"])
    assert res.n_queries == 0 and res.n_queries_without_relevant == 1 and res.aggregate["map"] == 0.0
    # empty run: the judged query scores 0 (trec_eval -c) ...
    res = evaluate(Qrels.from_dict({"q": REL3, "r": {"a": 1}}), Run.from_dict({"r": {"a": 1.0}}), ["map"])
    assert res.per_query["q"]["map"] == 0.0 and res.aggregate["map"] == 0.5
    # ... or is left out when asked
    res = evaluate(
        Qrels.from_dict({"q": REL3, "r": {"a": 1}}),
        Run.from_dict({"r": {"a": 1.0}}),
        ["map"],
        missing="ignore",
    )
    assert res.aggregate["map"] == 1.0 and res.n_queries == 1


def test_precision_divides_by_k() -> None:
    assert one({"a": 1, "b": 1}, ["a", "b", "x"], "precision@10") == pytest.approx(0.2)


def test_ndcg_linear_and_exponential() -> None:
    # qrels a:2 b:1, ranking x a b: DCG = 2/log2(3) + 1/log2(4); IDCG = 2/log2(2) + 1/log2(3)
    q = {"a": 2, "b": 1}
    lin = (2 / math.log2(3) + 1 / 2) / (2 + 1 / math.log2(3))
    assert one(q, ["x", "a", "b"], "ndcg@3") == pytest.approx(lin, abs=1e-12)
    exp = (3 / math.log2(3) + 1 / 2) / (3 + 1 / math.log2(3))
    assert one(q, ["x", "a", "b"], "ndcg_exp@3") == pytest.approx(exp, abs=1e-12)
    # nDCG ignores the relevance level: the grade-1 doc still gains
    assert one(q, ["x", "a", "b"], "ndcg@3", relevance_level=2) == pytest.approx(lin, abs=1e-12)


def test_hit_rprec_aqwv() -> None:
    assert one(REL3, ["x", "a"], "hit@1") == 0.0
    assert one(REL3, ["x", "a"], "hit@2") == 1.0
    assert one(REL3, ["a", "x", "b", "c"], "rprec") == pytest.approx(2 / 3)  # 2 relevant in the top R=3
    # AQWV@4: P_miss = 0/3, P_FA = 1/4 -> 1 - 0 - 40/4 = -9
    assert one(REL3, ["a", "x", "b", "c"], "aqwv@4") == pytest.approx(-9.0)
    # MATERIAL denominator with N = 1003: P_FA = 1/(1003-3)
    assert one(REL3, ["a", "x", "b", "c"], "aqwv@4", collection_size=1003) == pytest.approx(1 - 40 / 1000)


def test_ties_float32_and_docid_descending() -> None:
    qrels = Qrels.from_dict({"q": {"d10": 1}})
    run = Run.from_dict({"q": {"d9": 1.0, "d10": 1.0 + 1e-9}})  # equal as float32 -> doc id desc: d9 first
    assert [d for d, _ in run.query("q")] == ["d9", "d10"]
    assert evaluate(qrels, run, ["mrr"]).aggregate["mrr"] == 0.5
