"""Deprecated location: the paired tests moved to `ragmeter.stats.paired` with every other estimator (ragmeter.stats). The old
names still resolve here for one release, with a DeprecationWarning naming the new place."""

from __future__ import annotations

from typing import Any

from ragmeter._lazy import moved

_MOVED = dict.fromkeys(
    ("paired_t_test", "permutation_test", "bootstrap_ci", "holm", "FloatArray"), "ragmeter.stats.paired"
)


def __getattr__(name: str) -> Any:
    return moved(__name__, name, _MOVED)
