"""`ragmeter diagnose RUN`: where the points were lost, by replaying the run along one chain
run -> oracle-rank -> oracle-context -> the metric's best value.

ranking_and_context = oracle-rank - run; retrieval = oracle-context - oracle-rank; generation = best -
oracle-context. Over the queries with a value in all three runs the parts add up to best - run exactly;
each has a paired bootstrap 95% interval over queries. Bounded answer metrics only (a replay's retrieval
metrics equal its parent's by construction).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ragmeter.diagnose.replay import (
    CHAIN,
    CLOSED_BOOK,
    NO_RERANK,
    CountedRetrieval,
    ReplaySystem,
    check_intervention,
    corpus_texts,
    replay_contexts,
)
from ragmeter.errors import InputError
from ragmeter.models import EvalRunResult

PARTS = ("ranking_and_context", "retrieval", "generation")


def answer_metrics(run: EvalRunResult, names: Sequence[str] | None) -> list[str]:
    """The bounded answer metrics to attribute: `names` (checked), else every one the run has."""
    import ragmeter.metrics as rm

    def ok(name: str) -> bool:
        spec = rm.lookup(name)
        return spec is not None and spec.bounded and "answer" in spec.inputs and spec.family != "diagnosis"

    if names:
        for name in names:
            if not ok(rm.canonical(name, source="--metrics")):
                raise InputError(f"{name!r} is not a bounded answer metric", source="--metrics")
        return [rm.canonical(n) for n in names]
    return [n for n in sorted(run.aggregate, key=rm.sort_key) if ok(n)]


def _values(run: EvalRunResult, name: str) -> dict[str, float]:
    out = {}
    for r in run.per_query:
        m = r.metrics.get(name)
        if r.status == "ok" and m is not None and m.value is not None:
            out[r.query_id] = m.value
    return out


def attribute(
    name: str, runs: dict[str, EvalRunResult], *, seed: int = 42, n_resamples: int = 2000
) -> dict[str, Any]:
    """The chain's parts of one metric with paired bootstrap intervals over queries."""
    import ragmeter.metrics as rm

    spec = rm.get(name)
    best = spec.range[1] if spec.higher_is_better else spec.range[0]
    assert best is not None
    base, rank, ctx = (_values(runs[k], name) for k in ("run", *CHAIN))
    queries = sorted(set(base) & set(rank) & set(ctx))
    if not queries:
        return {"metric": name, "n": 0, "note": "no query has a value in all three runs"}
    v = np.array([[base[q], rank[q], ctx[q]] for q in queries], dtype=float)
    diffs = np.stack([v[:, 1] - v[:, 0], v[:, 2] - v[:, 1], best - v[:, 2]], axis=1)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(queries), size=(n_resamples, len(queries)))
    boot = diffs[idx].mean(axis=1)  # (n_resamples, 3)
    parts = {}
    for i, part in enumerate(PARTS):
        lo, hi = np.percentile(boot[:, i], [2.5, 97.5])
        parts[part] = {"mean": float(diffs[:, i].mean()), "ci95": [float(lo), float(hi)]}
    return {
        "metric": name,
        "n": len(queries),
        "higher_is_better": spec.higher_is_better,
        "run": float(v[:, 0].mean()),
        "oracle_rank": float(v[:, 1].mean()),
        "oracle_context": float(v[:, 2].mean()),
        "best": float(best),
        "gap": float(best - v[:, 0].mean()),
        "parts": parts,
    }


def extra_delta(name: str, run: EvalRunResult, other: EvalRunResult) -> dict[str, Any]:
    a, b = _values(run, name), _values(other, name)
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
    from ragmeter.records import RunRecord
    from ragmeter.run.api import arun_evaluation
    from ragmeter.run.rebuild import SystemAdapter, build_clients, build_system, resolve_dataset

    run = store.get_run(run_id)
    if not run.record:
        raise InputError(f"run {run_id} has no record to replay it from", source=run_id)
    record = RunRecord.model_validate(run.record)
    depth = max((len(r.retrieved) for r in run.per_query), default=0)
    extras = [check_intervention(a, depth=depth) for a in also]
    if not record.evaluate_generation or all(r.answer is None for r in run.per_query):
        raise InputError(f"run {run_id} has no answers: there is no generator to replay", source=run_id)
    names = answer_metrics(run, metrics)
    if not names:
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
    chain: tuple[str, ...] = CHAIN if labelled else ()  # without qrels: the closed-book arm alone
    judge, gen, owned = build_clients(record, judge=llm, generator=generator, want_generator=system is None)
    try:
        parent = SystemAdapter(system) if system is not None else build_system(record.system, dataset, gen)
        if not callable(getattr(parent.system, "answer", None)):
            raise InputError(f"the system of run {run_id} has no answer(): nothing to replay", source=run_id)
        rerun = _without_rerank(parent.system, run_id) if NO_RERANK in extras else None
        corpus = corpus_texts(dataset)
        replays: dict[str, EvalRunResult] = {"run": run}
        for intervention in (*chain, *extras):
            extra = {**run.config.extra, "replay": {"parent": run_id, "intervention": intervention}}
            config = run.config.model_copy(update={"extra": extra, "output": None})
            name = f"{intervention} of {run_id}"
            if intervention == NO_RERANK:
                assert rerun is not None
                replays[intervention] = await arun_evaluation(
                    dataset, rerun, config, store=store, llm=judge, name=name, progress=False
                )
                continue
            contexts = {
                r.question: replay_contexts(
                    intervention,
                    by_id[r.query_id],
                    r,
                    context_k=record.context_k,
                    corpus=corpus,
                    relevance_level=record.relevance_level,
                )
                for r in run.per_query
                if r.status == "ok" and r.query_id in by_id
            }
            replays[intervention] = await arun_evaluation(
                dataset,
                ReplaySystem(parent, run, contexts),
                config,
                store=store,
                llm=judge,
                name=name,
                progress=False,
            )
    finally:
        for client in owned:
            await client.aclose()
    out: dict[str, Any] = {
        "run": run_id,
        "replays": {k: r.run_id for k, r in replays.items() if k != "run"},
        "calls": "replays call the system's answer() and the judges only; retrieve() is never called",
        "retrieve_calls": {k: 0 for k in replays if k != "run"},
        "metrics": [attribute(n, replays, seed=seed, n_resamples=n_resamples) for n in names]
        if chain
        else [],
    }
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
        from ragmeter.diagnose.closed_book import closed_book_values

        values, out["closed_book"] = closed_book_values(
            run, replays[CLOSED_BOOK], by_id, run.config.extra.get("correct_if")
        )
        store.put_metric_values(run_id, values)  # the parent run shows what its answers owe to retrieval
    return out


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
