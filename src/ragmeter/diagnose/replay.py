"""Counterfactual replay of a stored run: the parent's retrieved lists are reused (its system's `retrieve`
is never called), the generator is given other contexts, and only `answer` and the judges are called.

Interventions: `oracle-rank` (the stored retrieved list with its relevant documents moved first, cut to
context_k), `oracle-context` (the labelled relevant passages), `context-k=N` (the top N stored), and
`no-rerank`: the one intervention that re-runs retrieval (the built-in pipeline with its reranker switched
off; `CountedRetrieval` counts those calls). Each replay is stored as a run whose config names its parent
and intervention (EvalConfig.replay, RunRecord.replay).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.errors import InputError
from ragmeter.models import EvalDataset, EvalQuery, EvalRunResult, QueryEvalResult
from ragmeter.systems import Retrieved, aanswer

CHAIN = ("oracle-rank", "oracle-context")
NO_RERANK = "no-rerank"
CLOSED_BOOK = "closed-book"  # no context at all (ragmeter.diagnose.closed_book); needs no qrels
_CONTEXT_K = re.compile(r"^context-k=(\d+)$")


def check_intervention(name: str, *, depth: int) -> str:
    """A known intervention, or an InputError naming it."""
    if name in CHAIN:
        return name
    m = _CONTEXT_K.match(name)
    if m:
        n = int(m.group(1))
        if not 1 <= n <= depth:
            raise InputError(f"context-k=N needs 1 <= N <= the stored depth {depth}, got {n}", source=name)
        return name
    if name in (NO_RERANK, CLOSED_BOOK):
        return name
    raise InputError(
        f"unknown intervention {name!r}; known: oracle-rank, oracle-context, context-k=N, no-rerank, "
        "closed-book",
        source="--also",
    )


def _hit(d: Any) -> Retrieved:
    return Retrieved(d.doc_id, float(d.score), d.text)


def replay_contexts(
    intervention: str,
    query: EvalQuery,
    stored: QueryEvalResult,
    *,
    context_k: int,
    corpus: Mapping[str, str],
    relevance_level: int = 1,
    max_chars: int | None = None,
) -> list[Retrieved]:
    """The contexts an intervention gives the generator for one query. `max_chars`: the system's passage
    limit (the built-in pipeline cuts each context there); an oracle passage obeys it."""
    if intervention == CLOSED_BOOK:
        return []
    relevant = {d for d, g in query.judgments().items() if g >= relevance_level}
    if intervention == "oracle-rank":
        first = [d for d in stored.retrieved if d.doc_id in relevant]
        rest = [d for d in stored.retrieved if d.doc_id not in relevant]
        return [_hit(d) for d in (first + rest)[:context_k]]
    if intervention == "oracle-context":
        grades = query.judgments()
        ids = sorted(relevant, key=lambda d: (-grades[d], d))
        answers = query.gold_answers()
        return [
            Retrieved(d, float(grades[d]), oracle_passage(corpus.get(d, ""), answers, max_chars)) for d in ids
        ]
    m = _CONTEXT_K.match(intervention)
    assert m is not None, intervention
    return [_hit(d) for d in stored.retrieved[: int(m.group(1))]]


def oracle_passage(text: str, answers: Sequence[str], max_chars: int | None) -> str:
    """A relevant document as one passage of at most `max_chars`: the window that holds the first reference
    answer found in it (case-insensitive; centred on it where the document allows), else its beginning."""
    if max_chars is None or len(text) <= max_chars:
        return text
    lowered = text.lower()
    for answer in answers:
        needle = answer.strip().lower()
        at = lowered.find(needle) if needle else -1
        if at < 0:
            continue
        if len(needle) >= max_chars:
            return text[at : at + max_chars]
        start = max(0, min(at - (max_chars - len(needle)) // 2, len(text) - max_chars))
        return text[start : start + max_chars]
    return text[:max_chars]


def passage_limit(system: Any) -> int | None:
    """The passage limit of the system a replay drives (the built-in pipeline's max_context_chars)."""
    limit = getattr(system, "max_context_chars", None)
    return int(limit) if isinstance(limit, int) and limit > 0 else None


class ReplaySystem:
    """The parent's stored outputs as a system: `retrieve` returns the stored list (no call), the
    generator gets the intervention's contexts through the parent system's `answer`. Both are keyed by the
    query id the run loop makes current (ragmeter.systems.context): two queries may ask the same question."""

    def __init__(self, parent: Any, run: EvalRunResult, contexts: dict[str, list[Retrieved]]) -> None:
        self.parent = parent
        self.name = f"replay of {run.config.system}"
        self.stored = {r.query_id: r for r in run.per_query}
        self.contexts = contexts  # by query id

    @staticmethod
    def _query_id(question: str) -> str:
        from ragmeter.systems.context import current_query

        current = current_query()
        if current is None:
            raise InputError(f"a replay is driven by the run loop (no current query for {question!r})")
        return current.query_id

    def retrieve(self, question: str, k: int) -> list[Retrieved]:
        query_id = self._query_id(question)
        stored = self.stored.get(query_id)
        if stored is None:
            raise InputError(f"the parent run has no stored result for query {query_id!r}", source="diagnose")
        return [_hit(d) for d in stored.retrieved[:k]]

    def select_contexts(self, question: str, hits: Sequence[Retrieved], k: int) -> list[Retrieved]:
        return list(self.contexts[self._query_id(question)])

    async def answer(self, question: str, contexts: list[Retrieved]) -> str | None:
        answer: str | None = await self.parent.answer(question, contexts)
        return answer


def replay_system(
    intervention: str, parent: Any, run: EvalRunResult, dataset: EvalDataset, record: Any
) -> ReplaySystem:
    """The replay of `run` under `intervention` (oracle-rank, oracle-context, context-k=N): each successful
    query's contexts, given through `parent` (the parent's system, SystemAdapter) and its passage limit."""
    by_id = {q.query_id: q for q in dataset.queries}
    corpus = corpus_texts(dataset)
    contexts = {
        r.query_id: replay_contexts(
            intervention,
            by_id[r.query_id],
            r,
            context_k=record.context_k,
            corpus=corpus,
            relevance_level=record.relevance_level,
            max_chars=passage_limit(parent.system),
        )
        for r in run.per_query
        if r.status == "ok" and r.query_id in by_id
    }
    return ReplaySystem(parent, run, contexts)


def corpus_texts(dataset: EvalDataset) -> dict[str, str]:
    return {d.doc_id: d.text for d in dataset.corpus or []}


class CountedRetrieval:
    """A system whose `retrieve` calls are counted (`no-rerank` re-runs retrieval: the count is reported)."""

    def __init__(self, system: Any) -> None:
        self.system = system
        self.name = system.name
        self.retrieve_calls = 0
        self._lock = threading.Lock()

    def retrieve(self, question: str, k: int) -> list[Retrieved]:
        with self._lock:
            self.retrieve_calls += 1
        hits: list[Retrieved] = self.system.retrieve(question, k)
        return hits

    async def answer(self, question: str, contexts: list[Retrieved]) -> str | None:
        return await aanswer(self.system, question, contexts)

    def warm_up(self) -> None:
        self.system.warm_up()
