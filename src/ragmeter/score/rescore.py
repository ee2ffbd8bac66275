"""Deprecated location: re-scoring a stored run rebuilds its judges and dataset from the run record, which is
the run layer's job, so it moved to `ragmeter.run.rescore` (`rescore`, `arescore`). The old names still
resolve here, with a DeprecationWarning naming the new place."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

_MOVED = ("rescore", "arescore")


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"ragmeter.score.rescore.{name} moved to ragmeter.run.rescore.{name}",
        DeprecationWarning,
        stacklevel=2,
    )
    # looked up by name: scoring imports nothing of the run layer, even for this forwarding
    return getattr(importlib.import_module("ragmeter.run.rescore"), name)
