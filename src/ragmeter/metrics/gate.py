"""The gate rule (`--fail-under`, JUnit XML, the pytest plugin): one definition, in each metric's direction.

A gate passes when the metric's mean is at least its threshold (at most, for a lower-is-better metric);
a metric without a value (no valid query, not produced) fails its gate.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from ragmeter.errors import InputError
from ragmeter.metrics.registry import higher_is_better, lookup


def parse_thresholds(values: Iterable[str], *, source: str = "--fail-under") -> dict[str, float]:
    """METRIC=VALUE pairs -> {canonical metric name: finite threshold}; unknown names are input errors."""
    out: dict[str, float] = {}
    for text in values:
        metric, sep, number = text.rpartition("=")
        if not sep or not metric.strip():
            raise InputError(f"expected METRIC=VALUE, got {text!r}", source=source)
        try:
            value = float(number)
        except ValueError:
            raise InputError(f"{number!r} is not a number (in {text!r})", source=source) from None
        if not math.isfinite(value):  # nan would disable the gate, inf would always fail it
            raise InputError(f"{number!r} is not a finite number (in {text!r})", source=source)
        spec = lookup(metric.strip())
        if spec is None or spec.parameters:
            raise InputError(f"no metric {metric.strip()!r}: see `ragmeter metrics list`", source=source)
        out[spec.name] = value
    return out


def falls_short(value: float | None, threshold: float, higher: bool = True) -> bool:
    """No value, or a value on the wrong side of the threshold."""
    if value is None:
        return True
    return value < threshold if higher else value > threshold


def check(means: Mapping[str, float | None], thresholds: Mapping[str, float]) -> list[str]:
    """A message for each metric whose mean falls short of its threshold (in the metric's direction)."""
    short = []
    for metric, threshold in thresholds.items():
        mean = means.get(metric)
        higher = higher_is_better(metric)
        if falls_short(mean, threshold, higher):
            shown = "-" if mean is None else f"{mean:.4f}"
            op = f"< {threshold:g}" if higher else f"> {threshold:g} (lower is better)"
            short.append(f"{metric} = {shown} {op}")
    return short
