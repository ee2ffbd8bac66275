"""Deprecated location: judge stability across repeats (Krippendorff's alpha) moved to `ragmeter.stats.krippendorff` with every other estimator (ragmeter.stats). The old
names still resolve here for one release, with a DeprecationWarning naming the new place."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

_MOVED = (
    "Level",
    "RepeatStability",
    "flip_share",
    "krippendorff_alpha",
    "repeat_stability",
    "repeat_summary",
)


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"ragmeter.experiments.repeats.{name} moved to ragmeter.stats.krippendorff.{name}",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module("ragmeter.stats.krippendorff"), name)
