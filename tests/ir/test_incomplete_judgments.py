"""judged@k against ir_measures' Judged@k (tie-free runs) and against a plain computation (with ties);
bpref and infAP on a hand case; condensed lists said in every output. bpref, infAP and condensed lists
are held to pytrec_eval per query in test_generated_crosscheck.py."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ragmeter.ir import Qrels, Run, evaluate

from .test_generated_crosscheck import workload

ir_measures = pytest.importorskip("ir_measures")

KS = (1, 3, 5, 10, 20)


def _tie_free(seed: int, k_max: int) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """Distinct scores, at least k_max docs per query, no negative grade: where Judged@k is defined alike."""
    rng = np.random.default_rng(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for i in range(40):
        docs = [f"d{j}" for j in rng.choice(400, size=int(rng.integers(k_max, 120)), replace=False)]
        judged = [d for d in docs if rng.random() < 0.5] or docs[:1]
        judged += [f"x{j}" for j in range(int(rng.integers(0, 5)))]  # judged, never retrieved
        qrels[f"q{i}"] = {d: int(rng.integers(0, 4)) for d in judged}
        scores = rng.permutation(len(docs)).astype(float) + rng.random()
        run[f"q{i}"] = dict(zip(docs, scores.tolist(), strict=True))
    return qrels, run


def _ir_measures_judged(qrels: dict, run: dict, k: int) -> dict[str, float]:
    measure = ir_measures.Judged @ k
    qrel_rows = [ir_measures.Qrel(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
    run_rows = [ir_measures.ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    return {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrel_rows, run_rows)}


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_judged_at_k_equals_ir_measures_without_ties(seed: int, backend: str) -> None:
    qrels, run = _tie_free(seed, max(KS))
    res = evaluate(
        Qrels.from_dict(qrels),
        Run.from_dict(run),
        [f"judged@{k}" for k in KS],
        no_relevant="zero",
        backend=backend,  # type: ignore[arg-type]
    )
    for k in KS:
        want = _ir_measures_judged(qrels, run, k)
        assert set(want) == set(res.per_query)
        for q, v in want.items():
            assert res.per_query[q][f"judged@{k}"] == pytest.approx(v, abs=1e-12), (q, k)
    assert len({round(v["judged@10"], 6) for v in res.per_query.values()}) > 3  # not a constant


def _plain_judged(qrels: dict, run: dict, k: int) -> dict[str, float]:
    """trec_eval's order (float32 score desc, doc id desc byte-wise); grade >= 0 is judged; / k."""
    out = {}
    for q, docs in run.items():
        if q not in qrels:
            continue
        order = sorted(docs, key=lambda d: (np.float32(docs[d]), d.encode()), reverse=True)
        out[q] = sum(qrels[q].get(d, -1) >= 0 for d in order[:k]) / k
    return out


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("seed", [0, 3])
def test_judged_at_k_with_ties_short_runs_and_negative_grades(seed: int, backend: str) -> None:
    qrels, run = workload(seed)  # float32-only ties, exact ties, runs shorter than k, negative grades
    res = evaluate(
        Qrels.from_dict(qrels),
        Run.from_dict(run),
        [f"judged@{k}" for k in KS],
        missing="ignore",
        no_relevant="zero",
        backend=backend,  # type: ignore[arg-type]
    )
    for k in KS:
        want = _plain_judged(qrels, run, k)
        assert set(want) == set(res.per_query)
        for q, v in want.items():
            assert res.per_query[q][f"judged@{k}"] == pytest.approx(v, abs=1e-12), (q, k)


def test_judged_at_k_differs_from_ir_measures_where_documented() -> None:
    # a negative grade is unjudged for us (judged for ir_measures); fewer than k docs: we divide by k
    qrels = {"q": {"a": 1, "b": 0, "c": -1}}
    run = {"q": {"a": 3.0, "x": 2.0, "c": 1.0}}
    ours = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), ["judged@5", "judged@2"]).per_query["q"]
    assert ours == {"judged@5": pytest.approx(1 / 5), "judged@2": pytest.approx(1 / 2)}
    theirs = _ir_measures_judged(qrels, run, 5)
    assert theirs["q"] == pytest.approx(2 / 3)


@pytest.mark.parametrize("backend", ["native", "numpy"])
def test_bpref_infap_hand_case(backend: str) -> None:
    # ranking: x (not in qrels), a (rel), c (pooled, unjudged), b (judged non-rel), d (rel), y (not in qrels)
    qrels = Qrels.from_dict({"1": {"a": 1, "b": 0, "c": -1, "d": 2, "e": 0}})
    run = Run.from_dict({"1": {"x": 5, "a": 4, "c": 3.5, "b": 3, "d": 2, "y": 1}})
    v = evaluate(qrels, run, ["bpref", "infAP", "map"], backend=backend).per_query["1"]  # type: ignore[arg-type]
    # bpref: a has no judged non-rel above it (1), d has b above it: 1 - min(1, R=2) / min(N=2, R=2)
    assert v["bpref"] == pytest.approx((1 + (1 - 1 / 2)) / 2)
    # infAP (trec_eval): a at rank 2: 1/2 + 1/2 * 0/1 * ...; d at rank 5: 1/5 + 4/5 * (1+1+1)/4 * (1+e)/(2+2e)
    e = 0.00001
    assert v["infap"] == pytest.approx((0.5 + 1 / 5 + 4 / 5 * 3 / 4 * (1 + e) / (2 + 2 * e)) / 2, abs=1e-12)
    condensed = evaluate(qrels, run, ["map", "judged@3"], condensed=True, backend=backend)  # type: ignore[arg-type]
    # condensed ranking a, b, d: AP = (1/1 + 2/3) / 2; judged@3 = 1 by construction
    assert condensed.per_query["1"] == pytest.approx({"map": (1 + 2 / 3) / 2, "judged@3": 1.0})
    assert v["map"] == pytest.approx((1 / 2 + 2 / 5) / 2)


def test_condensed_is_said_in_every_output() -> None:
    qrels = Qrels.from_dict({"1": {"a": 1, "b": 0}})
    run = Run.from_dict({"1": {"x": 2.0, "a": 1.0}})
    res = evaluate(qrels, run, ["map"], condensed=True)
    assert res.per_query["1"]["map"] == 1.0  # x removed: a is at rank 1
    assert any("condensed" in n for n in res.policy_notes())
    data = json.loads(res.to_json())
    assert data["condensed"] is True and "condensed" in data["notes"][0]
    assert res.to_csv().splitlines()[0].startswith("query_id (condensed lists)")
    plain = evaluate(qrels, run, ["map"])
    assert "condensed" not in plain.to_json() and plain.per_query["1"]["map"] == 0.5
