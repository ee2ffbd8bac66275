"""YAML parsing with ragmeter's error style (the file and line in one message); PyYAML is the `config` extra."""

from __future__ import annotations

from typing import Any

from ragmeter.errors import InputError, MissingExtraError


def parse_yaml(text: str, *, source: str, what: str) -> Any:
    """Parse YAML text; bad YAML is an InputError naming ``source`` and the line."""
    try:
        import yaml
    except ImportError:  # pragma: no cover - depends on the install
        raise MissingExtraError("config", what) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise InputError(
            f"not valid YAML: {getattr(exc, 'problem', exc)}", source=source, line=line
        ) from None
