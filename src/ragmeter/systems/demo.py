"""The demo's systems: the built-in pipeline over the shipped demo corpus with a transparent extractive
answerer. Library code (not CLI), because a stored run names its system as `module:Class` and resume rebuilds
it from that reference."""

from __future__ import annotations

import re
from typing import Any

_STOP = {
    "the",
    "a",
    "an",
    "of",
    "to",
    "in",
    "is",
    "what",
    "which",
    "how",
    "does",
    "do",
    "for",
    "and",
    "or",
    "by",
}


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP}


class ExtractiveAnswerer:
    """The demo's answer generator: the sentence of the top contexts that shares most words with the
    question. A transparent offline baseline (no LLM), so the answer metrics have something to score."""

    def __init__(self, retriever: Any) -> None:
        self.retriever = retriever
        self.name = f"{getattr(retriever, 'name', 'builtin')}+extractive"

    async def retrieve(self, query: str, k: int) -> Any:
        from ragmeter.systems import aretrieve

        return await aretrieve(self.retriever, query, k)

    def answer(self, query: str, contexts: list[Any]) -> str | None:
        q = _words(query)
        best, best_score = None, 0.0
        for rank, ctx in enumerate(contexts[:3]):
            for sentence in re.split(r"(?<=[.!?])\s+", ctx.text):
                overlap = len(q & _words(sentence))
                score = overlap - 0.1 * rank
                if overlap and score > best_score:
                    best, best_score = sentence.strip(), score
        return best


class _DemoSystem(ExtractiveAnswerer):
    """The built-in pipeline over the demo corpus with the extractive answerer, as a `module:Class` system
    spec, so that `ragmeter run --resume` of a demo run rebuilds exactly the system the demo used."""

    mode = "hybrid"

    def __init__(self) -> None:
        from ragmeter.datasets import demo_dataset
        from ragmeter.systems import build_system

        super().__init__(build_system("builtin", dataset=demo_dataset(), mode=self.mode, collection="demo"))


class DemoFulltext(_DemoSystem):
    mode = "fulltext"


class DemoSemantic(_DemoSystem):
    mode = "semantic"


class DemoHybrid(_DemoSystem):
    mode = "hybrid"


DEMO_SYSTEMS: dict[str, type[_DemoSystem]] = {
    "fulltext": DemoFulltext,
    "semantic": DemoSemantic,
    "hybrid": DemoHybrid,
}


def system_ref(cls: type) -> str:
    return f"{cls.__module__}:{cls.__name__}"
