"""`ragmeter run`: evaluate a system on a dataset, store the run, print and save the results.

The command is three steps: validate once (cli/run_check.py: the typed option groups of cli/run_options.py,
the EvalConfig, `ragmeter.run.validate`), run what was validated (`ragmeter.run.run_prepared`), write
every output in one place (cli/run_outputs.py). Then it shows the run and applies the gates.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import click

from ragmeter.cli.options import check_fail_under, db_option, echo_json, print_run
from ragmeter.cli.run_cost import COST_OPTIONS
from ragmeter.cli.run_generate import GENERATE_OPTIONS
from ragmeter.cli.run_options import (
    GATE_OPTIONS,
    JUDGING_OPTIONS,
    OUTPUT_OPTIONS,
    SYSTEM_OPTIONS,
    apply_options,
)
from ragmeter.cli.run_resume import RESUME_OPTIONS
from ragmeter.cli.settings import log_options, settings_options


@click.command("run")
@apply_options(
    SYSTEM_OPTIONS,
    JUDGING_OPTIONS,
    OUTPUT_OPTIONS,
    GATE_OPTIONS,
    RESUME_OPTIONS,
    GENERATE_OPTIONS,
    COST_OPTIONS,
)
@click.option(
    "--max-drift",
    type=float,
    metavar="X",
    help="Refuse unless the judge's stored card against --card shows label drift <= X (`judges card --against`).",
)
@settings_options
@log_options
@db_option
def run_command(**params: Any) -> None:
    """Evaluate a system on a dataset: retrieval, answer and judge metrics, stored per query."""
    from ragmeter.cli.run_check import check_run
    from ragmeter.cli.run_outputs import write_run_outputs
    from ragmeter.llm.spend import SpendCapReached
    from ragmeter.run.api import run_prepared

    if params.get("resume") and _resume_replay(params):
        return
    checked = check_run(params)  # every flag, the config and the whole invocation, checked once
    flags, store = checked.flags, checked.store
    if (
        params.get("max_drift") is not None
    ):  # --card: the anchor card here, the calibration with --escalate-to
        _check_drift(store, checked.prepared.config, params["max_drift"], params.get("card"))
    flags.cost.check_prepared(checked.prepared)  # under a cap: every LLM priced, before anything is stored
    if flags.cost.estimate:
        from ragmeter.cli.run_estimate import estimate_command

        estimate_command(checked)
        return
    # The judge's timeout, retries and budget travel in the record (EvalConfig.judge_options):
    # this run, its resume and Ray workers build the judge from it the same way (ragmeter.run.rebuild).
    try:
        result = run_prepared(checked.prepared, **checked.run_options())
    except SpendCapReached as exc:  # stored as stopped (failed, resumable); exit 3: neither pass nor fail
        store.close()
        click.echo(f"ragmeter: {exc}", err=True)
        sys.exit(3)
    written = write_run_outputs(
        result, flags.output, flags.gates.thresholds, flaky_fails=flags.gates.flaky_fails
    )
    if flags.output.fmt == "json":
        echo_json(result.model_dump(mode="json"))
    else:
        print_run(result)
        click.echo(
            f"results: {written.json_path} and {written.csv_path}; stored as run {result.run_id} in {store.url}"
        )
    store.close()
    for note in written.notes:
        click.echo(note, err=True)
    refused = _refused_gates(result, flags.gates.thresholds)
    for line in refused:  # a gate on values of mixed versions decides nothing: refused, exit 2
        click.echo(f"ragmeter: fail-under: {line}", err=True)
    if refused:
        sys.exit(2)
    flaky = {name: g for name, g in result.gates_across_repeats.items() if g.flaky}
    for line in flaky_lines(flaky, fails=flags.gates.flaky_fails):
        click.echo(f"ragmeter: {line}", err=True)
    stable = {m: t for m, t in flags.gates.thresholds.items() if m not in flaky}
    short = _fall_short(result, stable)
    if flags.gates.flaky_fails:
        short += [f"{name}: flaky (--flaky fail)" for name in flaky]
    for line in short:
        click.echo(f"ragmeter: fail-under: {line}", err=True)
    if short:
        sys.exit(1)


def _check_drift(store: Any, config: Any, max_drift: float | None, card: str | None) -> None:
    """--max-drift X --card CARD: refuse (one line, exit 2, nothing run) a judge whose stored card against
    CARD shows more label drift than X, or that has no such card."""
    from ragmeter.errors import InputError
    from ragmeter.llm.spec import public_spec
    from ragmeter.validity.storage import drift_check

    if max_drift is None or card is None:
        raise InputError("--max-drift and --card go together", source="--max-drift" if card else "--card")
    if not 0 <= max_drift <= 1:
        raise InputError(f"--max-drift is a share in [0, 1], got {max_drift:g}", source="--max-drift")
    if not config.judge_model or not config.use_llm_judge:
        store.close()
        raise InputError("--max-drift needs a judge (--judge)", source="--max-drift")
    refusal = drift_check(store, public_spec(config.judge_model), list(config.metrics or []), card, max_drift)
    if refusal is not None:
        store.close()
        raise InputError(refusal, source="--max-drift")


def flaky_lines(flaky: Mapping[str, Any], *, fails: bool) -> list[str]:
    """A line for each flaky gate: why it is flaky, and what the exit code does with it."""
    from ragmeter.score.flaky import flaky_line

    then = "it fails the run (--flaky fail)" if fails else "left out of the exit code (--flaky skip)"
    return [f"{flaky_line(name, g)}; {then}" for name, g in flaky.items()]


def _resume_replay(params: dict[str, Any]) -> bool:
    """`run --resume REPLAY` of a diagnose replay: rebuilt from its parent (ragmeter.diagnose.resume).
    False when the run is no replay (the ordinary resume follows)."""
    import asyncio

    from ragmeter.cli.options import open_db
    from ragmeter.diagnose.resume import aresume_replay, replay_parent
    from ragmeter.errors import RagmeterError

    store = open_db(params.get("db"))
    try:
        try:
            stored = store.get_run(str(params["resume"]), with_queries=False)
        except RagmeterError:  # no such run: the ordinary resume checks every flag first, then says so
            return False
        if replay_parent(stored) is None:
            return False
        result = asyncio.run(
            aresume_replay(str(params["resume"]), store=store, progress=not params.get("no_progress"))
        )
    finally:
        store.close()
    print_run(result)
    return True


def _refused_gates(result: Any, thresholds: Mapping[str, float]) -> list[str]:
    """The gates on a metric whose values in this run mix versions (a resume after a prompt change)."""
    from ragmeter.experiments.version_guard import mixed_versions

    return [
        f"{line}: refused (`ragmeter rescore {result.run_id}`)" for line in mixed_versions(result, thresholds)
    ]


def _fall_short(result: Any, thresholds: Mapping[str, float]) -> list[str]:
    """The gates this run failed: a mean short of its threshold."""
    from ragmeter.run.sequential import stopped_gates_short

    stopped = stopped_gates_short(result.sequential)  # a stopped run: its gates' decisions, not its means
    return check_fail_under(result.aggregate, dict(thresholds)) if stopped is None else stopped
