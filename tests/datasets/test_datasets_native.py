"""The native format: JSON and JSONL, corpus files, and validation that names every problem's location."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from datasets_testutil import small_native, write_jsonl

from ragmeter.datasets import load_dataset, validate_dataset
from ragmeter.datasets.native import write_native
from ragmeter.errors import InputError


def test_native_json_loads_every_field(tmp_path: Path) -> None:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(small_native()))
    ds = load_dataset(str(path))
    assert ds.name == "tiny" and ds.version == "2.0"
    assert [q.query_id for q in ds.queries] == ["q1", "q2"]
    assert ds.queries[0].metadata == {"topic": "weather"}
    assert ds.queries[1].judgments() == {"d2": 2, "d1": 0}
    assert ds.queries[0].judgments() == {"d1": 1}
    assert ds.corpus is not None and [d.doc_id for d in ds.corpus] == ["d1", "d2"]
    assert validate_dataset(path) == []


def test_write_native_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text(json.dumps(small_native()))
    ds = load_dataset(str(path))
    out = tmp_path / "b.json"
    write_native(ds, out)
    assert load_dataset(str(out)) == ds


def test_corpus_path_is_relative_to_the_dataset(tmp_path: Path) -> None:
    raw = small_native()
    corpus = raw.pop("corpus")
    (tmp_path / "docs").mkdir()
    # BEIR-style `_id` keys are accepted in a corpus file.
    write_jsonl(
        tmp_path / "docs" / "c.jsonl",
        [{"_id": d["doc_id"], "title": d["title"], "text": d["text"]} for d in corpus],
    )
    raw["corpus_path"] = "docs/c.jsonl"
    (tmp_path / "ds.json").write_text(json.dumps(raw))
    ds = load_dataset(str(tmp_path / "ds.json"))
    assert ds.corpus is not None and ds.corpus[1].text == "Bees make honey from nectar."


def test_jsonl_dataset_reads_its_sibling_corpus(tmp_path: Path) -> None:
    raw = small_native()
    write_jsonl(tmp_path / "qa.jsonl", raw["queries"])
    write_jsonl(tmp_path / "qa.corpus.jsonl", raw["corpus"])
    ds = load_dataset(str(tmp_path / "qa.jsonl"))
    assert ds.name == "qa" and len(ds.queries) == 2
    assert ds.corpus is not None and len(ds.corpus) == 2


def test_validate_reports_every_problem_with_its_location(tmp_path: Path) -> None:
    raw = small_native()
    raw["queries"].append({"query_id": "q1", "question": "  ", "relevant_doc_ids": ["nope", "d1"]})
    raw["queries"].append({"query_id": "q4", "question": 12})
    raw["corpus"].append({"doc_id": "d2", "text": "again"})
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(raw))
    problems = validate_dataset(path)
    text = "\n".join(problems)
    assert "queries[2]" in text and "duplicate query_id 'q1'" in text
    assert "empty question" in text
    assert "relevant ids not in the corpus: 'nope'" in text
    assert "queries[3]" in text and "question" in text
    assert "corpus[2]" in text and "duplicate doc_id 'd2'" in text
    assert len(problems) == 5, problems
    with pytest.raises(InputError, match="invalid dataset"):
        load_dataset(str(path))


def test_validate_jsonl_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(
        '{"query_id": "a", "question": "ok?"}\n'
        "\n"
        '{"query_id": "b", "question": "fine?", "relevant_doc_ids": "d1"}\n'
        "{not json\n"
    )
    problems = validate_dataset(path)
    assert any(p.startswith(f"{path}:3:") and "relevant_doc_ids" in p for p in problems), problems
    assert any(p.startswith(f"{path}:4:") and "not valid JSON" in p for p in problems), problems


def test_validate_bad_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{\n  "queries": [\n    {"query_id": "a",,}\n  ]\n}\n')
    problems = validate_dataset(path)
    assert len(problems) == 1 and problems[0].startswith(f"{path}:3:")


def test_unknown_fields_and_missing_queries_are_problems(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"name": "x", "qeuries": []}))
    assert any("queries" in p and "missing" in p for p in validate_dataset(path))
    raw = small_native()
    raw["extra_field"] = 1
    path.write_text(json.dumps(raw))
    assert any("'extra_field'" in p and "unknown field" in p for p in validate_dataset(path))


def test_unknown_name_and_missing_file_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="unknown dataset 'no_such_benchmark'"):
        load_dataset("no_such_benchmark")
    with pytest.raises(InputError, match="no such file"):
        load_dataset(str(tmp_path / "missing.json"))
