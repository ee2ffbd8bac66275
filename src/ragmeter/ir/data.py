"""Qrels and Run, held columnar.

Both are a query table plus flat row columns (no dict of dicts):

* ``query_ids``: the queries, in order of first appearance;
* ``qoff`` (int64, nq + 1): rows of query ``i`` are ``qoff[i]:qoff[i+1]``; ``query_index`` gives the
  query of every row;
* ``doc_blob`` / ``doc_off``: doc ids as one bytes buffer plus int64 offsets (an Arrow-style string
  column), so 10M doc ids are two arrays, not 10M Python strings; ``doc_codes()`` interns them
  into integer codes when a caller wants them;
* ``grades`` (int32, qrels) or ``scores`` (float64, run).

Run rows are kept in trec_eval's rank order inside each query: score descending compared as float32,
ties by doc id descending byte-wise. The file's rank column and row order are ignored. A doc id
repeated within one query is an error unless ``keep_first=True``.

Every file reader fails only with ``InputError`` naming the file and, where known, the line: a file
must be UTF-8 text (a leading BOM is dropped), hold at least one row, and every score must be finite.
"""

from __future__ import annotations

import json
import math
import mmap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from itertools import pairwise
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np
import numpy.typing as npt

from ragmeter.errors import InputError
from ragmeter.ir import _native
from ragmeter.ir._bytes import (
    _is_tsv_header,
    _parse_error,
    _parse_value,
    _reject_constant,
    _show,
    mapped_text,
    read_bytes,
    text_bytes,
)

T = TypeVar("T", bound="_Table")

_INT32_MAX = 2147483647


@dataclass(frozen=True, eq=False)
class _Table:
    query_ids: list[str]
    qoff: npt.NDArray[np.int64]
    doc_blob: bytes
    doc_off: npt.NDArray[np.int64]
    values: npt.NDArray[Any]
    _is_run: ClassVar[bool] = False

    @cached_property
    def _qpos(self) -> dict[str, int]:
        """Query id -> index, built on first use (evaluating a run against qrels of the same queries in the
        same order needs none)."""
        return {q: i for i, q in enumerate(self.query_ids)}

    # ----- construction -------------------------------------------------------------------
    @classmethod
    def _from_native(cls: type[T], query_ids: list[str], parts: tuple[Any, ...]) -> T:
        qoff, blob, doff, values = parts
        return cls(query_ids, qoff, blob, doff, values)

    @classmethod
    def from_trec(cls: type[T], path: str | Path, *, keep_first: bool = False) -> T:
        """Read a TREC file (whitespace separated; gzip accepted)."""
        with mapped_text(path) as data:
            return cls._trec(data, source=str(path), keep_first=keep_first, path=path)

    @classmethod
    def from_trec_bytes(cls: type[T], data: bytes, *, source: str = "<bytes>", keep_first: bool = False) -> T:
        """Parse the contents of a TREC file (UTF-8; a BOM is dropped)."""
        return cls._trec(text_bytes(data, source=source), source=source, keep_first=keep_first)

    @classmethod
    def _trec(
        cls: type[T], data: bytes | mmap.mmap, *, source: str, keep_first: bool, path: str | Path = ""
    ) -> T:
        try:
            # a file mapping (unchecked) is checked by the parser as it counts lines, its pages dropped behind
            parsed = _native.parse_trec(data, cls._is_run, keep_first, isinstance(data, mmap.mmap))
        except ValueError as exc:
            raise _parse_error(exc, bytes(data), source) from None
        if parsed is None:  # not plain ASCII text: the full checks (gzip, BOM, UTF-8, NUL bytes)
            return cls._trec(
                text_bytes(read_bytes(path), source=source), source=source, keep_first=keep_first
            )
        query_ids, parts = parsed
        table = cls._from_native(query_ids, parts)
        return cls._check_not_empty(table, bytes(data), source) if len(table) == 0 else table

    @classmethod
    def _check_not_empty(cls: type[T], table: T, data: bytes, source: str) -> T:
        if len(table) == 0:
            what = "retrieved document" if cls._is_run else "judgment"
            if not data.strip():
                raise InputError(f"the file is empty: no {what}s", source=source)
            raise InputError(f"no {what} in the file", source=source)
        return table

    @classmethod
    def from_columns(
        cls: type[T],
        query_ids: Iterable[str],
        doc_ids: Iterable[str],
        values: Iterable[float] | npt.ArrayLike,
        *,
        keep_first: bool = False,
        source: str = "<columns>",
    ) -> T:
        """Build from three parallel columns (one entry per judged or retrieved doc)."""
        qcol = [str(q) for q in query_ids]
        dcol = [str(d).encode("utf-8", "surrogateescape") for d in doc_ids]
        vals = np.asarray(values, dtype=np.float64).reshape(-1)
        if not (len(qcol) == len(dcol) == len(vals)):
            raise InputError("query, doc and value columns differ in length", source=source)
        finite = np.isfinite(vals)
        if not finite.all():
            row = int(np.flatnonzero(~finite)[0])
            raise InputError(
                f"query {_show(qcol[row])!r}, doc {_show(dcol[row])!r}: value {vals[row]!r} is not a finite number",
                source=source,
            )
        if not cls._is_run:
            bad = (vals != np.floor(vals)) | (np.abs(vals) > _INT32_MAX)
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise InputError(
                    f"query {_show(qcol[row])!r}, doc {_show(dcol[row])!r}: grade {vals[row]!r} is not "
                    "an integer (32-bit)",
                    source=source,
                )
        order: dict[str, int] = {}
        qidx = np.fromiter((order.setdefault(q, len(order)) for q in qcol), dtype=np.int32, count=len(qcol))
        lens = np.fromiter((len(d) for d in dcol), dtype=np.int64, count=len(dcol))
        doff = np.zeros(len(dcol) + 1, dtype=np.int64)
        np.cumsum(lens, out=doff[1:])
        try:
            parts = _native.canonicalize(
                qidx, b"".join(dcol), doff, np.ascontiguousarray(vals), len(order), cls._is_run, keep_first
            )
        except ValueError as exc:
            kind, a, _b, detail = exc.args
            if kind == "duplicate":
                raise InputError(
                    f"document '{_show(detail)}' appears twice for query '{_show(qcol[a])}'; "
                    "pass keep_first to keep the first",
                    source=source,
                ) from None
            raise
        return cls._from_native(list(order), parts)

    @classmethod
    def from_dict(cls: type[T], data: Mapping[str, Mapping[str, float]], *, source: str = "<dict>") -> T:
        """Build from ``{query_id: {doc_id: score_or_grade}}`` (queries with no docs are kept)."""
        qcol: list[str] = []
        dcol: list[str] = []
        vcol: list[float] = []
        empty: list[str] = []
        for qid, docs in data.items():
            if not isinstance(docs, Mapping):
                raise InputError(f"query {qid!r}: expected an object of doc id -> value", source=source)
            if not docs:
                empty.append(str(qid))
            for doc, value in docs.items():
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise InputError(
                        f"query {qid!r}, doc {doc!r}: value {value!r} is not a number", source=source
                    )
                qcol.append(str(qid))
                dcol.append(str(doc))
                vcol.append(float(value))
        table = cls.from_columns(qcol, dcol, vcol, source=source)
        return table._with_empty_queries(empty) if empty else table

    def _with_empty_queries(self: T, names: list[str]) -> T:
        extra = [q for q in names if q not in self._qpos]
        if not extra:
            return self
        qoff = np.concatenate([self.qoff, np.full(len(extra), self.qoff[-1], dtype=np.int64)])
        return type(self)(self.query_ids + extra, qoff, self.doc_blob, self.doc_off, self.values)

    @classmethod
    def from_json(cls: type[T], path: str | Path) -> T:
        """Read ``{query_id: {doc_id: value}}`` JSON."""
        return cls._from_json_bytes(read_bytes(path), source=str(path))

    @classmethod
    def _from_json_bytes(cls: type[T], data: bytes, *, source: str) -> T:
        data = text_bytes(data, source=source)
        try:
            obj = json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid JSON: {exc.msg}", source=source, line=exc.lineno) from None
        except ValueError as exc:  # NaN/Infinity, integers too long to convert
            raise InputError(f"invalid JSON: {_show(str(exc), 200)}", source=source) from None
        except RecursionError:
            raise InputError("invalid JSON: nested too deeply", source=source) from None
        if not isinstance(obj, dict):
            raise InputError("expected a JSON object {query_id: {doc_id: value}}", source=source)
        for qid, docs in obj.items():
            if not qid.strip() or (isinstance(docs, dict) and any(not d.strip() for d in docs)):
                raise InputError(f"query {_show(qid)!r}: empty query or doc id", source=source)
        return cls._check_not_empty(cls.from_dict(obj, source=source), data, source)

    @classmethod
    def from_dataframe(
        cls: type[T],
        df: Any,
        *,
        query_col: str | None = None,
        doc_col: str | None = None,
        value_col: str | None = None,
    ) -> T:
        """Build from a pandas DataFrame (columns found by common names: query_id/q_id/qid, doc_id/docid, ...)."""
        cols = [str(c) for c in df.columns]

        def pick(given: str | None, candidates: tuple[str, ...], what: str) -> str:
            if given is not None:
                if given not in cols:
                    raise InputError(f"no column {given!r}", source="DataFrame")
                return given
            for c in candidates:
                if c in cols:
                    return c
            raise InputError(f"no {what} column (tried {', '.join(candidates)})", source="DataFrame")

        q = pick(query_col, ("query_id", "q_id", "qid", "query-id", "query"), "query id")
        d = pick(doc_col, ("doc_id", "docid", "corpus-id", "docno", "doc"), "doc id")
        value_names = ("score", "sim") if cls._is_run else ("grade", "relevance", "score", "rel", "label")
        v = pick(value_col, value_names, "value")
        return cls.from_columns(df[q].astype(str), df[d].astype(str), df[v].to_numpy(dtype=np.float64))

    @classmethod
    def read(cls: type[T], path: str | Path, *, keep_first: bool = False) -> T:
        """Read by format: JSON object, BEIR TSV (with header), else TREC."""
        source = str(path)
        with mapped_text(path) as data:
            head = data[:4096]
            if not head.isascii() or b"\x00" in head:  # gzip, a BOM...: the format is read from checked text
                data = text_bytes(read_bytes(path), source=source)
                head = data[:4096]
            head = head.lstrip()
            if head[:1] == b"{":
                return cls._from_json_bytes(bytes(data), source=source)
            if _is_tsv_header(head.split(b"\n", 1)[0]):
                return cls._from_tsv_bytes(bytes(data), source=source, keep_first=keep_first)
            return cls._trec(data, source=source, keep_first=keep_first, path=path)

    @classmethod
    def from_tsv(cls: type[T], path: str | Path, *, keep_first: bool = False) -> T:
        """BEIR-style TSV with a header: query-id, corpus-id, score (value in the last column)."""
        return cls._from_tsv_bytes(read_bytes(path), source=str(path), keep_first=keep_first)

    @classmethod
    def _from_tsv_bytes(cls: type[T], data: bytes, *, source: str, keep_first: bool = False) -> T:
        data = text_bytes(data, source=source)
        # split on \n only (str.splitlines would also split on \x1c, \x85, \u2028 and shift line numbers)
        lines = data.decode("utf-8").split("\n")
        qcol: list[str] = []
        dcol: list[str] = []
        vcol: list[float] = []
        for lineno, line in enumerate(lines[1:], start=2):
            if not line.strip():
                continue
            parts = line.split("\t")
            if len(parts) != 3:
                raise InputError(
                    f"expected 3 tab-separated columns, found {len(parts)}", source=source, line=lineno
                )
            qid, doc, raw = parts[0].strip(), parts[1].strip(), parts[2].strip()
            if not qid or not doc:
                raise InputError("empty query or doc id", source=source, line=lineno)
            value = _parse_value(raw)
            if value is None:
                raise InputError(f"value '{_show(raw)}' is not a number", source=source, line=lineno)
            if not math.isfinite(value):
                raise InputError(f"value '{_show(raw)}' is not a finite number", source=source, line=lineno)
            if not cls._is_run and (value != math.floor(value) or abs(value) > _INT32_MAX):
                raise InputError(f"grade '{_show(raw)}' is not an integer", source=source, line=lineno)
            qcol.append(qid)
            dcol.append(doc)
            vcol.append(value)
        table = cls.from_columns(qcol, dcol, vcol, keep_first=keep_first, source=source)
        return cls._check_not_empty(table, b"\n".join(data.split(b"\n")[1:]), source)

    # ----- access ---------------------------------------------------------------------------
    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    def __len__(self) -> int:
        return int(self.qoff[-1])

    @property
    def query_index(self) -> npt.NDArray[np.int32]:
        """Query index of every row."""
        return np.repeat(np.arange(self.n_queries, dtype=np.int32), np.diff(self.qoff))

    def doc_ids(self, start: int = 0, stop: int | None = None) -> list[str]:
        """Doc ids of rows start..stop as strings (decodes; for display and export, not hot paths)."""
        stop = len(self) if stop is None else stop
        off = self.doc_off[start : stop + 1].tolist()
        blob = self.doc_blob
        return [blob[a:b].decode("utf-8", "surrogateescape") for a, b in pairwise(off)]

    def doc_codes(self) -> tuple[npt.NDArray[np.int64], list[str]]:
        """Integer code of every row's doc id and the vocabulary (sorted) the codes index."""
        vocab, codes = np.unique(np.array(self.doc_ids(), dtype=object), return_inverse=True)
        return codes.astype(np.int64), [str(v) for v in vocab]

    def query(self, query_id: str) -> list[tuple[str, float]]:
        """(doc id, value) pairs of one query, in stored order (rank order for a run)."""
        i = self._qpos.get(query_id)
        if i is None:
            return []
        lo, hi = int(self.qoff[i]), int(self.qoff[i + 1])
        return list(zip(self.doc_ids(lo, hi), self.values[lo:hi].tolist(), strict=True))

    def __contains__(self, query_id: object) -> bool:
        return query_id in self._qpos

    def position(self, query_id: str) -> int | None:
        return self._qpos.get(query_id)

    def to_dict(self) -> dict[str, dict[str, float]]:
        docs = self.doc_ids()
        vals = self.values.tolist()
        off = self.qoff.tolist()
        return {
            q: dict(zip(docs[off[i] : off[i + 1]], vals[off[i] : off[i + 1]], strict=True))
            for i, q in enumerate(self.query_ids)
        }

    def to_json(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict()), encoding="utf-8")


class Qrels(_Table):
    """Relevance judgments: grade per (query, doc). Negative grades mean unjudged."""

    _is_run: ClassVar[bool] = False

    @property
    def grades(self) -> npt.NDArray[np.int32]:
        return self.values

    def to_trec(self, path: str | Path) -> None:
        docs = self.doc_ids()
        qidx = self.query_index.tolist()
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            fh.writelines(
                f"{self.query_ids[q]} 0 {d} {g}\n"
                for q, d, g in zip(qidx, docs, self.values.tolist(), strict=True)
            )


class Run(_Table):
    """Retrieved docs with scores, held in trec_eval's rank order inside each query."""

    _is_run: ClassVar[bool] = True

    @property
    def scores(self) -> npt.NDArray[np.float64]:
        return self.values

    def ranks(self) -> npt.NDArray[np.int64]:
        """1-based rank of every row inside its query."""
        return np.arange(len(self), dtype=np.int64) - np.repeat(self.qoff[:-1], np.diff(self.qoff)) + 1

    def to_trec(self, path: str | Path, *, tag: str = "ragmeter") -> None:
        docs = self.doc_ids()
        qidx = self.query_index.tolist()
        ranks = self.ranks().tolist()
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            fh.writelines(
                f"{self.query_ids[q]} Q0 {d} {r} {s!r} {tag}\n"
                for q, d, r, s in zip(qidx, docs, ranks, self.values.tolist(), strict=True)
            )
