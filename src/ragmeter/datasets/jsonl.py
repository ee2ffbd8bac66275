"""Reading JSON text and JSONL files that a person wrote: NaN, infinite numbers, lone surrogates, bytes that
are not UTF-8 and nesting too deep are refused with the line and the reason (the native format, BEIR and
citation files read their lines here)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ragmeter.errors import InputError


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not a finite number")
    return value


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a finite number")


def load_json_text(text: str) -> Any:
    """json.loads that refuses NaN, Infinity and numbers that overflow to infinity (raises ValueError)."""
    return json.loads(text, parse_float=_finite_float, parse_constant=_reject_constant)


_SURROGATE = re.compile("[\ud800-\udfff]")


def unencodable_field(value: Any, field: str = "") -> str | None:
    """The first field (`question`, `metadata.tags[2]`) of a parsed JSON value whose text holds a lone
    surrogate (a `\\ud800` escape that JSON allows and UTF-8 cannot encode), as `field 'NAME': why`; None."""
    if isinstance(value, str):
        found = _SURROGATE.search(value)
        if found is None:
            return None
        where = f"field '{field}'" if field else "the record"
        return f"{where}: {found.group()!r} is a lone surrogate, which UTF-8 cannot encode"
    if isinstance(value, dict):
        for key, item in value.items():
            name = f"{field}.{key}" if field else str(key)
            why = unencodable_field(key, name) or unencodable_field(item, name)
            if why is not None:
                return why
    if isinstance(value, list):
        for i, item in enumerate(value):
            why = unencodable_field(item, f"{field}[{i}]")
            if why is not None:
                return why
    return None


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """Yield (line number, parsed value) for each non-blank line; a bad line raises InputError (bytes that
    are not UTF-8, bad JSON, NaN or infinite numbers, nesting too deep)."""
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=str(path)) from None
    offset = 0
    with fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at byte offset {offset + exc.start})",
                    source=str(path),
                    line=lineno,
                ) from None
            offset += len(raw)
            if lineno == 1 and line.startswith("\ufeff"):
                line = line[1:]
            if not line.strip():
                continue
            try:
                value = load_json_text(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"not valid JSON ({exc.msg})", source=str(path), line=lineno) from None
            except ValueError as exc:
                raise InputError(f"not valid JSON ({exc})", source=str(path), line=lineno) from None
            except RecursionError:
                raise InputError(
                    "not valid JSON (nested too deeply)", source=str(path), line=lineno
                ) from None
            why = unencodable_field(value)
            if why is not None:
                raise InputError(why, source=str(path), line=lineno)
            yield lineno, value
