"""Running an evaluation: the run record, validation, the per-query loop, executors, resume.

    from ragmeter.run import run_evaluation, validate
    prepared = validate("capitals.json", "builtin", config)     # raises InputError, stores nothing
    result = run_evaluation("capitals.json", "builtin", config) # stored, resumable with --resume RUN_ID

Scoring of stored outputs lives in ragmeter.score.
"""

from __future__ import annotations

from ragmeter._lazy import by_module, lazy_getattr

_LAZY = by_module(
    {
        "ragmeter.records": ("RunRecord", "SystemRef", "object_fingerprint"),
        "ragmeter.run.refs": ("system_ref",),
        "ragmeter.run.prepare": ("validate", "Prepared", "sample_queries"),
        "ragmeter.datasets.resolve": ("dataset_hash", "resolve_dataset"),  # their home; names kept here
        "ragmeter.run.api": (
            "RunOptions",
            "run_evaluation",
            "arun_evaluation",
            "prepare_run",
            "run_prepared",
            "arun_prepared",
            "package_versions",
        ),
        "ragmeter.run.executor": ("Executor", "LocalExecutor"),
        "ragmeter.run.loop": ("QueryWorker",),
        "ragmeter.run.config": ("load_config",),
    }
)

__all__ = sorted(_LAZY)


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
