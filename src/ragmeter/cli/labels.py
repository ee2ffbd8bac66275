"""`ragmeter labels export|import`: labels from people, to and from JSON and TREC qrels."""

from __future__ import annotations

import click

from ragmeter.cli.options import db_option, open_db


@click.group("labels")
def labels() -> None:
    """Move the labels people gave (in `ragmeter view --annotate`) to and from files."""


@labels.command("export")
@click.option("--output", "-o", required=True, metavar="FILE", help="Where the labels go.")
@click.option("--format", "fmt", type=click.Choice(["json", "qrels"]), default="json", show_default=True)
@click.option(
    "--run", "run_id", default=None, help="Only this run's answer labels and its dataset's relevance labels."
)
@click.option("--history", is_flag=True, help="Every label given, not only each item's current one (JSON).")
@db_option
def export_command(output: str, fmt: str, run_id: str | None, history: bool, db: str | None) -> None:
    """Write the current labels as JSON (every kind) or TREC qrels (relevance labels)."""
    from ragmeter.validity.human_labels import export_labels

    with open_db(db) as store:
        dataset_hash = None
        if run_id:
            run = store.get_run(run_id, with_queries=False)
            run_id, dataset_hash = run.run_id, run.dataset_hash
        n = export_labels(store, output, fmt=fmt, run_id=run_id, dataset_hash=dataset_hash, history=history)
    click.echo(f"wrote {n} labels to {output}")


@labels.command("import")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["json", "qrels"]), default="json", show_default=True)
@click.option(
    "--run", "run_id", default=None, help="The run whose dataset TREC qrels judge (needed for qrels)."
)
@click.option("--annotator", default="import", show_default=True, help="Who gave labels that name nobody.")
@click.option(
    "--grades", metavar="LO-HI", default="0-3", show_default=True, help="The relevance grades allowed."
)
@db_option
def import_command(
    path: str, fmt: str, run_id: str | None, annotator: str, grades: str, db: str | None
) -> None:
    """Add the labels of a file (checked whole first: one bad label and nothing is stored)."""
    from ragmeter.validity.human_labels import import_labels, parse_grades

    scale = parse_grades(grades)
    with open_db(db) as store:
        n = import_labels(store, path, fmt=fmt, annotator=annotator, run_id=run_id, grades=scale)
    click.echo(f"stored {n} labels from {path}")
