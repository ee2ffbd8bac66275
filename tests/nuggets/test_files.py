"""Nugget files: our JSONL, nuggetizer's JSONL (nuggets and assignments, in the layout nuggetizer's own
scripts write) and qrels-like tab-separated lines, read, written, hashed; a bad line is one InputError naming
the file and the line."""

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


# The nuggetizer fixtures are written by us in the layout castorini nuggetizer's own scripts write: nuggets as
# 0.0.5's scripts/create_nuggets.py (format_output), answer assignments as scripts/assign_nuggets.py
# (process_record), and one retrieval assignment line with reasoning fields as later versions' CLI writes it.


def test_nuggetizer_nugget_file_reads_and_writes_back_byte_for_byte(tmp_path: Path) -> None:
    source = FIXTURES / "nuggetizer_nuggets.jsonl"
    assert sniff(source) == "nuggetizer"
    got = read_nuggets(source)
    q = got.get("2024-1001")
    assert q is not None and q.query == "what is the capital of france"
    assert [(n.id, n.importance) for n in q.nuggets] == [("1", "vital"), ("2", "okay"), ("3", "okay")]
    out = tmp_path / "again.jsonl"
    write_nuggets(got, out, "nuggetizer")
    assert out.read_bytes() == source.read_bytes()  # nuggetizer's keys, order and separators


def test_nuggetizer_assignments_read_by_nugget_id_and_score_as_nuggetizer_does() -> None:
    nuggets = read_nuggets(FIXTURES / "nuggetizer_nuggets.jsonl")
    table = read_assignments(FIXTURES / "nuggetizer_assignments.jsonl", nuggets)
    assert table[("ragnarok_baseline", "2024-1001")] == {"1": "support", "2": "support", "3": "not_support"}
    assert table[("ragnarok_baseline", "2024-1002")] == {"1": "partial_support", "2": "not_support"}
    # a retrieval assignment line (no run_id) is keyed by its candidate's docid; its reasoning is ignored
    assert table[("msmarco_v2.1_doc_00_1#0_1", "2024-1002")] == {"1": "support", "2": "support"}
    from ragmeter.nuggets import all_scores

    metrics = pytest.importorskip("nuggetizer.core.metrics", reason="pip install --no-deps nuggetizer==0.0.5")
    for line in (FIXTURES / "nuggetizer_assignments.jsonl").read_text().splitlines():
        record = json.loads(line)
        key = (record.get("run_id", record.get("docid")), record["qid"])
        q = nuggets.get(record["qid"])
        assert q is not None
        ours = all_scores([(n.importance, table[key][n.id]) for n in q.nuggets])
        theirs = metrics.calculate_nugget_scores(record["qid"], record["nuggets"])
        assert ours["nugget_all"].value == theirs.all_score
        assert ours["nugget_vital_strict"].value == theirs.strict_vital_score


@pytest.mark.parametrize(
    ("row", "words"),
    [
        ({"importance": "vital", "assignment": "failed"}, "nuggetizer could not assign"),
        ({"importance": "vital", "assignment": "maybe"}, "is not one of"),
    ],
)
def test_a_bad_nuggetizer_assignment_names_the_line(tmp_path: Path, row: dict[str, str], words: str) -> None:
    path = tmp_path / "assign.jsonl"
    good = {
        "qid": "q1",
        "run_id": "r",
        "nuggets": [{"text": "a", "importance": "vital", "assignment": "support"}],
    }
    bad = {"qid": "q2", "run_id": "r", "nuggets": [{"text": "a", **row}]}
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(InputError) as info:
        read_assignments(path)
    assert info.value.line == 2 and words in str(info.value)
    path.write_text(json.dumps(good) + "\n" + json.dumps(good) + "\n")
    with pytest.raises(InputError, match="repeated") as again:
        read_assignments(path)
    assert again.value.line == 2


def test_nuggetizer_nuggets_without_importance_are_vital_and_failed_importance_is_refused(
    tmp_path: Path,
) -> None:
    path = tmp_path / "nz.jsonl"
    path.write_text(json.dumps({"query": "q", "qid": "1", "nuggets": [{"text": "a"}]}) + "\n")
    q = read_nuggets(path).get("1")
    assert q is not None and q.nuggets[0].importance == "vital"  # as nuggetizer's assign_nuggets.py reads it
    line = {"query": "q", "qid": "2", "nuggets": [{"text": "a", "importance": "failed"}]}
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(InputError, match="nuggetizer could not score") as info:
        read_nuggets(path)
    assert info.value.line == 1
