"""The shipped demo dataset and the `ragmeter datasets` commands."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ragmeter.cli import cli
from ragmeter.datasets import demo_dataset, load_dataset, validate_dataset


def test_demo_is_complete_and_consistent() -> None:
    ds = demo_dataset()
    assert ds.name == "demo"
    assert ds.corpus is not None and len(ds.corpus) == 40 and len(ds.queries) == 60
    doc_ids = {d.doc_id for d in ds.corpus}
    assert len(doc_ids) == 40 and len({q.query_id for q in ds.queries}) == 60
    for q in ds.queries:
        assert q.question.strip() and q.ground_truth_answer and q.relevant_doc_ids
        assert set(q.relevant_doc_ids) <= doc_ids
    assert all(20 <= len(d.text.split()) <= 120 for d in ds.corpus)
    assert load_dataset("demo") == ds


def test_demo_file_validates_clean() -> None:
    import ragmeter.datasets as pkg

    path = Path(pkg.__file__).parent / "demo" / "demo.json"
    assert validate_dataset(path) == []


def test_datasets_list_shows_the_registry(data_dir: Path) -> None:
    result = CliRunner().invoke(cli, ["datasets", "list", "--data-dir", str(data_dir)])
    assert result.exit_code == 0, result.output
    for name in ("demo", "squad_mini", "squad", "natural_questions", "hotpotqa", "scifact"):
        assert f"\n{name} " in result.output
    assert str(data_dir / "beir_scifact") in result.output


def test_datasets_validate_exit_codes(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"query_id": "a", "question": "why?"}) + "\n")
    ok = CliRunner().invoke(cli, ["datasets", "validate", str(good)])
    assert ok.exit_code == 0 and "ok" in ok.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"query_id": "a", "question": ""})
        + "\n"
        + json.dumps({"query_id": "a", "question": "x"})
        + "\n"
    )
    result = CliRunner().invoke(cli, ["datasets", "validate", str(bad)])
    assert result.exit_code == 1
    assert f"{bad}:1: query 'a': empty question" in result.output
    assert f"{bad}:2: duplicate query_id 'a'" in result.output
