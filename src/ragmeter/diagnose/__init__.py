"""Why queries failed and where the points were lost: failure-class tables and transitions between runs
(classes.py), counterfactual replay of stored stages (replay.py) and attribution of lost points.

The classes themselves are metric values computed when a run is scored (ragmeter.score.classes)."""

from __future__ import annotations

from ragmeter.diagnose.classes import class_counts, transitions

__all__ = ["class_counts", "transitions"]
