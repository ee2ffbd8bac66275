"""A run's usage block from its queries' usage: calls, input/output tokens and cost, for the judge (in
total and per judge metric) and the generator. An unknown price gives cost null with the reason."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ragmeter.models import QueryEvalResult


def run_usage(
    per_query: Iterable[QueryEvalResult], models: dict[str, str | None] | None = None
) -> dict[str, Any] | None:
    """{"judge", "judge_by_metric", "generator", "total", "models"} (UsageLine JSON), None without LLM calls."""
    from ragmeter.llm.usage import UsageLine, merge

    by_role: dict[str, dict[str, list[UsageLine]]] = {}
    for r in per_query:
        for role, labels in r.usage.items():
            for label, line in labels.items():
                by_role.setdefault(role, {}).setdefault(label, []).append(UsageLine.model_validate(line))
    if not by_role:
        return None
    roles = {
        role: {label: merge(lines) for label, lines in sorted(labels.items())}
        for role, labels in by_role.items()
    }
    judge = merge(roles["judge"].values()) if "judge" in roles else None
    generator = merge(roles["generator"].values()) if "generator" in roles else None
    # a cascade's strong judge (ragmeter.judges.cascade): in the total; its own block in usage["escalation"]
    strong = merge(roles["judge_strong"].values()) if "judge_strong" in roles else None
    total = merge([line for line in (judge, generator, strong) if line is not None])
    return {
        "judge": judge.model_dump(mode="json") if judge is not None else None,
        "judge_by_metric": {k: v.model_dump(mode="json") for k, v in roles.get("judge", {}).items()},
        "generator": generator.model_dump(mode="json") if generator is not None else None,
        "total": total.model_dump(mode="json"),
        "models": dict(models or {}),
    }
