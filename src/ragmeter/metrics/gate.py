"""The gate rule (`--fail-under`, JUnit XML, the pytest plugin): one definition, in each metric's direction.

A gate passes when the metric's mean is at least its threshold (at most, for a lower-is-better metric);
a metric without a value (no valid query, not produced) fails its gate.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from ragmeter.errors import InputError
from ragmeter.metrics.registry import higher_is_better, lookup
from ragmeter.metrics.spec import MetricSpec


def parse_thresholds(values: Iterable[str], *, source: str = "--fail-under") -> dict[str, float]:
    """METRIC=VALUE pairs -> {canonical metric name: finite threshold}; unknown names are input errors."""
    out: dict[str, float] = {}
    for text in values:
        metric, sep, number = text.rpartition("=")
        if not sep or not metric.strip():
            raise InputError(f"expected METRIC=VALUE, got {text!r}", source=source)
        percent = number.strip().endswith("%")  # 0.9% : a percent written as one, taken as it is
        try:
            value = float(number.strip().removesuffix("%"))
        except ValueError:
            raise InputError(f"{number!r} is not a number (in {text!r})", source=source) from None
        if not math.isfinite(value):  # nan would disable the gate, inf would always fail it
            raise InputError(f"{number!r} is not a finite number (in {text!r})", source=source)
        spec = lookup(metric.strip())
        if spec is None or spec.parameters:
            raise InputError(f"no metric {metric.strip()!r}: see `ragmeter metrics list`", source=source)
        _check_in_range(spec, value, text, percent=percent, source=source)
        out[spec.name] = value
    return out


def _check_in_range(spec: MetricSpec, value: float, text: str, *, percent: bool, source: str) -> None:
    """A threshold the metric can never reach (outside its declared range), or a fraction given for a
    percentage, would make the gate meaningless: refused."""
    lo, hi = spec.range
    if percent and spec.unit != "%":
        raise InputError(
            f"{spec.name} is not a percentage: give {value:g} without % (in {text!r})", source=source
        )
    if not spec.in_range(value):
        span = f"{'-inf' if lo is None else f'{lo:g}'} to {'inf' if hi is None else f'{hi:g}'}"
        raise InputError(f"{spec.name} lies in {span}: {value:g} is outside it (in {text!r})", source=source)
    if spec.unit == "%" and not percent and 0 < value < 1:
        raise InputError(
            f"{spec.name} is a percentage (0-100): {value:g} would gate at {value:g} %; give {value * 100:g} "
            f"for {value * 100:g} % (or write {value:g}% to mean {value:g} %) (in {text!r})",
            source=source,
        )


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
