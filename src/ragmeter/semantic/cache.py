"""An embedding cache: one vector per (embedding space, text), in a SQLite file.

An embedding space is everything that changes a vector: the model, the backend (torch / onnx), its
precision, the maximum sequence length and whether vectors are normalised. Its key is a sha256 of those
fields; a text's key is the sha256 of its UTF-8 bytes. A second index of the same texts (another
chunking of the corpus, a resumed build, an ablation variant) therefore encodes only the texts it has
not seen in that space. The same fields go into the index fingerprint, the run record and the version of
`sbert_similarity`.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["EmbeddingCache", "EmbeddingSpace", "encode_cached", "text_key"]


@dataclass(frozen=True)
class EmbeddingSpace:
    model: str
    backend: str  # "torch" (sentence-transformers) or "onnx"
    precision: str  # "fp32" (torch or onnx) or "int8-block64" (onnx)
    max_seq_length: int | None
    normalize: bool = True

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def key(self) -> str:
        return hashlib.sha256(json.dumps(self.as_dict(), sort_keys=True).encode()).hexdigest()

    @property
    def tag(self) -> str:
        """A short human-readable form, e.g. for a metric version: `onnx-int8-block64-256-norm`."""
        norm = "norm" if self.normalize else "raw"
        return f"{self.backend}-{self.precision}-{self.max_seq_length}-{norm}"


def text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class EmbeddingCache:
    """Vectors by (space key, text sha256) in one SQLite file; safe to share between threads and runs."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=60)
        with self._db:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS vectors (space TEXT NOT NULL, text_sha256 BLOB NOT NULL, "
                "vector BLOB NOT NULL, PRIMARY KEY (space, text_sha256)) WITHOUT ROWID"
            )

    def get(self, space: EmbeddingSpace, keys: Sequence[bytes], dim: int) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                part = list(keys[start : start + 500])
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    f"SELECT text_sha256, vector FROM vectors WHERE space = ? AND text_sha256 IN ({marks})",
                    [space.key, *part],
                ).fetchall()
                for key, blob in rows:
                    vec = np.frombuffer(blob, dtype=np.float32)
                    if vec.shape[0] == dim:
                        found[bytes(key)] = vec
        return found

    def put(self, space: EmbeddingSpace, items: Sequence[tuple[bytes, np.ndarray]]) -> None:
        with self._lock, self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors (space, text_sha256, vector) VALUES (?, ?, ?)",
                [(space.key, key, np.asarray(v, dtype=np.float32).tobytes()) for key, v in items],
            )

    def count(self, space: EmbeddingSpace | None = None) -> int:
        with self._lock:
            if space is None:
                return int(self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])
            sql = "SELECT COUNT(*) FROM vectors WHERE space = ?"
            return int(self._db.execute(sql, (space.key,)).fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


def encode_cached(
    embedder: Any,
    texts: Sequence[str],
    space: EmbeddingSpace,
    cache: EmbeddingCache | None,
    *,
    batch_size: int = 32,
    progress: bool = False,
) -> tuple[np.ndarray, int]:
    """(vectors of `texts` as a float32 matrix, how many texts were encoded): texts already in `cache`
    for `space` are read back, the others are encoded once each (duplicates too) and stored."""
    get_dim = getattr(embedder, "get_embedding_dimension", None) or embedder.get_sentence_embedding_dimension
    dim = int(get_dim())
    out = np.zeros((len(texts), dim), dtype=np.float32)
    if not texts:
        return out, 0
    keys = [text_key(t) for t in texts]
    known = cache.get(space, list(dict.fromkeys(keys)), dim) if cache is not None else {}
    todo: dict[bytes, str] = {}
    for key, text in zip(keys, texts, strict=True):
        if key not in known:
            todo.setdefault(key, text)
    if todo:
        # Longest first: batches of similar length waste no padding, however the caller splits the work.
        items = sorted(todo.items(), key=lambda kv: -len(kv[1]))
        emb = embedder.encode(
            [t for _, t in items],
            batch_size=batch_size,
            normalize_embeddings=space.normalize,
            convert_to_numpy=True,
            show_progress_bar=progress,
        )
        new = {key: row for (key, _), row in zip(items, np.asarray(emb, dtype=np.float32), strict=True)}
        if cache is not None:
            cache.put(space, list(new.items()))
        known = {**known, **new}
    for row, key in enumerate(keys):
        out[row] = known[key]
    return out, len(todo)
