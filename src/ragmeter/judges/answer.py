"""The scored answer judges, each a declaration: groundedness, relevance, answer_correctness, coherence,
completeness. Each asks for a 0-10 score (reasoning first) and stores score / 10."""

from __future__ import annotations

from pydantic import Field

import ragmeter.judges.prompts as P
from ragmeter.judges.judge import Judge, Reasoned, layout_values
from ragmeter.judges.scales import SCORE_0_10


class CorrectnessReply(Reasoned):
    disagreements: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)


class CompletenessReply(Reasoned):
    missing: list[str] = Field(default_factory=list)


GROUNDEDNESS = Judge(
    "groundedness",
    P.GROUNDEDNESS,
    SCORE_0_10,
    layout_values,
    needs=("answer", "contexts"),
    description="0-1: how much of the answer the contexts back",
)
RELEVANCE = Judge(
    "relevance",
    P.RELEVANCE,
    SCORE_0_10,
    layout_values,
    description="0-1: how directly the answer addresses the question (contexts are not used)",
)
ANSWER_CORRECTNESS = Judge(
    "answer_correctness",
    P.ANSWER_CORRECTNESS,
    SCORE_0_10,
    layout_values,
    needs=("ground_truth", "answer"),
    schema=CorrectnessReply,
    description="0-1: agreement with the ground truth by meaning; lists disagreements and missing points",
)
COHERENCE = Judge(
    "coherence",
    P.COHERENCE,
    SCORE_0_10,
    layout_values,
    description="0-1: logical consistency and organisation of the answer",
)
COMPLETENESS = Judge(
    "completeness",
    P.COMPLETENESS,
    SCORE_0_10,
    layout_values,
    schema=CompletenessReply,
    description="0-1: coverage of every part of the question (and the reference's key points when given)",
)
