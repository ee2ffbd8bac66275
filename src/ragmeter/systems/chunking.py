"""Chunking moved to `ragmeter.datasets.chunking` (ingesting a corpus chunks it too, and datasets sit below
systems); these names are re-exported from there."""

from __future__ import annotations

from ragmeter.datasets.chunking import Chunk, chunk_documents, chunk_words

__all__ = ["Chunk", "chunk_documents", "chunk_words"]
