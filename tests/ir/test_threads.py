"""The native kernels split work over threads (RAGMETER_THREADS, read once per process): the split must not
change a value, an order or the line an error names. Small inputs use one thread unless forced, so each
case runs in a subprocess with the count forced."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .test_generated_crosscheck import MEASURES, workload

JOB = """
import json, sys
from ragmeter.errors import InputError
from ragmeter.ir import Qrels, Run, evaluate
try:
    q, r = Qrels.read(sys.argv[1]), Run.read(sys.argv[2])
except InputError as exc:
    print(json.dumps({"error": str(exc)})); sys.exit(0)
res = evaluate(q, r, json.loads(sys.argv[3]), missing="ignore", no_relevant="zero")
print(json.dumps({"order": r.doc_ids(), "per_query": res.per_query}))
"""


def _run(threads: int, qrels: Path, run: Path) -> dict:
    env = {**os.environ, "RAGMETER_THREADS": str(threads)}
    args = [sys.executable, "-c", JOB, str(qrels), str(run), json.dumps([*MEASURES, "judged@5"])]
    out = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    from ragmeter.ir import Qrels, Run

    qrels, run = workload(5)
    Qrels.from_dict(qrels).to_trec(tmp_path / "q.qrels")
    Run.from_dict(run).to_trec(tmp_path / "r.trec")
    return tmp_path / "q.qrels", tmp_path / "r.trec"


def test_threads_give_the_same_values_and_order(files) -> None:
    one = _run(1, *files)
    for n in (2, 3, 7):
        assert _run(n, *files) == one


def test_threads_name_the_first_bad_line(files) -> None:
    qrels, run = files
    lines = run.read_text().splitlines(keepends=True)
    bad_at = [len(lines) * 2 // 3, len(lines) - 1]  # in a late share: the first of them is reported
    for i in bad_at:
        lines[i] = lines[i].replace(" ragmeter", " x ragmeter")
    run.write_text("".join(lines))
    for n in (1, 3):
        got = _run(n, qrels, run)["error"]
        assert f"r.trec:{bad_at[0] + 1}: expected 6" in got and "found 7" in got, got
