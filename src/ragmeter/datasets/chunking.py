"""Chunking by tokens with overlap. Tokens are whitespace-separated words: model-independent, so the
same chunks feed BM25 and the dense encoder. Chunk ids are `doc_id#n` (n from 0), stable for a given
document text and chunking settings."""

from __future__ import annotations

from dataclasses import dataclass

from ragmeter.models import Document


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    doc_id: str
    text: str  # the chunk's words, without the title
    title: str = ""

    @property
    def indexed_text(self) -> str:
        """What is indexed: the title (when any) then the chunk."""
        return f"{self.title}\n{self.text}" if self.title else self.text


def chunk_words(words: list[str], size: int, overlap: int) -> list[list[str]]:
    """Windows of `size` words, each starting `size - overlap` after the previous; the last window
    ends at the last word (no tiny trailing chunk made only of overlap)."""
    if size < 1:
        raise ValueError("chunk size must be >= 1")
    if not 0 <= overlap < size:
        raise ValueError("chunk overlap must be >= 0 and smaller than the chunk size")
    if len(words) <= size:
        return [words]
    step = size - overlap
    out = []
    start = 0
    while True:
        out.append(words[start : start + size])
        if start + size >= len(words):
            break
        start += step
    return out


def chunk_documents(
    docs: list[Document], *, size: int = 200, overlap: int = 40, enabled: bool = True
) -> list[Chunk]:
    """Chunks of every document; with `enabled=False` each document is one chunk `doc_id#0`."""
    chunks: list[Chunk] = []
    for doc in docs:
        if not enabled:
            chunks.append(Chunk(f"{doc.doc_id}#0", doc.doc_id, doc.text, doc.title))
            continue
        for n, window in enumerate(chunk_words(doc.text.split(), size, overlap)):
            chunks.append(Chunk(f"{doc.doc_id}#{n}", doc.doc_id, " ".join(window), doc.title))
    return chunks
