"""`ragmeter runs list|show|compare|export|delete`: the stored runs."""

from __future__ import annotations

from typing import Any

import click

from ragmeter import metrics
from ragmeter.cli.options import (
    allow_version_mismatch_option,
    console,
    db_option,
    echo_json,
    format_option,
    open_db,
    print_run,
)
from ragmeter.errors import InputError
from ragmeter.experiments.compare import compare_rows, per_query_wins, significance_rows
from ragmeter.models import EvalRunResult

__all__ = ["compare_rows", "per_query_wins", "runs", "significance_rows"]


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
    from ragmeter.safety import console_text as t  # data: secrets, control characters, markup escaped

    for r in found:
        table.add_row(
            t(r.run_id or ""),
            r.status,
            f"{r.started_at:%Y-%m-%d %H:%M:%S}" if r.started_at else "",
            t(r.config.dataset),
            t(r.system_label()),
            str(r.n_queries),
            str(r.n_failed),
            t(_headline(r)),
        )
    console().print(table)
    if not found:
        click.echo("no runs yet: `ragmeter run --dataset demo` makes one")


def _headline(r: EvalRunResult) -> str:
    """The registry's first headline metric with a value (ndcg@10 when the run has it)."""
    names = [n for n, s in r.aggregate.items() if s.mean is not None]
    for name in metrics.headline(names) or sorted(names, key=metrics.sort_key):
        s = r.aggregate[name]
        if s.mean is not None:
            return f"{name}={s.mean:.4f}"
    return r.error[:60] if r.error else ""


@runs.command("show")
@click.argument("run_id")
@format_option("table", "json")
@db_option
def show_command(run_id: str, fmt: str, db: str | None) -> None:
    """One run: its summary, or (--format json) the whole EvalRunResult with per-query results."""
    from ragmeter.validity.human_labels import store_ppi
    from ragmeter.validity.storage import own_card, run_cards

    with open_db(db) as store:
        result = store.get_run(run_id)
        # PPI recomputed on read from the labels people gave from the viewer's queue (when there are any).
        estimates, ppi_notes, n_labels = store_ppi(store, result)
        own = own_card(store, result)
        cards = run_cards(store, result)
    if n_labels:
        note = f"PPI recomputed from {n_labels} queue label(s) in the store"
        notes = [*result.notes, note, *ppi_notes]
        result = result.model_copy(update={"ppi": {**result.ppi, **estimates}, "notes": notes})
    if fmt == "json":
        out = result.model_dump(mode="json")
        if own is not None or cards:  # judge cards beside the judged metrics (ragmeter.validity)
            out["judge_cards"] = {m: c.dump() for m, c in cards.items()} if own is None else own.dump()
        echo_json(out)
    else:
        print_run(result)
        _print_cards(own, cards)


def _print_cards(own: Any, cards: dict[str, Any]) -> None:
    from ragmeter.validity.render import card_lines, card_summary

    for line in card_lines(own) if own is not None else []:
        click.echo(line)
    for card in cards.values():
        click.echo(card_summary(card))


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
@click.option(
    "--top",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    help="Queries shown per metric that improved most, and as many that regressed most.",
)
@click.option("--per-query", is_flag=True, help="Every paired query of every metric, not only the top.")
@click.option(
    "--cluster-by",
    metavar="FIELD",
    help="A key of the queries' metadata: resample clusters, flip signs per cluster (clustered intervals).",
)
@allow_version_mismatch_option
@format_option("table", "json")
@db_option
def compare_command(
    run_ids: tuple[str, ...],
    seed: int,
    resamples: int,
    top: int,
    per_query: bool,
    cluster_by: str | None,
    allow_version_mismatch: bool,
    fmt: str,
    db: str | None,
) -> None:
    """Every metric of each run against the first, side by side: B - A with its 95% bootstrap CI, Cohen's d_z
    with its interval, the minimum detectable effect, paired t-test and permutation p-values (Holm-adjusted
    across metrics), per query B's wins / losses / ties in each metric's direction, the queries that changed
    most in both directions, and latency p50/p95/max per stage. Three or more runs add a randomised Tukey HSD
    over every pair. A metric whose values differ in metric version, judge model or judge sampling is left
    out with one line naming both versions (--allow-version-mismatch includes it, with a warning). Failure
    class shares show their Wilson intervals and take no part in the tests or Holm."""
    from ragmeter.experiments.compare import compare, metric_names, tukey_rows
    from ragmeter.experiments.version_guard import LEFT_OUT_HINT, guard_runs

    if len(run_ids) < 2:
        raise InputError("runs compare needs at least two run ids", source="runs compare")
    if resamples < 100:
        raise InputError(f"--resamples must be at least 100, got {resamples}", source="--resamples")
    with open_db(db) as store:
        guarded = guard_runs([store.get_run(r) for r in run_ids], allow=allow_version_mismatch)
        found, warnings = guarded.runs, guarded.allowed
        clusters = _clusters(store, found, cluster_by) if cluster_by else None
    from ragmeter.experiments.render import ComparisonReport

    a, others = found[0], found[1:]
    limit = None if per_query else top
    from ragmeter.diagnose.classes import transitions

    comparisons = [
        compare(a, b, seed=seed, n_resamples=resamples, top=limit, clusters=clusters, cluster_by=cluster_by)
        for b in others
    ]
    tukey: list[dict[str, Any]] = []
    if len(found) > 2:
        names = sorted({n for b in others for n in metric_names(a, b)}, key=metrics.sort_key)
        tukey = tukey_rows(found, names, seed=seed, n_resamples=resamples, clusters=clusters)
    for b, comparison in zip(others, comparisons, strict=True):
        comparison["transitions"] = transitions(a, b)  # failure classes: which queries moved where
    report = ComparisonReport(
        a=a.run_id or "",
        comparisons=comparisons,
        seed=seed,
        resamples=resamples,
        per_query=per_query,
        show_queries=limit != 0,
        cluster_by=cluster_by,
        tukey=tukey,
        version_mismatches=warnings,
        left_out=guarded.left_out,
        stability={
            r.run_id or "": {n: s.model_dump(mode="json") for n, s in r.stability.items()}
            for r in found
            if r.stability
        },
    )
    for line in warnings if fmt != "json" else []:
        click.echo(f"warning: version mismatch allowed: {line}", err=True)
    for line in guarded.left_out:  # every other metric is compared
        click.echo(f"not compared: {line}; {LEFT_OUT_HINT}", err=True)
    if fmt == "json":
        click.echo(report.to_json())
    else:
        console().print(report.to_table())
        for b in others:
            _print_transitions(a, b)


def _clusters(store: Any, runs: list[EvalRunResult], field: str) -> dict[str, Any]:
    """{query_id: metadata[field]} from the first run's dataset, for every compared query."""
    from ragmeter.datasets.resolve import resolve_dataset
    from ragmeter.experiments.effects import query_clusters

    first = runs[0]
    data = resolve_dataset(first.config.dataset, seed=first.config.seed, store=store)
    needed = dict.fromkeys(q.query_id for run in runs for q in run.per_query)
    return query_clusters(data.queries, field, needed)


def _print_transitions(a: EvalRunResult, b: EvalRunResult) -> None:
    from ragmeter.report.diagnosis import transition_table

    shown = transition_table(a, b)
    if shown is None:
        return
    table, moves = shown
    if moves["n_moved"]:
        console().print(table)
    else:
        click.echo(f"failure classes: none of the {moves['n_paired']} queries classified in both runs moved")


@runs.command("export")
@click.argument("run_id")
@click.option("--output", "-o", metavar="FILE", help="File to write (default: stdout).")
@click.option(
    "--csv-raw", is_flag=True, help="CSV cells as they are (no ' before = + - @; docs/security.md)."
)
@format_option("json", "csv")
@db_option
def export_command(run_id: str, output: str | None, csv_raw: bool, fmt: str, db: str | None) -> None:
    """A stored run as JSON (the EvalRunResult) or CSV (one row per query)."""
    import tempfile
    from pathlib import Path

    from ragmeter.safety import check_output_path
    from ragmeter.score.writers import write_csv, write_json

    if output:
        check_output_path(output, source="--output")
    with open_db(db) as store:
        result = store.get_run(run_id)

    def writer(path: str | Path) -> Path:
        if fmt == "json":
            return write_json(result, path, source="--output")
        return write_csv(result, path, raw=csv_raw, source="--output")

    if output:
        writer(output)
        click.echo(f"wrote {output}", err=True)
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = writer(Path(tmp) / f"run.{fmt}")
        click.echo(path.read_text(encoding="utf-8"), nl=False)


@runs.command("delete")
@click.argument("run_ids", nargs=-1, required=True)
@click.option("--yes", "-y", is_flag=True, help="Do not ask.")
@click.option("--force", is_flag=True, help="Also delete a run whose process is still running.")
@db_option
def delete_command(run_ids: tuple[str, ...], yes: bool, force: bool, db: str | None) -> None:
    """Delete runs and their per-query results (a run still running is refused unless --force)."""
    with open_db(db) as store:
        resolved = [store.resolve_run_id(r) for r in run_ids]
        if not yes and not click.confirm(f"delete {len(resolved)} run(s): {', '.join(resolved)}?"):
            raise InputError("nothing deleted")
        for rid in resolved:
            store.delete_run(rid, force=force)
            click.echo(f"deleted {rid}")
