"""Gates over a run judged in repeats (`run --repeat N`): which gates are flaky, and each query's all-k pass.

A gate is *flaky* when the run means of the individual repeats fall on both sides of its threshold: repeat r's
run mean is the mean over the answered queries of their r-th judgment. The share of repeat means on the other
side of the threshold from the run's own verdict (the gate rule on the mean over all repeats), with its Wilson
95% interval over the N repeats, is reported for every gated judge metric; the gate is flaky when that share
is above the declared tolerance (`--flaky-tolerance`, 0 by default: any repeat that would have decided the
other way). A repeat mean without a value fails the gate, as a run mean without one does.

The all-k pass (tau-bench's pass^k, Yao et al. 2024) of a query is 1 when every repeat passes (a value at
least the threshold; at most, for a lower-is-better metric), else 0; a repeat without a value does not pass.
It is stored beside the query's mean as `<metric>_pass_all`, a name the registry knows for every judge
metric, and aggregated with a Wilson interval. Its threshold is the gate's when one names the metric, else the
middle of the metric's range (the flip share's rule, ragmeter.score.stability).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ragmeter.models import GateAcrossRepeats, MetricResult, QueryEvalResult

PASS_ALL_SUFFIX = "_pass_all"


def pass_threshold(name: str, gates: Mapping[str, float] | None) -> float:
    """The pass line of a judge metric: its gate's threshold, else the middle of its range."""
    import ragmeter.metrics as rm

    gate = (gates or {}).get(name)
    if gate is not None:
        return gate
    lo, hi = rm.get(name).range
    return ((lo or 0.0) + (hi if hi is not None else 1.0)) / 2.0


def _passes(value: float | None, threshold: float, higher: bool) -> bool:
    from ragmeter.metrics.gate import falls_short

    return not falls_short(value, threshold, higher)


def pass_all_values(
    results: Sequence[QueryEvalResult], gates: Mapping[str, float] | None = None
) -> dict[str, dict[str, MetricResult]]:
    """{query id: {`<metric>_pass_all`: 1.0 / 0.0}} for each repeated metric of each answered query; a
    query none of whose repeats has a value gets a null with the reason."""
    import ragmeter.metrics as rm

    out: dict[str, dict[str, MetricResult]] = {}
    for r in results:
        if r.status != "ok":
            continue
        for name, repeats in r.repeats.items():
            threshold, higher = pass_threshold(name, gates), rm.higher_is_better(name)
            values = [v.value for v in repeats]
            details = {"threshold": threshold, "repeats": len(values), "values": values}
            if all(v is None for v in values):
                value, error = None, "no repeat has a value"
            else:
                value, error = float(all(_passes(v, threshold, higher) for v in values)), None
            metric = f"{name}{PASS_ALL_SUFFIX}"
            out.setdefault(r.query_id, {})[metric] = MetricResult(
                name=metric, value=value, error=error, details=details, version=repeats[0].version
            )
    return out


def repeat_means(results: Sequence[QueryEvalResult], name: str) -> list[float | None]:
    """Repeat r's run mean of `name`: the mean over the answered queries of their r-th value (None: none)."""
    rows = [r.repeats[name] for r in results if r.status == "ok" and name in r.repeats]
    width = max((len(row) for row in rows), default=0)
    means: list[float | None] = []
    for j in range(width):
        valid = [row[j].value for row in rows if j < len(row) and row[j].value is not None]
        means.append(math.fsum(v for v in valid if v is not None) / len(valid) if valid else None)
    return means


def gates_across_repeats(
    results: Sequence[QueryEvalResult],
    means: Mapping[str, float | None],
    gates: Mapping[str, float],
    *,
    tolerance: float = 0.0,
) -> dict[str, GateAcrossRepeats]:
    """Each gate on a metric judged in repeats: its repeat means, the share of them on the other side of
    the threshold from the run's verdict with a Wilson 95% interval, and whether the gate is flaky."""
    import ragmeter.metrics as rm
    from ragmeter.stats.intervals import wilson

    out: dict[str, GateAcrossRepeats] = {}
    for name, threshold in gates.items():
        each = repeat_means(results, name)
        if len(each) < 2:
            continue  # judged once (or not a judge metric): nothing can flap
        higher = rm.higher_is_better(name)
        passed = _passes(means.get(name), threshold, higher)
        other = sum(_passes(m, threshold, higher) != passed for m in each)
        share = other / len(each)
        out[name] = GateAcrossRepeats(
            threshold=threshold,
            higher_is_better=higher,
            verdict="pass" if passed else "fail",
            repeat_means=each,
            other_side=other,
            repeats=len(each),
            share=share,
            share_ci95=wilson(other, len(each)),
            tolerance=tolerance,
            flaky=share > tolerance,
        )
    return out


def flaky_line(name: str, g: GateAcrossRepeats) -> str:
    """One line that says why a gate is flaky (console, JUnit's skipped message)."""
    shown = ", ".join("-" if m is None else f"{m:.4f}" for m in g.repeat_means)
    lo, hi = g.share_ci95
    return (
        f"{name}: flaky: {g.other_side} of {g.repeats} repeat means on the other side of {g.threshold:g} "
        f"from the run's {g.verdict} (share {g.share:.2f}, Wilson 95% CI [{lo:.2f}, {hi:.2f}], "
        f"tolerance {g.tolerance:g}); repeat means {shown}"
    )
