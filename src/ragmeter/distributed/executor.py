"""Deprecated location: the Ray executor is one of the run layer's executors (it drives the run loop's worker),
so it moved to `ragmeter.run.ray_executor`. The old names still resolve here, with a DeprecationWarning naming
the new place; the new module is looked up by name when an old name is used, so the distributed package (Ray
helpers for IR evaluation and index building) imports nothing of the run layer."""

from __future__ import annotations

from typing import Any

from ragmeter._lazy import moved

_TARGET = "ragmeter.run.ray_executor"
_MOVED = dict.fromkeys(
    (
        "RayExecutor",
        "QueryActor",
        "executor_from_spec",
        "DEFAULT_CONCURRENCY_PER_WORKER",
        "MAX_ACTOR_ATTEMPTS",
    ),
    _TARGET,
)


def __getattr__(name: str) -> Any:
    return moved(__name__, name, _MOVED)
