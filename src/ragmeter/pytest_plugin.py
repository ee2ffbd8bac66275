"""pytest plugin: evaluate a RAG system (or load a stored run) inside a test and assert on its metrics.

Registered through the `pytest11` entry point, so installing ragmeter is enough:

    def test_retrieval(ragmeter_eval):
        run = ragmeter_eval.evaluate(my_system, "capitals.json", retrieval_top_k=[1, 5, 10])
        run.assert_metric("ndcg@10", 0.6)                 # direction from the metric registry
        run.assert_metrics({"recall@5": 0.8, "hallucination_rate": 0.1})

A failed assertion names the metric, its mean and interval, the threshold and the worst queries with their
values. Options: `--ragmeter-db URL` (store of the runs; `none` stores nothing; default $RAGMETER_DB, else
.ragmeter/ragmeter.db) and `--ragmeter-judge MODEL` (judge LLM for evaluations that set none).

With pytest-xdist each worker writes to its own SQLite file (`ragmeter.db` -> `ragmeter-gw0.db`, ...), since
SQLite files are not shared between processes that create them at once; a PostgreSQL URL is shared by all
workers as it is. `load(run_id)` looks in the worker's store, then in the configured one.

This module is imported at every pytest start-up: it imports pytest and nothing heavy (no numpy, pydantic,
SQLAlchemy or torch); the rest of ragmeter is imported when a fixture or helper is used.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ragmeter.ir.evaluate import IREvaluation
    from ragmeter.models import EvalConfig, EvalDataset, EvalRunResult

__all__ = ["EvalRun", "RagmeterSession", "assert_metric", "assert_metrics", "worker_db_url"]

WORST = 5  # queries listed in a failure message
NO_STORE = "none"


# ------------------------------------------------------------------------------------------ options


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ragmeter", "ragmeter: evaluate RAG systems in tests")
    group.addoption(
        "--ragmeter-db",
        metavar="URL",
        default=None,
        help="Store of the runs the ragmeter_eval fixture makes and loads: a SQLite path or URL, "
        "postgresql://..., or 'none' (default: $RAGMETER_DB, else .ragmeter/ragmeter.db). "
        "Under xdist a SQLite store becomes one file per worker.",
    )
    group.addoption(
        "--ragmeter-judge",
        metavar="MODEL",
        default=None,
        help="Judge LLM for evaluations that set none: local, openai:MODEL, anthropic:MODEL, MODEL@URL.",
    )


def pytest_report_header(config: pytest.Config) -> str | None:
    db, judge = config.getoption("ragmeter_db"), config.getoption("ragmeter_judge")
    if db is None and judge is None:
        return None
    return f"ragmeter: db={db or '(default)'} judge={judge or '(none)'}"


def pytest_configure(config: pytest.Config) -> None:
    """Under xdist, migrate a shared (non-SQLite) store once in the controller, before the workers start:
    workers opening a fresh database at the same moment would each try to create its tables."""
    if os.environ.get("PYTEST_XDIST_WORKER") or not getattr(config.option, "numprocesses", None):
        return
    url = config.getoption("ragmeter_db") or os.environ.get("RAGMETER_DB")
    if url and "://" in url and not url.startswith("sqlite") and url.lower() != NO_STORE:
        from ragmeter.store import open_store

        open_store(url).close()


def worker_db_url(url: str | None, worker: str | None) -> str | None:
    """The store an xdist worker writes to: a SQLite file gets the worker id in its name
    (`runs.db` -> `runs-gw1.db`); other URLs, and no worker, are returned as they are."""
    if url is None or url.lower() == NO_STORE or not worker:
        return url
    prefix = ""
    if url.startswith("sqlite:///"):
        prefix, url = "sqlite:///", url[len("sqlite:///") :]
    elif "://" in url:
        return url  # PostgreSQL and the like: one shared store
    if url in ("", ":memory:"):
        return prefix + url
    path = Path(url)
    return prefix + str(path.with_name(f"{path.stem}-{worker}{path.suffix}"))


# ------------------------------------------------------------------------------------------ assertions


def _mean_and_values(
    result: EvalRunResult | IREvaluation, metric: str
) -> tuple[float | None, dict[str, float | None], str]:
    """The mean, the per-query values and a one-line description of how the mean was made."""
    from ragmeter.ir.evaluate import IREvaluation

    if isinstance(result, IREvaluation):
        if metric not in result.aggregate:
            raise AssertionError(
                f"ragmeter: no measure {metric!r}; evaluated: {', '.join(result.measure_names)}"
            )
        values: dict[str, float | None] = {q: row[metric] for q, row in result.per_query.items()}
        return result.aggregate[metric], values, f"mean over {result.n_queries} queries"
    summary = result.aggregate.get(metric)
    if summary is None:
        have = ", ".join(result.aggregate) or "none"
        raise AssertionError(f"ragmeter: no metric {metric!r} in run {result.run_id}; it has: {have}")
    values = {q.query_id: q.metrics[metric].value for q in result.per_query if metric in q.metrics}
    how = f"mean over {summary.n} values"
    if summary.n_null:
        how += f" ({summary.n_null} null left out)"
    if summary.ci95 is not None:
        lo, hi = summary.ci95
        how += f", 95% CI [{lo:.4f}, {hi:.4f}]" + (f" ({summary.ci_method})" if summary.ci_method else "")
    return summary.mean, values, how


def _describe_run(result: EvalRunResult | IREvaluation) -> str:
    from ragmeter.ir.evaluate import IREvaluation

    if isinstance(result, IREvaluation):
        return "ragmeter.evaluate(qrels, run)"
    cfg = result.config
    return f"run {result.run_id or '(not stored)'} dataset={cfg.dataset} system={cfg.system}"


def _worst_lines(
    result: EvalRunResult | IREvaluation,
    metric: str,
    values: Mapping[str, float | None],
    higher_is_better: bool,
    n: int,
) -> list[str]:
    """The `n` worst queries, null values first (with their reason), then by value, with the question."""
    from ragmeter.ir.evaluate import IREvaluation

    questions: dict[str, str] = {}
    errors: dict[str, str] = {}
    if not isinstance(result, IREvaluation):
        for q in result.per_query:
            questions[q.query_id] = q.question
            m = q.metrics.get(metric)
            if m is not None and m.error:
                errors[q.query_id] = m.error
    nulls = [q for q, v in values.items() if v is None]
    scored = sorted(
        ((q, v) for q, v in values.items() if v is not None),
        key=lambda qv: qv[1],
        reverse=not higher_is_better,
    )
    width = max((len(q) for q in values), default=0)
    lines = []
    for qid in nulls[:n]:
        lines.append(f"    {qid:<{width}}  null    {errors.get(qid) or ''}".rstrip())
    for qid, value in scored[: max(0, n - len(nulls))]:
        text = " ".join(questions.get(qid, "").split())
        text = text if len(text) <= 70 else text[:69] + "…"
        lines.append(f"    {qid:<{width}}  {value:.4f}  {text}".rstrip())
    return lines


def _check(
    result: EvalRunResult | IREvaluation,
    metric: str,
    threshold: float | None,
    at_least: float | None,
    at_most: float | None,
    worst: int,
) -> str | None:
    """None when `metric` meets its bounds, else the failure message."""
    from ragmeter.metrics import higher_is_better
    from ragmeter.report.junit import falls_short

    if threshold is not None:
        if at_least is not None or at_most is not None:
            raise TypeError("give a threshold, or at_least/at_most, not both")
        if higher_is_better(metric):
            at_least = threshold
        else:
            at_most = threshold
    if at_least is None and at_most is None:
        raise TypeError(f"assert_metric({metric!r}): give a threshold, at_least or at_most")
    mean, values, how = _mean_and_values(result, metric)
    bounds = [(b, hib) for b, hib in ((at_least, True), (at_most, False)) if b is not None]
    failed = [(b, hib) for b, hib in bounds if falls_short(mean, b, hib)]
    if not failed:
        return None
    bound, hib = failed[0]
    shown = "null (no valid value)" if mean is None else f"{mean:.4f}"
    wanted = f"at least {bound:g}" if hib else f"at most {bound:g}"
    lines = [f"{metric} = {shown}, wanted {wanted}", f"  {_describe_run(result)}: {how}"]
    worst_lines = _worst_lines(result, metric, values, hib, worst)
    if worst_lines:
        lines.append(f"  worst {len(worst_lines)} of {len(values)} queries:")
        lines += worst_lines
    return "\n".join(lines)


def _unwrap(result: EvalRun | EvalRunResult | IREvaluation) -> EvalRunResult | IREvaluation:
    return result.result if isinstance(result, EvalRun) else result


def assert_metric(
    result: EvalRun | EvalRunResult | IREvaluation,
    metric: str,
    threshold: float | None = None,
    *,
    at_least: float | None = None,
    at_most: float | None = None,
    worst: int = WORST,
) -> None:
    """Assert that the mean of `metric` meets `threshold` (at least it, or at most it when the metric
    registry says lower is better), or explicit `at_least` / `at_most` bounds. A mean with no valid value
    fails. The failure lists the mean, its interval, the threshold and the `worst` queries."""
    __tracebackhide__ = True
    message = _check(_unwrap(result), metric, threshold, at_least, at_most, worst)
    if message is not None:
        raise AssertionError("ragmeter: " + message)


def assert_metrics(
    result: EvalRun | EvalRunResult | IREvaluation, thresholds: Mapping[str, float], *, worst: int = WORST
) -> None:
    """`assert_metric` for each METRIC: THRESHOLD; one failure lists every metric that fell short."""
    __tracebackhide__ = True
    inner = _unwrap(result)
    failures = [m for m in (_check(inner, k, v, None, None, worst) for k, v in thresholds.items()) if m]
    if failures:
        head = f"ragmeter: {len(failures)} of {len(thresholds)} metrics fell short\n"
        raise AssertionError(head + "\n".join(failures))


# ------------------------------------------------------------------------------------------ the fixture


class EvalRun:
    """A run (or an IR evaluation) under test: its result and the assertion helpers bound to it."""

    def __init__(self, result: EvalRunResult | IREvaluation) -> None:
        self.result = result

    @property
    def run_id(self) -> str | None:
        return getattr(self.result, "run_id", None)

    def mean(self, metric: str) -> float | None:
        return _mean_and_values(self.result, metric)[0]

    def values(self, metric: str) -> dict[str, float | None]:
        """query id -> value of `metric` (None where it is null)."""
        return _mean_and_values(self.result, metric)[1]

    # The module's helpers, bound: `run.assert_metric(...)` is `assert_metric(run, ...)`.
    assert_metric = assert_metric
    assert_metrics = assert_metrics


def _in_thread_if_loop_running(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """run_evaluation starts its own event loop; inside an async test, give it a thread of its own."""
    import asyncio
    import concurrent.futures

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return fn(*args, **kwargs)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(fn, *args, **kwargs).result()


class RagmeterSession:
    """What the `ragmeter_eval` fixture gives a test: evaluate, load and assert, with the session's store
    (`db`, None for the default, `none` for no store) and judge."""

    def __init__(self, db: str | None = None, judge: str | None = None, worker: str | None = None) -> None:
        self.base_db = db
        self.db = worker_db_url(db, worker) if db is not None else self._default_worker_db(worker)
        self.judge = judge

    @staticmethod
    def _default_worker_db(worker: str | None) -> str | None:
        if not worker:
            return None  # the store's own default ($RAGMETER_DB, else .ragmeter/ragmeter.db)
        from ragmeter.store.engine import resolve_url

        return worker_db_url(resolve_url(None), worker)

    @property
    def stores(self) -> bool:
        return (self.db or "").lower() != NO_STORE

    def config(self, config: EvalConfig | Mapping[str, Any] | None = None, **fields: Any) -> EvalConfig:
        """An EvalConfig from `config` and `fields`, with the session's judge when it sets none."""
        from ragmeter.models import EvalConfig

        data = dict(config.model_dump() if isinstance(config, EvalConfig) else (config or {}))
        data.update(fields)
        if self.judge and not data.get("judge_model") and data.get("use_llm_judge", True):
            data["judge_model"] = self.judge
            data["use_llm_judge"] = True
        return EvalConfig.model_validate(data)

    def evaluate(
        self,
        system: Any,
        dataset: EvalDataset | str,
        config: EvalConfig | Mapping[str, Any] | None = None,
        *,
        name: str = "",
        **fields: Any,
    ) -> EvalRun:
        """Run `ragmeter.run_evaluation` (stored in the session's store) and wrap the result.

        `system`: a System, a callable fn(question, k), or a spec string ("builtin", "module:attr",
        an http(s) URL, a run file). `fields` are EvalConfig fields (retrieval_top_k, metrics, limit, ...).
        """
        import ragmeter

        store: str | bool | None = self.db if self.stores else False
        cfg = self.config(config, **fields)
        result = _in_thread_if_loop_running(
            ragmeter.run_evaluation, dataset, system, cfg, store=store, name=name, progress=False
        )
        return EvalRun(result)

    def evaluate_files(
        self, qrels: Any, run: Any, measures: list[str] | None = None, **options: Any
    ) -> EvalRun:
        """`ragmeter.evaluate` on a qrels and a run (paths or Qrels/Run objects): trec_eval-exact measures."""
        import ragmeter

        qrels = ragmeter.Qrels.read(qrels) if isinstance(qrels, str | Path) else qrels
        run = ragmeter.Run.read(run) if isinstance(run, str | Path) else run
        return EvalRun(ragmeter.evaluate(qrels, run, measures, **options))

    def load(self, run_id: str) -> EvalRun:
        """A stored run (id or unique prefix) from the worker's store, else from the configured one."""
        from ragmeter.errors import InputError
        from ragmeter.store import open_store

        if not self.stores:
            raise pytest.UsageError("--ragmeter-db none: there is no store to load runs from")
        if self.db != self.base_db:  # an xdist worker: its own runs first
            with open_store(self.db) as store, contextlib.suppress(InputError):
                return EvalRun(store.get_run(run_id))
        with open_store(self.base_db) as store:
            return EvalRun(store.get_run(run_id))

    def load_json(self, path: str | Path) -> EvalRun:
        """A run from its JSON file (`ragmeter run -o FILE.json`, or the store's export)."""
        from ragmeter.report.export import load_run_json

        return EvalRun(load_run_json(path))


@pytest.fixture(scope="session")
def ragmeter_session(request: pytest.FixtureRequest) -> RagmeterSession:
    """The session-wide ragmeter helper (store and judge from --ragmeter-db / --ragmeter-judge)."""
    config = request.config
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return RagmeterSession(config.getoption("ragmeter_db"), config.getoption("ragmeter_judge"), worker)


@pytest.fixture
def ragmeter_eval(ragmeter_session: RagmeterSession) -> RagmeterSession:
    """Evaluate a system or load a stored run, then assert on its metrics (see ragmeter.pytest_plugin)."""
    return ragmeter_session
