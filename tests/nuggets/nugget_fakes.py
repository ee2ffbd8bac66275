"""A constructed nugget case: a tiny dataset, a system with fixed retrievals and answers, a nugget set whose
assignments are known, and a rule-based assigner served over real HTTP (the scripted server on 127.0.0.1).

The assigner's rule: a nugget is `support` when its text appears in the passage (case-insensitive), else
`partial_support` when its first three words do, else `not_support`. It answers both prompt styles.
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from ragmeter.llm.scripted import ScriptedRequest, Step
from ragmeter.models import Document, EvalDataset, EvalQuery

DOCS = {
    "d-capital": "Paris is the capital of France.",
    "d-seine": "Paris lies on the Seine.",
    "d-weather": "An unrelated note about the weather.",
}
# question -> (retrieved doc ids in rank order, answer)
SYSTEM = {
    "What is the capital of France?": (
        ["d-capital", "d-seine", "d-weather"],
        "Paris is the capital of France and Paris has about two million people.",
    ),
    "What is the capital of Italy?": (["d-weather"], "Rome is the capital of Italy."),
    "Where is Paris?": (["d-seine"], "Paris lies on the Seine."),
}
FILLERS = [f"Filler fact number {i}" for i in range(4, 13)]
NUGGETS: list[dict[str, Any]] = [
    {
        "query_id": "qa",
        "query": "What is the capital of France?",
        "nuggets": [
            {"id": "n1", "text": "Paris is the capital of France", "importance": "vital"},
            {"id": "n2", "text": "Paris lies on the Seine", "importance": "vital"},
            {"id": "n3", "text": "Paris has about two million inhabitants", "importance": "okay"},
            *[{"id": f"n{i}", "text": t, "importance": "okay"} for i, t in enumerate(FILLERS, 4)],
        ],
        "provenance": {"author": "ragmeter tests", "documents": ["d-capital", "d-seine"]},
    },
    {
        "query_id": "qb",
        "query": "What is the capital of Italy?",
        "nuggets": [
            {"id": "m1", "text": "Rome is the capital of Italy", "importance": "vital"},
            {"id": "m2", "text": "Rome was founded in 753 BC", "importance": "vital"},
        ],
    },
    {
        "query_id": "qc",
        "query": "Where is Paris?",
        "nuggets": [{"id": "k1", "text": "Paris lies on the Seine", "importance": "okay"}],
    },
]


def write_set(path: Path, nuggets: list[dict[str, Any]] = NUGGETS) -> Path:
    path.write_text("".join(json.dumps(q) + "\n" for q in nuggets))
    return path


def dataset() -> EvalDataset:
    ids = {
        "What is the capital of France?": "qa",
        "What is the capital of Italy?": "qb",
        "Where is Paris?": "qc",
    }
    queries = [
        EvalQuery(query_id=qid, question=q, ground_truth_answer="x", relevant_doc_ids=["d-capital"])
        for q, qid in ids.items()
    ]
    return EvalDataset(
        name="nuggets-case", queries=queries, corpus=[Document(doc_id=k, text=v) for k, v in DOCS.items()]
    )


class FixedSystem:
    name = "fixed"

    async def retrieve(self, question: str, k: int) -> list[tuple[str, float, str]]:
        ids = SYSTEM[question][0][:k]
        return [(d, 1.0 - i / 10, DOCS[d]) for i, d in enumerate(ids)]

    async def answer(self, question: str, contexts: list[Any]) -> str | None:
        return SYSTEM[question][1]


def label(nugget: str, passage: str) -> str:
    p = passage.lower()
    if nugget.lower() in p:
        return "support"
    return "partial_support" if " ".join(nugget.lower().split()[:3]) in p else "not_support"


class Assigner:
    """The responder: labels by `label`, counts calls per (query, passage)."""

    def __init__(self, fail_when: str | None = None) -> None:
        self.calls: Counter[str] = Counter()
        self.fail_when = fail_when  # a nugget text whose batch gets an unusable reply

    def __call__(self, req: ScriptedRequest) -> Step:
        user = req.user
        query = re.search(r"Search [Qq]uery: (.*)", user)
        self.calls[query.group(1).strip() if query else "?"] += 1
        if "Nugget List: [" in user:  # nuggetizer's prompt, verbatim
            passage = user.split("Passage: ", 1)[1].split("\nNugget List: ", 1)[0]
            nuggets = ast.literal_eval(user.split("Nugget List: ", 1)[1].split("\n", 1)[0])
        else:
            passage = user.split("Passage:\n", 1)[1].split("\n\nNuggets", 1)[0]
            block = user.split("Nuggets (atomic facts):\n", 1)[1].split("\n\n", 1)[0]
            nuggets = [re.sub(r"^\[\d+\] ", "", line) for line in block.splitlines()]
        if self.fail_when is not None and self.fail_when in nuggets:
            return Step(text="I would rather not say.")
        labels = [label(n, passage) for n in nuggets]
        if "Nugget List: [" in user:
            return Step(text=str(labels))
        return Step(text=json.dumps({"labels": [{"label": x, "reason": "rule"} for x in labels]}))
