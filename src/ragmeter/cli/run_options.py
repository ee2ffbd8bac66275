"""The options of `ragmeter run` in typed groups. Each group declares its click options beside its fields
and is built, and checked, in one place: its `from_params`. `RunFlags.from_params` builds every group from
what click parsed, so each flag is checked once; `cli/run_check.py` turns the groups into the validated run.

A new option is a field on its group, its click option in the group's list, and a line in `from_params`;
a new group is a frozen dataclass with a `from_params`, its list in `run.py`'s `apply_options` and a field
of `RunFlags` (cli/run_check.py).
A field of `SystemOptions` named after an EvalConfig field (given: not None) is a config override as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

from ragmeter.cli.options import default_output, format_option, parse_fail_under
from ragmeter.cli.run_escalation import escalation_extra
from ragmeter.cli.settings import judge_client_options
from ragmeter.errors import InputError
from ragmeter.llm.spec import SPEC_HELP

if TYPE_CHECKING:
    from ragmeter.records import EscalationSpec, SequentialGates

F = TypeVar("F", bound=Callable[..., Any])
Option = Callable[[Callable[..., Any]], Callable[..., Any]]  # a click option (decorator)
Params = Mapping[str, Any]  # what click parsed, by parameter name


def apply_options(*groups: list[Option]) -> Callable[[F], F]:
    """The click options of `groups`, in this order in --help (decorator)."""

    def deco(fn: F) -> F:
        out: Any = fn
        for option in reversed([option for group in groups for option in group]):
            out = option(out)
        return cast(F, out)

    return deco


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


def _names(value: str | None) -> list[str] | None:
    return [m.strip() for m in value.split(",") if m.strip()] if value else None


SYSTEM_OPTIONS: list[Option] = [
    click.option("--dataset", "-d", help="A named dataset, a dataset file/folder, or store:COLLECTION."),
    click.option(
        "--system", "-s", help="builtin | module:function | http(s)://... | a run file (TREC or JSONL)."
    ),
    click.option(
        "--mode", type=click.Choice(["fulltext", "semantic", "hybrid"]), help="Built-in retrieval mode."
    ),
    click.option(
        "--generator", metavar="MODEL", help="LLM that the built-in pipeline answers with (as --judge)."
    ),
    click.option("--no-generation", is_flag=True, help="Retrieval only: no answers, no answer metrics."),
    click.option(
        "--namespace",
        metavar="NAME",
        help="Index namespace of the built-in pipeline (default: the dataset's name).",
    ),
    click.option(
        "--collection",
        metavar="NAME",
        help="Evaluate the test cases of this store collection (the same as --dataset store:NAME).",
    ),
    click.option("--top-k", "top_k", metavar="K,K,...", help="Retrieval cut-offs (default 1,3,5,10)."),
    click.option(
        "--metrics", metavar="NAME,...", help="Only these metrics (measures, judges, sbert_similarity)."
    ),
    click.option("--limit", type=int, help="Evaluate N queries sampled with --seed."),
    click.option("--seed", type=int, help="Seed of sampling and every non-LLM number (default 42)."),
    click.option(
        "--concurrency", type=int, help="Queries in flight at once (default 16; per worker on Ray)."
    ),
    click.option(
        "--executor",
        metavar="local|ray[:ADDRESS]",
        help="Where queries run: here (default) or on Ray workers (docs/scale-out.md); also with --resume.",
    ),
    click.option("--config", "config_path", type=click.Path(dir_okay=False), help="YAML or TOML EvalConfig."),
]


@dataclass(frozen=True)
class SystemOptions:
    """What is evaluated on what, and how its queries run. Every field but `collection` and `config_path` is
    the EvalConfig field of the same name; None: not given (the config file's value or the default stays)."""

    dataset: str | None = None  # --collection C sets store:C
    system: str | None = None
    mode: str | None = None
    namespace: str | None = None
    retrieval_top_k: list[int] | None = None
    metrics: list[str] | None = None
    limit: int | None = None
    seed: int | None = None
    concurrency: int | None = None
    executor: str | None = None
    generator_model: str | None = None
    evaluate_generation: bool | None = None  # False: --no-generation
    collection: str | None = None
    config_path: str | None = None

    @classmethod
    def from_params(cls, p: Params) -> SystemOptions:
        if p["concurrency"] is not None and p["concurrency"] < 1:
            raise InputError("must be at least 1", source="--concurrency")
        if p["executor"] is not None:
            from ragmeter.models import parse_executor

            parse_executor(p["executor"])
        dataset, collection = p["dataset"], p["collection"]
        if collection:
            if dataset and dataset != f"store:{collection}":
                raise InputError("give --collection NAME or --dataset, not both", source="--collection")
            dataset = f"store:{collection}"
        return cls(
            dataset=dataset,
            system=p["system"],
            mode=p["mode"],
            namespace=p["namespace"],
            retrieval_top_k=_top_k(p["top_k"]),
            metrics=_names(p["metrics"]),
            limit=p["limit"],
            seed=p["seed"],
            concurrency=p["concurrency"],
            executor=p["executor"],
            generator_model=p["generator"],
            evaluate_generation=False if p["no_generation"] else None,
            collection=collection,
            config_path=p["config_path"],
        )

    def config_fields(self) -> dict[str, Any]:
        """The EvalConfig fields these flags set (given ones only)."""
        skip = ("collection", "config_path")
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in skip}


JUDGING_OPTIONS: list[Option] = [
    click.option("--judge", "judge", metavar="MODEL", help=f"Judge LLM: {SPEC_HELP}."),
    click.option(
        "--no-llm-judge", is_flag=True, help="No LLM judging even when --judge or the config sets it."
    ),
    click.option("--judge-timeout", type=float, metavar="SECONDS", help="Per judge request (default 60)."),
    click.option(
        "--judge-retries", type=int, metavar="N", help="Retries of a failed judge request (default 4)."
    ),
    click.option("--judge-budget", type=int, metavar="N", help="At most N judge requests in the run."),
    click.option(
        "--repeat", type=int, metavar="N", help="Judge each judged query N times (default 1): alpha, flips."
    ),
    click.option(
        "--repeat-temperature", type=float, metavar="T", help="Temperature of the repeats (default 0.7)."
    ),
    click.option(
        "--nuggets", metavar="FILE", help="Nugget set: adds the nugget_* metrics (docs/nuggets.md)."
    ),
    click.option(
        "--escalate-to",
        metavar="MODEL",
        help="Strong judge for the items the --judge answers below its --card threshold (docs/judges.md).",
    ),
    click.option(
        "--card",
        metavar="FILE",
        help="A judge card (or calibration file): with --escalate-to, the calibration of --judge (`ragmeter "
        "judges calibrate`); with --max-drift, the anchor card drift is measured against (`judges card`).",
    ),
    click.option(
        "--nuggets-prompt",
        type=click.Choice(["nuggetizer", "ours"]),
        help="Nugget assignment prompt: nuggetizer's verbatim (default) or ours (JSON, reasons).",
    ),
]


@dataclass(frozen=True)
class JudgingOptions:
    """Who judges, and the judge client's options (recorded with the run, replayed on resume and Ray)."""

    judge: str | None = None
    no_llm_judge: bool = False
    client: Mapping[str, Any] = field(default_factory=dict)  # timeout, max_retries, budget: the given ones
    repeat: int | None = None  # --repeat N: each judged query judged N times (ragmeter.run.repeats)
    repeat_temperature: float | None = None
    nuggets: dict[str, str] | None = None  # EvalConfig.nuggets: the set's path and prompt style
    escalation: EscalationSpec | None = None  # EvalConfig.escalation (ragmeter.cli.run_escalation)

    @classmethod
    def from_params(cls, p: Params) -> JudgingOptions:
        client = judge_client_options(p["judge_timeout"], p["judge_retries"], p["judge_budget"])
        repeat, temperature = p["repeat"], p["repeat_temperature"]
        if repeat is not None and repeat < 1:
            raise InputError(f"must be at least 1 (judgments per query), got {repeat}", source="--repeat")
        if temperature is not None and not 0.0 <= temperature <= 2.0:  # nan fails both comparisons
            raise InputError(
                f"must be a number from 0 to 2, got {temperature}", source="--repeat-temperature"
            )
        return cls(
            judge=p["judge"],
            no_llm_judge=p["no_llm_judge"],
            client=client,
            repeat=repeat,
            repeat_temperature=temperature,
            nuggets=_nuggets(p.get("nuggets"), p.get("nuggets_prompt")),
            escalation=escalation_extra(
                p.get("escalate_to"), p.get("card"), p["judge"], repeat, max_drift=p.get("max_drift")
            ),
        )

    def config_fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {"judge_model": self.judge, "use_llm_judge": True} if self.judge else {}
        repeats = {"repeat": self.repeat, "repeat_temperature": self.repeat_temperature}
        out.update({k: v for k, v in repeats.items() if v is not None})
        return {**out, "use_llm_judge": False} if self.no_llm_judge else out


def _nuggets(path: str | None, prompt: str | None) -> dict[str, str] | None:
    if path is None:
        if prompt is not None:
            raise InputError("needs --nuggets FILE", source="--nuggets-prompt")
        return None
    from ragmeter.score.nugget_plan import DEFAULT_STYLE, absolute

    return {"path": absolute(path), "prompt": prompt or DEFAULT_STYLE}


GATE_OPTIONS: list[Option] = [
    click.option(
        "--fail-under", "fail_under", multiple=True, metavar="METRIC=VALUE", help="Exit 1 if a mean is lower."
    ),
    click.option(
        "--sequential",
        is_flag=True,
        help="Queries in a seeded random order; stop once the --fail-under gates are decided "
        "(docs/experiments.md).",
    ),
    click.option(
        "--alpha", type=float, metavar="A", help="With --sequential: the chance of a wrong decision (0.05)."
    ),
    click.option(
        "--flaky",
        type=click.Choice(["skip", "fail"]),
        default=None,
        help="With --repeat: a flaky gate is reported and left out of the exit code (skip, the default) "
        "or fails it (fail).",
    ),
    click.option(
        "--flaky-tolerance",
        type=float,
        metavar="SHARE",
        help="With --repeat: a gate is flaky when more than this share of repeat means fall on the other "
        "side of its threshold (default 0).",
    ),
]


@dataclass(frozen=True)
class GateOptions:
    """The --fail-under gates: canonical metric name -> threshold (checked against the registry); with
    --sequential, decided while the run runs (ragmeter.run.sequential) at error rate `alpha`."""

    thresholds: dict[str, float] = field(default_factory=dict)
    sequential: bool = False
    alpha: float = 0.05
    flaky_fails: bool = False  # --flaky fail: a flaky gate fails the run (else it is left out of the verdict)
    flaky_tolerance: float = 0.0

    @classmethod
    def from_params(cls, p: Params) -> GateOptions:
        from ragmeter.run.sequential import check_alpha

        thresholds = parse_fail_under(p["fail_under"])
        if p["sequential"] and not thresholds:
            raise InputError("needs --fail-under METRIC=VALUE (the gates it decides)", source="--sequential")
        if p["alpha"] is not None and not p["sequential"]:
            raise InputError("needs --sequential", source="--alpha")
        alpha = 0.05 if p["alpha"] is None else check_alpha(p["alpha"])
        tolerance = p.get("flaky_tolerance")
        if tolerance is not None and not 0.0 <= tolerance < 1.0:  # nan fails both comparisons
            raise InputError(
                f"must be a share from 0 to below 1, got {tolerance}", source="--flaky-tolerance"
            )
        return cls(
            thresholds=thresholds,
            sequential=p["sequential"],
            alpha=alpha,
            flaky_fails=p.get("flaky") == "fail",
            flaky_tolerance=tolerance or 0.0,
        )

    def sequential_gates(self) -> SequentialGates | None:
        """EvalConfig.sequential of a sequential run (ragmeter.run.sequential.sequential_spec checks it)."""
        from ragmeter.records import SequentialGates

        return SequentialGates(gates=dict(self.thresholds), alpha=self.alpha) if self.sequential else None

    def check_planned(self, plan: Any, *, evaluate_generation: bool) -> None:
        """Each gate is on a metric that the run's plan computes (a latency stage always is)."""
        from ragmeter import metrics

        planned = plan.names(evaluate_generation=evaluate_generation)
        for name in self.thresholds:
            if name not in planned and metrics.family_of(name) != "latency":
                computed = ", ".join(sorted(planned, key=metrics.sort_key))
                raise InputError(
                    f"this run does not compute {name!r}; it computes {computed}", source="--fail-under"
                )


OUTPUT_OPTIONS: list[Option] = [
    click.option("--output", "-o", metavar="FILE.json", help="Where the JSON goes (CSV beside it)."),
    click.option(
        "--csv-raw", is_flag=True, help="CSV cells as they are (no ' before = + - @; docs/security.md)."
    ),
    click.option("--name", default="", help="A label for the run."),
    format_option("table", "json"),
    click.option("--junit-xml", metavar="PATH", help="Write the --fail-under gates as JUnit XML test cases."),
    click.option(
        "--junit-per-query", is_flag=True, help="With --junit-xml: a test case per query that fell short."
    ),
    click.option(
        "--mlflow",
        "mlflow_uri",
        is_flag=False,
        flag_value="",
        default=None,
        metavar="[URI]",
        help="Log the run to MLflow (default URI: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db).",
    ),
    click.option("--no-progress", is_flag=True, help="No progress bar."),
]


@dataclass(frozen=True)
class OutputOptions:
    """What the finished run writes and shows; `cli/run_outputs.py` writes all of it."""

    output: str | None = None  # the JSON (CSV beside it); None: the config's, else .ragmeter/runs/RUN_ID.json
    csv_raw: bool = False
    name: str = ""
    fmt: str = "table"
    junit_xml: str | None = None
    junit_per_query: bool = False
    mlflow_uri: str | None = None  # None: no MLflow; "": $MLFLOW_TRACKING_URI, else the default
    progress: bool = True

    @classmethod
    def from_params(cls, p: Params, gates: GateOptions) -> OutputOptions:
        if p["junit_per_query"] and not p["junit_xml"]:
            raise InputError("needs --junit-xml PATH", source="--junit-per-query")
        if p["junit_xml"] and not gates.thresholds:
            raise InputError("needs --fail-under METRIC=VALUE (the gates it reports)", source="--junit-xml")
        if p["mlflow_uri"] is not None:
            from ragmeter.integrations.mlflow import require_mlflow

            require_mlflow()  # before anything runs or is stored
        from ragmeter.safety import check_output_path
        from ragmeter.score.writers import csv_path_for

        target = p["output"] or str(default_output(None))
        for path in (target, csv_path_for(target)):  # an unwritable output fails before anything is stored
            check_output_path(path, source="--output")
        return cls(
            output=p["output"],
            csv_raw=p["csv_raw"],
            name=p["name"],
            fmt=p["fmt"],
            junit_xml=p["junit_xml"],
            junit_per_query=p["junit_per_query"],
            mlflow_uri=p["mlflow_uri"],
            progress=not p["no_progress"] and p["fmt"] == "table",
        )
