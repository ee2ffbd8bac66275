"""The nugget prompts: castorini nuggetizer 0.0.5's published texts verbatim ("nuggetizer") and ours (JSON
mode, a reason per label). Differences of ours, all deliberate (docs/nuggets.md lists them):
- the reply is a JSON object with one {"label", "reason"} per nugget, not a Python list literal;
- the passage is the numbered list of texts (each cut to 4,000 characters), not one joined string;
- the labels are explained in the same words, plus "judge only from the passage, not from what you know".
"""

from __future__ import annotations

from ragmeter.judges.prompts import Prompt

# nuggetizer/models/nuggetizer.py, _create_assign_prompt with SUPPORT_GRADE_3 (its default), verbatim.
ASSIGN_NUGGETIZER = Prompt(
    "nugget_assign_nuggetizer",
    1,
    "You are NuggetizeAssignerLLM, an intelligent assistant that can label a list of atomic nuggets based "
    "on if they are captured by a given passage.",
    """Based on the query and passage, label each of the {n} nuggets either as support, partial_support, or not_support using the following criteria. A nugget that is fully captured in the passage should be labeled as support. A nugget that is partially captured in the passage should be labeled as partial_support. If the nugget is not captured at all, label it as not_support. Return the list of labels in a Pythonic list format (type: List[str]). The list should be in the same order as the input nuggets. Make sure to provide a label for each nugget.

Search Query: {query}
Passage: {passage}
Nugget List: {nuggets}
Only return the list of labels (List[str]). Do not explain.
Labels:""",
    max_tokens=300,
)

ASSIGN_OURS = Prompt(
    "nugget_assign",
    1,
    "You check which facts a passage states. You reply in JSON.",
    """Search query: {query}

Passage:
{passage}

Nuggets (atomic facts):
{nuggets}

For each nugget, in order, label how far the passage captures it, judging only from the passage and not
from what you know:
support = the passage states it fully
partial_support = the passage states part of it
not_support = the passage does not state it
Reply with JSON only: {{"labels": [{{"label": "support|partial_support|not_support", "reason": "<a few words>"}}, ...]}} with exactly {n} labels.""",
    max_tokens=900,
)

# nuggetizer's _create_nugget_prompt and _create_score_prompt, verbatim (`nuggets create --prompt nuggetizer`).
CREATE_NUGGETIZER = Prompt(
    "nugget_create_nuggetizer",
    1,
    "You are NuggetizeLLM, an intelligent assistant that can update a list of atomic nuggets to best provide "
    "all the information required for the query.",
    """Update the list of atomic nuggets of information (1-12 words), if needed, so they best provide the information required for the query. Leverage only the initial list of nuggets (if exists) and the provided context (this is an iterative process).  Return only the final list of all nuggets in a Pythonic list format (even if no updates). Make sure there is no redundant information. Ensure the updated nugget list has at most {max_nuggets} nuggets (can be less), keeping only the most vital ones. Order them in decreasing order of importance. Prefer nuggets that provide more interesting information.

Search Query: {query}
Context:
{context}
Search Query: {query}
Initial Nugget List: {nuggets}
Initial Nugget List Length: {count}

Only update the list of atomic nuggets (if needed, else return as is). Do not explain. Always answer in short nuggets (not questions). List in the form ["a", "b", ...] and a and b are strings with no mention of ".
Updated Nugget List:""",
    max_tokens=1500,
)

SCORE_NUGGETIZER = Prompt(
    "nugget_score_nuggetizer",
    1,
    "You are NuggetizeScoreLLM, an intelligent assistant that can label a list of atomic nuggets based on "
    "their importance for a given search query.",
    """Based on the query, label each of the {n} nuggets either a vital or okay based on the following criteria. Vital nuggets represent concepts that must be present in a “good” answer; on the other hand, okay nuggets contribute worthwhile information about the target but are not essential. Return the list of labels in a Pythonic list format (type: List[str]). The list should be in the same order as the input nuggets. Make sure to provide a label for each nugget.

Search Query: {query}
Nugget List: {nuggets}

Only return the list of labels (List[str]). Do not explain.
Labels:""",
    max_tokens=300,
)

CREATE_OURS = Prompt(
    "nugget_create",
    1,
    "You write the atomic facts (nuggets) a good answer to a search query must contain. You reply in JSON.",
    """Search query: {query}

Passages:
{context}

Nuggets so far ({count}): {nuggets}

Update the list of nuggets with what these passages add: each nugget one short fact (1-12 words) that helps
answer the query, no repeats, at most {max_nuggets} nuggets, most important first. Keep the nuggets so far
unless a passage shows one is wrong.
Reply with JSON only: {{"nuggets": ["<fact>", ...]}}""",
    max_tokens=1500,
)

SCORE_OURS = Prompt(
    "nugget_score",
    1,
    "You label facts by how essential they are to answering a search query. You reply in JSON.",
    """Search query: {query}

Nuggets:
{nuggets}

Label each nugget, in order: vital = a good answer must contain it; okay = worthwhile but not essential.
Reply with JSON only: {{"labels": ["vital|okay", ...]}} with exactly {n} labels.""",
    max_tokens=300,
)

# The nugget metrics beyond the answer's scores (ragmeter.judges.nuggets computes them): name -> what. Here,
# beside the prompts, so that the registry's light record module (judges/specs.py) can read them.
CONTEXT_METRICS = {
    "nugget_context_all": "nuggetizer's all score of the contexts the generator was given",
    "nugget_context_vital": "nuggetizer's vital score of the contexts the generator was given",
}
LOST_METRICS = {
    "nugget_lost_retrieval": "vital nuggets in no retrieved passage / vital nuggets",
    "nugget_lost_context": "vital nuggets retrieved but not in the contexts given / vital nuggets",
    "nugget_lost_generation": "vital nuggets in the contexts but not supported by the answer / vital nuggets",
    "nugget_unsourced": "vital nuggets the answer supports that the contexts do not (memory or made up) / vital",
}
RECALL = "nugget_recall@k"

PROMPTS: dict[str, dict[str, Prompt]] = {
    "nuggetizer": {"assign": ASSIGN_NUGGETIZER, "create": CREATE_NUGGETIZER, "score": SCORE_NUGGETIZER},
    "ours": {"assign": ASSIGN_OURS, "create": CREATE_OURS, "score": SCORE_OURS},
}
STYLES: tuple[str, ...] = tuple(PROMPTS)
