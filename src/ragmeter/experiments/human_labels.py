"""Deprecated location: judge validity moved to `ragmeter.validity.human_labels` (ragmeter.validity holds how far a
judge can be trusted; experiments/ keeps ablation grids and comparison). The old names still resolve here for one
release, with a DeprecationWarning naming the new place."""

from __future__ import annotations

from typing import Any

from ragmeter._lazy import moved

_TARGET = "ragmeter.validity.human_labels"
_MOVED = dict.fromkeys(
    (
        "parse_grades",
        "check_grade",
        "check_answer_value",
        "queue_order",
        "answer_labels",
        "store_ppi",
        "validate_run",
        "export_labels",
        "import_labels",
        "store_qrels",
        "human_qrels",
    ),
    _TARGET,
)


def __getattr__(name: str) -> Any:
    return moved(__name__, name, _MOVED)
