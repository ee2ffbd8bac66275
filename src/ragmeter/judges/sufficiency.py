"""Reference-free judges of the thin-context behaviours: is the context enough to answer (the sufficient-
context autorater of Joren et al., ICLR 2025), and did the answer decline? Both binary (1 / 0), with the
model's reasoning in details; neither reads a reference answer."""

from __future__ import annotations

import ragmeter.judges.prompts as P
from ragmeter.judges.judge import Judge, JudgeInput, layout_values
from ragmeter.judges.scales import ABSTAINED_0_1, SUFFICIENT_0_1


def _question_and_contexts(inp: JudgeInput, flags: list[str]) -> dict[str, str]:
    # The contexts the generator got, in the shared layout (an empty list is judged too: no retrieved texts
    # is insufficient).
    return layout_values(inp, flags)


def _question_and_answer(inp: JudgeInput, flags: list[str]) -> dict[str, str]:
    return {"question": inp.question, "answer": inp.answer or ""}


CONTEXT_SUFFICIENCY = Judge(
    "context_sufficiency",
    P.CONTEXT_SUFFICIENCY,
    SUFFICIENT_0_1,
    _question_and_contexts,
    needs=(),
    description="1 if the contexts given to the generator suffice to infer the answer (no reference read)",
)
ABSTAINED = Judge(
    "abstained",
    P.ABSTAINED,
    ABSTAINED_0_1,
    _question_and_answer,
    needs=("answer",),
    description="1 if the answer declines to answer (says it cannot, does not know, not in its sources)",
)
