"""The run summary of an escalating judge (ragmeter.judges.cascade): coverage of the cheap judge on the
calibrated metric, calls, tokens and cost of each judge (from the queries' stored usage: role "judge" is the
cheap judge, "judge_strong" the strong one), and the guarantee the calibration states."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ragmeter.models import QueryEvalResult
from ragmeter.records import EscalationRef

STRONG_ROLE = "judge_strong"


def escalation_summary(ref: EscalationRef, per_query: Iterable[QueryEvalResult]) -> dict[str, Any]:
    from ragmeter.llm.usage import UsageLine, merge

    rows = list(per_query)
    who = [r.metrics[ref.metric].details.get("judged_by") for r in rows if ref.metric in r.metrics]
    cheap, strong = who.count("cheap"), who.count("strong")
    lines: dict[str, list[UsageLine]] = {"judge": [], STRONG_ROLE: []}
    for r in rows:
        for role in lines:
            lines[role] += [UsageLine.model_validate(x) for x in r.usage.get(role, {}).values()]
    cal = ref.calibration
    return {
        "metric": ref.metric,
        "threshold": ref.threshold,
        "cheap": {
            "judge": cal.get("judge"),
            "answered": cheap,
            **merge(lines["judge"]).model_dump(mode="json"),
        },
        "strong": {
            "judge": ref.strong.spec,
            "answered": strong,
            **merge(lines[STRONG_ROLE]).model_dump(mode="json"),
        },
        "coverage": cheap / (cheap + strong) if cheap + strong else None,
        "target_agreement": cal.get("target_agreement"),
        "risk": cal.get("risk"),
        "calibration_coverage": cal.get("coverage"),
        "guarantee": ref.guarantee,
        "method": cal.get("method"),
    }


def describe_escalation(block: Mapping[str, Any]) -> list[str]:
    """Lines for people: who answered how much, at what cost, and the guarantee."""
    cov = block.get("coverage")
    out = [
        f"escalation on {block['metric']}: threshold {block['threshold']}; cheap judge answered "
        f"{block['cheap']['answered']}, strong judge {block['strong']['answered']}"
        + (f" (coverage {cov:.1%})" if cov is not None else "")
    ]
    for side in ("cheap", "strong"):
        b = block[side]
        cost = "cost unknown" if b.get("cost_usd") is None else f"${b['cost_usd']:.6f}"
        out.append(f"  {side} {b['judge']}: {b['calls']} calls, {b['failed_calls']} failed, {cost}")
    out.append(f"  guarantee: {block['guarantee']}")
    return out
