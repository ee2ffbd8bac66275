"""`ragmeter judges calibrate`: the confidence threshold at or above which a cheap judge is trusted, with
the guarantee it carries (Trust or Escalate; ragmeter.stats.fixed_sequence, ragmeter.validity.calibration)."""

from __future__ import annotations

import asyncio
from typing import Any

import click

from ragmeter.cli.judge_options import judge_call_options, parse_scale
from ragmeter.cli.options import console, echo_json, format_option
from ragmeter.errors import InputError
from ragmeter.llm.spec import SPEC_HELP


@click.command("calibrate")
@click.option("--judge", required=True, metavar="CHEAP", help=f"The cheap judge LLM: {SPEC_HELP}.")
@click.option("--metric", required=True, help="The judge metric (its human labels are in --labels).")
@click.option(
    "--labels",
    "labels",
    required=True,
    metavar="DATASET",
    help="A dataset whose queries carry human_labels[METRIC] (binary or integer), as for `judges validate`.",
)
@click.option(
    "--target-agreement", type=float, required=True, help="Agreement with people to guarantee, e.g. 0.9."
)
@click.option("--risk", type=float, required=True, help="Allowed chance that the guarantee fails, e.g. 0.1.")
@click.option(
    "--confidence",
    type=click.Choice(["logprob", "repeats"]),
    default="logprob",
    show_default=True,
    help="logprob: the verdict tokens' probability (the server must return logprobs); repeats: the share "
    "of k repeats that agree with their majority.",
)
@click.option("--repeats", type=int, default=5, show_default=True, help="k, with --confidence repeats.")
@click.option("--temperature", type=float, default=0.7, show_default=True, help="Sampling of the repeats.")
@click.option("--scale", default=None, metavar="LO:HI", help="The human scale, when not all grades occur.")
@click.option(
    "--output",
    "-o",
    "output",
    default=None,
    metavar="FILE.json",
    help="Where the calibration goes (default: calibration-METRIC.json); `run --card` reads it.",
)
@click.option("--seed", type=int, default=42, show_default=True, help="Seed of the judge calls.")
@judge_call_options()
@format_option("table", "json")
def calibrate_command(
    judge: str,
    metric: str,
    labels: str,
    target_agreement: float,
    risk: float,
    confidence: str,
    repeats: int,
    temperature: float,
    scale: str | None,
    output: str | None,
    seed: int,
    concurrency: int,
    cache: str | None,
    budget: int | None,
    fmt: str,
) -> None:
    """Calibrate when the cheap judge METRIC may answer alone: the lowest confidence threshold whose agreement
    with people on the items it answers is at least --target-agreement with probability 1 - --risk
    (fixed-sequence testing over decreasing thresholds, exact binomial tests; Jung et al., ICLR 2025)."""
    from ragmeter.datasets import load_dataset
    from ragmeter.safefiles import check_output_path
    from ragmeter.validity.calibration import calibrate, save_calibration
    from ragmeter.validity.escalation import calibration_items

    bounds = parse_scale(scale)
    out_path = output or f"calibration-{metric}.json"
    check_output_path(out_path, source="--output")
    # The arguments are checked before any judge call (a bad one costs nothing).
    for flag, value in (("--target-agreement", target_agreement), ("--risk", risk)):
        if not 0.0 < value < 1.0:
            raise InputError(f"must be between 0 and 1 (exclusive), got {value:g}", source=flag)
    data = load_dataset(labels, seed=seed)
    from ragmeter.llm import from_spec

    llm = from_spec(judge, concurrency=concurrency, cache=cache, seed=seed, budget=budget)

    async def go() -> Any:
        async with llm:
            return await calibration_items(
                data, metric, llm=llm, confidence=confidence, repeats=repeats, temperature=temperature,
                seed=seed, concurrency=concurrency, scale=bounds,
            )  # fmt: skip

    items = asyncio.run(go())
    cal = calibrate(
        items.confidences,
        items.agreements,
        judge=judge,
        metric=metric,
        confidence="repeats" if confidence == "repeats" else "logprob",
        repeats=repeats if confidence == "repeats" else None,
        target_agreement=target_agreement,
        risk=risk,
        prompt_version=items.prompt_version,
        n_failed=items.n_failed,
        labels=labels,
    )
    path = save_calibration(cal, out_path)
    if fmt == "json":
        echo_json({**cal.model_dump(), "guarantee": cal.guarantee, "file": str(path)})
        return
    con = console()
    f = "-" if cal.threshold is None else f"{cal.threshold:g}"
    agree = "-" if cal.empirical_agreement is None else f"{cal.empirical_agreement:.3f}"
    bound = "-" if cal.agreement_lower_bound is None else f"{cal.agreement_lower_bound:.3f}"
    rows = [[metric, f, f"{cal.coverage:.1%}", agree, bound, str(cal.n_labels), str(cal.n_failed)]]
    headers = [
        "metric",
        "threshold",
        "coverage",
        "agreement",
        f"lower bound ({1 - risk:.0%})",
        "labels",
        "failed",
    ]
    from rich.table import Table

    table = Table(title=f"escalation calibration of {judge}", title_justify="left")
    for i, h in enumerate(headers):
        table.add_column(h, justify="left" if i == 0 else "right")
    table.add_row(*rows[0])
    con.print(table)
    con.print(cal.guarantee)
    con.print(f"method: {cal.method}")
    con.print(f"wrote {path}")
