"""Deprecated location: the PPI estimator of a mean moved to `ragmeter.stats.ppi` with every other estimator (ragmeter.stats). The old
names still resolve here for one release, with a DeprecationWarning naming the new place."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

_MOVED = ("PPIResult", "ppi_mean", "t_quantile")


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"ragmeter.score.ppi_mean.{name} moved to ragmeter.stats.ppi.{name}", DeprecationWarning, stacklevel=2
    )
    return getattr(importlib.import_module("ragmeter.stats.ppi"), name)
