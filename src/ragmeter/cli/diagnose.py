"""`ragmeter diagnose RUN`: where the points were lost, by counterfactual replay (ragmeter.diagnose)."""

from __future__ import annotations

import asyncio
from typing import Any

import click

from ragmeter.cli.options import console, db_option, echo_json, format_option, open_db


@click.command("diagnose")
@click.argument("run_id", metavar="RUN")
@click.option(
    "--metrics", metavar="NAME,...", help="Bounded answer metrics to attribute (default: all the run has)."
)
@click.option(
    "--also",
    multiple=True,
    metavar="INTERVENTION",
    help=(
        "An extra replay beside the chain: context-k=N (the top N stored contexts), or no-rerank (the "
        "built-in pipeline with its reranker switched off: it re-runs retrieval, and says how often), or "
        "closed-book (the generator with no context; needs no qrels: per query closed_book_correct)."
    ),
)
@click.option("--seed", type=int, default=42, show_default=True, help="Seed of the bootstrap.")
@click.option("--resamples", type=int, default=2000, show_default=True, help="Bootstrap samples.")
@format_option("table", "json")
@db_option
def diagnose_command(
    run_id: str,
    metrics: str | None,
    also: tuple[str, ...],
    seed: int,
    resamples: int,
    fmt: str,
    db: str | None,
) -> None:
    """Replay RUN with oracle ranking, then oracle contexts (its stored retrieved lists are reused: only the
    generator and the judges are called; each replay is stored as a run) and split the gap to each answer
    metric's best value into ranking/context selection, retrieval and generation, with bootstrap 95% CIs."""
    from ragmeter.diagnose.attribution import adiagnose
    from ragmeter.diagnose.nugget_facts import lines as fact_lines

    names = [m.strip() for m in metrics.split(",") if m.strip()] if metrics else None
    store = open_db(db)
    try:
        out = asyncio.run(
            adiagnose(run_id, store=store, metrics=names, also=also, seed=seed, n_resamples=resamples)
        )
    finally:
        store.close()
    if fmt == "json":
        echo_json(out)
        return
    if out["metrics"]:
        console().print(_table(out))
    for line in _null_lines(out["metrics"]):
        click.echo(line)
    for line in fact_lines(out["metrics"]):
        click.echo(line)
    for name, rows in out.get("deltas", {}).items():
        for r in rows:
            if r["n"]:
                click.echo(
                    f"{name}: {r['metric']} (lower is better) {r['delta']:+.4f} vs the run over {r['n']} queries"
                )
    book = out.get("closed_book")
    if book is not None and book["n"]:
        lo, hi = book["ci95"]
        owed = book["owed_to_retrieval"]
        click.echo(
            f"closed-book: {book['closed_book_correct']:.1%} correct with no context [{lo:.3f}, {hi:.3f}] "
            f"(Wilson) over {book['n']} queries; {owed['n']} of {owed['of']} owe their correct answer to "
            "retrieval"
        )
    for name, rows in out.get("also", {}).items():
        for r in rows:
            if r["n"]:
                click.echo(f"{name}: {r['metric']} {r['delta']:+.4f} vs the run over {r['n']} queries")
    if out.get("copied"):
        click.echo(f"copied from the run, not judged again: {', '.join(out['copied'])}")
    click.echo(f"replays stored as runs: {', '.join(f'{k} {v}' for k, v in out['replays'].items())}")
    for name, usage in out.get("usage", {}).items():
        click.echo(f"{name} spent: {usage_line(usage)}")
    click.echo(out["calls"])


def usage_line(usage: dict[str, Any]) -> str:
    """`N calls (generator G, judge J), I input / O output tokens, cost $C` of one replay."""
    total, gen, judge = usage["total"], usage["generator"], usage["judge"]
    failed = f", {total['failed_calls']} failed" if total["failed_calls"] else ""
    cost = (
        f"cost ${total['cost_usd']:.4f}"
        if total["cost_usd"] is not None
        else f"cost unknown ({total['cost_note'] or 'no price'})"
    )
    return (
        f"{total['calls']} calls (generator {gen['calls']}, judge {judge['calls']}{failed}), "
        f"{total['input_tokens']} input / {total['output_tokens']} output tokens, {cost}"
    )


def _null_lines(metrics: list[dict[str, Any]]) -> list[str]:
    """What the attribution counted as 0 and what it left out, per metric and part."""
    lines = []
    for m in metrics:
        zeros = sum(m.get("counted_as_zero", {}).values())
        if zeros:
            lines.append(
                f"{m['metric']}: {zeros} values null because the answer had no claims counted as 0 "
                "(as RAGChecker counts them)"
            )
        for part, p in m.get("parts", {}).items():
            for why, n in p.get("left_out", {}).items():
                lines.append(f"{m['metric']} {part}: {n} queries left out ({why})")
        if not m["n"]:
            for why, n in m.get("left_out", {}).items():
                lines.append(f"{m['metric']}: {n} queries left out ({why})")
    return lines


def _table(out: dict[str, Any]) -> Any:
    from rich.table import Table

    table = Table(title=f"where the points were lost: run {out['run']} (paired bootstrap 95% CI)")
    for col in ("metric", "run", "best", "gap", "ranking+context", "retrieval", "generation", "n"):
        table.add_column(col, justify="left" if col == "metric" else "right")
    for m in out["metrics"]:
        if not m["n"]:
            table.add_row(m["metric"], *["-"] * 6, "0")
            continue
        parts = [
            f"{p['mean']:+.3f} [{p['ci95'][0]:+.3f}, {p['ci95'][1]:+.3f}]"
            for p in (m["parts"][k] for k in ("ranking_and_context", "retrieval", "generation"))
        ]
        table.add_row(
            m["metric"], f"{m['run']:.3f}", f"{m['best']:g}", f"{m['gap']:+.3f}", *parts, str(m["n"])
        )
    return table
