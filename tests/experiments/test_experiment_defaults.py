"""An experiment file's default columns follow its cut-offs, and its cut-offs are checked as its own field."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmeter.errors import InputError
from ragmeter.experiments.ablation import ExperimentSpec, load_experiment, run_experiment

FILE_01 = "dataset: demo\nk: [1, 3, 5, 10]\nvariants:\n  - name: a\n    mode: fulltext\n"


def test_default_columns_are_computed_at_the_files_cutoffs(tmp_path: Path) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text(FILE_01, encoding="utf-8")
    spec = load_experiment(path)  # was refused: the default columns held recall@20
    assert spec.columns == ["recall@1", "recall@3", "recall@5", "recall@10", "mrr", "map", "ndcg@10"]
    # The real runner on the demo dataset: every default column has a value in every variant's run.
    result = run_experiment(spec.model_copy(update={"limit": 5}), store=False)
    assert result.columns() == spec.columns
    for variant in result.results:
        assert variant.run.config.retrieval_top_k == [1, 3, 5, 10]
        assert all(variant.run.aggregate[c].mean is not None for c in spec.columns)


def test_default_columns_without_10_use_the_largest_cutoff() -> None:
    assert ExperimentSpec(dataset="demo", k=[3, 1]).columns == [
        "recall@1",
        "recall@3",
        "mrr",
        "map",
        "ndcg@3",
    ]
    # The documented default file keeps its documented columns.
    assert ExperimentSpec(dataset="demo").columns == [
        "recall@5",
        "recall@10",
        "recall@20",
        "mrr",
        "map",
        "ndcg@10",
    ]


@pytest.mark.parametrize("k", ["[0]", "[5, -1]", "[]"])
def test_bad_cutoffs_name_the_files_field_k(tmp_path: Path, k: str) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text(f"dataset: demo\nk: {k}\nvariants:\n  - name: a\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_experiment(path)
    message = str(err.value)
    assert "field 'k'" in message and str(path) in message
    assert "retrieval_top_k" not in message
