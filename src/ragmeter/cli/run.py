"""`ragmeter run`: evaluate a system on a dataset, store the run, print and save the results."""

from __future__ import annotations

import sys
from typing import Any

import click

from ragmeter.cli.options import (
    check_fail_under,
    db_option,
    default_output,
    echo_json,
    format_option,
    parse_fail_under,
    print_run,
)
from ragmeter.errors import InputError


def _top_k(value: str | None) -> list[int] | None:
    if value is None:
        return None
    try:
        ks = sorted({int(v) for v in value.replace(" ", "").split(",") if v})
    except ValueError:
        raise InputError(f"expected comma-separated integers, got {value!r}", source="--top-k") from None
    if not ks or ks[0] < 1:
        raise InputError("cut-offs must be integers >= 1", source="--top-k")
    return ks


@click.command("run")
@click.option("--dataset", "-d", help="A named dataset, a dataset file/folder, or store:COLLECTION.")
@click.option(
    "--system", "-s", help="builtin | module:function | http(s)://... | a run file (TREC or JSONL)."
)
@click.option(
    "--mode", type=click.Choice(["fulltext", "semantic", "hybrid"]), help="Built-in retrieval mode."
)
@click.option(
    "--judge", "judge", metavar="MODEL", help="Judge LLM: local, openai:MODEL, anthropic:MODEL, MODEL@URL."
)
@click.option("--generator", metavar="MODEL", help="LLM that the built-in pipeline answers with.")
@click.option("--no-generation", is_flag=True, help="Retrieval only: no answers, no answer metrics.")
@click.option("--no-llm-judge", is_flag=True, help="No LLM judging even when --judge or the config sets it.")
@click.option(
    "--namespace", "--collection", "namespace", help="Namespace / collection of the built-in index."
)
@click.option("--top-k", "top_k", metavar="K,K,...", help="Retrieval cut-offs (default 1,3,5,10).")
@click.option(
    "--metrics", metavar="NAME,...", help="Only these metrics (measures, judges, sbert_similarity)."
)
@click.option("--limit", type=int, help="Evaluate N queries sampled with --seed.")
@click.option("--seed", type=int, help="Seed of sampling and every non-LLM number (default 42).")
@click.option("--concurrency", type=int, help="Queries in flight at once (default 16).")
@click.option("--output", "-o", metavar="FILE.json", help="Where the JSON goes (CSV beside it).")
@click.option("--name", default="", help="A label for the run.")
@format_option("table", "json")
@click.option(
    "--fail-under", "fail_under", multiple=True, metavar="METRIC=VALUE", help="Exit 1 if a mean is lower."
)
@click.option("--junit-xml", metavar="PATH", help="Write the --fail-under gates as JUnit XML test cases.")
@click.option(
    "--junit-per-query", is_flag=True, help="With --junit-xml: a test case per query that fell short."
)
@click.option(
    "--mlflow",
    "mlflow_uri",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[URI]",
    help="Log the run to MLflow (default URI: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db).",
)
@click.option(
    "--resume", "resume", metavar="RUN_ID", help="Complete an interrupted run (skips finished queries)."
)
@click.option("--retry-failed", is_flag=True, help="With --resume: evaluate the failed queries again.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="YAML or TOML EvalConfig.")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@click.option(
    "--generate",
    is_flag=True,
    help="With --collection: first generate synthetic test cases with the --judge LLM if it has none.",
)
@click.option(
    "--sample-size", type=click.IntRange(min=1), default=20, show_default=True, help="For --generate."
)
@db_option
def run_command(
    dataset: str | None,
    system: str | None,
    mode: str | None,
    judge: str | None,
    generator: str | None,
    no_generation: bool,
    no_llm_judge: bool,
    namespace: str | None,
    top_k: str | None,
    metrics: str | None,
    limit: int | None,
    seed: int | None,
    concurrency: int | None,
    output: str | None,
    name: str,
    fmt: str,
    fail_under: tuple[str, ...],
    junit_xml: str | None,
    junit_per_query: bool,
    mlflow_uri: str | None,
    resume: str | None,
    retry_failed: bool,
    config_path: str | None,
    no_progress: bool,
    generate: bool,
    sample_size: int,
    db: str | None,
) -> None:
    """Evaluate a system on a dataset: retrieval, answer and judge metrics, stored per query."""
    from ragmeter.runner import csv_path_for, load_config, run_evaluation, write_csv, write_json
    from ragmeter.store import open_store

    thresholds = parse_fail_under(fail_under)
    if junit_per_query and not junit_xml:
        raise InputError("needs --junit-xml PATH", source="--junit-per-query")
    if junit_xml and not thresholds:
        raise InputError("needs --fail-under METRIC=VALUE (the gates it reports)", source="--junit-xml")
    if mlflow_uri is not None:
        from ragmeter.integrations.mlflow import require_mlflow

        require_mlflow()  # before anything runs or is stored
    if concurrency is not None and concurrency < 1:
        raise InputError("must be at least 1", source="--concurrency")
    store = open_store(db)
    if resume:
        if dataset or system or config_path:
            raise InputError(
                "--resume takes the dataset, system and config stored with the run", source="--resume"
            )
        result = run_evaluation(
            None,
            None,
            None,
            store=store,
            resume=resume,
            retry_failed=retry_failed,
            progress=not no_progress and fmt == "table",
        )
    else:
        if generate:
            dataset = _generate_if_empty(store, namespace, dataset, judge, seed, sample_size)
        overrides: dict[str, Any] = {
            "dataset": dataset,
            "system": system,
            "mode": mode,
            "namespace": namespace,
            "retrieval_top_k": _top_k(top_k),
            "metrics": [m.strip() for m in metrics.split(",") if m.strip()] if metrics else None,
            "limit": limit,
            "seed": seed,
            "concurrency": concurrency,
            "output": output,
            "generator_model": generator,
        }
        if judge:
            overrides["judge_model"] = judge
            overrides["use_llm_judge"] = True
        if no_generation:
            overrides["evaluate_generation"] = False
        if no_llm_judge:
            overrides["use_llm_judge"] = False
        config = load_config(config_path, overrides)
        result = run_evaluation(
            None, None, config, store=store, name=name, progress=not no_progress and fmt == "table"
        )
    json_path = result.config.output
    if not json_path:
        json_path = str(default_output(result.run_id))
        write_json(result, json_path)
        write_csv(result, csv_path_for(json_path))
    if fmt == "json":
        echo_json(result.model_dump(mode="json"))
    else:
        print_run(result)
        click.echo(
            f"results: {json_path} and {csv_path_for(json_path)}; stored as run {result.run_id} in {store.url}"
        )
    store.close()
    short = check_fail_under(result.aggregate, thresholds)
    if junit_xml:
        from ragmeter.report.junit import gates_of_run, write_junit_xml

        write_junit_xml(junit_xml, gates_of_run(result, thresholds), per_query=junit_per_query)
        click.echo(f"JUnit XML: {junit_xml}", err=True)
    if mlflow_uri is not None:
        from ragmeter.integrations.mlflow import log_run

        logged = log_run(
            result, tracking_uri=mlflow_uri or None, artifacts=[json_path, csv_path_for(json_path)]
        )
        click.echo(
            f"MLflow: run {logged.run_id} in experiment {logged.experiment!r} at {logged.tracking_uri}",
            err=True,
        )
    for line in short:
        click.echo(f"ragmeter: fail-under: {line}", err=True)
    if short:
        sys.exit(1)


def _generate_if_empty(
    store: Any,
    collection: str | None,
    dataset: str | None,
    judge: str | None,
    seed: int | None,
    sample_size: int,
) -> str:
    """`run --collection C --generate`: make synthetic test cases when C has none; evaluate store:C."""
    from ragmeter.datasets.generate import generate_test_cases

    if not collection:
        raise InputError(
            "--generate needs --collection C (the stored collection to sample)", source="--generate"
        )
    if dataset and dataset != f"store:{collection}":
        raise InputError("--generate evaluates store:COLLECTION; leave --dataset out", source="--generate")
    if store.test_cases(collection):
        click.echo(f"collection {collection!r} already has test cases: not generating", err=True)
    else:
        if not judge:
            raise InputError(
                "--generate needs --judge MODEL, the LLM that writes the questions", source="--generate"
            )
        report = generate_test_cases(store, collection, llm=judge, sample_size=sample_size, seed=seed or 42)
        for chunk_id, reason in report.failed:
            click.echo(f"LLM failure on chunk {chunk_id}: {reason}", err=True)
        click.echo(report.summary(), err=True)
        if not report.created:
            raise InputError("no synthetic test case could be generated", source="--generate")
    return f"store:{collection}"
