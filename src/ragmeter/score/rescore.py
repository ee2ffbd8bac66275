"""Deprecated location: re-scoring a stored run rebuilds its judges and dataset from the run record, which is
the run layer's job, so it moved to `ragmeter.run.rescore` (`rescore`, `arescore`). The old names still
resolve here, with a DeprecationWarning naming the new place."""

from __future__ import annotations

from typing import Any

from ragmeter._lazy import moved

_MOVED = dict.fromkeys(("rescore", "arescore"), "ragmeter.run.rescore")


def __getattr__(name: str) -> Any:
    return moved(__name__, name, _MOVED)
