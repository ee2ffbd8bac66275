"""The free abstention detector: does an answer decline? A declared, versioned phrase list, matched on the
answer's lower-cased text with straight apostrophes (no model). The `abstained` judge is the better signal;
this one is the fallback when a run has no judge, and what the detail names when it decided.

Its limits, by construction: a refusal worded otherwise is missed, and an answer that quotes one of these
phrases while answering is counted as declining. Bump PHRASES_NUMBER whenever the list changes (the digest
changes by itself).
"""

from __future__ import annotations

import hashlib
import re

PHRASES_NUMBER = 1
# Each a phrase that, in a short QA answer, says the question is not answered.
REFUSAL_PHRASES: tuple[str, ...] = (
    "i don't know",
    "i do not know",
    "i'm not sure",
    "i am not sure",
    "i cannot answer",
    "i can't answer",
    "i am unable to",
    "i'm unable to",
    "unable to answer",
    "unable to determine",
    "cannot be answered",
    "can't be answered",
    "cannot be determined",
    "can't be determined",
    "cannot determine",
    "can't determine",
    "not enough information",
    "insufficient information",
    "no information about",
    "no information on",
    "there is no information",
    "does not contain information",
    "do not contain information",
    "doesn't contain information",
    "does not provide information",
    "do not provide information",
    "doesn't provide information",
    "does not mention",
    "do not mention",
    "doesn't mention",
    "is not mentioned",
    "are not mentioned",
    "not provided in",
    "not specified in",
    "not stated in",
    "not available in",
    "i could not find",
    "i couldn't find",
    "no answer",
    "unanswerable",
)
PHRASES_VERSION = (
    f"refusal-phrases/v{PHRASES_NUMBER}+"
    + hashlib.sha256("\n".join(REFUSAL_PHRASES).encode()).hexdigest()[:8]
)
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
