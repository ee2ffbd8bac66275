"""A synthetic dataset whose retrieval quality is set per query, and a system that honours it: the gate
tests need many queries (a confidence sequence settles after tens of them, not after three)."""

from __future__ import annotations

from ragmeter.models import Document, EvalDataset, EvalQuery

N_QUERIES = 200


def hit(i: int, share_pct: int) -> bool:
    """Whether query i is answered with its relevant document first (`share_pct` of every 100 queries)."""
    return (i * 37) % 100 < share_pct


def make_seq_dataset(n: int = N_QUERIES) -> EvalDataset:
    corpus = [Document(doc_id=f"d{i:03d}", text=f"fact number {i}") for i in range(n)]
    queries = [
        EvalQuery(
            query_id=f"q{i:03d}",
            question=f"question {i}",
            relevant_doc_ids=[f"d{i:03d}"],
            ground_truth_answer=f"answer {i}",
        )
        for i in range(n)
    ]
    return EvalDataset(name="synthetic-gate", queries=queries, corpus=corpus)


def _retrieve(question: str, k: int, share_pct: int) -> list[tuple[str, float, str]]:
    i = int(question.rsplit(" ", 1)[1])
    own = f"d{i:03d}"
    other = f"d{(i + 1) % N_QUERIES:03d}"
    ranked = [own, other] if hit(i, share_pct) else [other, own]
    return [(doc, 1.0 / (r + 1), f"fact about {doc}") for r, doc in enumerate(ranked[:k])]


def good_retrieve(question: str, k: int) -> list[tuple[str, float, str]]:
    """hit@1 = 0.9 over the 200 queries."""
    return _retrieve(question, k, 90)


def even_retrieve(question: str, k: int) -> list[tuple[str, float, str]]:
    """hit@1 = 0.5 over the 200 queries."""
    return _retrieve(question, k, 50)
