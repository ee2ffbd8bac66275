"""Deprecated location: the Ray executor is one of the run layer's executors (it drives the run loop's worker),
so it moved to `ragmeter.run.ray_executor`. The old names still resolve here, with a DeprecationWarning naming
the new place; the new module is looked up by name when an old name is used, so the distributed package (Ray
helpers for IR evaluation and index building) imports nothing of the run layer."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

_MOVED = (
    "RayExecutor",
    "QueryActor",
    "executor_from_spec",
    "DEFAULT_CONCURRENCY_PER_WORKER",
    "MAX_ACTOR_ATTEMPTS",
)
_TARGET = "ragmeter.run.ray_executor"


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"ragmeter.distributed.executor.{name} moved to {_TARGET}.{name}", DeprecationWarning, stacklevel=2
    )
    return getattr(importlib.import_module(_TARGET), name)
