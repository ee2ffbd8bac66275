"""Deprecated location: judge validity moved to `ragmeter.validity.judge_validation` (ragmeter.validity holds how far a
judge can be trusted; experiments/ keeps ablation grids and comparison). The old names still resolve here for one
release, with a DeprecationWarning naming the new place."""

from __future__ import annotations

from typing import Any

from ragmeter._lazy import moved

_TARGET = "ragmeter.validity.judge_validation"
_MOVED = dict.fromkeys(
    (
        "Kind",
        "HumanScale",
        "infer_scale",
        "to_human_scale",
        "RELEVANCE_JUDGE",
        "judge_range",
        "labelled_queries",
        "ValidationReport",
        "judge_items",
        "build_report",
        "validate_judge",
    ),
    _TARGET,
)


def __getattr__(name: str) -> Any:
    return moved(__name__, name, _MOVED)
