"""Deprecated location: judge validity moved to `ragmeter.validity.tau_ap` (ragmeter.validity holds how far a
judge can be trusted; experiments/ keeps ablation grids and comparison). The old names still resolve here for one
release, with a DeprecationWarning naming the new place."""

from __future__ import annotations

from typing import Any

from ragmeter._lazy import moved

_TARGET = "ragmeter.validity.tau_ap"
_MOVED = dict.fromkeys(
    (
        "FloatArray",
        "has_ties",
        "tau_ap_b",
        "tau_ap",
        "tau_ap_variant",
    ),
    _TARGET,
)


def __getattr__(name: str) -> Any:
    return moved(__name__, name, _MOVED)
