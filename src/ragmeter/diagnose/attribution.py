"""`ragmeter diagnose RUN`: where the points were lost, by replaying the run along one chain
run -> oracle-rank -> oracle-context -> the metric's best value.

ranking_and_context = oracle-rank - run; retrieval = oracle-context - oracle-rank; generation = best -
oracle-context. Over the queries with a value in all three runs the parts add up to best - run exactly;
each has a paired bootstrap 95% interval over queries. Bounded answer metrics only (a replay's retrieval
metrics equal its parent's by construction).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragmeter.diagnose.replay import (
    CHAIN,
    CLOSED_BOOK,
    NO_RERANK,
    CountedRetrieval,
    check_intervention,
    replay_system,
)
from ragmeter.errors import InputError
from ragmeter.models import EvalRunResult
from ragmeter.records import ReplayRef
from ragmeter.result_models import as_json
from ragmeter.stats import resample

PARTS = ("ranking_and_context", "retrieval", "generation")
STEPS = ("run", *CHAIN)
# The runs each part reads (a part is the difference of two steps; generation is best - oracle-context).
PART_STEPS = {
    "ranking_and_context": ("run", "oracle-rank"),
    "retrieval": ("oracle-rank", "oracle-context"),
    "generation": ("oracle-context",),
}


def _eligible(name: str) -> str | None:
    """None when `name` is attributed (a bounded, higher-is-better answer metric), else why not; a
    lower-is-better one is "lower" (shown as deltas: its best value is no lost point to split)."""
    import ragmeter.metrics as rm

    spec = rm.lookup(name)
    if spec is None or not spec.bounded or "answer" not in spec.inputs or spec.family == "diagnosis":
        return "not a bounded answer metric"
    return None if spec.higher_is_better else "lower"


def answer_metrics(run: EvalRunResult, names: Sequence[str] | None) -> list[str]:
    """The bounded higher-is-better answer metrics to attribute: `names` (checked), else every one the run
    has. Lower-is-better ones are left to `delta_metrics`."""
    return [n for n in _answer_names(run, names) if _eligible(n) is None]


def delta_metrics(run: EvalRunResult, names: Sequence[str] | None) -> list[str]:
    """The bounded lower-is-better answer metrics (rc_hallucination, ...): shown as each replay's delta."""
    return [n for n in _answer_names(run, names) if _eligible(n) == "lower"]


def _answer_names(run: EvalRunResult, names: Sequence[str] | None) -> list[str]:
    import ragmeter.metrics as rm

    if names:
        for name in names:
            if _eligible(rm.canonical(name, source="--metrics")) not in (None, "lower"):
                raise InputError(f"{name!r} is not a bounded answer metric", source="--metrics")
        return [rm.canonical(n) for n in names]
    return [n for n in sorted(run.aggregate, key=rm.sort_key) if _eligible(n) in (None, "lower")]


@dataclass
class StepValues:
    """One run's values of a metric: valued queries, queries counted as 0 because the answer had no claims
    (RAGChecker's convention, ragmeter.judges.claims), and the queries left out with why."""

    values: dict[str, float] = field(default_factory=dict)
    zeros: set[str] = field(default_factory=set)
    left_out: dict[str, str] = field(default_factory=dict)


def _values(run: EvalRunResult, name: str) -> StepValues:
    from ragmeter.judges.claims import NO_RESPONSE_CLAIMS

    out = StepValues()
    for r in run.per_query:
        m = r.metrics.get(name)
        if r.status != "ok":
            out.left_out[r.query_id] = "the query failed"
        elif m is None:
            out.left_out[r.query_id] = "no value stored"
        elif m.value is not None:
            out.values[r.query_id] = m.value
        elif m.error == NO_RESPONSE_CLAIMS:  # "I do not know.": RAGChecker scores it 0, so do we here
            out.values[r.query_id] = 0.0
            out.zeros.add(r.query_id)
        else:
            out.left_out[r.query_id] = m.error or "null without a reason"
    return out


def _left_out(steps: dict[str, StepValues], reads: Sequence[str], queries: set[str]) -> dict[str, int]:
    """{"STEP: reason": queries} for the queries a part loses to the nulls of the runs it reads."""
    counts: Counter[str] = Counter()
    for step in reads:
        for q, why in steps[step].left_out.items():
            if q in queries:
                counts[f"{step}: {why}"] += 1
    return dict(sorted(counts.items()))


def attribute(
    name: str, runs: dict[str, EvalRunResult], *, seed: int = 42, n_resamples: int = 2000
) -> dict[str, Any]:
    """The chain's parts of one metric with paired bootstrap intervals over queries. The parts share one
    set of queries (those valued in all three runs), so that they add up to the gap; each part names the
    queries the nulls of its own runs left out, and how many values were counted as 0."""
    import ragmeter.metrics as rm

    spec = rm.get(name)
    best = spec.range[1] if spec.higher_is_better else spec.range[0]
    assert best is not None
    steps = {k: _values(runs[k], name) for k in STEPS}
    base, rank, ctx = (steps[k].values for k in STEPS)
    everyone = set().union(*(set(s.values) | set(s.left_out) for s in steps.values()))
    queries = sorted(set(base) & set(rank) & set(ctx))
    left_out = _left_out(steps, STEPS, everyone)
    zeros = {k: len(steps[k].zeros & set(queries)) for k in STEPS}
    if not queries:
        return {
            "metric": name,
            "n": 0,
            "note": "no query has a value in all three runs",
            "left_out": left_out,
            "counted_as_zero": zeros,
        }
    v = np.array([[base[q], rank[q], ctx[q]] for q in queries], dtype=float)
    diffs = np.stack([v[:, 1] - v[:, 0], v[:, 2] - v[:, 1], best - v[:, 2]], axis=1)
    boot = resample.bootstrap(
        lambda idx: diffs[idx].mean(axis=1), len(queries), n_resamples=n_resamples, seed=seed
    )
    parts = {}
    for i, part in enumerate(PARTS):
        lo, hi = boot.interval(i) or (math.nan, math.nan)
        reads = PART_STEPS[part]
        parts[part] = {
            "mean": float(diffs[:, i].mean()),
            "ci95": [float(lo), float(hi)],
            "counted_as_zero": sum(zeros[k] for k in reads),
            "left_out": _left_out(steps, reads, everyone),
        }
    return {
        "metric": name,
        "n": len(queries),
        "n_left_out": len(everyone) - len(queries),
        "left_out": left_out,
        "counted_as_zero": zeros,
        "higher_is_better": spec.higher_is_better,
        "run": float(v[:, 0].mean()),
        "oracle_rank": float(v[:, 1].mean()),
        "oracle_context": float(v[:, 2].mean()),
        "best": float(best),
        "gap": float(best - v[:, 0].mean()),
        "parts": parts,
    }


def extra_delta(name: str, run: EvalRunResult, other: EvalRunResult) -> dict[str, Any]:
    a, b = _values(run, name).values, _values(other, name).values
    shared = sorted(set(a) & set(b))
    if not shared:
        return {"metric": name, "n": 0}
    return {"metric": name, "n": len(shared), "delta": float(np.mean([b[q] - a[q] for q in shared]))}


async def adiagnose(
    run_id: str,
    *,
    store: Any,
    metrics: Sequence[str] | None = None,
    also: Sequence[str] = (),
    system: Any = None,
    llm: Any = None,
    generator: Any = None,
    dataset: Any = None,
    seed: int = 42,
    n_resamples: int = 2000,
) -> dict[str, Any]:
    """Replay `run_id` along the chain (plus `also`), store each replay, and attribute the gap.
    Refusals (InputError, nothing stored): no record, an unknown intervention, no relevance labels, a system
    without `answer` or that the record cannot rebuild (`system=` passes an in-process one)."""
    from ragmeter.datasets.resolve import resolve_dataset
    from ragmeter.llm.meter import MeteredLLM
    from ragmeter.run.api import arun_evaluation
    from ragmeter.run.rebuild import SystemAdapter, build_clients, build_system

    run = store.get_run(run_id)
    record = run.record
    if record is None:
        raise InputError(f"run {run_id} has no record to replay it from", source=run_id)
    depth = max((len(r.retrieved) for r in run.per_query), default=0)
    extras = [check_intervention(a, depth=depth) for a in also]
    if not record.evaluate_generation or all(r.answer is None for r in run.per_query):
        raise InputError(f"run {run_id} has no answers: there is no generator to replay", source=run_id)
    names = answer_metrics(run, metrics)
    lower = delta_metrics(run, metrics)
    if not names and not lower:
        raise InputError(f"run {run_id} has no bounded answer metric to attribute", source="--metrics")
    if system is None and (record.system.kind == "object" or not record.system.rebuildable):
        raise InputError(
            f"the system of run {run_id} cannot be rebuilt from its record ({record.system.why_not}); "
            "diagnose it through the Python API, passing the system: adiagnose(RUN, system=...)",
            source=run_id,
        )
    if dataset is None:
        dataset = resolve_dataset(run.config.dataset, seed=run.config.seed, store=store)
    by_id = {q.query_id: q for q in dataset.queries}
    labelled = any(by_id[r.query_id].judgments() for r in run.per_query if r.query_id in by_id)
    if not labelled and (not extras or set(extras) - {CLOSED_BOOK}):
        raise InputError(
            f"run {run_id}'s queries have no relevance labels: the oracle steps need qrels "
            "(--also closed-book alone does not)",
            source=run_id,
        )
    copied = copied_metrics(run)
    chain: tuple[str, ...] = CHAIN if labelled else ()  # without qrels: the closed-book arm alone
    judge, gen, owned = build_clients(record, judge=llm, generator=generator, want_generator=system is None)
    try:
        # the generator is metered: each replay stores (and diagnose reports) the calls it made
        metered = MeteredLLM(gen, "generator") if gen is not None else None
        parent = (
            SystemAdapter(system) if system is not None else build_system(record.system, dataset, metered)
        )
        if not callable(getattr(parent.system, "answer", None)):
            raise InputError(f"the system of run {run_id} has no answer(): nothing to replay", source=run_id)
        rerun = _without_rerank(parent.system, run_id) if NO_RERANK in extras else None
        replays: dict[str, EvalRunResult] = {"run": run}
        config, replay_judge = replay_config(run, record, copied, judge)
        for intervention in (*chain, *extras):
            replay = {"replay": ReplayRef(parent=run_id, intervention=intervention)}
            this = config.model_copy(update=replay)
            name = f"{intervention} of {run_id}"
            if intervention == NO_RERANK:  # retrieval runs again: every metric is measured anew
                assert rerun is not None
                whole = run.config.model_copy(update={"output": None, **replay})
                replays[intervention] = await arun_evaluation(
                    dataset, rerun, whole, store=store, llm=judge, name=name, progress=False
                )
                continue
            replayed = await arun_evaluation(
                dataset,
                replay_system(intervention, parent, run, dataset, record),
                this,
                store=store,
                llm=replay_judge,
                name=name,
                progress=False,
            )
            replays[intervention] = copy_parent_values(store, run, replayed, copied)
    finally:
        for client in owned:
            await client.aclose()
    out: dict[str, Any] = {
        "run": run_id,
        "replays": {k: r.run_id for k, r in replays.items() if k != "run"},
        "calls": "replays call the system's answer() and the judges only; retrieve() is never called",
        "retrieve_calls": {k: 0 for k in replays if k != "run"},
        "usage": {k: replay_usage(r) for k, r in replays.items() if k != "run"},
        "copied": sorted(copied),
        "metrics": [attribute(n, replays, seed=seed, n_resamples=n_resamples) for n in names]
        if chain
        else [],
    }
    from ragmeter.diagnose.nugget_facts import add_facts

    add_facts(out["metrics"], replays)
    if lower:  # lower-is-better: each replay's change, not lost points
        out["deltas"] = {k: [extra_delta(n, run, r) for n in lower] for k, r in replays.items() if k != "run"}
    if rerun is not None:
        out["retrieve_calls"][NO_RERANK] = rerun.retrieve_calls
        out["calls"] = (
            "replays call the system's answer() and the judges only; retrieve() is never called, except by "
            f"no-rerank, which re-ran retrieval with the reranker switched off ({rerun.retrieve_calls} "
            "retrieve calls)"
        )
    if extras:
        out["also"] = {e: [extra_delta(n, run, replays[e]) for n in names] for e in extras}
    if CLOSED_BOOK in replays:
        from ragmeter.diagnose.closed_book import store_closed_book

        # the parent run shows what its answers owe to retrieval
        out["closed_book"] = store_closed_book(store, run, replays[CLOSED_BOOK], by_id)
    return out


def copied_metrics(run: EvalRunResult) -> set[str]:
    """The judge metrics of the run that read no answer (the retrieval grade, its total score and pass
    rates): not attributed, and the same for every replay, so a replay copies the parent's values instead of
    judging them again."""
    import ragmeter.metrics as rm

    found = {n for r in run.per_query for n in r.metrics} | set(run.aggregate)
    out = set()
    for name in found:
        spec = rm.lookup(name)
        if spec is not None and spec.family == "judge" and "answer" not in spec.inputs:
            out.add(name)
    return out


def replay_config(run: EvalRunResult, record: Any, copied: set[str], judge: Any) -> tuple[Any, Any]:
    """(the replays' config, their judge client): the parent's config (no output files) with its metrics
    named explicitly minus the copied ones; no judge when every judge metric is copied."""
    from ragmeter.run.loop import record_plan
    from ragmeter.score.plan import SEMANTIC

    config = run.config.model_copy(update={"output": None})
    if not copied:
        return config, judge
    plan = record_plan(record, judged=judge is not None, semantic=run.config.semantic)
    judges = [n for n in plan.judges if n not in copied]
    names = [*plan.retrieval, *(plan.lexical or ()), *judges, *plan.custom]
    names += [SEMANTIC] if plan.semantic else []
    if not judges:
        config = config.model_copy(update={"use_llm_judge": False, "judge_model": None})
        judge = None
    return config.model_copy(update={"metrics": names}), judge


def copy_parent_values(
    store: Any, run: EvalRunResult, replay: EvalRunResult, copied: set[str]
) -> EvalRunResult:
    """The replay with the parent's values of `copied` (per query, aggregate, the judge's versions) stored."""
    if not copied or replay.run_id is None:
        return replay
    done = {r.query_id for r in replay.per_query}
    values = {
        r.query_id: {n: m for n, m in r.metrics.items() if n in copied}
        for r in run.per_query
        if r.query_id in done
    }
    store.put_metric_values(replay.run_id, {q: v for q, v in values.items() if v})
    aggregate = {**replay.aggregate, **{n: s for n, s in run.aggregate.items() if n in copied}}
    versions = dict(replay.versions)
    for key, value in run.versions.items():
        if key.removeprefix("prompt.") in copied or (key == "judge" and key not in versions):
            versions[key] = value
    summary = store.run_summary(replay.run_id)
    summary["copied_from_parent"] = {"run": run.run_id, "metrics": sorted(copied)}
    store.update_scores(replay.run_id, aggregate=aggregate, summary=summary, versions=versions)
    updated: EvalRunResult = store.get_run(replay.run_id)
    return updated


def replay_usage(replay: EvalRunResult) -> dict[str, Any]:
    """What a replay spent: calls (answered, failed), tokens and cost of its generator, its judge, in all."""
    usage = as_json(replay.usage) or {}

    def line(role: str) -> dict[str, Any]:
        got = usage.get(role) or {}
        return {
            "calls": got.get("calls", 0),
            "failed_calls": got.get("failed_calls", 0),
            "input_tokens": got.get("input_tokens", 0),
            "output_tokens": got.get("output_tokens", 0),
            "cost_usd": got.get("cost_usd", 0.0),
            "cost_note": got.get("cost_note"),
        }

    return {role: line(role) for role in ("generator", "judge", "total")}


def _without_rerank(system: Any, run_id: str) -> CountedRetrieval:
    """The run's built-in pipeline with its reranker switched off, its retrieve calls counted; refused for
    any other system."""
    from ragmeter.systems.pipeline import Pipeline

    if not isinstance(system, Pipeline) or not system.reranks:
        what = (
            "a built-in pipeline without a reranker"
            if isinstance(system, Pipeline)
            else "not the built-in pipeline"
        )
        raise InputError(
            f"no-rerank needs the built-in pipeline with a reranker; the system of run {run_id} is {what}",
            source="--also",
        )
    return CountedRetrieval(system.without_rerank())
