"""Errors that the CLI turns into one clear line and exit code 2 (never a traceback)."""

from __future__ import annotations


class RagmeterError(Exception):
    """Base class of every error ragmeter raises on purpose."""


class InputError(RagmeterError, ValueError):
    """Bad user input: names the source (file, field) and, where known, the line."""

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None) -> None:
        self.source = source
        self.line = line
        self.reason = message
        where = ""
        if source is not None:
            where = f"{source}:{line}: " if line is not None else f"{source}: "
        super().__init__(f"{where}{message}")


class MissingExtraError(RagmeterError, ImportError):
    """An optional dependency is not installed; names the extra that provides it."""

    def __init__(self, extra: str, what: str) -> None:
        super().__init__(
            f"{what} needs the optional extra '{extra}': pip install 'ragmeter[{extra}]'"
            + (" (install torch==2.13.0 first)" if extra == "semantic" else "")
        )
        self.extra = extra


def decode_utf8(data: bytes, *, source: str, shift: int = 0) -> str:
    """`data` decoded as UTF-8, or an InputError naming the first bad byte, its line and byte offset (`shift`:
    bytes already dropped before `data`, such as a BOM). One wording for every text file we read."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at byte offset {exc.start + shift})",
            source=source,
            line=data.count(b"\n", 0, exc.start) + 1,
        ) from None
