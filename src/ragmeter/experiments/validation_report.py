"""Deprecated location: judge validity moved to `ragmeter.validity.validation_report` (ragmeter.validity holds how far a
judge can be trusted; experiments/ keeps ablation grids and comparison). The old names still resolve here for one
release, with a DeprecationWarning naming the new place."""

from __future__ import annotations

from typing import Any

from ragmeter._lazy import moved

_TARGET = "ragmeter.validity.validation_report"
_MOVED = dict.fromkeys(
    (
        "VALIDATION_SYSTEM",
        "store_report",
        "summary_rows",
        "usage_line",
        "format_markdown",
    ),
    _TARGET,
)


def __getattr__(name: str) -> Any:
    return moved(__name__, name, _MOVED)
