"""`ragmeter experiment FILE.yaml`: an ablation grid on one dataset with one seed."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ragmeter.cli.options import db_option, format_option
from ragmeter.cli.settings import log_options


@click.command("experiment")
@click.argument("spec_file", type=click.Path(dir_okay=False, path_type=Path))
@db_option
@click.option("--no-store", is_flag=True, help="Do not store the variants' runs.")
@click.option(
    "--limit", type=click.IntRange(min=1), default=None, help="Override the file's query sample size."
)
@format_option("table", "markdown", "json")
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="Also write the table here."
)
@click.option("--resamples", default=10_000, show_default=True, type=click.IntRange(min=1))
@click.option("--progress/--no-progress", default=False, show_default=True)
@log_options
def experiment_command(
    spec_file: Path,
    db: str | None,
    no_store: bool,
    limit: int | None,
    fmt: str,
    output: Path | None,
    resamples: int,
    progress: bool,
) -> None:
    """Run every variant of SPEC_FILE (BM25 baseline first), store each as a run, print the table.

    Columns: the file's metrics (default recall at each k, MRR, MAP, nDCG@10 or at the largest k; judge
    metrics when a judge is set). Best per column in bold; † marks p(Holm) < 0.05 against the baseline (paired permutation test).
    """
    from ragmeter.experiments.ablation import (
        experiment_table,
        format_markdown,
        load_experiment,
        run_experiment,
        validate_experiment,
    )

    spec = load_experiment(spec_file)
    if limit is not None:
        spec = spec.model_copy(update={"limit": limit})

    def announce(variant: object, run: object) -> None:
        name = getattr(variant, "name", "?")
        click.echo(f"  {name}: run {getattr(run, 'run_id', None) or '(not stored)'}", err=True)

    from ragmeter.run import resolve_dataset

    dataset = resolve_dataset(spec.dataset, seed=spec.seed)
    validate_experiment(spec, dataset)  # every variant and column, before the first run is stored
    click.echo(f"experiment {spec.name}: {len(spec.all_variants())} variants on {spec.dataset}", err=True)
    result = run_experiment(
        spec, store=False if no_store else db, dataset=dataset, progress=progress, on_variant=announce
    )
    columns, rows = experiment_table(result, n_resamples=resamples)
    markdown = format_markdown(columns, rows)
    if fmt == "json":
        text = json.dumps({"experiment": spec.name, "columns": columns, "rows": rows}, indent=1)
        click.echo(text)
    elif fmt == "markdown":
        text = markdown
        click.echo(text)
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(title=f"{spec.name} on {spec.dataset} (seed {spec.seed})", title_justify="left")
        table.add_column("variant")
        for c in columns:
            table.add_column(c, justify="right")
        table.add_column("run", style="dim")
        for row in rows:
            cells = []
            for c in columns:
                v = row["values"][c]
                cell = "–" if v is None else f"{v:.4f}"
                p = row["p_holm"].get(c)
                if p is not None and p < 0.05:
                    cell += "†"
                cells.append(f"[bold green]{cell}[/bold green]" if row["best"][c] else cell)
            table.add_row(row["variant"], *cells, row["run_id"] or "-")
        Console().print(table)
        click.echo("best per column in bold; † p(Holm) < 0.05 vs the first row (paired permutation test)")
        text = markdown
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text + "\n", encoding="utf-8")
