"""`ragmeter generate`: synthetic test cases for a stored collection."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ragmeter.cli.options import db_option, open_db
from ragmeter.cli.settings import log_options
from ragmeter.errors import InputError


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
    "--question-model", metavar="MODEL", help="The LLM that writes the questions, e.g. openai:gpt-4o-mini."
)
@click.option("--judge", "judge_alias", metavar="MODEL", hidden=True, help="Deprecated: --question-model.")
@click.option(
    "--seed", default=42, show_default=True, type=int, help="The same seed samples the same chunks."
)
@log_options
@db_option
def generate_command(
    collection: str,
    source_id: str | None,
    sample_size: int,
    prompt_file: Path | None,
    question_model: str | None,
    judge_alias: str | None,
    seed: int,
    db: str | None,
) -> None:
    """Ask an LLM for one specific, searchable question per sampled chunk; store them as synthetic test cases.

    Empty, duplicate and chunk-copying questions are filtered out; LLM failures are counted and listed.
    """
    from ragmeter.datasets.generate import check_request, generate_test_cases
    from ragmeter.run.rebuild import check_llm_spec

    model = question_model or judge_alias
    if not model:
        raise InputError(
            "give --question-model MODEL, the LLM that writes the questions", source="--question-model"
        )
    check_llm_spec(model, source="--question-model" if question_model else "--judge")

    prompt = None
    if prompt_file is not None:
        try:
            prompt = prompt_file.read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", source=str(prompt_file)) from None
    with open_db(db) as store:
        check_request(
            store, collection, sample_size=sample_size, seed=seed, prompt=prompt, source_id=source_id
        )
        if judge_alias is not None:  # only once the command goes on: a refusal is its one line
            click.echo("ragmeter: warning: generate --judge is deprecated; use --question-model", err=True)
        report = generate_test_cases(
            store,
            collection,
            llm=model,
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
