"""`ragmeter judges validate|agreement`: how far a judge can be trusted (`judge-qrels` is in judge_qrels.py).

Thin fronts on ragmeter.validity.judge_validation and ragmeter.validity.qrels_judging.
`--runs` takes one or more TREC run files: `--runs a.trec b.trec` and `--runs a.trec --runs b.trec`
both work.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from ragmeter.cli.judge_options import CACHE_RERUN_HELP, judge_call_options, parse_scale
from ragmeter.cli.options import console, db_option, echo_json, format_option, open_db
from ragmeter.errors import InputError
from ragmeter.llm.spec import SPEC_HELP

_RUNS = click.option(
    "--runs",
    "runs",
    multiple=True,
    metavar="RUN",
    help="TREC run files (repeat the option or list them after it).",
)


def _client(judge: str, *, concurrency: int, cache: str | None, seed: int, budget: int | None) -> Any:
    from ragmeter.llm import from_spec

    return from_spec(judge, concurrency=concurrency, cache=cache, seed=seed, budget=budget)


def _read_runs(paths: Sequence[str]) -> dict[str, Any]:
    from ragmeter.ir import Run

    if not paths:
        raise InputError("give at least one run file", source="--runs")
    out: dict[str, Any] = {}
    for p in paths:
        name = Path(p).name
        if name in out:
            name = p
        out[name] = Run.read(p)
    return out


def _table(rows: Sequence[Sequence[str]], headers: Sequence[str], title: str | None = None) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for i, h in enumerate(headers):
        table.add_column(h, justify="left" if i == 0 else "right")
    for row in rows:
        table.add_row(*row)
    return table


_STORE_LABELS = click.option(
    "--store-labels",
    "store_run",
    metavar="RUN",
    default=None,
    help="Human relevance labels from the store (given in `ragmeter view --annotate`) for RUN's dataset; they win over --qrels.",
)


@click.group("judges")
def judges() -> None:
    """Validate judges against human labels, and LLM qrels against human qrels."""


@judges.command("validate")
@click.option("--dataset", "-d", default=None, help="A dataset with human_labels (native JSON/JSONL).")
@click.option("--judge", default=None, metavar="MODEL", help=f"Judge LLM: {SPEC_HELP}.")
@click.option(
    "--run",
    "run_id",
    default=None,
    help="Instead of --dataset/--judge: the run's stored judge values against the store's labels of its answers.",
)
@click.option(
    "--metric",
    required=True,
    metavar="NAME",
    help="The judge metric to validate (its label name); trec_relevance: the relevance judge of judge-qrels.",
)
@click.option("--sample", type=int, default=None, help="Judge a seeded sample of N labelled items.")
@click.option("--seed", type=int, default=42, show_default=True, help="Seed of the sample and the bootstrap.")
@click.option(
    "--scale", metavar="LO:HI", help="The human labels' scale (default: binary, else their min..max)."
)
@click.option("--no-store", is_flag=True, help="Do not keep the report in the store.")
@judge_call_options(cache_help=CACHE_RERUN_HELP)
@format_option("table", "markdown", "json")
@db_option
def validate_command(
    dataset: str | None,
    judge: str | None,
    run_id: str | None,
    metric: str,
    sample: int | None,
    seed: int,
    scale: str | None,
    no_store: bool,
    concurrency: int,
    cache: str | None,
    budget: int | None,
    fmt: str,
    db: str | None,
) -> None:
    """Run the judge METRIC on the items people labelled and report the agreement with them."""
    from ragmeter.datasets import load_dataset
    from ragmeter.validity.judge_validation import validate_judge
    from ragmeter.validity.validation_report import store_report

    bounds = parse_scale(scale)
    if run_id is not None:
        from ragmeter.validity.human_labels import validate_run

        if dataset or judge:
            raise InputError(
                "--run uses the run's stored judge values: leave out --dataset and --judge", source="--run"
            )
        with open_db(db) as store:
            out = validate_run(store, run_id, metric, scale=bounds, seed=seed).to_dict()
        _print_validation(out, metric, fmt)
        return
    if not dataset or not judge:
        raise InputError(
            "give --dataset and --judge (or --run RUN to use a stored run's labels)", source="--dataset"
        )
    data = load_dataset(dataset, seed=seed)
    llm = _client(judge, concurrency=concurrency, cache=cache, seed=seed, budget=budget)

    async def go() -> Any:
        async with llm:
            return await validate_judge(
                data, metric, llm=llm, sample=sample, seed=seed, concurrency=concurrency, scale=bounds
            )

    report = asyncio.run(go())
    out = report.to_dict()
    if not no_store:
        with open_db(db) as store:
            out["run_id"] = store_report(
                store,
                report,
                dataset_name=data.name,
                judge_spec=judge,
                sample=sample,
                concurrency=concurrency,
            )
    _print_validation(out, metric, fmt)


def _print_validation(out: dict[str, Any], metric: str, fmt: str) -> None:
    from ragmeter.validity.validation_report import format_markdown, summary_rows, usage_line

    if fmt == "json":
        echo_json(out)
    elif fmt == "markdown":
        click.echo(format_markdown(out), nl=False)
    else:
        con = console()
        con.print(
            _table(summary_rows(out), ["statistic", "value", "95% CI"], f"judge {metric} vs human labels")
        )
        conf = out.get("confusion")
        if conf:
            rows = [
                [str(lab), *map(str, row)] for lab, row in zip(conf["labels"], conf["matrix"], strict=True)
            ]
            con.print(_table(rows, ["human \\ judge", *map(str, conf["labels"])], "confusion matrix"))
        con.print(f"judge usage: {usage_line(out['usage'])}")
        for note in out["notes"]:
            con.print(f"note: {note}")
        if "run_id" in out:
            con.print(f"stored as run {out['run_id']}")


def _human(path: str | None, store_run: str | None, db: str | None) -> Any:
    from ragmeter.validity.human_labels import human_qrels, store_qrels

    labels = None
    if store_run is not None:
        with open_db(db) as store:
            labels = store_qrels(store, store_run)
    return human_qrels(path, labels)


@judges.command("agreement")
@click.option("--qrels", "qrels_path", default=None, help="Human qrels (TREC, TSV or JSON).")
@_STORE_LABELS
@click.option("--llm-qrels", "llm_path", required=True, help="LLM qrels (e.g. written by judge-qrels).")
@_RUNS
@click.argument("more_runs", nargs=-1, metavar="[RUN]...")
@click.option("--measure", default="ndcg@10", show_default=True, help="The measure that ranks the runs.")
@click.option(
    "--relevance-level", "-l", type=int, default=1, show_default=True, help="Human relevance level."
)
@click.option(
    "--llm-relevant-grade",
    type=int,
    default=None,
    help="LLM grade counted as relevant against binary human qrels (default 2).",
)
@click.option("--seed", type=int, default=42, show_default=True, help="Seed of the bootstrap.")
@click.option(
    "--llm-only",
    is_flag=True,
    help="The LLM qrels hold LLM labels only (no provenance sidecar needed even if they repeat human grades).",
)
@format_option("table", "json")
@db_option
def agreement_command(
    qrels_path: str | None,
    store_run: str | None,
    llm_path: str,
    runs: tuple[str, ...],
    more_runs: tuple[str, ...],
    measure: str,
    relevance_level: int,
    llm_relevant_grade: int | None,
    seed: int,
    llm_only: bool,
    fmt: str,
    db: str | None,
) -> None:
    """Per-label agreement of two qrels, and Kendall's tau / tau_AP between the system rankings they give.

    Both sides are scored on the queries judged by both qrels and retrieved by every run. A merged file from
    `judge-qrels --qrels` is scored on its LLM-graded pairs only (read from its .provenance.json sidecar)."""
    from ragmeter.ir import Qrels
    from ragmeter.validity.qrels_judging import meta_evaluate
    from ragmeter.validity.qrels_provenance import copies_human_grades, read_provenance, sidecar_path

    run_tables = _read_runs([*runs, *more_runs])
    human, llm = _human(qrels_path, store_run, db), Qrels.read(llm_path)
    if human is None:
        raise InputError("give human qrels: --qrels FILE and/or --store-labels RUN", source="--qrels")
    qrels_path = qrels_path or "the store's labels"
    sidecar = sidecar_path(llm_path)
    llm_pairs = None
    try:
        if sidecar.exists() and not llm_only:
            llm_pairs = read_provenance(sidecar).llm
        elif not llm_only and (copied := copies_human_grades(human, llm)):
            raise InputError(
                f"{llm_path} repeats the human grade on all {copied} pairs it shares with {qrels_path}: a merged "
                f"file (judge-qrels --qrels) without its provenance {sidecar.name}; give the sidecar, LLM-only "
                "qrels, or --llm-only",
                source="--llm-qrels",
            )
        result = meta_evaluate(
            human,
            llm,
            run_tables,
            measure=measure,
            relevance_level=relevance_level,
            llm_relevant_grade=llm_relevant_grade,
            llm_pairs=llm_pairs,
            seed=seed,
        )
    except InputError:
        raise
    except ValueError as exc:
        raise InputError(str(exc)) from None
    out = result.to_dict()
    if fmt == "json":
        echo_json(out)
        return
    con = console()

    def f(v: Any) -> str:
        return "-" if v is None else f"{v:.3f}"

    def ci(v: Sequence[Any]) -> str:
        return "-" if v[0] is None else f"[{v[0]:.3f}, {v[1]:.3f}]"

    con.print(
        _table(
            [
                ("queries scored (both sides)", str(out["n_queries"]), ""),
                ("pairs judged by both", str(out["n_pairs"]), ""),
                ("LLM-qrels pairs copied from people (left out)", str(out["n_excluded_human_copies"]), ""),
                ("Cohen's kappa", f(out["kappa"]), ci(out["kappa_ci"])),
                ("kappa, quadratic weights", f(out["weighted_kappa"]), ci(out["weighted_kappa_ci"])),
                (f"Kendall tau ({out['measure']})", f(out["kendall_tau"]), ci(out["kendall_tau_ci"])),
                (
                    "tau_AP"
                    + (
                        ""
                        if out["tau_ap_variant"] is None or "Yilmaz" in out["tau_ap_variant"]
                        else ",b (ties)"
                    ),
                    f(out["tau_ap"]),
                    "",
                ),
            ],
            ["statistic", "value", "95% CI"],
            "LLM qrels vs human qrels",
        )
    )
    rows = [
        (r["run"], f(r["human"]), f(r["llm"]), str(r["rank_human"]), str(r["rank_llm"])) for r in out["runs"]
    ]
    con.print(_table(rows, ["run", "human", "LLM", "rank (human)", "rank (LLM)"], out["measure"]))
    for note in out["notes"]:
        con.print(f"note: {note}")


from ragmeter.cli.judges_calibrate import calibrate_command  # noqa: E402  (added to this group)

judges.add_command(calibrate_command)


def _register_card() -> None:
    from ragmeter.cli.judge_card import card_command

    judges.add_command(card_command)


_register_card()
