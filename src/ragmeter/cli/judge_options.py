"""The judge-call options that `judges validate|calibrate|card` and `judge-qrels` share, and their --scale."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from ragmeter.errors import InputError

F = TypeVar("F", bound=Callable[..., Any])

CACHE_HELP = "Cache judge replies in this SQLite file."
CACHE_RERUN_HELP = "Cache judge replies in this SQLite file: a rerun sends no request it has already made."


def judge_call_options(*, budget: bool = True, cache_help: str = CACHE_HELP) -> Callable[[F], F]:
    """--concurrency, --cache and (with budget) --budget, in that order: how the judge is called."""
    options = [
        click.option(
            "--concurrency", type=int, default=8, show_default=True, help="Judge calls in flight at once."
        ),
        click.option("--cache", "cache", metavar="FILE.sqlite", default=None, help=cache_help),
    ]
    if budget:
        options.append(
            click.option(
                "--budget",
                type=int,
                default=None,
                metavar="N",
                help="At most N judge calls; later ones fail (and count).",
            )
        )

    def apply(f: F) -> F:
        for option in reversed(options):
            f = option(f)
        return f

    return apply


def parse_scale(text: str | None) -> tuple[float, float] | None:
    """--scale LO:HI as two floats (None when not given)."""
    if text is None:
        return None
    lo, sep, hi = text.partition(":")
    try:
        if not sep:
            raise ValueError
        return float(lo), float(hi)
    except ValueError:
        raise InputError(f"expected LO:HI, got {text!r}", source="--scale") from None
