"""`ragmeter rescore RUN`: recompute or add metrics on a stored run without calling its system."""

from __future__ import annotations

import click

from ragmeter.cli.options import db_option, echo_json, format_option, open_db, print_run


@click.command("rescore")
@click.argument("run_id", metavar="RUN")
@click.option(
    "--metrics",
    metavar="NAME,...",
    help="Only these metrics (default: every non-LLM metric of the run, and judge metrics graded by another prompt).",
)
@click.option(
    "--judge", metavar="MODEL", help="Judge LLM for judge metrics (adds them to a run made without one)."
)
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    help="Also write the rescored run's JSON here (and its CSV beside it), as `run -o`.",
)
@click.option(
    "--nuggets", metavar="FILE", help="Score the nugget_* metrics against this nugget set (judged again)."
)
@click.option("--nuggets-prompt", type=click.Choice(["nuggetizer", "ours"]), help="Nugget assignment prompt.")
@format_option("table", "json")
@db_option
def rescore_command(
    run_id: str,
    metrics: str | None,
    judge: str | None,
    nuggets: str | None,
    nuggets_prompt: str | None,
    output: str | None,
    fmt: str,
    db: str | None,
) -> None:
    """Recompute metrics of a stored run from its stored outputs (its system is not called)."""
    from ragmeter.run.rescore import rescore
    from ragmeter.safety import check_output_path

    names = [m.strip() for m in metrics.split(",") if m.strip()] if metrics else None
    if output is not None:  # refused before the store is touched
        check_output_path(output, source="--output")
    store = open_db(db)
    try:
        result = rescore(
            run_id, store=store, metrics=names, judge=judge, nuggets=nuggets, nuggets_prompt=nuggets_prompt
        )
    finally:
        store.close()
    if output is not None:
        from ragmeter.score.writers import write_outputs

        write_outputs(result, output)
    if fmt == "json":
        echo_json(result.model_dump(mode="json"))
    else:
        print_run(result)
