"""`ragmeter run ... --estimate [--pilot N]`: a seeded pilot of N of the run's queries, stored as a run of its
own, then the full run's expected cost with its interval, judge and system apart, calls, tokens and time
(ragmeter.run.estimate). The full run is not started."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ragmeter.cli.options import echo_json

if TYPE_CHECKING:
    from ragmeter.cli.run_check import CheckedRun


def estimate_command(checked: CheckedRun) -> None:
    from ragmeter.cli.run_check import check_invocation
    from ragmeter.llm.spend import SpendCapReached
    from ragmeter.run.api import run_prepared
    from ragmeter.run.estimate import as_json, estimate_lines, estimate_run

    flags, prepared = checked.flags, checked.prepared
    full = len(prepared.queries)
    config = prepared.config.model_copy(update={"limit": min(flags.cost.pilot, full)})
    pilot = check_invocation(
        config.dataset,
        config.system,
        config,
        store=checked.store,
        resume=None,
        system_options=flags.settings.pipeline,
        gates=flags.gates,
        option_flags=flags.settings.flags,
    )
    options = {**checked.run_options(), "name": flags.output.name or "estimate pilot"}
    try:
        result = run_prepared(pilot, **options)
    except SpendCapReached as exc:
        checked.store.close()
        click.echo(f"ragmeter: the pilot {exc}", err=True)
        raise SystemExit(3) from None
    checked.store.close()
    estimate = estimate_run(
        result.per_query,
        full=full,
        system_kind=prepared.record.system.kind,
        concurrency=prepared.config.concurrency,
        pilot_run_id=result.run_id,
    )
    if flags.output.fmt == "json":
        echo_json(as_json(estimate))
    else:
        for line in estimate_lines(estimate):
            click.echo(line)
