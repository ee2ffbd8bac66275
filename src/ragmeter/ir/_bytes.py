"""Raw bytes of qrels and run files: reading (gzip transparently), the text checks every reader applies
(UTF-8, BOM dropped, no binary data), value parsing and the quoting of file content in error messages."""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ragmeter.errors import InputError, decode_utf8
from ragmeter.ir import _native
from ragmeter.safety import read_bytes as read_bytes  # one reader for every input file (yamlfile too)

KERNEL_VERSION = 4  # of the C kernel (_kernel/native.h): in-place parser, text checked while counting lines
if (
    getattr(_native, "KERNEL_VERSION", 0) != KERNEL_VERSION
):  # a build older than its source gives wrong values
    raise ImportError(
        f"ragmeter.ir._native ({_native.__file__}) is older than its source: rebuild it with "
        "`python setup.py build_ext --inplace` from the checkout"
    )

_BOM = b"\xef\xbb\xbf"


def _escape(text: str) -> str:
    """Escape control characters of file content quoted in a message (no raw bytes reach a terminal)."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


def _show(raw: bytes | str, limit: int = 60) -> str:
    text = raw.decode("utf-8", "backslashreplace") if isinstance(raw, bytes) else raw
    text = _escape(text)
    return text if len(text) <= limit else text[:limit] + "..."


def text_bytes(data: bytes, *, source: str) -> bytes:
    """The bytes of a UTF-8 text file, its BOM dropped; binary or non-UTF-8 data is an InputError."""
    shift = 0
    if data.startswith(_BOM):
        data, shift = data[3:], 3
    elif data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise InputError("UTF-16 text: save the file as UTF-8", source=source, line=1)
    nul = data.find(b"\x00")
    if nul >= 0:
        raise InputError(
            f"binary data (a NUL byte at byte offset {nul + shift}), expected text",
            source=source,
            line=data.count(b"\n", 0, nul) + 1,
        )
    if not data.isascii():
        decode_utf8(data, source=source, shift=shift)
    return data


@contextmanager
def mapped_text(path: str | Path) -> Iterator[bytes | mmap.mmap]:
    """The file mapped from the page cache, unchecked, or, when it cannot be mapped, its checked text (as
    ``text_bytes(read_bytes(path))``). A mapping is valid only inside the ``with`` block; whoever reads it
    checks it: the TREC parser does while it counts lines (and answers None when the text is not plain
    ASCII), the other readers call ``text_bytes`` on it."""
    mapped = _map(path)
    if mapped is None:
        yield text_bytes(read_bytes(path), source=str(path))
        return
    try:
        yield mapped
    finally:
        mapped.close()


def _map(path: str | Path) -> mmap.mmap | None:
    try:
        with open(path, "rb") as fh:
            return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):  # missing, a directory, empty: read_bytes says which
        return None


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a finite number")


def _parse_value(text: str) -> float | None:
    """A TSV value as trec_eval's reader takes a number: decimal or exponent notation only (no "1_0")."""
    if not text or "_" in text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _is_tsv_header(first: bytes) -> bool:
    """A BEIR TSV starts with a 3-column header whose last field is not a number (query-id, corpus-id, score)."""
    fields = first.rstrip(b"\r").split(b"\t")
    if len(fields) != 3:
        return False
    try:
        float(fields[2])
    except ValueError:
        return True
    return False


def _line_of_row(data: bytes, row: int) -> int:
    """1-based line number of the row-th non-blank line (error path only)."""
    seen = -1
    for lineno, line in enumerate(data.split(b"\n"), start=1):
        if line.strip():
            seen += 1
            if seen == row:
                return lineno
    return 0


def _parse_error(exc: ValueError, data: bytes, source: str) -> InputError:
    """The parser's ValueError as one InputError naming the file and line (the lines are read from data)."""
    if len(exc.args) != 4:  # not one of the parser's own errors: still one line naming the file
        return InputError(f"cannot parse: {_show(str(exc), 200)}", source=source)
    kind, a, b, detail = exc.args
    if kind == "duplicate":
        return InputError(
            f"document '{_show(detail)}' appears twice in one query (first at line "
            f"{_line_of_row(data, b)}); pass keep_first to keep the first",
            source=source,
            line=_line_of_row(data, a),
        )
    return InputError(_show(detail, 300), source=source, line=a)
