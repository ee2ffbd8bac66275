"""Random qrels and runs (ties, grades, short runs, missing queries): native == numpy == pytrec_eval."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmeter.ir import Qrels, Run, _native, _reference, evaluate

from .helpers import ours_per_query, pytrec_per_query

MEASURES = [
    "precision@1", "precision@5", "recall@3", "recall@10", "ndcg@3", "ndcg@10", "map", "map@5", "mrr",
    "rprec", "hit@1", "hit@5",
]  # fmt: skip

doc_ids = st.sampled_from([f"d{i}" for i in range(12)] + ["D1", "d01", "a", "z9"])
scores = st.sampled_from([1.0, 2.0, 2.0 + 1e-9, 3.5, 0.0, -1.0, 7.25])  # few values => many ties
query_ids = st.sampled_from([f"q{i}" for i in range(6)])

qrels_st = st.dictionaries(
    query_ids, st.dictionaries(doc_ids, st.integers(-1, 3), min_size=1, max_size=8), max_size=6
)
run_st = st.dictionaries(query_ids, st.dictionaries(doc_ids, scores, min_size=1, max_size=12), max_size=6)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qrels=qrels_st, run=run_st, level=st.integers(1, 3))
def test_matches_pytrec_eval(qrels, run, level) -> None:
    if not qrels or not run:
        return
    want = pytrec_per_query(qrels, run, MEASURES, level)
    got = ours_per_query(qrels, run, MEASURES, level)
    assert set(got) == set(want)
    for q in want:
        for m in MEASURES:
            assert abs(got[q][m] - want[q][m]) <= 1e-9, (q, m, got[q][m], want[q][m])


@settings(max_examples=100, deadline=None)
@given(qrels=qrels_st, run=run_st, level=st.integers(1, 3))
def test_native_equals_numpy_reference(qrels, run, level) -> None:
    if not qrels:
        return
    q, r = Qrels.from_dict(qrels), Run.from_dict(run)
    names = [*MEASURES, "ndcg_exp@5", "aqwv@5", "mrr@3", "ndcg"]
    a = evaluate(q, r, names, relevance_level=level, backend="native")
    b = evaluate(q, r, names, relevance_level=level, backend="numpy")
    np.testing.assert_allclose(a.values, b.values, atol=1e-12)
    assert a.n_queries == b.n_queries and a.n_queries_without_relevant == b.n_queries_without_relevant


@settings(max_examples=100, deadline=None)
@given(run=run_st)
def test_native_parse_equals_reference_parse(run) -> None:
    text = "".join(f"{q} Q0 {d} 0 {s!r} t\n" for q, docs in run.items() for d, s in docs.items()).encode()
    nq, nparts = _native.parse_trec(text, True, False)
    rq, rparts = _reference.parse_trec(text, True, False)
    assert nq == rq
    np.testing.assert_array_equal(nparts[0], rparts[0])
    assert nparts[1] == rparts[1]
    np.testing.assert_array_equal(nparts[2], rparts[2])
    np.testing.assert_array_equal(nparts[3], rparts[3])
