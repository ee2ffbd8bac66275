"""Shared CLI pieces: --db, --format, the summary table, --fail-under."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import click

from ragmeter import metrics
from ragmeter.errors import InputError
from ragmeter.experiments.render import fmt_value as fmt_value  # one number format for every table
from ragmeter.models import EvalRunResult, MetricSummary
from ragmeter.report.export import ci_text, scale_of
from ragmeter.result_models import as_json

F = TypeVar("F", bound=Callable[..., Any])


def db_option(fn: F) -> F:
    return click.option(
        "--db",
        "db",
        metavar="URL",
        default=None,
        help="Store: a SQLite path or URL, or postgresql://... (default: $RAGMETER_DB, else .ragmeter/ragmeter.db).",
    )(fn)


def allow_version_mismatch_option(fn: F) -> F:
    """Every command that compares stored values leaves out (a comparison) or refuses (a gate) the metrics
    whose values differ in metric version, judge model or judge sampling."""
    return click.option(
        "--allow-version-mismatch",
        is_flag=True,
        help=(
            "Compare values made by different metric versions, judge models or judge sampling (repeats, "
            "temperature), with a warning; by default a comparison leaves them out and a gate is refused."
        ),
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
    """The store at --db; a path that cannot be made or a driver that is not installed is one line."""
    from ragmeter.errors import MissingExtraError
    from ragmeter.store import open_store

    try:
        return open_store(db)
    except MissingExtraError:
        raise
    except ImportError as exc:
        raise InputError(
            f"the database driver {exc.name or ''} is not installed: ragmeter stores runs in SQLite "
            "(a path) or PostgreSQL (postgresql://...)",
            source="--db",
        ) from None
    except OSError as exc:
        raise InputError(_db_os_error(db, exc), source="--db") from None


def _db_os_error(db: str | None, exc: OSError) -> str:
    """The OS error opening a store, naming the path the user gave first (then the part that failed)."""
    given = db or "the default store"
    failed = exc.filename
    if failed is None or str(failed) == given:
        return f"cannot open or create {given}: {exc.strerror}"
    return f"cannot open or create {given}: {failed}: {exc.strerror}"


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str))


def console() -> Any:
    """A rich console that shows control characters from data as visible escapes (ragmeter.safety)."""
    from ragmeter.safety import safe_console

    out = safe_console(highlight=False, soft_wrap=True)
    if not out.is_terminal:  # piped or captured: wide enough that tables are not folded
        out = safe_console(highlight=False, soft_wrap=True, width=max(out.width, 160))
    return out


def summary_table(result: EvalRunResult, title: str | None = None) -> Any:
    """The aggregates: each metric's scale, mean ± std, the 95% interval and how it was made, counts."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column("metric")
    table.add_column("scale")
    table.add_column("mean", justify="right")
    table.add_column("std", justify="right")
    table.add_column("95% CI", justify="right")
    table.add_column("interval")
    table.add_column("n", justify="right")
    table.add_column("null", justify="right")
    for name in sorted(result.aggregate, key=metrics.sort_key):
        if metrics.family_of(name) == "latency" or name.startswith("class_"):
            continue  # latency_table, class_table (the abstention rates, also diagnosis, are shown here)
        s = result.aggregate[name]
        ci, method = ci_text(name, s)
        table.add_row(
            name,
            scale_of(name),
            fmt_value(s.mean),
            fmt_value(s.std),
            ci,
            method,
            str(s.n),
            str(s.n_null) if s.n_null else "",
        )
    return table


def latency_table(result: EvalRunResult) -> Any:
    """p50 / p95 / max per stage (ms) from the run's latency_<stage>_ms summaries, or None."""
    from rich.table import Table

    rows = [(n, s) for n, s in result.aggregate.items() if metrics.family_of(n) == "latency"]
    if not rows:
        return None
    table = Table(title="latency per stage (ms, lower is better)", title_justify="left")
    for col in ("stage", "p50", "p95", "max", "n"):
        table.add_column(col, justify="left" if col == "stage" else "right")
    for name, s in rows:
        stage = name.removeprefix("latency_").removesuffix("_ms")
        stage, _, size = stage.partition("_batch_of_")  # a batched stage: n counts batches (run/batching.py)
        stage = f"{stage} (per batch of {size})" if size else stage
        table.add_row(stage, fmt_value(s.p50, 1), fmt_value(s.p95, 1), fmt_value(s.max, 1), str(s.n))
    return table


def ppi_table(result: EvalRunResult) -> Any:
    """Judge means corrected with human labels (PPI, `EvalRunResult.ppi`), or None when the run has none."""
    from rich.table import Table

    if not result.ppi:
        return None
    table = Table(title="judge means corrected with human labels (PPI)", title_justify="left")
    for col in ("metric", "judge mean", "PPI estimate", "95% CI", "human labels / queries"):
        table.add_column(col, justify="left" if col == "metric" else "right")
    for name in sorted(result.ppi, key=metrics.sort_key):
        e = result.ppi[name]
        ci = f"[{fmt_value(e.ci95[0])}, {fmt_value(e.ci95[1])}]"
        n = f"{e.n_labeled} / {e.n_total}"
        table.add_row(name, fmt_value(e.judge_mean), fmt_value(e.estimate), ci, n)
    return table


def stability_table(result: EvalRunResult) -> Any:
    """How far each judge metric agrees with itself across the repeats of a run (`run --repeat N`)."""
    from rich.table import Table

    from ragmeter.score.stability import STABILITY_COLUMNS, STABILITY_NOTE, stability_rows

    table = Table(title="judge stability across repeats", title_justify="left", caption=STABILITY_NOTE)
    for col in STABILITY_COLUMNS:
        table.add_column(col, justify="left" if col in ("metric", "level", "sampling") else "right")
    for row in stability_rows(result.stability):
        table.add_row(*row)
    return table


def print_run(result: EvalRunResult, *, store_url: str | None = None) -> None:
    from ragmeter.report.selection import judged_note
    from ragmeter.safety import console_text as t  # data: secrets, control characters, markup escaped

    out = console()
    cfg = result.config
    head = (
        f"run {t(result.run_id or '(not stored)')}  {result.status}  dataset={t(cfg.dataset)}  "
        f"system={t(result.system_label())}  seed={cfg.seed}"
    )
    out.print(head)
    out.print(
        f"queries: {result.n_queries}  failed: {result.n_failed}  "
        f"without relevant docs: {result.n_queries_without_relevant}"
        + (f"  judge: {t(cfg.judge_model)}" if cfg.use_llm_judge and cfg.judge_model else "")
    )
    if result.aggregate:
        out.print(summary_table(result))
        judged = judged_note(result)
        if judged:
            out.print(f"[dim]note: {judged}[/dim]", highlight=False, soft_wrap=True)  # one line, no alarm
        latency = latency_table(result)
        if latency is not None:
            out.print(latency)
        from ragmeter.report.diagnosis import class_table

        classes = class_table(result)
        if classes is not None:
            out.print(classes)
        from ragmeter.report.diagnosis import sufficiency_view

        cells = sufficiency_view(result)
        if cells is not None:
            out.print(cells)
    curve = result.risk_coverage
    if curve and curve.get("aurc") is not None:
        out.print(
            f"risk-coverage: AURC {curve['aurc']:.4f} over {curve['n']} answers with a confidence (lower is "
            f"better; risk at full coverage {curve['risk_at_full_coverage']:.4f})"
        )
    if result.ppi:
        out.print(ppi_table(result))
    if result.stability:
        out.print(stability_table(result))
    print_usage(result)
    if result.usage and result.usage.escalation:  # a cheap judge escalating to a strong one
        from ragmeter.score.escalation import describe_escalation

        for line in describe_escalation(result.usage.escalation):
            out.print(t(line))
    if result.sequential:
        from ragmeter.run.sequential import describe_sequential

        for line in describe_sequential(result.sequential.dump()):
            out.print(t(line))
    for note in result.notes:
        out.print(f"note: {t(note)}")
    if result.error:
        out.print(f"[red]error:[/red] {t(result.error)}")
    failed = [r for r in result.per_query if r.status == "failed"]
    for r in failed[:5]:
        out.print(f"[red]failed[/red] {t(r.query_id)}: {t(r.error)}")
    if len(failed) > 5:
        out.print(f"... and {len(failed) - 5} more failed queries (see the JSON/CSV)")


def print_usage(result: EvalRunResult) -> None:
    """The run's LLM calls, tokens and cost under its tables (the JSON's `usage`, for people)."""
    from ragmeter.llm.usage import describe_usage
    from ragmeter.safety import console_text as t

    for line in describe_usage(as_json(result.usage)):
        console().print(f"LLM usage: {t(line)}")


def parse_fail_under(values: Iterable[str]) -> dict[str, float]:
    """METRIC=VALUE pairs, each metric checked against the registry (aliases become canonical names)."""
    from ragmeter.metrics.gate import parse_thresholds

    return parse_thresholds(values, source="--fail-under")


def check_fail_under(aggregate: dict[str, MetricSummary], thresholds: dict[str, float]) -> list[str]:
    """Each metric whose mean fell short of its threshold (above it, for a lower-is-better metric), as a
    message. A metric the run did not produce, or produced without a value, falls short."""
    from ragmeter.metrics.gate import check

    return check({name: s.mean for name, s in aggregate.items()}, thresholds)


def default_output(run_id: str | None) -> Path:
    return Path(".ragmeter") / "runs" / f"{run_id or 'run'}.json"
