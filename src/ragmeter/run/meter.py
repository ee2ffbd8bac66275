"""Deprecated location: per-query LLM usage metering moved to `ragmeter.llm.meter` (a system's generator and
the judges use it too, and they sit below the run loop). The old names still resolve here for one release,
with a DeprecationWarning naming the new place."""

from __future__ import annotations

from typing import Any

from ragmeter._lazy import moved

# old name -> the module that holds it now (looked up by name when an old name is used)
_MOVED: dict[str, str] = {
    "MeteredLLM": "ragmeter.llm.meter",
    "query_usage": "ragmeter.llm.meter",
}


def __getattr__(name: str) -> Any:
    return moved(__name__, name, _MOVED)
