"""The free abstention detector: does an answer decline? A declared, versioned phrase list, matched on the
answer's lower-cased text with straight apostrophes (no model). The `abstained` judge is the better signal;
this one is the fallback when a run has no judge, and what the detail names when it decided.

The list and its version are declared with the metric's record (ragmeter.metrics.abstention). Its limits, by
construction: a refusal worded otherwise is missed, and an answer that quotes one of these phrases while
answering is counted as declining.
"""

from __future__ import annotations

import re

from ragmeter.metrics.abstention import PHRASES_VERSION, REFUSAL_PHRASES

__all__ = ["PHRASES_VERSION", "REFUSAL_PHRASES", "refusal_phrase"]

_APOSTROPHES = re.compile("[\u2018\u2019\u02bc`]")


def refusal_phrase(answer: str) -> str | None:
    """The first declared phrase the answer contains, '' for an empty answer (declines by saying nothing),
    None when it contains none."""
    text = " ".join(_APOSTROPHES.sub("'", answer).lower().split())
    if not text:
        return ""
    for phrase in REFUSAL_PHRASES:
        if phrase in text:
            return phrase
    return None
