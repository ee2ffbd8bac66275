"""`ragmeter report RUN [RUN ...] --out DIR`: HTML report, plots and long CSV of stored or exported runs."""

from __future__ import annotations

import csv
from pathlib import Path

import click

from ragmeter.cli.options import allow_version_mismatch_option, db_option
from ragmeter.errors import InputError
from ragmeter.models import EvalRunResult


def load_runs(specs: tuple[str, ...] | list[str], db: str | None = None) -> list[EvalRunResult]:
    """Each RUN is a path to an EvalRunResult JSON file, else a run id (or unique prefix) in the store."""
    runs: list[EvalRunResult] = []
    store = None
    try:
        for spec in specs:
            path = Path(spec)
            if path.is_file():
                from ragmeter.report.export import load_run_json

                runs.append(load_run_json(path))
                continue
            if path.suffix.lower() == ".json" or "/" in spec:
                raise InputError("no such file (and not a run id)", source=spec)
            if store is None:
                from ragmeter.store import open_store

                store = open_store(db)
            runs.append(_with_cards(store, store.get_run(spec)))
    finally:
        if store is not None:
            store.close()
    return runs


def _with_cards(store: object, run: EvalRunResult) -> EvalRunResult:
    """The run with its judge's stored cards as notes (one line per judged metric; ragmeter.validity)."""
    from ragmeter.validity.storage import card_notes

    notes = card_notes(store, run)
    return run.model_copy(update={"notes": [*run.notes, *notes]}) if notes else run


@click.command("report")
@click.argument("runs", nargs=-1, required=True)
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path))
@db_option
@click.option(
    "--plot-format",
    "formats",
    multiple=True,
    type=click.Choice(["png", "svg", "pdf"]),
    default=("png", "svg"),
    show_default=True,
    help="File types of the plots under DIR/plots (repeat the option for several).",
)
@click.option("--no-plots", is_flag=True, help="Skip plot files (the HTML report keeps its inline plots).")
@click.option(
    "--csv-raw", is_flag=True, help="CSV cells as they are (no ' before = + - @; docs/security.md)."
)
@click.option("--resamples", default=10_000, show_default=True, type=click.IntRange(min=1))
@click.option(
    "--seed", default=42, show_default=True, type=int, help="Seed of the bootstrap and permutations."
)
@click.option(
    "--max-docs", default=5, show_default=True, type=click.IntRange(min=0), help="Docs shown per query."
)
@allow_version_mismatch_option
def report_command(
    runs: tuple[str, ...],
    out_dir: Path,
    db: str | None,
    formats: tuple[str, ...],
    no_plots: bool,
    csv_raw: bool,
    resamples: int,
    seed: int,
    max_docs: int,
    allow_version_mismatch: bool,
) -> None:
    """Write report.html, per_query_long.csv, plots/ and (for 2+ runs) significance.csv into DIR.

    RUN is a run id (or a unique prefix) in the store, or the path of a run's JSON export. With several
    runs, each is compared with the first.
    """
    from ragmeter.report.export import run_label, write_long_csv
    from ragmeter.report.html import write_html_report
    from ragmeter.safety import check_output_path, csv_dict

    check_output_path(out_dir / "report.html", source="--out")
    results = load_runs(runs, db)
    compared = results
    if len(results) > 1:
        from ragmeter.experiments.version_guard import guard_runs

        guarded = guard_runs(results, allow=allow_version_mismatch)
        compared = guarded.runs  # the tests: every metric whose versions agree; the others left out
        for line in guarded.allowed:
            click.echo(f"warning: version mismatch allowed: {line}", err=True)
        for line in guarded.left_out:
            click.echo(f"not compared: {line}", err=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    comparisons = None
    if len(results) > 1:
        from ragmeter.experiments.compare import is_class_share
        from ragmeter.experiments.significance import compare_runs, per_query_values

        labels = [run_label(r, i) for i, r in enumerate(results)]
        base = per_query_values(compared[0])

        def tested(other: dict[str, dict[str, float | None]]) -> list[str]:
            """Shared metrics but the failure-class shares (no hypotheses in Holm's family)."""
            names = dict.fromkeys(n for values in base.values() for n in values)
            present = {n for values in other.values() for n in values}
            return [n for n in names if n in present and not is_class_share(n)]

        comparisons = []
        for i, r in enumerate(compared[1:], start=1):
            values = per_query_values(r)
            comparisons.append(
                compare_runs(
                    base,
                    values,
                    metrics=tested(values),
                    seed=seed,
                    n_resamples=resamples,
                    names=(labels[0], labels[i]),
                )
            )
        sig_path = out_dir / "significance.csv"
        rows = [row for c in comparisons for row in c.rows()]
        with sig_path.open("w", encoding="utf-8", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else ["run_a", "run_b"])
            writer.writeheader()
            writer.writerows(csv_dict(row, raw=csv_raw) for row in rows)
        written.append(sig_path)
    long_path = out_dir / "per_query_long.csv"
    n_rows = write_long_csv(results, long_path, raw=csv_raw)
    written.append(long_path)
    if not no_plots:
        from ragmeter.report.plots import write_plots

        plots = write_plots(results, out_dir / "plots", formats=formats, comparisons=comparisons)
        for files in plots.values():
            written.extend(files)
    html = write_html_report(
        results,
        out_dir / "report.html",
        comparisons=comparisons,
        max_docs=max_docs,
        seed=seed,
        n_resamples=resamples,
    )
    written.append(html)
    for path in written:
        click.echo(str(path))
    click.echo(f"{len(results)} run(s), {n_rows} per-query metric values; open {html}", err=True)
