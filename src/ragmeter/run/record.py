"""Deprecated location: the run record moved to `ragmeter.records` (a boundary record, below every layer that
reads it) and `system_ref` to `ragmeter.run.refs`. The old names still resolve here for one release, with a
DeprecationWarning naming the new place."""

from __future__ import annotations

from typing import Any

from ragmeter._lazy import moved

# old name -> the module that holds it now (looked up by name when an old name is used)
_MOVED: dict[str, str] = {
    "CONTEXT_K": "ragmeter.records",
    "RECORD_SCHEMA_VERSION": "ragmeter.records",
    "DatasetRef": "ragmeter.records",
    "LLMRef": "ragmeter.records",
    "RunRecord": "ragmeter.records",
    "SystemKind": "ragmeter.records",
    "SystemRef": "ragmeter.records",
    "canonical_json": "ragmeter.records",
    "llm_ref": "ragmeter.records",
    "object_fingerprint": "ragmeter.records",
    "object_ref": "ragmeter.records",
    "reference_ref": "ragmeter.records",
    "sha256": "ragmeter.records",
    "embedding_of": "ragmeter.run.refs",
    "system_ref": "ragmeter.run.refs",
}


def __getattr__(name: str) -> Any:
    return moved(__name__, name, _MOVED)
