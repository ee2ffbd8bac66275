"""Systems under test: the built-in pipeline and the user's own system (callable, HTTP, run file),
all behind one protocol (`retrieve(query, k)`, optional `answer(query, contexts)`, sync or async)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragmeter._lazy import by_module, lazy_getattr
from ragmeter.systems.base import Retrieved, System, aanswer, aretrieve, coerce_results, document_level

__all__ = [
    "CallableSystem",
    "HttpSystem",
    "Pipeline",
    "Retrieved",
    "RunFileSystem",
    "System",
    "aanswer",
    "aretrieve",
    "build_system",
    "coerce_results",
    "document_level",
    "from_haystack",
    "from_langchain",
    "from_llamaindex",
]

_LAZY = by_module(
    {
        "ragmeter.systems.build": ("build_system",),
        "ragmeter.systems.pipeline": ("Pipeline",),
        "ragmeter.systems.external": ("CallableSystem", "HttpSystem", "RunFileSystem"),
        "ragmeter.systems.adapters": ("from_langchain", "from_llamaindex", "from_haystack"),
    }
)

if TYPE_CHECKING:
    from ragmeter.systems.adapters import from_haystack, from_langchain, from_llamaindex
    from ragmeter.systems.build import build_system
    from ragmeter.systems.external import CallableSystem, HttpSystem, RunFileSystem
    from ragmeter.systems.pipeline import Pipeline


__getattr__ = lazy_getattr(__name__, _LAZY, globals())
