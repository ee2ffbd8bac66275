"""`ragmeter metrics list`: the metric registry, as a table or JSON."""

from __future__ import annotations

import click

from ragmeter.cli.options import console, echo_json, format_option


@click.group("metrics")
def metrics() -> None:
    """The metrics ragmeter knows: family, stage, range, scale, direction, interval, version."""


def _bound(value: float | None, unbounded: str) -> str:
    return unbounded if value is None else f"{value:g}"


@metrics.command("list")
@click.option("--family", help="Only this family (retrieval, lexical, semantic, judge, latency, ...).")
@format_option("table", "json")
def list_command(family: str | None, fmt: str) -> None:
    """Every registered metric (a family such as ndcg@k stands for ndcg@1, ndcg@10, ...)."""
    import ragmeter.metrics as rm

    found = [s for s in rm.specs() if family is None or s.family == family]
    if family is not None and not found:
        from ragmeter.errors import InputError

        families = sorted({s.family for s in rm.specs()})
        raise InputError(
            f"no metric of family {family!r}; families: {', '.join(families)}", source="--family"
        )
    if fmt == "json":
        echo_json([s.to_dict() for s in found])
        return
    from rich.table import Table

    table = Table(title="metrics (ragmeter.metrics)", title_justify="left")
    for col in ("name", "family", "stage", "range", "scale", "better", "interval", "version", "description"):
        table.add_column(col, overflow="fold" if col == "description" else "ellipsis")
    for s in found:
        lo, hi = s.range
        table.add_row(
            s.name + (f" ({', '.join(s.aliases)})" if s.aliases else ""),
            s.family,
            s.stage,
            f"[{_bound(lo, '-inf')}, {_bound(hi, 'inf')}]",
            s.scale,
            "higher" if s.higher_is_better else "lower",
            s.interval,
            s.version,
            s.description,
        )
    console().print(table)
