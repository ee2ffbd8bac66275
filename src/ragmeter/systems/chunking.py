"""Deprecated location: chunking moved to `ragmeter.datasets.chunking` (ingesting a corpus chunks it too, and
datasets sit below systems). The old names still resolve here for one release, with a DeprecationWarning."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

# old name -> the module that holds it now (looked up by name when an old name is used)
_MOVED: dict[str, str] = {
    "Chunk": "ragmeter.datasets.chunking",
    "chunk_documents": "ragmeter.datasets.chunking",
    "chunk_words": "ragmeter.datasets.chunking",
}


def __getattr__(name: str) -> Any:
    target = _MOVED.get(name)
    if target is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(f"{__name__}.{name} moved to {target}.{name}", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(target), name)
