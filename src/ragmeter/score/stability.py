"""Judge stability of a run judged in repeats (`run --repeat N`): `judge_stability` computes, for each judge
metric, Krippendorff's alpha with its bootstrap interval and the verdict flip share (the statistics are in
`ragmeter.stats.krippendorff`; their old names here still resolve for one release, with a
DeprecationWarning naming the new place), and the display rows of the result."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np

from ragmeter._lazy import moved
from ragmeter.models import JudgeStability, QueryEvalResult
from ragmeter.stats import krippendorff as kr

_MOVED = dict.fromkeys(
    (
        "FloatArray",
        "Level",
        "RepeatStability",
        "flip_share",
        "krippendorff_alpha",
        "repeat_stability",
        "repeat_summary",
    ),
    "ragmeter.stats.krippendorff",
)


def __getattr__(name: str) -> Any:
    return moved(__name__, name, _MOVED)


def judge_stability(
    names: Sequence[str],
    per_query: Sequence[QueryEvalResult],
    *,
    temperature: float | None,
    seeds: Sequence[int | None],
    thresholds: Mapping[str, float] | None = None,
    seed: int = 0,
) -> dict[str, JudgeStability]:
    """The stability of each judge metric of a run judged in repeats, over its answered queries.

    The level of measurement is the metric's (registry). The pass threshold of the flip share is the gate's
    (`--fail-under`) when one names the metric, else the middle of the metric's range."""
    import ragmeter.metrics as rm

    out: dict[str, JudgeStability] = {}
    for name in names:
        rows = [r.repeats[name] for r in per_query if r.status == "ok" and name in r.repeats]
        if not rows:
            continue
        width = max(len(each) for each in rows)
        grades = np.full((len(rows), width), np.nan)
        for i, each in enumerate(rows):
            for j, v in enumerate(each):
                if v.value is not None:
                    grades[i, j] = v.value
        spec = rm.get(name)
        lo, hi = spec.range
        gate = (thresholds or {}).get(name)
        threshold = gate if gate is not None else ((lo or 0.0) + (hi if hi is not None else 1.0)) / 2.0
        stab = kr.repeat_stability(
            grades, level=spec.level, threshold=threshold, higher=spec.higher_is_better, seed=seed
        )
        _, sd = kr.repeat_summary(grades)
        measured = {k: v for k, v in asdict(stab).items() if k != "interval"}
        mean_sd = float(np.nanmean(sd)) if np.isfinite(sd).any() else None
        origin = "gate" if gate is not None else "mid-range"
        out[name] = JudgeStability.model_validate(
            {**measured, "alpha_ci95": stab.interval, "repeats": width, "mean_sd": mean_sd}
            | {
                "threshold": threshold,
                "threshold_from": origin,
                "temperature": temperature,
                "seeds": list(seeds),
            }
        )
    return out


STABILITY_COLUMNS = ("metric", "repeats", "level", "alpha", "95% CI", "flip share", "mean sd", "sampling")
STABILITY_NOTE = (
    "each judged query judged in repeats: alpha = Krippendorff's alpha across the repeats at the metric's "
    "level of measurement (1 = a repeat never changes a value, 0 = no better than chance), 95% CI = "
    "percentile bootstrap over queries; flip share = queries whose pass verdict (value >= threshold) differs "
    "between repeats; mean sd = mean over queries of the sd across repeats; a query's value is its mean"
)


def stability_rows(stability: Mapping[str, JudgeStability]) -> list[list[str]]:
    """The stability of each judge metric as display cells (STABILITY_COLUMNS), metrics in name order."""

    def num(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    rows = []
    for name in sorted(stability):
        s = stability[name]
        ci = "-" if s.alpha_ci95 is None else f"[{s.alpha_ci95[0]:.3f}, {s.alpha_ci95[1]:.3f}]"
        flip = "-" if s.flip_share is None else f"{s.flip_share:.3f} at {s.threshold:g} ({s.threshold_from})"
        temperature = "not sent" if s.temperature is None else f"{s.temperature:g}"
        seeds = ", ".join("-" if x is None else str(x) for x in s.seeds)
        sampling = f"temperature {temperature}, seeds {seeds}"
        rows.append(
            [name, f"{s.repeats} x {s.items}", s.level, num(s.alpha), ci, flip, num(s.mean_sd), sampling]
        )
    return rows
