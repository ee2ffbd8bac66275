"""What ragmeter stores, writes and prints must hold no secret and no live hostile text.

- Secrets: user info and key-like query parameters of URLs (`http://user:PASSWORD@host/v1?api_key=...`)
  are redacted where a spec enters a run's config; the real spec stays in this process's memory only,
  for the client that needs it (`remember` / `reveal`). Every writer scrubs once more: known secret values
  (API keys from the environment, passwords seen in specs) and URL credentials become `***`.
- CSV: a text cell that a spreadsheet would run as a formula gets a `'` prefix (OWASP); numbers stay
  numbers. `raw=True` writes values as they are.
- Terminal: control characters (ANSI/OSC escapes, screen clears, C1 controls, bidi overrides) in data are
  shown as visible escapes; rich markup in data is escaped.
- Paths: an output path is checked before a run starts and written atomically, without a `.tmp` left over
  (safefiles.py; its names are re-exported here).
"""

from __future__ import annotations

import base64
import logging
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from ragmeter.safefiles import check_output_path as check_output_path
from ragmeter.safefiles import describe_file_error as describe_file_error
from ragmeter.safefiles import read_bytes as read_bytes
from ragmeter.safefiles import write_text_atomic as write_text_atomic

REDACTED = "***"

# Query parameters whose value is a credential (compared lower-case, '-' read as '_').
SECRET_PARAMS = frozenset(
    {
        "key",
        "api_key",
        "apikey",
        "token",
        "access_token",
        "refresh_token",
        "id_token",
        "auth",
        "authorization",
        "secret",
        "client_secret",
        "password",
        "passwd",
        "pwd",
        "sig",
        "signature",
        "credential",
        "credentials",
        "session",
        "sessionid",
        "x_amz_signature",
        "x_amz_credential",
        "x_amz_security_token",
    }
)
_SECRET_SUFFIXES = ("_key", "_token", "_secret", "_password", "_signature", "apikey")
# Environment variables whose values must never be written (besides any *_API_KEY, *_TOKEN, ...).
SECRET_ENV = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "RAGMETER_LLM_API_KEY")
_SECRET_ENV_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_ACCESS_KEY")
# Shorter values are not masked in free text (they would mangle ordinary words); URLs are still redacted.
MIN_SECRET_LEN = 6

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>`]+")
_known: set[str] = set()
_real_specs: dict[str, str] = {}


def is_secret_param(name: str) -> bool:
    n = unquote(name).strip().lower().replace("-", "_")
    return n in SECRET_PARAMS or n.endswith(_SECRET_SUFFIXES)


# Words that make a `<words>_key` option name a credential (api_key, access_key, ...); other `_key` names
# name a field of the user's data (id_key, question_key, context_key) and are ordinary options.
_CREDENTIAL_WORDS = re.compile(
    r"(api|access|secret|private|auth|token|password|passwd|client|signing|session|encryption|master"
    r"|license|subscription|credential|account)",
    re.IGNORECASE,
)
_SECRET_OPTION = re.compile(r"(key|token|secret|password|passwd|auth|signature|credential)", re.IGNORECASE)


def is_secret_option(name: str) -> bool:
    """Whether a system option called `name` holds a credential (its value is never stored). A name
    ending in `_key` is one only when the words before it are credential words: `id_key` is not."""
    n = name.strip().lower().replace("-", "_")
    if n.endswith("_key") and not n.endswith(("api_key", "apikey")):
        return bool(_CREDENTIAL_WORDS.search(n[: -len("_key")]))
    return bool(_SECRET_OPTION.search(n))


def register_secret(value: str | None) -> None:
    """Mask `value` in everything this process writes from now on."""
    if value and len(value) >= MIN_SECRET_LEN:
        _known.add(value)
        decoded = unquote(value)
        if decoded != value and len(decoded) >= MIN_SECRET_LEN:
            _known.add(decoded)


def _redact_pairs(text: str) -> str:
    out = []
    for pair in re.split(r"([&;])", text):
        name, sep, value = pair.partition("=")
        if sep and value and is_secret_param(name):
            register_secret(value)
            pair = f"{name}={REDACTED}"
        out.append(pair)
    return "".join(out)


def redact_url(url: str) -> str:
    """`url` without credentials: user info becomes `***@`, key-like query/fragment values `***`."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # a bad port raises here
    except ValueError:  # not a URL we can parse: hide everything after the scheme's authority
        return re.sub(r"//[^/?#]*@", f"//{REDACTED}@", url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user, _, password = userinfo.partition(":")
        register_secret(password or user)
        if user and password:
            register_secret(base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode())
        netloc = f"{REDACTED}@{hostport}"
    query = _redact_pairs(parts.query) if parts.query else ""
    fragment = _redact_pairs(parts.fragment) if "=" in parts.fragment else parts.fragment
    if (netloc, query, fragment) == (parts.netloc, parts.query, parts.fragment):
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def _env_secrets() -> list[str]:
    return [
        value
        for name, value in os.environ.items()
        if (name in SECRET_ENV or name.upper().endswith(_SECRET_ENV_SUFFIXES))
        and len(value) >= MIN_SECRET_LEN
    ]


def known_secrets() -> list[str]:
    """The secret values to mask now, longest first: passwords seen in specs and keys in the environment."""
    return sorted({*_known, *_env_secrets()}, key=len, reverse=True)


def mask_secrets(text: str, secrets: list[str] | None = None) -> str:
    """Every known secret value (environment keys, passwords seen in specs) in `text` becomes `***`."""
    for secret in known_secrets() if secrets is None else secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def redact_text(text: str, secrets: list[str] | None = None) -> str:
    """Free text with the credentials of every URL in it redacted and every known secret masked."""
    if "://" in text:
        text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    return mask_secrets(text, secrets)


def redact_spec(spec: str | None) -> str | None:
    """A model or system spec (`openai-compatible:MODEL@URL`, `https://...`) without credentials. The real
    spec is kept in this process's memory so that `reveal` gives it back to the client that needs it."""
    if spec is None:
        return None
    public = redact_text(spec)
    if public != spec:
        _real_specs[public] = spec
    return public


def reveal(spec: str) -> str:
    """The real spec behind a redacted one, when this process redacted it (else `spec` unchanged)."""
    return _real_specs.get(spec, spec)


def strip_redacted(url: str) -> str:
    """A URL that was stored redacted, with the placeholders removed (no `***` sent as a password)."""
    url = url.replace(f"//{REDACTED}@", "//")
    return re.sub(rf"[?&;]?[^?&;#=]+={re.escape(REDACTED)}", "", url)


def redact_data(value: Any, secrets: list[str] | None = None) -> Any:
    """JSON-like data with `redact_text` applied to every string (keys included)."""
    if secrets is None:
        secrets = known_secrets()
    if isinstance(value, str):
        return redact_text(value, secrets)
    if isinstance(value, Mapping):
        return {redact_data(k, secrets): redact_data(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_data(v, secrets) for v in value]
    return value


def json_text(data: Any, *, indent: int | None = 2) -> str:
    """`data` (JSON-able, e.g. `model.model_dump(mode="json")`) as JSON text, secrets redacted."""
    import json

    return json.dumps(redact_data(data), indent=indent, ensure_ascii=False, default=str) + "\n"


# ---------------------------------------------------------------------------------------------- logs


class RedactingFilter(logging.Filter):
    """A handler filter: the formatted message of each record, with credentials redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: leave it to the handler to report
            return True
        record.msg, record.args = redact_text(message), None
        return True


HTTP_LOGGERS = ("httpx", "httpx2", "httpcore", "httpcore2", "openai", "anthropic", "urllib3", "aiohttp")


def guard_http_logs(names: Iterable[str] = HTTP_LOGGERS) -> None:
    """Put a RedactingFilter on the HTTP libraries' own loggers (httpx logs every request URL, user info
    included), once: called when a client is made from a URL that carries credentials."""
    known = [
        n for n in logging.Logger.manager.loggerDict if n.split(".")[0].startswith(("httpx", "httpcore"))
    ]
    for name in {*names, *known}:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactingFilter) for f in logger.filters):
            logger.addFilter(RedactingFilter())


# ---------------------------------------------------------------------------------------------- CSV

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def csv_cell(value: Any, *, raw: bool = False, secrets: list[str] | None = None) -> Any:
    """One CSV cell: secrets masked, and text a spreadsheet would evaluate prefixed with `'` (unless
    raw). Numbers, and strings that are valid numbers (our `-0.5`), are left as they are."""
    if not isinstance(value, str):
        return value
    value = redact_text(value, secrets)
    if raw or not value.startswith(_FORMULA_START) or _is_number(value):
        return value
    return "'" + value


def csv_row(cells: Iterable[Any], *, raw: bool = False) -> list[Any]:
    """A CSV row, each cell through `csv_cell`."""
    secrets = known_secrets()
    return [csv_cell(c, raw=raw, secrets=secrets) for c in cells]


def csv_dict(row: Mapping[str, Any], *, raw: bool = False) -> dict[str, Any]:
    """A csv.DictWriter row, each value through `csv_cell`."""
    secrets = known_secrets()
    return {k: csv_cell(v, raw=raw, secrets=secrets) for k, v in row.items()}


# ---------------------------------------------------------------------------------------------- terminal

# C0 controls but tab and newline, DEL, C1 controls, and the bidi overrides/isolates that reorder text.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape_char(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: Any) -> str:
    """`text` safe for a terminal: every control character shown as a visible escape (`\\x1b`)."""
    text = text if isinstance(text, str) else str(text)
    return _CONTROL.sub(_escape_char, redact_text(text))


def escape_controls(text: str) -> str:
    """Only the control-character part of `printable` (no secret masking): cheap, for every segment."""
    return _CONTROL.sub(_escape_char, text)


def safe_console(**kwargs: Any) -> Any:
    """A rich Console that writes every text segment through `escape_controls`: whatever a command prints,
    a control sequence from data reaches the terminal as visible text (rich's own styling still works).
    Rich markup in data must still be escaped where it is put into a table or print: `console_text`."""
    global _safe_console_class
    if _safe_console_class is None:
        from rich.console import Console
        from rich.segment import Segment

        class SafeConsole(Console):
            def _render_buffer(self, buffer: Iterable[Segment]) -> str:
                return super()._render_buffer(
                    s if s.control else Segment(escape_controls(s.text), s.style) for s in buffer
                )

        _safe_console_class = SafeConsole
    return _safe_console_class(**kwargs)


_safe_console_class: Any = None


def console_text(text: Any) -> str:
    """`printable(text)` with rich markup escaped: for strings that rich renders (tables, print)."""
    from rich.markup import escape

    return escape(printable(text))
