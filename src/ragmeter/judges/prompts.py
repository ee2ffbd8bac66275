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
    # A second prompt the judge also sends (factuality: extract claims, then verify them in batches).
    follow_up: Prompt | None = None
    # A prompt in the shared layout (`layered`): the parts of a query it reads after the shared prefix.
    reads: tuple[str, ...] | None = None

    @property
    def text(self) -> str:
        return f"{self.system}\n{self.user}" + (f"\n{self.follow_up.text}" if self.follow_up else "")

    @property
    def version(self) -> str:
        """e.g. 'retrieval_grade/v1+3f2a9c01': the number we bump plus a digest of the exact text."""
        digest = hashlib.sha256(self.text.encode()).hexdigest()[:8]
        return f"{self.name}/v{self.number}+{digest}"

    def shared_prefix(self, **values: str) -> str | None:
        """The start of the user text that every layered prompt of the query shares (question and contexts),
        filled in; None for a prompt outside the layout."""
        if self.reads is None:
            return None
        return PREFIX.format(question=values["question"], contexts=values["contexts"])

    def messages(self, **values: str) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": self.system},
            {"role": "user", "content": self.user.format(**values)},
        ]


REASK = (
    "Your reply could not be used: {reason}. Reply again with only the JSON object described "
    "above, with every field filled in."
)

# --- the shared layout: one cacheable prefix per query ---------------------------------------------------
#
# Every per-query judge's prompt is laid out the same way: the shared system text, the question, the
# retrieved contexts (numbered, in rank order), then the answer for the judges that read it, then the
# reference answer for the judges that read it, then the judge's own task. The part up to and including the
# contexts is byte-identical for every judge of one query, so a server that caches prompt prefixes (OpenAI,
# Anthropic with cache_control, vLLM, llama.cpp) bills or computes it once per query, not once per judge.
# A judge never gets a part it does not read: retrieval_grade never sees the answer, a reference-free judge
# never sees the reference. Fill the fields with `ragmeter.judges.judge.layout_values`.

JUDGE_SYSTEM = (
    "You are a careful, impartial judge of a question-answering system that answers from retrieved texts. "
    "Read the material below, then do only the task given at its end. You reply in JSON, without quotation "
    "marks inside its text fields."
)
PREFIX = "Question: {question}\n\nRetrieved texts, in rank order (best first):\n{contexts}\n\n"
ANSWER_PART = "Answer to judge:\n{answer}\n\n"
REFERENCE_PART = (
    "Reference answer (written by a person; it is not one of the retrieved texts):\n{reference}\n\n"
)
TASK_HEADER = "Task: "
PARTS = ("answer", "reference")


def layered(
    name: str,
    number: int,
    task: str,
    *,
    reads: tuple[str, ...] = (),
    max_tokens: int = 768,
    follow_up: Prompt | None = None,
) -> Prompt:
    """A prompt in the shared layout: the prefix (question, contexts), the parts it `reads` ("answer",
    "reference"; always in that order), then its `task`. The fields are {question}, {contexts}, {answer},
    {reference} and whatever the task itself names."""
    unknown = [r for r in reads if r not in PARTS]
    if unknown:
        raise ValueError(f"unknown part(s) {unknown}: a layered prompt reads {PARTS}")
    user = PREFIX
    if "answer" in reads:
        user += ANSWER_PART
    if "reference" in reads:
        user += REFERENCE_PART
    user += TASK_HEADER + task
    return Prompt(
        name, number, JUDGE_SYSTEM, user, max_tokens, follow_up, tuple(r for r in PARTS if r in reads)
    )


def task_of(user: str) -> str:
    """The task of a layered prompt's user text (what follows the last 'Task: '); '' when none."""
    head = "\n" + TASK_HEADER
    return user.rsplit(head, 1)[1] if head in user else ""


_SCORE_0_10 = 'Reply with JSON only: {{"reasoning": "<one or two sentences>", "score": <number 0-10>}}'

# Version numbers were bumped once (to the next number) when the prompts moved to the shared layout:
# values stored under the older versions are not comparable with these until rescored.

RETRIEVAL_GRADE = layered(
    "retrieval_grade",
    2,
    """grade the retrieved texts [1], [2], ... only. The reference answer is what a good text would
state; it does not count as a retrieved text. Grade from 1 to 10 how well the retrieved texts answer the
question with the reference answer (if no reference answer is given, judge by the question alone):
10 = the texts state the expected answer
5 = the texts are related to the question but the answer is missing
1 = the texts are unrelated to the question
First give your reasoning in one or two sentences, then the grade.
Reply with JSON only: {{"reasoning": "<one or two sentences>", "grade": <integer 1-10>}}""",
    reads=("reference",),
    max_tokens=400,
)

# Claims are checked in batches (FACTUALITY_BATCH in judges/factuality.py), each claim compared detail by
# detail before its verdict: a single call that extracted and checked at once marked "completed in 1925"
# SUPPORTED against "completed in 1889" with the 1.5B local model.
FACTUALITY_VERIFY = layered(
    "factuality",
    5,
    """check claims taken from the answer against the retrieved texts (and the reference answer, when
one is given). For each claim below, in order, first compare it with what the texts say, detail by detail
(names, dates, numbers, places), then give a verdict:
SUPPORTED = the texts say the same
CONTRADICTED = the texts say something different (another date, number, name or place)
NOT_SUPPORTED = the texts do not mention it

Claims:
{claims}

Reply with JSON only, one entry per claim in the same order ({n} entries), each verdict one of
SUPPORTED, NOT_SUPPORTED, CONTRADICTED:
{skeleton}""",
    reads=("answer", "reference"),
    max_tokens=1200,
)

FACTUALITY = layered(
    "factuality",
    5,
    """split the answer into short, self-contained factual claims: each one sentence that can be checked
on its own (replace pronouns by what they refer to). Leave out opinions and filler. Take the claims from
the answer only, not from the retrieved texts.
Reply with JSON only: {{"claims": ["<claim>", "<claim>"]}}""",
    reads=("answer",),
    max_tokens=600,
    follow_up=FACTUALITY_VERIFY,
)

GROUNDEDNESS = layered(
    "groundedness",
    2,
    """judge whether the answer is grounded in the retrieved texts. Score from 0 to 10 how much of the
answer is backed by the texts:
10 = every statement of the answer is stated or directly implied by the texts
5 = about half of it is backed; the rest is not in the texts
0 = nothing in the answer is backed by the texts, or it contradicts them
First give your reasoning, then the score.
"""
    + _SCORE_0_10,
    reads=("answer",),
)

RELEVANCE = layered(
    "relevance",
    2,
    """judge whether the answer addresses the question asked. Ignore the retrieved texts: they are not
part of this task. Score from 0 to 10 how directly the answer addresses the question (not whether it is
true):
10 = it answers exactly what was asked
5 = it is on topic but answers only part of it, or mostly something else
0 = it is off topic, empty, or refuses
First give your reasoning, then the score.
"""
    + _SCORE_0_10,
    reads=("answer",),
)

ANSWER_CORRECTNESS = layered(
    "answer_correctness",
    2,
    """compare the answer with the reference answer by meaning, not wording. Ignore the retrieved texts:
they are not part of this task. List the points where the answer disagrees with the reference, and the
information of the reference that the answer misses. Then score from 0 to 10 how correct the answer is:
10 = same meaning as the reference (wording may differ)
5 = partly correct: some key facts right, some wrong or missing
0 = wrong, or does not answer
Reply with JSON only:
{{"reasoning": "<one or two sentences>", "disagreements": ["<point>"], "missing": ["<point>"], "score": <number 0-10>}}""",
    reads=("answer", "reference"),
)

COHERENCE = layered(
    "coherence",
    2,
    """judge how coherent the answer is as a piece of writing. Ignore the retrieved texts: they are not
part of this task. Score from 0 to 10 the coherence of the answer: is it logically consistent, well
organised, and does each sentence follow from the one before? (Do not judge whether it is true.)
10 = clear, consistent and well organised
5 = understandable but disorganised, repetitive, or with a contradiction
0 = incoherent
First give your reasoning, then the score.
"""
    + _SCORE_0_10,
    reads=("answer",),
)

COMPLETENESS = layered(
    "completeness",
    2,
    """judge whether the answer covers everything the question asks. Ignore the retrieved texts: they are
not part of this task. List the parts of the question (and key points of the reference answer, if one is
given) that the answer leaves out. Then score from 0 to 10 how completely the answer covers them:
10 = covers every part
5 = covers about half
0 = covers nothing
Reply with JSON only:
{{"reasoning": "<one or two sentences>", "missing": ["<part>"], "score": <number 0-10>}}""",
    reads=("answer", "reference"),
)

CITATION_ACCURACY = layered(
    "citation_accuracy",
    3,
    """check whether cited texts support the sentences of the answer that cite them; [n] in the answer
cites retrieved text [n].

Citations to check (a sentence of the answer and the text number it cites):
{citations}

Sentences without a citation:
{uncited}

For each citation, say whether the cited text supports the sentence (true or false).
Then list the ids of the sentences without a citation that state a fact which would need a source.
Reply with JSON only, one entry per citation ("supported" is true or false):
{skeleton}""",
    reads=("answer",),
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
# Since v2 it is in the shared layout (question and retrieved texts first, byte-identical with the other
# judges of the query, the criterion as its task), so on a caching server it costs only its task.
CONTEXT_SUFFICIENCY = layered(
    "context_sufficiency",
    2,
    """decide whether the retrieved texts above are sufficient to answer the question.
Criterion:
Sufficient Context: 1 IF the retrieved texts are sufficient to infer the answer to the question, and 0 IF
the retrieved texts cannot be used to infer the answer to the question. Judge from the retrieved texts
alone: do not use your own knowledge or memory to decide whether the question can be answered.

First, write the list of step-by-step questions that would be needed to arrive at a label for the
criterion. Include questions about the assumptions implicit in the question, and about any calculation or
arithmetic it requires. Next, answer each of these questions using only the retrieved texts, working step
by step through any calculation. Finally, use these answers to decide the label. You do not need to know
the answer yourself, and the answer need not be stated in one sentence: 1 means a careful reader could infer
it from the retrieved texts.

EXAMPLE
Question: In which year did the company that built the Zephyr locomotive stop trading?
Retrieved texts:
[1] The Zephyr locomotive was built in 1934 by the Budd Company.
[2] The Budd Company was an American metal fabricator that traded from 1912 until 2014.
Reply: {{"reasoning": "Who built the Zephyr? [1]: the Budd Company. When did the Budd Company stop trading? \
[2]: it traded until 2014. So the year is 2014, inferred from the retrieved texts alone.", \
"sufficient_context": 1}}

Reply with JSON only: {{"reasoning": "<the step-by-step questions and their answers>", "sufficient_context": <1 or 0>}}""",
    max_tokens=700,
)

# Outside the shared layout on purpose: the abstention judge reads the question and the reply only, and the
# layout's prefix would show it the contexts, which it never read (no judge gets a part it did not read).
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

# The per-query judges' prompts in the shared layout, by name (factuality's batched check as
# "factuality_verify"): every one starts with the same prefix for one query.
PROMPTS_IN_LAYOUT: dict[str, Prompt] = {
    "retrieval_grade": RETRIEVAL_GRADE,
    "factuality": FACTUALITY,
    "factuality_verify": FACTUALITY_VERIFY,
    "groundedness": GROUNDEDNESS,
    "relevance": RELEVANCE,
    "answer_correctness": ANSWER_CORRECTNESS,
    "coherence": COHERENCE,
    "completeness": COMPLETENESS,
    "citation_accuracy": CITATION_ACCURACY,
    "context_sufficiency": CONTEXT_SUFFICIENCY,
}


def layout_name(user: str) -> str | None:
    """Which prompt of PROMPTS_IN_LAYOUT a request's user text was filled from (by the first line of its
    task), or None: for scripted servers that answer each judge in its own way."""
    task = task_of(user)
    if not task:
        return None
    for name, prompt in PROMPTS_IN_LAYOUT.items():
        if task.startswith(task_of(prompt.user).split("\n", 1)[0]):
            return name
    return None
