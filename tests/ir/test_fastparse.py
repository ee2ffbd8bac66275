"""The in-place TREC parser (each query's lines together) and its fall-back to the general parser (a query
met again later, a doc id twice) must give the tables `from_columns` builds from the same rows, whatever the
thread count (forced per subprocess: RAGMETER_THREADS is read once), the line order inside a query, blank
lines between shares, and whether the file is mapped (pages dropped behind the parser) or passed as bytes."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from ragmeter.errors import InputError
from ragmeter.ir import Qrels, Run

JOB = """
import json, sys
from ragmeter.errors import InputError
from ragmeter.ir import Qrels, Run
results = []
for path, kind, keep_first in json.loads(sys.argv[1]):
    cls = Run if kind == "run" else Qrels
    out = {}
    for how in ("mapped", "bytes"):
        try:
            t = cls.read(path, keep_first=keep_first) if how == "mapped" else cls.from_trec_bytes(
                open(path, "rb").read(), source=path, keep_first=keep_first)
            out[how] = [t.query_ids, t.qoff.tolist(), t.doc_ids(), t.values.tolist()]
        except InputError as exc:
            out[how] = str(exc)
    results.append(out)
print(json.dumps(results))
"""

THREADS = (1, 2, 3, 7)


def _parse(files: list[tuple[Path, str, bool]], threads: int) -> list[list | str]:
    """Each (path, kind, keep_first) read in one subprocess with the thread count forced: the mapped file's
    table (or error), which the same bytes passed in memory must give too."""
    env = {**os.environ, "RAGMETER_THREADS": str(threads)}
    specs = json.dumps([[str(p), kind, keep] for p, kind, keep in files])
    out = subprocess.run(
        [sys.executable, "-c", JOB, specs], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout)
    for one in got:
        assert one["mapped"] == one["bytes"] or isinstance(one["mapped"], str)
    return [one["mapped"] for one in got]


def _table(t: Run | Qrels) -> list:
    return [t.query_ids, t.qoff.tolist(), t.doc_ids(), t.values.tolist()]


def _rows(seed: int, kind: str = "run", n_queries: int = 60) -> list[tuple[str, str, float]]:
    rng = random.Random(seed)
    rows = []
    for q in range(n_queries):
        docs = rng.sample(range(500), rng.randint(1, 40))
        for d in docs:  # run: a coarse score, many ties broken by doc id; qrels: grades, some negative
            value = rng.randint(0, 6) / 2 if kind == "run" else float(rng.randint(-1, 3))
            rows.append((f"q{q}", f"d{d}.{q}", value))  # distinct across queries
    return rows


def _write(path: Path, rows: list[tuple[str, str, float]], kind: str, blank_every: int = 0) -> None:
    lines = []
    for i, (q, d, v) in enumerate(rows):
        lines.append(f"{q} Q0 {d} {i + 1} {v!r} tag\n" if kind == "run" else f"{q} 0 {d} {int(v)}\n")
        if blank_every and i % blank_every == 0:
            lines.append("\n   \n")
    path.write_text("".join(lines))


def _expected(rows: list[tuple[str, str, float]], kind: str, keep_first: bool = False) -> list:
    cls = Run if kind == "run" else Qrels
    q, d, v = zip(*rows, strict=True)
    return _table(cls.from_columns(q, d, v, keep_first=keep_first))


def test_every_layout_gives_the_columnar_table(tmp_path: Path) -> None:
    files, want = [], []
    for kind in ("run", "qrels"):
        for layout in ("ranked", "shuffled_in_query", "interleaved", "blank_lines"):
            rows = _rows(3, kind)
            if layout == "ranked" and kind == "run":  # rank order inside each query: nothing to sort
                rows = _table_rows(Run.from_columns(*zip(*rows, strict=True)))
            elif layout == "shuffled_in_query":
                rng = random.Random(5)
                groups: dict[str, list] = {}
                for r in rows:
                    groups.setdefault(r[0], []).append(r)
                rows = [r for g in groups.values() for r in rng.sample(g, len(g))]
            elif layout == "interleaved":  # a query's lines spread over the file: the general parser
                rows = rows[1::2] + rows[::2]
            path = tmp_path / f"{layout}.{kind}"
            _write(path, rows, kind, blank_every=7 if layout == "blank_lines" else 0)
            files.append((path, kind, False))
            want.append(_expected(rows, kind))
    for n in THREADS:
        for (path, _, _), got, expected in zip(files, _parse(files, n), want, strict=True):
            assert got == expected, (path.name, n)


def _table_rows(t: Run) -> list[tuple[str, str, float]]:
    qidx = t.query_index.tolist()
    return [(t.query_ids[q], d, v) for q, d, v in zip(qidx, t.doc_ids(), t.values.tolist(), strict=True)]


@pytest.mark.parametrize("kind", ["run", "qrels"])
def test_a_repeated_doc_is_reported_or_the_first_kept(tmp_path: Path, kind: str) -> None:
    rows = _rows(4, kind)
    at = len(rows) * 2 // 3
    q, d, _ = rows[at]
    first = next(i for i, r in enumerate(rows) if r[0] == q and r[1] == d)
    rows.insert(at + 1, (q, d, 3.0))
    path = tmp_path / f"f.{kind}"
    _write(path, rows, kind)
    for n in (1, 3):
        got, kept = _parse([(path, kind, False), (path, kind, True)], n)
        assert isinstance(got, str) and f":{at + 2}:" in got and f"first at line {first + 1}" in got, got
        assert kept == _expected(rows, kind, keep_first=True)


def test_the_first_bad_line_is_named_whatever_the_share(tmp_path: Path) -> None:
    rows = _rows(6)
    path = tmp_path / "f.run"
    _write(path, rows, "run", blank_every=11)
    lines = path.read_text().splitlines(keepends=True)
    for i in (len(lines) * 3 // 4, len(lines) - 2):
        lines[i] = lines[i].replace(" tag", " x tag") if lines[i].strip() else "q1 Q0 x 1 nan tag\n"
    path.write_text("".join(lines))
    bad = next(i for i, line in enumerate(lines) if " x tag" in line or "nan" in line)
    for n in THREADS:
        (got,) = _parse([(path, "run", False)], n)
        assert isinstance(got, str) and f"f.run:{bad + 1}:" in got, (n, got)


def test_a_mapped_file_is_checked_past_its_first_page(tmp_path: Path) -> None:
    """The mapped file is checked while its lines are counted: UTF-8 or a NUL byte far into it still takes the
    full checks (UTF-8 ids kept, NUL named with its line), as a file read into memory does."""
    rows = _rows(7)
    rows[-3] = (rows[-3][0], "dé.ü", rows[-3][2])
    path = tmp_path / "f.run"
    _write(path, rows, "run")
    assert path.stat().st_size > 8192
    assert _table(Run.read(path)) == _table(Run.from_trec(path)) == _expected(rows, "run")
    text = path.read_bytes()
    at = len(text) - 40
    path.write_bytes(text[:at] + b"\x00" + text[at + 1 :])
    for reader in (Run.read, Run.from_trec):
        with pytest.raises(InputError, match="NUL byte") as info:
            reader(path)
        assert info.value.line == text[:at].count(b"\n") + 1
