"""Dense index building on Ray Data: the chunks' embeddings computed with `map_batches`, the embedder loaded
once per worker (on a GPU where the worker has one), written as the SAME index files as the local build
(embeddings.npy, chunk_ids.json, meta.json with the same fingerprint), so the built-in pipeline then loads
them as if it had built them itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.distributed.cluster import ensure_ray


class _Embed:
    """A Ray Data callable class: one embedder per worker process, reused for every batch."""

    def __init__(self, model_name: str, batch_size: int) -> None:
        from ragmeter.systems.indexes import DenseIndex

        self.index = DenseIndex(model_name, batch_size=batch_size)
        self.index._encode(["warm up"])  # load the model now, once, not inside the first batch

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        emb = self.index._encode([str(t) for t in batch["text"]])
        return {"i": batch["i"], "emb": list(emb)}


def embed_on_ray(
    texts: list[str],
    *,
    model: str | None = None,
    batch_size: int = 32,
    rows_per_task: int = 512,
    workers: int | None = None,
    gpus_per_worker: float = 0.0,
    address: str | None = None,
) -> np.ndarray:
    """Normalised float32 embeddings of `texts` (row i = texts[i]) computed on Ray Data."""
    ray = ensure_ray(address)
    from ragmeter.systems.indexes import DEFAULT_MODEL

    name = model or DEFAULT_MODEL
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    ds = ray.data.from_items([{"i": i, "text": t} for i, t in enumerate(texts)])
    n_workers = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    out = ds.map_batches(
        _Embed,
        fn_constructor_args=(name, batch_size),
        batch_size=rows_per_task,
        concurrency=n_workers,
        num_gpus=gpus_per_worker or None,
        batch_format="numpy",
    )
    rows = out.take_all()
    matrix = np.zeros((len(texts), len(rows[0]["emb"])), dtype=np.float32)
    for row in rows:
        matrix[int(row["i"])] = np.asarray(row["emb"], dtype=np.float32)
    return matrix


def build_dense_index_ray(pipeline: Any, **ray_options: Any) -> Path | None:
    """Build `pipeline`'s dense index on Ray and publish it where the pipeline looks for it. Returns the
    folder (None when the pipeline has no dense retriever or does not persist its indexes)."""
    import json
    import shutil
    import tempfile

    from ragmeter.datasets.chunking import chunk_documents
    from ragmeter.systems.indexes import _publish, _read_meta, fingerprint
    from ragmeter.systems.pipeline import _slug

    dense = pipeline.dense
    if dense is None:
        return None
    folder: Path | None = pipeline._folder(f"dense-{_slug(dense.model_name)}")
    if folder is None:
        return None
    chunks = chunk_documents(
        pipeline.corpus,
        size=pipeline.chunk_size,
        overlap=pipeline.chunk_overlap,
        enabled="chunking" not in pipeline.disabled,
    )
    fp = fingerprint("dense", chunks, dense.params)
    meta = _read_meta(folder)
    if meta is not None and meta.get("fingerprint") == fp:
        return folder  # already built from exactly these chunks and parameters
    matrix = embed_on_ray(
        [c.indexed_text for c in chunks], model=dense.model_name, batch_size=dense.batch_size, **ray_options
    )
    folder.parent.mkdir(parents=True, exist_ok=True)
    build_dir = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        np.save(build_dir / "embeddings.npy", matrix)
        (build_dir / "chunk_ids.json").write_text(json.dumps([c.chunk_id for c in chunks]), encoding="utf-8")
        _publish(build_dir, folder, {"fingerprint": fp, "n_chunks": len(chunks), **dense.params})
    finally:
        shutil.rmtree(build_dir, ignore_errors=True)
    return folder
