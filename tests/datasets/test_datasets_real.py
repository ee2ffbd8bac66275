"""The named benchmarks on the real files in $RAGMETER_DATA_DIR: they load with the expected counts."""

from __future__ import annotations

import json
from pathlib import Path

from ragmeter.datasets import load_dataset, validate_dataset


def test_squad_dev_counts(data_dir: Path) -> None:
    ds = load_dataset("squad", data_dir=data_dir)
    assert len(ds.queries) == 10570 and len(ds.corpus or []) == 2067
    doc_ids = {d.doc_id for d in ds.corpus or []}
    assert all(q.relevant_doc_ids[0] in doc_ids and q.answers for q in ds.queries)


def test_squad_mini_is_seeded(data_dir: Path) -> None:
    a = load_dataset("squad_mini", data_dir=data_dir, seed=42)
    b = load_dataset("squad_mini", data_dir=data_dir, seed=42)
    c = load_dataset("squad_mini", data_dir=data_dir, seed=7)
    assert len(a.queries) == 100 and len(a.corpus or []) == 2067
    assert [q.query_id for q in a.queries] == [q.query_id for q in b.queries]
    assert [q.query_id for q in a.queries] != [q.query_id for q in c.queries]


def test_scifact_test_split(data_dir: Path) -> None:
    ds = load_dataset("scifact", data_dir=data_dir)
    assert len(ds.queries) == 300 and len(ds.corpus or []) == 5183
    assert sum(len(q.judgments()) for q in ds.queries) == 339
    train = load_dataset("scifact", data_dir=data_dir, split="train")
    assert len(train.queries) == 809
    assert validate_dataset(data_dir / "beir_scifact") == []


def test_hotpotqa_500(data_dir: Path) -> None:
    ds = load_dataset("hotpotqa", data_dir=data_dir)
    assert len(ds.queries) == 500
    doc_ids = {d.doc_id for d in ds.corpus or []}
    assert all(len(q.relevant_doc_ids) == 2 and set(q.relevant_doc_ids) <= doc_ids for q in ds.queries)


def test_natural_questions_sample_matches_the_shared_sample_file(data_dir: Path) -> None:
    ds = load_dataset("natural_questions", data_dir=data_dir)
    assert len(ds.queries) == 1000
    sample = data_dir / "natural_questions" / "nq-open-oracle.sample1000.seed0.jsonl"
    if sample.is_file():
        with sample.open() as fh:
            expected = [json.loads(line)["question"] for line in fh]
        assert [q.question for q in ds.queries] == expected
    assert all(len(q.relevant_doc_ids) == 1 for q in ds.queries)
