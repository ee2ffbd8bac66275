"""A dataset by name and its hash live in datasets/; the run layer's old names are the same functions."""

from __future__ import annotations

from ragmeter.datasets import demo_dataset
from ragmeter.datasets.resolve import dataset_hash, resolve_dataset


def test_resolve_by_name_and_hash_ignores_the_description() -> None:
    data = resolve_dataset("demo", seed=1)
    assert data == demo_dataset()
    digest = dataset_hash(data)
    assert digest.startswith("sha256:") and len(digest) == 7 + 64
    assert dataset_hash(data.model_copy(update={"description": "another text"})) == digest
    fewer = data.model_copy(update={"queries": data.queries[1:]})
    assert dataset_hash(fewer) != digest


def test_the_run_layer_names_are_the_same_functions() -> None:
    import ragmeter.run as run
    from ragmeter.run.prepare import dataset_hash as old_hash
    from ragmeter.run.rebuild import resolve_dataset as old_resolve

    assert old_hash is dataset_hash and run.dataset_hash is dataset_hash
    assert old_resolve is resolve_dataset and run.resolve_dataset is resolve_dataset
