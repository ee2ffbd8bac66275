"""Judge repeats: Krippendorff's alpha (checked against the `krippendorff` package), its bootstrap interval
over items, the verdict flip share, and per-item mean and spread."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest

from ragmeter.stats.krippendorff import flip_share, krippendorff_alpha, repeat_stability, repeat_summary


@pytest.mark.parametrize("level", ["interval", "ordinal"])
@pytest.mark.parametrize("seed", range(6))
def test_alpha_matches_the_krippendorff_package_on_random_data_with_nulls(level: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    items, repeats = int(rng.integers(10, 60)), int(rng.integers(2, 6))
    base = rng.integers(0, 5, size=(items, 1))
    grades = (base + rng.integers(-1, 2, size=(items, repeats))).astype(float)
    if level == "interval":
        grades = grades / 6.0 + rng.normal(0, 0.05, size=grades.shape)  # 0-1 scores, many distinct values
    grades[rng.random(grades.shape) < 0.2] = np.nan
    ours = krippendorff_alpha(grades, level)  # type: ignore[arg-type]
    oracle = krippendorff.alpha(reliability_data=grades.T, level_of_measurement=level)
    assert ours is not None
    assert ours == pytest.approx(oracle, abs=1e-9)


@pytest.mark.parametrize("level", ["interval", "ordinal"])
def test_grades_varying_by_item_but_not_by_repeat_give_alpha_one(level: str) -> None:
    rng = np.random.default_rng(7)
    grades = np.repeat(rng.integers(0, 5, size=(100, 1)), 3, axis=1).astype(float)
    grades[3, 1] = np.nan  # a failed call leaves the item's other repeats in
    result = repeat_stability(grades, level=level, threshold=2.5, n_resamples=200)  # type: ignore[arg-type]
    assert result.alpha == pytest.approx(1.0)
    assert result.interval == pytest.approx((1.0, 1.0))
    assert result.flip_share == 0.0
    assert result.items == 100


@pytest.mark.parametrize("level", ["interval", "ordinal"])
@pytest.mark.parametrize("seed", range(5))
def test_random_grades_give_alpha_near_zero_at_100_items_by_3_repeats(level: str, seed: int) -> None:
    grades = np.random.default_rng(seed).integers(0, 5, size=(100, 3)).astype(float)
    result = repeat_stability(grades, level=level, threshold=2.5, n_resamples=300, seed=seed)  # type: ignore[arg-type]
    assert result.alpha is not None and abs(result.alpha) < 0.15
    assert result.interval is not None
    lo, hi = result.interval
    assert lo < result.alpha < hi
    assert result.flip_share is not None and result.flip_share > 0.4  # verdicts flip for most random items


def test_bootstrap_interval_covers_and_narrows_with_items() -> None:
    rng = np.random.default_rng(3)

    def grades(items: int) -> np.ndarray:
        base = rng.integers(0, 5, size=(items, 1))
        return (base + rng.integers(-1, 2, size=(items, 3))).astype(float)

    small = repeat_stability(grades(30), level="ordinal", threshold=2.5, n_resamples=400)
    large = repeat_stability(grades(600), level="ordinal", threshold=2.5, n_resamples=400)
    assert small.interval is not None and large.interval is not None and large.alpha is not None
    assert large.interval[1] - large.interval[0] < small.interval[1] - small.interval[0]
    assert large.interval[0] < large.alpha < large.interval[1]


def test_flip_share_counts_items_whose_verdict_crosses_the_threshold() -> None:
    grades = np.array(
        [
            [0.9, 0.8, 0.95],  # always passes
            [0.2, 0.1, np.nan],  # always fails
            [0.4, 0.6, 0.5],  # crosses 0.5 (0.5 itself passes)
            [0.7, np.nan, np.nan],  # one value: no part
        ]
    )
    assert flip_share(grades, 0.5) == pytest.approx(1 / 3)
    # lower is better: a value passes at or below the threshold
    assert flip_share(grades, 0.45, higher=False) == pytest.approx(1 / 3)
    assert flip_share(np.full((2, 3), np.nan), 0.5) is None


def test_repeat_summary_gives_mean_and_spread_per_item() -> None:
    grades = np.array([[1.0, 2.0, 3.0], [4.0, np.nan, 4.0], [np.nan, 5.0, np.nan]])
    mean, sd = repeat_summary(grades)
    assert mean == pytest.approx([2.0, 4.0, 5.0])
    assert sd[:2] == pytest.approx([1.0, 0.0])
    assert np.isnan(sd[2])


def test_alpha_is_undefined_without_variation_or_pairable_items() -> None:
    assert krippendorff_alpha(np.ones((5, 3))) is None
    assert krippendorff_alpha(np.array([[1.0, np.nan], [2.0, np.nan]])) is None
    assert repeat_stability(np.ones((5, 3)), level="interval", threshold=0.5).alpha is None
