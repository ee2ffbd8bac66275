"""Shared by the framework adapter tests: the demo corpus, ragmeter's offline MiniLM embedder, an
independent brute-force ranking to check adapters against, and a scripted LLM that answers from the
passages it was given (so a test can tell which contexts an answer was built from)."""

from __future__ import annotations

from typing import Any

import pytest

from ragmeter.datasets import demo_dataset
from ragmeter.llm.scripted import ScriptedRequest, Step
from ragmeter.models import EvalDataset


def demo() -> EvalDataset:
    return demo_dataset()


def embedder() -> Any:
    """The offline all-MiniLM-L6-v2 (skips when the semantic extra is not installed)."""
    from ragmeter.semantic import available, load_embedder

    if not available():
        pytest.skip("the semantic extra (torch, sentence-transformers) is not installed")
    return load_embedder()


_vectors: dict[str, list[float]] = {}


def embed(texts: list[str]) -> list[list[float]]:
    """Unit-length MiniLM vectors, each text encoded once per test session (the machine has 2 cores)."""
    todo = list(dict.fromkeys(t for t in texts if t not in _vectors))
    if todo:
        vectors = embedder().encode(
            todo, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        _vectors.update({t: [float(x) for x in row] for t, row in zip(todo, vectors, strict=True)})
    return [_vectors[t] for t in texts]


def brute_force(query: str, texts: dict[str, str], k: int) -> list[tuple[str, float]]:
    """The top k (id, cosine) by exact search, computed here, not by any framework."""
    import numpy as np

    ids = list(texts)
    docs = np.asarray(embed([texts[i] for i in ids]))
    q = np.asarray(embed([query])[0])
    sims = docs @ q
    order = np.argsort(-sims, kind="stable")[:k]
    return [(ids[i], float(sims[i])) for i in order]


def all_text(req: ScriptedRequest) -> str:
    parts: list[str] = []
    for m in req.messages:
        content = m.get("content", "")
        if isinstance(content, list):
            parts.extend(str(c.get("text", "")) for c in content if isinstance(c, dict))
        else:
            parts.append(str(content))
    return "\n".join(parts)


class Reader:
    """A scripted LLM's responder that reads which corpus documents its prompt holds (in prompt order),
    remembers them per question, and answers with the first six words of the first one, cited [1]."""

    def __init__(self, dataset: EvalDataset) -> None:
        self.texts = {d.doc_id: d.text for d in dataset.corpus}
        self.questions = [q.question for q in dataset.queries]
        self.seen: dict[str, list[str]] = {}  # question -> doc ids in the prompt

    def __call__(self, req: ScriptedRequest) -> Step:
        prompt = all_text(req)
        found = sorted((prompt.index(t), i) for i, t in self.texts.items() if t in prompt)
        ids = [i for _, i in found]
        question = next((q for q in self.questions if q in prompt), None)
        if question is not None:
            self.seen[question] = ids
        if not ids:
            return Step(text="I have no passages.")
        return Step(text=" ".join(self.texts[ids[0]].split()[:6]) + " [1]")

    def expected(self, doc_id: str) -> str:
        return " ".join(self.texts[doc_id].split()[:6]) + " [1]"
