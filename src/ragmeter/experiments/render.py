"""Results that render themselves (as ranx's Report does): an ablation table and a run comparison each
give `to_table()` (a rich renderable for the console), `to_markdown()` and `to_json()`. The CLI prints what
these return and formats nothing of its own."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

DAGGER = "†"


def fmt_value(value: float | None, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{value:.{digits}f}"


def _p(value: float | None, *, bold: bool) -> str:
    if value is None:
        return "-"
    text = "<0.001" if value < 0.001 else f"{value:.3f}"
    return f"[bold]{text}[/bold]" if bold and value < 0.05 else text


def _delta(value: float | None, higher_is_better: bool, *, color: bool, digits: int = 4) -> str:
    if value is None:
        return "-"
    shown = f"{value:+.{digits}f}"
    if not color or abs(value) <= 1e-12:
        return shown
    better = value > 0 if higher_is_better else value < 0
    return f"[green]{shown}[/green]" if better else f"[red]{shown}[/red]"


def _strict_json(value: Any) -> Any:
    """`value` with each infinite float as the string "inf" / "-inf" (an unbounded d_z end,
    docs/experiments.md) and NaN as null: JSON has no such numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: _strict_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_strict_json(v) for v in value]
    return value


def _dz(dz: float | None, ci: Sequence[float] | None) -> str:
    if dz is None:
        return "-"
    return f"{dz:+.2f}" + (f" [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "")


def _table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]], *, left: int = 1) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for i, col in enumerate(header):
        table.add_column(col, justify="left" if i < left else "right", overflow="ellipsis")
    for row in rows:
        table.add_row(*row)
    return table


def _markdown(header: Sequence[str], rows: Sequence[Sequence[str]], *, left: int = 1) -> str:
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "".join("---|" if i < left else "---:|" for i in range(len(header))),
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


@dataclass
class ExperimentTable:
    """One row per variant: each column's mean, the best per column, † where p(Holm) < alpha against the
    first row (the baseline)."""

    title: str
    columns: list[str]
    rows: list[dict[str, Any]]
    alpha: float = 0.05
    note: str = (
        "best per column in bold; † p(Holm) < 0.05 vs the first row (paired permutation test; Holm over "
        "metrics x variants)"
    )

    def _cells(self, row: dict[str, Any], bold: str) -> list[str]:
        cells = []
        for c in self.columns:
            v = row["values"][c]
            text = "–" if v is None else f"{v:.4f}"
            p = row["p_holm"].get(c)
            if p is not None and p < self.alpha:
                text += DAGGER
            cells.append(bold.format(text) if row["best"][c] else text)
        return cells

    def to_markdown(self) -> str:
        rows = [[row["variant"], *self._cells(row, "**{}**")] for row in self.rows]
        return _markdown(["variant", *self.columns], rows)

    def to_table(self) -> Any:
        rows = [
            [row["variant"], *self._cells(row, "[bold green]{}[/bold green]"), row["run_id"] or "-"]
            for row in self.rows
        ]
        return _table(self.title, ["variant", *self.columns, "run"], rows)

    def to_json(self, **extra: Any) -> str:
        return json.dumps({**extra, "columns": self.columns, "rows": self.rows}, indent=1)


@dataclass
class ComparisonReport:
    """`runs compare`: each run B against run A (the dicts of ragmeter.experiments.compare.compare)."""

    a: str
    comparisons: list[dict[str, Any]]
    seed: int
    resamples: int
    per_query: bool = False
    show_queries: bool = True
    notes: list[str] = field(default_factory=list)
    cluster_by: str | None = None
    # three or more runs: the randomised Tukey HSD of every pair (ragmeter.experiments.compare.tukey_rows)
    tukey: list[dict[str, Any]] = field(default_factory=list)
    version_mismatches: list[str] = field(default_factory=list)  # allowed with --allow-version-mismatch
    left_out: list[str] = field(default_factory=list)  # metrics not compared: their versions differ
    # runs judged in repeats: {run id: {judge metric: JudgeStability as JSON}} (`run --repeat N`)
    stability: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def footnote(self) -> str:
        from ragmeter.experiments.compare import method_line

        return (
            f"{method_line(self.cluster_by)}; pairs with a value in both runs; percentile bootstrap CIs and "
            f"permutation test with {self.resamples} samples (seed {self.seed}); d_z = mean / sd of B - A (an "
            "infinite end: too many resamples tie, the effect size is unbounded that way); MDE = smallest "
            "|B - A| this comparison detects at alpha 0.05, power 0.8; Holm-Bonferroni across metrics; bold "
            "p < 0.05; wins follow each metric's direction (`ragmeter metrics list`)"
        )

    def to_json(self) -> str:
        out: dict[str, Any] = {"a": self.a, "seed": self.seed, "resamples": self.resamples}
        out["cluster_by"] = self.cluster_by
        out["version_mismatches"] = self.version_mismatches
        out["left_out"] = self.left_out
        if self.tukey:
            out["tukey_hsd"] = self.tukey
        out["comparisons"] = self.comparisons
        if self.stability:
            out["stability"] = self.stability
        if len(self.comparisons) == 1:
            out.update(self.comparisons[0])
        return json.dumps(_strict_json(out), indent=2, default=str)

    def _metric_rows(self, c: dict[str, Any], rich: bool) -> list[list[str]]:
        rows = []
        for r in c["metrics"]:
            ci = "-" if r["ci95"] is None else f"[{r['ci95'][0]:+.3f}, {r['ci95'][1]:+.3f}]"
            if r.get("wilson"):  # a class share: each run's Wilson interval, no test of B - A
                ci = "Wilson " + " / ".join(
                    "-" if w is None else f"[{w[0]:.3f}, {w[1]:.3f}]"
                    for w in (r["wilson"]["a"], r["wilson"]["b"])
                )
            ps = [_p(r[k], bold=rich) for k in ("p_t", "p_perm", "p_holm")]
            values = [
                fmt_value(r["a"]),
                fmt_value(r["b"]),
                _delta(r["delta"], r["higher_is_better"], color=rich),
            ]
            counts = [str(r["wins"]), str(r["losses"]), str(r["ties"])]
            effect = [_dz(r.get("dz"), r.get("dz_ci95")), fmt_value(r.get("mde"))]
            rows.append([r["metric"], r["scale"] or "?", *values, ci, *effect, *ps, *counts])
        return rows

    def _query_rows(self, c: dict[str, Any], rich: bool) -> list[list[str]]:
        better = {r["metric"]: r["higher_is_better"] for r in c["metrics"]}
        rows = []
        for metric, changes in c["queries"].items():
            for change, entries in changes.items():
                for e in entries:
                    q = e["question"] if len(e["question"]) <= 60 else e["question"][:59] + "…"
                    delta = _delta(e["delta"], better[metric], color=rich)
                    label = change
                    if change == "moved":  # a failure class: from one class to another, not better or worse
                        label, delta = f"moved {e['from']} -> {e['to']}", f"{e['delta']:+g}"
                    rows.append(
                        [metric, label, e["query_id"], q, fmt_value(e["a"]), fmt_value(e["b"]), delta]
                    )
        return rows

    @staticmethod
    def _latency_rows(c: dict[str, Any]) -> list[list[str]]:
        return [
            [
                r["stage"],
                *(fmt_value(r[s][k], 1) if r[s] else "-" for k in ("p50", "p95", "max") for s in "ab"),
            ]
            for r in c["latency"]
        ]

    def _sections(self, rich: bool) -> list[tuple[str, list[str], list[list[str]], int] | str]:
        out: list[tuple[str, list[str], list[list[str]], int] | str] = []
        metric_cols = ["metric", "scale", "A", "B", "B - A", "95% CI", "d_z [95% CI]", "MDE"]
        metric_cols += ["p (t)", "p (perm)", "p Holm"]
        for c in self.comparisons:
            if not c["same_dataset"]:
                out.append(
                    "note: the runs used different datasets; paired values cover shared query ids only"
                )
            out.append(
                (
                    f"A = {self.a}   B = {c['b']}",
                    [*metric_cols, "B wins", "B losses", "ties"],
                    self._metric_rows(c, rich),
                    2,
                )
            )
            if self.show_queries:
                queries = self._query_rows(c, rich)
                title = "every paired query" if self.per_query else "queries that changed most (B - A)"
                if queries:
                    out.append(
                        (title, ["metric", "change", "query", "question", "A", "B", "B - A"], queries, 4)
                    )
                else:
                    out.append("no query changed its value of any metric")
            if c["latency"]:
                cols = ["stage", "A p50", "B p50", "A p95", "B p95", "A max", "B max"]
                out.append(("latency per stage (ms, lower is better)", cols, self._latency_rows(c), 1))
        out += self._stability_sections()
        if self.tukey:
            cols = ["metric", "A", "B", "B - A", "queries", "p (Tukey HSD)"]
            out.append((f"every pair of runs: {self.tukey[0]['method']}", cols, self._tukey_rows(rich), 3))
        return out

    def _stability_sections(self) -> list[tuple[str, list[str], list[list[str]], int] | str]:
        from ragmeter.models import JudgeStability
        from ragmeter.score.stability import STABILITY_COLUMNS, STABILITY_NOTE, stability_rows

        out: list[tuple[str, list[str], list[list[str]], int] | str] = []
        for run_id, by_metric in self.stability.items():
            parsed = {n: JudgeStability.model_validate(s) for n, s in by_metric.items()}
            title = f"judge stability across repeats, run {run_id}"
            out.append((title, list(STABILITY_COLUMNS), stability_rows(parsed), 3))
        if out:
            out.append(f"note: {STABILITY_NOTE}")
        return out

    def _tukey_rows(self, rich: bool) -> list[list[str]]:
        from ragmeter import metrics

        return [
            [
                r["metric"],
                r["a"],
                r["b"],
                _delta(r["delta"], metrics.higher_is_better(r["metric"]), color=rich),
                str(r["n"]),
                _p(r["p_tukey"], bold=rich),
            ]
            for r in self.tukey
        ]

    def to_table(self) -> Any:
        from rich.console import Group
        from rich.text import Text

        parts: list[Any] = []
        for s in self._sections(rich=True):
            parts.append(Text(s) if isinstance(s, str) else _table(s[0], s[1], s[2], left=s[3]))
        parts.append(Text(self.footnote))
        return Group(*parts)

    def to_markdown(self) -> str:
        parts = []
        for s in self._sections(rich=False):
            parts.append(s if isinstance(s, str) else f"**{s[0]}**\n\n" + _markdown(s[1], s[2], left=s[3]))
        parts.append(self.footnote)
        return "\n\n".join(parts)


__all__ = ["ComparisonReport", "ExperimentTable", "fmt_value"]
