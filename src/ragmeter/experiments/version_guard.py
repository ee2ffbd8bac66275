"""The version guard: values made by different metric versions or judge models are not compared.

Every stored value carries the version of what made it (a judge's is ``name/vN+digest`` of its prompt;
an IR measure's is its definition version); a 0.1 run's values carry none. Two runs are comparable on a
metric when each has exactly one known version of it and the versions are equal, and, for a judge metric,
when both runs recorded the same judge model and parameters. Unknown counts as different. A single run
whose values of one metric mix versions (a resume after a prompt change) is refused by a gate.
`ragmeter rescore RUN` brings a run to today's versions.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from ragmeter import metrics as registry
from ragmeter.errors import InputError
from ragmeter.models import EvalRunResult

UNKNOWN = "unknown"

ALLOW_HINT = "`ragmeter rescore RUN` brings a run to today's versions, or --allow-version-mismatch"


def value_versions(run: EvalRunResult) -> dict[str, set[str | None]]:
    """{metric: the versions its per-query values carry} (None for a value stored without one)."""
    out: dict[str, set[str | None]] = {}
    for q in run.per_query:
        for name, m in q.metrics.items():
            out.setdefault(name, set()).add(m.version)
    return out


def _shown(versions: set[str | None]) -> str:
    return "+".join(sorted(v or UNKNOWN for v in versions)) or UNKNOWN


def _label(run: EvalRunResult, fallback: str) -> str:
    return run.run_id or run.name or fallback


def _is_judge(metric: str) -> bool:
    return registry.family_of(metric) == "judge"


def judge_identity(run: EvalRunResult) -> str | None:
    """The recorded judge as backend, model and parameters (timeouts, retries, concurrency, the address
    it was served at, and at temperature 0 the seed, do not change a grade); None when none was recorded."""
    raw = run.versions.get("judge")
    if not raw:
        return None
    try:
        spec = json.loads(raw)
    except ValueError:
        return raw
    if isinstance(spec, dict) and "model" in spec:
        params = dict(spec.get("params") or {})
        if params.get("temperature") == 0:
            params.pop("seed", None)  # greedy decoding does not sample: the seed changes nothing
        return json.dumps(
            {"backend": spec.get("backend"), "model": spec.get("model"), "params": params}, sort_keys=True
        )
    return raw


def version_conflicts(
    a: EvalRunResult, b: EvalRunResult, *, metrics: Iterable[str] | None = None
) -> list[str]:
    """One sentence per metric that may not be compared between A and B (empty when all may)."""
    va, vb = value_versions(a), value_versions(b)
    names = list(metrics) if metrics is not None else [m for m in va if m in vb]
    la, lb = _label(a, "A"), _label(b, "B")
    out: list[str] = []
    for name in names:
        sa, sb = va.get(name, set()), vb.get(name, set())
        if not sa or not sb:
            continue  # a metric one run lacks is not paired at all
        if None in sa or None in sb or len(sa) > 1 or len(sb) > 1 or sa != sb:
            out.append(f"{name}: {la} has version {_shown(sa)}, {lb} has {_shown(sb)}")
            continue
        if _is_judge(name):
            ja, jb = judge_identity(a), judge_identity(b)
            if ja is None or jb is None or ja != jb:
                out.append(f"{name}: judge model {ja or UNKNOWN} in {la}, {jb or UNKNOWN} in {lb}")
    return out


def check_comparable(
    runs: Sequence[EvalRunResult],
    *,
    allow: bool = False,
    metrics: Iterable[str] | None = None,
    source: str = "compare",
) -> list[str]:
    """Raise InputError (one line, naming the first conflicting metric and both versions) unless every run
    is comparable with the first; with ``allow`` return the conflicts as warnings instead."""
    names = list(metrics) if metrics is not None else None
    conflicts = [c for other in runs[1:] for c in version_conflicts(runs[0], other, metrics=names)]
    if conflicts and not allow:
        more = f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1 else ""
        raise InputError(
            f"refusing to compare values of different versions: {conflicts[0]}{more}; {ALLOW_HINT}",
            source=source,
        )
    return conflicts


def mixed_versions(run: EvalRunResult, metrics: Iterable[str]) -> list[str]:
    """Metrics among `metrics` whose values in this one run carry more than one (or an unknown) version."""
    found = value_versions(run)
    return [
        f"{name} mixes versions {_shown(found[name])}"
        for name in metrics
        if name in found and (len(found[name]) > 1 or None in found[name])
    ]
