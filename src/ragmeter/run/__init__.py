"""Running an evaluation: the run record, validation, the per-query loop, executors, resume.

    from ragmeter.run import run_evaluation, validate
    prepared = validate("capitals.json", "builtin", config)     # raises InputError, stores nothing
    result = run_evaluation("capitals.json", "builtin", config) # stored, resumable with --resume RUN_ID

Scoring of stored outputs lives in ragmeter.score.
"""

from __future__ import annotations

from ragmeter._lazy import lazy_getattr

_LAZY = {
    "RunRecord": "ragmeter.run.record",
    "SystemRef": "ragmeter.run.record",
    "object_fingerprint": "ragmeter.run.record",
    "validate": "ragmeter.run.prepare",
    "Prepared": "ragmeter.run.prepare",
    "dataset_hash": "ragmeter.run.prepare",
    "sample_queries": "ragmeter.run.prepare",
    "RunOptions": "ragmeter.run.api",
    "run_evaluation": "ragmeter.run.api",
    "arun_evaluation": "ragmeter.run.api",
    "package_versions": "ragmeter.run.api",
    "Executor": "ragmeter.run.executor",
    "LocalExecutor": "ragmeter.run.executor",
    "QueryWorker": "ragmeter.run.loop",
    "load_config": "ragmeter.run.config",
    "resolve_dataset": "ragmeter.run.rebuild",
}

__all__ = sorted(_LAZY)


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
