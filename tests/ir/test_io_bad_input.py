"""Bad qrels and run files, class by class: every failure is one InputError naming file:line, never a
bare ValueError/UnicodeDecodeError, and nothing malformed is silently accepted (BOM, inf, empty files)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from ragmeter.errors import InputError
from ragmeter.ir import Qrels, Run, _native, evaluate

RUN = b"q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 2.5 t\nq2 Q0 d3 1 1.0 t\nq2 Q0 d4 2 0.5 t\n"
QRELS = b"q1 0 d2 1\nq1 0 d1 2\nq2 0 d3 2\nq2 0 d9 1\n"
READERS = {
    "trec": lambda cls, p: cls.from_trec(p),
    "read": lambda cls, p: cls.read(p),
}


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def assert_input_error(call, path: Path, line: int | None, needle: str) -> InputError:
    with pytest.raises(InputError) as info:
        call()
    err = info.value
    assert type(err) is InputError
    assert err.source == str(path)
    if line is not None:
        assert err.line == line, str(err)
        assert str(err).startswith(f"{path}:{line}: ")
    assert needle in str(err), str(err)
    assert "\n" not in str(err) and "\x1b" not in str(err)
    return err


# ----- 1. garbage / binary files through the native parser and the Python readers ------------------------
GARBAGE = [
    # (bytes, line, needle)
    (bytes(range(256)) * 4, 1, "NUL byte"),
    (b"q1 Q0 d1 1 \xff\xfe t\n", 1, "not UTF-8 text (byte 0xff at byte offset 11)"),
    (b"q1 Q0 d1 1 1.0 t\n\x89PNG\r\n\x1a\n", 2, "not UTF-8"),
    (b"\x7fELF\x02\x01\x01\x00\x00", 1, "NUL byte"),
    (b"\xff\xfeq\x001\x00", 1, "UTF-16"),
    (b"PK\x03\x04\x14\x00\x00\x00\x08\x00", 1, "NUL byte"),
    (gzip.compress(b"q1 Q0 d1 1 \x80 t\n", mtime=0), 1, "not UTF-8"),
    (b'{"q1": {"d1": 1}, "\xe9": {}}', 1, "not UTF-8"),
    (b"query-id\tcorpus-id\tscore\nq1\t\xc3\x28\t1\n", 2, "not UTF-8"),
]
# only the TSV reader (Qrels.read / Run.read sniff the header) gets past line 1 of these
GARBAGE_TSV = [
    (b"query-id\tcorpus-id\tscore\nq1\td\x00\t1\n", 2, "NUL byte"),
    (b"query-id\tcorpus-id\tscore\nq1\td1\t1\nq\xe9\td2\t1\n", 3, "not UTF-8"),
    (b"query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\n", 3, "expected 3 tab-separated"),
]


@pytest.mark.parametrize("cls", [Run, Qrels])
@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize(("data", "line", "needle"), GARBAGE)
def test_garbage_is_input_error_with_line(tmp_path: Path, cls, reader, data, line, needle) -> None:
    path = write(tmp_path, "bad.txt", data)
    assert_input_error(lambda: READERS[reader](cls, path), path, line, needle)


@pytest.mark.parametrize("cls", [Run, Qrels])
@pytest.mark.parametrize(("data", "line", "needle"), GARBAGE_TSV)
def test_garbage_tsv_is_input_error_with_line(tmp_path: Path, cls, data, line, needle) -> None:
    path = write(tmp_path, "bad.tsv", data)
    assert_input_error(lambda: cls.read(path), path, line, needle)
    assert_input_error(lambda: cls.from_tsv(path), path, line, needle)


def test_native_parser_errors_always_carry_their_line() -> None:
    # the parser quotes the bad token in its message: non-UTF-8 bytes there used to lose the whole error
    # (a bare ValueError() with no arguments)
    with pytest.raises(ValueError) as info:
        _native.parse_trec(b"q1 Q0 d1 1 \xff\xfe t\n", True, False)
    kind, line, _, detail = info.value.args
    assert (kind, line) == ("input", 1) and b"\xff\xfe" in detail


def test_bad_token_is_escaped_in_the_message(tmp_path: Path) -> None:
    path = write(tmp_path, "r.trec", "q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 é\u2028x t\n".encode())
    err = assert_input_error(lambda: Run.read(path), path, 2, "is not a number")
    assert "\u2028" not in str(err) and "\\u2028" in str(err)
    path = write(tmp_path, "r.trec", b"q1 Q0 d1 1 1.0 t\nq1 Q0 d1 2 \x1b[2J t\n")
    err = assert_input_error(lambda: Run.read(path), path, 2, "is not a number")
    assert "'\\x1b[2J'" in str(err)
    path = write(tmp_path, "r.trec", b"q1 Q0 d\x1b]0;x\x07 1 1.0 t\nq1 Q0 d\x1b]0;x\x07 2 0.5 t\n")
    err = assert_input_error(lambda: Run.read(path), path, 2, "appears twice")
    assert "d\\x1b]0;x\\x07" in str(err)


@pytest.mark.parametrize("reader", sorted(READERS))
def test_control_characters_are_kept_in_ids_as_trec_eval_does(tmp_path: Path, reader) -> None:
    # trec_eval splits on whitespace only; printing such ids safely is the printer's job
    qid = "q\x1b]0;T\x07\x1b[2J"
    run = READERS[reader](Run, write(tmp_path, "r", f"{qid} Q0 d\x7f 1 1.0 t\n".encode()))
    qrels = READERS[reader](Qrels, write(tmp_path, "q", f"{qid} 0 d\x7f 1\n".encode()))
    assert run.query_ids == [qid] and run.doc_ids() == ["d\x7f"]
    assert evaluate(qrels, run, ["mrr"]).per_query == {qid: {"mrr": 1.0}}


# ----- 2. a UTF-8 BOM is not part of the first query id -------------------------------------------------
@pytest.mark.parametrize("reader", sorted(READERS))
def test_bom_is_dropped_and_values_unchanged(tmp_path: Path, reader) -> None:
    bom = b"\xef\xbb\xbf"
    plain = evaluate(
        READERS[reader](Qrels, write(tmp_path, "q", QRELS)), READERS[reader](Run, write(tmp_path, "r", RUN))
    )
    for q_bom, r_bom in ((True, False), (False, True), (True, True)):
        qrels = READERS[reader](Qrels, write(tmp_path, "qb", bom * q_bom + QRELS))
        run = READERS[reader](Run, write(tmp_path, "rb", bom * r_bom + RUN))
        assert qrels.query_ids[0] == "q1" and run.query_ids[0] == "q1"
        res = evaluate(qrels, run)
        assert res.aggregate == plain.aggregate
        assert res.aggregate["ndcg@10"] > 0 and res.n_queries == 2


def test_bom_in_json_and_tsv(tmp_path: Path) -> None:
    bom = b"\xef\xbb\xbf"
    js = write(tmp_path, "q.json", bom + b'{"q1": {"d1": 1}}')
    assert Qrels.read(js).to_dict() == Qrels.from_json(js).to_dict() == {"q1": {"d1": 1}}
    tsv = write(tmp_path, "q.tsv", bom + b"query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    assert Qrels.read(tsv).to_dict() == Qrels.from_tsv(tsv).to_dict() == {"q1": {"d1": 1}}


# ----- 3. non-finite scores -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "data", "line", "needle"),
    [
        ("r.trec", b"q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 inf t\n", 2, "score 'inf' is not a finite number"),
        ("r.trec", b"q1 Q0 d1 1 -inf t\n", 1, "not a finite number"),
        ("r.trec", b"q1 Q0 d1 1 +Infinity t\n", 1, "not a finite number"),
        ("r.trec", b"q1 Q0 d1 1 1e999 t\n", 1, "not a finite number"),
        ("r.trec", b"q1 Q0 d1 1 -1e400 t\n", 1, "not a finite number"),
        ("r.trec", b"q1 Q0 d1 1 NaN t\n", 1, "not a number"),
        ("r.tsv", b"query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\tinf\n", 3, "not a finite number"),
        ("r.tsv", b"query-id\tcorpus-id\tscore\nq1\td1\t-Infinity\n", 2, "not a finite number"),
        ("r.tsv", b"query-id\tcorpus-id\tscore\nq1\td1\tnan\n", 2, "not a finite number"),
        ("r.tsv", b"query-id\tcorpus-id\tscore\nq1\td1\t1_0\n", 2, "not a number"),
        ("r.json", b'{"q1": {"d1": Infinity}}', None, "not a finite number"),
        ("r.json", b'{"q1": {"d1": -Infinity}}', None, "not a finite number"),
        ("r.json", b'{"q1": {"d1": NaN}}', None, "not a finite number"),
        ("r.json", b'{"q1": {"d1": 1e999}}', None, "not a finite number"),
    ],
)
def test_non_finite_scores_rejected(tmp_path: Path, name, data, line, needle) -> None:
    path = write(tmp_path, name, data)
    assert_input_error(lambda: Run.read(path), path, line, needle)


def test_non_finite_values_rejected_from_columns_and_dicts() -> None:
    for bad in (float("inf"), float("-inf"), float("nan")):
        with pytest.raises(InputError, match="not a finite number"):
            Run.from_dict({"q1": {"d1": 1.0, "d2": bad}})
        with pytest.raises(InputError, match="not a finite number"):
            Qrels.from_columns(["q"], ["d"], [bad])
    with pytest.raises(InputError, match="not an integer"):
        Qrels.from_dict({"q1": {"d1": 2.0**40}})  # would overflow the int32 grade column


def test_grade_out_of_range_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, "q.tsv", b"query-id\tcorpus-id\tscore\nq1\td1\t99999999999\n")
    assert_input_error(lambda: Qrels.read(path), path, 2, "not an integer")
    path = write(tmp_path, "q.qrels", b"q1 0 d1 99999999999\n")
    assert_input_error(lambda: Qrels.read(path), path, 1, "not an integer")


# ----- 4. empty or whitespace-only files ------------------------------------------------------------------
@pytest.mark.parametrize("cls", [Run, Qrels])
@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"", "the file is empty"),
        (b"   \n\n\t \r\n", "the file is empty"),
        (b"\xef\xbb\xbf\n", "the file is empty"),
        (gzip.compress(b"", mtime=0), "the file is empty"),
    ],
)
def test_empty_file_is_input_error(tmp_path: Path, cls, reader, data, needle) -> None:
    path = write(tmp_path, "empty", data)
    err = assert_input_error(lambda: READERS[reader](cls, path), path, None, needle)
    assert ("retrieved document" if cls is Run else "judgment") in str(err)


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("q.json", b"{}"),
        ("q.json", b' {"q1": {}} '),
        ("q.tsv", b"query-id\tcorpus-id\tscore\n"),
        ("q.tsv", b"query-id\tcorpus-id\tscore\n\n  \n"),
    ],
)
def test_no_rows_is_input_error(tmp_path: Path, name, data) -> None:
    path = write(tmp_path, name, data)
    assert_input_error(lambda: Qrels.read(path), path, None, "no judgment")


def test_empty_ids_rejected(tmp_path: Path) -> None:
    path = write(tmp_path, "q.tsv", b"query-id\tcorpus-id\tscore\nq1\t \t1\n")
    assert_input_error(lambda: Qrels.read(path), path, 2, "empty query or doc id")
    path = write(tmp_path, "q.json", b'{"q1": {"": 1}}')
    assert_input_error(lambda: Qrels.read(path), path, None, "empty query or doc id")


# ----- other JSON failures stay one InputError ----------------------------------------------------------
@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"{" * 100_000, "invalid JSON"),
        (b'{"q1": {"d1": ' + b"1" * 5000 + b"}}", "invalid JSON"),
        (b'{"q1": [1, 2]}', "expected an object"),
        (b'{"q1": {"d1": "1"}}', "not a number"),
        (b'{"q1": {"d1": true}}', "not a number"),
    ],
)
def test_json_failures(tmp_path: Path, data, needle) -> None:
    path = write(tmp_path, "q.json", data)
    assert_input_error(lambda: Qrels.read(path), path, None, needle)


# ----- format detection ----------------------------------------------------------------------------------
def test_tab_separated_trec_run_is_read_as_trec(tmp_path: Path) -> None:
    # a TREC run written with tabs (tag in the last column) is not a BEIR TSV with a header
    path = write(tmp_path, "r.trec", b"q1\tQ0\td1\t1\t2.0\tt\nq1\tQ0\td2\t2\t1.0\tt\n")
    assert Run.read(path).to_dict() == {"q1": {"d1": 2.0, "d2": 1.0}}
    path = write(tmp_path, "r.tsv", b"q1\td1\t1e-3\nq1\td2\t2\n")  # no header: TREC reader names the line
    assert_input_error(lambda: Run.read(path), path, 1, "expected 6")


@pytest.mark.parametrize("size", [0, -1, -1000, True, 2.5])
def test_collection_size_must_be_positive(size) -> None:
    qrels = Qrels.from_trec_bytes(QRELS)
    run = Run.from_trec_bytes(RUN)
    with pytest.raises(InputError, match="collection_size: must be a positive number"):
        evaluate(qrels, run, ["aqwv@5"], collection_size=size)
    assert evaluate(qrels, run, ["aqwv@5"], collection_size=1000).aggregate["aqwv@5"] <= 1.0
