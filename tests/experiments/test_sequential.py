"""Sequential gates: the without-replacement confidence sequence (Waudby-Smith & Ramdas 2020) and the gate
decision, checked by seeded simulations of many query orders and finite query sets."""

from __future__ import annotations

import numpy as np
import pytest

from ragmeter.experiments.sequential import gate_state, simulate_gates, wor_confidence_sequence

ALPHA = 0.05


def test_sequence_covers_the_finite_population_mean_at_every_step_at_once() -> None:
    rng = np.random.default_rng(11)
    n, runs = 200, 2000
    population = rng.beta(0.7, 1.5, size=n)  # skewed, bounded
    orders = rng.permuted(np.tile(np.arange(n), (runs, 1)), axis=1)
    lower, upper = wor_confidence_sequence(population[orders], n, alpha=ALPHA)
    mean = population.mean()
    missed = ((lower > mean + 1e-12) | (upper < mean - 1e-12)).any(axis=1)  # time-uniform miss
    assert missed.mean() <= ALPHA
    # an empty sequence (lower past upper) is itself a miss, so it is as rare
    assert (lower > upper + 1e-12).any(axis=1).mean() <= missed.mean()
    # with every value in, the bounds are the exact mean
    assert lower[:, -1] == pytest.approx(np.full(runs, mean))
    assert upper[:, -1] == pytest.approx(np.full(runs, mean))
    # the sequence narrows: half way it is already much tighter than the trivial [0, 1]
    assert np.median(upper[:, n // 2] - lower[:, n // 2]) < 0.3


def test_sequence_works_on_any_bounded_range_and_refuses_values_outside_it() -> None:
    values = np.array([3.0, 7.0, 5.0, 9.0])
    lower, upper = wor_confidence_sequence(values, 4, bounds=(0.0, 10.0))
    assert lower[-1] == pytest.approx(6.0) and upper[-1] == pytest.approx(6.0)
    assert 0.0 <= lower[0] <= upper[0] <= 10.0
    with pytest.raises(ValueError, match="lie in"):
        wor_confidence_sequence([11.0], 4, bounds=(0.0, 10.0))
    with pytest.raises(ValueError, match="draws from a population"):
        wor_confidence_sequence(values, 3, bounds=(0.0, 10.0))


def _populations(rng: np.random.Generator, means: np.ndarray, n: int) -> np.ndarray:
    """One finite query set of 0-1 scores per sequence, with (about) the given true mean each."""
    concentration = 4.0
    return rng.beta(
        means[:, None] * concentration, (1 - means[:, None]) * concentration, size=(means.size, n)
    )


@pytest.mark.parametrize("effect", [-0.1, -0.03, -0.01, 0.0, 0.01, 0.03, 0.1])
def test_gate_error_rate_is_at_most_alpha_near_and_far_from_the_threshold(effect: float) -> None:
    rng = np.random.default_rng(int(1000 * (effect + 1)))
    threshold, n, runs = 0.6, 400, 1000
    pops = _populations(rng, np.full(runs, threshold + effect), n)[None]
    sim = simulate_gates(pops, [threshold], alpha=ALPHA, seed=5)
    assert sim.error_rate <= ALPHA + 0.015
    # a run that went the whole way decided exactly what the full run decides
    whole = sim.stopped_at == n
    assert np.all(sim.decision[whole] == sim.full_decision[whole])
    assert np.all((sim.stopped_at >= 1) & (sim.stopped_at <= n))


@pytest.mark.parametrize("effect", [-0.15, 0.1, 0.2])
def test_clear_gates_stop_early_and_agree_with_the_full_run(effect: float) -> None:
    rng = np.random.default_rng(42)
    threshold, n, runs = 0.6, 500, 1000
    pops = _populations(rng, np.full(runs, threshold + effect), n)[None]
    sim = simulate_gates(pops, [threshold], alpha=ALPHA, seed=9)
    assert np.all(sim.decision == sim.full_decision)  # whenever it stops, the full run's decision
    assert sim.mean_fraction_used < 0.6


def test_bonferroni_over_gates_bounds_the_chance_of_any_wrong_decision() -> None:
    rng = np.random.default_rng(3)
    n, runs = 300, 1500
    # two gates near their thresholds, one of them lower-is-better (an error rate in [0, 1])
    quality = _populations(rng, rng.uniform(0.55, 0.65, size=runs), n)
    errors = _populations(rng, rng.uniform(0.15, 0.25, size=runs), n)
    sim = simulate_gates(np.stack([quality, errors]), [0.6, 0.2], higher=[True, False], alpha=ALPHA, seed=4)
    assert sim.error_rate <= ALPHA + 0.015
    assert 0.0 < sim.full_decision.mean() < 1.0  # both outcomes occur


def test_gate_state_decides_each_gate_in_its_direction() -> None:
    n = 200
    good = [1.0] * 60  # a faithfulness-like score far above its threshold
    bad = [1.0] * 60  # an error rate far above its (lower-is-better) threshold
    state = gate_state(
        {"faithfulness": good, "error_rate": bad},
        n,
        {"faithfulness": 0.5, "error_rate": 0.2},
        ranges={"faithfulness": (0.0, 1.0), "error_rate": (0.0, 1.0)},
        higher={"faithfulness": True, "error_rate": False},
    )
    assert state.decisions == {"faithfulness": True, "error_rate": False}
    assert state.settled and state.passed is False and state.used == 60
    undecided = gate_state(
        {"faithfulness": [0.5, 0.6]},
        n,
        {"faithfulness": 0.55},
        ranges={"faithfulness": (0.0, 1.0)},
        higher={"faithfulness": True},
    )
    assert (
        undecided.decisions == {"faithfulness": None} and not undecided.settled and undecided.passed is None
    )
    with pytest.raises(ValueError, match="same number"):
        gate_state(
            {"a": [1.0], "b": []},
            n,
            {"a": 0.5, "b": 0.5},
            ranges={"a": (0, 1), "b": (0, 1)},
            higher={"a": True, "b": True},
        )
