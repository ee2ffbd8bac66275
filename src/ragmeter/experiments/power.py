"""Deprecated location: power and minimum detectable effects moved to `ragmeter.stats.power` with every other estimator (ragmeter.stats). The old
names still resolve here for one release, with a DeprecationWarning naming the new place."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

_MOVED = ("power_paired_t", "queries_needed", "min_detectable_effect", "paired_mde", "plan_queries")


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"ragmeter.experiments.power.{name} moved to ragmeter.stats.power.{name}",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module("ragmeter.stats.power"), name)
