"""Run settings from the command line: flags for the common ones, `--set KEY=VALUE` for every other
EvalConfig field (and `pipeline.OPTION=VALUE` for the built-in pipeline), `-v/--log-level`.

Precedence: the config file, then `--set`, then the named flags.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ragmeter.errors import InputError

if TYPE_CHECKING:  # pydantic is imported by the commands that need it, not by `ragmeter eval`
    from ragmeter.models import EvalConfig

F = TypeVar("F", bound=Callable[..., Any])

PIPELINE_PREFIX = "pipeline."


def _set_log_level(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    if not value:  # not given: nothing to import (ragmeter.llm is not light)
        return
    from ragmeter.llm.logs import configure_logging, level_for_verbosity

    configure_logging(level_for_verbosity(int(value)) if param.name == "verbose" else value)


def log_options(fn: F) -> F:
    """`-v` (DEBUG: one line per judge/LLM call), `-vv` or `--log-level trace` (prompts and replies), on stderr."""
    fn = click.option(
        "--log-level",
        metavar="LEVEL",
        expose_value=False,
        callback=_set_log_level,
        help="trace, debug, info, warning or error: ragmeter's logs on stderr (debug: each judge call; "
        "trace: prompts and replies).",
    )(fn)
    return click.option(
        "-v",
        "--verbose",
        count=True,
        expose_value=False,
        callback=_set_log_level,
        help="-v: --log-level debug; -vv: --log-level trace.",
    )(fn)


@dataclass
class RunSettings:
    """What the settings flags asked for (None: not given)."""

    sets: dict[str, Any] = field(default_factory=dict)  # EvalConfig fields from --set
    extra: dict[str, Any] = field(default_factory=dict)  # the user's own config.extra entries (--set extra.K)
    pipeline: dict[str, Any] = field(default_factory=dict)  # build_system options (--reranker, ...)
    judge: dict[str, Any] = field(default_factory=dict)  # judge client options (timeout, retries, budget)
    flags: dict[str, str] = field(default_factory=dict)  # pipeline option -> the flag that set it
    cache: bool | None = None

    @classmethod
    def from_params(cls, params: Mapping[str, Any], judge: Mapping[str, Any]) -> RunSettings:
        """The settings flags of `settings_options` as click parsed them, checked; `judge`: the judge
        client's options, checked by the judging group."""
        flags = (
            "context_k",
            "cache",
            "reranker",
            "embedding",
            "embedding_backend",
            "embedding_precision",
            "disable",
        )
        out = parse_settings(params["settings"], **{name: params[name] for name in flags})
        out.judge = dict(judge)
        return out


def settings_options(fn: F) -> F:
    """The settings flags of `ragmeter run` (decorator); the judge client's flags are in its judging group."""
    options = [
        click.option(
            "--set",
            "settings",
            multiple=True,
            metavar="KEY=VALUE",
            help="Any EvalConfig field (`ragmeter run --set limit=5`), extra.KEY, or pipeline.OPTION for the "
            "built-in pipeline; VALUE is YAML (5, true, [1, 3], {bm25: 0.4}). Repeatable.",
        ),
        click.option(
            "--context-k", type=int, help="Top retrieved texts the generator and judges get (default 5)."
        ),
        click.option(
            "--cache/--no-cache", default=None, help="Cache LLM replies in .ragmeter/llm-cache.sqlite."
        ),
        click.option(
            "--reranker", metavar="MODEL", help="Built-in pipeline: a cross-encoder reranker model."
        ),
        click.option(
            "--embedding", metavar="MODEL", help="Built-in pipeline: the sentence-transformers model."
        ),
        click.option(
            "--embedding-backend",
            type=click.Choice(["torch", "onnx"]),
            help="Built-in pipeline: encode with sentence-transformers (torch; the default) or MiniLM on ONNX "
            "Runtime (extra ragmeter[onnx]). Recorded with the run.",
        ),
        click.option(
            "--embedding-precision",
            metavar="P",
            help="Built-in pipeline: torch fp32 (default) or bf16 (fast on CPUs with bf16 instructions); onnx "
            "int8-block64 (default) or fp32. Recorded with the run.",
        ),
        click.option(
            "--disable",
            multiple=True,
            metavar="STAGE",
            help="Built-in pipeline: switch a stage off (chunking, bm25, dense, rerank, generation). Repeatable.",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _yaml_value(text: str, key: str) -> Any:
    from ragmeter.yamlfile import parse_yaml

    return parse_yaml(text, source=f"--set {key}", what="a --set value")


def parse_settings(
    items: Iterable[str],
    *,
    context_k: int | None = None,
    cache: bool | None = None,
    reranker: str | None = None,
    embedding: str | None = None,
    embedding_backend: str | None = None,
    embedding_precision: str | None = None,
    disable: Iterable[str] = (),
    judge_timeout: float | None = None,
    judge_retries: int | None = None,
    judge_budget: int | None = None,
) -> RunSettings:
    """Check every `--set` and settings flag; an unknown key or a bad value is an InputError naming it."""
    from ragmeter.models import EvalConfig

    out = RunSettings(cache=cache)
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InputError(f"expected KEY=VALUE, got {item!r}", source="--set")
        value = _yaml_value(text, key)
        if key.startswith(PIPELINE_PREFIX) and len(key) > len(PIPELINE_PREFIX):
            out.pipeline[key.removeprefix(PIPELINE_PREFIX)] = value
            out.flags[key.removeprefix(PIPELINE_PREFIX)] = f"--set {key}"
        elif key.startswith("extra.") and len(key) > len("extra."):
            out.extra[key.removeprefix("extra.")] = value
        elif key in EvalConfig.model_fields and key != "extra":
            _check_field(key, value)
            out.sets[key] = value
        else:
            known = ", ".join(k for k in EvalConfig.model_fields if k != "extra")
            raise InputError(
                f"unknown setting {key!r}; settings: {known}, extra.KEY, pipeline.OPTION", source="--set"
            )
    if context_k is not None:
        if context_k < 1:
            raise InputError(f"must be at least 1, got {context_k}", source="--context-k")
        out.sets["context_k"] = context_k
    for name, value, flag in (
        ("reranker", reranker, "--reranker"),
        ("model", embedding, "--embedding"),
        ("embedding_backend", embedding_backend, "--embedding-backend"),
        ("embedding_precision", embedding_precision, "--embedding-precision"),
    ):
        if value is not None:
            out.pipeline[name], out.flags[name] = value, flag
    if disable:
        out.pipeline["disable"] = sorted({*out.pipeline.get("disable", ()), *disable})
        out.flags["disable"] = "--disable"
    out.judge = judge_client_options(judge_timeout, judge_retries, judge_budget)
    return out


def judge_client_options(timeout: float | None, retries: int | None, budget: int | None) -> dict[str, Any]:
    """The judge client's options that were given (--judge-timeout, --judge-retries, --judge-budget), checked."""
    out: dict[str, Any] = {}
    for flag, key, value, low in (
        ("--judge-timeout", "timeout", timeout, 0.0),
        ("--judge-retries", "max_retries", retries, 0),
        ("--judge-budget", "budget", budget, 0),
    ):
        if value is not None:
            if value < low or (flag == "--judge-timeout" and value == 0):
                raise InputError(
                    f"must be {'> 0' if flag == '--judge-timeout' else '>= 0'}, got {value}", source=flag
                )
            out[key] = value
    return out


def _check_field(key: str, value: Any) -> None:
    from pydantic import ValidationError

    from ragmeter.models import EvalConfig

    try:
        EvalConfig.model_validate({key: value})
    except ValidationError as exc:
        msg = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
        raise InputError(f"{key}: {msg}", source="--set") from None


def apply_settings(config: EvalConfig, settings: RunSettings) -> EvalConfig:
    """`config` with the settings' extra entries, judge options and cache on top (flags win). A setting
    given the old way, as `--set extra.KEY` (`extra.correct_if`, `extra.context_k`...), sets its field."""
    from pydantic import ValidationError

    from ragmeter.models import EvalConfig
    from ragmeter.upgrade import upgrade_config

    given = upgrade_config({"extra": settings.extra})
    lifted = {k: v for k, v in given.items() if k != "extra"}
    update: dict[str, Any] = {"extra": {**config.extra, **given["extra"]}}
    if lifted:
        try:
            typed = EvalConfig.model_validate(lifted)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise InputError(f"extra.{err['loc'][0]}: {err['msg']}", source="--set") from None
        update.update({k: getattr(typed, k) for k in lifted})
    if settings.judge:
        before = update.get("judge_options", config.judge_options)
        update["judge_options"] = before.model_copy(update=settings.judge)  # checked by judge_client_options
    if settings.cache is not None:
        update["cache"] = settings.cache
    return config.model_copy(update=update)


# EvalConfig field -> the `ragmeter run` flag that sets it
FIELD_FLAGS = {
    "dataset": "--dataset",
    "system": "--system",
    "mode": "--mode",
    "namespace": "--namespace",
    "retrieval_top_k": "--top-k",
    "metrics": "--metrics",
    "limit": "--limit",
    "seed": "--seed",
    "concurrency": "--concurrency",
    "output": "--output",
    "generator_model": "--generator",
    "judge_model": "--judge",
    "evaluate_generation": "--no-generation",
}


def field_origins(flags: dict[str, Any], sets: dict[str, Any], config_path: str | None) -> dict[str, str]:
    """Where each config field came from: a flag, `--set KEY`, or the config file."""
    from ragmeter.models import EvalConfig

    out = {k: f"{config_path}: field '{k}'" for k in EvalConfig.model_fields} if config_path else {}
    out.update({k: f"--set {k}" for k in sets})
    out.update({k: FIELD_FLAGS.get(k, f"--{k}") for k, v in flags.items() if v is not None})
    return out
