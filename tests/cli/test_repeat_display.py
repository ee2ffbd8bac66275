"""A run judged in repeats, as the CLI shows it: `runs show` (table and JSON), `runs compare` and the HTML
report carry each judge metric's alpha across the repeats, its interval and the flip share."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytest.importorskip("aiohttp")
from ragmeter.llm.scripted import ScriptedRequest, ScriptedServer, Step

Cli = Callable[..., tuple[int, str, str]]
GRADES = {"France": 9, "Germany": 2, "Italy": 7, "Spain": 4, "Portugal": 8, "Austria": 3}


def _grade(req: ScriptedRequest) -> Step:  # by query, never by repeat: alpha 1
    country = re.search(r"capital of (\w+)\?", req.user).group(1)  # type: ignore[union-attr]
    return Step(text=json.dumps({"reasoning": "checked", "grade": GRADES[country]}))


@pytest.fixture
def judge() -> Iterator[tuple[str, ScriptedServer]]:
    from cli_fakes import scripted_server

    with scripted_server(_grade) as server:
        yield f"openai-compatible:scripted@{server.url}", server


def _run(cli: Cli, env: dict[str, str], spec: str, system: str, *extra: str) -> dict[str, object]:
    code, out, err = cli(
        "run", "-d", env["dataset"], "-s", system, "--no-generation", "--no-progress", "--judge", spec,
        "--metrics", "mrr,retrieval_grade", "--db", env["db"], "--format", "json", *extra,
    )  # fmt: skip
    assert code == 0, err
    return dict(json.loads(out))


def test_show_compare_and_report_carry_the_stability(
    cli_env: dict[str, str], ragmeter_cli: Cli, judge: tuple[str, ScriptedServer], tmp_path: Path
) -> None:
    spec, server = judge
    a = _run(
        ragmeter_cli,
        cli_env,
        spec,
        "cli_fakes:system_a",
        "--repeat",
        "3",
        "--fail-under",
        "retrieval_grade=4.5",
    )
    assert len(server.requests) == 18  # 6 queries x 3 repeats
    stab = a["stability"]["retrieval_grade"]  # type: ignore[index]
    assert stab["alpha"] == pytest.approx(1.0) and stab["repeats"] == 3 and stab["items"] == 6
    assert stab["level"] == "ordinal" and stab["seeds"] == [42, 43, 44] and stab["temperature"] == 0.7
    b = _run(
        ragmeter_cli,
        cli_env,
        spec,
        "cli_fakes:system_b",
        "--repeat",
        "2",
        "--repeat-temperature",
        "0.3",
    )
    assert b["stability"]["retrieval_grade"]["seeds"] == [42, 43]  # type: ignore[index]

    code, out, err = ragmeter_cli("runs", "show", str(a["run_id"]), "--db", cli_env["db"])
    assert code == 0, err
    assert "judge stability across repeats" in out
    row = next(
        line
        for line in out.splitlines()
        if line.strip().strip("│┃ ").startswith("retrieval_grade") and "ordinal" in line
    )
    assert "1.000" in row and "3 x 6" in row and "0.000 at 4.5 (gate)" in row
    code, out, err = ragmeter_cli("runs", "show", str(a["run_id"]), "--db", cli_env["db"], "--format", "json")
    shown = json.loads(out)
    assert shown["stability"] == a["stability"]
    q = next(r for r in shown["per_query"] if r["query_id"] == "q-germany")
    assert [v["value"] for v in q["repeats"]["retrieval_grade"]] == [2.0, 2.0, 2.0]

    ids = (str(a["run_id"]), str(b["run_id"]))
    code, out, err = ragmeter_cli("runs", "compare", *ids, "--db", cli_env["db"], "--resamples", "200")
    assert code == 0, err
    assert f"judge stability across repeats, run {ids[0]}" in out
    assert f"judge stability across repeats, run {ids[1]}" in out and "temperature 0.3" in out
    code, out, err = ragmeter_cli(
        "runs", "compare", *ids, "--db", cli_env["db"], "--resamples", "200", "--format", "json"
    )
    assert json.loads(out)["stability"][ids[1]]["retrieval_grade"]["repeats"] == 2

    code, out, err = ragmeter_cli(
        "report", ids[0], "--db", cli_env["db"], "--out", str(tmp_path / "rep"), "--no-plots"
    )
    assert code == 0, err
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "Judge stability across repeats" in html and "seeds 42, 43, 44" in html


def test_repeat_below_one_is_refused_and_stores_nothing(
    cli_env: dict[str, str], ragmeter_cli: Cli, judge: tuple[str, ScriptedServer]
) -> None:
    import sqlite3

    spec, server = judge
    for bad in ("0", "-2"):
        code, _, err = ragmeter_cli(
            "run", "-d", cli_env["dataset"], "-s", "cli_fakes:system_a", "--no-generation", "--no-progress",
            "--judge", spec, "--metrics", "retrieval_grade", "--db", cli_env["db"], "--repeat", bad,
        )  # fmt: skip
        assert code == 2 and len(err.strip().splitlines()) == 1 and "repeat" in err and "Traceback" not in err
    code, _, err = ragmeter_cli(
        "run", "-d", cli_env["dataset"], "-s", "cli_fakes:system_a", "--no-generation", "--no-progress",
        "--metrics", "mrr", "--db", cli_env["db"], "--repeat", "3",
    )  # fmt: skip
    assert code == 2 and "needs a judge" in err and len(err.strip().splitlines()) == 1
    code, _, err = ragmeter_cli("run", "--resume", "x", "--repeat", "2", "--db", cli_env["db"])
    assert code == 2 and "--resume" in err and len(err.strip().splitlines()) == 1
    code, _, err = ragmeter_cli(
        "run", "-d", cli_env["dataset"], "-s", "cli_fakes:system_a", "--no-generation", "--judge", spec,
        "--metrics", "retrieval_grade", "--db", cli_env["db"], "--repeat", "2", "--repeat-temperature", "nan",
    )  # fmt: skip
    assert code == 2 and "--repeat-temperature" in err and len(err.strip().splitlines()) == 1
    assert not server.requests
    db = Path(cli_env["db"].removeprefix("sqlite:///"))
    if db.exists():
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
