"""`ragmeter judge-qrels`: label the runs' pooled pairs with an LLM judge and write TREC qrels."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import click

from ragmeter.cli.judge_options import CACHE_RERUN_HELP, judge_call_options
from ragmeter.cli.judges import _RUNS, _STORE_LABELS, _client, _human, _read_runs
from ragmeter.cli.options import db_option, echo_json, format_option
from ragmeter.errors import InputError
from ragmeter.llm.spec import SPEC_HELP


@click.command("judge-qrels")
@_RUNS
@click.argument("more_runs", nargs=-1, metavar="[RUN]...")
@click.option("--depth", type=int, default=10, show_default=True, help="Pool each run's top K docs.")
@click.option("--judge", required=True, metavar="MODEL", help=f"Judge LLM: {SPEC_HELP}.")
@click.option("--output", "-o", required=True, metavar="FILE.qrels", help="Where the TREC qrels go.")
@click.option("--qrels", "qrels_path", help="Human qrels: their pairs are not sent, and their grades win.")
@_STORE_LABELS
@click.option("--all", "all_pairs", is_flag=True, help="Label every pooled pair, judged by people or not.")
@click.option("--dataset", "-d", required=True, help="The dataset with the query and document texts.")
@click.option(
    "--labels", "labels_path", metavar="FILE.jsonl", help="Also write each LLM label with its reason."
)
@click.option("--seed", type=int, default=42, show_default=True, help="Seed passed to the judge.")
@click.option(
    "--prompt",
    type=click.Choice(["ours", "umbrela"]),
    default="ours",
    show_default=True,
    help="ours: UMBRELA's grades with reasoning-first JSON; umbrela: UMBRELA's published prompt and settings.",
)
@judge_call_options(cache_help=CACHE_RERUN_HELP)
@format_option("table", "json")
@db_option
def judge_qrels_command(
    runs: tuple[str, ...],
    more_runs: tuple[str, ...],
    depth: int,
    judge: str,
    output: str,
    qrels_path: str | None,
    all_pairs: bool,
    dataset: str,
    labels_path: str | None,
    seed: int,
    prompt: str,
    concurrency: int,
    cache: str | None,
    budget: int | None,
    fmt: str,
    store_run: str | None = None,
    db: str | None = None,
) -> None:
    """Label the runs' pooled top-K pairs on the TREC 0-3 scale with an LLM (UMBRELA-style) and write qrels."""
    from ragmeter.datasets import load_dataset
    from ragmeter.validity.qrels_judging import judge_pool

    if depth < 1:
        raise InputError(f"--depth must be >= 1, got {depth}", source="--depth")
    run_tables = _read_runs([*runs, *more_runs])
    human = _human(qrels_path, store_run, db)
    data = load_dataset(dataset, seed=seed)
    queries = {q.query_id: q.question for q in data.queries}
    docs = {d.doc_id: (f"{d.title}\n{d.text}" if d.title else d.text) for d in data.corpus or []}
    llm = _client(judge, concurrency=concurrency, cache=cache, seed=seed, budget=budget)

    async def go() -> Any:
        async with llm:
            return await judge_pool(
                list(run_tables.values()),
                depth=depth,
                queries=queries,
                docs=docs,
                llm=llm,
                human=human,
                all_pairs=all_pairs,
                concurrency=concurrency,
                prompt=prompt,
            )

    qrels, labels, report = asyncio.run(go())
    if qrels is None:
        raise InputError("the judge graded no pair: nothing to write (see the failures with --format json)")
    qrels.to_trec(output)
    if report.provenance is not None:
        from ragmeter.validity.qrels_provenance import write_provenance

        write_provenance(output, report.provenance)
    if labels_path:
        with open(labels_path, "w", encoding="utf-8") as fh:
            for lab in labels:
                row = {
                    "query_id": lab.query_id,
                    "doc_id": lab.doc_id,
                    "grade": lab.grade,
                    "reason": lab.reason,
                }
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    out = {**report.to_dict(), "output": output, "merged_with_human": human is not None, "prompt": prompt}
    if fmt == "json":
        echo_json(out)
        return
    click.echo(
        f"pooled {out['n_pooled']} pairs (depth {depth}, {len(run_tables)} runs); "
        f"{out['n_human_judged']} judged by people; {out['n_sent_to_judge']} sent to the judge: "
        f"{out['n_labelled']} labelled {out['grades']}, {out['n_failed']} failed"
    )
    for fail in out["failures"][:5]:
        click.echo(f"failed {fail['query_id']} {fail['doc_id']}: {fail['reason']}")
    click.echo(
        f"wrote {output}"
        + (" (human grades win where both judge)" if human is not None else "")
        + f" and its provenance {output}.provenance.json ({out['n_written_human']} human, "
        f"{out['n_written_llm']} LLM pairs)"
    )
