"""Deprecated location: judge validity moved to `ragmeter.validity.qrels_meta` (ragmeter.validity holds how far a
judge can be trusted; experiments/ keeps ablation grids and comparison). The old names still resolve here for one
release, with a DeprecationWarning naming the new place."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

_TARGET = "ragmeter.validity.qrels_meta"
_MOVED = (
    "DEFAULT_LLM_RELEVANT_GRADE",
    "GRADED_FAMILIES",
    "MetaEvaluation",
    "ranks_desc",
    "meta_evaluate",
)


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(f"{__name__}.{name} moved to {_TARGET}.{name}", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(_TARGET), name)
