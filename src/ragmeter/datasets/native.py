"""The native dataset format: EvalDataset JSON, JSONL (one query a line) and corpus JSONL.

Parsing collects every problem with its location (file:line or a JSON path) instead of stopping at
the first one, so that `ragmeter datasets validate` can report them all and `load_dataset` can name
the first few in one clear error. Reading JSON text and JSONL lines safely is in datasets/jsonl.py
(`iter_jsonl`, `load_json_text` and `unencodable_field` still import from here).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from ragmeter.datasets.jsonl import iter_jsonl as iter_jsonl
from ragmeter.datasets.jsonl import load_json_text as load_json_text
from ragmeter.datasets.jsonl import unencodable_field as unencodable_field
from ragmeter.errors import InputError
from ragmeter.models import Document, EvalDataset, EvalQuery

T = TypeVar("T")

# Keys accepted for a document's id, besides the native `doc_id` (BEIR uses `_id`).
_DOC_ID_KEYS = ("doc_id", "_id", "id")


class Problems:
    """An ordered list of `location: message` strings."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, location: str, message: str) -> None:
        self.items.append(f"{location}: {message}")

    def __bool__(self) -> bool:
        return bool(self.items)


def _format_validation_error(exc: ValidationError) -> list[str]:
    out = []
    for err in exc.errors():
        loc = ".".join(str(part) for part in err["loc"]) or "(record)"
        out.append(f"field '{loc}': {err['msg']}")
    return out


def document_from_record(record: Any) -> Document:
    """A Document from a native (`doc_id`) or BEIR-style (`_id`/`id`) record; raises ValueError."""
    if not isinstance(record, dict):
        raise ValueError("a document must be a JSON object")
    data = dict(record)
    if "doc_id" not in data:
        for key in _DOC_ID_KEYS[1:]:
            if key in data:
                data["doc_id"] = data.pop(key)
                break
    if isinstance(data.get("doc_id"), int):
        data["doc_id"] = str(data["doc_id"])
    if data.get("title") is None:
        data["title"] = ""
    try:
        return Document.model_validate(data)
    except ValidationError as exc:
        raise ValueError("; ".join(_format_validation_error(exc))) from None


def query_from_record(record: Any) -> EvalQuery:
    """An EvalQuery from a native record; raises ValueError naming the bad field."""
    if not isinstance(record, dict):
        raise ValueError("a query must be a JSON object")
    data = dict(record)
    if isinstance(data.get("query_id"), int):
        data["query_id"] = str(data["query_id"])
    labels = data.get("human_labels")
    if isinstance(labels, dict):  # pydantic would read "yes" as True and "0.5" as 0.5: refuse strings
        for name, value in labels.items():
            if not isinstance(value, int | float):
                raise ValueError(f"field 'human_labels.{name}': {value!r} is not a number or a boolean")
    try:
        return EvalQuery.model_validate(data)
    except ValidationError as exc:
        raise ValueError("; ".join(_format_validation_error(exc))) from None


def read_corpus(path: Path, problems: Problems | None = None) -> list[Document]:
    """Read a corpus JSONL (one document a line). Without `problems`, the first bad line raises."""
    docs: list[Document] = []
    for lineno, record in iter_jsonl(path):
        try:
            docs.append(document_from_record(record))
        except ValueError as exc:
            if problems is None:
                raise InputError(str(exc), source=str(path), line=lineno) from None
            problems.add(f"{path}:{lineno}", str(exc))
    return docs


def _check_id(field: str, key: str, loc: str, seen: dict[str, str], problems: Problems) -> None:
    """A record's id is not empty and not seen before (a repeat names where it was first)."""
    if key in seen:
        problems.add(loc, f"duplicate {field} {key!r} (first at {seen[key]})")
    else:
        seen[key] = loc
    if not key.strip():
        problems.add(loc, f"empty {field}")


def check_dataset(
    dataset: EvalDataset,
    problems: Problems,
    *,
    query_locations: list[str],
    doc_locations: list[str],
) -> None:
    """Cross-record checks: duplicate ids, empty questions/texts, relevant ids missing from the corpus."""
    seen_q: dict[str, str] = {}
    label_kinds: dict[str, tuple[str, str]] = {}
    for query, loc in zip(dataset.queries, query_locations, strict=True):
        _check_id("query_id", query.query_id, loc, seen_q, problems)
        if not query.question.strip():
            problems.add(loc, f"query {query.query_id!r}: empty question")
        if len(set(query.relevant_doc_ids)) != len(query.relevant_doc_ids):
            problems.add(loc, f"query {query.query_id!r}: relevant_doc_ids repeats an id")
        _check_human_labels(query, loc, problems, label_kinds)
    corpus = dataset.corpus
    if corpus is None:
        return
    seen_d: dict[str, str] = {}
    for doc, loc in zip(corpus, doc_locations, strict=True):
        _check_id("doc_id", doc.doc_id, loc, seen_d, problems)
        if not doc.text.strip() and not doc.title.strip():
            problems.add(loc, f"document {doc.doc_id!r}: empty text")
    for query, loc in zip(dataset.queries, query_locations, strict=True):
        ids = list(query.relevant_doc_ids) + list((query.relevance or {}).keys())
        missing = sorted({d for d in ids if d not in seen_d})
        if missing:
            shown = ", ".join(repr(d) for d in missing[:5])
            problems.add(loc, f"query {query.query_id!r}: relevant ids not in the corpus: {shown}")


_LABEL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:@-]*$")


def _check_human_labels(
    query: EvalQuery, loc: str, problems: Problems, kinds: dict[str, tuple[str, str]]
) -> None:
    """human_labels: names like judge metric names, finite numbers or booleans, one kind per name
    across the dataset (all booleans or all numbers), so that `judges validate` sees one scale."""
    for name, value in query.human_labels.items():
        where = f"{loc}: field 'human_labels.{name}'"
        if not _LABEL_NAME.match(name):
            problems.add(where, f"query {query.query_id!r}: {name!r} is not a metric name")
            continue
        if not isinstance(value, bool) and not math.isfinite(float(value)):
            problems.add(where, f"query {query.query_id!r}: label {value!r} is not a finite number")
            continue
        kind = "boolean" if isinstance(value, bool) else "number"
        first = kinds.setdefault(name, (kind, loc))
        if first[0] != kind:
            problems.add(
                where,
                f"query {query.query_id!r}: a {kind} label, but {name!r} has {first[0]} labels "
                f"(first at {first[1]}); use one kind per label",
            )


def _parse_json_dataset(path: Path, problems: Problems) -> tuple[EvalDataset | None, list[str], list[str]]:
    try:
        data = path.read_bytes()
        data = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
        raw = load_json_text(data.decode("utf-8"))
    except OSError as exc:
        problems.add(str(path), f"cannot read: {exc.strerror}")
        return None, [], []
    except json.JSONDecodeError as exc:
        problems.add(f"{path}:{exc.lineno}", f"not valid JSON ({exc.msg})")
        return None, [], []
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        problems.add(
            f"{path}:{line}", f"not UTF-8 text (byte 0x{data[exc.start]:02x} at byte offset {exc.start})"
        )
        return None, [], []
    except ValueError as exc:  # NaN, Infinity, integers too long to convert
        problems.add(str(path), f"not valid JSON ({exc})")
        return None, [], []
    except RecursionError:
        problems.add(str(path), "not valid JSON (nested too deeply)")
        return None, [], []
    if not isinstance(raw, dict):
        problems.add(str(path), "a dataset must be a JSON object with a 'queries' list")
        return None, [], []
    if not isinstance(raw.get("queries"), list):
        problems.add(f"{path}: field 'queries'", "missing or not a list")
        return None, [], []
    located = ((f"{path}: queries[{i}]", r) for i, r in enumerate(raw["queries"]))
    queries, q_locs = _make_each(located, query_from_record, problems)
    corpus: list[Document] | None = None
    d_locs: list[str] = []
    if raw.get("corpus") is not None:
        if not isinstance(raw["corpus"], list):
            problems.add(f"{path}: field 'corpus'", "not a list")
        else:
            located = ((f"{path}: corpus[{i}]", r) for i, r in enumerate(raw["corpus"]))
            corpus, d_locs = _make_each(located, document_from_record, problems)
    elif raw.get("corpus_path"):
        corpus_file = (path.parent / str(raw["corpus_path"])).resolve()
        if not corpus_file.is_file():
            problems.add(f"{path}: field 'corpus_path'", f"file not found: {corpus_file}")
        else:
            corpus, d_locs = _read_corpus_with_locations(corpus_file, problems)
    header = {k: raw[k] for k in ("name", "description", "version", "metadata") if k in raw}
    why = unencodable_field(header)
    if why is not None:
        problems.add(str(path), why)
        return None, q_locs, d_locs
    header.setdefault("name", path.stem)
    unknown = sorted(
        set(raw) - {"name", "description", "version", "metadata", "queries", "corpus", "corpus_path"}
    )
    for key in unknown:
        problems.add(f"{path}: field '{key}'", "unknown field")
    try:
        dataset = EvalDataset.model_validate({**header, "queries": [], "corpus": None})
    except ValidationError as exc:
        for msg in _format_validation_error(exc):
            problems.add(str(path), msg)
        return None, q_locs, d_locs
    dataset.queries = queries
    dataset.corpus = corpus
    return dataset, q_locs, d_locs


def _read_corpus_with_locations(path: Path, problems: Problems) -> tuple[list[Document], list[str]]:
    docs, locs, _ = _read_records(path, problems, document_from_record)
    return docs, locs


def _read_records(
    path: Path, problems: Problems, make: Callable[[Any], T]
) -> tuple[list[T], list[str], bool]:
    """Each JSONL line made into a record by `make`, with its location; a bad line is a problem and is
    skipped. False when the file itself could not be read to the end (also a problem)."""
    items: list[T] = []
    locs: list[str] = []
    try:
        located = ((f"{path}:{lineno}", record) for lineno, record in iter_jsonl(path))
        items, locs = _make_each(located, make, problems, items, locs)
    except InputError as exc:
        problems.add(f"{exc.source}:{exc.line}", exc.reason)
        return items, locs, False
    except UnicodeDecodeError:
        problems.add(str(path), "not UTF-8 text")
        return items, locs, False
    return items, locs, True


def _make_each(
    located: Iterable[tuple[str, Any]],
    make: Callable[[Any], T],
    problems: Problems,
    items: list[T] | None = None,
    locs: list[str] | None = None,
) -> tuple[list[T], list[str]]:
    """(location, raw record) pairs made into records by `make`, each kept with its location; a record
    `make` refuses is a problem at its location. Appends to `items`/`locs` when given, so that what was
    made before a read error stays."""
    items = [] if items is None else items
    locs = [] if locs is None else locs
    for loc, record in located:
        why = unencodable_field(record)
        if why is not None:
            problems.add(loc, why)
            continue
        try:
            items.append(make(record))
            locs.append(loc)
        except ValueError as exc:
            problems.add(loc, str(exc))
    return items, locs


def sibling_corpus(path: Path) -> Path | None:
    """The corpus of a JSONL dataset: `<stem>.corpus.jsonl`, else `corpus.jsonl`, in the same folder."""
    for candidate in (path.with_name(f"{path.stem}.corpus.jsonl"), path.with_name("corpus.jsonl")):
        if candidate.is_file() and candidate.resolve() != path.resolve():
            return candidate
    return None


def _parse_jsonl_dataset(path: Path, problems: Problems) -> tuple[EvalDataset | None, list[str], list[str]]:
    queries, q_locs, complete = _read_records(path, problems, query_from_record)
    if not complete:
        return None, q_locs, []
    corpus: list[Document] | None = None
    d_locs: list[str] = []
    corpus_file = sibling_corpus(path)
    if corpus_file is not None:
        corpus, d_locs = _read_corpus_with_locations(corpus_file, problems)
    dataset = EvalDataset(name=path.stem, queries=queries, corpus=corpus)
    return dataset, q_locs, d_locs


def parse_native(path: Path) -> tuple[EvalDataset | None, list[str]]:
    """Parse a native JSON or JSONL dataset; return it (None when unreadable) and every problem."""
    problems = Problems()
    if not path.is_file():
        problems.add(str(path), "file not found")
        return None, problems.items
    if path.suffix.lower() == ".jsonl":
        dataset, q_locs, d_locs = _parse_jsonl_dataset(path, problems)
    else:
        dataset, q_locs, d_locs = _parse_json_dataset(path, problems)
    if dataset is not None:
        if not dataset.queries and not problems:
            problems.add(str(path), "the dataset has no queries")
        check_dataset(dataset, problems, query_locations=q_locs, doc_locations=d_locs)
    return dataset, problems.items


def load_native(path: Path) -> EvalDataset:
    """Load a native dataset; any problem raises one InputError naming the first few."""
    dataset, problems = parse_native(path)
    if problems or dataset is None:
        shown = "; ".join(problems[:3])
        more = (
            f" (and {len(problems) - 3} more; run `ragmeter datasets validate`)" if len(problems) > 3 else ""
        )
        raise InputError(f"invalid dataset: {shown}{more}")
    return dataset


def write_native(dataset: EvalDataset, path: Path) -> None:
    """Write a dataset as native JSON (corpus inline)."""
    path.write_text(dataset.model_dump_json(indent=1, exclude_none=True), encoding="utf-8")
