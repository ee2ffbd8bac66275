"""Deprecated location: the confidence sequence and the gate decision moved to `ragmeter.stats.confseq` with every other estimator (ragmeter.stats). The old
names still resolve here for one release, with a DeprecationWarning naming the new place."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

_MOVED = ("TRUNCATION", "GateState", "wor_confidence_sequence", "decide")


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"ragmeter.score.confseq.{name} moved to ragmeter.stats.confseq.{name}",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module("ragmeter.stats.confseq"), name)
