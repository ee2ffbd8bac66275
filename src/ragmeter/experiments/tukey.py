"""The randomised Tukey HSD of several runs on one metric (`runs compare A B C`): the pairs of systems with
their family-wise adjusted p-values from `ragmeter.stats.tukey` (the statistics and the method are described
there; `permuted_ranges` and `tukey_hsd_pvalues` still resolve here for one release, with a
DeprecationWarning naming the new place)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from ragmeter._lazy import moved
from ragmeter.stats import effects, tukey

_MOVED = dict.fromkeys(("permuted_ranges", "tukey_hsd_pvalues"), "ragmeter.stats.tukey")


def __getattr__(name: str) -> Any:
    return moved(__name__, name, _MOVED)


class TukeyPair(BaseModel):
    model_config = ConfigDict(extra="forbid")

    a: str
    b: str
    delta: float  # mean_b - mean_a
    p_adjusted: float


class TukeyResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    metric: str
    systems: list[str]
    means: list[float]
    n: int
    n_resamples: int
    seed: int
    method: str
    pairs: list[TukeyPair]


def randomised_tukey_hsd(
    metric: str,
    per_system: dict[str, dict[str, float]],
    *,
    n_resamples: int = 10_000,
    seed: int = 42,
    clusters: dict[str, Any] | None = None,
) -> TukeyResult:
    """Every pair of systems on `metric`, over the queries that every system has a value for.

    `per_system` is {system: {query_id: value}}; `clusters` maps query ids to cluster labels."""
    systems = list(per_system)
    shared: Sequence[str] = sorted(set.intersection(*(set(v) for v in per_system.values())))
    values = np.asarray([[per_system[s][q] for s in systems] for q in shared], dtype=np.float64)
    values = values.reshape(len(shared), len(systems))
    codes = effects.cluster_codes([clusters[q] for q in shared]) if clusters is not None else None
    p = tukey.tukey_hsd_pvalues(values, n_resamples=n_resamples, seed=seed, codes=codes) if shared else None
    means = values.mean(axis=0) if shared else np.full(len(systems), np.nan)
    pairs = [
        TukeyPair(
            a=systems[i],
            b=systems[j],
            delta=float(means[j] - means[i]),
            p_adjusted=float(p[i, j]) if p is not None else 1.0,
        )
        for i in range(len(systems))
        for j in range(i + 1, len(systems))
    ]
    method = "randomised Tukey HSD (labels permuted within " + ("cluster)" if clusters else "query)")
    return TukeyResult(
        metric=metric,
        systems=systems,
        means=[float(m) for m in means],
        n=len(shared),
        n_resamples=n_resamples,
        seed=seed,
        method=method,
        pairs=pairs,
    )
