"""BEIR folders (corpus.jsonl, queries.jsonl, qrels/{split}.tsv) and TREC topics + qrels + corpus."""

from __future__ import annotations

import re
from pathlib import Path

from ragmeter.datasets.native import document_from_record, iter_jsonl, read_corpus
from ragmeter.errors import InputError
from ragmeter.models import Document, EvalDataset, EvalQuery
from ragmeter.yamlfile import iter_lines, read_text_any


def is_beir_folder(path: Path) -> bool:
    return path.is_dir() and (path / "corpus.jsonl").is_file() and (path / "queries.jsonl").is_file()


def read_qrels_tsv(path: Path) -> dict[str, dict[str, int]]:
    """BEIR qrels: `query-id<TAB>corpus-id<TAB>score`, an optional header line."""
    qrels: dict[str, dict[str, int]] = {}
    # decoded once; a non-UTF-8 byte is an InputError naming file and line
    for lineno, line in iter_lines(path):
        fields = line.rstrip("\n").split("\t")
        if not line.strip():
            continue
        if lineno == 1 and fields[0].strip().lower() in {"query-id", "query_id", "qid"}:
            continue
        if len(fields) != 3:
            raise InputError(
                f"expected 3 tab-separated fields, got {len(fields)}", source=str(path), line=lineno
            )
        qid, docid, grade = (f.strip() for f in fields)
        try:
            qrels.setdefault(qid, {})[docid] = int(grade)
        except ValueError:
            raise InputError(f"grade {grade!r} is not an integer", source=str(path), line=lineno) from None
    return qrels


def read_trec_qrels(path: Path) -> dict[str, dict[str, int]]:
    """TREC qrels: `qid iter docid grade`, whitespace separated."""
    qrels: dict[str, dict[str, int]] = {}
    # decoded once; a non-UTF-8 byte is an InputError naming file and line
    for lineno, line in iter_lines(path):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 4:
            raise InputError(
                f"expected 4 fields (qid iter docid grade), got {len(fields)}",
                source=str(path),
                line=lineno,
            )
        try:
            qrels.setdefault(fields[0], {})[fields[2]] = int(fields[3])
        except ValueError:
            raise InputError(
                f"grade {fields[3]!r} is not an integer", source=str(path), line=lineno
            ) from None
    return qrels


def _queries_from_qrels(
    texts: dict[str, str], qrels: dict[str, dict[str, int]], source: str
) -> list[EvalQuery]:
    queries = []
    for qid, judged in qrels.items():
        if qid not in texts:
            raise InputError(
                f"query {qid!r} of the qrels has no text in the queries/topics file", source=source
            )
        queries.append(
            EvalQuery(
                query_id=qid,
                question=texts[qid],
                relevant_doc_ids=[d for d, g in judged.items() if g >= 1],
                relevance=dict(judged),
            )
        )
    return queries


def load_beir(path: Path, *, split: str | None = None, name: str | None = None) -> EvalDataset:
    """A BEIR folder; `split` picks qrels/{split}.tsv (default: test, else the only split there)."""
    if not is_beir_folder(path):
        raise InputError("not a BEIR folder (needs corpus.jsonl and queries.jsonl)", source=str(path))
    splits = sorted(p.stem for p in (path / "qrels").glob("*.tsv"))
    if not splits:
        raise InputError("no qrels/*.tsv in this BEIR folder", source=str(path))
    chosen = split or ("test" if "test" in splits else splits[0])
    if chosen not in splits:
        raise InputError(f"no split {chosen!r}; this folder has {', '.join(splits)}", source=str(path))
    texts: dict[str, str] = {}
    queries_file = path / "queries.jsonl"
    for lineno, record in iter_jsonl(queries_file):
        if not isinstance(record, dict) or "_id" not in record or "text" not in record:
            raise InputError("a BEIR query needs '_id' and 'text'", source=str(queries_file), line=lineno)
        texts[str(record["_id"])] = str(record["text"])
    qrels = read_qrels_tsv(path / "qrels" / f"{chosen}.tsv")
    corpus = read_corpus(path / "corpus.jsonl")
    return EvalDataset(
        name=name or path.name,
        description=f"BEIR folder {path.name}, split {chosen}",
        queries=_queries_from_qrels(texts, qrels, str(queries_file)),
        corpus=corpus,
        metadata={"format": "beir", "split": chosen},
    )


_TOP = re.compile(r"<top>(.*?)</top>", re.S | re.I)
_FIELD = re.compile(r"<(num|title|desc|narr)>(.*?)(?=<(?:num|title|desc|narr|/top)>)", re.S | re.I)


def read_trec_topics(path: Path, *, field: str = "title") -> dict[str, str]:
    """TREC topics: SGML (`<top><num>..<title>..`) or TSV (`qid<TAB>text`)."""
    text = read_text_any(path)
    topics: dict[str, str] = {}
    if "<top>" in text.lower():
        for block in _TOP.findall(text):
            fields = {k.lower(): v.strip() for k, v in _FIELD.findall(block + "</top>")}
            num = re.sub(r"^(number:)\s*", "", fields.get("num", ""), flags=re.I).strip()
            value = re.sub(r"^(description:|narrative:)\s*", "", fields.get(field, ""), flags=re.I).strip()
            if not num or not value:
                raise InputError(f"a topic lacks <num> or <{field}>", source=str(path))
            topics[num] = " ".join(value.split())
        return topics
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        qid, sep, query = line.partition("\t")
        if not sep or not query.strip():
            raise InputError("expected `qid<TAB>text`", source=str(path), line=lineno)
        topics[qid.strip()] = query.strip()
    return topics


def load_trec(topics: Path, qrels: Path, corpus: Path, *, name: str | None = None) -> EvalDataset:
    """TREC topics + qrels + a corpus (JSONL of documents, or a TSV `docid<TAB>text`)."""
    texts = read_trec_topics(topics)
    judged = read_trec_qrels(qrels)
    docs: list[Document]
    if corpus.suffix.lower() == ".jsonl":
        docs = read_corpus(corpus)
    else:
        docs = []
        for lineno, line in enumerate(read_text_any(corpus).splitlines(), start=1):
            if not line.strip():
                continue
            docid, sep, body = line.partition("\t")
            if not sep:
                raise InputError("expected `docid<TAB>text`", source=str(corpus), line=lineno)
            docs.append(document_from_record({"doc_id": docid.strip(), "text": body}))
    return EvalDataset(
        name=name or topics.stem,
        description=f"TREC topics {topics.name} with qrels {qrels.name}",
        queries=_queries_from_qrels(texts, judged, str(topics)),
        corpus=docs,
        metadata={"format": "trec"},
    )
