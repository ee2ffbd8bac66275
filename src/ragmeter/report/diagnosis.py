"""Console tables of failure classes: a run's classes, and the transitions between two runs."""

from __future__ import annotations

from typing import Any

from ragmeter.diagnose.classes import class_counts, transitions
from ragmeter.models import EvalRunResult
from ragmeter.safety import console_text
from ragmeter.stats.intervals import wilson

MAX_IDS = 6


def _ids(ids: list[str]) -> str:
    shown = ", ".join(console_text(i) for i in ids[:MAX_IDS])
    return shown + (f", ... {len(ids) - MAX_IDS} more" if len(ids) > MAX_IDS else "")


def class_table(run: EvalRunResult, title: str | None = None) -> Any:
    """Why queries failed: per class the count, share with its Wilson 95% interval, and query ids; None
    when the run was not classified."""
    from rich.table import Table

    rows = class_counts(run)
    if not rows:
        return None
    total = sum(r["n"] for r in rows)
    table = Table(title=title or f"failure classes ({total} queries)", title_justify="left")
    for col in ("class", "n", "share", "95% CI (Wilson)", "queries"):
        table.add_column(col, justify="right" if col in ("n", "share") else "left")
    for r in rows:
        lo, hi = wilson(r["n"], total)
        table.add_row(
            r["class"], str(r["n"]), f"{r['share']:.1%}", f"[{lo:.3f}, {hi:.3f}]", _ids(r["queries"])
        )
    return table


def sufficiency_view(run: EvalRunResult) -> Any:
    """The sufficiency x outcome table (count, share of the table and its Wilson 95% interval per cell);
    None when no query of the run has a context_sufficiency value."""
    from rich.table import Table

    from ragmeter.score.sufficiency import COLUMNS, ROWS

    data = run.sufficiency
    if not data:
        return None

    def cell(c: dict[str, Any]) -> str:
        if c.get("share") is None:
            return str(c["n"])
        lo, hi = c["ci95"]
        return f"{c['n']} ({c['share']:.0%} [{lo:.2f}, {hi:.2f}])"

    title = f"sufficiency x outcome ({data['n']} queries; share of the table, Wilson 95%)"
    table = Table(title=title, title_justify="left")
    for col in ("context", *COLUMNS, "total"):
        table.add_column(col, justify="left" if col == "context" else "right")
    for row in ROWS:
        cells = data["cells"][row]
        table.add_row(row, *(cell(cells[c]) for c in (*COLUMNS, "total")))
    if data.get("n_without_outcome"):
        table.caption = f"{data['n_without_outcome']} judged queries have no known outcome (left out)"
    return table


def transition_table(a: EvalRunResult, b: EvalRunResult) -> tuple[Any, dict[str, Any]] | None:
    """The queries that changed class from run a to run b (from -> to, count, which); None when either
    run was not classified."""
    from rich.table import Table

    moves = transitions(a, b)
    if moves["n_paired"] == 0:
        return None
    title = (
        f"failure-class transitions {a.run_id} -> {b.run_id}: {moves['n_moved']} of {moves['n_paired']} moved"
    )
    table = Table(title=console_text(title), title_justify="left")
    for col in ("from", "to", "n", "queries"):
        table.add_column(col, justify="right" if col == "n" else "left")
    for m in moves["moved"]:
        table.add_row(m["from"], m["to"], str(m["n"]), _ids(m["queries"]))
    return table, moves


def classes_side_by_side(runs: dict[str, EvalRunResult], title: str) -> Any:
    """The class counts (share) of several runs side by side; None when none was classified."""
    from rich.table import Table

    counted = {label: class_counts(run) for label, run in runs.items()}
    counted = {label: rows for label, rows in counted.items() if rows}
    if not counted:
        return None
    table = Table(title=title, title_justify="left")
    table.add_column("class")
    for label in counted:
        table.add_column(console_text(label), justify="right")
    names = [r["class"] for r in next(iter(counted.values()))]
    for i, name in enumerate(names):
        table.add_row(name, *(f"{rows[i]['n']} ({rows[i]['share']:.0%})" for rows in counted.values()))
    return table
