"""The metric registry: one record per metric, every consumer's source of names, ranges and directions."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragmeter.metrics as rm
from ragmeter.errors import InputError
from ragmeter.metrics.aggregate import summarize
from ragmeter.stats.intervals import bootstrap_mean, wilson

REPO = Path(__file__).resolve().parents[2]


def test_retrieval_names_resolve_to_canonical_concrete_specs() -> None:
    for raw, canonical in [
        ("ndcg@10", "ndcg@10"),
        ("P_5", "precision@5"),
        ("recip_rank", "mrr"),
        ("ndcg_cut_20", "ndcg@20"),
        ("success@3", "hit@3"),
        ("Rprec", "rprec"),
    ]:
        spec = rm.get(raw)
        assert spec.name == canonical
        assert spec.family == "retrieval" and spec.range == (0.0, 1.0) and spec.higher_is_better
        assert spec.parameters == ()


def test_unknown_names_are_input_errors_listing_what_exists() -> None:
    for bad in ("nosuch@5", "nosuch", "ndcg@0", "precision", "latency_ms"):
        with pytest.raises(InputError, match="unknown metric"):
            rm.get(bad)


def test_direction_range_and_scale_are_declared_once() -> None:
    assert not rm.get("hallucination_rate").higher_is_better
    assert rm.get("retrieval_grade").range == (1.0, 10.0) and rm.get("retrieval_grade").scale == "1-10"
    lat = rm.get("latency_retrieve_ms")
    assert lat.unit == "ms" and not lat.higher_is_better and lat.range == (0.0, None)
    assert rm.get("aqwv@5").range == (None, 1.0)


def test_every_metric_the_library_can_produce_is_registered() -> None:
    """Names produced by the lexical metrics, the judges, SBERT and the IR engine's measure parser."""
    from ragmeter.ir.measures import DEFAULT_CUTOFFS
    from ragmeter.judges import JUDGES
    from ragmeter.text import lexical_metrics

    produced = set(lexical_metrics("Paris it is", ["Paris"], question="capital?", contexts=["Paris."]))
    produced |= set(JUDGES) | {"total_score", "sbert_similarity", "cross_encoder_similarity"}
    for fam in ("recall", "precision", "ndcg", "hit", "map", "mrr", "aqwv", "ndcg_exp"):
        produced |= {f"{fam}@{k}" for k in DEFAULT_CUTOFFS}
    produced |= {"mrr", "map", "rprec", "ndcg"}
    missing = sorted(n for n in produced if rm.lookup(n) is None)
    assert not missing


def test_specs_serialise_for_metrics_list() -> None:
    rows = [s.to_dict() for s in rm.specs()]
    names = [r["name"] for r in rows]
    assert len(names) == len(set(names))
    for r in rows:
        assert {"name", "family", "range", "higher_is_better", "stage", "version"} <= set(r)
        lo, hi = r["range"]
        assert lo is None or hi is None or lo < hi


def test_user_metric_registers_in_one_call_and_is_refused_twice() -> None:
    spec = rm.register(
        "answer_words",
        lambda i: float(len((i.answer or "").split())),
        range=(0, None),
        higher_is_better=False,
        scale="words",
    )
    try:
        assert rm.get("answer_words") is spec and spec.family == "custom"
        inp = rm.ScoreInput("q1", "Q?", "two words", ["x"], [], [], {})
        assert spec.compute is not None and spec.compute(inp) == 2.0
        with pytest.raises(InputError, match="already registered"):
            rm.register("answer_words", lambda i: 0.0)
        with pytest.raises(InputError, match="already registered"):
            rm.register("ndcg", lambda i: 0.0)
    finally:
        rm.unregister("answer_words")
    assert rm.lookup("answer_words") is None


def test_docs_worked_example_runs() -> None:
    """docs/metrics.md's worked example, executed as written."""
    text = (REPO / "docs" / "metrics.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", text, re.S)
    assert block is not None
    namespace: dict[str, object] = {}
    try:
        exec(compile(block.group(1), "docs/metrics.md", "exec"), namespace)
    finally:
        for name in ("answer_length", "mentions_year"):
            if rm.lookup(name) is not None:
                rm.unregister(name)
    assert namespace["result"] is not None


# ------------------------------------------------------------------------------ intervals stay in range


def test_the_reported_bug_cases_stay_in_range() -> None:
    s = summarize("recall@3", [1.0] * 29 + [0.5, 0.0])
    assert s.ci95 is not None and 0.0 <= s.ci95[0] <= s.mean <= s.ci95[1] <= 1.0
    s = summarize("hallucination_rate", [0.0] * 40 + [0.1])
    assert s.ci95 is not None and s.ci95[0] >= 0.0
    s = summarize("hit@1", [1.0] * 20)
    assert s.ci_method == "wilson" and s.ci95 is not None and s.ci95[1] == 1.0 and s.ci95[0] > 0.8


@settings(max_examples=150, deadline=None)
@given(
    name=st.sampled_from(
        [
            "ndcg@10",
            "hit@5",
            "exact_match",
            "retrieval_grade",
            "total_score",
            "token_f1",
            "aqwv@5",
            "latency_total_ms",
            "hallucination_rate",
        ]
    ),
    raw=st.lists(st.one_of(st.none(), st.floats(0, 1, allow_nan=False)), min_size=0, max_size=60),
    seed=st.integers(0, 2**31),
)
def test_every_interval_lies_in_its_metrics_range(name: str, raw: list[float | None], seed: int) -> None:
    spec = rm.get(name)
    lo, hi = spec.range
    # values drawn inside the metric's range (bounded side) or mapped onto it
    span_lo = lo if lo is not None else -50.0
    span_hi = hi if hi is not None else 5000.0
    values = [None if v is None else span_lo + v * (span_hi - span_lo) for v in raw]
    if name in ("hit@5", "exact_match"):
        values = [None if v is None else float(round((v - span_lo) / (span_hi - span_lo))) for v in values]
    s = summarize(name, values, seed=seed)
    assert s.n + s.n_null == len(values)
    if s.mean is None:
        assert s.n == 0 and s.ci95 is None
        return
    assert math.isfinite(s.mean) and spec.in_range(s.mean)
    if s.ci95 is not None:
        assert s.ci_method in ("bootstrap-percentile", "wilson")
        assert spec.in_range(s.ci95[0]) and spec.in_range(s.ci95[1]) and s.ci95[0] <= s.ci95[1]


def test_bootstrap_is_seeded_and_wilson_matches_the_formula() -> None:
    vals = list(np.random.default_rng(1).random(50))
    assert bootstrap_mean(vals, seed=3) == bootstrap_mean(vals, seed=3)
    lo, hi = wilson(8, 10)
    assert lo == pytest.approx(0.4901625, abs=1e-6) and hi == pytest.approx(0.9433178, abs=1e-6)


def test_bootstrap_interval_covers_the_mean_at_about_95_percent() -> None:
    rng = np.random.default_rng(0)
    hits = 0
    trials = 300
    for t in range(trials):
        sample = rng.beta(2, 5, size=60)
        lo, hi = bootstrap_mean(list(sample), seed=t, n_resamples=500)
        hits += lo <= 2 / 7 <= hi
    assert hits / trials >= 0.9
