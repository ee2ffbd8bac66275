"""Plots of runs with matplotlib's object API on the Agg canvas (no pyplot, no global backend change).

Each ``*_figure`` function returns a Figure, or None when the runs have nothing to draw; `save_figure`
writes it as PNG and SVG; `report_figures` chooses the few plots a report shows and `write_plots` writes
them. Bounded metrics are drawn on their fixed range from the metric registry; a metric with one value
across every query and run is not drawn (the report says "no variation" in one line instead).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter import metrics as registry
from ragmeter.errors import MissingExtraError
from ragmeter.models import EvalRunResult
from ragmeter.report.export import run_label
from ragmeter.report.figtext import plain_text
from ragmeter.report.selection import headline_metrics, no_variation, padded, split_at_k
from ragmeter.report.selection import short_label as _short
from ragmeter.report.selection import values_of as metric_values

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ragmeter.experiments.significance import Comparison

__all__ = ["metric_values"]  # re-exported: the one per-query value helper lives in report.selection
MAX_PANELS = 8
WIN, LOSS, TIE = "#2e7d32", "#c62828", "#9e9e9e"


def _figure(n_panels: int, *, width: float = 3.4, height: float = 2.8) -> tuple[Figure, list[Any]]:
    try:
        from matplotlib.figure import Figure
    except ImportError:  # pragma: no cover - depends on the environment
        raise MissingExtraError("report", "plots") from None
    cols = min(n_panels, 4)
    rows = math.ceil(n_panels / cols)
    fig = Figure(figsize=(width * cols, height * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel().tolist()
    for ax in axes[n_panels:]:
        ax.set_visible(False)
    return fig, axes[:n_panels]


def save_figure(fig: Figure, stem: str | Path, formats: Sequence[str] = ("png", "svg")) -> list[Path]:
    """Write ``stem.<fmt>`` for each format; metadata without dates so that files are reproducible."""
    import matplotlib

    out = []
    base = Path(stem)
    base.parent.mkdir(parents=True, exist_ok=True)
    for fmt in formats:
        path = base.with_suffix(f".{fmt}")
        metadata: dict[str, Any] = {"Date": None} if fmt == "svg" else {}
        # A fixed salt makes the SVG's clip-path ids, hence the file, the same on every save.
        with matplotlib.rc_context({"svg.hashsalt": "ragmeter"}):
            fig.savefig(path, format=fmt, dpi=110, metadata=metadata)
        out.append(path)
    return out


def metric_names(runs: Sequence[EvalRunResult]) -> list[str]:
    """Metric names in order of first appearance (aggregates first, then per-query results)."""
    seen: dict[str, None] = {}
    for run in runs:
        for name in run.aggregate:
            seen.setdefault(name, None)
        for q in run.per_query:
            for name in q.metrics:
                seen.setdefault(name, None)
    return list(seen)


def metric_mean(run: EvalRunResult, metric: str) -> float | None:
    """The run's aggregate mean when it has one (it carries the run's policies), else the per-query mean."""
    summary = run.aggregate.get(metric)
    if summary is not None:
        return summary.mean
    values = metric_values(run, metric)
    return sum(values) / len(values) if values else None


def at_k_families(names: Sequence[str]) -> dict[str, list[int]]:
    """{family: sorted cutoffs} for metrics named family@k with at least two cutoffs."""
    families: dict[str, set[int]] = {}
    for name in names:
        parsed = split_at_k(name)
        if parsed:
            families.setdefault(parsed[0], set()).add(parsed[1])
    return {f: sorted(ks) for f, ks in families.items() if len(ks) >= 2}


def _fixed_y(ax: Any, name: str) -> None:
    limits = padded(name)
    if limits is not None:
        ax.set_ylim(*limits)


def metric_at_k_figure(runs: Sequence[EvalRunResult]) -> Figure | None:
    """One panel per family (recall, ndcg, ...): mean value against k, one line per run, on the family's
    fixed range. A family whose every cut-off has no variation is left out."""
    names = metric_names(runs)
    flat = no_variation(runs, names)
    families = {f: ks for f, ks in at_k_families(names).items() if not all(f"{f}@{k}" in flat for k in ks)}
    if not families:
        return None
    items = list(families.items())[:MAX_PANELS]
    fig, axes = _figure(len(items))
    for ax, (family, ks) in zip(axes, items, strict=True):
        for i, run in enumerate(runs):
            points = [(k, metric_mean(run, f"{family}@{k}")) for k in ks]
            xs = [k for k, v in points if v is not None]
            ys = [v for _, v in points if v is not None]
            if xs:
                ax.plot(xs, ys, marker="o", label=_short(run_label(run, i)))
        ax.set_title(f"{family}@k")
        ax.set_xlabel("k")
        ax.set_xticks(ks)
        _fixed_y(ax, f"{family}@{ks[0]}")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize="small")
    return fig


def distribution_figure(
    runs: Sequence[EvalRunResult], metrics: Sequence[str] | None = None, *, kind: str = "box"
) -> Figure | None:
    """Per-query distribution of each metric (box or violin, mean marked), one box per run, on the
    metric's fixed range. By default the headline metrics (one cut-off per family) that vary."""
    if kind not in ("box", "violin"):
        raise ValueError("kind must be 'box' or 'violin'")
    if metrics is None:
        candidates = headline_metrics(metric_names(runs))
        flat = no_variation(runs, candidates)
        names = [m for m in candidates if m not in flat]
    else:
        names = list(metrics)
    panels = [(name, [metric_values(run, name) for run in runs]) for name in names]
    panels = [(name, vals) for name, vals in panels if any(vals)][:MAX_PANELS]
    if not panels:
        return None
    labels = [_short(run_label(run, i), 16) for i, run in enumerate(runs)]
    fig, axes = _figure(len(panels))
    for ax, (name, values) in zip(axes, panels, strict=True):
        positions = [i + 1 for i, v in enumerate(values) if v]
        data = [v for v in values if v]
        if kind == "violin" and all(len(set(v)) > 1 for v in data):
            ax.violinplot(data, positions=positions, showmedians=True)
        else:
            ax.boxplot(data, positions=positions, showmeans=True)
        ax.set_xticks(range(1, len(labels) + 1), labels, rotation=20, fontsize="small")
        n_null = [
            sum(1 for q in run.per_query if name in q.metrics) - len(v)
            for run, v in zip(runs, values, strict=True)
        ]
        ax.set_title(name + (f" ({sum(n_null)} null)" if any(n_null) else ""))
        _fixed_y(ax, name)
        ax.grid(alpha=0.3, axis="y")
    return fig


def paired_pairs(run_a: EvalRunResult, run_b: EvalRunResult, metric: str) -> list[tuple[float, float]]:
    a = {q.query_id: q.metrics[metric].value for q in run_a.per_query if metric in q.metrics}
    out = []
    for q in run_b.per_query:
        m = q.metrics.get(metric)
        va = a.get(q.query_id)
        if m is not None and m.value is not None and va is not None:
            out.append((va, m.value))
    return out


def paired_difference_figure(
    run_a: EvalRunResult, run_b: EvalRunResult, metrics: Sequence[str] | None = None
) -> Figure | None:
    """Per metric, each query as a point (value in A, value in B): green where B is better in the
    metric's direction (above the diagonal, or below it for a lower-is-better metric). Not part of the
    report (its forest plot and change table say the same at a glance); kept for notebooks."""
    names = (
        list(metrics)
        if metrics is not None
        else [m for m in metric_names([run_a]) if m in metric_names([run_b])]
    )
    panels = [(name, paired_pairs(run_a, run_b, name)) for name in names]
    panels = [(name, pairs) for name, pairs in panels if pairs][:MAX_PANELS]
    if not panels:
        return None
    la, lb = _short(run_label(run_a, 0)), _short(run_label(run_b, 1))
    fig, axes = _figure(len(panels), width=3.4, height=3.4)
    for ax, (name, pairs) in zip(axes, panels, strict=True):
        sign = 1.0 if registry.higher_is_better(name) else -1.0
        colours = [WIN if sign * (b - a) > 0 else LOSS if b != a else TIE for a, b in pairs]
        xs = [a for a, _ in pairs]
        ys = [b for _, b in pairs]
        limits = padded(name)
        if limits is None:
            low, high = min(*xs, *ys), max(*xs, *ys)
            pad = (high - low) * 0.05 or 0.05
            limits = (low - pad, high + pad)
        ax.plot(limits, limits, color="#555555", lw=0.8, ls="--")
        ax.scatter(xs, ys, c=colours, s=14, alpha=0.7, edgecolors="none")
        ax.set_xlim(*limits)
        ax.set_ylim(*limits)
        delta = sum(b - a for a, b in pairs) / len(pairs)
        wins = sum(1 for c in colours if c == WIN)
        losses = sum(1 for c in colours if c == LOSS)
        ax.set_title(f"{name}: Δ={delta:+.4f} (+{wins}/-{losses}, n={len(pairs)})", fontsize="small")
        ax.set_xlabel(la, fontsize="small")
        ax.set_ylabel(lb, fontsize="small")
        ax.set_aspect("equal")
    return fig


def judge_grade_figure(runs: Sequence[EvalRunResult], metrics: Sequence[str] | None = None) -> Figure | None:
    """Histogram of each judge metric's per-query values (null grades counted in the title); by default
    every metric of the registry's judge family that the runs hold and that varies."""
    if metrics is None:
        judged = [m for m in metric_names(runs) if registry.family_of(m) == "judge"]
        flat = no_variation(runs, judged)
        metrics = [m for m in judged if m not in flat]
    present = [m for m in metrics if any(metric_values(run, m) for run in runs)]
    if not present:
        return None
    fig, axes = _figure(len(present[:MAX_PANELS]))
    for ax, name in zip(axes, present[:MAX_PANELS], strict=True):
        all_values = [v for run in runs for v in metric_values(run, name)]
        integer = all(float(v).is_integer() for v in all_values) and max(all_values) > 1
        if integer:
            lo, hi = int(min(all_values)), int(max(all_values))
            bins: Any = [x - 0.5 for x in range(min(lo, 1), max(hi, 10) + 2)]
        else:
            limits = padded(name)
            bins = 10 if limits is None else [limits[0] + (limits[1] - limits[0]) * i / 10 for i in range(11)]
        n_null = 0
        for i, run in enumerate(runs):
            values = metric_values(run, name)
            n_null += sum(1 for q in run.per_query if name in q.metrics) - len(values)
            if values:
                ax.hist(values, bins=bins, alpha=0.55, label=_short(run_label(run, i)))
        ax.set_title(f"{name} ({n_null} failed)" if n_null else name)
        ax.set_ylabel("queries")
        if integer:
            ax.set_xticks(range(min(lo, 1), max(hi, 10) + 1))
        if len(runs) > 1:
            ax.legend(fontsize="small")
    return fig


@dataclass
class Plot:
    """One plot of the report: its file stem, caption, the metrics it draws and the figure."""

    name: str
    caption: str
    figure: Figure
    metrics: list[str] = field(default_factory=list)


def report_figures(
    runs: Sequence[EvalRunResult], comparisons: Sequence[Comparison] | None = None
) -> list[Plot]:
    """The report's plots, in reading order: for two or more runs ONE forest plot of the per-metric
    deltas (every comparison in it), then metric@k (cut-offs as x, runs as lines), the per-query
    distribution of the headline metrics that vary (judges aside), and the judge grades."""
    import matplotlib

    # Run names, metric names and ids are the user's text: drawn as typed, never parsed as mathtext (a run
    # named `$x^$` is not a formula, and its parse error would fail the whole report or page).
    with matplotlib.rc_context({"text.parse_math": False}):
        plots = _report_figures(runs, comparisons)
    for plot in plots:
        plain_text(plot.figure)
    return plots


def _report_figures(runs: Sequence[EvalRunResult], comparisons: Sequence[Comparison] | None) -> list[Plot]:
    from ragmeter.report.forest import forest_figure, forest_metrics

    names = metric_names(runs)
    flat = no_variation(runs, names)
    plots: list[Plot] = []
    if comparisons:
        drawn = forest_metrics(comparisons, exclude=flat)
        fig = forest_figure(comparisons, drawn)
        if fig is not None:
            caption = "Change per metric (B − A) with its 95% paired bootstrap interval"
            plots.append(Plot("forest", caption, fig, drawn))
    fig = metric_at_k_figure(runs)
    if fig is not None:
        # Families, not cut-offs: a cut-off without variation is one point on its family's line.
        drawn = [
            f"{f}@k" for f, ks in at_k_families(names).items() if any(f"{f}@{k}" not in flat for k in ks)
        ]
        plots.append(Plot("metric_at_k", "Mean of each metric against its cut-off k", fig, drawn))
    judged = [m for m in names if registry.family_of(m) == "judge" and m not in flat]
    headline = [m for m in headline_metrics(names) if m not in flat and m not in judged]
    shown = [m for m in headline if any(metric_values(run, m) for run in runs)][:MAX_PANELS]
    fig = distribution_figure(runs, shown) if shown else None
    if fig is not None:
        caption = "Per-query distribution of the headline metrics (box: quartiles, line: median, ▲: mean)"
        plots.append(Plot("distribution", caption, fig, shown))
    fig = judge_grade_figure(runs, judged) if judged else None
    if fig is not None:
        plots.append(Plot("judge_grades", "Judge grades", fig, judged))
    return plots


def write_plots(
    runs: Sequence[EvalRunResult],
    out_dir: str | Path,
    *,
    formats: Sequence[str] = ("png", "svg"),
    comparisons: Sequence[Comparison] | None = None,
) -> dict[str, list[Path]]:
    """The report's plots (`report_figures`) written under out_dir; {plot name: files}. With two or more
    runs and no comparisons given, each run is compared with the first."""
    if comparisons is None and len(runs) > 1:
        from ragmeter.report.forest import compare_with_first

        comparisons = compare_with_first(runs)
    folder = Path(out_dir)
    return {
        plot.name: save_figure(plot.figure, folder / plot.name, formats)
        for plot in report_figures(runs, comparisons)
    }
