"""Nugget sets (the qrels of answers): model, files, versions, scores, creation. Assignment is a judge
(ragmeter.judges.nuggets)."""

from __future__ import annotations

from ragmeter.nuggets.files import (
    FORMATS,
    read_assignments,
    read_nuggets,
    sniff,
    write_assignments,
    write_nuggets,
)
from ragmeter.nuggets.model import Nugget, NuggetSet, Provenance, QueryNuggets
from ragmeter.nuggets.scores import SCORES, all_scores, nuggetizer_score

__all__ = [
    "FORMATS",
    "SCORES",
    "Nugget",
    "NuggetSet",
    "Provenance",
    "QueryNuggets",
    "all_scores",
    "nuggetizer_score",
    "read_assignments",
    "read_nuggets",
    "sniff",
    "write_assignments",
    "write_nuggets",
]
