"""Deprecated location: building a run's parts from its record moved to `ragmeter.run.rebuild`, and resolving a
dataset by name to `ragmeter.datasets.resolve`. The old names still resolve here for one release, with a
DeprecationWarning naming the new place."""

from __future__ import annotations

from typing import Any

from ragmeter._lazy import moved

# old name -> the module that holds it now (looked up by name when an old name is used)
_MOVED: dict[str, str] = {
    "LLM_CACHE": "ragmeter.run.rebuild",
    "SystemAdapter": "ragmeter.run.rebuild",
    "build_system": "ragmeter.run.rebuild",
    "check_llm_spec": "ragmeter.run.rebuild",
    "check_system": "ragmeter.run.rebuild",
    "make_llm": "ragmeter.run.rebuild",
    "resolve_dataset": "ragmeter.datasets.resolve",
}


def __getattr__(name: str) -> Any:
    return moved(__name__, name, _MOVED)
