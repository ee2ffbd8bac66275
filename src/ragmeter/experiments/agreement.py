"""Deprecated location: judge validity moved to `ragmeter.validity.agreement` (ragmeter.validity holds how far a
judge can be trusted; experiments/ keeps ablation grids and comparison). The old names still resolve here for one
release, with a DeprecationWarning naming the new place."""

from __future__ import annotations

from typing import Any

from ragmeter._lazy import moved

_TARGET = "ragmeter.validity.agreement"
_MOVED = dict.fromkeys(
    (
        "tau_ap",
        "tau_ap_b",
        "Weights",
        "FloatArray",
        "IntArray",
        "label_set",
        "encode",
        "confusion_matrix",
        "cohen_kappa",
        "accuracy",
        "average_ranks",
        "pearson",
        "spearman",
        "kendall_tau",
        "Interval",
        "resample_count",
        "bootstrap_interval",
        "Agreement",
        "agreement",
        "constant_rater_notes",
    ),
    _TARGET,
)


def __getattr__(name: str) -> Any:
    return moved(__name__, name, _MOVED)
