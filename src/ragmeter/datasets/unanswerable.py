"""Unanswerable queries from any dataset with a corpus and qrels (`ragmeter datasets unanswerable`).

A query is eligible when it has relevant documents and each of them is relevant to no other query (and it is
not already unanswerable); `share` of all the queries (at most every eligible one) is chosen by `seed`. In
the copy, the chosen queries' relevant documents are removed from the corpus and the queries are marked
`answerable: false`; their relevance labels are cleared (the documents are gone) and kept in the query's
metadata under `removed_relevant_doc_ids`, so a run classes them without qrels. Every other query keeps its
labels, and all of its relevant documents stay in the corpus.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ragmeter.errors import InputError
from ragmeter.models import EvalDataset, EvalQuery


@dataclass(frozen=True)
class Unanswerable:
    dataset: EvalDataset
    eligible: list[str]  # query ids, dataset order
    chosen: list[str]  # query ids, dataset order
    removed_docs: list[str]


def _relevant(query: EvalQuery, relevance_level: int) -> set[str]:
    return {d for d, g in query.judgments().items() if g >= relevance_level}


def eligible_queries(dataset: EvalDataset, *, relevance_level: int = 1) -> list[str]:
    """The ids of the answerable queries whose relevant documents are relevant to no other query."""
    users: dict[str, int] = {}
    for q in dataset.queries:
        for doc in _relevant(q, relevance_level):
            users[doc] = users.get(doc, 0) + 1
    return [
        q.query_id
        for q in dataset.queries
        if q.answerable and (docs := _relevant(q, relevance_level)) and all(users[d] == 1 for d in docs)
    ]


def make_unanswerable(
    dataset: EvalDataset, *, share: float, seed: int, relevance_level: int = 1
) -> Unanswerable:
    """The copy (the input is not changed); InputError for a share outside (0, 1] or no inline corpus."""
    if not 0.0 < share <= 1.0:
        raise InputError(f"share must be in (0, 1], got {share:g}", source="--share")
    if dataset.corpus is None:
        raise InputError(f"dataset {dataset.name!r} has no corpus to remove documents from", source="dataset")
    eligible = eligible_queries(dataset, relevance_level=relevance_level)
    wanted = min(len(eligible), round(share * len(dataset.queries)))
    picked = set(random.Random(seed).sample(eligible, wanted))
    chosen = [q for q in eligible if q in picked]
    removed: set[str] = set()
    queries = []
    for q in dataset.queries:
        if q.query_id not in picked:
            queries.append(q)
            continue
        docs = _relevant(q, relevance_level)
        removed |= docs
        meta = {**q.metadata, "removed_relevant_doc_ids": sorted(docs)}
        queries.append(
            q.model_copy(
                update={"answerable": False, "relevant_doc_ids": [], "relevance": None, "metadata": meta}
            )
        )
    corpus = [d for d in dataset.corpus if d.doc_id not in removed]
    made = {
        "source": dataset.name,
        "share": share,
        "seed": seed,
        "eligible": len(eligible),
        "chosen": chosen,
        "removed_docs": sorted(removed),
    }
    copy = dataset.model_copy(
        update={
            "name": f"{dataset.name}-unanswerable",
            "description": f"{dataset.name} with {len(chosen)} queries made unanswerable (seed {seed})",
            "queries": queries,
            "corpus": corpus,
            "corpus_path": None,
            "metadata": {**dataset.metadata, "unanswerable": made},
        }
    )
    return Unanswerable(copy, eligible, chosen, sorted(removed))
