"""A Haystack pipeline as a system: one pipeline run per question gives the documents and the answer."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from ragmeter.errors import InputError
from ragmeter.systems.adapters._common import answer_text, document_id, rank_score, require
from ragmeter.systems.base import Retrieved, document_level

QUESTION_SOCKETS = ("query", "question", "text")


def _sockets(pipeline: Any, name: str, kind: str) -> dict[str, Any]:
    return dict(pipeline.graph.nodes[name].get(kind) or {})


def _pick(pipeline: Any, given: str | None, socket: str, prefer: Iterable[str], what: str) -> str | None:
    """The component named `given`, else the one that outputs `socket` (class names with `prefer` first)."""
    names = [n for n, _ in pipeline.walk()]
    if given is not None:
        if given not in names:
            raise InputError(f"no component {given!r} in the pipeline (it has {sorted(names)})", source=what)
        return given
    found = [n for n in names if socket in _sockets(pipeline, n, "output_sockets")]
    for word in prefer:
        preferred = [n for n in found if word in type(pipeline.get_component(n)).__name__]
        if preferred:
            found = preferred
            break
    if len(found) > 1:
        raise InputError(f"several components output {socket!r} ({sorted(found)}): name one", source=what)
    return found[0] if found else None


class HaystackSystem:
    """`retrieve(query, k)` runs the pipeline once: the question goes to every unconnected input named
    query / question / text (or to `question_inputs`), k to the retriever's `top_k` (unless top_k=False),
    and the documents are the `retriever` component's output (default: the one component that outputs
    documents, a Ranker before a Retriever). The answer of that same run, from the `answer` component
    (default: the AnswerBuilder's answers, else the generator's replies), is what `answer()` returns: it is
    built from all the documents the pipeline retrieved, of which ragmeter records the first context_k."""

    def __init__(
        self,
        pipeline: Any,
        *,
        retriever: str | None = None,
        answer: str | None = None,
        question_inputs: dict[str, list[str]] | None = None,
        top_k: bool = True,
        id_key: str | None = None,
        name: str | None = None,
    ) -> None:
        require("haystack", "haystack", "the Haystack adapter")
        if not (callable(getattr(pipeline, "run", None)) and hasattr(pipeline, "graph")):
            raise InputError(
                f"expected a Haystack Pipeline, got {type(pipeline).__name__}", source="from_haystack"
            )
        self.pipeline = pipeline
        self.name = name or "haystack:pipeline"
        picked = _pick(pipeline, retriever, "documents", ("Ranker", "Retriever"), "from_haystack retriever=")
        if picked is None:
            raise InputError("no component outputs 'documents': name the retriever", source="from_haystack")
        self.retriever = picked
        self.answerer = _pick(pipeline, answer, "answers", (), "from_haystack answer=") or _pick(
            pipeline, answer, "replies", (), "from_haystack answer="
        )
        self.question_inputs = question_inputs or {
            comp: names
            for comp, sockets in pipeline.inputs().items()
            if (names := [s for s in sockets if s in QUESTION_SOCKETS])
        }
        if not any(self.question_inputs.values()):
            raise InputError(
                f"no unconnected input named {'/'.join(QUESTION_SOCKETS)}: give question_inputs=",
                source="from_haystack",
            )
        self.top_k = top_k and "top_k" in _sockets(pipeline, self.retriever, "input_sockets")
        self.id_key = id_key
        self._answers: dict[str, str | None] = {}
        self._lock = threading.Lock()
        self._warm = False

    def _doc_id(self, doc: Any) -> str:
        meta = doc.meta or {}
        return document_id(meta, (meta.get("source_id"), doc.id), id_key=self.id_key, source=self.name)

    def _answer(self, outputs: dict[str, Any]) -> str | None:
        if self.answerer is None:
            return None
        out = outputs.get(self.answerer) or {}
        items = out.get("answers", out.get("replies")) or []
        return answer_text(items[0], source=self.name) if items else None

    def retrieve(self, query: str, k: int) -> list[Retrieved]:
        data: dict[str, dict[str, Any]] = {
            c: dict.fromkeys(s, query) for c, s in self.question_inputs.items()
        }
        if self.top_k:
            data.setdefault(self.retriever, {})["top_k"] = k
        wanted = {self.retriever} | ({self.answerer} if self.answerer else set())
        if not self._warm:  # run() warms up too; once here, so concurrent first queries load models once
            with self._lock:
                self.pipeline.warm_up()
                self._warm = True
        outputs = self.pipeline.run(data, include_outputs_from=wanted)
        docs = list((outputs.get(self.retriever) or {}).get("documents") or [])
        self._answers[query] = self._answer(outputs)
        out = [
            Retrieved(self._doc_id(d), rank_score(d.score, rank, len(docs)), d.content or "")
            for rank, d in enumerate(docs)
        ]
        return document_level(out)[:k]

    def answer(self, query: str, contexts: list[Retrieved]) -> str | None:
        return self._answers.pop(query, None)


def from_haystack(pipeline: Any, **options: Any) -> HaystackSystem:
    """A Haystack Pipeline as a ragmeter system. Options: retriever, answer (component names),
    question_inputs ({component: [socket, ...]}), top_k (pass k to the retriever), id_key, name."""
    return HaystackSystem(pipeline, **options)
