"""The work of one query: outputs (retrieved docs with ids, scores and texts, the answer, latency per stage,
LLM usage), then the per-query scorers (lexical, judges, user metrics).

A `QueryWorker` is built FROM THE RUN RECORD (`QueryWorker.build`), so that any executor can make one
wherever it runs; run-level metrics are computed later from the stored outputs (ragmeter.score).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from typing import Any

from ragmeter.llm.meter import MeteredLLM, query_usage
from ragmeter.models import EvalDataset, EvalQuery, QueryEvalResult, RetrievedDoc
from ragmeter.records import RunRecord
from ragmeter.run.batching import BatchedRetrieval
from ragmeter.run.rebuild import SystemAdapter, build_clients, build_system
from ragmeter.score.plan import MetricPlan, from_ref, plan_metrics
from ragmeter.score.query import error_text, score_query


def record_plan(record: RunRecord, *, judged: bool, semantic: bool = True) -> MetricPlan:
    """The plan the record stores (without its judges when no judge is given), with its nugget set; a
    record stored before plans were (schema 1) has it derived from its metrics and cut-offs."""
    import dataclasses

    from ragmeter.score.nugget_plan import attach, load

    if record.plan is None:
        plan = plan_metrics(
            record.metrics,
            record.cutoffs,
            evaluate_generation=record.evaluate_generation,
            judged=judged,
            semantic=semantic,
        )
        return attach(plan, record.nuggets if judged else None, record.cutoffs)[0]
    nuggets = load(record.nuggets) if judged and record.nuggets else None
    plan = from_ref(record.plan, nuggets)
    return plan if judged else dataclasses.replace(plan, judges=(), total_score=False)


class QueryWorker:
    """Evaluates queries with one system and (optionally) one judge, as the record says."""

    def __init__(self, record: RunRecord, system: SystemAdapter, judge: Any = None) -> None:
        self.record = record
        self.system = system
        self.judge = MeteredLLM(judge, "judge") if judge is not None else None
        if hasattr(judge, "metered"):  # a cascade (ragmeter.judges.cascade): each of its judges metered apart
            self.judge = judge.metered(MeteredLLM)
        self.plan = record_plan(record, judged=judge is not None)
        self._owned: list[Any] = []
        self.batches = BatchedRetrieval(system.system, self._k_for, size=record.batch_size)

    def _k_for(self, query: EvalQuery) -> int:
        """How many results to ask for: the largest cut-off, plus the docs the query must not retrieve."""
        excluded = set(query.metadata.get("exclude_doc_ids") or ())
        return max(self.record.cutoffs or [10]) + len(excluded)

    def expect(self, queries: Sequence[EvalQuery]) -> None:
        """The queries this worker will evaluate, in order: a system with `retrieve_batch` is then asked
        for them in batches (ragmeter.run.batching)."""
        self.batches.expect(queries)

    @classmethod
    def build(
        cls,
        record: RunRecord,
        dataset: EvalDataset,
        *,
        system: Any = None,
        judge: Any = None,
        generator: Any = None,
    ) -> QueryWorker:
        """A worker for `record`: the system rebuilt from it (or the in-process `system` whose fingerprint
        matched), the judge and generator made from their recorded specs unless clients are given."""
        judge, generator, owned = build_clients(
            record, judge=judge, generator=generator, want_generator=system is None
        )
        if system is None:
            metered = MeteredLLM(generator, "generator") if generator is not None else None
            adapter = build_system(record.system, dataset, metered)
        else:
            adapter = SystemAdapter(system)
        worker = cls(record, adapter, judge)
        worker._owned = owned
        return worker

    async def warm_up(self) -> None:
        """Indexes and models loaded before any query is timed (else the first queries' latency holds them)."""
        await self.system.warm_up()

    async def aclose(self) -> None:
        for client in self._owned:
            close = getattr(client, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):  # closing must never hide the run's outcome
                    await close()

    async def evaluate(self, query: EvalQuery) -> QueryEvalResult:
        from ragmeter.judges.factuality import run_batch
        from ragmeter.systems.context import query_context

        # the system may read which query it serves (ragmeter.systems.context.current_query)
        about = query_context(query.query_id, query.question, query.metadata)
        with query_usage() as usage, about, run_batch(self.record.factuality_batch):
            result = await self._evaluate(query)
        return result.model_copy(update={"usage": usage}) if usage else result

    async def _evaluate(self, query: EvalQuery) -> QueryEvalResult:
        record = self.record
        latency: dict[str, float] = {}
        # `total` runs from the query's first stage to its last: from a batch's start when its results came
        # from a batch call that began earlier (run/batching.py), so it is never below any of its stages
        first_stage = [time.perf_counter()]
        result = QueryEvalResult(
            query_id=query.query_id, question=query.question, ground_truth_answer=query.ground_truth_answer
        )

        def failed(reason: str) -> QueryEvalResult:
            latency["total"] = (time.perf_counter() - first_stage[0]) * 1000
            return result.model_copy(update={"status": "failed", "error": reason, "latency_ms": latency})

        k = max(record.cutoffs or [10])
        # a query may name docs it must not retrieve (citation prediction: the paper itself)
        excluded = set(query.metadata.get("exclude_doc_ids") or ())
        try:  # stage latency: the system's own time, measured where it runs (see timed_call)
            batched = await self.batches.retrieve(query, self._k_for(query))
            if batched is not None:  # one retrieve_batch call's results: its time is reported once per batch
                hits = batched.results
                first_stage[0] = min(first_stage[0], batched.started)
                if batched.reports:
                    latency[batched.stage] = batched.seconds * 1000
            else:
                hits, latency["retrieve"] = await self.system.retrieve_timed(
                    query.question, self._k_for(query)
                )
            hits = [h for h in hits if h.doc_id not in excluded][:k]
        except Exception as exc:
            return failed(error_text("retrieve", exc))
        result.retrieved = [
            RetrievedDoc(doc_id=h.doc_id, score=h.score, rank=i, text=h.text) for i, h in enumerate(hits, 1)
        ]
        if record.evaluate_generation:
            try:
                contexts = self.system.select_contexts(query.question, hits, record.context_k)
                result.contexts = [
                    RetrievedDoc(doc_id=h.doc_id, score=h.score, rank=i, text=h.text)
                    for i, h in enumerate(contexts, 1)
                ]
                answer, latency["generate"] = await self.system.answer_timed(query.question, contexts)
                result.answer = None if answer is None else str(answer)
                result.confidence = getattr(answer, "confidence", None)  # selective answering
            except Exception as exc:
                return failed(error_text("generate", exc))
        repeated = record.repeat > 1 and self.judge is not None and bool(self.plan.judges)
        result.metrics = await score_query(
            self.plan,
            query,
            result,
            context_k=record.context_k,
            judge=None if repeated else self.judge,
            latency=latency,
        )
        if repeated and result.status == "ok":  # each judge metric judged record.repeat times
            from ragmeter.run.repeats import judge_repeats

            t_judge = time.perf_counter()
            # nugget metrics are judged once: a repeat would re-assign the same nuggets (docs/nuggets.md)
            nuggets = [n for n in self.plan.judges if n.startswith("nugget_")]
            others = [n for n in self.plan.judges if n not in nuggets]
            means, result.repeats = await judge_repeats(others, query, result, self.judge, record)
            result.metrics.update(means)
            if nuggets:
                from ragmeter.score.query import contexts_of, nugget_values

                given = contexts_of(result, record.context_k)
                result.metrics.update(
                    await nugget_values(nuggets, self.plan.nuggets, query, result, given, self.judge)
                )
            latency["judge"] = (time.perf_counter() - t_judge) * 1000
        latency["total"] = (time.perf_counter() - first_stage[0]) * 1000
        result.latency_ms = latency
        return result
