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
