"""`ragmeter datasets ...`: list the registry, validate a dataset file, fetch a benchmark."""

from __future__ import annotations

import sys

import click


@click.group("datasets")
def datasets() -> None:
    """Named benchmarks and dataset files."""


@datasets.command("list")
@click.option("--data-dir", type=click.Path(file_okay=False), default=None, help="Also look here first.")
def list_command(data_dir: str | None) -> None:
    """Show the named datasets and where each is available locally."""
    from ragmeter.datasets import registry

    click.echo(f"{'name':<18} {'local copy':<60} description")
    click.echo(f"{'demo':<18} {'(in the package)':<60} ragmeter's own documentation, 40 docs, 60 questions")
    for name, bench in registry.BENCHMARKS.items():
        found = registry.locate(name, data_dir)
        where = str(found) if found is not None else "not cached (downloaded on first use)"
        click.echo(f"{name:<18} {where:<60} {bench.description} [{bench.license}]")
    click.echo(f"\nsearched: {', '.join(str(d) for d in registry.search_dirs(data_dir))}")


@datasets.command("validate")
@click.argument("path", type=click.Path(exists=True))
def validate_command(path: str) -> None:
    """Check a dataset file and report every problem with its location."""
    from ragmeter.datasets import validate_dataset
    from ragmeter.safety import printable

    problems = validate_dataset(path)
    for problem in problems:
        click.echo(printable(problem))
    if problems:
        click.echo(f"{len(problems)} problem(s) in {path}", err=True)
        sys.exit(1)
    click.echo(f"{path}: ok")


@datasets.command("fetch")
@click.argument("name")
@click.option("--base-url", default=None, help="A mirror serving the data-directory layout.")
def fetch_command(name: str, base_url: str | None) -> None:
    """Download a named benchmark into the user cache (checksummed)."""
    from ragmeter.datasets import registry

    folder = registry.locate(name) or registry.fetch(name, base_url=base_url)
    click.echo(f"{name}: {folder}")


@datasets.command("unanswerable")
@click.argument("dataset")
@click.option(
    "--share",
    type=click.FloatRange(0.0, 1.0, min_open=True),
    default=0.2,
    show_default=True,
    help="Share of ALL the queries to make unanswerable (at most every eligible one).",
)
@click.option("--seed", type=int, default=42, show_default=True, help="Which eligible queries are chosen.")
@click.option(
    "-o", "--output", required=True, type=click.Path(dir_okay=False), help="The copy (native JSON)."
)
def unanswerable_command(dataset: str, share: float, seed: int, output: str) -> None:
    """A copy of DATASET (a name or a file) where some queries lose their relevant documents: chosen by seed
    among the queries whose relevant documents are relevant to no other query, their documents removed from
    the corpus and the queries marked `answerable: false`."""
    from ragmeter.datasets import load_dataset
    from ragmeter.datasets.unanswerable import make_unanswerable
    from ragmeter.safety import write_text_atomic

    made = make_unanswerable(load_dataset(dataset, seed=seed), share=share, seed=seed)
    text = made.dataset.model_dump_json(indent=1, exclude_none=True)
    path = write_text_atomic(output, text, source="--output")
    n = len(made.dataset.queries)
    click.echo(
        f"{len(made.eligible)} of {n} queries eligible (relevant documents relevant to no other query); "
        f"{len(made.chosen)} chosen (share {share:g}, seed {seed}); {len(made.removed_docs)} documents "
        f"removed from the corpus; wrote {path}"
    )


# `datasets build-citation`: the citation-recommendation builder, registered as a sub-command here.
from ragmeter.cli.citation import build_citation_command  # noqa: E402

datasets.add_command(build_citation_command)
