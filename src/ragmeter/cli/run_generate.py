"""`ragmeter run --generate`: its options, and what it does before its run: check the run's settings, then
make test cases."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import click

from ragmeter.cli.run_options import GateOptions, Option, Params
from ragmeter.errors import InputError

GENERATE_OPTIONS: list[Option] = [
    click.option(
        "--generate",
        is_flag=True,
        help="With --collection: first generate synthetic test cases with --question-model if it has none.",
    ),
    click.option(
        "--question-model",
        metavar="MODEL",
        help="For --generate: the LLM that writes the questions (default: --judge).",
    ),
    click.option(
        "--sample-size", type=click.IntRange(min=1), default=20, show_default=True, help="For --generate."
    ),
]


@dataclass(frozen=True)
class GenerateOptions:
    """--generate: synthetic test cases for an empty --collection, written by `writer` before the run."""

    generate: bool = False
    writer: str | None = None  # --question-model, else --judge
    sample_size: int = 20

    @classmethod
    def from_params(cls, p: Params) -> GenerateOptions:
        writer = p["question_model"] or p["judge"]
        if p["generate"] and writer and not p["resume"]:
            from ragmeter.run.rebuild import check_llm_spec

            check_llm_spec(writer, source="--question-model" if p["question_model"] else "--judge")
        return cls(generate=p["generate"], writer=writer, sample_size=p["sample_size"])


def check_generated_run(config: Any, gates: GateOptions, options: dict[str, Any]) -> None:
    """What `run --generate` can check before its test cases exist: the system reference and options, the
    metrics and every --fail-under metric (the plan at these cut-offs), the judge and generator specs."""
    from ragmeter.run.rebuild import check_llm_spec
    from ragmeter.score.plan import plan_for

    if config.system != "builtin" and options:
        raise InputError(
            "sets an option of the built-in pipeline, but --system is not builtin", source="--set"
        )
    judged = bool(config.use_llm_judge and config.judge_model)
    for field, flag in (("judge_model", "--judge"), ("generator_model", "--generator")):
        if getattr(config, field):
            check_llm_spec(getattr(config, field), source=flag)
    plan = plan_for(config, judged=judged)
    gates.check_planned(plan, evaluate_generation=config.evaluate_generation)


def generate_if_empty(
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
                "--generate needs --question-model MODEL, the LLM that writes the questions",
                source="--generate",
            )
        report = generate_test_cases(store, collection, llm=judge, sample_size=sample_size, seed=seed or 42)
        for chunk_id, reason in report.failed:
            click.echo(f"LLM failure on chunk {chunk_id}: {reason}", err=True)
        click.echo(report.summary(), err=True)
        if not report.created:
            raise InputError("no synthetic test case could be generated", source="--generate")
    return f"store:{collection}"
