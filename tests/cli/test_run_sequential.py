"""`ragmeter run --fail-under M=V --sequential [--alpha A]` end to end: the real CLI entry point, a SQLite
file store, a `module:function` system; refusals are one line, exit 2, nothing stored."""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runner"))
from seq_fakes import make_seq_dataset

Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture
def seq_env(cli_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The CLI tests' store, and a dataset of 200 queries (a sequence settles after tens of them)."""
    (tmp_path / "gate.json").write_text(make_seq_dataset().model_dump_json())
    return {**cli_env, "dataset": str(tmp_path / "gate.json")}


def _run(cli: Cli, env: dict[str, str], system: str, *extra: str) -> tuple[int, str, str]:
    return cli(
        "run",
        "--dataset",
        env["dataset"],
        "--system",
        f"seq_fakes:{system}",
        "--no-generation",
        "--metrics",
        "hit@1,ndcg@3",
        "--top-k",
        "1,3",
        "--db",
        env["db"],
        "--no-progress",
        *extra,
    )


def _stored_runs(env: dict[str, str]) -> int:
    path = Path(env["db"].removeprefix("sqlite:///"))
    if not path.exists():
        return 0
    with sqlite3.connect(path) as conn:
        tables = {r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")}
        return int(conn.execute("select count(*) from runs").fetchone()[0]) if "runs" in tables else 0


def test_a_passing_gate_stops_early_exits_0_and_is_shown(ragmeter_cli: Cli, seq_env: dict[str, str]) -> None:
    code, out, err = _run(
        ragmeter_cli,
        seq_env,
        "good_retrieve",
        "--fail-under",
        "hit@1=0.7",
        "--sequential",
        "--format",
        "json",
    )
    assert code == 0, err
    data = json.loads(out)
    seq = data["sequential"]
    assert data["status"] == "completed" and seq["stopped_early"] and seq["decision"] == "pass"
    assert data["n_queries"] == seq["queries_evaluated"] < 200 and seq["order_seed"] == 42
    code, shown, err = ragmeter_cli("runs", "show", data["run_id"], "--db", seq_env["db"])
    assert code == 0, err
    assert "sequential gate: pass (stopped early" in shown and "hit@1 >= 0.7: pass" in shown
    assert f"{200 - seq['queries_evaluated']} queries" in shown  # what stopping saved


def test_a_failing_gate_stops_early_and_exits_1_then_resumes_to_the_full_run(
    ragmeter_cli: Cli, seq_env: dict[str, str]
) -> None:
    code, out, err = _run(
        ragmeter_cli,
        seq_env,
        "even_retrieve",
        "--fail-under",
        "hit@1=0.8",
        "--sequential",
        "--alpha",
        "0.1",
        "--seed",
        "5",
        "--format",
        "json",
        "--junit-xml",
        "gates.xml",
    )
    assert code == 1
    assert (
        "hit@1 = " in Path("gates.xml").read_text()
        and "(sequential decision over all queries)" in Path("gates.xml").read_text()
    )
    data = json.loads(out)
    seq = data["sequential"]
    assert (
        seq["stopped_early"] and seq["decision"] == "fail" and seq["alpha"] == 0.1 and seq["order_seed"] == 5
    )
    assert "hit@1: the mean over all 200 queries is < 0.8 (sequential gate" in err
    code, out, err = ragmeter_cli(
        "run",
        "--resume",
        data["run_id"],
        "--db",
        seq_env["db"],
        "--format",
        "json",
        "--fail-under",
        "hit@1=0.8",
    )
    assert code == 1  # the full run's mean, 0.5, is short of 0.8 too
    full = json.loads(out)
    assert full["n_queries"] == 200 and full["aggregate"]["hit@1"]["mean"] == pytest.approx(0.5)
    assert full["sequential"]["stopped_early"] is False and full["sequential"]["resumed_after_stop"]
    assert "hit@1 = 0.5000 < 0.8" in err


@pytest.mark.parametrize(
    ("args", "source"),
    [
        (("--sequential",), "--sequential"),
        (("--fail-under", "hit@1=0.5", "--sequential", "--alpha", "1.5"), "--alpha"),
        (("--fail-under", "hit@1=0.5", "--sequential", "--alpha", "0"), "--alpha"),
        (("--fail-under", "hit@1=0.5", "--alpha", "0.1"), "--alpha"),
        (("--fail-under", "pass_rate_8=50", "--sequential"), "pass_rate_8 cannot be gated sequentially"),
    ],
)
def test_bad_sequential_flags_are_one_line_exit_2_and_store_nothing(
    ragmeter_cli: Cli, seq_env: dict[str, str], args: tuple[str, ...], source: str
) -> None:
    code, out, err = _run(ragmeter_cli, seq_env, "good_retrieve", *args)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and source in lines[0] and "Traceback" not in err
    assert _stored_runs(seq_env) == 0


def test_resume_does_not_take_sequential_flags(ragmeter_cli: Cli, seq_env: dict[str, str]) -> None:
    code, _, err = ragmeter_cli("run", "--resume", "abc", "--sequential", "--db", seq_env["db"])
    assert code == 2 and "--sequential" in err and len(err.strip().splitlines()) == 1
