"""Nugget files: our JSONL, nuggetizer's JSONL and TREC RAG 2024 tab-separated lines, read, written, hashed;
a bad line is one InputError naming the file and the line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmeter.errors import InputError
from ragmeter.nuggets import read_assignments, read_nuggets, sniff, write_assignments, write_nuggets

FIXTURES = Path(__file__).parent / "fixtures"


def test_trec_nuggets_round_trip_through_every_format(tmp_path: Path) -> None:
    trec = read_nuggets(FIXTURES / "trec_nuggets.tsv")
    assert sniff(FIXTURES / "trec_nuggets.tsv") == "trec"
    assert trec.counts() == {"queries": 2, "nuggets": 3, "vital": 2, "okay": 1}
    assert trec.get("q2") is not None and trec.get("q2").nuggets[0].importance == "vital"  # type: ignore[union-attr]
    for fmt in ("ragmeter", "nuggetizer", "trec"):
        out = tmp_path / f"n.{fmt}"
        write_nuggets(trec, out, fmt)  # type: ignore[arg-type]
        assert sniff(out) == fmt
        again = read_nuggets(out)
        assert again.hash == trec.hash, fmt  # ids are positions in every format here
        assert [n.text for q in again for n in q.nuggets] == [n.text for q in trec for n in q.nuggets]


def test_nuggetizer_file_reads_with_positions_as_ids(tmp_path: Path) -> None:
    path = tmp_path / "nz.jsonl"
    lines = [
        {
            "qid": "7",
            "query": "why?",
            "nuggets": [{"text": "a", "importance": "okay"}, {"text": "b", "importance": "vital"}],
        }
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    got = read_nuggets(path)
    q = got.get("7")
    assert q is not None and [(n.id, n.importance) for n in q.nuggets] == [("1", "okay"), ("2", "vital")]
    assert q.query == "why?"


def test_hash_changes_with_a_nugget_and_not_with_provenance(tmp_path: Path) -> None:
    base = read_nuggets(FIXTURES / "trec_nuggets.tsv")
    q1 = base.get("q1")
    assert q1 is not None
    edited = q1.model_copy(
        update={"nuggets": [q1.nuggets[0].model_copy(update={"importance": "okay"}), q1.nuggets[1]]}
    )
    other = type(base)({**base.queries, "q1": edited})
    assert other.hash != base.hash
    moved = q1.model_copy(update={"provenance": q1.provenance.model_copy(update={"author": "someone"})})
    assert type(base)({**base.queries, "q1": moved}).hash == base.hash


def test_assignments_trec_and_nuggetizer(tmp_path: Path) -> None:
    table = read_assignments(FIXTURES / "trec_assignments.tsv")
    assert table[("runA", "q1")] == {"1": "support", "2": "partial_support"}
    out = tmp_path / "a.tsv"
    write_assignments(table, out)
    assert read_assignments(out) == table
    nz = tmp_path / "assign.jsonl"
    row = {
        "qid": "q1",
        "run_id": "r",
        "answer_text": "x",
        "nuggets": [
            {"text": "Paris lies on the Seine", "importance": "okay", "assignment": "not_support"},
            {"text": "Paris is the capital of France", "importance": "vital", "assignment": "support"},
        ],
    }
    nz.write_text(json.dumps(row) + "\n")
    by_text = read_assignments(nz, read_nuggets(FIXTURES / "trec_nuggets.tsv"))
    assert by_text[("r", "q1")] == {"2": "not_support", "1": "support"}


@pytest.mark.parametrize(
    ("content", "line", "words"),
    [
        (
            '{"query_id": "a", "nuggets": []}\n{"query_id": "b", "nuggets": [{"id": "1", "text": "x", "importance": "great"}]}\n',
            2,
            "importance",
        ),
        ('{"query_id": "a", "nuggets": []}\nnot json\n', 2, "not JSON"),
        ('{"query_id": "a", "nuggets": []}\n{"query_id": "a", "nuggets": []}\n', 2, "repeated"),
        (
            '{"query_id": "a", "nuggets": [{"id": "1", "text": "x", "importance": "vital"}, {"id": "1", "text": "y", "importance": "okay"}]}\n',
            1,
            "repeated",
        ),
        ("q1\t1\tvital\n", 1, "4 tab-separated"),
        ('{"qid": "1", "nuggets": [{"text": " ", "importance": "vital"}]}\n', 1, "blank"),
    ],
)
def test_bad_line_names_file_and_line(tmp_path: Path, content: str, line: int, words: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(InputError) as info:
        read_nuggets(path)
    assert info.value.source == str(path) and info.value.line == line
    assert words in str(info.value)
