"""`run_evaluation` / `arun_evaluation`: validate, store the run record, evaluate the pending queries on an
executor (each result stored as it completes), then score the stored outputs and finish the run."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ragmeter.llm.spend import SpendCapReached, SpendLedger, capped, spent_by_role
from ragmeter.models import EvalConfig, EvalDataset, EvalRunResult, QueryEvalResult
from ragmeter.run.finish import judge_versions, repeat_gates, sequential_of, stability_of
from ragmeter.run.prepare import Prepared, validate
from ragmeter.run.sequential import SequentialGate, gate_for_run, sequential_block

if TYPE_CHECKING:
    from ragmeter.store import Store


@dataclass
class RunOptions:
    """What a run needs beyond its EvalConfig (objects, not settings)."""

    store: Store | str | bool | None = None  # a Store, a URL, None = default store, False = no store
    resume: str | None = None  # run id to resume
    retry_failed: bool = False  # on resume, evaluate failed queries again
    progress: bool = True
    name: str = ""
    llm: Any = None  # judge client (else built from config.judge_model)
    generator_llm: Any = None  # passed to build_system for generation
    system_options: dict[str, Any] = field(default_factory=dict)  # build_system keywords (recorded)
    # An Executor object, or a spec ("local", "ray", "ray:ADDRESS"); default: the config's executor
    executor: Any = None
    # Write config.output's JSON and CSV when the run finishes (the CLI writes its outputs itself)
    write_outputs: bool = True
    # Gate thresholds {metric: value} (`--fail-under`): the pass line of a repeated judge's flip share
    gates: dict[str, float] = field(default_factory=dict)
    # The share of repeat means on the other side of a gate above which the gate is flaky (score/flaky.py)
    flaky_tolerance: float = 0.0
    # Spend caps in USD (`--max-cost-usd`, `--max-judge-cost-usd`): the run stops, resumable, before an LLM
    # request could take its spend past them (ragmeter.llm.spend); None: no cap
    max_cost_usd: float | None = None
    max_judge_cost_usd: float | None = None


def package_versions() -> dict[str, str]:
    import platform
    from importlib import metadata

    from ragmeter._version import __version__

    out = {"ragmeter": __version__}
    for dist in ("numpy", "pydantic", "sqlalchemy", "sentence-transformers", "torch", "openai", "bm25s"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    out["python"] = platform.python_version()
    return out


def _open_store(spec: Store | str | bool | None) -> Store | None:
    if spec is False:
        return None
    from ragmeter.store import Store, open_store

    if isinstance(spec, Store):
        return spec
    return open_store(spec if isinstance(spec, str) else None)


def run_evaluation(
    dataset: EvalDataset | str | None, system: Any, config: EvalConfig | None = None, **options: Any
) -> EvalRunResult:
    """Evaluate `system` on `dataset` (sync wrapper of arun_evaluation; options as RunOptions)."""
    return asyncio.run(arun_evaluation(dataset, system, config, **options))


async def arun_evaluation(
    dataset: EvalDataset | str | None, system: Any, config: EvalConfig | None = None, **options: Any
) -> EvalRunResult:
    """Evaluate `system` on `dataset` with `config`; returns the finished run with per-query results.

    `system` is a System, a spec string for build_system, a callable fn(question, k), or None on resume
    (rebuilt from the run record). With RunOptions.resume the stored run is completed: queries already
    stored are skipped, so each query ends up evaluated exactly once. The whole invocation is validated
    (`ragmeter.run.validate`) before anything is stored.
    """
    opts = RunOptions(**options)
    store = _open_store(opts.store)
    try:
        prepared = prepare_run(dataset, system, config, opts, store)
        return await _Run(store, opts, prepared).run()
    finally:
        _close_owned(store, opts)


def prepare_run(
    dataset: EvalDataset | str | None,
    system: Any,
    config: EvalConfig | None,
    opts: RunOptions,
    store: Store | None,
    *,
    fail_under: Sequence[str] = (),
) -> Prepared:
    """The run that `opts` asks for, validated (`ragmeter.run.validate`): what `run_prepared` takes."""
    return validate(
        dataset,
        system,
        config,
        store=store,
        resume=opts.resume,
        llm=opts.llm,
        generator_llm=opts.generator_llm,
        system_options=opts.system_options,
        fail_under=fail_under,
    )


def run_prepared(prepared: Prepared, **options: Any) -> EvalRunResult:
    """Run an invocation that `validate` / `prepare_run` already checked (sync wrapper of arun_prepared)."""
    return asyncio.run(arun_prepared(prepared, **options))


async def arun_prepared(prepared: Prepared, **options: Any) -> EvalRunResult:
    """Run `prepared` as it was validated: nothing is checked again. `options` as RunOptions; give the
    store that validated it (a resume reads its run from there), and the same llm / generator_llm."""
    opts = RunOptions(**options)
    store = _open_store(opts.store)
    try:
        return await _Run(store, opts, prepared).run()
    finally:
        _close_owned(store, opts)


def _close_owned(store: Store | None, opts: RunOptions) -> None:
    if store is not None and store is not opts.store:  # opened here from a URL or the default
        store.close()


class _Run:
    def __init__(self, store: Store | None, opts: RunOptions, prepared: Prepared) -> None:
        self.store, self.opts, self.p = store, opts, prepared
        self.run_id: str | None = None
        self.results: dict[str, QueryEvalResult] = {}
        self.gate: SequentialGate | None = None  # --sequential: stops once every gate is decided
        self.spend: dict[str, Any] | None = None  # under a spend cap: what the ledger counted

    def _start(self) -> datetime:
        p, store = self.p, self.store
        if p.resumed is not None:
            assert store is not None and p.resumed.run_id is not None
            self.run_id = p.resumed.run_id
            header = store.claim_run(self.run_id)
            if self.opts.retry_failed:
                store.delete_failed_results(self.run_id)
            self.results = {r.query_id: r for r in store.query_results(self.run_id)}
            return header.started_at or datetime.now(UTC)
        if store is None:
            return datetime.now(UTC)
        header = store.create_run(
            p.config,
            name=self.opts.name,
            dataset_name=p.dataset.name,
            dataset_hash=p.dataset_hash,
            n_dataset_queries=len(p.queries),
            versions=package_versions(),
            record=p.record.dump(),
        )
        self.run_id = header.run_id
        return header.started_at or datetime.now(UTC)

    async def run(self) -> EvalRunResult:
        started = self._start()
        try:
            pending = [(i, q) for i, q in enumerate(self.p.queries) if q.query_id not in self.results]
            earlier = sequential_of(self.p.resumed)
            self.gate = gate_for_run(self.p.config, self.p.queries, self.results, earlier)
            if self.gate is not None:  # the seeded order; nothing left once the stored results decide
                pending = [] if self.gate.settled else self.gate.pending_in_order(self.results)
            await self._execute(pending)
            return await self._finish(started)
        except (KeyboardInterrupt, asyncio.CancelledError):
            self._mark_failed("interrupted (Ctrl-C / cancelled)")
            raise
        except BaseException as exc:
            self._mark_failed(f"{type(exc).__name__}: {exc}")
            raise

    def _mark_failed(self, why: str) -> None:
        if self.store is not None and self.run_id is not None:
            with contextlib.suppress(Exception):  # the store itself may be what failed
                self.store.fail_run(
                    self.run_id, f"{why}; resume it with `ragmeter run --resume {self.run_id}`"
                )

    async def _execute(self, pending: list[tuple[int, Any]]) -> None:
        if not pending:
            return
        from ragmeter.run.executor import LocalExecutor
        from ragmeter.run.progress import Progress

        executor = self.opts.executor
        if executor is None or isinstance(executor, str):  # a spec: this call's, else the run's own
            from ragmeter.run.ray_executor import executor_from_spec

            spec = executor if isinstance(executor, str) else self.p.config.executor
            executor = executor_from_spec(spec, self.p.dataset) if self.p.system is None else None
        if executor is None:
            executor = LocalExecutor(
                self.p.dataset, system=self.p.system, judge=self.opts.llm, generator=self.opts.generator_llm
            )
        n_failed = sum(r.status == "failed" for r in self.results.values())
        progress = Progress(len(self.p.queries), len(self.results), n_failed, enabled=self.opts.progress)

        ledger = self._ledger()

        def on_result(position: int, result: QueryEvalResult) -> bool:
            if ledger is not None and result.query_id in ledger.refused_queries:
                return True  # a call of this query was refused at the cap: not stored, evaluated on resume
            if self.store is not None and self.run_id is not None:
                self.store.add_query_result(self.run_id, result, position=position)
            self.results[result.query_id] = result
            progress.advance(failed=result.status == "failed")
            return self.gate is not None and self.gate.observe(result)  # True: start no further query

        heartbeat = asyncio.create_task(self._heartbeat())
        try:
            with progress, capped(ledger):
                await executor.execute(self.p.record, pending, on_result)
        finally:
            heartbeat.cancel()
        if ledger is not None and ledger.refused_queries:
            self.spend = ledger.as_json()
            raise SpendCapReached(
                f"stopped at the spend cap: {ledger.refusal}; {ledger.describe()}; "
                f"{len(self.results)} of {len(self.p.queries)} queries stored; resume with a higher cap: "
                f"`ragmeter run --resume {self.run_id} --max-cost-usd ...`"
            )
        if ledger is not None:
            self.spend = ledger.as_json()

    def _ledger(self) -> SpendLedger | None:
        """The run's spend ledger under a cap; a resumed run's stored queries have spent already."""
        opts = self.opts
        if opts.max_cost_usd is None and opts.max_judge_cost_usd is None:
            return None
        ledger = SpendLedger(opts.max_cost_usd, opts.max_judge_cost_usd)
        for result in self.results.values():
            for role, cost in spent_by_role(result.usage).items():
                ledger.spent[role] = ledger.spent.get(role, 0.0) + cost
        return ledger

    async def _heartbeat(self) -> None:
        # Keeps the run visibly alive while slow queries are in flight and no result is written.
        while self.store is not None and self.run_id is not None:
            await asyncio.sleep(30)
            self.store.heartbeat(self.run_id, force=True)

    async def _finish(self, started: datetime) -> EvalRunResult:
        from ragmeter.score.finish import score_run
        from ragmeter.score.writers import write_outputs

        p = self.p
        results = [self.results[q.query_id] for q in p.queries if q.query_id in self.results]
        models = {
            "judge": p.record.judge.spec if p.record.judge else None,
            "generator": p.record.generator.spec if p.record.generator else None,
        }
        scored = await score_run(
            p.plan,
            p.queries,
            results,
            relevance_level=p.config.relevance_level,
            seed=p.config.seed,
            evaluate_generation=p.config.evaluate_generation,
            models=models,
            context_k=p.record.context_k,
            correct_if=p.config.correct_if,
            gates=self.opts.gates,
        )
        versions = {**package_versions(), **judge_versions(p)}
        sequential = sequential_block(self.gate, sequential_of(p.resumed), len(results), scored.usage)
        if sequential is not None:
            scored.summary["sequential"] = sequential
        if (
            self.spend is not None and scored.usage is not None
        ):  # what the cap counted, judge and system apart
            scored.usage["spend_cap"] = self.spend
        if p.record.escalation is not None and scored.usage is not None:  # a cascade's coverage and costs
            from ragmeter.score.escalation import escalation_summary

            scored.usage["escalation"] = escalation_summary(p.record.escalation, scored.per_query)
        stability = stability_of(p, scored.per_query, self.opts.gates)
        if stability:
            scored.summary["stability"] = {n: s.model_dump(mode="json") for n, s in stability.items()}
        across = repeat_gates(
            p, scored.per_query, scored.aggregate, self.opts.gates, self.opts.flaky_tolerance
        )
        if across:
            scored.summary["gates_across_repeats"] = {n: g.model_dump(mode="json") for n, g in across.items()}
        result = EvalRunResult(
            run_id=self.run_id,
            name=p.resumed.name if p.resumed is not None else self.opts.name,
            status="completed",
            config=p.config,
            dataset_hash=p.dataset_hash,
            versions=versions,
            started_at=started,
            completed_at=datetime.now(UTC),
            aggregate=scored.aggregate,
            per_query=scored.per_query,
            n_queries=len(scored.per_query),
            n_failed=scored.n_failed,
            n_queries_without_relevant=scored.n_without_relevant,
            notes=scored.notes,
            usage=scored.usage,
            record=p.record.dump(),
            ppi=scored.ppi,
            sequential=sequential,
            stability=stability,
            gates_across_repeats=across,
            sufficiency=scored.summary.get("sufficiency"),
            risk_coverage=scored.summary.get("risk_coverage"),
        )
        if self.store is not None and self.run_id is not None:
            self.store.put_metric_values(self.run_id, scored.run_level)
            self.store.finish_run(
                self.run_id,
                status="completed",
                aggregate=scored.aggregate,
                n_queries=result.n_queries,
                n_failed=result.n_failed,
                summary=scored.summary,
                versions=versions,
            )
        if p.config.output and self.opts.write_outputs:
            write_outputs(result, p.config.output)
        return result


__all__ = [
    "RunOptions",
    "arun_evaluation",
    "arun_prepared",
    "package_versions",
    "prepare_run",
    "run_evaluation",
    "run_prepared",
]
