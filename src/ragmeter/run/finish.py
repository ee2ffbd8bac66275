"""What a finished run records beside its values (ragmeter.run.api): the sequential block it resumes, each
judge metric's stability and each gate's verdict across repeats, and the versions of its judges."""

from __future__ import annotations

import json
from typing import Any

from ragmeter.models import EvalRunResult, GateAcrossRepeats, JudgeStability, QueryEvalResult
from ragmeter.run.prepare import Prepared


def sequential_of(resumed: EvalRunResult | None) -> dict[str, Any] | None:
    """The sequential block of the run being resumed, as JSON (None: not resumed, or not sequential)."""
    block = resumed.sequential if resumed is not None else None
    return block.dump() if block is not None else None


def stability_of(
    p: Prepared, per_query: list[QueryEvalResult], gates: dict[str, float]
) -> dict[str, JudgeStability]:
    """Each judge metric's agreement with itself across the repeats of a run judged in repeats."""
    if p.record.repeat <= 1:
        return {}
    from ragmeter.run.repeats import repeat_seeds
    from ragmeter.score.stability import judge_stability

    return judge_stability(
        p.plan.judges,
        per_query,
        temperature=p.record.repeat_temperature,
        seeds=list(repeat_seeds(p.record)),
        thresholds=gates,
        seed=p.config.seed,
    )


def repeat_gates(
    p: Prepared,
    per_query: list[QueryEvalResult],
    aggregate: dict[str, Any],
    gates: dict[str, float],
    tolerance: float,
) -> dict[str, GateAcrossRepeats]:
    """Each gate on a metric judged in repeats, flaky or stable (ragmeter.score.flaky)."""
    if p.record.repeat <= 1 or not gates:
        return {}
    from ragmeter.score.flaky import gates_across_repeats

    means = {name: s.mean for name, s in aggregate.items()}
    return gates_across_repeats(per_query, means, gates, tolerance=tolerance)


def judge_versions(p: Prepared) -> dict[str, str]:
    """Prompt version of each judge of the run, and the judge's public spec (model, parameters)."""
    if not p.plan.judges:
        return {}
    from ragmeter.judges import prompt_versions

    out = {f"prompt.{name}": version for name, version in prompt_versions(list(p.plan.judges)).items()}
    if p.record.judge is not None:
        out["judge"] = json.dumps(p.record.judge.public or {"spec": p.record.judge.spec}, sort_keys=True)
    if p.plan.nuggets is not None:  # the nugget set now scored against (rescore --nuggets changes it)
        out["nuggets"] = json.dumps(p.plan.nuggets.extra(), sort_keys=True)
    return out
