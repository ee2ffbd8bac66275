"""Nugget files, read and written like qrels files: one query per line.

Three layouts (`FORMATS`):
- ragmeter: JSONL, one `QueryNuggets` per line: query_id, query, nuggets [{id, text, importance}], provenance.
- nuggetizer: castorini nuggetizer's JSONL, as its `create_nuggets.py` (0.0.5) and `nuggetizer create` write
  it: {"query", "qid", "nuggets": [{"text", "importance"}]}; a nugget's id is its 1-based position ("1",
  "2", ...), since nuggetizer's nuggets have none. Its assignment output reads as assignments: answers
  ({"query", "qid", "answer_text", "response_length", "run_id", "nuggets": [{"text", "importance",
  "assignment"}]}) and retrieved candidates ({"text", "qid", "candidate_text", "docid", "nuggets"}). Later
  versions' optional reasoning fields (`*reasoning_traces`, a nugget's `reasoning` and `trace`) are ignored.
- trec: tab-separated lines in the manner of qrels: nuggets `qid<TAB>nugget_id<TAB>importance<TAB>text`,
  assignments `run_id<TAB>qid<TAB>nugget_id<TAB>assignment`. This layout is ours: it was not checked against
  files NIST released (docs/nuggets.md says what was checked against what).

A bad line is an InputError naming the file and the line (the CLI prints one line and exits 2).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from ragmeter.errors import InputError, decode_utf8
from ragmeter.nuggets.model import ASSIGNMENTS, Nugget, NuggetSet, Provenance, QueryNuggets

Format = Literal["ragmeter", "nuggetizer", "trec"]
FORMATS: tuple[str, ...] = ("ragmeter", "nuggetizer", "trec")

# (run_id, query_id) -> {nugget id: assignment}
AssignmentTable = dict[tuple[str, str], dict[str, str]]

# The top-level fields of nuggetizer's lines: its nuggets (create), its answer assignments and its retrieval
# assignments (assign --input-kind answers|retrieval), and the reasoning fields later versions may add.
NUGGETIZER_FIELDS = frozenset(
    {
        "qid",
        "query",
        "nuggets",
        "run_id",
        "answer_text",
        "response_length",
        "text",
        "candidate_text",
        "docid",
        "reasoning_traces",
        "creator_reasoning_traces",
        "scoring_reasoning_traces",
    }
)


def _reason(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ()))
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    return f"{where}: {msg}" if where else msg


def _lines(path: str | Path) -> Iterator[tuple[int, str]]:
    source = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the nugget file: {exc.strerror or exc}", source=source) from None
    text = decode_utf8(data.removeprefix(b"\xef\xbb\xbf"), source=source)
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip() and not line.lstrip().startswith("#"):
            yield number, line


def sniff(path: str | Path) -> Format:
    """The layout of a nugget file from its first line: JSON with "qid" is nuggetizer's, JSON otherwise
    ragmeter's, anything else TREC's tab-separated lines."""
    for _, line in _lines(path):
        if not line.lstrip().startswith("{"):
            return "trec"
        try:
            obj = json.loads(line)
        except ValueError:
            return "ragmeter"  # reported with its line by the reader
        return "nuggetizer" if isinstance(obj, dict) and "qid" in obj else "ragmeter"
    raise InputError("the nugget file is empty", source=str(path))


def _json(line: str, source: str, number: int) -> dict[str, Any]:
    try:
        obj = json.loads(line)
    except ValueError as exc:
        raise InputError(f"not JSON: {exc}", source=source, line=number) from None
    if not isinstance(obj, dict):
        raise InputError("a line must be a JSON object", source=source, line=number)
    return obj


def _from_nuggetizer(obj: dict[str, Any]) -> dict[str, Any]:
    nuggets = obj.get("nuggets")
    if not isinstance(nuggets, list):
        raise ValueError('nuggets: a list of {"text", "importance"} is required')
    unknown = set(obj) - NUGGETIZER_FIELDS
    if unknown:
        raise ValueError(f"unknown field {sorted(unknown)[0]!r}")
    out = []
    for i, n in enumerate(nuggets, 1):
        if not isinstance(n, dict):
            raise ValueError(f"nuggets.{i - 1}: an object is required")
        # nuggetizer's own reader takes a nugget without importance as vital (assign_nuggets.py)
        importance = n.get("importance", "vital")
        if importance == "failed":
            raise ValueError(
                f"nuggets.{i - 1}.importance: 'failed' (nuggetizer could not score this nugget): "
                "set it to vital or okay"
            )
        out.append({"id": str(i), "text": n.get("text"), "importance": importance})
    # a retrieval assignment line names its query "text" (nuggetizer's assign --input-kind retrieval)
    query = obj.get("query", obj.get("text") if "candidate_text" in obj else None)
    return {"query_id": str(obj.get("qid", "")), "query": query, "nuggets": out}


def read_nuggets(path: str | Path, fmt: Format | None = None) -> NuggetSet:
    """A nugget file in any of the three layouts (sniffed when `fmt` is None)."""
    source = str(path)
    fmt = fmt or sniff(path)
    queries: dict[str, QueryNuggets] = {}
    if fmt == "trec":
        return _read_trec(path)
    for number, line in _lines(path):
        obj = _json(line, source, number)
        try:
            record = QueryNuggets.model_validate(_from_nuggetizer(obj) if fmt == "nuggetizer" else obj)
        except (ValidationError, ValueError) as exc:
            reason = _reason(exc) if isinstance(exc, ValidationError) else str(exc)
            raise InputError(reason, source=source, line=number) from None
        if record.query_id in queries:
            raise InputError(f"query {record.query_id!r} is repeated", source=source, line=number)
        queries[record.query_id] = record
    if not queries:
        raise InputError("the nugget file has no queries", source=source)
    return NuggetSet(queries, source=source)


def _read_trec(path: str | Path) -> NuggetSet:
    source = str(path)
    rows: dict[str, list[Nugget]] = {}
    for number, line in _lines(path):
        parts = line.rstrip("\r\n").split("\t")
        if len(parts) != 4:
            raise InputError(
                f"expected 4 tab-separated fields (qid, nugget_id, importance, text), got {len(parts)}",
                source=source,
                line=number,
            )
        qid, nid, importance, text = (p.strip() for p in parts)
        try:
            nugget = Nugget(id=nid, text=text, importance=importance)
        except ValidationError as exc:
            raise InputError(_reason(exc), source=source, line=number) from None
        if any(n.id == nid for n in rows.get(qid, ())):
            raise InputError(f"nugget {nid!r} of query {qid!r} is repeated", source=source, line=number)
        rows.setdefault(qid, []).append(nugget)
    if not rows:
        raise InputError("the nugget file has no queries", source=source)
    return NuggetSet({q: QueryNuggets(query_id=q, nuggets=ns) for q, ns in rows.items()}, source=source)


def nugget_lines(nuggets: NuggetSet, fmt: Format = "ragmeter") -> Iterable[str]:
    for q in nuggets:
        if fmt == "ragmeter":
            yield q.model_dump_json(exclude_none=True)
        elif fmt == "nuggetizer":
            body = [{"text": n.text, "importance": n.importance} for n in q.nuggets]
            line = {"query": q.query or "", "qid": q.query_id, "nuggets": body}  # nuggetizer's key order
            yield json.dumps(line, ensure_ascii=False)
        else:
            for n in q.nuggets:
                yield "\t".join((q.query_id, n.id, n.importance, " ".join(n.text.split())))


def write_nuggets(nuggets: NuggetSet, path: str | Path, fmt: Format = "ragmeter") -> None:
    Path(path).write_text("".join(line + "\n" for line in nugget_lines(nuggets, fmt)), encoding="utf-8")


def read_assignments(path: str | Path, nuggets: NuggetSet | None = None) -> AssignmentTable:
    """An assignment file: TREC tab-separated lines, or nuggetizer's assignment JSONL (whose nuggets are
    matched to `nuggets` by text when given, else numbered by position). A line of nuggetizer's retrieval
    assignments (`docid`, no `run_id`) is keyed (docid, qid)."""
    source = str(path)
    table: AssignmentTable = {}
    json_lines = sniff(path) != "trec"
    for number, line in _lines(path):
        if json_lines:
            obj = _json(line, source, number)
            qid = str(obj.get("qid", ""))
            run_id = str(obj.get("run_id", obj.get("docid", "")))
            rows = obj.get("nuggets")
            if not qid or not isinstance(rows, list):
                raise InputError('needs "qid" and a "nuggets" list', source=source, line=number)
            if (run_id, qid) in table:
                raise InputError(f"run {run_id!r}, query {qid!r} is repeated", source=source, line=number)
            known = nuggets.get(qid) if nuggets is not None else None
            by_text = {n.text: n.id for n in known.nuggets} if known is not None else {}
            got: dict[str, str] = {}
            for i, n in enumerate(rows, 1):
                label = n.get("assignment") if isinstance(n, dict) else None
                text = str(n.get("text") if isinstance(n, dict) else "").strip()
                nid = by_text.get(text, str(i)) if by_text else str(i)
                got[nid] = _assignment(label, source, number)
            table[(run_id, qid)] = got
            continue
        parts = [p.strip() for p in line.split("\t")]
        if len(parts) != 4:
            raise InputError(
                f"expected 4 tab-separated fields (run_id, qid, nugget_id, assignment), got {len(parts)}",
                source=source,
                line=number,
            )
        run_id, qid, nid, label = parts
        table.setdefault((run_id, qid), {})[nid] = _assignment(label, source, number)
    return table


def _assignment(label: Any, source: str, number: int) -> str:
    value = label.strip().lower() if isinstance(label, str) else label
    if value == "failed":  # nuggetizer's mark of a batch whose reply it could not parse (scored as 0 there)
        raise InputError(
            "assignment 'failed': nuggetizer could not assign this nugget (its reply was unusable); "
            "assign it again or drop the line",
            source=source,
            line=number,
        )
    if value not in ASSIGNMENTS:
        raise InputError(
            f"assignment {label!r} is not one of {', '.join(ASSIGNMENTS)}", source=source, line=number
        )
    return str(value)


def write_assignments(table: AssignmentTable, path: str | Path) -> None:
    """TREC tab-separated assignment lines, in table order."""
    lines = [
        f"{run_id}\t{qid}\t{nid}\t{label}\n"
        for (run_id, qid), labels in table.items()
        for nid, label in labels.items()
    ]
    Path(path).write_text("".join(lines), encoding="utf-8")


__all__ = [
    "FORMATS",
    "AssignmentTable",
    "Provenance",
    "nugget_lines",
    "read_assignments",
    "read_nuggets",
    "sniff",
    "write_assignments",
    "write_nuggets",
]
