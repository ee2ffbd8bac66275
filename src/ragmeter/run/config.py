"""Run configuration files: an EvalConfig from YAML or TOML, with CLI overrides on top."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ragmeter.errors import InputError
from ragmeter.models import EvalConfig


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> EvalConfig:
    """An EvalConfig from a YAML or TOML file, then `overrides` (CLI flags, None = not given) on top.
    A bad field is an InputError naming the file and the field (`c.yaml: field 'retrieval_top_k': ...`)."""
    data: dict[str, Any] = {}
    source = str(path) if path is not None else "config"
    if path is not None:
        data = _read_config_file(Path(path))
    for key, value in (overrides or {}).items():
        if value is not None:
            data[key] = value
    try:
        return EvalConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "config"
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise InputError(f"field {loc!r}: {msg}", source=source) from None


def _read_config_file(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise InputError("no such config file", source=str(path))
    from ragmeter.yamlfile import read_text

    text = read_text(path)  # a non-UTF-8 or binary file is an InputError naming file and line
    suffix = path.suffix.lower()
    if suffix == ".toml":
        import tomllib

        try:
            data: Any = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"not valid TOML: {exc}", source=str(path)) from None
    elif suffix in (".yaml", ".yml"):
        from ragmeter.yamlfile import parse_yaml

        data = parse_yaml(text, source=str(path), what="a YAML config file")
    else:
        raise InputError("a config file must end in .yaml, .yml or .toml", source=str(path))
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError("a config file must hold a mapping of EvalConfig fields", source=str(path))
    # A [ragmeter] / ragmeter: section is accepted as well as top-level keys.
    inner = data.get("ragmeter")
    return dict(inner) if isinstance(inner, dict) and len(data) == 1 else dict(data)
