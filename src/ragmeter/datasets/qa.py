"""Question-answering formats whose passages become the corpus: SQuAD, HotpotQA, NQ-open (oracle)."""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ragmeter.errors import InputError
from ragmeter.models import Document, EvalDataset, EvalQuery
from ragmeter.yamlfile import iter_lines, read_text_any


def _dedupe(values: list[str]) -> list[str]:
    return list(dict.fromkeys(v for v in values if v))


def _slug(title: str) -> str:
    return re.sub(r"\s+", "_", title.strip())


def load_squad(
    path: Path, *, limit: int | None = None, seed: int = 42, name: str | None = None
) -> EvalDataset:
    """SQuAD v1.1/v2.0 JSON: each paragraph is a document (`<Title>_p<i>`), the paragraph of a question is
    its relevant document, the answer texts are the gold answers. v2.0 unanswerable questions are kept
    with no gold answer, marked `is_impossible` in metadata and `answerable: false`.

    With `limit`, `limit` questions are sampled with `seed`; the corpus stays whole so that retrieval has
    every distractor paragraph.
    """
    try:
        raw = json.loads(read_text_any(path))
        articles = raw["data"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise InputError(f"not a SQuAD JSON file ({exc})", source=str(path)) from None
    corpus: list[Document] = []
    queries: list[EvalQuery] = []
    for article in articles:
        title = str(article.get("title", ""))
        for i, para in enumerate(article.get("paragraphs", [])):
            doc_id = f"{_slug(title)}_p{i}"
            corpus.append(Document(doc_id=doc_id, title=title.replace("_", " "), text=para["context"]))
            for qa in para.get("qas", []):
                answers = _dedupe([str(a["text"]).strip() for a in qa.get("answers", [])])
                impossible = bool(qa.get("is_impossible", False))
                queries.append(
                    EvalQuery(
                        query_id=str(qa["id"]),
                        question=str(qa["question"]).strip(),
                        ground_truth_answer=answers[0] if answers else None,
                        answers=answers,
                        relevant_doc_ids=[doc_id],
                        metadata={"title": title, **({"is_impossible": True} if impossible else {})},
                        answerable=not impossible,
                    )
                )
    if limit is not None and limit < len(queries):
        picked = sorted(random.Random(seed).sample(range(len(queries)), limit))
        queries = [queries[i] for i in picked]
    return EvalDataset(
        name=name or path.stem,
        description=f"SQuAD {raw.get('version', '')} {path.name}: paragraphs as the corpus",
        version=str(raw.get("version", "1.0")),
        queries=queries,
        corpus=corpus,
        metadata={"format": "squad", **({"sample": limit, "seed": seed} if limit is not None else {})},
    )


def _jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    # decoded once; a non-UTF-8 byte is an InputError naming file and line
    for lineno, line in iter_lines(path):
        if line.strip():
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"not valid JSON ({exc.msg})", source=str(path), line=lineno) from None


def _hotpot_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Both layouts: the official JSON list (`_id`, `context: [[title, sents]]`) and HF JSONL."""
    if path.suffix.lower() == ".json":
        records = json.loads(read_text_any(path))
        for i, rec in enumerate(records):
            yield (
                i + 1,
                {
                    "id": rec["_id"],
                    "question": rec["question"],
                    "answer": rec.get("answer"),
                    "type": rec.get("type"),
                    "level": rec.get("level"),
                    "supporting_titles": [t for t, _ in rec.get("supporting_facts", [])],
                    "context": [(t, s) for t, s in rec["context"]],
                },
            )
        return
    for lineno, rec in _jsonl(path):
        ctx = rec["context"]
        yield (
            lineno,
            {
                "id": rec["id"],
                "question": rec["question"],
                "answer": rec.get("answer"),
                "type": rec.get("type"),
                "level": rec.get("level"),
                "supporting_titles": list(rec["supporting_facts"]["title"]),
                "context": list(zip(ctx["title"], ctx["sentences"], strict=True)),
            },
        )


def load_hotpotqa(path: Path, *, name: str | None = None) -> EvalDataset:
    """HotpotQA (distractor): the context paragraphs of all questions pooled into one corpus, one document
    per Wikipedia title (id = the title); the supporting-fact paragraphs are the relevant documents."""
    corpus: dict[str, Document] = {}
    queries: list[EvalQuery] = []
    try:
        for lineno, rec in _hotpot_records(path):
            for title, sentences in rec["context"]:
                if title not in corpus:
                    text = "".join(sentences).strip()
                    corpus[title] = Document(doc_id=title, title=title, text=text)
            answer = rec["answer"]
            queries.append(
                EvalQuery(
                    query_id=str(rec["id"]),
                    question=str(rec["question"]),
                    ground_truth_answer=answer,
                    answers=[answer] if answer else [],
                    relevant_doc_ids=_dedupe(rec["supporting_titles"]),
                    metadata={"type": rec["type"], "level": rec["level"], "line": lineno},
                )
            )
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"not a HotpotQA file (missing or bad field: {exc})", source=str(path)) from None
    return EvalDataset(
        name=name or path.stem,
        description=f"HotpotQA {path.name}: context paragraphs pooled into one corpus",
        queries=queries,
        corpus=list(corpus.values()),
        metadata={"format": "hotpotqa"},
    )


def passage_id(title: str, text: str) -> str:
    """A stable id for a passage that has none: a short hash of its title and text."""
    return "p" + hashlib.sha1(f"{title}\n{text}".encode()).hexdigest()[:12]


def load_nq_open(
    path: Path, *, sample: int | None = None, sample_seed: int = 0, name: str | None = None
) -> EvalDataset:
    """NQ-open with passages (lost-in-the-middle layout: `question`, `answers`, `ctxs[{title, text,
    isgold}]`): every passage is pooled into the corpus (deduplicated, id = hash of title and text);
    the gold passages are relevant. `sample` keeps `random.Random(sample_seed).sample(...)` of the
    lines in file order; query ids are `nq-<line index>` in the full file."""
    records: list[tuple[int, dict[str, Any]]] = []
    for lineno, rec in _jsonl(path):
        if not isinstance(rec, dict) or "question" not in rec or "ctxs" not in rec:
            raise InputError("an NQ-open record needs 'question' and 'ctxs'", source=str(path), line=lineno)
        records.append((lineno, rec))
    indices = list(range(len(records)))
    if sample is not None and sample < len(records):
        indices = sorted(random.Random(sample_seed).sample(indices, sample))
    corpus: dict[str, Document] = {}
    queries: list[EvalQuery] = []
    for i in indices:
        lineno, rec = records[i]
        relevant: list[str] = []
        for ctx in rec["ctxs"]:
            title, text = str(ctx.get("title", "")), str(ctx["text"])
            pid = passage_id(title, text)
            corpus.setdefault(pid, Document(doc_id=pid, title=title, text=text))
            if ctx.get("isgold"):
                relevant.append(pid)
        answers = _dedupe([str(a) for a in rec.get("answers", rec.get("answer", []))])
        queries.append(
            EvalQuery(
                query_id=f"nq-{lineno - 1}",
                question=str(rec["question"]),
                ground_truth_answer=answers[0] if answers else None,
                answers=answers,
                relevant_doc_ids=_dedupe(relevant),
            )
        )
    return EvalDataset(
        name=name or path.name.split(".")[0],
        description=f"NQ-open {path.name}: passages pooled into one corpus, gold passages relevant",
        queries=queries,
        corpus=list(corpus.values()),
        metadata={"format": "nq-open", **({"sample": sample, "sample_seed": sample_seed} if sample else {})},
    )
