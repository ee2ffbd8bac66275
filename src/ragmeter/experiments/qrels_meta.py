"""Deprecated location: judge validity moved to `ragmeter.validity.qrels_meta` (ragmeter.validity holds how far a
judge can be trusted; experiments/ keeps ablation grids and comparison). The old names still resolve here for one
release, with a DeprecationWarning naming the new place."""

from __future__ import annotations

from typing import Any

from ragmeter._lazy import moved

_TARGET = "ragmeter.validity.qrels_meta"
_MOVED = dict.fromkeys(
    (
        "DEFAULT_LLM_RELEVANT_GRADE",
        "GRADED_FAMILIES",
        "MetaEvaluation",
        "ranks_desc",
        "meta_evaluate",
    ),
    _TARGET,
)


def __getattr__(name: str) -> Any:
    return moved(__name__, name, _MOVED)
