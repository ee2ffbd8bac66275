"""`ragmeter eval QRELS RUN`: trec_eval-exact measures from files, as a table, JSON or CSV."""

from __future__ import annotations

import json
import os
import sys

import click

from ragmeter.errors import InputError


def parse_thresholds(items: tuple[str, ...], *, source: str = "--fail-under") -> list[tuple[str, float]]:
    """MEASURE=VALUE pairs (the registry's rule: finite numbers, known metrics); retrieval measures only."""
    if not items:  # the registry is not light: `ragmeter eval` without gates does not load it
        return []
    from ragmeter.metrics import lookup
    from ragmeter.metrics.gate import parse_thresholds as parse

    out = list(parse(items, source=source).items())
    for name, _ in out:
        spec = lookup(name)
        if spec is None or spec.family != "retrieval":
            raise InputError(f"{name!r} is not a retrieval measure", source=source)
    return out


def _split_measures(values: tuple[str, ...]) -> list[str] | None:
    names = [n.strip() for v in values for n in v.split(",") if n.strip()]
    return names or None


@click.command("eval")
@click.argument("qrels_path", metavar="QRELS")
@click.argument("run_path", metavar="RUN")
@click.option("-m", "--measure", "measures", multiple=True, help="Measure(s), repeatable or comma separated.")
@click.option("--per-query", is_flag=True, help="Also report every query's values.")
@click.option("--csv-raw", is_flag=True, help="With --format csv: query ids as they are (docs/security.md).")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table", show_default=True
)
@click.option(
    "--fail-under", multiple=True, metavar="MEASURE=VALUE", help="Exit 1 if the mean is below VALUE."
)
@click.option("--junit-xml", metavar="PATH", help="Write the --fail-under gates as JUnit XML test cases.")
@click.option(
    "--junit-per-query", is_flag=True, help="With --junit-xml: a test case per query that fell short."
)
@click.option("-l", "--relevance-level", type=int, default=1, show_default=True, help="As trec_eval -l.")
@click.option(
    "--ignore-missing", is_flag=True, help="Leave judged queries absent from the run out of the means."
)
@click.option("--include-no-relevant", is_flag=True, help="Average queries without relevant docs in as 0.")
@click.option(
    "--condensed",
    is_flag=True,
    help="Score condensed lists: unjudged docs removed from each ranking first (Sakai 2007; trec_eval -J).",
)
@click.option("--keep-first", is_flag=True, help="Keep the first of a repeated doc id instead of failing.")
@click.option("--collection-size", type=int, default=None, help="N for AQWV's MATERIAL false-alarm rate.")
@click.option(
    "--executor",
    metavar="local|ray[:ADDRESS]",
    default="local",
    help="ray: partition the queries over Ray workers (same values; docs/scale-out.md says when it pays).",
)
def eval_command(
    qrels_path: str,
    run_path: str,
    measures: tuple[str, ...],
    per_query: bool,
    csv_raw: bool,
    fmt: str,
    fail_under: tuple[str, ...],
    junit_xml: str | None,
    junit_per_query: bool,
    relevance_level: int,
    ignore_missing: bool,
    include_no_relevant: bool,
    condensed: bool,
    keep_first: bool,
    collection_size: int | None,
    executor: str,
) -> None:
    """Evaluate RUN (TREC run, JSON or TSV) against QRELS (TREC qrels, BEIR TSV or JSON)."""
    if "numpy" not in sys.modules:  # no linear algebra here: OpenBLAS's thread pool would only take CPU time
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from ragmeter.ir.data import Qrels, Run
    from ragmeter.ir.evaluate import evaluate
    from ragmeter.ir.measures import parse_measure, parse_measures

    if collection_size is not None and collection_size <= 0:
        raise InputError(
            f"must be a positive number of documents, got {collection_size}", source="--collection-size"
        )
    executor_kind, executor_address = "local", None
    if executor != "local":  # pydantic (ragmeter.models) only when another executor is named
        from ragmeter.models import parse_executor

        executor_kind, executor_address = parse_executor(executor)
    names = _split_measures(measures)
    thresholds = [(parse_measure(n).name, v) for n, v in parse_thresholds(fail_under)]
    wanted = [m.name for m in parse_measures(names)]
    wanted += [n for n, _ in thresholds if n not in wanted]
    if junit_per_query and not junit_xml:
        raise InputError("needs --junit-xml PATH", source="--junit-per-query")
    if junit_xml and not thresholds:
        raise InputError("needs --fail-under MEASURE=VALUE (the gates it reports)", source="--junit-xml")
    qrels = Qrels.read(qrels_path, keep_first=keep_first)
    run = Run.read(run_path, keep_first=keep_first)
    engine = evaluate
    if executor_kind == "ray":
        from functools import partial

        from ragmeter.distributed.ir_eval import evaluate_ray

        engine = partial(evaluate_ray, address=executor_address)
    result = engine(
        qrels,
        run,
        wanted,
        relevance_level=relevance_level,
        missing="ignore" if ignore_missing else "zero",
        no_relevant="zero" if include_no_relevant else "exclude",
        collection_size=collection_size,
        condensed=condensed,
    )
    if fmt == "json":
        sys.stdout.write(json.dumps(result.to_dict(per_query=per_query)) + "\n")
    elif fmt == "csv":
        sys.stdout.write(result.to_csv(per_query=per_query, raw=csv_raw))
    else:
        _print_table(result, per_query=per_query)

    if junit_xml:
        from ragmeter.report.junit import gates_of_ir, write_junit_xml

        write_junit_xml(junit_xml, gates_of_ir(result, dict(thresholds)), per_query=junit_per_query)
    if not thresholds:
        return
    from ragmeter.metrics.gate import check

    short = check(result.aggregate, dict(thresholds))
    for message in short:
        click.echo(f"ragmeter: fail-under: {message}", err=True)
    if short:
        sys.exit(1)


def _print_table(result: object, *, per_query: bool) -> None:
    from rich.table import Table

    from ragmeter.ir.evaluate import IREvaluation
    from ragmeter.safety import console_text, safe_console

    assert isinstance(result, IREvaluation)
    console = safe_console()
    if per_query:
        pq = Table(title="per query", show_lines=False)
        pq.add_column("query")
        for name in result.measure_names:
            pq.add_column(name, justify="right")
        for qid, row in result.per_query.items():
            pq.add_row(console_text(qid), *(f"{v:.4f}" for v in row.values()))
        console.print(pq)
    condensed = " (condensed lists)" if result.condensed else ""
    table = Table(title=f"ragmeter eval: {result.n_queries} queries{condensed}")
    table.add_column("measure")
    table.add_column("mean", justify="right")
    table.add_column("std", justify="right")
    agg, std = result.aggregate, result.std
    for name in result.measure_names:
        table.add_row(name, f"{agg[name]:.4f}", f"{std[name]:.4f}")
    console.print(table)
    for note in result.policy_notes():
        console.print(f"[dim]- {note}[/dim]")
