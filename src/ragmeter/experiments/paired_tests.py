"""Deprecated location: the paired tests moved to `ragmeter.stats.paired` with every other estimator (ragmeter.stats). The old
names still resolve here for one release, with a DeprecationWarning naming the new place."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

_MOVED = ("paired_t_test", "permutation_test", "bootstrap_ci", "holm", "FloatArray")


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"ragmeter.experiments.paired_tests.{name} moved to ragmeter.stats.paired.{name}",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module("ragmeter.stats.paired"), name)
