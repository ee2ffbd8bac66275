"""A small dataset and two callable systems for the CLI tests (`--system cli_fakes:system_a`).

Each system ranks by word overlap but buries the relevant document for some queries, so that A and B
differ query by query in both directions."""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from ragmeter.models import Document, EvalDataset, EvalQuery

CAPITALS = {
    "france": "paris",
    "germany": "berlin",
    "italy": "rome",
    "spain": "madrid",
    "portugal": "lisbon",
    "austria": "vienna",
}
BAD_FOR_A = {"france", "germany"}  # B improves on these
BAD_FOR_B = {"italy"}  # B regresses on this one


def dataset() -> EvalDataset:
    corpus = [
        Document(doc_id=f"d-{c}", text=f"{cap.title()} is the capital of {c.title()}.")
        for c, cap in CAPITALS.items()
    ]
    queries = [
        EvalQuery(
            query_id=f"q-{c}", question=f"What is the capital of {c.title()}?", relevant_doc_ids=[f"d-{c}"]
        )
        for c in CAPITALS
    ]
    return EvalDataset(name="capitals6", queries=queries, corpus=corpus)


def _rank(question: str, k: int, bad: set[str]) -> list[tuple[str, float, str]]:
    words = set(re.findall(r"[a-z]+", question.lower()))
    docs = dataset().corpus or []
    scored = [
        (d.doc_id, float(len(words & set(re.findall(r"[a-z]+", d.text.lower())))), d.text) for d in docs
    ]
    scored.sort(key=lambda t: (-t[1], t[0]))
    if words & bad:  # bury the relevant document at the end
        scored = scored[1:] + scored[:1]
    return scored[:k]


def system_a(question: str, k: int) -> list[tuple[str, float, str]]:
    return _rank(question, k, BAD_FOR_A)


def system_b(question: str, k: int) -> list[tuple[str, float, str]]:
    return _rank(question, k, BAD_FOR_B)


def scripted_server(responder: Callable[[Any], Any]) -> AbstractContextManager[Any]:
    """A ScriptedServer on its own event loop in a thread (the CLI runs its own loop); yields the server."""
    from scripted_servers import serve_in_thread  # imported when used: a run may import this module alone

    return serve_in_thread(responder)
