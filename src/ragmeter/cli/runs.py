"""`ragmeter runs list|show|compare|export|delete`: the stored runs."""

from __future__ import annotations

from typing import Any

import click

from ragmeter.cli.options import (
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


def significance_rows(
    a: EvalRunResult, b: EvalRunResult, *, seed: int, n_resamples: int
) -> list[dict[str, Any]]:
    """compare_rows plus paired tests over the per-query values: 95% bootstrap CI of B - A, paired t-test,
    Fisher randomisation test and its Holm-Bonferroni adjustment across the metrics."""
    from ragmeter.experiments.significance import compare_results

    rows = compare_rows(a, b)
    tested = compare_results([a, b], metrics=[r["metric"] for r in rows], seed=seed, n_resamples=n_resamples)[
        0
    ]
    by_metric = {m.metric: m for m in tested.metrics}
    for r in rows:
        m = by_metric.get(r["metric"])
        r["n_pairs"] = m.n if m else 0
        r["ci95"] = list(m.ci95) if m and m.ci95 else None
        r["p_t"] = m.p_t if m else None
        r["p_perm"] = m.p_perm if m else None
        r["p_holm"] = m.p_holm if m else None
    return rows


def _p(value: float | None) -> str:
    if value is None:
        return "-"
    text = "<0.001" if value < 0.001 else f"{value:.3f}"
    return f"[bold]{text}[/bold]" if value < 0.05 else text


@runs.command("compare")
@click.argument("run_ids", nargs=-1, required=True, metavar="RUN_A RUN_B [RUN_C ...]")
@click.option(
    "--seed", type=int, default=42, show_default=True, help="Seed of the bootstrap and permutations."
)
@click.option(
    "--resamples", type=int, default=10_000, show_default=True, help="Bootstrap / permutation samples."
)
@format_option("table", "json")
@db_option
def compare_command(run_ids: tuple[str, ...], seed: int, resamples: int, fmt: str, db: str | None) -> None:
    """Every metric of each run against the first, side by side: B - A with its 95% bootstrap CI, paired t-test
    and permutation p-values (Holm-adjusted across metrics), and per query B's wins / losses / ties."""
    if len(run_ids) < 2:
        raise InputError("runs compare needs at least two run ids", source="runs compare")
    if resamples < 100:
        raise InputError(f"--resamples must be at least 100, got {resamples}", source="--resamples")
    with open_db(db) as store:
        found = [store.get_run(r) for r in run_ids]
    a, others = found[0], found[1:]
    comparisons = [
        {"b": b.run_id, "metrics": significance_rows(a, b, seed=seed, n_resamples=resamples)} for b in others
    ]
    if fmt == "json":
        out: dict[str, Any] = {
            "a": a.run_id,
            "seed": seed,
            "resamples": resamples,
            "comparisons": comparisons,
        }
        if len(others) == 1:
            out.update(comparisons[0])
        echo_json(out)
        return
    from rich.table import Table

    for b, comparison in zip(others, comparisons, strict=True):
        if a.dataset_hash != b.dataset_hash:
            click.echo("note: the runs used different datasets; paired values cover shared query ids only")
        table = Table(title=f"A = {a.run_id}   B = {b.run_id}", title_justify="left")
        cols = (
            "metric",
            "A",
            "B",
            "B - A",
            "95% CI",
            "p (t)",
            "p (perm)",
            "p Holm",
            "B wins",
            "B losses",
            "ties",
        )
        for col in cols:
            table.add_column(col, justify="left" if col == "metric" else "right")
        for r in comparison["metrics"]:
            delta = r["delta"]
            shown = "-" if delta is None else f"{delta:+.4f}"
            if delta is not None and abs(delta) > 1e-12:
                better = delta > 0 if r["metric"] not in LOWER_IS_BETTER else delta < 0
                shown = f"[green]{shown}[/green]" if better else f"[red]{shown}[/red]"
            ci = "-" if r["ci95"] is None else f"[{r['ci95'][0]:+.3f}, {r['ci95'][1]:+.3f}]"
            table.add_row(
                r["metric"],
                fmt_value(r["a"]),
                fmt_value(r["b"]),
                shown,
                ci,
                _p(r["p_t"]),
                _p(r["p_perm"]),
                _p(r["p_holm"]),
                str(r["wins"]),
                str(r["losses"]),
                str(r["ties"]),
            )
        console().print(table)
    click.echo(
        f"paired over queries with a value in both runs; bootstrap CI and permutation test with {resamples} "
        f"samples (seed {seed}); Holm-Bonferroni across metrics; bold p < 0.05"
    )


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
