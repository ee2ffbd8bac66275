"""Judge stability across repeats: the statistics live with scoring (ragmeter.score.stability), which a run
computes when it finishes; re-exported here for experiments and notebooks."""

from __future__ import annotations

from ragmeter.score.stability import (
    Level,
    RepeatStability,
    flip_share,
    krippendorff_alpha,
    repeat_stability,
    repeat_summary,
)

__all__ = [
    "Level",
    "RepeatStability",
    "flip_share",
    "krippendorff_alpha",
    "repeat_stability",
    "repeat_summary",
]
