"""`ragmeter datasets build-citation`: the citation-prediction dataset as native JSON."""

from __future__ import annotations

from pathlib import Path

import click

from ragmeter.datasets.citation import build_citation_dataset


@click.command("build-citation")
@click.option(
    "--corpus",
    "corpus",
    required=True,
    type=click.Path(path_type=Path),
    help="JSONL of papers (id, title, abstract, references) or an ACM-CR folder.",
)
@click.option(
    "--min-refs", default=5, show_default=True, type=int, help="Fewest in-corpus references a query needs."
)
@click.option("--name", default=None, help="Dataset name (default: from the corpus).")
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False, path_type=Path))
def build_citation_command(corpus: Path, min_refs: int, name: str | None, output: Path) -> None:
    """Build a citation-prediction dataset: abstracts are queries, cited papers the relevant docs."""
    dataset = build_citation_dataset(corpus, min_refs=min_refs, name=name)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(dataset.model_dump_json(indent=1, exclude_none=True), encoding="utf-8")
    meta = dataset.metadata
    n_links = sum(len(q.relevant_doc_ids) for q in dataset.queries)
    click.echo(
        f"{output}: {meta['n_queries']} of {meta['n_citing_papers']} citing papers have >= {min_refs} "
        f"in-corpus references ({n_links} links); corpus {len(dataset.corpus or [])} documents; "
        f"{len(meta['dropped_few_references'])} dropped for too few references, "
        f"{len(meta['dropped_no_abstract'])} for no abstract."
    )
