"""trec_eval exactness on a fresh clone: seeded generated workloads compared LIVE against pytrec_eval.

No recorded fixture and nothing from ../shared: each workload is generated from a seed and evaluated by
pytrec_eval (trec_eval's C code) and by both of our backends, per query to 1e-9. The workloads are built
to break wrong tie handling and wrong query sets:

* scores with exact ties, ties that exist only in float32 (distinct doubles that round to one float),
  negative and large scores, doc ids whose byte order differs from their numeric order (d9 > d10);
* graded judgments 0..3 and negative grades (judged "unjudged"), relevant docs never retrieved, retrieved
  docs never judged, queries whose judgments are all <= 0;
* queries only in the qrels, queries only in the run; no doc id twice in one query;
* for bpref and infAP: judged non-relevant docs (grade 0, and 1 at relevance level 2), docs in the pool but
  unjudged (negative grade) and docs not in the qrels, retrieved above and between relevant docs; the
  condensed lists of trec_eval -J (pytrec_eval's judged_docs_only_flag) for every measure.
"""

from __future__ import annotations

import numpy as np
import pytest

from ragmeter.ir import Qrels, Run, evaluate

from .helpers import ours_per_query, pytrec_measure_set, pytrec_per_query, trec_name

pytrec_eval = pytest.importorskip("pytrec_eval")

CUTOFFS = (1, 3, 5, 10, 20, 100)
MEASURES = (
    [f"ndcg@{k}" for k in CUTOFFS]
    + [f"precision@{k}" for k in CUTOFFS]
    + [f"recall@{k}" for k in CUTOFFS]
    + [f"map@{k}" for k in (5, 10, 100)]
    + [f"hit@{k}" for k in (1, 5, 10)]
    + ["map", "mrr", "rprec", "ndcg", "bpref", "infap"]
)
SEEDS = range(8)
Workload = tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]


def _doc_id(rng: np.random.Generator, j: int) -> str:
    # mixed lengths and cases so that byte-wise order differs from numeric order; some non-ASCII
    style = rng.integers(0, 10)
    if style == 0:
        return f"D{j}"
    if style == 1:
        return f"doc-{j:04d}"
    if style == 2:
        return f"é{j}"
    return f"d{j}"


def _scores(rng: np.random.Generator, n: int) -> list[float]:
    kind = rng.integers(0, 5)
    if kind == 0:  # few distinct values: many exact ties
        return [float(x) for x in rng.integers(0, 4, n)]
    if kind == 1:  # ties that exist only as float32: x and x + (less than half a float32 ulp)
        base = rng.choice(np.array([0.5, 3.0, 10.0, 123.456, -2.25], dtype=np.float32), n)
        nudge = rng.random(n) * 0.45 * np.spacing(np.abs(base)).astype(np.float64)
        out = base.astype(np.float64) + np.where(rng.random(n) < 0.5, nudge, 0.0)
        return [float(x) for x in out]
    if kind == 2:  # negative and large magnitudes
        return [float(x) for x in rng.normal(0, 1e6, n)]
    if kind == 3:  # rank-like descending scores with a few repeats
        return [float(-(i // 2)) for i in range(n)]
    return [float(x) for x in rng.random(n)]


def workload(seed: int) -> Workload:
    rng = np.random.default_rng(seed)
    nq = 60
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for i in range(nq):
        qid = f"q{i}" if rng.random() < 0.8 else f"Q-{i}é"
        pool = sorted(
            {_doc_id(rng, int(j)) for j in rng.choice(300, size=int(rng.integers(5, 160)), replace=False)}
        )
        role = rng.random()
        in_qrels = role >= 0.08  # ~8% run-only queries
        in_run = role < 0.08 or role >= 0.16  # ~8% qrels-only queries
        if in_qrels:
            judged = [d for d in pool if rng.random() < 0.4] or pool[:1]
            if rng.random() < 0.1:  # nothing relevant: grades 0 and negative only
                grades = rng.choice([-1, 0], size=len(judged))
            else:
                grades = rng.choice([-1, 0, 0, 1, 1, 2, 3], size=len(judged))
            qrels[qid] = {d: int(g) for d, g in zip(judged, grades, strict=True)}
        if in_run:
            retrieved = [d for d in pool if rng.random() < 0.7] or pool[-1:]
            rng.shuffle(retrieved)  # file order must not matter
            retrieved = retrieved[: int(rng.integers(1, 130))]
            run[qid] = dict(zip(retrieved, _scores(rng, len(retrieved)), strict=True))
    return qrels, run


def pytrec(qrels: dict, run: dict, level: int) -> dict[str, dict[str, float]]:
    names = [*MEASURES, "num_rel"]
    wanted = pytrec_measure_set(MEASURES) | {"num_rel"}
    raw = pytrec_eval.RelevanceEvaluator(qrels, wanted, relevance_level=level).evaluate(run)
    return {q: {n: v[trec_name(n) if n != "num_rel" else n] for n in names} for q, v in raw.items()}


@pytest.fixture(scope="module", params=SEEDS)
def case(request: pytest.FixtureRequest) -> tuple[dict, dict, dict[int, dict]]:
    qrels, run = workload(request.param)
    return qrels, run, {level: pytrec(qrels, run, level) for level in (1, 2)}


def test_workloads_cover_the_hard_cases() -> None:
    qrels, run = workload(0)
    assert set(qrels) - set(run) and set(run) - set(qrels)  # queries missing on either side
    assert any(all(g <= 0 for g in docs.values()) for docs in qrels.values())
    assert any(g < 0 for docs in qrels.values() for g in docs.values())
    assert any(set(run[q]) - set(qrels[q]) for q in set(run) & set(qrels))  # retrieved, unjudged
    both = set(run) & set(qrels)
    # pooled-unjudged and judged non-relevant docs are retrieved
    for wanted in ((lambda g: g < 0), (lambda g: g == 0)):
        assert any(wanted(qrels[q][d]) for q in both for d in run[q] if d in qrels[q])
    # bpref and infAP take values strictly between 0 and 1 on some queries (not only the trivial cases)
    vals = pytrec(qrels, run, 1)
    assert any(0 < v["bpref"] < 1 for v in vals.values()) and any(0 < v["infap"] < 1 for v in vals.values())
    assert any(abs(v["infap"] - v["map"]) > 1e-6 for v in vals.values())
    f32_ties = 0
    for docs in run.values():
        vals = list(docs.values())
        f32_ties += len(vals) - len(set(np.float32(vals).tolist())) - (len(vals) - len(set(vals)))
    assert f32_ties > 0  # distinct doubles, equal float32
    # and the tie order decides values: breaking ties by doc id ascending instead changes some queries
    ascending = {}
    for q, docs in run.items():
        order = sorted(docs, key=lambda d: (-np.float32(docs[d]), d.encode()))
        ascending[q] = {d: float(len(order) - i) for i, d in enumerate(order)}
    base, other = pytrec(qrels, run, 1), pytrec(qrels, ascending, 1)
    assert any(abs(base[q][m] - other[q][m]) > 1e-9 for q in base for m in MEASURES)


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("level", [1, 2])
def test_per_query_equals_pytrec_eval(case, backend: str, level: int) -> None:
    qrels, run, expected = case
    want = expected[level]
    ours = ours_per_query(qrels, run, MEASURES, level, backend)
    assert set(ours) == set(want) == set(qrels) & set(run)
    bad = [
        (q, m, ours[q][m], want[q][m]) for q in want for m in MEASURES if abs(ours[q][m] - want[q][m]) > 1e-9
    ]
    assert not bad, bad[:5]


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("level", [1, 2])
def test_condensed_lists_equal_trec_eval_judged_docs_only(case, backend: str, level: int) -> None:
    qrels, run, _ = case
    want = pytrec_per_query(qrels, run, list(MEASURES), level, condensed=True)
    ours = ours_per_query(qrels, run, list(MEASURES), level, backend, condensed=True)
    assert set(ours) == set(want)
    bad = [
        (q, m, ours[q][m], want[q][m]) for q in want for m in MEASURES if abs(ours[q][m] - want[q][m]) > 1e-9
    ]
    assert not bad, bad[:5]
    # and condensing changes values: the unjudged docs in these rankings matter
    full = ours_per_query(qrels, run, ["map", "infap", "ndcg@10"], level, backend)
    assert any(abs(full[q]["map"] - ours[q]["map"]) > 1e-9 for q in want)
    assert any(abs(full[q]["infap"] - ours[q]["infap"]) > 1e-9 for q in want)


@pytest.mark.parametrize("backend", ["native", "numpy"])
@pytest.mark.parametrize("missing", ["zero", "ignore"])
@pytest.mark.parametrize("no_relevant", ["zero", "exclude"])
def test_means_under_every_policy(case, backend: str, missing: str, no_relevant: str) -> None:
    qrels, run, expected = case
    want = expected[1]
    res = evaluate(
        Qrels.from_dict(qrels),
        Run.from_dict(run),
        MEASURES,
        missing=missing,  # type: ignore[arg-type]
        no_relevant=no_relevant,  # type: ignore[arg-type]
        backend=backend,  # type: ignore[arg-type]
    )
    # which queries a mean is over: trec_eval's default is run ∩ qrels, -c adds qrels-only queries as 0;
    # "exclude" then leaves out every query with no relevant doc (counted in the report, not averaged)
    num_rel = {q: sum(g >= 1 for g in docs.values()) for q, docs in qrels.items()}
    assert all(num_rel[q] == want[q]["num_rel"] for q in want)
    over = [q for q in qrels if (missing == "zero" or q in run) and (no_relevant == "zero" or num_rel[q] > 0)]
    assert res.n_queries == len(over)
    assert res.n_run_only_queries == len(set(run) - set(qrels))
    for m in MEASURES:
        mean = sum(want[q][m] for q in over if q in want) / len(over)
        assert res.aggregate[m] == pytest.approx(mean, abs=1e-12), m


def test_trec_files_roundtrip_to_the_same_values(case, tmp_path) -> None:
    """The same workload written as TREC files and read back by the native parser gives the same values."""
    qrels, run, expected = case
    Qrels.from_dict(qrels).to_trec(tmp_path / "q.qrels")
    Run.from_dict(run).to_trec(tmp_path / "r.trec")
    res = evaluate(
        Qrels.from_trec(tmp_path / "q.qrels"),
        Run.from_trec(tmp_path / "r.trec"),
        MEASURES,
        missing="ignore",
        no_relevant="zero",
    )
    want = expected[1]
    assert set(res.per_query) == set(want)
    for q, vals in res.per_query.items():
        for m in MEASURES:
            assert vals[m] == pytest.approx(want[q][m], abs=1e-9), (q, m)
