"""The cost of a run before it is made (`ragmeter run ... --estimate [--pilot N]`), from a pilot run.

The pilot evaluates n of the run's M queries, drawn with the run's seed, as a run of its own (stored). Each
pilot query's spend is known from its usage (judge and generator apart). The full run's expected cost is M
times the pilot's mean per-query cost, with a 95% Student t interval for that total: M * mean +- t(n-1) * M *
sd / sqrt(n) * sqrt(1 - n / M) (sampling without replacement from the run's M queries, hence the finite
population correction; the interval is exact at n = M). Calls and tokens are the same per-query means times
M; the expected time is M times the mean per-query time over the queries in flight at once (the run's
concurrency), a rough guide (a pilot of warm caches, a server under other load).

Costs are only ever a price times tokens: a model without a price gives an unknown cost (None), never 0;
a system that makes its own LLM calls (a user's callable, an HTTP endpoint) has an unknown cost, because
ragmeter cannot see them. Only the built-in pipeline's generator is ragmeter's own to count.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from ragmeter.models import QueryEvalResult

# Systems whose LLM calls (if any) ragmeter makes itself, and so counts: the built-in pipeline; a run file
# makes none. Any other system's own calls are unknown to ragmeter.
_COUNTED_SYSTEMS = ("builtin", "run_file")


class SpendEstimate(BaseModel):
    """The expected spend of one role over the full run (USD), with its 95% interval; None: unknown."""

    model_config = ConfigDict(extra="forbid")

    expected_usd: float | None
    ci95: tuple[float, float] | None = None
    per_query_mean_usd: float | None = None
    per_query_sd_usd: float | None = None
    note: str | None = None  # why it is unknown


class RunEstimate(BaseModel):
    """What the full run is expected to cost, from a pilot run."""

    model_config = ConfigDict(extra="forbid")

    pilot_run_id: str | None
    pilot_queries: int
    full_queries: int
    total: SpendEstimate
    judge: SpendEstimate
    system: SpendEstimate
    calls: float
    input_tokens: float
    output_tokens: float
    expected_seconds: float | None
    method: str = "Student t over the pilot's per-query costs, finite population correction"


def _role_cost(result: QueryEvalResult, role: str) -> float | None:
    """A pilot query's spend of `role` (0 when it made no call; None when a price is unknown)."""
    total = 0.0
    for line in result.usage.get(role, {}).values():
        cost = line.get("cost_usd")
        if cost is None:
            return None
        total += float(cost)
    return total


def _unknown_note(results: Sequence[QueryEvalResult], role: str) -> str:
    for r in results:
        for line in r.usage.get(role, {}).values():
            if line.get("cost_usd") is None:
                return str(line.get("cost_note") or "a model without a known price")
    return "unknown"


def spend_estimate(costs: Sequence[float], full: int) -> SpendEstimate:
    """The full run's total from per-query costs of a pilot drawn without replacement from `full` queries."""
    from ragmeter.stats.intervals import t_quantile

    n = len(costs)
    mean = math.fsum(costs) / n
    expected = full * mean
    if n < 2:
        return SpendEstimate(
            expected_usd=expected, per_query_mean_usd=mean, note="one pilot query: no interval"
        )
    sd = math.sqrt(math.fsum((c - mean) ** 2 for c in costs) / (n - 1))
    fpc = math.sqrt(max(0.0, 1.0 - n / full))
    half = t_quantile(0.975, n - 1) * full * sd / math.sqrt(n) * fpc
    return SpendEstimate(
        expected_usd=expected,
        ci95=(max(0.0, expected - half), expected + half),
        per_query_mean_usd=mean,
        per_query_sd_usd=sd,
    )


def estimate_run(
    pilot: Sequence[QueryEvalResult],
    *,
    full: int,
    system_kind: str,
    concurrency: int,
    pilot_run_id: str | None = None,
) -> RunEstimate:
    """The full run's expected spend, calls, tokens and time from the pilot's answered queries."""
    done = [r for r in pilot if r.status == "ok"] or list(pilot)
    if not done:
        raise ValueError("the pilot evaluated no query")
    roles: dict[str, SpendEstimate] = {}
    for role in ("judge", "generator"):
        costs = [_role_cost(r, role) for r in done]
        if any(c is None for c in costs):
            roles[role] = SpendEstimate(expected_usd=None, note=_unknown_note(done, role))
        else:
            roles[role] = spend_estimate([c for c in costs if c is not None], full)
    system = roles["generator"]
    if system_kind not in _COUNTED_SYSTEMS:
        system = SpendEstimate(
            expected_usd=None,
            note="unknown: the system's own LLM calls (if any) are made outside ragmeter",
        )
    if roles["judge"].expected_usd is None or system.expected_usd is None:
        notes = [x.note for x in (roles["judge"], system) if x.expected_usd is None and x.note]
        total = SpendEstimate(expected_usd=None, note="; ".join(notes) or "unknown")
    else:
        per_query = [(_role_cost(r, "judge") or 0.0) + (_role_cost(r, "generator") or 0.0) for r in done]
        total = spend_estimate(per_query, full)
    lines = [line for r in done for labels in r.usage.values() for line in labels.values()]

    def per_query_mean(key: str) -> float:
        return math.fsum(float(line.get(key) or 0) for line in lines) / len(done) * full

    seconds = [r.latency_ms.get("total") for r in done]
    known = [s for s in seconds if s is not None]
    expected_seconds = None
    if known:
        in_flight = max(1, min(concurrency, full))
        expected_seconds = math.fsum(known) / len(known) / 1000.0 * full / in_flight
    return RunEstimate(
        pilot_run_id=pilot_run_id,
        pilot_queries=len(done),
        full_queries=full,
        total=total,
        judge=roles["judge"],
        system=system,
        calls=per_query_mean("calls"),
        input_tokens=per_query_mean("input_tokens"),
        output_tokens=per_query_mean("output_tokens"),
        expected_seconds=expected_seconds,
    )


def estimate_lines(e: RunEstimate) -> list[str]:
    """The estimate as console lines."""

    def usd(s: SpendEstimate) -> str:
        if s.expected_usd is None:
            return f"unknown ({s.note})" if s.note and s.note != "unknown" else "unknown"
        ci = "" if s.ci95 is None else f"  95% CI [${s.ci95[0]:.4f}, ${s.ci95[1]:.4f}]"
        return f"${s.expected_usd:.4f}{ci}"

    time = "unknown" if e.expected_seconds is None else f"{e.expected_seconds:.0f} s"
    pilot = e.pilot_run_id or "(not stored)"
    return [
        f"estimate of the full run ({e.full_queries} queries) from pilot run {pilot} ({e.pilot_queries} queries)",
        f"  cost:             {usd(e.total)}",
        f"    judge:          {usd(e.judge)}",
        f"    system:         {usd(e.system)}",
        f"  LLM calls:        {e.calls:.0f}",
        f"  tokens:           {e.input_tokens:.0f} in, {e.output_tokens:.0f} out",
        f"  expected time:    {time} (rough: the pilot's mean per-query time over the run's concurrency)",
        f"  interval: {e.method}",
    ]


def as_json(e: RunEstimate) -> dict[str, Any]:
    return e.model_dump(mode="json")
