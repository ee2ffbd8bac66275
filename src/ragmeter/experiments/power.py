"""Deprecated location: power and minimum detectable effects moved to `ragmeter.stats.power` with every other estimator (ragmeter.stats). The old
names still resolve here for one release, with a DeprecationWarning naming the new place."""

from __future__ import annotations

from typing import Any

from ragmeter._lazy import moved

_MOVED = dict.fromkeys(
    ("power_paired_t", "queries_needed", "min_detectable_effect", "paired_mde", "plan_queries"),
    "ragmeter.stats.power",
)


def __getattr__(name: str) -> Any:
    return moved(__name__, name, _MOVED)
