"""The line a report and the viewer's run page show beside nugget scores: the set version they were made
against (the run's last --nuggets or rescore --nuggets), since values of two versions are not comparable."""

from __future__ import annotations

import json

from ragmeter.models import EvalRunResult


def nugget_set_note(run: EvalRunResult) -> str | None:
    """`nugget metrics scored against nugget set HASH (FILE, assignment prompt STYLE)`, or None without."""
    raw = run.versions.get("nuggets")
    spec = json.loads(raw) if raw else run.config.nuggets
    if not isinstance(spec, dict) or not any(n.startswith("nugget_") for n in run.aggregate):
        return None
    return (
        f"nugget metrics scored against nugget set {spec.get('hash') or 'unknown'} "
        f"({spec.get('path') or 'no file'}, assignment prompt {spec.get('prompt') or 'nuggetizer'}); "
        "their intervals are in the summary"
    )
