"""Deprecated location: the PPI estimator of a mean moved to `ragmeter.stats.ppi` with every other estimator (ragmeter.stats). The old
names still resolve here for one release, with a DeprecationWarning naming the new place."""

from __future__ import annotations

from typing import Any

from ragmeter._lazy import moved

_MOVED = dict.fromkeys(("PPIResult", "ppi_mean", "t_quantile"), "ragmeter.stats.ppi")


def __getattr__(name: str) -> Any:
    return moved(__name__, name, _MOVED)
