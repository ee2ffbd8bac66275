"""`ragmeter judges card`: build a judge card (agreement, repeats, bias battery, drift), store and print it.

A thin front on ragmeter.validity; registered on the `judges` group in cli/judges.py."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import click

from ragmeter.cli.judge_options import judge_call_options, parse_scale
from ragmeter.cli.options import db_option, echo_json, format_option, open_db
from ragmeter.errors import InputError
from ragmeter.llm.spec import SPEC_HELP


@click.command("card")
@click.option("--judge", required=True, metavar="MODEL", help=f"Judge LLM: {SPEC_HELP}.")
@click.option("--metric", required=True, metavar="NAME", help="The judge metric the card describes.")
@click.option(
    "--dataset", "-d", required=True, help="Items to judge: queries with metadata.answer (and contexts)."
)
@click.option("--sample", type=int, default=None, help="A seeded sample of N items (the card's anchors).")
@click.option(
    "--repeats", type=int, default=2, show_default=True, help="Judgments per item for self-consistency."
)
@click.option(
    "--perturbations",
    default=None,
    metavar="NAME,...",
    help="Only these (padding, citation_markers, question_stuffing, master_key, contexts_reversed; default all).",
)
@click.option(
    "--tolerance", type=float, default=0.05, show_default=True, help="Flag a net shift beyond this."
)
@click.option(
    "--generator", metavar="MODEL", default=None, help="The model that wrote the answers (self-judging)."
)
@click.option(
    "--against", metavar="CARD", default=None, help="A stored card id or card JSON: report label drift."
)
@click.option("--out", metavar="FILE.json", default=None, help="Also write the card to this JSON file.")
@click.option("--seed", type=int, default=42, show_default=True, help="Seed of the sample and the bootstrap.")
@click.option("--scale", metavar="LO:HI", help="The human labels' scale (as `judges validate`).")
@click.option("--no-store", is_flag=True, help="Do not keep the card in the store.")
@judge_call_options(budget=False)
@format_option("table", "markdown", "json")
@db_option
def card_command(
    judge: str,
    metric: str,
    dataset: str,
    sample: int | None,
    repeats: int,
    perturbations: str | None,
    tolerance: float,
    generator: str | None,
    against: str | None,
    out: str | None,
    seed: int,
    scale: str | None,
    no_store: bool,
    concurrency: int,
    cache: str | None,
    fmt: str,
    db: str | None,
) -> None:
    """Judge the items, their repeats and each perturbation; print and store the judge's card."""
    from ragmeter.datasets import load_dataset
    from ragmeter.llm import from_spec
    from ragmeter.llm.spec import public_spec
    from ragmeter.validity import perturb
    from ragmeter.validity.card import build_card
    from ragmeter.validity.render import card_lines, card_markdown
    from ragmeter.validity.storage import load_card, store_card

    bounds = parse_scale(scale)
    names = perturb.ALL_PERTURBATIONS
    if perturbations is not None:
        names = tuple(p.strip() for p in perturbations.split(",") if p.strip())
        unknown = [p for p in names if p not in perturb.ALL_PERTURBATIONS]
        if unknown or not names:
            raise InputError(
                f"unknown perturbation {(unknown or [''])[0]!r}; known: {', '.join(perturb.ALL_PERTURBATIONS)}",
                source="--perturbations",
            )
    before = None
    if against is not None:
        with open_db(db) as store:
            before = load_card(store, against)
    data = load_dataset(dataset, seed=seed)
    llm = from_spec(judge, concurrency=concurrency, cache=cache, seed=seed)

    async def go() -> Any:
        async with llm:
            return await build_card(
                data,
                metric,
                llm=llm,
                judge_spec=public_spec(judge),
                sample=sample,
                repeats=repeats,
                perturbations=names,
                tolerance=tolerance,
                generator=public_spec(generator) if generator else None,
                seed=seed,
                concurrency=concurrency,
                scale=bounds,
                against=before,
            )

    card = asyncio.run(go())
    if not no_store:
        with open_db(db) as store:
            store_card(store, card)
    if out is not None:
        import json

        Path(out).write_text(json.dumps(card.dump(), indent=2) + "\n", encoding="utf-8")
    if fmt == "json":
        echo_json(card.dump())
    elif fmt == "markdown":
        click.echo(card_markdown(card), nl=False)
    else:
        for line in card_lines(card):
            click.echo(line)
