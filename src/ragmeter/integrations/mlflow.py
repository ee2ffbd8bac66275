"""Log a ragmeter run to MLflow: parameters, aggregate metrics with their intervals, usage and cost, and
the run's files as artifacts.

MLflow is imported only here, when a run is logged (extra `mlflow`: mlflow-skinny plus the SQLAlchemy and
Alembic that its SQLite store needs). Where the run goes: the URI given, else MLflow's own default
($MLFLOW_TRACKING_URI, else `sqlite:///mlflow.db` in the working directory as of MLflow 3.x), all offline
without a server. A `file:` URI or a plain folder is MLflow's file store, which MLflow 3 keeps only behind
MLFLOW_ALLOW_FILE_STORE; naming one explicitly opts in for the duration of the call.

Names: MLflow metric keys allow letters, digits and `_-. /:` only, so `ndcg@10` is logged as `ndcg_at_10`
(`metric_key`); the interval is `ndcg_at_10.ci_lo` / `ndcg_at_10.ci_hi`; the original name is kept in the
tag `ragmeter.metric.<key>`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter.errors import MissingExtraError
from ragmeter.result_models import as_json

if TYPE_CHECKING:
    from ragmeter.models import EvalRunResult

__all__ = [
    "DEFAULT_EXPERIMENT",
    "LoggedRun",
    "log_run",
    "metric_key",
    "require_mlflow",
    "run_metrics",
    "run_params",
]

DEFAULT_EXPERIMENT = "ragmeter"
# Older tracking servers cap a parameter value at 500 characters (MLflow 3: 6000); stay under both.
MAX_PARAM_CHARS = 500
_BATCH = 100  # MLflow's limit on params + tags per log_batch call (and well under its 1000 metrics)
_INVALID_KEY = re.compile(r"[^\w\-. /:]")


@dataclass(frozen=True)
class LoggedRun:
    """Where a ragmeter run went in MLflow."""

    run_id: str
    experiment: str
    experiment_id: str
    tracking_uri: str


def metric_key(name: str) -> str:
    """An MLflow-valid key for a ragmeter metric name: `ndcg@10` -> `ndcg_at_10`."""
    return _INVALID_KEY.sub("_", name.replace("@", "_at_"))


def _param_text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= MAX_PARAM_CHARS else text[: MAX_PARAM_CHARS - 1] + "…"


def run_params(result: EvalRunResult) -> dict[str, str]:
    """The run's config (secret-free, as stored), its identity and package versions, as MLflow params."""
    config = result.config.model_dump(mode="json")
    params = {key: _param_text(value) for key, value in config.items() if value not in (None, {}, [])}
    params["ragmeter_run_id"] = result.run_id or ""
    params["dataset_hash"] = result.dataset_hash or ""
    params["n_queries"] = str(result.n_queries)
    for package, version in result.versions.items():
        params[f"version.{metric_key(package)}"] = _param_text(version)
    return {key: value for key, value in params.items() if value != ""}


def _usage_metrics(usage: Mapping[str, Any], prefix: str = "usage") -> dict[str, float]:
    """Numeric leaves of the run's usage block: usage.total.cost_usd, usage.judge.input_tokens, ..."""
    out: dict[str, float] = {}
    for key, value in usage.items():
        name = f"{prefix}.{metric_key(str(key))}"
        if isinstance(value, Mapping):
            out.update(_usage_metrics(value, name))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out[name] = float(value)
    return out


def run_metrics(result: EvalRunResult) -> dict[str, float]:
    """Each aggregate's mean (and std, n, ci_lo/ci_hi when known), the run's counts, usage and cost."""
    out: dict[str, float] = {"n_queries": float(result.n_queries), "n_failed": float(result.n_failed)}
    for name, summary in result.aggregate.items():
        key = metric_key(name)
        if summary.mean is not None:
            out[key] = summary.mean
        if summary.std is not None:
            out[f"{key}.std"] = summary.std
        out[f"{key}.n"] = float(summary.n)
        if summary.n_null:
            out[f"{key}.n_null"] = float(summary.n_null)
        if summary.ci95 is not None:
            out[f"{key}.ci_lo"], out[f"{key}.ci_hi"] = summary.ci95
    if result.usage:
        out.update(_usage_metrics(as_json(result.usage) or {}))
    return out


def _tags(result: EvalRunResult) -> dict[str, str]:
    tags = {
        "ragmeter.run_id": result.run_id or "",
        "ragmeter.status": result.status,
        "ragmeter.dataset": result.config.dataset,
        "ragmeter.system": result.config.system,
    }
    for name in result.aggregate:
        if metric_key(name) != name:
            tags[f"ragmeter.metric.{metric_key(name)}"] = name
    return {key: value for key, value in tags.items() if value}


def _is_file_store(uri: str) -> bool:
    return uri.startswith("file:") or "://" not in uri


@contextlib.contextmanager
def _allow_file_store(uri: str) -> Iterator[None]:
    """MLflow 3 refuses its file store unless MLFLOW_ALLOW_FILE_STORE is set; a user who names one means it."""
    if not _is_file_store(uri) or "MLFLOW_ALLOW_FILE_STORE" in os.environ:
        yield
        return
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    try:
        yield
    finally:
        os.environ.pop("MLFLOW_ALLOW_FILE_STORE", None)


def require_mlflow() -> None:
    """Fail before any work when MLflow is not installed (a MissingExtraError naming the extra)."""
    _import_mlflow()


def _import_mlflow() -> Any:
    try:
        import mlflow
    except ImportError as exc:
        raise MissingExtraError("mlflow", "logging runs to MLflow") from exc
    return mlflow


def _chunks(items: Sequence[Any], size: int = _BATCH) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def log_run(
    result: EvalRunResult,
    *,
    tracking_uri: str | None = None,
    experiment: str | None = None,
    run_name: str | None = None,
    artifacts: Sequence[str | Path] = (),
) -> LoggedRun:
    """Log `result` as one MLflow run (finished, or failed when the ragmeter run failed).

    `artifacts`: files to attach (the run's JSON and CSV, an HTML report); when none are given the
    run's JSON is written to a temporary folder and attached, so the run is never logged without it.
    """
    mlflow = _import_mlflow()
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.tracking import MlflowClient

    uri = tracking_uri or mlflow.get_tracking_uri()
    name = experiment or os.environ.get("MLFLOW_EXPERIMENT_NAME") or DEFAULT_EXPERIMENT
    with _allow_file_store(uri):
        client = MlflowClient(tracking_uri=uri)
        found = client.get_experiment_by_name(name)
        experiment_id = found.experiment_id if found is not None else client.create_experiment(name)
        run = client.create_run(experiment_id, run_name=run_name or result.name or result.run_id or None)
        run_id = run.info.run_id
        now = int(time.time() * 1000)
        params = [Param(k, v) for k, v in run_params(result).items()]
        tags = [RunTag(k, v) for k, v in _tags(result).items()]
        metrics = [Metric(k, v, now, 0) for k, v in run_metrics(result).items()]
        for batch in _chunks([*params, *tags]):
            client.log_batch(
                run_id,
                params=[p for p in batch if isinstance(p, Param)],
                tags=[t for t in batch if isinstance(t, RunTag)],
            )
        for batch in _chunks(metrics, 1000):
            client.log_batch(run_id, metrics=batch)
        _log_files(client, run_id, result, artifacts)
        client.set_terminated(run_id, status="FINISHED" if result.status == "completed" else "FAILED")
    return LoggedRun(run_id, name, experiment_id, uri)


def _log_files(client: Any, run_id: str, result: EvalRunResult, artifacts: Sequence[str | Path]) -> None:
    if artifacts:
        for path in artifacts:
            client.log_artifact(run_id, str(path))
        return
    with tempfile.TemporaryDirectory(prefix="ragmeter-mlflow-") as tmp:
        path = Path(tmp) / f"{result.run_id or 'run'}.json"
        path.write_text(result.model_dump_json(indent=2), encoding="utf-8")
        client.log_artifact(run_id, str(path))
