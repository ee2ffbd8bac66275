"""The version guard: values made by different metric versions or judge models are not compared.

Every stored value carries the version of what made it (a judge's is ``name/vN+digest`` of its prompt;
an IR measure's is its definition version); a 0.1 run's values carry none. Two runs are comparable on a
metric when each has exactly one known version of it and the versions are equal, and, for a judge metric,
when both runs recorded the same judge model and parameters and sampled it the same way (judged once, or
the mean of N repeats at one temperature with one seed policy). Unknown counts as different. A comparison
compares every metric whose versions agree and names each one it leaves out (`guard_runs`); a gate on a
mismatched metric is refused (`check_comparable`). A single run
whose values of one metric mix versions (a resume after a prompt change) is refused by a gate.
`ragmeter rescore RUN` brings a run to today's versions.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ragmeter import metrics as registry
from ragmeter.errors import InputError
from ragmeter.models import EvalRunResult

UNKNOWN = "unknown"

ALLOW_HINT = "`ragmeter rescore RUN` brings a run to today's versions, or --allow-version-mismatch"
LEFT_OUT_HINT = (
    "`ragmeter rescore RUN` brings a run to today's versions; --allow-version-mismatch includes it"
)


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


def sampling_identity(run: EvalRunResult) -> str:
    """How the run's judge values were sampled: judged once, or the mean of N repeats at a temperature with
    seeds `seed + repeat` (ragmeter.run.repeats). Part of a judged value's version: a mean of 3 samples at
    0.7 is not the same measurement as one greedy judgment."""
    record = run.record
    repeat = (record.repeat if record else run.config.repeat) or 1
    if repeat <= 1:
        return "judged once"
    temperature = record.repeat_temperature if record else run.config.repeat_temperature
    return f"the mean of {repeat} repeats at temperature {temperature}, seed policy run seed + repeat"


def metric_conflicts(
    a: EvalRunResult, b: EvalRunResult, *, metrics: Iterable[str] | None = None
) -> list[tuple[str, str]]:
    """(metric, sentence) for each metric that may not be compared between A and B."""
    va, vb = value_versions(a), value_versions(b)
    names = list(metrics) if metrics is not None else [m for m in va if m in vb]
    la, lb = _label(a, "A"), _label(b, "B")
    out: list[tuple[str, str]] = []
    for name in names:
        sa, sb = va.get(name, set()), vb.get(name, set())
        if not sa or not sb:
            continue  # a metric one run lacks is not paired at all
        if None in sa or None in sb or len(sa) > 1 or len(sb) > 1 or sa != sb:
            out.append((name, f"{name}: {la} has version {_shown(sa)}, {lb} has {_shown(sb)}"))
            continue
        if _is_judge(name):
            ja, jb = judge_identity(a), judge_identity(b)
            if ja is None or jb is None or ja != jb:
                out.append((name, f"{name}: judge model {ja or UNKNOWN} in {la}, {jb or UNKNOWN} in {lb}"))
                continue
            pa, pb = sampling_identity(a), sampling_identity(b)
            if pa != pb:
                out.append((name, f"{name}: {la} has version {sa.pop()} {pa}, {lb} has {sb.pop()} {pb}"))
    return out


def version_conflicts(
    a: EvalRunResult, b: EvalRunResult, *, metrics: Iterable[str] | None = None
) -> list[str]:
    """One sentence per metric that may not be compared between A and B (empty when all may)."""
    return [line for _, line in metric_conflicts(a, b, metrics=metrics)]


@dataclass(frozen=True)
class Guarded:
    """What a comparison of several runs may use: `runs` without the metrics left out, one line per metric
    left out (both versions named), and with --allow-version-mismatch the mismatches it includes."""

    runs: list[EvalRunResult]
    left_out: list[str]
    allowed: list[str]


def guard_runs(
    runs: Sequence[EvalRunResult], *, allow: bool = False, metrics: Iterable[str] | None = None
) -> Guarded:
    """Compare every metric whose versions agree: the others are left out of every run (a line each), or,
    with ``allow``, kept and returned as warnings."""
    names = list(metrics) if metrics is not None else None
    first: dict[str, str] = {}
    for other in runs[1:]:
        for name, line in metric_conflicts(runs[0], other, metrics=names):
            first.setdefault(name, line)
    if allow or not first:
        return Guarded(list(runs), [], list(first.values()))
    return Guarded([without_metrics(r, set(first)) for r in runs], list(first.values()), [])


def without_metrics(run: EvalRunResult, names: set[str]) -> EvalRunResult:
    """A copy of `run` without the values and aggregates of `names`."""
    per_query = [
        q.model_copy(
            update={
                "metrics": {n: m for n, m in q.metrics.items() if n not in names},
                "repeats": {n: v for n, v in q.repeats.items() if n not in names},
            }
        )
        for q in run.per_query
    ]
    aggregate = {n: s for n, s in run.aggregate.items() if n not in names}
    return run.model_copy(update={"per_query": per_query, "aggregate": aggregate})


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
