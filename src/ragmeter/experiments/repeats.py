"""Deprecated location: judge stability across repeats (Krippendorff's alpha) moved to `ragmeter.stats.krippendorff` with every other estimator (ragmeter.stats). The old
names still resolve here for one release, with a DeprecationWarning naming the new place."""

from __future__ import annotations

from typing import Any

from ragmeter._lazy import moved

_MOVED = dict.fromkeys(
    (
        "Level",
        "RepeatStability",
        "flip_share",
        "krippendorff_alpha",
        "repeat_stability",
        "repeat_summary",
    ),
    "ragmeter.stats.krippendorff",
)


def __getattr__(name: str) -> Any:
    return moved(__name__, name, _MOVED)
