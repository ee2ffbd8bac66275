"""A small hostile dataset and a Python system for the security tests (no model, no network)."""

from __future__ import annotations

import json
from pathlib import Path

# Each question carries one kind of hostile text; ids start with formula prefixes.
HOSTILE = [
    ('=HYPERLINK("http://evil","x")', "<script>alert(1)</script> What is Paris?", "d-paris"),
    ("+cmd|' /C calc'!A0", "<img src=x onerror=alert(2)> What is Berlin?", "d-berlin"),
    ("-2+3", "{{7*7}} ${7*7} What is Rome?", "d-rome"),
    ("@SUM(1,1)", "\x1b]0;PWNED-TITLE\x07\x1b[2J\x1b[31m[red]What is Madrid?[/red]", "d-madrid"),
    ("\tq5", "\rWhat\x9b is \u202eLisbon?", "d-lisbon"),
    ("q6", "=1+1 " + "A" * 5000, "d-oslo"),
]
CORPUS = {
    "d-paris": "Paris is the capital of France.",
    "d-berlin": "Berlin is the capital of Germany.",
    "d-rome": "Rome is the capital of Italy.",
    "d-madrid": "Madrid is the capital of Spain.",
    "d-lisbon": "Lisbon is the capital of Portugal.",
    "d-oslo": "Oslo is the capital of Norway.",
}
SYSTEM_MODULE = """
CORPUS = {corpus!r}


def retrieve(question, k):
    words = set(question.lower().replace("?", " ").split())
    scored = [(doc, sum(w.lower() in words for w in text.replace(".", "").split()), text)
              for doc, text in CORPUS.items()]
    scored.sort(key=lambda t: (-t[1], t[0]))
    return [(doc, float(score), text) for doc, score, text in scored[:k]]
"""


def write_hostile(folder: Path) -> Path:
    """hostile.json (a native dataset) and hostile_system.py (`hostile_system:retrieve`) in `folder`."""
    queries = [
        {"query_id": qid, "question": q, "ground_truth_answer": "=2+2", "relevant_doc_ids": [doc]}
        for qid, q, doc in HOSTILE
    ]
    corpus = [{"doc_id": d, "text": t} for d, t in CORPUS.items()]
    path = folder / "hostile.json"
    path.write_text(json.dumps({"name": "hostile", "queries": queries, "corpus": corpus}), encoding="utf-8")
    (folder / "hostile_system.py").write_text(SYSTEM_MODULE.format(corpus=CORPUS), encoding="utf-8")
    return path
