"""Building a run's parts from its record moved to `ragmeter.run.rebuild` (the one place that does it, for
a run, `--resume`, Ray workers and `rescore`); these names are re-exported from there."""

from __future__ import annotations

from ragmeter.run.rebuild import (
    LLM_CACHE,
    SystemAdapter,
    build_system,
    check_llm_spec,
    check_system,
    make_llm,
    resolve_dataset,
)

__all__ = [
    "LLM_CACHE",
    "SystemAdapter",
    "build_system",
    "check_llm_spec",
    "check_system",
    "make_llm",
    "resolve_dataset",
]
