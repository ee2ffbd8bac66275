"""`ragmeter experiment FILE.yaml`: an ablation grid on one dataset with one seed."""

from __future__ import annotations

from pathlib import Path

import click

from ragmeter.cli.options import allow_version_mismatch_option, db_option, format_option
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
@allow_version_mismatch_option
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
    allow_version_mismatch: bool,
) -> None:
    """Run every variant of SPEC_FILE (BM25 baseline first), store each as a run, print the table.

    Columns: the file's metrics (default recall at each k, MRR, MAP, nDCG@10 or at the largest k; judge
    metrics when a judge is set). Best per column in bold; † marks p(Holm) < 0.05 against the baseline (paired permutation test).
    """
    from ragmeter.experiments.ablation import (
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

    from ragmeter.datasets.resolve import resolve_dataset

    dataset = resolve_dataset(spec.dataset, seed=spec.seed)
    validate_experiment(spec, dataset)  # every variant and column, before the first run is stored
    click.echo(f"experiment {spec.name}: {len(spec.all_variants())} variants on {spec.dataset}", err=True)
    result = run_experiment(
        spec, store=False if no_store else db, dataset=dataset, progress=progress, on_variant=announce
    )
    table = result.table(n_resamples=resamples, allow_version_mismatch=allow_version_mismatch)
    if fmt == "json":
        text = table.to_json(experiment=spec.name)
        click.echo(text)
    elif fmt == "markdown":
        text = table.to_markdown()
        click.echo(text)
    else:
        from rich.console import Console

        Console().print(table.to_table())
        click.echo(table.note)
        text = table.to_markdown()
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text + "\n", encoding="utf-8")
