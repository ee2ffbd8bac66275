"""Reading documents to ingest (text files, folders, JSONL corpora, datasets) and chunking them into a
store collection. Library code shared by `ragmeter ingest` and `ragmeter demo`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ragmeter.errors import InputError
from ragmeter.models import Document, EvalDataset

TEXT_SUFFIXES = {".txt", ".md", ".markdown", ".rst"}


def _text_document(path: Path, root: Path) -> Document:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", source=str(path)) from None
    rel = path.relative_to(root) if path != root else Path(path.name)
    title = next((ln.lstrip("#").strip() for ln in text.splitlines() if ln.strip()), path.stem)
    return Document(
        doc_id=rel.with_suffix("").as_posix(), text=text, title=title[:200], metadata={"path": str(rel)}
    )


def read_documents(paths: Sequence[str]) -> tuple[list[Document], EvalDataset | None]:
    """Documents from text files, folders of them, JSONL corpora, or a dataset (name or file)."""
    from ragmeter.datasets.native import read_corpus

    docs: list[Document] = []
    dataset: EvalDataset | None = None
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES)
            if not files:
                raise InputError(
                    f"no {', '.join(sorted(TEXT_SUFFIXES))} files in the folder", source=str(path)
                )
            docs += [_text_document(f, path) for f in files]
        elif path.is_file() and path.suffix.lower() in TEXT_SUFFIXES:
            docs.append(_text_document(path, path.parent))
        elif path.is_file() and path.suffix.lower() == ".jsonl" and _looks_like_corpus(path):
            docs += read_corpus(path)
        else:
            from ragmeter.datasets import load_dataset

            dataset = load_dataset(raw)
            if not dataset.corpus:
                raise InputError("the dataset has no corpus to ingest", source=raw)
            docs += dataset.corpus
    seen: set[str] = set()
    for d in docs:
        if d.doc_id in seen:
            raise InputError(f"document id {d.doc_id!r} appears twice in what is ingested", source=paths[0])
        seen.add(d.doc_id)
    return docs, dataset


def _looks_like_corpus(path: Path) -> bool:
    import json

    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                try:
                    first = json.loads(line)
                except json.JSONDecodeError:
                    return True  # read_corpus names the bad line
                return isinstance(first, dict) and "question" not in first
    return True


def ingest_documents(
    store: object, collection: str, docs: list[Document], *, chunk_size: int, chunk_overlap: int, source: str
) -> tuple[int, int]:
    from ragmeter.datasets.chunking import chunk_documents
    from ragmeter.store import ChunkRecord, Store

    assert isinstance(store, Store)
    if chunk_size < 1 or not 0 <= chunk_overlap < chunk_size:
        raise InputError("need --chunk-size >= 1 and 0 <= --chunk-overlap < --chunk-size", source="ingest")
    by_doc: dict[str, list[ChunkRecord]] = {d.doc_id: [] for d in docs}
    for n, chunk in enumerate(chunk_documents(docs, size=chunk_size, overlap=chunk_overlap)):
        position = int(chunk.chunk_id.rsplit("#", 1)[1]) if "#" in chunk.chunk_id else n
        by_doc[chunk.doc_id].append(ChunkRecord(chunk.chunk_id, chunk.text, position))
    return store.add_documents(collection, [(d, by_doc[d.doc_id]) for d in docs], source=source)
