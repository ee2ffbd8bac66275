"""Shared CLI pieces: --db, --format, the summary table, --fail-under."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import click

from ragmeter.errors import InputError
from ragmeter.models import EvalRunResult, MetricSummary

F = TypeVar("F", bound=Callable[..., Any])


def db_option(fn: F) -> F:
    return click.option(
        "--db",
        "db",
        metavar="URL",
        default=None,
        help="Store: a SQLite path or URL, or postgresql://... (default: $RAGMETER_DB, else .ragmeter/ragmeter.db).",
    )(fn)


def format_option(*choices: str) -> Callable[[F], F]:
    def deco(fn: F) -> F:
        return click.option(
            "--format",
            "fmt",
            type=click.Choice(list(choices)),
            default=choices[0],
            show_default=True,
            help="Output format.",
        )(fn)

    return deco


def open_db(db: str | None) -> Any:
    from ragmeter.store import open_store

    return open_store(db)


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str))


def fmt_value(value: float | None, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{value:.{digits}f}"


def console() -> Any:
    from rich.console import Console

    out = Console(highlight=False, soft_wrap=True)
    if not out.is_terminal:  # piped or captured: wide enough that tables are not folded
        out = Console(highlight=False, soft_wrap=True, width=max(out.width, 160))
    return out


def summary_table(result: EvalRunResult, title: str | None = None) -> Any:
    """The aggregates: mean ± std, the 95% CI, valid values and nulls per metric."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column("metric")
    table.add_column("mean", justify="right")
    table.add_column("std", justify="right")
    table.add_column("95% CI", justify="right")
    table.add_column("n", justify="right")
    table.add_column("null", justify="right")
    for name, s in result.aggregate.items():
        ci = f"[{fmt_value(s.ci95[0], 3)}, {fmt_value(s.ci95[1], 3)}]" if s.ci95 else "-"
        table.add_row(
            name, fmt_value(s.mean), fmt_value(s.std), ci, str(s.n), str(s.n_null) if s.n_null else ""
        )
    return table


def print_run(result: EvalRunResult, *, store_url: str | None = None) -> None:
    out = console()
    cfg = result.config
    head = (
        f"run {result.run_id or '(not stored)'}  {result.status}  dataset={cfg.dataset}  system={cfg.system}"
        f"  mode={cfg.mode}  seed={cfg.seed}"
    )
    out.print(head)
    out.print(
        f"queries: {result.n_queries}  failed: {result.n_failed}  "
        f"without relevant docs: {result.n_queries_without_relevant}"
        + (f"  judge: {cfg.judge_model}" if cfg.use_llm_judge and cfg.judge_model else "")
    )
    if result.aggregate:
        out.print(summary_table(result))
    for note in result.notes:
        out.print(f"note: {note}")
    if result.error:
        out.print(f"[red]error:[/red] {result.error}")
    failed = [r for r in result.per_query if r.status == "failed"]
    for r in failed[:5]:
        out.print(f"[red]failed[/red] {r.query_id}: {r.error}")
    if len(failed) > 5:
        out.print(f"... and {len(failed) - 5} more failed queries (see the JSON/CSV)")


def parse_fail_under(values: Iterable[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for text in values:
        metric, sep, number = text.partition("=")
        if not sep or not metric.strip():
            raise InputError(f"expected METRIC=VALUE, got {text!r}", source="--fail-under")
        try:
            out[metric.strip()] = float(number)
        except ValueError:
            raise InputError(f"{number!r} is not a number (in {text!r})", source="--fail-under") from None
    return out


def check_fail_under(aggregate: dict[str, MetricSummary], thresholds: dict[str, float]) -> list[str]:
    """Each metric whose mean fell short of its threshold, as a message; unknown metrics are input errors."""
    unknown = [m for m in thresholds if m not in aggregate]
    if unknown:
        raise InputError(
            f"no metric {', '.join(map(repr, unknown))} in this run; it has: {', '.join(aggregate) or 'none'}",
            source="--fail-under",
        )
    short = []
    for metric, threshold in thresholds.items():
        mean = aggregate[metric].mean
        if mean is None or mean < threshold:
            short.append(f"{metric} = {fmt_value(mean)} < {threshold:g}")
    return short


def default_output(run_id: str | None) -> Path:
    return Path(".ragmeter") / "runs" / f"{run_id or 'run'}.json"
