"""`ragmeter labels export --format qrels` cannot forge lines: an id holding whitespace or a control character
is refused with one line naming the label, and no file is written; JSON carries any id."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ragmeter.store import open_store
from ragmeter.store.labels import LabelItem, save_label

ROOT = Path(__file__).resolve().parents[2]


def ragmeter(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-m", "ragmeter", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def _store(path: Path, docs: list[tuple[str, str]]) -> str:
    with open_store(str(path)) as store:
        for qid, doc in docs:
            item = LabelItem.relevance("sha256-of-fixture", qid, doc)
            save_label(store.engine, item, 1.0, annotator="ann", source="browse", expected_version=0)
    return str(path)


def test_ids_with_a_space_or_a_newline_are_refused(tmp_path: Path) -> None:
    forged = "d1 0 d2 3\nq1"  # would add the line "q1 0 d2 3 ..." to the qrels
    db = _store(tmp_path / "s.db", [("q1", "d0"), ("q1", "doc with space"), ("q2", forged)])
    (tmp_path / "out").mkdir()
    out = tmp_path / "out" / "labels.qrels"
    proc = ragmeter("labels", "export", "--db", db, "-o", str(out), "--format", "qrels")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ragmeter: error: ") and "Traceback" not in proc.stderr
    assert "relevance label 2" in lines[0] and "'doc with space'" in lines[0] and "SPACE" in lines[0]
    assert list(out.parent.iterdir()) == []  # no file, no temporary left behind
    # the newline alone is refused too (the label named is the forged one)
    db2 = _store(tmp_path / "t.db", [("q1", "d0"), ("q2", forged)])
    proc = ragmeter("labels", "export", "--db", db2, "-o", str(out), "--format", "qrels")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "relevance label 2" in proc.stderr and "\\n" in proc.stderr
    assert list(out.parent.iterdir()) == []
    # JSON carries any id, exactly
    proc = ragmeter("labels", "export", "--db", db, "-o", str(tmp_path / "l.json"))
    assert proc.returncode == 0, proc.stderr
    ids = sorted(r["doc_id"] for r in json.loads((tmp_path / "l.json").read_text("utf-8")))
    assert ids == sorted(["d0", "doc with space", forged])


def test_plain_ids_export_as_qrels(tmp_path: Path) -> None:
    db = _store(tmp_path / "s.db", [("q1", "d0"), ("q2", "doc-7_é")])
    out = tmp_path / "labels.qrels"
    proc = ragmeter("labels", "export", "--db", db, "-o", str(out), "--format", "qrels")
    assert proc.returncode == 0, proc.stderr
    assert sorted(out.read_text("utf-8").splitlines()) == ["q1 0 d0 1", "q2 0 doc-7_é 1"]
