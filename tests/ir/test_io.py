"""Readers and writers: TREC (plain and gzip), BEIR TSV, JSON, DataFrame; clear errors with lines."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from ragmeter.errors import InputError
from ragmeter.ir import Qrels, Run, evaluate

RUN = "q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 2.5 t\n\nq2 Q0 d3 1 1.0 t\n"
QRELS = "q1 0 d2 1\nq1 0 d1 0\nq2 0 d3 2\n"


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_trec_roundtrip_and_gzip(tmp_path: Path) -> None:
    run = Run.from_trec(write(tmp_path, "r.trec", RUN))
    assert run.to_dict() == {"q1": {"d1": 3.0, "d2": 2.5}, "q2": {"d3": 1.0}}
    gz = tmp_path / "r.trec.gz"
    gz.write_bytes(gzip.compress(RUN.encode()))
    assert Run.from_trec(gz).to_dict() == run.to_dict()
    run.to_trec(tmp_path / "out.trec")
    assert Run.from_trec(tmp_path / "out.trec").to_dict() == run.to_dict()
    qrels = Qrels.from_trec(write(tmp_path, "q.qrels", QRELS))
    qrels.to_trec(tmp_path / "q2.qrels")
    assert (
        Qrels.from_trec(tmp_path / "q2.qrels").to_dict()
        == qrels.to_dict()
        == {
            "q1": {"d2": 1, "d1": 0},
            "q2": {"d3": 2},
        }
    )


def test_json_tsv_dataframe_readers_agree(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    qrels = Qrels.from_trec(write(tmp_path, "q.qrels", QRELS))
    qrels.to_json(tmp_path / "q.json")
    tsv = write(tmp_path, "q.tsv", "query-id\tcorpus-id\tscore\nq1\td2\t1\nq1\td1\t0\nq2\td3\t2\n")
    df = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["d2", "d1", "d3"], "grade": [1, 0, 2]})
    for other in (Qrels.read(tmp_path / "q.json"), Qrels.read(tsv), Qrels.from_dataframe(df)):
        assert other.to_dict() == qrels.to_dict()
    run = Run.read(write(tmp_path, "r.trec", RUN))
    assert evaluate(qrels, run, ["mrr"]).aggregate["mrr"] == pytest.approx((0.5 + 1.0) / 2)


def test_doc_codes_and_ranks(tmp_path: Path) -> None:
    run = Run.from_trec(write(tmp_path, "r.trec", RUN))
    codes, vocab = run.doc_codes()
    assert [vocab[c] for c in codes] == ["d1", "d2", "d3"]
    assert run.ranks().tolist() == [1, 2, 1]
    assert run.query_index.tolist() == [0, 0, 1]


@pytest.mark.parametrize(
    ("cls", "text", "line", "needle"),
    [
        (Run, "q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 2.0\n", 2, "expected 6"),
        (Run, "q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 abc t\n", 2, "not a number"),
        (Run, "q1 Q0 d1 1 nan t\n", 1, "not a number"),
        (Run, "q1 Q0 d1 1 3.0 t\nq2 Q0 d1 1 3.0 t\nq1 Q0 d1 3 1.0 t\n", 3, "twice"),
        (Qrels, "q1 0 d1 1\nq1 0 d2 x\n", 2, "not an integer"),
        (Qrels, "q1 0 d1 1\nq1 0 d1 2\n", 2, "twice"),
        (Qrels, "q1 d1 1\n", 1, "expected 4"),
    ],
)
def test_bad_input_names_file_and_line(tmp_path: Path, cls, text, line, needle) -> None:
    path = write(tmp_path, "bad.txt", text)
    with pytest.raises(InputError) as info:
        cls.from_trec(path)
    assert str(info.value).startswith(f"{path}:{line}: ")
    assert needle in str(info.value)


def test_keep_first_keeps_the_first_occurrence(tmp_path: Path) -> None:
    path = write(tmp_path, "dup.trec", "q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 2.0 t\nq1 Q0 d1 3 9.0 t\n")
    run = Run.from_trec(path, keep_first=True)
    assert run.query("q1") == [("d2", 2.0), ("d1", 1.0)]


def test_missing_file_is_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        Run.from_trec(tmp_path / "nope.trec")


def test_tsv_errors_name_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "q.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\n")
    with pytest.raises(InputError, match=r"q.tsv:3: expected 3 tab-separated columns"):
        Qrels.read(path)
    path = write(tmp_path, "bad.json", '{"q1": {"d1": 1}')
    with pytest.raises(InputError, match=r"bad.json:1: invalid JSON"):
        Qrels.read(path)
