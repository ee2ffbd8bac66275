"""`ragmeter generate`: synthetic test cases for a stored collection."""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.command("generate")
@click.option("--collection", required=True, help="The stored collection whose chunks are sampled.")
@click.option("--source-id", default=None, help="Only chunks of this document.")
@click.option("--sample-size", default=20, show_default=True, type=click.IntRange(min=1))
@click.option(
    "--prompt",
    "prompt_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Template file with {chunk_text}.",
)
@click.option(
    "--judge", "judge", required=True, help="The LLM that writes the questions, e.g. openai:gpt-4o-mini."
)
@click.option(
    "--seed", default=42, show_default=True, type=int, help="The same seed samples the same chunks."
)
@click.option("--db", default=None, help="Store URL (default: $RAGMETER_DB, else .ragmeter/ragmeter.db).")
def generate_command(
    collection: str,
    source_id: str | None,
    sample_size: int,
    prompt_file: Path | None,
    judge: str,
    seed: int,
    db: str | None,
) -> None:
    """Ask an LLM for one specific, searchable question per sampled chunk; store them as synthetic test cases.

    Empty, duplicate and chunk-copying questions are filtered out; LLM failures are counted and listed.
    """
    from ragmeter.datasets.generate import generate_test_cases
    from ragmeter.errors import InputError
    from ragmeter.store import open_store

    prompt = None
    if prompt_file is not None:
        try:
            prompt = prompt_file.read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", source=str(prompt_file)) from None
    with open_store(db) as store:
        report = generate_test_cases(
            store,
            collection,
            llm=judge,
            sample_size=sample_size,
            seed=seed,
            prompt=prompt,
            source_id=source_id,
        )
    for case in report.created:
        click.echo(f"{case.case_id}\t{case.chunk_id}\t{case.question}")
    for chunk_id, reason in report.failed:
        click.echo(f"LLM failure on chunk {chunk_id}: {reason}", err=True)
    click.echo(report.summary(), err=True)
    if not report.created and report.failed:
        sys.exit(1)
