"""`ragmeter plan`: how many queries a paired comparison needs to detect a given effect."""

from __future__ import annotations

from typing import Any

import click

from ragmeter.cli.options import allow_version_mismatch_option, db_option, echo_json, format_option, open_db
from ragmeter.errors import InputError


@click.command("plan")
@click.option(
    "--pilot", "pilot_id", required=True, metavar="RUN", help="A stored run to take the variance from."
)
@click.option(
    "--vs", "vs_id", metavar="RUN", help="The pilot's comparison run: sd of the paired differences."
)
@click.option("--metric", required=True, metavar="NAME", help="The compared metric.")
@click.option(
    "--mde", type=float, required=True, metavar="D", help="Minimum effect to detect (metric units)."
)
@click.option(
    "--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05, show_default=True
)
@click.option(
    "--power", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.8, show_default=True
)
@click.option(
    "--rho",
    type=click.FloatRange(-1, 1),
    default=0.0,
    show_default=True,
    help="Without --vs: assumed correlation of the two systems' values, Var(d) = 2 Var(x) (1 - rho).",
)
@click.option("--cluster-by", metavar="FIELD", help="Refused: planning assumes independent queries.")
@allow_version_mismatch_option
@format_option("table", "json")
@db_option
def plan_command(
    pilot_id: str,
    vs_id: str | None,
    metric: str,
    mde: float,
    alpha: float,
    power: float,
    rho: float,
    cluster_by: str | None,
    allow_version_mismatch: bool,
    fmt: str,
    db: str | None,
) -> None:
    """The queries a two-sided paired t-test needs to detect an effect of --mde with the given power, from a
    pilot run's variance (with --vs: the paired variance of the two pilot runs)."""
    from ragmeter import metrics as registry
    from ragmeter.experiments.compare import query_values
    from ragmeter.experiments.version_guard import check_comparable
    from ragmeter.stats.power import plan_queries

    if cluster_by:
        raise InputError(
            "the power plan has no clustered form (it assumes independent queries); plan without it",
            source="--cluster-by",
        )
    name = registry.canonical(metric, source="--metric")
    _check_mde(registry.get(name), mde)
    with open_db(db) as store:
        pilot = store.get_run(pilot_id)
        other = store.get_run(vs_id) if vs_id else None
    if other is not None:
        check_comparable([pilot, other], allow=allow_version_mismatch, metrics=[name], source="plan")
    xs = query_values(pilot, name)
    if len(xs) < 2:
        raise InputError(
            f"run {pilot.run_id} has {len(xs)} value(s) of {name!r}; a plan needs 2", source="--metric"
        )
    if other is not None:
        ys = query_values(other, name)
        shared = sorted(set(xs) & set(ys))
        if len(shared) < 2:
            raise InputError(
                f"runs share {len(shared)} queries with a value of {name!r}; need 2", source="--vs"
            )
        plan = plan_queries(
            [xs[q] for q in shared], vs=[ys[q] for q in shared], mde=mde, alpha=alpha, power=power
        )
    else:
        plan = plan_queries(list(xs.values()), mde=mde, rho=rho, alpha=alpha, power=power)
    plan = {"metric": name, "pilot": pilot.run_id, "vs": other.run_id if other else None, **plan}
    if fmt == "json":
        echo_json(plan)
        return
    needed = plan["queries_needed"]
    head = f"queries needed: {needed}" if needed else "queries needed: more than 10,000,000"
    click.echo(
        f"{head} to detect |delta| = {mde:g} in {name} with power {power:g} at alpha {alpha:g} "
        f"({plan['test']})"
    )
    click.echo(
        f"sd of paired differences: {plan['sd_d']:.4g} ({plan['variance_from']}; {plan['n_pilot']} pilot queries)"
    )


def _check_mde(spec: Any, mde: float) -> None:
    """The effect is a size: above 0 and no larger than the metric's whole range."""
    if not 0 < mde < float("inf"):
        raise InputError(
            f"--mde is the size of the effect to detect, in {spec.name}'s units: give a number above 0, not {mde:g}",
            source="--mde",
        )
    lo, hi = spec.range
    if lo is not None and hi is not None and mde > hi - lo:
        raise InputError(
            f"{spec.name} lies in {lo:g} to {hi:g}: an effect of {mde:g} is larger than its whole range "
            f"(give it in the metric's units, e.g. {0.05 * (hi - lo):g})",
            source="--mde",
        )
