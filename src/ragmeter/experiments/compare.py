"""`ragmeter runs compare`: stored runs side by side, metric by metric, query by query, stage by stage.

Plain functions over EvalRunResult objects (no store): per-metric means with paired tests
(`ragmeter.experiments.significance`), the queries that changed most in both directions, and latency
percentiles per stage. "Better" follows each metric's direction in the registry (`ragmeter.metrics`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragmeter import metrics
from ragmeter.models import EvalRunResult

_TIE = 1e-12


def query_values(run: EvalRunResult, metric: str) -> dict[str, float]:
    """{query_id: value} of the successful queries that have a value of `metric`."""
    out: dict[str, float] = {}
    for q in run.per_query:
        m = q.metrics.get(metric)
        if q.status == "ok" and m is not None and m.value is not None:
            out[q.query_id] = m.value
    return out


def per_query_wins(a: EvalRunResult, b: EvalRunResult, metric: str) -> tuple[int, int, int]:
    """Queries where B is better than / worse than / as good as A on `metric`, in the metric's direction."""
    sign = 1.0 if metrics.higher_is_better(metric) else -1.0
    vb = query_values(b, metric)
    wins = losses = ties = 0
    for qid, x in query_values(a, metric).items():
        y = vb.get(qid)
        if y is None:
            continue
        if abs(y - x) <= _TIE:
            ties += 1
        elif sign * (y - x) > 0:
            wins += 1
        else:
            losses += 1
    return wins, losses, ties


def metric_names(a: EvalRunResult, b: EvalRunResult) -> list[str]:
    """The metrics of either run, in the registry's display order (latency has its own table)."""
    names = dict.fromkeys([*a.aggregate, *b.aggregate])
    return sorted((n for n in names if metrics.family_of(n) != "latency"), key=metrics.sort_key)


def compare_rows(a: EvalRunResult, b: EvalRunResult) -> list[dict[str, Any]]:
    """One row per metric: both means, B - A, B's wins / losses / ties per query, scale and direction."""
    rows = []
    for name in metric_names(a, b):
        ma = a.aggregate[name].mean if name in a.aggregate else None
        mb = b.aggregate[name].mean if name in b.aggregate else None
        wins, losses, ties = per_query_wins(a, b, name)
        spec = metrics.lookup(name)
        rows.append(
            {
                "metric": name,
                "scale": spec.scale if spec is not None else None,
                "higher_is_better": metrics.higher_is_better(name),
                "a": ma,
                "b": mb,
                "delta": None if ma is None or mb is None else mb - ma,
                "wins": wins,
                "losses": losses,
                "ties": ties,
            }
        )
    return rows


def significance_rows(
    a: EvalRunResult,
    b: EvalRunResult,
    *,
    seed: int,
    n_resamples: int,
    clusters: Mapping[str, Any] | None = None,
    cluster_by: str | None = None,
) -> list[dict[str, Any]]:
    """compare_rows plus paired tests over the per-query values: 95% bootstrap CI of B - A, Cohen's d_z with
    its bootstrap interval, the minimum detectable effect (alpha 0.05, power 0.8), paired t-test, Fisher
    randomisation test and its Holm-Bonferroni adjustment across the metrics. With ``clusters`` every one
    of them is the clustered form (`ragmeter.stats.effects`)."""
    from ragmeter.experiments.significance import compare_results

    rows = compare_rows(a, b)
    tested = compare_results(
        [a, b],
        metrics=[r["metric"] for r in rows if not is_class_share(r["metric"])],
        seed=seed,
        n_resamples=n_resamples,
        clusters=clusters,
        cluster_by=cluster_by,
    )
    by_metric = {m.metric: m for m in tested[0].metrics}
    for r in rows:
        m = by_metric.get(r["metric"])
        r["n_pairs"] = m.n if m else 0
        r["n_clusters"] = m.n_clusters if m else None
        r["ci95"] = list(m.ci95) if m and m.ci95 else None
        r["dz"] = m.dz if m else None
        r["dz_ci95"] = list(m.dz_ci95) if m and m.dz_ci95 else None
        r["mde"] = m.mde if m else None
        r["p_t"] = m.p_t if m else None
        r["p_perm"] = m.p_perm if m else None
        r["p_holm"] = m.p_holm if m else None
        if is_class_share(r["metric"]):  # a description of the runs, not a hypothesis: no test, no Holm
            r["wilson"] = {"a": _ci(a, r["metric"]), "b": _ci(b, r["metric"])}
    return rows


def is_class_share(metric: str) -> bool:
    """A failure class's share (class_<name>, ragmeter.score.classes): shown with its Wilson intervals,
    left out of the tests and of Holm's family (they are one query's class, counted six ways)."""
    return metrics.family_of(metric) == "diagnosis"


def _ci(run: EvalRunResult, metric: str) -> list[float] | None:
    s = run.aggregate.get(metric)
    return list(s.ci95) if s is not None and s.ci95 is not None else None


def query_changes(
    a: EvalRunResult, b: EvalRunResult, metric: str, *, top: int | None = 5
) -> dict[str, list[dict[str, Any]]]:
    """The queries whose value of `metric` changed from A to B: {"improved": [...], "regressed": [...]},
    each sorted by the size of the change, largest first, `top` of each. With top=None: every changed
    query, and "unchanged" lists the rest of the paired queries. Each entry has query_id, question, a, b
    and delta (B - A; for a lower-is-better metric an improvement is a negative delta)."""
    if is_class_share(metric):
        return class_moves(a, b, metric, top=top)
    sign = 1.0 if metrics.higher_is_better(metric) else -1.0
    questions = {q.query_id: q.question for q in b.per_query}
    vb = query_values(b, metric)
    paired: list[dict[str, Any]] = []
    for qid, x in query_values(a, metric).items():
        y = vb.get(qid)
        if y is not None:
            paired.append(
                {"query_id": qid, "question": questions.get(qid, ""), "a": x, "b": y, "delta": y - x}
            )
    paired.sort(key=lambda r: (-abs(r["delta"]), r["query_id"]))
    improved = [r for r in paired if sign * r["delta"] > _TIE]
    regressed = [r for r in paired if sign * r["delta"] < -_TIE]
    if top is not None:
        return {"improved": improved[:top], "regressed": regressed[:top]}
    unchanged = [r for r in paired if abs(r["delta"]) <= _TIE]
    return {"improved": improved, "regressed": regressed, "unchanged": unchanged}


def class_moves(
    a: EvalRunResult, b: EvalRunResult, metric: str, *, top: int | None = 5
) -> dict[str, list[dict[str, Any]]]:
    """The queries that moved into or out of the class of `metric`: {"moved": [...]}, each entry naming
    the class in A and in B (a move between failure classes is neither an improvement nor a regression)."""
    from ragmeter.score.classes import class_of

    before = {q.query_id: q for q in a.per_query}
    moved: list[dict[str, Any]] = []
    for qb in b.per_query:
        qa = before.get(qb.query_id)
        x, y = (q.metrics.get(metric) if q is not None else None for q in (qa, qb))
        if qa is None or x is None or y is None or x.value is None or y.value is None or x.value == y.value:
            continue
        moved.append(
            {
                "query_id": qb.query_id,
                "question": qb.question,
                "a": x.value,
                "b": y.value,
                "delta": y.value - x.value,
                "from": class_of(qa),
                "to": class_of(qb),
            }
        )
    moved.sort(key=lambda r: r["query_id"])
    return {"moved": moved if top is None else moved[:top]}


def latency_stages(runs: list[EvalRunResult]) -> list[str]:
    seen: dict[str, None] = {}
    for run in runs:
        for q in run.per_query:
            for stage in q.latency_ms:
                seen.setdefault(stage, None)
    return list(seen)


def latency_summary(run: EvalRunResult) -> dict[str, dict[str, float]]:
    """{stage: {p50, p95, max, mean, n}} in ms over the run's successful queries."""
    from ragmeter.metrics.aggregate import percentiles

    by_stage: dict[str, list[float]] = {}
    for q in run.per_query:
        if q.status != "ok":
            continue
        for stage, ms in q.latency_ms.items():
            by_stage.setdefault(stage, []).append(ms)
    return {stage: percentiles(values) for stage, values in by_stage.items() if values}


def compare_latency(a: EvalRunResult, b: EvalRunResult) -> list[dict[str, Any]]:
    """Per stage: p50 / p95 / max latency (ms) in A and in B (None where a run has no such stage)."""
    la, lb = latency_summary(a), latency_summary(b)
    return [
        {"stage": stage, "metric": f"latency_{stage}_ms", "a": la.get(stage), "b": lb.get(stage)}
        for stage in latency_stages([a, b])
    ]


def compare(
    a: EvalRunResult,
    b: EvalRunResult,
    *,
    seed: int = 42,
    n_resamples: int = 10_000,
    top: int | None = 5,
    clusters: Mapping[str, Any] | None = None,
    cluster_by: str | None = None,
) -> dict[str, Any]:
    """Everything `runs compare` shows for B against A, as plain data (what --format json prints)."""
    rows = significance_rows(
        a, b, seed=seed, n_resamples=n_resamples, clusters=clusters, cluster_by=cluster_by
    )
    return {
        "b": b.run_id,
        "same_dataset": a.dataset_hash == b.dataset_hash,
        "method": method_line(cluster_by if clusters is not None else None),
        "metrics": rows,
        "queries": {r["metric"]: query_changes(a, b, r["metric"], top=top) for r in rows},
        "latency": compare_latency(a, b),
    }


def method_line(cluster_by: str | None) -> str:
    """How the intervals and tests of a comparison resample, as the output names it."""
    if cluster_by is None:
        return "paired over queries: queries resampled (bootstrap), signs flipped per query, paired t-test"
    return (
        f"clustered by {cluster_by}: clusters resampled (bootstrap; the mean's interval widened by "
        "sqrt(G/(G-1)), d_z's not), signs flipped per cluster, cluster-robust t-test on clusters - 1 df"
    )


def tukey_rows(
    runs: list[EvalRunResult],
    metric_list: list[str],
    *,
    seed: int,
    n_resamples: int,
    clusters: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """For three or more runs: the randomised Tukey HSD of every pair of runs, per metric (queries that
    every run has a value for), as rows."""
    from ragmeter.experiments.tukey import randomised_tukey_hsd

    labels = [r.run_id or r.name or f"run{i + 1}" for i, r in enumerate(runs)]
    out: list[dict[str, Any]] = []
    for name in metric_list:
        per_system = {label: query_values(run, name) for label, run in zip(labels, runs, strict=True)}
        if len(set(labels)) != len(labels) or not all(per_system.values()):
            continue
        result = randomised_tukey_hsd(
            name,
            per_system,
            n_resamples=n_resamples,
            seed=seed,
            clusters=dict(clusters) if clusters is not None else None,
        )
        for pair in result.pairs:
            out.append(
                {
                    "metric": name,
                    "a": pair.a,
                    "b": pair.b,
                    "delta": pair.delta,
                    "p_tukey": pair.p_adjusted,
                    "n": result.n,
                    "method": result.method,
                }
            )
    return out
