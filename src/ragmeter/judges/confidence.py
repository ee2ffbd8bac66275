"""A judge's confidence in its verdict, from the probability of the verdict's tokens.

When the LLM client asks for log-probabilities (`LLMClient.logprobs`), the reply comes with each token's
log-probability; the verdict's confidence is the probability of the tokens that spell the verdict number in
the reply's JSON field (`"score": 8` -> the tokens of `8`): exp of the sum of their log-probabilities. The
other confidence, agreement across k repeats, is `repeat_confidence`.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

NUMBER = r"\"?\s*(-?\d+(?:\.\d+)?)"


def verdict_probability(tokens: Sequence[tuple[str, float]], keys: Sequence[str]) -> float | None:
    """The probability of the verdict number's tokens: the value of the first of `keys` (the scale's key,
    then its aliases) found as a JSON field in the text the tokens spell; None when no such field is there."""
    if not tokens:
        return None
    text = "".join(t for t, _ in tokens)
    for key in keys:
        m = re.search(rf"\"{re.escape(key)}\"\s*:\s*{NUMBER}", text, flags=re.IGNORECASE)
        if m is not None:
            return math.exp(_span_logprob(tokens, m.start(1), m.end(1)))
    return None


def _span_logprob(tokens: Sequence[tuple[str, float]], start: int, end: int) -> float:
    """The summed log-probability of the tokens overlapping text[start:end]."""
    total, pos = 0.0, 0
    for token, lp in tokens:
        nxt = pos + len(token)
        if nxt > start and pos < end:
            total += lp
        pos = nxt
    return total


def repeat_confidence(verdicts: Sequence[float]) -> tuple[float, float] | None:
    """(majority verdict, share of the repeats that gave it) over the valid verdicts of k repeats; ties go to
    the lower verdict (the stricter one). None when no repeat gave a verdict."""
    if not verdicts:
        return None
    counts = Counter(verdicts)
    top = max(counts.values())
    verdict = min(v for v, c in counts.items() if c == top)
    return verdict, top / len(verdicts)
