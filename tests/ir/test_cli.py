"""`ragmeter eval` as a user runs it: a real subprocess, formats, --fail-under, bad input."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

RUN = "q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 2.5 t\nq2 Q0 d3 1 1.0 t\nq2 Q0 d4 2 0.5 t\n"
QRELS = "q1 0 d2 1\nq2 0 d3 2\nq3 0 d9 0\n"


def ragmeter(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragmeter", *args], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "r.trec").write_text(RUN)
    (tmp_path / "q.qrels").write_text(QRELS)
    return str(tmp_path / "q.qrels"), str(tmp_path / "r.trec")


def test_json_format_is_exact(files) -> None:
    out = ragmeter("eval", *files, "-m", "mrr,P@1", "--format", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data == {
        "aggregate": {"mrr": 0.75, "precision@1": 0.5},
        # sample std (ddof=1) of the per-query values: mrr (0.5, 1.0), precision@1 (0, 1)
        "std": {"mrr": pytest.approx(0.5**0.5 / 2), "precision@1": pytest.approx(0.5**0.5)},
        "n_queries": 2,
        "n_queries_without_relevant": 1,
    }
    out = ragmeter("eval", *files, "-m", "mrr", "--format", "json", "--per-query")
    assert json.loads(out.stdout)["per_query"] == {"q1": {"mrr": 0.5}, "q2": {"mrr": 1.0}}


def test_default_measures_and_table(files) -> None:
    out = ragmeter("eval", *files)
    assert out.returncode == 0, out.stderr
    for name in ("ndcg@10", "recall@20", "precision@3", "hit@1", "aqwv@5", "mrr", "map", "rprec"):
        assert name in out.stdout
    assert "left out of the means" in out.stdout


def test_csv_format(files) -> None:
    out = ragmeter("eval", *files, "-m", "mrr", "--format", "csv", "--per-query")
    std = statistics.stdev([0.5, 1.0])  # the sample sd (n - 1), as the JSON's `std`
    assert out.stdout.splitlines() == ["query_id,mrr", "q1,0.5", "q2,1.0", "mean,0.75", f"std,{std!r}"]


def test_fail_under(files) -> None:
    ok = ragmeter("eval", *files, "-m", "mrr", "--format", "json", "--fail-under", "mrr=0.7")
    assert ok.returncode == 0
    bad = ragmeter(
        "eval", *files, "-m", "mrr", "--format", "json", "--fail-under", "MRR=0.8", "--fail-under", "p@1=0.9"
    )
    assert bad.returncode == 1
    assert "mrr = 0.7500 < 0.8" in bad.stderr and "precision@1 = 0.5000 < 0.9" in bad.stderr


@pytest.mark.parametrize(
    ("run_text", "extra", "needle"),
    [
        ("q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2\n", [], "r.trec:2: expected 6"),
        ("q1 Q0 d1 1 x t\n", [], "r.trec:1: score 'x' is not a number"),
        ("q1 Q0 d1 1 3 t\nq1 Q0 d1 2 2 t\n", [], "r.trec:2: document 'd1' appears twice"),
        (RUN, ["-m", "ndcg@ten"], "unknown measure"),
    ],
)
def test_bad_input_one_line_exit_2(tmp_path: Path, run_text, extra, needle) -> None:
    (tmp_path / "r.trec").write_text(run_text)
    (tmp_path / "q.qrels").write_text(QRELS)
    out = ragmeter("eval", str(tmp_path / "q.qrels"), str(tmp_path / "r.trec"), *extra)
    assert out.returncode == 2
    assert needle in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_missing_file(tmp_path: Path) -> None:
    out = ragmeter("eval", str(tmp_path / "none.qrels"), str(tmp_path / "none.trec"))
    assert out.returncode == 2 and "none.qrels: no such file" in out.stderr


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--fail-under", "mrr=nan"], "--fail-under: 'nan' is not a finite number (in 'mrr=nan')"),
        (["--fail-under", "mrr=NaN"], "is not a finite number (in "),
        (["--fail-under", "mrr=inf"], "is not a finite number (in "),
        (["--fail-under", "mrr=-inf"], "is not a finite number (in "),
        (["--fail-under", "ndcg@10=1e999"], "is not a finite number (in "),
        (["--collection-size", "0"], "--collection-size: must be a positive number of documents, got 0"),
        (["--collection-size", "-5"], "--collection-size: must be a positive number of documents, got -5"),
        (["--collection-size", "-1", "-m", "aqwv@5"], "--collection-size: must be a positive"),
    ],
)
def test_bad_flags_one_line_exit_2(files, extra, needle) -> None:
    out = ragmeter("eval", *files, "-m", "mrr", *extra)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert needle in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    assert out.stdout == ""  # nothing evaluated, nothing printed


@pytest.mark.parametrize(
    ("which", "data", "needle"),
    [
        ("run", bytes(range(256)) * 8, "r.trec:1: binary data (a NUL byte"),
        ("run", b"q1 Q0 d1 1 3.0 t\nq1 Q0 \xff\xfe 2 \xff t\n", "r.trec:2: not UTF-8 text (byte 0xff"),
        ("run", b"q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 inf t\n", "r.trec:2: score 'inf' is not a finite number"),
        ("run", b"q1 Q0 d1 1 -inf t\n", "r.trec:1: score '-inf' is not a finite number"),
        ("run", b"q1 Q0 d1 1 \x1b[2J t\n", "r.trec:1: score '\\x1b[2J' is not a number"),
        ("qrels", b"", "q.qrels: the file is empty: no judgments"),
        ("qrels", b" \n\t\n", "q.qrels: the file is empty: no judgments"),
        ("qrels", b"\xff\xfeq\x001\x00", "q.qrels:1: UTF-16 text"),
        ("run", b"\n\n", "r.trec: the file is empty: no retrieved documents"),
    ],
)
def test_bad_files_one_line_exit_2(tmp_path: Path, which, data, needle) -> None:
    (tmp_path / "r.trec").write_text(RUN)
    (tmp_path / "q.qrels").write_text(QRELS)
    (tmp_path / ("r.trec" if which == "run" else "q.qrels")).write_bytes(data)
    out = ragmeter("eval", str(tmp_path / "q.qrels"), str(tmp_path / "r.trec"))
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert needle in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    assert "\x1b" not in out.stderr and "\x00" not in out.stderr


def test_bom_files_give_the_same_numbers(tmp_path: Path) -> None:
    (tmp_path / "r.trec").write_text(RUN)
    (tmp_path / "q.qrels").write_text(QRELS)
    (tmp_path / "rb.trec").write_bytes(b"\xef\xbb\xbf" + RUN.encode())
    (tmp_path / "qb.qrels").write_bytes(b"\xef\xbb\xbf" + QRELS.encode())
    plain = ragmeter("eval", str(tmp_path / "q.qrels"), str(tmp_path / "r.trec"), "--format", "json")
    bom = ragmeter("eval", str(tmp_path / "qb.qrels"), str(tmp_path / "rb.trec"), "--format", "json")
    assert plain.returncode == bom.returncode == 0, bom.stderr
    assert json.loads(bom.stdout) == json.loads(plain.stdout)
    assert json.loads(plain.stdout)["aggregate"]["ndcg@10"] > 0


def test_eval_imports_neither_torch_nor_sqlalchemy(files) -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from ragmeter.cli.eval import eval_command\n"
        f"r = CliRunner().invoke(eval_command, {list(files)!r} + ['--format', 'json'])\n"
        "assert r.exit_code == 0, r.output\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'sqlalchemy')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_condensed_and_trec_eval_names(files) -> None:
    # q1: d1 (unjudged) above d2 (relevant): condensed, d2 is at rank 1
    out = ragmeter("eval", *files, "-m", "mrr,bpref,infAP,judged@2", "--format", "json", "--per-query")
    assert out.returncode == 0, out.stderr
    plain = json.loads(out.stdout)
    assert plain["per_query"]["q1"] == {"mrr": 0.5, "bpref": 1.0, "infap": 0.5, "judged@2": 0.5}
    assert "condensed" not in plain
    out = ragmeter("eval", *files, "-m", "mrr,bpref,infAP", "--format", "json", "--per-query", "--condensed")
    data = json.loads(out.stdout)
    assert data["condensed"] is True and "condensed lists" in data["notes"][0]
    assert data["per_query"]["q1"] == {"mrr": 1.0, "bpref": 1.0, "infap": 1.0}
    table = ragmeter("eval", *files, "-m", "map", "--condensed")
    assert "condensed lists" in table.stdout
    csv_out = ragmeter("eval", *files, "-m", "map", "--condensed", "--format", "csv")
    assert csv_out.stdout.startswith("query_id (condensed lists),map")
