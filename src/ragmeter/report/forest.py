"""The forest plot that leads a comparison: per metric, B − A with its 95% paired bootstrap interval.

The deltas and intervals are those of `ragmeter.experiments.significance.compare_runs` (paired over the
queries, seeded); nothing is resampled here. Colour says whether the change is better in the metric's
direction (`higher_is_better` in the registry); a filled marker, that the interval excludes 0.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from ragmeter import metrics as registry
from ragmeter.report.selection import axis_range, headline_metrics
from ragmeter.report.selection import short_label as _short

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ragmeter.experiments.significance import Comparison, MetricComparison
    from ragmeter.models import EvalRunResult

BETTER, WORSE, SAME = "#2e7d32", "#c62828", "#757575"
_MARKERS = ("o", "s", "D", "^", "v", "P")


def compare_with_first(
    runs: Sequence[EvalRunResult], *, seed: int = 42, n_resamples: int = 10_000
) -> list[Comparison]:
    """Each run after the first against the first (paired tests, `compare_runs`), labelled as the report
    labels runs."""
    from ragmeter.experiments.significance import compare_runs, per_query_values
    from ragmeter.report.export import run_label

    labels = [run_label(run, i) for i, run in enumerate(runs)]
    base = per_query_values(runs[0])
    return [
        compare_runs(
            base, per_query_values(run), seed=seed, n_resamples=n_resamples, names=(labels[0], labels[i])
        )
        for i, run in enumerate(runs[1:], start=1)
    ]


def forest_metrics(comparisons: Sequence[Comparison], *, exclude: Collection[str] = ()) -> list[str]:
    """The rows of the forest plot: the headline metrics (one cut-off per family) that the registry
    bounds, that have a delta in some comparison, and are not in `exclude` (no variation)."""
    names = [m.metric for c in comparisons for m in c.metrics if m.delta is not None]
    return [m for m in headline_metrics(names) if m not in exclude and axis_range(m) is not None]


def _colour(delta: float, higher_is_better: bool) -> str:
    if delta == 0:
        return SAME
    return BETTER if (delta > 0) == higher_is_better else WORSE


def forest_figure(comparisons: Sequence[Comparison], metrics: Sequence[str]) -> Figure | None:
    """One row per metric (top to bottom in `metrics` order), one marker per comparison on that row.

    x is the delta as a fraction of the metric's range width (for 0-1 metrics, the delta itself; other
    widths are named on the row). None when no comparison has a delta for any of the metrics."""
    import matplotlib

    from ragmeter.report.figtext import plain_text

    # Run labels are the user's text: plain text, never mathtext (a run named `$x^$` is no formula).
    with matplotlib.rc_context({"text.parse_math": False}):
        fig = _forest_figure(comparisons, metrics)
    return None if fig is None else plain_text(fig)


def _forest_figure(comparisons: Sequence[Comparison], metrics: Sequence[str]) -> Figure | None:
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    rows = [m for m in metrics if any(_find(c, m) is not None for c in comparisons)]
    if not rows:
        return None
    n_cmp = len(comparisons)
    height = 1.9 + 0.3 * len(rows) * max(1.0, 0.6 * n_cmp) + 0.2 * (n_cmp if n_cmp > 1 else 0)
    fig = Figure(figsize=(8.0, height), layout="constrained")
    ax = fig.subplots()
    widths = {}
    for name in rows:
        bounds = axis_range(name)
        assert bounds is not None  # forest_metrics keeps bounded metrics only
        widths[name] = bounds[1] - bounds[0]
    step = 0.7 / n_cmp
    for j, cmp in enumerate(comparisons):
        offset = (j - (n_cmp - 1) / 2) * step
        for i, name in enumerate(rows):
            m = _find(cmp, name)
            if m is None or m.delta is None:
                continue
            w = widths[name]
            colour = _colour(m.delta, registry.higher_is_better(name))
            y = -i - offset
            excludes_zero = False
            if m.ci95 is not None:
                lo, hi = m.ci95
                ax.plot([lo / w, hi / w], [y, y], color=colour, lw=1.8, solid_capstyle="butt")
                excludes_zero = lo > 0 or hi < 0
            ax.plot(
                [m.delta / w], [y], marker=_MARKERS[j % len(_MARKERS)], ms=6.5, color=colour,
                markerfacecolor=colour if excludes_zero else "white", markeredgewidth=1.5, linestyle="none",
            )  # fmt: skip
    ax.axvline(0.0, color="#333333", lw=0.9)
    ax.set_yticks([-i for i in range(len(rows))], [_row_label(n, widths[n]) for n in rows])
    ax.set_ylim(-len(rows) + 0.4, 0.6)
    ax.grid(alpha=0.3, axis="x")
    scaled = any(w != 1.0 for w in widths.values())
    ax.set_xlabel("Δ = B − A" + (" (÷ range width where shown)" if scaled else ""))
    handles = [
        Line2D([], [], color=BETTER, lw=1.8, label="better in the metric's direction"),
        Line2D([], [], color=WORSE, lw=1.8, label="worse"),
        Line2D([], [], color=SAME, marker="o", markerfacecolor="white", linestyle="none",
               label="hollow: 95% interval includes 0"),
    ]  # fmt: skip
    if n_cmp > 1:
        handles += [
            Line2D([], [], color="#333333", marker=_MARKERS[j % len(_MARKERS)], linestyle="none",
                   label=f"{_short(c.run_b)} − {_short(c.run_a)}")
            for j, c in enumerate(comparisons)
        ]  # fmt: skip
        ax.set_title("Change per metric, 95% paired bootstrap intervals", fontsize="medium")
    else:
        c = comparisons[0]
        ax.set_title(
            f"{_short(c.run_b)} − {_short(c.run_a)}: 95% paired bootstrap intervals", fontsize="medium"
        )
    # Below the axes, so that long run names never squeeze the plot.
    fig.legend(handles=handles, fontsize="small", loc="outside lower center", ncols=2, frameon=False)
    return fig


def _find(cmp: Comparison, metric: str) -> MetricComparison | None:
    try:
        m = cmp.get(metric)
    except KeyError:
        return None
    return m if m.delta is not None else None


def _row_label(name: str, width: float) -> str:
    return name if width == 1.0 else f"{name} (÷{width:g})"
