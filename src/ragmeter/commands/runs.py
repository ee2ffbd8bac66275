"""`ragmeter runs list|show|compare|export|delete`: the stored runs."""

from __future__ import annotations

from typing import Any

import click

from ragmeter.commands.common import (
    console,
    db_option,
    echo_json,
    fmt_value,
    format_option,
    open_db,
    print_run,
)
from ragmeter.errors import InputError
from ragmeter.models import EvalRunResult


@click.group("runs")
def runs() -> None:
    """List, show, compare, export and delete stored runs."""


@runs.command("list")
@click.option("--limit", type=int, default=None, help="Only the newest N runs.")
@click.option(
    "--status", type=click.Choice(["running", "completed", "failed"]), help="Only runs with this status."
)
@format_option("table", "json")
@db_option
def list_command(limit: int | None, status: str | None, fmt: str, db: str | None) -> None:
    """The stored runs, newest first."""
    with open_db(db) as store:
        found = store.list_runs(limit=limit, status=status)
        url = store.url
    if fmt == "json":
        echo_json([r.model_dump(mode="json", exclude={"per_query"}) for r in found])
        return
    from rich.table import Table

    table = Table(title=f"runs in {url}", title_justify="left")
    for col in ("run id", "status", "started (UTC)", "dataset", "system", "queries", "failed", "headline"):
        table.add_column(col, no_wrap=col in ("run id", "started (UTC)"))
    for r in found:
        table.add_row(
            r.run_id or "",
            r.status,
            f"{r.started_at:%Y-%m-%d %H:%M:%S}" if r.started_at else "",
            r.config.dataset,
            r.config.system + (f" ({r.config.mode})" if r.config.system == "builtin" else ""),
            str(r.n_queries),
            str(r.n_failed),
            _headline(r),
        )
    console().print(table)
    if not found:
        click.echo("no runs yet: `ragmeter run --dataset demo` makes one")


def _headline(r: EvalRunResult) -> str:
    for name in ("ndcg@10", "recall@10", "ndcg@5", "mrr", "token_f1"):
        s = r.aggregate.get(name)
        if s is not None and s.mean is not None:
            return f"{name}={s.mean:.4f}"
    return r.error[:60] if r.error else ""


@runs.command("show")
@click.argument("run_id")
@format_option("table", "json")
@db_option
def show_command(run_id: str, fmt: str, db: str | None) -> None:
    """One run: its summary, or (--format json) the whole EvalRunResult with per-query results."""
    with open_db(db) as store:
        result = store.get_run(run_id)
    if fmt == "json":
        echo_json(result.model_dump(mode="json"))
    else:
        print_run(result)


# Metrics where a lower value is the better one: a "win" is a decrease.
LOWER_IS_BETTER = frozenset({"hallucination_rate"})


def per_query_wins(a: EvalRunResult, b: EvalRunResult, metric: str) -> tuple[int, int, int]:
    """Queries where B beats / loses to / ties A on `metric` (queries both answered with a value)."""
    sign = -1.0 if metric in LOWER_IS_BETTER else 1.0
    va = {
        q.query_id: q.metrics[metric].value for q in a.per_query if q.status == "ok" and metric in q.metrics
    }
    vb = {
        q.query_id: q.metrics[metric].value for q in b.per_query if q.status == "ok" and metric in q.metrics
    }
    wins = losses = ties = 0
    for qid, x in va.items():
        y = vb.get(qid)
        if x is None or y is None:
            continue
        if abs(y - x) <= 1e-12:
            ties += 1
        elif sign * (y - x) > 0:
            wins += 1
        else:
            losses += 1
    return wins, losses, ties


def compare_rows(a: EvalRunResult, b: EvalRunResult) -> list[dict[str, Any]]:
    names = list(dict.fromkeys([*a.aggregate, *b.aggregate]))
    rows = []
    for name in names:
        ma = a.aggregate[name].mean if name in a.aggregate else None
        mb = b.aggregate[name].mean if name in b.aggregate else None
        wins, losses, ties = per_query_wins(a, b, name)
        rows.append(
            {
                "metric": name,
                "a": ma,
                "b": mb,
                "delta": None if ma is None or mb is None else mb - ma,
                "wins": wins,
                "losses": losses,
                "ties": ties,
            }
        )
    return rows


@runs.command("compare")
@click.argument("run_a")
@click.argument("run_b")
@format_option("table", "json")
@db_option
def compare_command(run_a: str, run_b: str, fmt: str, db: str | None) -> None:
    """Every metric of two runs side by side: B - A, and per query B's wins / losses / ties against A."""
    with open_db(db) as store:
        a, b = store.get_run(run_a), store.get_run(run_b)
    rows = compare_rows(a, b)
    if fmt == "json":
        echo_json({"a": a.run_id, "b": b.run_id, "metrics": rows})
        return
    from rich.table import Table

    if a.dataset_hash != b.dataset_hash:
        click.echo("note: the two runs used different datasets; per-query counts cover shared query ids only")
    table = Table(title=f"A = {a.run_id}   B = {b.run_id}", title_justify="left")
    for col in ("metric", "A", "B", "B - A", "B wins", "B losses", "ties"):
        table.add_column(col, justify="left" if col == "metric" else "right")
    for r in rows:
        delta = r["delta"]
        shown = "-" if delta is None else f"{delta:+.4f}"
        if delta is not None and abs(delta) > 1e-12:
            better = delta > 0 if r["metric"] not in LOWER_IS_BETTER else delta < 0
            shown = f"[green]{shown}[/green]" if better else f"[red]{shown}[/red]"
        table.add_row(
            r["metric"],
            fmt_value(r["a"]),
            fmt_value(r["b"]),
            shown,
            str(r["wins"]),
            str(r["losses"]),
            str(r["ties"]),
        )
    console().print(table)


@runs.command("export")
@click.argument("run_id")
@click.option("--output", "-o", metavar="FILE", help="File to write (default: stdout).")
@format_option("json", "csv")
@db_option
def export_command(run_id: str, output: str | None, fmt: str, db: str | None) -> None:
    """A stored run as JSON (the EvalRunResult) or CSV (one row per query)."""
    import tempfile
    from pathlib import Path

    from ragmeter.runner import write_csv, write_json

    with open_db(db) as store:
        result = store.get_run(run_id)
    writer = write_json if fmt == "json" else write_csv
    if output:
        writer(result, output)
        click.echo(f"wrote {output}", err=True)
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = writer(result, Path(tmp) / f"run.{fmt}")
        click.echo(path.read_text(encoding="utf-8"), nl=False)


@runs.command("delete")
@click.argument("run_ids", nargs=-1, required=True)
@click.option("--yes", "-y", is_flag=True, help="Do not ask.")
@db_option
def delete_command(run_ids: tuple[str, ...], yes: bool, db: str | None) -> None:
    """Delete runs and their per-query results."""
    with open_db(db) as store:
        resolved = [store.resolve_run_id(r) for r in run_ids]
        if not yes and not click.confirm(f"delete {len(resolved)} run(s): {', '.join(resolved)}?"):
            raise InputError("nothing deleted")
        for rid in resolved:
            store.delete_run(rid)
            click.echo(f"deleted {rid}")
