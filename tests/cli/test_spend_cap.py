"""Spend caps over real HTTP: `--max-cost-usd` at half a run's cost stops the run with what the server billed
at most the cap, stored resumable; resuming with a higher cap finishes with every query once. An unpriced
model under a cap is refused: one line, exit 2, nothing stored."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp")
from cost_fakes import cost_of, prices_file, reply, run_args

from ragmeter.llm.scripted import ScriptedServer

Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    from cli_fakes import scripted_server

    with scripted_server(reply) as srv:
        yield srv


@pytest.fixture
def priced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = prices_file(tmp_path)
    monkeypatch.setenv("RAGMETER_LLM_PRICES", str(path))
    return path


def _runs(db: str) -> list[tuple[str, str, str | None]]:
    with sqlite3.connect(db.removeprefix("sqlite:///")) as conn:
        return conn.execute("SELECT id, status, error FROM runs ORDER BY started_at").fetchall()


def _query_ids(db: str, run_id: str) -> list[str]:
    with sqlite3.connect(db.removeprefix("sqlite:///")) as conn:
        rows = conn.execute("SELECT query_id FROM query_results WHERE run_id = ?", (run_id,)).fetchall()
    return [r[0] for r in rows]


def test_half_the_cost_stops_the_run_within_the_cap_and_a_resume_finishes_it(
    cli_env: dict[str, str], ragmeter_cli: Cli, server: ScriptedServer, priced: Path
) -> None:
    db = cli_env["db"]
    code, out, err = ragmeter_cli(*run_args(server.url, db, "--concurrency", "4"))
    assert code == 0, err
    full: dict[str, Any] = json.loads(out)
    cost = full["usage"]["total"]["cost_usd"]
    assert cost == pytest.approx(cost_of(server.requests), rel=1e-6)  # what we count is what was billed
    assert full["usage"]["judge"]["cost_usd"] > 0 and full["usage"]["generator"]["cost_usd"] > 0

    cap = cost / 2
    before = len(server.requests)
    code, out, err = ragmeter_cli(*run_args(server.url, db, "--concurrency", "4", "--max-cost-usd", cap))
    billed = cost_of(server.requests[before:])
    assert code == 3 and out == "" and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1 and "spend cap" in err and "--resume" in err
    assert 0 < billed <= cap  # it stopped, within the cap
    run_id, status, error = _runs(db)[-1]
    assert status == "failed" and "spend cap" in (error or "") and f"--resume {run_id}" in (error or "")
    stored = _query_ids(db, run_id)
    assert 0 < len(stored) < 60 and len(set(stored)) == len(stored)

    before = len(server.requests)
    code, out, err = ragmeter_cli(
        "run", "--resume", run_id, "--db", db, "--no-progress", "--format", "json", "--max-cost-usd", cost * 2
    )
    assert code == 0, err
    done = json.loads(out)
    assert done["status"] == "completed" and done["n_queries"] == 60
    ids = _query_ids(db, run_id)
    assert len(ids) == 60 and len(set(ids)) == 60  # every query once
    # the whole run's spend (the part before the stop counted from the stored queries) stays under 2x cost
    assert done["usage"]["spend_cap"]["spent_usd"] <= cost * 2
    assert cost_of(server.requests[before:]) < cost  # the stored queries were not asked again


def test_a_judge_cap_caps_the_judge_alone(
    cli_env: dict[str, str], ragmeter_cli: Cli, server: ScriptedServer, priced: Path
) -> None:
    db = cli_env["db"]
    code, out, err = ragmeter_cli(*run_args(server.url, db, "--concurrency", "2", "--limit", "12"))
    assert code == 0, err
    judge_cost = json.loads(out)["usage"]["judge"]["cost_usd"]
    before = len(server.requests)
    code, _, err = ragmeter_cli(
        *run_args(
            server.url, db, "--concurrency", "2", "--limit", "12", "--max-judge-cost-usd", judge_cost / 3
        )
    )
    judged = [r for r in server.requests[before:] if "numbered passages" not in r.system]
    assert code == 3 and "judge" in err, err
    assert 0 < cost_of(judged) <= judge_cost / 3


def test_an_unpriced_model_under_a_cap_is_refused_and_nothing_is_stored(
    cli_env: dict[str, str], ragmeter_cli: Cli, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAGMETER_LLM_PRICES", raising=False)
    code, out, err = ragmeter_cli(*run_args(server.url, cli_env["db"], "--max-cost-usd", "1"))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "'priced' has no known price" in err and "RAGMETER_LLM_PRICES" in err
    assert server.requests == []
    assert not Path(cli_env["db"].removeprefix("sqlite:///")).exists() or _runs(cli_env["db"]) == []
    for bad in ("-1", "nan", "inf"):
        code, _, err = ragmeter_cli(*run_args(server.url, cli_env["db"], "--max-cost-usd", bad))
        assert code == 2 and "--max-cost-usd" in err and len(err.strip().splitlines()) == 1
    for flags, named in ((("--pilot", "5"), "--pilot"), (("--estimate", "--pilot", "0"), "--pilot")):
        code, _, err = ragmeter_cli(*run_args(server.url, cli_env["db"], *flags))
        assert code == 2 and named in err and len(err.strip().splitlines()) == 1, err
    assert server.requests == []


def test_the_estimate_covers_the_full_cost_in_at_least_9_of_10_seeds(
    cli_env: dict[str, str], ragmeter_cli: Cli, server: ScriptedServer, priced: Path
) -> None:
    db = cli_env["db"]
    code, out, err = ragmeter_cli(*run_args(server.url, db))
    assert code == 0, err
    usage = json.loads(out)["usage"]
    cost = usage["total"]["cost_usd"]
    covered, pilots = 0, set()
    for seed in range(10):
        before = len(server.requests)
        code, out, err = ragmeter_cli(
            *run_args(server.url, db, "--estimate", "--pilot", "10", "--seed", seed)
        )
        assert code == 0, err
        e = json.loads(out)
        assert e["pilot_queries"] == 10 and e["full_queries"] == 60
        assert e["judge"]["expected_usd"] > 0 and e["system"]["expected_usd"] > 0  # judge and system apart
        assert cost_of(server.requests[before:]) < cost / 3  # only the pilot was run
        lo, hi = e["total"]["ci95"]
        covered += lo <= cost <= hi
        pilots.add(e["pilot_run_id"])
    assert covered >= 9
    runs = _runs(db)
    assert len(pilots) == 10 and {r[0] for r in runs} >= pilots  # each pilot stored as a run of its own
    assert all(status == "completed" for rid, status, _ in runs if rid in pilots)
    assert [len(_query_ids(db, rid)) for rid in sorted(pilots)] == [10] * 10


def test_a_users_own_system_has_an_unknown_cost_not_zero(
    cli_env: dict[str, str], ragmeter_cli: Cli, server: ScriptedServer, priced: Path
) -> None:
    spec = f"openai-compatible:priced@{server.url}"
    code, out, err = ragmeter_cli(
        "run", "-d", cli_env["dataset"], "-s", "cli_fakes:system_a", "--no-generation", "--judge", spec,
        "--metrics", "mrr,retrieval_grade", "--db", cli_env["db"], "--no-progress", "--estimate", "--pilot", "3",
    )  # fmt: skip
    assert code == 0, err
    system = next(line for line in out.splitlines() if line.strip().startswith("system:"))
    assert "unknown" in system and "$0" not in system
    assert "cost:" in out and "unknown" in next(x for x in out.splitlines() if "cost:" in x)
    assert "judge:" in out and "95% CI" in next(x for x in out.splitlines() if "judge:" in x)
