"""Every bad input is one line naming its file:line, flag or field, exit 2, no traceback, and changes
nothing: the store's row counts and every output file are the same before and after.

Plus the hostile-data classes (secrets, CSV formulas, terminal control sequences, a live run deleted,
index folders): each command's output is checked for what must never get through. Commands run as the
user runs them: `python -m ragmeter` in a subprocess.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "security"))
from hostile import write_hostile  # type: ignore[import-not-found]  # noqa: E402

REPO = HERE.parents[1]
PASSWORD = "BadInputPassw0rd-31"


@dataclass
class Env:
    root: Path
    db: Path
    run_id: str

    def ragmeter(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(self.root)]),
            "RAGMETER_DB": str(self.db),
            "RAGMETER_CACHE_DIR": str(self.root / "cache"),
            "COLUMNS": "200",
        }
        return subprocess.run(
            [sys.executable, "-m", "ragmeter", *args],
            cwd=self.root,
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )


def _rows(db: Path) -> dict[str, int]:
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("select name from sqlite_master where type='table'")]
        return {t: conn.execute(f'select count(*) from "{t}"').fetchone()[0] for t in tables}


def _files(root: Path) -> dict[str, str]:
    skip = (".db", ".db-wal", ".db-shm", ".pyc")
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file() and not p.name.endswith(skip) and "__pycache__" not in p.parts
    } | {str(p.relative_to(root)) + "/": "dir" for p in root.rglob("*") if p.is_dir()}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    root = tmp_path_factory.mktemp("bad_input")
    write_hostile(root)
    (root / "adir").mkdir()
    (root / "afile").write_text("not a folder\n")
    (root / "garbage.bin").write_bytes(bytes(range(256)) * 8)
    (root / "latin1.jsonl").write_bytes(b'{"query_id": "q1", "question": "caf\xe9?"}\n')
    (root / "binary.yaml").write_bytes(b"\xff\xfe\x00dataset: \x00\x81\n")
    (root / "qrels.txt").write_text("q1 0 d1 1\nq1 0 d2 0\n")
    (root / "run.txt").write_text("q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\n")
    (root / "empty_qrels.txt").write_text("  \n\n")
    (root / "inf_run.txt").write_text("q1 Q0 d1 1 inf r\n")
    (root / "bom_qrels.txt").write_bytes(b"\xef\xbb\xbfq1 0 d1 1\n")
    e = Env(root, root / "store.db", "")
    done = e.ragmeter(
        "run", "--dataset", "hostile.json", "--system", "hostile_system:retrieve", "--no-generation",
        "--judge", f"openai-compatible:m@http://user:{PASSWORD}@127.0.0.1:9/v1", "--no-llm-judge",
        "--no-progress", "-o", "out/run.json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    e.run_id = done.stdout.split("stored as run ", 1)[1].split()[0]
    yield e


# (case id, arguments, exit code, what the one line must name)
BAD = [
    # class 1: paths and files the CLI writes or reads
    ("db-parent-is-file", ["runs", "list", "--db", "afile/x.db"], "--db"),
    ("db-uncreatable", ["runs", "list", "--db", "/proc/nope/x.db"], "--db"),
    ("db-driver-missing", ["runs", "list", "--db", "mysql://u@127.0.0.1/db"], "--db"),
    ("output-is-folder", ["run", "--dataset", "hostile.json", "--system", "hostile_system:retrieve",
                          "--no-generation", "--no-progress", "-o", "adir"], "--output"),
    ("output-under-file", ["run", "--dataset", "hostile.json", "--system", "hostile_system:retrieve",
                           "--no-generation", "--no-progress", "-o", "afile/r.json"], "--output"),
    ("output-uncreatable", ["run", "--dataset", "hostile.json", "--system", "hostile_system:retrieve",
                            "--no-generation", "--no-progress", "-o", "/proc/nope/r.json"], "--output"),
    ("export-to-folder", ["runs", "export", "RUN", "-o", "adir"], "--output"),
    ("export-under-file", ["runs", "export", "RUN", "--format", "csv", "-o", "afile/x.csv"], "--output"),
    ("report-garbage-file", ["report", "garbage.bin", "--out", "rep"], "garbage.bin"),
    ("report-out-under-file", ["report", "RUN", "--out", "afile/rep"], "--out"),
    ("eval-garbage-run", ["eval", "qrels.txt", "garbage.bin"], "garbage.bin"),
    (
        "dataset-not-utf8",
        ["run", "--dataset", "latin1.jsonl", "--system", "hostile_system:retrieve", "--no-generation",
         "--no-progress"],
        "latin1.jsonl",
    ),
    (
        "config-binary-yaml",
        ["run", "--config", "binary.yaml", "--no-progress"],
        "binary.yaml",
    ),
    # class 2: numbers that would be silently wrong
    ("fail-under-nan", ["eval", "qrels.txt", "run.txt", "--fail-under", "ndcg@10=nan"], "--fail-under"),
    ("run-fail-under-nan", ["run", "--dataset", "hostile.json", "--system", "hostile_system:retrieve",
                            "--no-generation", "--no-progress", "--fail-under", "ndcg@10=nan"], "--fail-under"),
    ("collection-size-negative", ["eval", "qrels.txt", "run.txt", "-m", "aqwv@10", "--collection-size", "-5"],
     "--collection-size"),
    ("empty-qrels", ["eval", "empty_qrels.txt", "run.txt"], "empty_qrels.txt"),
    ("infinite-score", ["eval", "qrels.txt", "inf_run.txt"], "inf_run.txt"),
    # class 6: a run still running
    ("delete-live-run", ["runs", "delete", "LIVE", "--yes"], "still running"),
]  # fmt: skip


CASES = [pytest.param(*c, id=c[0]) for c in BAD]


@pytest.mark.parametrize(("case", "args", "names"), CASES)
def test_bad_input_is_one_line_and_changes_nothing(
    env: Env, live_run: str, case: str, args: list[str], names: str
) -> None:
    args = [{"RUN": env.run_id, "LIVE": live_run}.get(a, a) for a in args]
    rows, files = _rows(env.db), _files(env.root)
    done = env.ragmeter(*args)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, (case, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout
    assert len(lines) == 1 and lines[0].startswith("ragmeter: error: "), done.stderr
    assert names in lines[0], lines[0]
    assert _rows(env.db) == rows, "the store changed"
    assert _files(env.root) == files, "files changed"


@pytest.fixture(scope="module")
def live_run(env: Env) -> Iterator[str]:
    """A run in the store owned by a live process (a sleeping child standing in for a running `run`)."""
    from ragmeter.store import liveness

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        time.sleep(0.2)
        with sqlite3.connect(env.db) as conn:
            cols = [r[1] for r in conn.execute("pragma table_info(runs)")]
            row = dict(
                zip(
                    cols,
                    conn.execute("select * from runs where id = ?", (env.run_id,)).fetchone(),
                    strict=True,
                )
            )
            row.update(
                id="live-run-0001",
                status="running",
                pid=child.pid,
                pid_token=liveness.pid_token(child.pid),
                host=liveness.hostname(),
            )
            conn.execute(
                f"insert into runs ({', '.join(cols)}) values ({', '.join('?' * len(cols))})",
                [row[c] for c in cols],
            )
        yield "live-run-0001"
    finally:
        child.kill()
        child.wait()


def test_delete_run_whose_process_is_gone(env: Env) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # a pid that ran and is gone
    with sqlite3.connect(env.db) as conn:
        cols = [r[1] for r in conn.execute("pragma table_info(runs)")]
        row = dict(
            zip(cols, conn.execute("select * from runs where id = ?", (env.run_id,)).fetchone(), strict=True)
        )
        row.update(id="dead-run-0001", status="running", pid=child.pid, pid_token="1")
        conn.execute(
            f"insert into runs ({', '.join(cols)}) values ({', '.join('?' * len(cols))})",
            [row[c] for c in cols],
        )
    done = env.ragmeter("runs", "delete", "dead-run-0001", "--yes")
    assert done.returncode == 0 and "deleted dead-run-0001" in done.stdout, done.stderr


def test_delete_live_run_with_force(env: Env, live_run: str) -> None:
    done = env.ragmeter("runs", "delete", live_run, "--yes", "--force")
    assert done.returncode == 0 and f"deleted {live_run}" in done.stdout, done.stderr
    assert live_run not in env.ragmeter("runs", "list").stdout


# ------------------------------------------------------------------------------------------ secrets


@pytest.mark.parametrize(
    "args",
    [
        ["runs", "show", "RUN"],
        ["runs", "show", "RUN", "--format", "json"],
        ["runs", "list", "--format", "json"],
        ["runs", "export", "RUN", "--format", "json"],
        ["runs", "export", "RUN", "--format", "csv"],
    ],
    ids=lambda a: "-".join(a[:2] + a[3:]),
)
def test_no_password_in_output(env: Env, args: list[str]) -> None:
    done = env.ragmeter(*[env.run_id if a == "RUN" else a for a in args])
    assert done.returncode == 0, done.stderr
    assert PASSWORD not in done.stdout + done.stderr
    if args[1] == "show" and "json" in args:
        assert (
            json.loads(done.stdout)["config"]["judge_model"]
            == "openai-compatible:m@http://***@127.0.0.1:9/v1"
        )


def test_no_password_in_files(env: Env) -> None:
    for path in env.root.rglob("*"):
        if path.is_file():
            assert PASSWORD.encode() not in path.read_bytes(), path


# ------------------------------------------------------------------------------------------ CSV


def _live_formulas(text: str) -> list[str]:
    import csv
    import io

    bad = []
    for row in csv.reader(io.StringIO(text)):
        for cell in row:
            if cell[:1] in ("=", "+", "-", "@", "\t", "\r"):
                try:
                    float(cell)
                except ValueError:
                    bad.append(cell[:40])
    return bad


def test_csv_neutralised_by_default_raw_on_request(env: Env) -> None:
    run_csv = (env.root / "out" / "run.csv").read_text(encoding="utf-8")
    assert _live_formulas(run_csv) == [] and "'=HYPERLINK" in run_csv and "'@SUM(1,1)" in run_csv
    exported = env.ragmeter("runs", "export", env.run_id, "--format", "csv").stdout
    assert _live_formulas(exported) == [] and "'+cmd" in exported
    raw = env.ragmeter("runs", "export", env.run_id, "--format", "csv", "--csv-raw").stdout
    assert "=HYPERLINK" in _live_formulas(raw)[0] or any(
        c.startswith("=HYPERLINK") for c in _live_formulas(raw)
    )
    done = env.ragmeter("report", env.run_id, "--out", "rep", "--no-plots")
    assert done.returncode == 0, done.stderr
    long_csv = (env.root / "rep" / "per_query_long.csv").read_text(encoding="utf-8")
    assert _live_formulas(long_csv) == [] and "'-2+3" in long_csv
    # a negative number we wrote stays a number
    assert all(
        float(c) < 0 for c in long_csv.split(",") if c.startswith("-") and c[1:2].isdigit() and "+" not in c
    )
    html = (env.root / "rep" / "report.html").read_text(encoding="utf-8")
    assert "<script>alert(1)</script>" not in html and "<img src=x onerror" not in html
    assert "Content-Security-Policy" in html


# ------------------------------------------------------------------------------------------ terminal


def _assert_clean_terminal(text: str) -> None:
    assert "\x1b]" not in text and "\x1b[2J" not in text and "\x9b" not in text and "\u202e" not in text
    assert "\x1b[31m" not in text  # the colour asked for by the data is not applied


def test_control_sequences_escaped_everywhere(env: Env) -> None:
    qid = "q\x1b]0;PWNED\x07\x1b[2J[red]x[/red]"
    (env.root / "ctl_qrels.json").write_text(json.dumps({qid: {"d1": 1}}))
    (env.root / "ctl_run.json").write_text(json.dumps({qid: {"d1": 1.0, "d2": 0.5}}))
    evaluated = env.ragmeter("eval", "ctl_qrels.json", "ctl_run.json", "--per-query", "-m", "ndcg@10")
    # the readers may refuse control characters (one line, exit 2); if they accept them, they are escaped
    assert evaluated.returncode in (0, 2), evaluated.stderr
    if evaluated.returncode == 0:
        assert "\\x1b" in evaluated.stdout and "[red]x[/red]" in evaluated.stdout
    outputs = [evaluated]
    env.ragmeter("ingest", "hostile.json", "--collection", "hostile", "--test-cases")
    added = env.ragmeter(
        "testcases", "add", "-c", "hostile", "-q", "[red]Q[/red] \x1b[2J\x1b]0;T\x07", "--id", "t\x1b[31m"
    )
    listed = env.ragmeter("testcases", "list", "-c", "hostile")
    assert "[red]What is Madrid?[/red]" in listed.stdout.replace("\n", "") or "[red]Q[/red]" in listed.stdout
    outputs += [added, listed, env.ragmeter("runs", "show", env.run_id), env.ragmeter("runs", "list")]
    outputs.append(env.ragmeter("datasets", "validate", "hostile.json"))
    for done in outputs:
        assert "Traceback" not in done.stderr, done.stderr
        _assert_clean_terminal(done.stdout + done.stderr)
