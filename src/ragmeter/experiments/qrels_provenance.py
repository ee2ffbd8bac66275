"""Deprecated location: judge validity moved to `ragmeter.validity.qrels_provenance` (ragmeter.validity holds how far a
judge can be trusted; experiments/ keeps ablation grids and comparison). The old names still resolve here for one
release, with a DeprecationWarning naming the new place."""

from __future__ import annotations

from typing import Any

from ragmeter._lazy import moved

_TARGET = "ragmeter.validity.qrels_provenance"
_MOVED = dict.fromkeys(
    (
        "FORMAT",
        "VERSION",
        "Pair",
        "judged_pairs",
        "restrict",
        "keep_pairs",
        "sidecar_path",
        "Provenance",
        "provenance_of",
        "write_provenance",
        "read_provenance",
        "copies_human_grades",
    ),
    _TARGET,
)


def __getattr__(name: str) -> Any:
    return moved(__name__, name, _MOVED)
