"""The 500-query fixture built to break wrong tie handling, against pytrec_eval's recorded answers."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from ragmeter.ir import Qrels, Run, evaluate

from .helpers import trec_name

MEASURES = (
    [f"ndcg@{k}" for k in (1, 3, 5, 10, 20)]
    + [f"precision@{k}" for k in (1, 3, 5, 10, 20)]
    + [f"recall@{k}" for k in (1, 3, 5, 10, 20, 100)]
    + ["map", "map@10", "map@100", "mrr", "rprec", "hit@1", "hit@5", "hit@10"]
)


@pytest.fixture(scope="module")
def fixture(crosscheck_dir: Path) -> tuple[Qrels, Run, dict]:
    qrels = Qrels.from_trec(crosscheck_dir / "xval.qrels")
    run = Run.from_trec(crosscheck_dir / "xval.run")
    expected = json.loads((crosscheck_dir / "xval_expected.json").read_text())
    return qrels, run, expected


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_per_query_equals_pytrec_eval(fixture, backend) -> None:
    qrels, run, expected = fixture
    res = evaluate(qrels, run, MEASURES, missing="ignore", no_relevant="zero", backend=backend)
    ours = res.per_query
    assert set(ours) == set(expected["per_query"])
    bad = [
        (q, m, ours[q][m], want[trec_name(m)])
        for q, want in expected["per_query"].items()
        for m in MEASURES
        if abs(ours[q][m] - want[trec_name(m)]) > 1e-9
    ]
    assert not bad, bad[:5]


def test_means_match_both_trec_eval_modes(fixture) -> None:
    qrels, run, expected = fixture
    default = evaluate(qrels, run, MEASURES, missing="ignore", no_relevant="zero").aggregate
    complete = evaluate(qrels, run, MEASURES, missing="zero", no_relevant="zero").aggregate
    for m in MEASURES:
        assert default[m] == pytest.approx(expected["mean"][trec_name(m)], abs=1e-12)
        assert complete[m] == pytest.approx(expected["mean_complete"][trec_name(m)], abs=1e-12)


def test_default_policy_leaves_out_queries_without_relevant(fixture) -> None:
    qrels, run, expected = fixture
    res = evaluate(qrels, run, ["map"])
    meta = expected["meta"]
    no_rel = set(meta["queries_without_relevant_docs"])
    assert not (no_rel & set(res.per_query))
    # 10 qrels-only queries are scored 0 (trec_eval -c); those without relevant docs are counted, not averaged
    assert res.n_queries == len(qrels.query_ids) - res.n_queries_without_relevant
    assert res.n_queries_without_relevant >= len(no_rel)
    included = [v["map"] for q, v in expected["per_query"].items() if q not in no_rel]
    missing_with_rel = res.n_queries - len(included)
    assert res.aggregate["map"] == pytest.approx(
        sum(included) / (len(included) + missing_with_rel), abs=1e-12
    )


def test_run_is_stored_in_trec_eval_rank_order(fixture) -> None:
    _, run, _ = fixture
    # within every query: float32 score non-increasing, ties by doc id descending byte-wise
    for qid in run.query_ids[:200]:
        rows = run.query(qid)
        for (d1, s1), (d2, s2) in pairwise(rows):
            f1, f2 = np.float32(s1), np.float32(s2)
            assert f1 > f2 or (f1 == f2 and d1.encode() > d2.encode()), (qid, d1, s1, d2, s2)
