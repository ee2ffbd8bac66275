"""Log levels of ragmeter's LLM work, for `-v/--log-level`.

Loggers: `ragmeter.llm` (one DEBUG line per call: model, metric, query, tokens, latency; the full
prompt and reply at TRACE) and `ragmeter.judges` (one DEBUG line per judgment: metric, model, value or
error, tokens, latency; each parsed reply at TRACE). Nothing logs an API key or a request header.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

from ragmeter.errors import InputError
from ragmeter.safety import RedactingFilter

# A custom level below DEBUG: full prompts and replies.
TRACE = 5
logging.addLevelName(TRACE, "TRACE")

LEVELS = {
    "TRACE": TRACE,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARNING": logging.WARNING,
    "ERROR": logging.ERROR,
}
_HANDLER_NAME = "ragmeter-stderr"


def parse_level(value: str | int, *, source: str = "--log-level") -> int:
    """A level name (trace, debug, info, warning, error) or number; anything else is an InputError."""
    if isinstance(value, int):
        return value
    name = value.strip().upper()
    if name in LEVELS:
        return LEVELS[name]
    if name.isdigit():
        return int(name)
    raise InputError(
        f"unknown log level {value!r}; known: {', '.join(n.lower() for n in LEVELS)}", source=source
    )


def level_for_verbosity(count: int) -> int:
    """-v -> DEBUG, -vv (or more) -> TRACE, none -> WARNING."""
    if count <= 0:
        return logging.WARNING
    return logging.DEBUG if count == 1 else TRACE


def configure_logging(level: str | int, stream: TextIO | None = None) -> None:
    """Send ragmeter's records at `level` and above to `stream` (stderr), once: calling it again
    replaces the handler it added before instead of adding a second one."""
    number = parse_level(level)
    root = logging.getLogger("ragmeter")
    for handler in list(root.handlers):
        if handler.get_name() == _HANDLER_NAME:
            root.removeHandler(handler)
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.addFilter(RedactingFilter())  # URL credentials and known secrets never reach the log
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(number)
