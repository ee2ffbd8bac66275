"""A dataset by name, and its content hash: the two things every layer above asks of a dataset (a run, a
resume, rescore, the viewer), kept here so that none of them needs the run layer to read a dataset."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from ragmeter.models import EvalDataset

if TYPE_CHECKING:
    from ragmeter.store import Store

__all__ = ["dataset_hash", "resolve_dataset"]


def dataset_hash(dataset: EvalDataset) -> str:
    """`sha256:` + the digest of the dataset's content (its description and metadata left out)."""
    digest = hashlib.sha256()
    digest.update(dataset.model_dump_json(exclude={"description", "metadata"}).encode())
    return "sha256:" + digest.hexdigest()


def resolve_dataset(name: str, *, seed: int, store: Store | None = None) -> EvalDataset:
    """A dataset by name or path; `store:COLLECTION` is a collection's test cases in the store."""
    if name.startswith("store:"):
        if store is None:
            from ragmeter.store import open_store

            store = open_store()
        return store.dataset(name.split(":", 1)[1])
    from ragmeter.datasets import load_dataset

    return load_dataset(name, seed=seed)
