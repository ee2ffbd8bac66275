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
    open_db,
    parse_fail_under,
    print_run,
)
from ragmeter.cli.run_generate import _check_generated_run, _generate_if_empty
from ragmeter.cli.settings import (
    apply_settings,
    check_invocation,
    field_origins,
    log_options,
    parse_settings,
    settings_options,
)
from ragmeter.errors import InputError
from ragmeter.llm.spec import SPEC_HELP


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


def _load_user_metrics(system: str | None) -> None:
    """Metrics registered by the --system module are known before --metrics and --fail-under are checked."""
    from ragmeter.systems.external import import_system_module

    import_system_module(system)


def _check_resume_output(output: str | None) -> None:
    """-o with --resume: the resumed run's results go there (not silently to the stored run's path);
    an unwritable path is refused before the run resumes."""
    if output:
        from ragmeter.safety import check_output_path

        check_output_path(output, source="--output")


def _write_resume_output(result: Any, output: str, *, raw: bool) -> None:
    from ragmeter.score.writers import csv_path_for, write_csv, write_json

    write_json(result, output, source="--output")
    write_csv(result, csv_path_for(output), raw=raw, source="--output")


@click.command("run")
@click.option("--dataset", "-d", help="A named dataset, a dataset file/folder, or store:COLLECTION.")
@click.option(
    "--system", "-s", help="builtin | module:function | http(s)://... | a run file (TREC or JSONL)."
)
@click.option(
    "--mode", type=click.Choice(["fulltext", "semantic", "hybrid"]), help="Built-in retrieval mode."
)
@click.option("--judge", "judge", metavar="MODEL", help=f"Judge LLM: {SPEC_HELP}.")
@click.option(
    "--generator", metavar="MODEL", help="LLM that the built-in pipeline answers with (as --judge)."
)
@click.option("--no-generation", is_flag=True, help="Retrieval only: no answers, no answer metrics.")
@click.option("--no-llm-judge", is_flag=True, help="No LLM judging even when --judge or the config sets it.")
@click.option(
    "--namespace",
    metavar="NAME",
    help="Index namespace of the built-in pipeline (default: the dataset's name).",
)
@click.option(
    "--collection",
    metavar="NAME",
    help="Evaluate the test cases of this store collection (the same as --dataset store:NAME).",
)
@click.option("--top-k", "top_k", metavar="K,K,...", help="Retrieval cut-offs (default 1,3,5,10).")
@click.option(
    "--metrics", metavar="NAME,...", help="Only these metrics (measures, judges, sbert_similarity)."
)
@click.option("--limit", type=int, help="Evaluate N queries sampled with --seed.")
@click.option("--seed", type=int, help="Seed of sampling and every non-LLM number (default 42).")
@click.option("--concurrency", type=int, help="Queries in flight at once (default 16; per worker on Ray).")
@click.option(
    "--executor",
    metavar="local|ray[:ADDRESS]",
    help="Where queries run: here (default) or on Ray workers (docs/scale-out.md); also with --resume.",
)
@click.option("--output", "-o", metavar="FILE.json", help="Where the JSON goes (CSV beside it).")
@click.option(
    "--csv-raw", is_flag=True, help="CSV cells as they are (no ' before = + - @; docs/security.md)."
)
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
    help="With --collection: first generate synthetic test cases with --question-model if it has none.",
)
@click.option(
    "--question-model",
    metavar="MODEL",
    help="For --generate: the LLM that writes the questions (default: --judge).",
)
@click.option(
    "--sample-size", type=click.IntRange(min=1), default=20, show_default=True, help="For --generate."
)
@settings_options
@log_options
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
    executor: str | None,
    output: str | None,
    csv_raw: bool,
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
    question_model: str | None,
    sample_size: int,
    settings: tuple[str, ...],
    context_k: int | None,
    cache: bool | None,
    reranker: str | None,
    embedding: str | None,
    embedding_backend: str | None,
    disable: tuple[str, ...],
    judge_timeout: float | None,
    judge_retries: int | None,
    judge_budget: int | None,
    db: str | None,
    collection: str | None,
) -> None:
    """Evaluate a system on a dataset: retrieval, answer and judge metrics, stored per query."""
    from ragmeter.run import load_config, run_evaluation
    from ragmeter.run.rebuild import check_llm_spec
    from ragmeter.safety import check_output_path
    from ragmeter.score.writers import csv_path_for, write_csv, write_json

    _load_user_metrics(system)
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
    if executor is not None:
        from ragmeter.models import parse_executor

        parse_executor(executor)
    target = output or str(default_output(None))
    for path in (target, csv_path_for(target)):  # an unwritable output fails before anything is stored
        check_output_path(path, source="--output")
    run_settings = parse_settings(
        settings,
        context_k=context_k,
        cache=cache,
        reranker=reranker,
        embedding=embedding,
        embedding_backend=embedding_backend,
        disable=disable,
        judge_timeout=judge_timeout,
        judge_retries=judge_retries,
        judge_budget=judge_budget,
    )
    if collection:
        if dataset and dataset != f"store:{collection}":
            raise InputError("give --collection NAME or --dataset, not both", source="--collection")
        dataset = f"store:{collection}"
    store = open_db(db)
    progress = not no_progress and fmt == "table"
    if resume:
        given = dataset or system or config_path or settings or run_settings.pipeline or run_settings.judge
        if given or run_settings.extra or run_settings.cache is not None:
            raise InputError(
                "--resume takes the dataset, system, config and settings stored with the run",
                source="--resume",
            )
        check_invocation(
            None, None, None, store=store, resume=resume, system_options={}, thresholds=thresholds
        )
        _check_resume_output(output)
        result = run_evaluation(
            None,
            None,
            None,
            store=store,
            resume=resume,
            retry_failed=retry_failed,
            progress=progress,
            executor=executor,
        )
    else:
        writer = question_model or judge
        if generate and writer:
            check_llm_spec(writer, source="--question-model" if question_model else "--judge")
        if generate and collection and not dataset:
            dataset = f"store:{collection}"  # what it evaluates once generated (checked first, below)
        flags: dict[str, Any] = {
            "dataset": dataset,
            "system": system,
            "mode": mode,
            "namespace": namespace,
            "retrieval_top_k": _top_k(top_k),
            "metrics": [m.strip() for m in metrics.split(",") if m.strip()] if metrics else None,
            "limit": limit,
            "seed": seed,
            "concurrency": concurrency,
            "executor": executor,
            "output": output,
            "generator_model": generator,
        }
        overrides = {**run_settings.sets, **{k: v for k, v in flags.items() if v is not None}}
        if judge:
            overrides["judge_model"] = judge
            overrides["use_llm_judge"] = True
        if no_generation:
            overrides["evaluate_generation"] = False
        if no_llm_judge:
            overrides["use_llm_judge"] = False
        config = apply_settings(load_config(config_path, overrides), run_settings)
        options = run_settings.pipeline
        if generate:  # only after the config, flags and settings were checked: a refusal stores nothing
            _check_generated_run(config, thresholds, options)
            dataset = _generate_if_empty(store, collection, dataset, writer, seed, sample_size)
        prepared = check_invocation(
            config.dataset,
            config.system,
            config,
            store=store,
            resume=None,
            system_options=options,
            thresholds=thresholds,
            option_flags=run_settings.flags,
            origins=field_origins(flags, run_settings.sets, config_path),
        )
        # The judge's timeout, retries and budget travel in the record (config.extra["judge_options"]):
        # this run, its resume and Ray workers build the judge from it the same way (ragmeter.run.rebuild).
        result = run_evaluation(
            prepared.dataset,
            config.system,
            config,
            store=store,
            name=name,
            progress=progress,
            system_options=options,
        )
    json_path = output if resume and output else result.config.output
    if resume and output:
        _write_resume_output(result, output, raw=csv_raw)
    elif not json_path:
        json_path = str(default_output(result.run_id))
        write_json(result, json_path, source="--output")
        write_csv(result, csv_path_for(json_path), raw=csv_raw, source="--output")
    elif csv_raw:  # the runner wrote the CSV neutralised; the user asked for raw cells
        write_csv(result, csv_path_for(json_path), raw=True, source="--output")
    if fmt == "json":
        echo_json(result.model_dump(mode="json"))
    else:
        print_run(result)
        click.echo(
            f"results: {json_path} and {csv_path_for(json_path)}; stored as run {result.run_id} in {store.url}"
        )
    store.close()
    short = check_fail_under(result.aggregate, thresholds)
    short += _mixed_version_gates(result, thresholds)
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


def _mixed_version_gates(result: Any, thresholds: dict[str, float]) -> list[str]:
    """A gate refuses a metric whose values in this run mix versions (a resume after a prompt change)."""
    from ragmeter.experiments.version_guard import mixed_versions

    return [
        f"{line}: refused (`ragmeter rescore {result.run_id}`)" for line in mixed_versions(result, thresholds)
    ]
