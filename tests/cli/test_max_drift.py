"""`run --max-drift X --card CARD`: a judge whose stored card against CARD drifted more than X is refused
(one line, exit 2, no run stored); within X the run goes on; a judge with no card against CARD is refused."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp")
from ragmeter.llm.scripted import ScriptedRequest, ScriptedServer, Step

Cli = Callable[..., tuple[int, str, str]]
GRADES = {"France": 9, "Germany": 2, "Italy": 7, "Spain": 4, "Portugal": 8, "Austria": 3}


def _grade(req: ScriptedRequest) -> Step:
    """Model v1 grades by country; v2 (the new prompt) fails Italy: one label of six flips."""
    country = re.search(r"capital of (\w+)\?", req.user).group(1)  # type: ignore[union-attr]
    grade = 3 if req.body.get("model") == "v2" and country == "Italy" else GRADES[country]
    return Step(text=json.dumps({"reasoning": "checked", "grade": grade}))


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    from cli_fakes import scripted_server

    with scripted_server(_grade) as srv:
        yield srv


def cards_v2_id(db: str) -> str:
    from ragmeter.store import open_store
    from ragmeter.validity.storage import stored_cards

    with open_store(db) as store:
        return str(next(c.card_id for c in stored_cards(store) if c.drift is not None))


def _runs(db: str) -> int:
    from ragmeter.store import open_store

    with open_store(db) as store:
        return len(store.list_runs())


def test_max_drift_refuses_a_drifted_judge(
    cli_env: dict[str, str], ragmeter_cli: Cli, server: ScriptedServer
) -> None:
    v1, v2 = (f"openai-compatible:{m}@{server.url}" for m in ("v1", "v2"))
    card = ["judges", "card", "-d", cli_env["dataset"], "--metric", "retrieval_grade", "--db", cli_env["db"],
            "--repeats", "1", "--perturbations", "padding", "--format", "json"]  # fmt: skip
    code, out, err = ragmeter_cli(*card, "--judge", v1)
    assert code == 0, err
    anchor: dict[str, Any] = json.loads(out)
    code, out, err = ragmeter_cli(*card, "--judge", v2, "--against", anchor["card_id"])
    assert code == 0, err
    drift = json.loads(out)["drift"]
    assert drift["items"] == ["q-italy"] and drift["share"] == pytest.approx(1 / 6)

    run = ["run", "-d", cli_env["dataset"], "-s", "cli_fakes:system_a", "--no-generation", "--no-progress",
           "--metrics", "mrr,retrieval_grade", "--db", cli_env["db"], "--format", "json"]  # fmt: skip
    before = _runs(cli_env["db"])
    code, out, err = ragmeter_cli(*run, "--judge", v2, "--max-drift", "0.1", "--card", anchor["card_id"])
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "0.167" in err and "--max-drift 0.1" in err
    assert _runs(cli_env["db"]) == before  # nothing stored
    # a judge with no card against the anchor: refused too
    code, _, err = ragmeter_cli(*run, "--judge", v1, "--max-drift", "0.5", "--card", anchor["card_id"])
    assert code == 2 and "no stored card" in err
    code, _, err = ragmeter_cli(*run, "--judge", v2, "--max-drift", "0.5")
    assert code == 2 and "--card" in err and len(err.strip().splitlines()) == 1
    # within the allowed drift the run goes on
    code, out, err = ragmeter_cli(*run, "--judge", v2, "--max-drift", "0.2", "--card", anchor["card_id"])
    assert code == 0, err
    done = json.loads(out)
    assert done["aggregate"]["retrieval_grade"]["n"] == 6
    assert _runs(cli_env["db"]) == before + 1

    # `runs show` puts the judge's newest card beside its judged metric; a card's own run shows the card
    code, out, err = ragmeter_cli("runs", "show", done["run_id"], "--db", cli_env["db"])
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.startswith("judge card"))
    assert "retrieval_grade" in line and f"drift 0.167 against {anchor['card_id']}" in line
    code, out, _ = ragmeter_cli("runs", "show", done["run_id"], "--db", cli_env["db"], "--format", "json")
    assert json.loads(out)["judge_cards"]["retrieval_grade"]["drift"]["items"] == ["q-italy"]
    code, out, _ = ragmeter_cli("runs", "show", anchor["card_id"], "--db", cli_env["db"])
    assert code == 0 and "bias padding vs original" in out and "flagged: nothing" in out
    # and in the HTML report's run notes
    report_dir = Path(cli_env["db"].removeprefix("sqlite:///")).parent / "report"
    code, _, err = ragmeter_cli(
        "report", done["run_id"], "--out", str(report_dir), "--no-plots", "--db", cli_env["db"]
    )
    assert code == 0, err
    html = (report_dir / "report.html").read_text(encoding="utf-8")
    assert f"judge card {cards_v2_id(cli_env['db'])} for retrieval_grade" in html
