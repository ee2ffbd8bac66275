"""Deprecated location (0.1 names): the run loop moved to `ragmeter.run` and scoring to `ragmeter.score`.
The old names still resolve here for one release, with a DeprecationWarning naming the new place."""

from __future__ import annotations

from typing import Any

from ragmeter._lazy import moved

# old name -> the module that holds it now (looked up by name when an old name is used)
_MOVED: dict[str, str] = {
    "CONTEXT_K": "ragmeter.records",
    "RunOptions": "ragmeter.run.api",
    "arun_evaluation": "ragmeter.run.api",
    "package_versions": "ragmeter.run.api",
    "run_evaluation": "ragmeter.run.api",
    "load_config": "ragmeter.run.config",
    "dataset_hash": "ragmeter.datasets.resolve",
    "resolve_dataset": "ragmeter.datasets.resolve",
    "sample_queries": "ragmeter.run.prepare",
    "aggregate_metrics": "ragmeter.score.aggregate",
    "csv_path_for": "ragmeter.score.writers",
    "write_csv": "ragmeter.score.writers",
    "write_json": "ragmeter.score.writers",
}


def __getattr__(name: str) -> Any:
    return moved(__name__, name, _MOVED)
