"""Deprecated location: chunking moved to `ragmeter.datasets.chunking` (ingesting a corpus chunks it too, and
datasets sit below systems). The old names still resolve here for one release, with a DeprecationWarning."""

from __future__ import annotations

from typing import Any

from ragmeter._lazy import moved

# old name -> the module that holds it now (looked up by name when an old name is used)
_MOVED: dict[str, str] = {
    "Chunk": "ragmeter.datasets.chunking",
    "chunk_documents": "ragmeter.datasets.chunking",
    "chunk_words": "ragmeter.datasets.chunking",
}


def __getattr__(name: str) -> Any:
    return moved(__name__, name, _MOVED)
