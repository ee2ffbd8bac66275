"""Hypothesis fuzzing of the file readers: random bytes, random text and near-valid text through the TREC,
JSON and TSV qrels/run readers, the native JSON/JSONL dataset reader and the YAML reader.

The contract: a reader returns a value or raises a RagmeterError (InputError: one line naming the file);
never another exception (UnicodeDecodeError, bare ValueError, RecursionError, ...), and never a NaN or an
infinity inside what it returns. Examples are bounded so that the module runs in a few seconds.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ragmeter.datasets.native import load_native, parse_native, read_corpus
from ragmeter.errors import InputError, RagmeterError
from ragmeter.ir import Qrels, Run
from ragmeter.yamlfile import parse_yaml

FUZZ = settings(
    max_examples=int(os.environ.get("RAGMETER_FUZZ_EXAMPLES", "60")),  # raise it for a long local session
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)

# ----- inputs ---------------------------------------------------------------------------------------------
BOM = b"\xef\xbb\xbf"
NASTY = [
    b"\x00", b"\xff", b"\xfe", b"\xc3", b"\x80", b"\xef\xbb\xbf", b"\x1b[2J", b"\x7f", b"\r", b"\t", b"\x0b",
    b"\x85", "\u2028".encode(), "é".encode(), b"\n", b" ",
]  # fmt: skip
NUMBERS = [
    "0", "1", "-1", "2", "3.5", "1e3", "1e999", "-1e999", "inf", "-inf", "+inf", "Infinity", "nan", "NaN",
    "0x10", "1_0", "", "1.", ".5", "-0", "99999999999", "1e-320", "3.4028236e38",
]  # fmt: skip
IDS = ["q1", "q2", "d1", "d2", "D1", "é", "a b", "", "Q0", "0", "\x1b", "x" * 50]
GOOD_IDS = ["q1", "q2", "q3", "d1", "d2", "d3", "d10", "D1", "é", "Q0", "0"]
GOOD_NUMBERS = ["0", "1", "2", "-1", "3.5", "1e3", "-0.25", "1e-320", "3.4028236e38"]
id_token = st.sampled_from(GOOD_IDS) | st.sampled_from(GOOD_IDS) | st.sampled_from(IDS)
number_token = st.sampled_from(GOOD_NUMBERS) | st.sampled_from(GOOD_NUMBERS) | st.sampled_from(NUMBERS)

raw_bytes = st.binary(max_size=400)
raw_text = st.text(max_size=300).map(lambda s: s.encode("utf-8", "surrogatepass"))


@st.composite
def mutated(draw: st.DrawFn, base: bytes) -> bytes:
    """A valid-ish document with a few random byte edits, sometimes a BOM in front."""
    data = bytearray(base)
    for _ in range(draw(st.integers(0, 4))):
        pos = draw(st.integers(0, len(data)))
        piece = draw(st.sampled_from(NASTY) | st.binary(min_size=1, max_size=3))
        if draw(st.booleans()) and pos < len(data):
            data[pos : pos + len(piece)] = piece
        else:
            data[pos:pos] = piece
    return (BOM if draw(st.booleans()) else b"") + bytes(data)


def _line(n_cols: int) -> st.SearchStrategy[str]:
    """Mostly well-formed lines (ids, then a number in the value column), sometimes a column short or long."""
    value_col = 4 if n_cols == 6 else 3
    cols = [number_token if i == value_col else id_token for i in range(n_cols)]
    exact = st.tuples(*cols).map(" ".join)
    other = st.lists(id_token | number_token, min_size=max(0, n_cols - 1), max_size=n_cols + 1).map(" ".join)
    return exact | exact | other


def trec_text(n_cols: int) -> st.SearchStrategy[bytes]:
    value_col = 4 if n_cols == 6 else 3
    good = [st.sampled_from(GOOD_NUMBERS if i == value_col else GOOD_IDS) for i in range(n_cols)]
    clean = st.lists(st.tuples(*good).map(" ".join), min_size=1, max_size=8).map(
        lambda ls: "\n".join(ls).encode()
    )
    lines = st.lists(_line(n_cols), max_size=8).map(lambda ls: "\n".join(ls).encode())
    return st.one_of(clean, lines, lines.flatmap(lambda b: mutated(b)))


def tsv_text() -> st.SearchStrategy[bytes]:
    exact = st.tuples(id_token, id_token, number_token).map("\t".join)
    row = exact | exact | st.lists(id_token | number_token, min_size=2, max_size=4).map("\t".join)
    doc = st.lists(row, max_size=6).map(lambda rs: "\n".join(["query-id\tcorpus-id\tscore", *rs]).encode())
    good = st.tuples(st.sampled_from(GOOD_IDS), st.sampled_from(GOOD_IDS), st.sampled_from(GOOD_NUMBERS))
    clean = st.lists(good.map("\t".join), min_size=1, max_size=6).map(
        lambda rs: "\n".join(["query-id\tcorpus-id\tscore", *rs]).encode()
    )
    return st.one_of(clean, doc, doc.flatmap(lambda b: mutated(b)))


json_scalar = (
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(IDS)
)
json_value = st.recursive(
    json_scalar,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(IDS), inner, max_size=4),
    max_leaves=12,
)


json_number = (
    st.integers(-3, 3)
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.floats(-1e6, 1e6)
)


def json_text() -> st.SearchStrategy[bytes]:
    qrels_like = st.dictionaries(
        id_token, st.dictionaries(id_token, json_number | json_number | json_scalar, max_size=4), max_size=4
    )
    doc = (qrels_like | json_value).map(lambda v: json.dumps(v).encode())  # allow_nan: NaN, Infinity
    clean = st.dictionaries(
        st.sampled_from(GOOD_IDS),
        st.dictionaries(st.sampled_from(GOOD_IDS), st.integers(-2, 3) | st.floats(-10, 10), min_size=1),
        min_size=1,
        max_size=4,
    ).map(lambda v: json.dumps(v).encode())
    return st.one_of(clean, doc, doc.flatmap(lambda b: mutated(b)))


QUERY_KEYS = ["query_id", "question", "relevant_doc_ids", "relevance", "answer", "reference_answers", "x"]
wellformed = st.fixed_dictionaries(
    {"query_id": id_token, "question": st.text(max_size=20)},
    optional={
        "relevant_doc_ids": st.lists(id_token, max_size=3),
        "relevance": st.dictionaries(id_token, json_number, max_size=3),
        "answer": st.text(max_size=10),
        "metadata": st.dictionaries(st.sampled_from(IDS), json_scalar, max_size=3),
    },
)
record = wellformed | wellformed | st.dictionaries(st.sampled_from(QUERY_KEYS), json_value, max_size=5)


def jsonl_text() -> st.SearchStrategy[bytes]:
    doc = st.lists(record, max_size=4).map(lambda rs: "\n".join(json.dumps(r) for r in rs).encode())
    clean = st.lists(wellformed, min_size=1, max_size=4, unique_by=lambda r: r["query_id"]).map(
        lambda rs: "\n".join(json.dumps(r) for r in rs).encode()
    )
    return st.one_of(clean, doc, doc.flatmap(lambda b: mutated(b)))


def dataset_json_text() -> st.SearchStrategy[bytes]:
    doc = st.fixed_dictionaries(
        {"queries": st.lists(record, max_size=3)}, optional={"name": json_scalar, "corpus": json_value}
    ).map(lambda d: json.dumps(d).encode())
    return st.one_of(doc, doc.flatmap(lambda b: mutated(b)))


YAML_TOKENS = [
    "a", "b", ":", ": ", "- ", "\n", "  ", "[", "]", "{", "}", ",", "&x ", "*x", "!!float ", "!!int ",
    "!!timestamp ", "!!binary ", "!!python/object ", ".nan", ".inf", "-.inf", "1e999", "2001-13-01",
    "'", '"', "#", "? ", "<<: ", "|", ">", "%YAML 1.1\n", "---", "...", "\t", "\x1b", "é", "0x1F", "1" * 30,
]  # fmt: skip


def yaml_text() -> st.SearchStrategy[bytes]:
    tokens = st.lists(st.sampled_from(YAML_TOKENS), max_size=30).map(lambda ts: "".join(ts).encode())
    return st.one_of(tokens, tokens.flatmap(lambda b: mutated(b)))


# ----- checks ---------------------------------------------------------------------------------------------
def floats_in(value: Any) -> Iterator[float]:
    stack, seen = [value], set()
    while stack:
        v = stack.pop()
        if isinstance(v, float):
            yield v
        elif isinstance(v, dict | list | tuple | set) and id(v) not in seen:
            seen.add(id(v))
            stack.extend(list(v.keys()) + list(v.values()) if isinstance(v, dict) else v)


def only_input_errors(call: Callable[[], Any], path: Path | None = None) -> Any:
    try:
        out = call()
    except RagmeterError as exc:
        text = str(exc)
        assert "\n" not in text.strip(), text
        if path is not None and isinstance(exc, InputError):
            assert str(path) in text, text
        return None
    return out


def assert_finite_table(table: Qrels | Run | None) -> None:
    if table is not None:
        assert np.isfinite(np.asarray(table.values, dtype=np.float64)).all()
        assert len(table) > 0  # an empty file is an error, never "0 queries"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def put(workdir: Path, name: str, data: bytes) -> Path:
    path = workdir / name
    path.write_bytes(data)
    return path


# ----- qrels and runs ---------------------------------------------------------------------------------------
@FUZZ
@given(data=st.one_of(raw_bytes, raw_text, trec_text(6), trec_text(4)))
@example(data=b"\xd7\x14\x84\xf8\xcf\x9b\xf4\xb7oG\x90G0 \x80K\x9e2%\xa9 \xf13 \xb5\xde\xa1h\xf4 \xe2\x85")
@example(data=b"q1 Q0 d1 1 inf t\n")
@example(data=b" \n\t\n")
def test_trec_readers(workdir: Path, data: bytes) -> None:
    path = put(workdir, "x.trec", data)
    for cls in (Run, Qrels):
        assert_finite_table(only_input_errors(lambda cls=cls: cls.from_trec(path), path))
        assert_finite_table(only_input_errors(lambda cls=cls: cls.from_trec_bytes(data, source="x")))
        assert_finite_table(only_input_errors(lambda cls=cls: cls.read(path), path))


@FUZZ
@given(data=st.one_of(raw_bytes, raw_text, tsv_text()))
@example(data=b"query-id\tcorpus-id\tscore\nq1\td1\tinf\n")
def test_tsv_readers(workdir: Path, data: bytes) -> None:
    path = put(workdir, "x.tsv", data)
    for cls in (Run, Qrels):
        assert_finite_table(only_input_errors(lambda cls=cls: cls.from_tsv(path), path))
        assert_finite_table(only_input_errors(lambda cls=cls: cls.read(path), path))


@FUZZ
@given(data=st.one_of(raw_bytes, raw_text, json_text()))
@example(data=b'{"q1": {"d1": 1e999}}')
@example(data=b"{" * 5000)
@example(data=b'{"\xff": {}}')
def test_json_readers(workdir: Path, data: bytes) -> None:
    path = put(workdir, "x.json", data)
    for cls in (Run, Qrels):
        assert_finite_table(only_input_errors(lambda cls=cls: cls.from_json(path), path))
        assert_finite_table(only_input_errors(lambda cls=cls: cls.read(path), path))


# ----- datasets -------------------------------------------------------------------------------------------
def _check_dataset(path: Path) -> None:
    dataset = only_input_errors(lambda: load_native(path))
    if dataset is not None:
        assert dataset.queries
        assert all(math.isfinite(f) for f in floats_in(dataset.model_dump()))
    found, problems = parse_native(path)  # collects problems instead of raising
    assert all(isinstance(p, str) and "\n" not in p for p in problems)
    if found is not None:
        assert all(math.isfinite(f) for f in floats_in(found.model_dump()))


@FUZZ
@given(data=st.one_of(raw_bytes, raw_text, jsonl_text()))
@example(data=b'{"query_id": "q1", "question": "\xff"}\n')
@example(data=b'{"query_id": "q1", "question": "x", "relevance": {"d1": NaN}}\n')
def test_jsonl_dataset_reader(workdir: Path, data: bytes) -> None:
    path = put(workdir, "x.jsonl", data)
    _check_dataset(path)
    docs = only_input_errors(lambda: read_corpus(path), path)
    if docs is not None:
        assert all(math.isfinite(f) for d in docs for f in floats_in(d.model_dump()))


@FUZZ
@given(data=st.one_of(raw_bytes, raw_text, dataset_json_text()))
@example(data=b'{"queries": [{"query_id": "q1", "question": "x"}], "name": "\xff"}')
@example(data=b'{"queries": [{"query_id": "q1", "question": "x", "relevance": {"d1": Infinity}}]}')
def test_json_dataset_reader(workdir: Path, data: bytes) -> None:
    _check_dataset(put(workdir, "x.json", data))


# ----- YAML ---------------------------------------------------------------------------------------------
@FUZZ
@given(data=st.one_of(raw_bytes, raw_text, yaml_text()))
@example(data=b"a: 2001-13-01")
@example(data=b"a: &x [*x]")
@example(data=b"a: .nan")
@example(data=b"a: 1" + b"0" * 5000)
@example(data=b"[" * 700)  # deeper than the recursion limit allows
def test_yaml_reader(data: bytes) -> None:
    for text in (data, data.decode("utf-8", "replace")):
        value = only_input_errors(lambda text=text: parse_yaml(text, source="c.yaml", what="fuzz"))
        assert all(math.isfinite(f) for f in floats_in(value))
