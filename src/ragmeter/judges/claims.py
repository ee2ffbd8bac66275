"""RAGChecker's claim-level metrics (Ru et al., 2024) as pure functions of claim verdicts.

RAGChecker's names: the *answer* is the reference (ground-truth) answer, the *response* is the system's
answer. Four checks, each a list of verdicts of which only "Entailment" counts:

- answer2response[i]: response claim i is entailed by the reference answer;
- response2answer[i]: reference claim i is entailed by the response;
- retrieved2response[i][j]: response claim i is entailed by context chunk j;
- retrieved2answer[i][j]: reference claim i is entailed by context chunk j (a chunk is relevant when it
  entails a reference claim).

Each function mirrors `ragchecker.computation` (0.1.9) and returns (value, None) where RAGChecker's
value is defined, and (None, reason) where RAGChecker returns 0 by convention (no claims, no chunks, no
recalled claim): a 0 there would read as a measured failure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

Outcome = tuple[float | None, str | None]

NO_RESPONSE_CLAIMS = "no claims were extracted from the answer"
NO_REFERENCE_CLAIMS = "no claims were extracted from the reference answer"
NO_CHUNKS = "no contexts were given to the generator"
NO_RECALLED = "no reference claim is entailed by any context"


@dataclass(frozen=True)
class ClaimChecks:
    """Boolean verdicts (True = entailment). None: that check was not made (missing input)."""

    answer2response: Sequence[bool] | None = None
    response2answer: Sequence[bool] | None = None
    retrieved2response: Sequence[Sequence[bool]] | None = None
    retrieved2answer: Sequence[Sequence[bool]] | None = None
    n_chunks: int = 0


def _mean(xs: Sequence[bool]) -> float:
    return sum(1 for x in xs if x) / len(xs)


def precision(c: ClaimChecks) -> Outcome:
    if not c.answer2response:
        return None, NO_RESPONSE_CLAIMS
    return _mean(c.answer2response), None


def recall(c: ClaimChecks) -> Outcome:
    if not c.response2answer:
        return None, NO_REFERENCE_CLAIMS
    return _mean(c.response2answer), None


def f1(c: ClaimChecks) -> Outcome:
    p, why = precision(c)
    r, why_r = recall(c)
    if p is None or r is None:
        return None, why or why_r
    # both defined: a zero side gives 0, the limit of the harmonic mean (RAGChecker's value too)
    return (2 * p * r / (p + r) if p > 0 and r > 0 else 0.0), None


def _ref_by_chunk(c: ClaimChecks) -> tuple[Sequence[Sequence[bool]] | None, str | None]:
    if not c.retrieved2answer:
        return None, NO_REFERENCE_CLAIMS
    if c.n_chunks == 0:
        return None, NO_CHUNKS
    return c.retrieved2answer, None


def claim_recall(c: ClaimChecks) -> Outcome:
    table, why = _ref_by_chunk(c)
    if table is None:
        return None, why
    return _mean([any(row) for row in table]), None


def context_precision(c: ClaimChecks) -> Outcome:
    table, why = _ref_by_chunk(c)
    if table is None:
        return None, why
    return _mean([any(row[j] for row in table) for j in range(c.n_chunks)]), None


def context_utilization(c: ClaimChecks) -> Outcome:
    table, why = _ref_by_chunk(c)
    if table is None:
        return None, why
    if c.response2answer is None:
        return None, NO_RESPONSE_CLAIMS
    recalled = [any(row) for row in table]
    if not any(recalled):
        return None, NO_RECALLED
    used = sum(1 for rec, hit in zip(recalled, c.response2answer, strict=True) if rec and hit)
    return used / sum(recalled), None


def _response_by_chunk(c: ClaimChecks) -> tuple[Sequence[Sequence[bool]] | None, str | None]:
    if not c.answer2response or not c.retrieved2response:
        return None, NO_RESPONSE_CLAIMS
    if c.n_chunks == 0:
        return None, NO_CHUNKS
    return c.retrieved2response, None


def _noise(c: ClaimChecks, *, relevant_side: bool) -> Outcome:
    table, why = _response_by_chunk(c)
    if table is None:
        return None, why
    ref, why = _ref_by_chunk(c)
    if ref is None:
        return None, why
    assert c.answer2response is not None
    relevant = [any(row[j] for row in ref) for j in range(c.n_chunks)]
    hits = []
    for row, correct in zip(table, c.answer2response, strict=True):
        from_relevant = any(row[j] and relevant[j] for j in range(c.n_chunks))
        from_irrelevant = any(row[j] and not relevant[j] for j in range(c.n_chunks)) and not from_relevant
        hits.append((from_relevant if relevant_side else from_irrelevant) and not correct)
    return _mean(hits), None


def noise_sensitivity_relevant(c: ClaimChecks) -> Outcome:
    return _noise(c, relevant_side=True)


def noise_sensitivity_irrelevant(c: ClaimChecks) -> Outcome:
    return _noise(c, relevant_side=False)


def _unfaithful(c: ClaimChecks, *, correct: bool) -> Outcome:
    table, why = _response_by_chunk(c)
    if table is None:
        return None, why
    assert c.answer2response is not None
    hits = [not any(row) and ok == correct for row, ok in zip(table, c.answer2response, strict=True)]
    return _mean(hits), None


def hallucination(c: ClaimChecks) -> Outcome:
    return _unfaithful(c, correct=False)


def self_knowledge(c: ClaimChecks) -> Outcome:
    return _unfaithful(c, correct=True)


def faithfulness(c: ClaimChecks) -> Outcome:
    if not c.retrieved2response:
        return None, NO_RESPONSE_CLAIMS
    if c.n_chunks == 0:
        return None, NO_CHUNKS
    return _mean([any(row) for row in c.retrieved2response]), None


# metric name -> (function, the checks it reads: a2r, r2a, c2r = contexts vs answer claims, c2a = contexts vs
# reference claims). Directions, ranges and descriptions live in the registry (ragmeter.metrics.diagnosis).
RC_METRICS: dict[str, tuple[Callable[[ClaimChecks], Outcome], tuple[str, ...]]] = {
    "rc_precision": (precision, ("a2r",)),
    "rc_recall": (recall, ("r2a",)),
    "rc_f1": (f1, ("a2r", "r2a")),
    "rc_claim_recall": (claim_recall, ("c2a",)),
    "rc_context_precision": (context_precision, ("c2a",)),
    "rc_context_utilization": (context_utilization, ("c2a", "r2a")),
    "rc_noise_sensitivity_relevant": (noise_sensitivity_relevant, ("a2r", "c2r", "c2a")),
    "rc_noise_sensitivity_irrelevant": (noise_sensitivity_irrelevant, ("a2r", "c2r", "c2a")),
    "rc_hallucination": (hallucination, ("a2r", "c2r")),
    "rc_self_knowledge": (self_knowledge, ("a2r", "c2r")),
    "rc_faithfulness": (faithfulness, ("c2r",)),
}
