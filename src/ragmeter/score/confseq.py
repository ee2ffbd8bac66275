"""Deprecated location: the confidence sequence and the gate decision moved to `ragmeter.stats.confseq` with every other estimator (ragmeter.stats). The old
names still resolve here for one release, with a DeprecationWarning naming the new place."""

from __future__ import annotations

from typing import Any

from ragmeter._lazy import moved

_MOVED = dict.fromkeys(
    ("TRUNCATION", "GateState", "wor_confidence_sequence", "decide"), "ragmeter.stats.confseq"
)


def __getattr__(name: str) -> Any:
    return moved(__name__, name, _MOVED)
