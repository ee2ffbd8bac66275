"""The evaluation loop: one run of a system over a dataset, checkpointed per query, resumable.

Per query: retrieve (top max(k)), generate when enabled, lexical metrics, judge metrics when a judge is
configured, latency per stage; the result is written to the store the moment it is known. At the end, the
run-level metrics are added: retrieval metrics with the IR engine over the whole run at once, semantic
similarity in one batch; then aggregates, JSON and CSV.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import hashlib
import json
import math
import random
import statistics
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ragmeter.errors import InputError
from ragmeter.models import (
    EvalConfig,
    EvalDataset,
    EvalQuery,
    EvalRunResult,
    MetricResult,
    MetricSummary,
    QueryEvalResult,
    RetrievedDoc,
)

if TYPE_CHECKING:
    from ragmeter.store import Store
    from ragmeter.systems import Retrieved

# How many of the top retrieved texts a generator gets (config.extra["context_k"] overrides).
CONTEXT_K = 5
SEMANTIC_METRIC = "sbert_similarity"

__all__ = [
    "RunOptions",
    "arun_evaluation",
    "load_config",
    "run_evaluation",
    "write_csv",
    "write_json",
]


# ------------------------------------------------------------------------------------------ config


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> EvalConfig:
    """An EvalConfig from a YAML or TOML file, then `overrides` (CLI flags, None = not given) on top."""
    data: dict[str, Any] = {}
    source = str(path) if path is not None else "config"
    if path is not None:
        data = _read_config_file(Path(path))
    for key, value in (overrides or {}).items():
        if value is not None:
            data[key] = value
    try:
        return EvalConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "config"
        raise InputError(f"field {loc!r}: {err['msg']}", source=source) from None


def _read_config_file(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise InputError("no such config file", source=str(path))
    text = path.read_text(encoding="utf-8")
    suffix = path.suffix.lower()
    if suffix == ".toml":
        import tomllib

        try:
            data: Any = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"not valid TOML: {exc}", source=str(path)) from None
    elif suffix in (".yaml", ".yml"):
        from ragmeter.yamlfile import parse_yaml

        data = parse_yaml(text, source=str(path), what="a YAML config file")
    else:
        raise InputError("a config file must end in .yaml, .yml or .toml", source=str(path))
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError("a config file must hold a mapping of EvalConfig fields", source=str(path))
    # A [ragmeter] / ragmeter: section is accepted as well as top-level keys.
    inner = data.get("ragmeter")
    return dict(inner) if isinstance(inner, dict) and len(data) == 1 else dict(data)


# ------------------------------------------------------------------------------------------ systems


class _SystemAdapter:
    """Any system through ragmeter.systems' protocol: a System (sync or async `retrieve`, optional
    `answer`), or a plain callable `fn(question, k)` wrapped as a CallableSystem."""

    def __init__(self, system: Any) -> None:
        from ragmeter.systems import CallableSystem

        if not hasattr(system, "retrieve"):
            if not callable(system):
                raise InputError(f"not a system: {system!r} has no retrieve() and is not callable")
            system = CallableSystem(system, name=getattr(system, "__name__", "callable"))
        self.system = system

    async def retrieve(self, question: str, k: int) -> list[Retrieved]:
        from ragmeter.systems import aretrieve

        return await aretrieve(self.system, question, k)

    async def answer(self, question: str, contexts: list[Retrieved]) -> str | None:
        from ragmeter.systems import aanswer

        return await aanswer(self.system, question, contexts)


# ------------------------------------------------------------------------------------------ the run


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
    system_options: dict[str, Any] = field(default_factory=dict)


def dataset_hash(dataset: EvalDataset) -> str:
    digest = hashlib.sha256()
    digest.update(dataset.model_dump_json(exclude={"description", "metadata"}).encode())
    return "sha256:" + digest.hexdigest()


def sample_queries(dataset: EvalDataset, limit: int | None, seed: int) -> list[EvalQuery]:
    """The queries of a run: all of them, or `limit` drawn with `seed` (kept in dataset order)."""
    queries = list(dataset.queries)
    if limit is None or limit >= len(queries):
        return queries
    if limit < 1:
        raise InputError(f"limit must be at least 1, not {limit}", source="--limit")
    keep = set(random.Random(seed).sample(range(len(queries)), limit))
    return [q for i, q in enumerate(queries) if i in keep]


def package_versions() -> dict[str, str]:
    from importlib import metadata

    import ragmeter

    out = {"ragmeter": ragmeter.__version__}
    for dist in ("numpy", "pydantic", "sqlalchemy", "sentence-transformers", "torch", "openai", "bm25s"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    import platform

    out["python"] = platform.python_version()
    return out


def resolve_dataset(name: str, *, seed: int, store: Store | None = None) -> EvalDataset:
    """A dataset by name or path; `store:COLLECTION` is a collection's test cases in the store."""
    if name.startswith("store:"):
        if store is None:
            from ragmeter.store import open_store

            store = open_store()
        return store.dataset(name.split(":", 1)[1])
    from ragmeter.datasets import load_dataset

    return load_dataset(name, seed=seed)


def _open_store(spec: Store | str | bool | None) -> Store | None:
    if spec is False:
        return None
    from ragmeter.store import Store, open_store

    if isinstance(spec, Store):
        return spec
    return open_store(spec if isinstance(spec, str) else None)


def run_evaluation(
    dataset: EvalDataset | str | None,
    system: Any,
    config: EvalConfig | None = None,
    **options: Any,
) -> EvalRunResult:
    """Evaluate `system` on `dataset` (sync wrapper of arun_evaluation; options as RunOptions)."""
    return asyncio.run(arun_evaluation(dataset, system, config, **options))


async def arun_evaluation(
    dataset: EvalDataset | str | None,
    system: Any,
    config: EvalConfig | None = None,
    **options: Any,
) -> EvalRunResult:
    """Evaluate `system` on `dataset` with `config`; returns the finished run with per-query results.

    `system` is a System, a spec string for build_system, a callable fn(question, k), or None on resume
    (rebuilt from the stored config). With RunOptions.resume, the stored run is completed: queries already
    stored are skipped, so each query ends up evaluated exactly once.
    """
    opts = RunOptions(**options)
    store = _open_store(opts.store)
    owned = store is not None and store is not opts.store
    try:
        return await _Runner(store, opts).run(dataset, system, config)
    finally:
        if owned and store is not None:
            store.close()


class _Runner:
    def __init__(self, store: Store | None, opts: RunOptions) -> None:
        self.store = store
        self.opts = opts
        self.run_id: str | None = None
        self.results: dict[str, QueryEvalResult] = {}
        self.n_failed = 0
        self._owned_llms: list[Any] = []
        self.judge: Any = None

    # -- setup

    async def run(
        self, dataset_in: EvalDataset | str | None, system_in: Any, config: EvalConfig | None
    ) -> EvalRunResult:
        opts, store = self.opts, self.store
        header: EvalRunResult | None = None
        if opts.resume:
            if store is None:
                raise InputError("resuming a run needs the store", source="--resume")
            stored = store.get_run(opts.resume, with_queries=False)
            config = stored.config
            self.run_id = stored.run_id
        config = config or EvalConfig()
        if isinstance(dataset_in, EvalDataset):
            dataset = dataset_in
        else:
            dataset = resolve_dataset(dataset_in or config.dataset, seed=config.seed, store=store)
            if dataset_in and dataset_in != config.dataset:
                config = config.model_copy(update={"dataset": dataset_in})
        if not opts.resume and isinstance(system_in, str) and system_in != config.system:
            config = config.model_copy(update={"system": system_in})
        check_metric_names(config)
        queries = sample_queries(dataset, config.limit, config.seed)
        if not queries:
            raise InputError("the dataset has no queries", source=config.dataset)
        ds_hash = dataset_hash(dataset)

        if opts.resume:
            assert store is not None and self.run_id is not None
            if stored.dataset_hash and stored.dataset_hash != ds_hash:
                raise InputError(
                    f"the dataset changed since run {self.run_id} started ({stored.dataset_hash[:19]}... "
                    f"now {ds_hash[:19]}...): resuming would mix two datasets",
                    source="--resume",
                )
            header = store.claim_run(self.run_id)
            if opts.retry_failed:
                store.delete_failed_results(self.run_id)
            for r in store.query_results(self.run_id):
                self.results[r.query_id] = r
        elif store is not None:
            header = store.create_run(
                config,
                name=opts.name,
                dataset_name=dataset.name,
                dataset_hash=ds_hash,
                n_dataset_queries=len(queries),
                versions=package_versions(),
            )
            self.run_id = header.run_id
        started = header.started_at if header is not None else datetime.now(UTC)

        try:
            pending = [(i, q) for i, q in enumerate(queries) if q.query_id not in self.results]
            if pending:
                system = self._build_system(
                    system_in if not opts.resume or system_in else None, config, dataset
                )
                judge = self._judge_client(config)
                self.judge = judge
                await self._evaluate_all(pending, len(queries), system, judge, config)
            result = await self._finish(queries, dataset, config, ds_hash, started)
        except (KeyboardInterrupt, asyncio.CancelledError):
            self._mark_failed("interrupted (Ctrl-C / cancelled)")
            raise
        except BaseException as exc:
            self._mark_failed(f"{type(exc).__name__}: {exc}")
            raise
        finally:
            for client in self._owned_llms:
                close = getattr(client, "aclose", None)
                if close is not None:
                    with contextlib.suppress(Exception):  # closing must never hide the run's outcome
                        await close()
        return result

    def _mark_failed(self, why: str) -> None:
        if self.store is not None and self.run_id is not None:
            with contextlib.suppress(Exception):  # the store itself may be what failed
                self.store.fail_run(
                    self.run_id, f"{why}; resume it with `ragmeter run --resume {self.run_id}`"
                )

    def _build_system(self, system_in: Any, config: EvalConfig, dataset: EvalDataset) -> _SystemAdapter:
        system = system_in if system_in is not None else config.system
        if isinstance(system, str):
            from ragmeter.systems import build_system

            generator = self.opts.generator_llm
            if generator is None and config.evaluate_generation and config.generator_model:
                generator = self._llm(config.generator_model, config)
            system = build_system(
                system,
                dataset=dataset,
                mode=config.mode,
                collection=config.namespace,
                llm=generator,
                **self.opts.system_options,
            )
        return _SystemAdapter(system)

    def _llm(self, spec: str, config: EvalConfig) -> Any:
        from ragmeter.llm import from_spec

        kwargs: dict[str, Any] = {"concurrency": config.concurrency, "seed": config.seed}
        if config.cache:
            kwargs["cache"] = str(Path(".ragmeter") / "llm-cache.sqlite")
        client = from_spec(spec, **kwargs)
        self._owned_llms.append(client)
        return client

    def _judge_client(self, config: EvalConfig) -> Any:
        if not config.use_llm_judge:
            return None
        if self.opts.llm is not None:
            return self.opts.llm
        if not config.judge_model:
            raise InputError(
                "LLM judging is on but no judge model is set: give --judge MODEL", source="--judge"
            )
        return self._llm(config.judge_model, config)

    # -- the loop

    async def _evaluate_all(
        self,
        pending: list[tuple[int, EvalQuery]],
        total: int,
        system: _SystemAdapter,
        judge: Any,
        config: EvalConfig,
    ) -> None:
        queue: asyncio.Queue[tuple[int, EvalQuery]] = asyncio.Queue()
        for item in pending:
            queue.put_nowait(item)
        progress = _Progress(total, len(self.results), self.n_failed_so_far(), enabled=self.opts.progress)
        judge_names = _judge_names(config) if judge is not None else []

        async def worker() -> None:
            while True:
                try:
                    position, query = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                result = await _evaluate_query(query, system, judge, judge_names, config)
                if self.store is not None and self.run_id is not None:
                    self.store.add_query_result(self.run_id, result, position=position)
                self.results[query.query_id] = result
                progress.advance(failed=result.status == "failed")

        heartbeat = asyncio.create_task(self._heartbeat())
        try:
            with progress:
                await asyncio.gather(
                    *(worker() for _ in range(max(1, min(config.concurrency, len(pending)))))
                )
        finally:
            heartbeat.cancel()

    def n_failed_so_far(self) -> int:
        return sum(r.status == "failed" for r in self.results.values())

    async def _heartbeat(self) -> None:
        # Keeps the run visibly alive while slow queries are in flight and no result is written.
        while self.store is not None and self.run_id is not None:
            await asyncio.sleep(30)
            self.store.heartbeat(self.run_id, force=True)

    # -- the end

    async def _finish(
        self,
        queries: list[EvalQuery],
        dataset: EvalDataset,
        config: EvalConfig,
        ds_hash: str,
        started: datetime | None,
    ) -> EvalRunResult:
        per_query = [self.results[q.query_id] for q in queries if q.query_id in self.results]
        notes: list[str] = []
        n_without_rel = add_retrieval_metrics(per_query, queries, config, notes)
        summary: dict[str, Any] = {}
        grades = add_total_scores(per_query)
        if grades:
            summary["retrieval_grades"] = grades
            rates = ", ".join(
                f"{k} {v:.1f}%" for k, v in grades.items() if k.startswith("pass") and v is not None
            )
            notes.append(f"retrieval grade pass rates over all {len(per_query)} queries: {rates}")
        versions = package_versions()
        if config.use_llm_judge:
            versions.update(_judge_versions(config, self.judge))
            usage = getattr(self.judge, "usage", None)
            if usage is not None:
                summary["judge_usage"] = (
                    usage.model_dump(mode="json") if hasattr(usage, "model_dump") else str(usage)
                )
        if config.evaluate_generation:
            await asyncio.to_thread(add_semantic_metrics, per_query, queries, config, notes)
        aggregate = aggregate_metrics(per_query)
        n_failed = sum(r.status == "failed" for r in per_query)
        answered = [r for r in per_query if r.status == "ok"]
        if config.evaluate_generation and answered and all(r.answer is None for r in answered):
            notes.append(
                "the system returned no answers, so no answer metrics: give the built-in pipeline an LLM "
                "with --generator MODEL, or run with --no-generation"
            )
        if n_failed:
            notes.append(f"{n_failed} of {len(per_query)} queries failed; they are left out of every average")
        result = EvalRunResult(
            run_id=self.run_id,
            name=self.opts.name,
            status="completed",
            config=config,
            dataset_hash=ds_hash,
            versions=versions,
            started_at=started,
            completed_at=datetime.now(UTC),
            aggregate=aggregate,
            per_query=per_query,
            n_queries=len(per_query),
            n_failed=n_failed,
            n_queries_without_relevant=n_without_rel,
            notes=notes,
        )
        if self.store is not None and self.run_id is not None:
            self.store.update_query_results(self.run_id, per_query)
            self.store.finish_run(
                self.run_id,
                status="completed",
                aggregate=aggregate,
                n_queries=len(per_query),
                n_failed=n_failed,
                summary={"n_queries_without_relevant": n_without_rel, "notes": notes, **summary},
                versions=versions,
            )
        if config.output:
            write_json(result, config.output)
            write_csv(result, csv_path_for(config.output))
        return result


# ------------------------------------------------------------------------------------------ one query


LEXICAL_METRICS = frozenset(
    {
        "exact_match",
        "token_f1",
        "rouge_l",
        "answer_relevance",
        "support_coverage",
        "support_density",
        "hallucination_rate",
    }
)


def check_metric_names(config: EvalConfig) -> None:
    """Every name in config.metrics must be a retrieval measure, a judge, or an answer metric."""
    if not config.metrics:
        return
    from ragmeter.ir.measures import parse_measure
    from ragmeter.judges import JUDGES

    for name in config.metrics:
        if name in JUDGES or name in LEXICAL_METRICS or name in (SEMANTIC_METRIC, "total_score"):
            continue
        try:
            parse_measure(name)
        except InputError:
            known = sorted([*JUDGES, *LEXICAL_METRICS, SEMANTIC_METRIC])
            raise InputError(
                f"unknown metric {name!r}: use a retrieval measure (ndcg@10, recall@5, mrr, map, ...) or one of "
                f"{', '.join(known)}",
                source="metrics",
            ) from None


def _judge_names(config: EvalConfig) -> list[str]:
    """The judges of a run: those named in config.metrics, else every judge (retrieval_grade only
    when answers are not generated)."""
    from ragmeter.judges import JUDGES, check_judge_names

    if config.metrics:
        chosen = [m for m in config.metrics if m in JUDGES]
        if chosen:
            check_judge_names(chosen)
            return chosen
    return list(JUDGES) if config.evaluate_generation else ["retrieval_grade"]


def _relevant_rank(query: EvalQuery, hits: list[Retrieved]) -> int | None:
    relevant = {d for d, g in query.judgments().items() if g >= 1}
    for rank, hit in enumerate(hits, start=1):
        if hit.doc_id in relevant:
            return rank
    return None


def _err(stage: str, exc: BaseException) -> str:
    reason = getattr(exc, "reason", None) or str(exc) or type(exc).__name__
    return f"{stage} failed: {type(exc).__name__}: {reason}"[:2000]


async def _evaluate_query(
    query: EvalQuery,
    system: _SystemAdapter,
    judge: Any,
    judge_names: list[str],
    config: EvalConfig,
) -> QueryEvalResult:
    latency: dict[str, float] = {}
    t_start = time.perf_counter()
    result = QueryEvalResult(
        query_id=query.query_id, question=query.question, ground_truth_answer=query.ground_truth_answer
    )

    def failed(reason: str) -> QueryEvalResult:
        latency["total"] = (time.perf_counter() - t_start) * 1000
        return result.model_copy(update={"status": "failed", "error": reason, "latency_ms": latency})

    k = max(config.retrieval_top_k or [10])
    # a query may name docs it must not retrieve (citation prediction: the paper itself)
    excluded = set(query.metadata.get("exclude_doc_ids") or ())
    try:
        t = time.perf_counter()
        hits = await system.retrieve(query.question, k + len(excluded))
        hits = [h for h in hits if h.doc_id not in excluded][:k]
        latency["retrieve"] = (time.perf_counter() - t) * 1000
    except Exception as exc:
        return failed(_err("retrieve", exc))
    result.retrieved = [
        RetrievedDoc(doc_id=h.doc_id, score=h.score, rank=i, text=h.text) for i, h in enumerate(hits, 1)
    ]

    context_k = int(config.extra.get("context_k", CONTEXT_K))
    context_hits = list(hits[:context_k])
    contexts = [h.text for h in context_hits]
    answer: str | None = None
    if config.evaluate_generation:
        try:
            t = time.perf_counter()
            answer = await system.answer(query.question, context_hits)
            latency["generate"] = (time.perf_counter() - t) * 1000
        except Exception as exc:
            return failed(_err("generate", exc))
        result.answer = answer
        if answer is not None:
            from ragmeter.text import lexical_metrics

            t = time.perf_counter()
            result.metrics.update(
                lexical_metrics(answer, query.gold_answers(), question=query.question, contexts=contexts)
            )
            latency["lexical"] = (time.perf_counter() - t) * 1000

    if judge is not None and judge_names:
        from ragmeter.judges import run_judges

        t = time.perf_counter()
        try:
            graded = await run_judges(
                judge_names,
                question=query.question,
                answer=answer,
                contexts=contexts,
                ground_truth=query.ground_truth_answer,
                llm=judge,
                relevant_rank=_relevant_rank(query, hits),
                query_id=query.query_id,
            )
        except Exception as exc:  # a judge failure is a null metric, never a failed query
            graded = {n: MetricResult(name=n, value=None, error=_err("judge", exc)) for n in judge_names}
        result.metrics.update(graded)
        latency["judge"] = (time.perf_counter() - t) * 1000
    latency["total"] = (time.perf_counter() - t_start) * 1000
    result.latency_ms = latency
    return result


# ------------------------------------------------------------------------------------------ run-level metrics


def _judge_versions(config: EvalConfig, judge: Any) -> dict[str, str]:
    from ragmeter.judges import prompt_versions

    out = {f"prompt.{name}": version for name, version in prompt_versions(_judge_names(config)).items()}
    public = getattr(judge, "spec_public", None)
    if public is not None:
        out["judge"] = json.dumps(public, sort_keys=True, default=str)
    return out


def add_total_scores(per_query: list[QueryEvalResult]) -> dict[str, float | None]:
    """Per query `total_score` (retrieval grade x position weight) from the retrieval_grade judge, and
    the run's grade summary (averages, pass rates over all queries; a null grade does not pass)."""
    from ragmeter.models import MetricResult as MR

    graded = [r for r in per_query if r.status == "ok" and "retrieval_grade" in r.metrics]
    if not graded:
        return {}
    from ragmeter.judges import summarize_retrieval_grades

    for r in graded:
        grade = r.metrics["retrieval_grade"]
        total = grade.details.get("total_score") if grade.value is not None else None
        r.metrics["total_score"] = MR(
            name="total_score",
            value=None if total is None else float(total),
            error=None if total is not None else (grade.error or "no retrieval grade"),
        )
    return summarize_retrieval_grades([r.metrics["retrieval_grade"] for r in graded])


def retrieval_measures(config: EvalConfig) -> list[str]:
    ks = sorted(set(config.retrieval_top_k or [10]))
    names: list[str] = []
    for family in ("recall", "precision", "ndcg", "hit"):
        names += [f"{family}@{k}" for k in ks]
    names += ["mrr", "map"]
    if config.metrics:
        wanted = [m for m in config.metrics if "@" in m or m in ("mrr", "map", "rprec")]
        if wanted:
            names = wanted
    return names


def add_retrieval_metrics(
    per_query: list[QueryEvalResult], queries: list[EvalQuery], config: EvalConfig, notes: list[str]
) -> int:
    """Retrieval metrics of every successful query, computed at once by the IR engine. Returns the number
    of evaluated queries that have no relevant document (left out of the retrieval averages)."""
    from ragmeter.ir import Qrels, Run, evaluate

    by_id = {q.query_id: q for q in queries}
    ok = [r for r in per_query if r.status == "ok"]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    repeated = 0
    for r in ok:
        judged = by_id[r.query_id].judgments()
        if judged:
            qrels[r.query_id] = judged
        docs: dict[str, float] = {}
        for doc in r.retrieved:
            if doc.doc_id in docs:
                repeated += 1
                continue
            # the system's order is its ranking: ties or unsorted scores must not reorder it
            docs[doc.doc_id] = -float(doc.rank)
        if docs:
            run[r.query_id] = docs
    n_without = sum(
        1 for r in ok if not any(g >= config.relevance_level for g in by_id[r.query_id].judgments().values())
    )
    if repeated:
        notes.append(f"{repeated} repeated doc ids in retrieved lists: the first (highest-ranked) was kept")
    if not qrels:
        if ok:
            notes.append("no query has relevance judgments: retrieval metrics are not computed")
        return n_without
    measures = retrieval_measures(config)
    evaluation = evaluate(
        Qrels.from_dict(qrels), Run.from_dict(run), measures, relevance_level=config.relevance_level
    )
    per = evaluation.per_query
    for r in ok:
        values = per.get(r.query_id)
        if values is None:
            continue
        for name, value in values.items():
            r.metrics[name] = MetricResult(name=name, value=float(value))
    if n_without:
        notes.append(
            f"{n_without} queries have no relevant document: left out of the retrieval averages "
            "(a query the system answered with nothing scores 0)"
        )
    return n_without


def add_semantic_metrics(
    per_query: list[QueryEvalResult], queries: list[EvalQuery], config: EvalConfig, notes: list[str]
) -> None:
    """SBERT similarity of each answer to its gold answers, in one batch over the run (when installed)."""
    if config.metrics and SEMANTIC_METRIC not in config.metrics:
        return
    if config.extra.get("semantic") is False:
        return
    by_id = {q.query_id: q for q in queries}
    todo = [
        r
        for r in per_query
        if r.status == "ok"
        and r.answer is not None
        and by_id[r.query_id].gold_answers()
        and SEMANTIC_METRIC not in r.metrics
    ]
    if not todo:
        return
    try:
        from ragmeter import semantic
    except ImportError:
        notes.append("semantic similarity skipped: the 'semantic' extra is not installed")
        return
    if not semantic.available():
        notes.append("semantic similarity skipped: the 'semantic' extra is not installed")
        return
    values = semantic.sbert_similarity_batch(
        [r.answer or "" for r in todo], [by_id[r.query_id].gold_answers() for r in todo]
    )
    for r, value in zip(todo, values, strict=True):
        r.metrics[SEMANTIC_METRIC] = value.model_copy(update={"name": SEMANTIC_METRIC})


def aggregate_metrics(per_query: list[QueryEvalResult]) -> dict[str, MetricSummary]:
    """Mean, sample std (n-1), valid count, null count and a normal-approximation 95% CI per metric,
    over the successful queries that carry the metric."""
    values: dict[str, list[float | None]] = {}
    for r in per_query:
        if r.status != "ok":
            continue
        for name, metric in r.metrics.items():
            values.setdefault(name, []).append(metric.value)
    out: dict[str, MetricSummary] = {}
    for name in sorted(values, key=_metric_sort_key):
        valid = [v for v in values[name] if v is not None]
        n_null = len(values[name]) - len(valid)
        if not valid:
            out[name] = MetricSummary(mean=None, std=None, n=0, n_null=n_null)
            continue
        mean = math.fsum(valid) / len(valid)
        std = statistics.stdev(valid) if len(valid) > 1 else 0.0
        half = 1.96 * std / math.sqrt(len(valid))
        out[name] = MetricSummary(
            mean=mean, std=std, n=len(valid), n_null=n_null, ci95=(mean - half, mean + half)
        )
    return out


def _metric_sort_key(name: str) -> tuple[int, str, int]:
    family, _, k = name.partition("@")
    order = ["recall", "precision", "ndcg", "hit", "mrr", "map"]
    group = 0 if family in order else 1
    rank = order.index(family) if family in order else 99
    return (group, f"{rank:02d}{family}", int(k) if k.isdigit() else 0)


# ------------------------------------------------------------------------------------------ outputs


def csv_path_for(json_path: str | Path) -> Path:
    p = Path(json_path)
    return p.with_suffix(".csv") if p.suffix.lower() == ".json" else p.with_name(p.name + ".csv")


def write_json(result: EvalRunResult, path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(result.model_dump_json(indent=2) + "\n", encoding="utf-8")
    tmp.replace(p)
    return p


def write_csv(result: EvalRunResult, path: str | Path) -> Path:
    """One row per query, one column per metric (empty cell = null), then latency per stage."""
    names: dict[str, None] = {}
    stages: dict[str, None] = {}
    for r in result.per_query:
        names.update(dict.fromkeys(r.metrics))
        stages.update(dict.fromkeys(r.latency_ms))
    metric_cols = sorted(names, key=_metric_sort_key)
    header = ["query_id", "status", "error", "question", "answer", "ground_truth_answer", "retrieved"]
    header += metric_cols + [f"latency_{s}_ms" for s in stages]
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        for r in result.per_query:
            row: list[Any] = [
                r.query_id,
                r.status,
                r.error or "",
                r.question,
                r.answer or "",
                r.ground_truth_answer or "",
                " ".join(d.doc_id for d in r.retrieved),
            ]
            for name in metric_cols:
                m = r.metrics.get(name)
                row.append("" if m is None or m.value is None else repr(m.value))
            row += [f"{r.latency_ms[s]:.3f}" if s in r.latency_ms else "" for s in stages]
            writer.writerow(row)
    return p


# ------------------------------------------------------------------------------------------ progress


class _Progress:
    """A rich progress bar on stderr (done / failed / ETA); silent when disabled or not a terminal."""

    def __init__(self, total: int, done: int, failed: int, *, enabled: bool) -> None:
        self.total, self.done, self.failed = total, done, failed
        self._progress: Any = None
        self._task: Any = None
        if enabled:
            from rich.console import Console

            console = Console(stderr=True)
            if console.is_terminal:
                from rich.progress import (
                    BarColumn,
                    MofNCompleteColumn,
                    Progress,
                    TextColumn,
                    TimeElapsedColumn,
                    TimeRemainingColumn,
                )

                self._progress = Progress(
                    TextColumn("evaluating"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TextColumn("[red]{task.fields[failed]} failed"),
                    TimeElapsedColumn(),
                    TextColumn("ETA"),
                    TimeRemainingColumn(),
                    console=console,
                    transient=False,
                )
                self._task = self._progress.add_task("run", total=total, completed=done, failed=failed)

    def __enter__(self) -> _Progress:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def advance(self, *, failed: bool) -> None:
        self.done += 1
        self.failed += int(failed)
        if self._progress is not None:
            self._progress.update(self._task, advance=1, failed=self.failed)
