"""The estimators that moved to ragmeter.stats still resolve at their old paths for one release, each with a
DeprecationWarning naming the new place; a comparison's JSON writes an unbounded d_z end as "inf"."""

from __future__ import annotations

import importlib
import json
import math
import warnings

import pytest

MOVED = [
    ("ragmeter.experiments.paired_tests", "permutation_test", "ragmeter.stats.paired"),
    ("ragmeter.experiments.power", "plan_queries", "ragmeter.stats.power"),
    ("ragmeter.experiments.effects", "bootstrap_summary", "ragmeter.stats.effects"),
    ("ragmeter.experiments.effects", "percentile_interval", "ragmeter.stats.resample"),
    ("ragmeter.experiments.tukey", "tukey_hsd_pvalues", "ragmeter.stats.tukey"),
    ("ragmeter.experiments.ppi", "ppi_mean", "ragmeter.stats.ppi"),
    ("ragmeter.experiments.repeats", "repeat_stability", "ragmeter.stats.krippendorff"),
    ("ragmeter.score.ppi_mean", "t_quantile", "ragmeter.stats.ppi"),
    ("ragmeter.score.confseq", "wor_confidence_sequence", "ragmeter.stats.confseq"),
    ("ragmeter.score.stability", "krippendorff_alpha", "ragmeter.stats.krippendorff"),
    ("ragmeter.metrics.aggregate", "wilson", "ragmeter.stats.intervals"),
]


@pytest.mark.parametrize(("old", "name", "new"), MOVED)
def test_an_old_path_forwards_with_a_warning_naming_the_new_one(old: str, name: str, new: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = getattr(importlib.import_module(old), name)
    assert value is getattr(importlib.import_module(new), name)
    assert [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)] == [
        f"{old}.{name} moved to {new}.{name}"
    ]


def test_old_bootstrap_mean_keeps_its_old_keyword() -> None:
    from ragmeter.stats.intervals import bootstrap_mean

    with pytest.warns(DeprecationWarning, match="ragmeter.stats.intervals.bootstrap_mean"):
        from ragmeter.metrics.aggregate import bootstrap_mean as old
    values = [0.1, 0.5, 0.2, 0.9, 0.4]
    assert old(values, seed=3, resamples=300) == bootstrap_mean(values, seed=3, n_resamples=300)


def test_agreement_takes_n_resamples_and_n_boot_with_a_warning() -> None:
    from ragmeter.validity.agreement import agreement

    human, judge = [0, 1, 2, 1, 0, 2, 1, 1], [0, 1, 1, 1, 0, 2, 2, 1]
    new = agreement(human, judge, n_resamples=200, seed=4)
    with pytest.warns(DeprecationWarning, match="n_resamples="):
        old = agreement(human, judge, n_boot=200, seed=4)
    assert new.to_dict() == old.to_dict() and new.n_boot == 200


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        importlib.import_module("ragmeter.experiments.effects").no_such_name  # noqa: B018


def test_comparison_json_writes_infinite_ends_as_strings() -> None:
    from ragmeter.experiments.render import ComparisonReport

    rows = [{"metric": "mrr", "dz": 2.2, "dz_ci95": [0.9, math.inf], "ci95": [0.1, 0.2]}]
    text = ComparisonReport(a="A", comparisons=[{"b": "B", "metrics": rows}], seed=1, resamples=10).to_json()
    assert "Infinity" not in text
    assert json.loads(text)["metrics"][0]["dz_ci95"] == [0.9, "inf"]
