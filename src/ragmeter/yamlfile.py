"""YAML parsing with ragmeter's error style (the file and line in one message); PyYAML is the `config` extra.

Every failure is an InputError naming the source: bytes that are not UTF-8 (with the line and byte offset),
bad YAML, values PyYAML cannot construct (a 13th month, an integer of 5000 digits), non-finite floats
(``.nan``, ``.inf``: no setting of ours takes one) and self-referencing aliases.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from ragmeter.errors import InputError, MissingExtraError, decode_utf8

_BOM = "\ufeff"


def decode_text(data: bytes, *, source: str) -> str:
    """Decode a UTF-8 text file's bytes (a BOM is dropped); anything else is an InputError with its line."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise InputError("UTF-16 text: save the file as UTF-8", source=source, line=1)
    text = decode_utf8(data, source=source)
    return text[1:] if text.startswith(_BOM) else text


def read_text(path: str | Path, *, source: str | None = None) -> str:
    """Read a UTF-8 text file; a missing, unreadable or non-UTF-8 file is an InputError naming it."""
    where = source if source is not None else str(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", source=where) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a file", source=where) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=where) from None
    return decode_text(data, source=where)


@lru_cache(maxsize=1)
def _loader() -> Any:
    import yaml

    class Loader(yaml.SafeLoader):
        """SafeLoader that refuses non-finite floats, naming their line."""

        def construct_yaml_float(self, node: Any) -> float:
            value = super().construct_yaml_float(node)
            if not math.isfinite(value):
                raise yaml.constructor.ConstructorError(
                    None, None, f"{node.value!r} is not a finite number", node.start_mark
                )
            return value

    Loader.add_constructor("tag:yaml.org,2002:float", Loader.construct_yaml_float)
    return Loader


def _check_acyclic(value: Any, source: str) -> None:
    """Refuse a self-referencing structure (``a: &x [*x]``); shared aliases are fine and visited once."""
    done: set[int] = set()
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        node, leaving = stack.pop()
        if not isinstance(node, dict | list | set | tuple):
            continue
        key = id(node)
        if leaving:
            on_path.discard(key)
            done.add(key)
            continue
        if key in on_path:
            raise InputError("not valid YAML: an alias refers to the node that contains it", source=source)
        if key in done:
            continue
        on_path.add(key)
        stack.append((node, True))
        children = list(node.keys()) + list(node.values()) if isinstance(node, dict) else list(node)
        stack.extend((child, False) for child in children)


def parse_yaml(text: str | bytes, *, source: str, what: str) -> Any:
    """Parse YAML text (or a file's bytes); bad input is an InputError naming ``source`` and the line."""
    try:
        import yaml
    except ImportError:  # pragma: no cover - depends on the install
        raise MissingExtraError("config", what) from None
    if isinstance(text, bytes):
        text = decode_text(text, source=source)
    elif text.startswith(_BOM):
        text = text[1:]
    try:
        data = yaml.load(text, Loader=_loader())  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        position = getattr(exc, "position", None)  # ReaderError: unacceptable character
        if line is None and isinstance(position, int):
            line = text.count("\n", 0, position) + 1
        problem: object = getattr(exc, "problem", None) or exc
        if isinstance(exc, yaml.reader.ReaderError) and isinstance(exc.character, int):
            problem = f"character U+{exc.character:04X} is not allowed"
        raise InputError(f"not valid YAML: {_one_line(problem)}", source=source, line=line) from None
    except RecursionError:
        raise InputError("not valid YAML: nested too deeply", source=source) from None
    except (ValueError, TypeError, AttributeError, OverflowError, IndexError, KeyError) as exc:
        # values the constructors cannot build: 2001-13-01, !!timestamp x, a 5000-digit integer
        raise InputError(
            f"not valid YAML: a value cannot be read ({_one_line(exc)})", source=source
        ) from None
    _check_acyclic(data, source)
    return data


def _one_line(obj: object) -> str:
    text = " ".join(str(obj).split())
    text = "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)
    return text if len(text) <= 200 else text[:200] + "..."


def read_text_any(path: str | Path) -> str:
    """read_text, also for gzip files: one InputError naming the file for any unreadable input."""
    if Path(path).suffix == ".gz":
        from ragmeter.safety import read_bytes  # reads and gunzips, errors name the file

        return decode_text(read_bytes(path), source=str(path))
    return read_text(path)


def iter_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(line number, line) of a UTF-8 (optionally gzip) text file; decoding errors name file and line."""
    yield from enumerate(read_text_any(path).splitlines(), start=1)
