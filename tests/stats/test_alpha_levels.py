"""Krippendorff's alpha at every level of measurement, checked against the `krippendorff` package; a level it
does not know is refused, by the statistic and by the repeat stability that uses it."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest

from ragmeter.stats.krippendorff import LEVELS, krippendorff_alpha, repeat_stability


@pytest.mark.parametrize("seed", range(6))
def test_nominal_alpha_matches_the_krippendorff_package(seed: int) -> None:
    rng = np.random.default_rng(seed)
    items, repeats = int(rng.integers(10, 60)), int(rng.integers(2, 6))
    base = rng.integers(0, 4, size=(items, 1))
    grades = ((base + rng.integers(-1, 2, size=(items, repeats))) % 4).astype(float)
    grades[rng.random(grades.shape) < 0.2] = np.nan
    ours = krippendorff_alpha(grades, "nominal")
    oracle = krippendorff.alpha(reliability_data=grades.T, level_of_measurement="nominal")
    assert ours is not None and ours == pytest.approx(oracle, abs=1e-9)
    # the three levels differ on such data: nominal is not the ordinal or interval alpha under a new name
    others = {level: krippendorff_alpha(grades, level) for level in ("ordinal", "interval")}
    assert all(abs(ours - v) > 1e-6 for v in others.values() if v is not None)


def test_nominal_stability_interval_brackets_the_nominal_alpha() -> None:
    rng = np.random.default_rng(4)
    grades = np.repeat(rng.integers(0, 3, size=(80, 1)), 3, axis=1).astype(float)
    flip = rng.random(grades.shape) < 0.2
    grades[flip] = rng.integers(0, 3, size=int(flip.sum()))
    result = repeat_stability(grades, level="nominal", threshold=1.5, n_resamples=300, seed=1)
    oracle = krippendorff.alpha(reliability_data=grades.T, level_of_measurement="nominal")
    assert result.level == "nominal" and result.alpha == pytest.approx(oracle, abs=1e-9)
    assert result.interval is not None and result.interval[0] < result.alpha < result.interval[1]


@pytest.mark.parametrize("level", ["ratio", "Nominal", ""])
def test_an_unknown_level_is_refused(level: str) -> None:
    grades = np.array([[1.0, 2.0], [2.0, 2.0], [3.0, 1.0]])
    with pytest.raises(ValueError, match="level must be one of nominal, ordinal, interval"):
        krippendorff_alpha(grades, level)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="level must be one of"):
        repeat_stability(grades, level=level, threshold=1.5)  # type: ignore[arg-type]
    assert LEVELS == ("nominal", "ordinal", "interval")
