"""Systems referenced as `ray_systems:NAME` by the Ray tests: Ray workers import them by module path
(the ray_local fixture puts this folder on the workers' PYTHONPATH)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from ragmeter.models import Document, EvalDataset, EvalQuery

TOPICS = [
    ("fr", "Paris is the capital of France", "France"),
    ("it", "Rome is the capital of Italy", "Italy"),
    ("de", "Berlin is the capital of Germany", "Germany"),
    ("es", "Madrid is the capital of Spain", "Spain"),
    ("pt", "Lisbon is the capital of Portugal", "Portugal"),
    ("at", "Vienna is the capital of Austria", "Austria"),
    ("pl", "Warsaw is the capital of Poland", "Poland"),
    ("gr", "Athens is the capital of Greece", "Greece"),
    ("se", "Stockholm is the capital of Sweden", "Sweden"),
    ("no", "Oslo is the capital of Norway", "Norway"),
    ("fi", "Helsinki is the capital of Finland", "Finland"),
    ("ie", "Dublin is the capital of Ireland", "Ireland"),
]


def make_dataset() -> EvalDataset:
    corpus = [Document(doc_id=f"d-{key}", text=text + ".") for key, text, _ in TOPICS]
    corpus += [Document(doc_id=f"n-{i}", text=f"Unrelated note {i} about the weather.") for i in range(6)]
    queries = [
        EvalQuery(
            query_id=f"q-{key}",
            question=f"What is the capital of {country}?",
            ground_truth_answer=text.split(" ", 1)[0],
            relevant_doc_ids=[f"d-{key}"],
        )
        for key, text, country in TOPICS
    ]
    return EvalDataset(name="capitals", queries=queries, corpus=corpus)


def _tokens(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower())) - {"the", "is", "of", "what", "capital"}


def keyword_retrieve(question: str, k: int) -> list[tuple[str, float, str]]:
    corpus = make_dataset().corpus or []
    q = _tokens(question)
    scored = [(d.doc_id, float(len(q & _tokens(d.text))), d.text) for d in corpus]
    scored.sort(key=lambda t: (-t[1], t[0]))
    return scored[:k]


def slow_keyword_retrieve(question: str, k: int) -> list[tuple[str, float, str]]:
    time.sleep(float(os.environ.get("RAGMETER_TEST_DELAY", "0.3")))
    return keyword_retrieve(question, k)


def die_once_retrieve(question: str, k: int) -> list[tuple[str, float, str]]:
    """Kills its own worker process the first time it sees the question about Italy (a marker file in
    $RAGMETER_TEST_MARKERS remembers it), like an OOM kill in the middle of a task."""
    if "Italy" in question:
        marker = Path(os.environ["RAGMETER_TEST_MARKERS"]) / "died-once"
        if not marker.exists():
            marker.write_text(str(os.getpid()))
            os._exit(1)
    return keyword_retrieve(question, k)


def seq_good_retrieve(question: str, k: int) -> list[tuple[str, float, str]]:
    """tests/runner/seq_fakes.good_retrieve (hit@1 0.9 over its 200 queries), importable by Ray workers."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runner"))
    from seq_fakes import good_retrieve

    return good_retrieve(question, k)
