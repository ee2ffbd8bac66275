"""Versioned prompt templates of the judges.

A template's `version` is stored in every MetricResult it produces: bump it whenever the text
changes, so that grades from different prompts are never silently compared. Every template asks
for the reasoning before the score: small models grade far better that way.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Prompt:
    name: str
    number: int
    system: str
    user: str
    max_tokens: int = 768
    # A second prompt the judge also sends (factuality: extract claims, then verify each one).
    follow_up: Prompt | None = None

    @property
    def text(self) -> str:
        return f"{self.system}\n{self.user}" + (f"\n{self.follow_up.text}" if self.follow_up else "")

    @property
    def version(self) -> str:
        """e.g. 'retrieval_grade/v1+3f2a9c01': the number we bump plus a digest of the exact text."""
        digest = hashlib.sha256(self.text.encode()).hexdigest()[:8]
        return f"{self.name}/v{self.number}+{digest}"

    def messages(self, **values: str) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": self.system},
            {"role": "user", "content": self.user.format(**values)},
        ]


REASK = (
    "Your reply could not be used: {reason}. Reply again with only the JSON object described "
    "above, with every field filled in."
)

_SCORE_0_10 = 'Reply with JSON only: {{"reasoning": "<one or two sentences>", "score": <number 0-10>}}'

RETRIEVAL_GRADE = Prompt(
    "retrieval_grade",
    1,
    "You grade how well retrieved text chunks answer a question. You reply in JSON.",
    """Question: {question}
Expected answer: {expected_answer}

Retrieved chunks, best first:
{chunks}

Grade from 1 to 10 how well the chunks answer the question with the expected answer:
10 = the chunks state the expected answer
5 = the chunks are related to the question but the answer is missing
1 = the chunks are unrelated to the question
First give your reasoning in one or two sentences, then the grade.
Reply with JSON only: {{"reasoning": "<one or two sentences>", "grade": <integer 1-10>}}""",
    max_tokens=400,
)

FACTUALITY_VERIFY = Prompt(
    "factuality",
    3,
    "You check one claim against source texts. You reply in JSON.",
    """Sources:
{contexts}

Claim: {claim}

Do the sources say the same as the claim? First compare the claim with what the sources say, detail
by detail (names, dates, numbers, places), then give a verdict:
SUPPORTED = the sources say the same
CONTRADICTED = the sources say something different (another date, number, name or place)
NOT_SUPPORTED = the sources do not mention it
Reply with JSON only: {{"reasoning": "<comparison>", "verdict": "SUPPORTED|NOT_SUPPORTED|CONTRADICTED"}}""",
    max_tokens=400,
)

# Two steps: one call extracts the claims, then one call per claim checks it. A single call that
# did both marked "completed in 1925" SUPPORTED against "completed in 1889" with the 1.5B local
# model; checking claims one at a time, comparison first, got it right.
FACTUALITY = Prompt(
    "factuality",
    3,
    "You split answers into factual claims. You reply in JSON.",
    """Question: {question}

Answer:
{answer}

Split the answer into short, self-contained factual claims: each one sentence that can be checked on
its own (replace pronouns by what they refer to). Leave out opinions and filler.
Reply with JSON only: {{"claims": ["<claim>", "<claim>"]}}""",
    max_tokens=600,
    follow_up=FACTUALITY_VERIFY,
)

GROUNDEDNESS = Prompt(
    "groundedness",
    1,
    "You judge whether an answer is grounded in source texts. You reply in JSON.",
    """Question: {question}

Answer:
{answer}

Sources:
{contexts}

Score from 0 to 10 how much of the answer is backed by the sources:
10 = every statement of the answer is stated or directly implied by the sources
5 = about half of it is backed; the rest is not in the sources
0 = nothing in the answer is backed by the sources, or it contradicts them
First give your reasoning, then the score.
"""
    + _SCORE_0_10,
)

RELEVANCE = Prompt(
    "relevance",
    1,
    "You judge whether an answer addresses the question asked. You reply in JSON.",
    """Question: {question}

Answer:
{answer}

Score from 0 to 10 how directly the answer addresses the question (not whether it is true):
10 = it answers exactly what was asked
5 = it is on topic but answers only part of it, or mostly something else
0 = it is off topic, empty, or refuses
First give your reasoning, then the score.
"""
    + _SCORE_0_10,
)

ANSWER_CORRECTNESS = Prompt(
    "answer_correctness",
    1,
    "You compare an answer with a reference answer by meaning, not wording. You reply in JSON.",
    """Question: {question}

Reference answer:
{ground_truth}

Answer to grade:
{answer}

List the points where the answer disagrees with the reference, and the information of the reference
that the answer misses. Then score from 0 to 10 how correct the answer is:
10 = same meaning as the reference (wording may differ)
5 = partly correct: some key facts right, some wrong or missing
0 = wrong, or does not answer
Reply with JSON only:
{{"reasoning": "<one or two sentences>", "disagreements": ["<point>"], "missing": ["<point>"], "score": <number 0-10>}}""",
)

COHERENCE = Prompt(
    "coherence",
    1,
    "You judge how coherent a written answer is. You reply in JSON.",
    """Question: {question}

Answer:
{answer}

Score from 0 to 10 the coherence of the answer: is it logically consistent, well organised, and does
each sentence follow from the one before? (Do not judge whether it is true.)
10 = clear, consistent and well organised
5 = understandable but disorganised, repetitive, or with a contradiction
0 = incoherent
First give your reasoning, then the score.
"""
    + _SCORE_0_10,
)

COMPLETENESS = Prompt(
    "completeness",
    1,
    "You judge whether an answer covers everything the question asks. You reply in JSON.",
    """Question: {question}

Answer:
{answer}
{reference}
List the parts of the question (and key points of the reference answer, if given) that the answer
leaves out. Then score from 0 to 10 how completely the answer covers them:
10 = covers every part
5 = covers about half
0 = covers nothing
Reply with JSON only:
{{"reasoning": "<one or two sentences>", "missing": ["<part>"], "score": <number 0-10>}}""",
)

CITATION_ACCURACY = Prompt(
    "citation_accuracy",
    1,
    "You check whether cited sources support the sentences that cite them. You reply in JSON.",
    """Sources:
{contexts}

Citations to check (a sentence of an answer and the source number it cites):
{citations}

Sentences without a citation:
{uncited}

For each citation, say whether the cited source supports the sentence (true or false).
Then list the ids of the sentences without a citation that state a fact which would need a source.
Reply with JSON only:
{{"citations": [{{"id": "C1", "reasoning": "<short>", "supported": true}}], "uncited_claims": ["U1"]}}""",
    max_tokens=1200,
)

# RAGChecker's claim prompts (ragmeter.judges.ragchecker): extract the claims of a text, then check them.
RC_CHECK = Prompt(
    "rc_check",
    1,
    "You check claims against a reference text. You reply in JSON.",
    """Reference:
{reference}

Claims:
{claims}

For each claim, in order, say whether the reference entails it:
Entailment = the reference states it or directly implies it
Contradiction = the reference says something different
Neutral = the reference does not say
Reply with JSON only: {{"verdicts": ["Entailment|Neutral|Contradiction", ...]}} with exactly {n} verdicts.""",
    max_tokens=400,
)

RC_EXTRACT = Prompt(
    "rc_extract",
    1,
    "You split texts into factual claims. You reply in JSON.",
    """Question: {question}

Text:
{text}

Split the text into short, self-contained factual claims: each one sentence that can be checked on its own
(replace pronouns by what they refer to). Leave out opinions and filler; a text with no factual content has
no claims.
Reply with JSON only: {{"claims": ["<claim>", ...]}}""",
    max_tokens=600,
    follow_up=RC_CHECK,
)

# The sufficient-context autorater of Joren et al. (ICLR 2025, "Sufficient Context: A New Lens on Retrieval
# Augmented Generation Systems", appendix prompt; github.com/hljoren/sufficientcontext): the same criterion
# (could the answer be inferred from the context alone, 1 or 0), the same method (list the step-by-step
# questions a label needs, the question's implicit assumptions and any arithmetic included, answer them from
# the context only, then label) and a one-shot example of the same kind (a two-hop question answered by
# combining two sentences). Our changes: JSON reply (the explanation in "reasoning", then the label), our own
# wording and example, and no "Assume the queries have timestamp" line (a run has no query timestamps).
CONTEXT_SUFFICIENCY = Prompt(
    "context_sufficiency",
    1,
    "You are an expert evaluator of a QUESTION and the REFERENCES given to answer it. You reply in JSON.",
    """Criterion:
Sufficient Context: 1 IF the REFERENCES are sufficient to infer the answer to the QUESTION, and 0 IF the
REFERENCES cannot be used to infer the answer to the QUESTION. Judge from the references alone: do not use
your own knowledge or memory to decide whether the question can be answered.

First, write the list of step-by-step questions that would be needed to arrive at a label for the
criterion. Include questions about the assumptions implicit in the QUESTION, and about any calculation or
arithmetic it requires. Next, answer each of these questions using only the references, working step by step
through any calculation. Finally, use these answers to decide the label. You do not need to know the answer
yourself, and the answer need not be stated in one sentence: 1 means a careful reader could infer it from
the references.

EXAMPLE
QUESTION: In which year did the company that built the Zephyr locomotive stop trading?
REFERENCES:
[1] The Zephyr locomotive was built in 1934 by the Budd Company.
[2] The Budd Company was an American metal fabricator that traded from 1912 until 2014.
Reply: {{"reasoning": "Who built the Zephyr? [1]: the Budd Company. When did the Budd Company stop trading? \
[2]: it traded until 2014. So the year is 2014, inferred from the references alone.", "sufficient_context": 1}}

QUESTION: {question}
REFERENCES:
{contexts}

Reply with JSON only: {{"reasoning": "<the step-by-step questions and their answers>", "sufficient_context": <1 or 0>}}""",
    max_tokens=700,
)

ABSTAINED = Prompt(
    "abstained",
    1,
    "You decide whether a reply declines to answer a question. You reply in JSON.",
    """Question: {question}

Reply:
{answer}

Does the reply decline to answer, for example by saying that it cannot answer, does not know, or that the
information is not available or not in its sources? A reply that gives an answer, even a hedged, partial or
wrong one, does not decline.
Reply with JSON only: {{"reasoning": "<one sentence>", "abstained": <1 if it declines, 0 if it answers>}}""",
    max_tokens=200,
)
