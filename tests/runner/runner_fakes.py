"""Small, hand-made datasets and Python-callable systems (a callable is a legitimate user system)."""

from __future__ import annotations

import re
from typing import Any

from ragmeter.models import Document, EvalDataset, EvalQuery

TOPICS = [
    ("paris", "Paris is the capital of France", "Paris"),
    ("berlin", "Berlin is the capital of Germany", "Berlin"),
    ("rome", "Rome is the capital of Italy", "Rome"),
    ("madrid", "Madrid is the capital of Spain", "Madrid"),
    ("lisbon", "Lisbon is the capital of Portugal", "Lisbon"),
    ("vienna", "Vienna is the capital of Austria", "Vienna"),
    ("oslo", "Oslo is the capital of Norway", "Oslo"),
    ("bern", "Bern is the capital of Switzerland", "Bern"),
    ("dublin", "Dublin is the capital of Ireland", "Dublin"),
    ("warsaw", "Warsaw is the capital of Poland", "Warsaw"),
    ("prague", "Prague is the capital of Czechia", "Prague"),
    ("athens", "Athens is the capital of Greece", "Athens"),
]


def make_dataset(n: int = len(TOPICS)) -> EvalDataset:
    corpus = [Document(doc_id=f"d-{key}", text=text + ".") for key, text, _ in TOPICS]
    corpus += [Document(doc_id=f"n-{i}", text=f"Unrelated note number {i} about weather.") for i in range(8)]
    queries = []
    for i, (key, text, answer) in enumerate(TOPICS[:n]):
        country = text.rsplit(" ", 1)[-1]
        rel = [f"d-{key}"] if i != 3 else []  # one query without any relevant document
        queries.append(
            EvalQuery(
                query_id=f"q{i:02d}",
                question=f"What is the capital of {country}?",
                ground_truth_answer=answer,
                relevant_doc_ids=rel,
            )
        )
    return EvalDataset(name="capitals", queries=queries, corpus=corpus)


def _tokens(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower())) - {"the", "is", "of", "what", "capital"}


class KeywordSystem:
    """Scores documents by word overlap; answers with the first word of the best context."""

    name = "keyword"

    def __init__(self, dataset: EvalDataset, fail_on: set[str] | None = None) -> None:
        self.corpus = dataset.corpus or []
        self.fail_on = fail_on or set()
        self.calls: list[str] = []

    async def retrieve(self, question: str, k: int) -> list[tuple[str, float, str]]:
        self.calls.append(question)
        if any(word in question for word in self.fail_on):
            raise ConnectionError("backend unreachable")
        q = _tokens(question)
        scored = [(d.doc_id, float(len(q & _tokens(d.text))), d.text) for d in self.corpus]
        scored.sort(key=lambda t: (-t[1], t[0]))
        return scored[:k]

    async def answer(self, question: str, contexts: list[Any]) -> str | None:
        return contexts[0].text.split(" ", 1)[0] if contexts else None


def keyword_retrieve(question: str, k: int) -> list[tuple[str, float, str]]:
    """A plain function system (`--system runner_fakes:keyword_retrieve`) over make_dataset()'s corpus."""
    corpus = make_dataset().corpus or []
    q = _tokens(question)
    scored = [(d.doc_id, float(len(q & _tokens(d.text))), d.text) for d in corpus]
    scored.sort(key=lambda t: (-t[1], t[0]))
    return scored[:k]


class SlowKeywordSystem(KeywordSystem):
    """KeywordSystem that takes `delay` seconds per query (so that a child process can be killed mid-run).
    An in-process object: its run can be resumed only through the Python API with the same class."""

    delay = 0.25
    # In a child process that a test stops: the queries after this many (in this process) take 60 s, so the
    # run cannot end before the test's signal however slow the machine (the parent's polling included).
    stall_after: int | None = None
    started = 0

    async def retrieve(self, question: str, k: int) -> list[tuple[str, float, str]]:
        import asyncio

        SlowKeywordSystem.started += 1
        stall = self.stall_after is not None and SlowKeywordSystem.started > self.stall_after
        await asyncio.sleep(60.0 if stall else self.delay)
        return await super().retrieve(question, k)


def slow_keyword_retrieve(question: str, k: int) -> list[tuple[str, float, str]]:
    """`--system runner_fakes:slow_keyword_retrieve`: keyword_retrieve at 0.2 s per query."""
    import time

    time.sleep(0.2)
    return keyword_retrieve(question, k)
