"""`run --judge CHEAP --escalate-to STRONG --card FILE` over real HTTP: two scripted judges on 127.0.0.1. The
cheap one is sure (and right) on easy queries, unsure on hard ones; exactly the queries under the card's
threshold go to the strong one, each value names its judge, and the summary's calls per judge are the
servers' request counts."""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytest.importorskip("aiohttp")
from ragmeter.llm.scripted import ScriptedRequest, ScriptedServer, Step
from ragmeter.validity.calibration import EscalationCalibration, save_calibration

Cli = Callable[..., tuple[int, str, str]]
CHEAP_GRADES = {"France": 9, "Germany": 8, "Italy": 9, "Spain": 7, "Portugal": 2, "Austria": 3}
SURE = {"France": 0.97, "Germany": 0.9, "Italy": 0.81, "Spain": 0.95, "Portugal": 0.79, "Austria": 0.4}
THRESHOLD = 0.8
HARD = {c for c, p in SURE.items() if p < THRESHOLD}
STRONG_GRADE = 6


def _country(req: ScriptedRequest) -> str:
    return re.search(r"capital of (\w+)\?", req.user).group(1)  # type: ignore[union-attr]


def _cheap(req: ScriptedRequest) -> Step:
    country = _country(req)
    tokens = [('{"reasoning": "checked", "grade": ', -0.02), (str(CHEAP_GRADES[country]), math.log(SURE[country])),
              ("}", -0.001)]  # fmt: skip
    return Step(text="".join(t for t, _ in tokens), logprobs=tokens)


def _strong(req: ScriptedRequest) -> Step:
    return Step(text=json.dumps({"reasoning": "looked closely", "grade": STRONG_GRADE}))


@pytest.fixture
def judges() -> Iterator[tuple[ScriptedServer, ScriptedServer]]:
    from cli_fakes import scripted_server

    with scripted_server(_cheap) as cheap, scripted_server(_strong) as strong:
        yield cheap, strong


def _card(path: Path, judge: str, **over: object) -> Path:
    fields: dict[str, object] = {
        "judge": judge, "metric": "retrieval_grade", "confidence": "logprob", "target_agreement": 0.9,
        "risk": 0.1, "threshold": THRESHOLD, "coverage": 0.7, "n_labels": 200,
    }  # fmt: skip
    return save_calibration(EscalationCalibration.model_validate({**fields, **over}), path)


def _args(env: dict[str, str], cheap: str, strong: str, card: Path, *extra: str) -> list[str]:
    return [
        "run", "-d", env["dataset"], "-s", "cli_fakes:system_a", "--no-generation", "--no-progress",
        "--judge", cheap, "--escalate-to", strong, "--card", str(card), "--metrics", "mrr,retrieval_grade",
        "--db", env["db"], *extra,
    ]  # fmt: skip


def test_exactly_the_unsure_items_escalate_and_calls_match_the_servers(
    cli_env: dict[str, str], ragmeter_cli: Cli, judges: tuple[ScriptedServer, ScriptedServer], tmp_path: Path
) -> None:
    cheap_srv, strong_srv = judges
    cheap, strong = f"openai-compatible:cheap@{cheap_srv.url}", f"openai-compatible:strong@{strong_srv.url}"
    card = _card(tmp_path / "card.json", cheap)
    code, out, err = ragmeter_cli(*_args(cli_env, cheap, strong, card, "--format", "json"))
    assert code == 0, err
    result = json.loads(out)
    by_country = {_country_of(r["question"]): r["metrics"]["retrieval_grade"] for r in result["per_query"]}
    escalated = {c for c, m in by_country.items() if m["details"]["judged_by"] == "strong"}
    assert escalated == HARD == {"Portugal", "Austria"}
    for country, m in by_country.items():
        if country in HARD:
            assert m["value"] == STRONG_GRADE and m["details"]["judge_model"] == "strong"
            assert m["details"]["cheap_confidence"] == pytest.approx(SURE[country])
        else:
            assert m["value"] == CHEAP_GRADES[country] and m["details"]["judge_model"] == "cheap"
            assert m["details"]["confidence"] == pytest.approx(SURE[country])
    # the servers saw: every query once at the cheap judge (asking for logprobs), the hard ones at the strong
    assert len(cheap_srv.requests) == 6 and all(r.body.get("logprobs") is True for r in cheap_srv.requests)
    assert sorted(_country(r) for r in strong_srv.requests) == sorted(HARD)
    esc = result["usage"]["escalation"]
    assert esc["cheap"]["calls"] == len(cheap_srv.requests) and esc["strong"]["calls"] == len(
        strong_srv.requests
    )
    assert esc["cheap"]["answered"] == 4 and esc["strong"]["answered"] == 2
    assert esc["coverage"] == pytest.approx(4 / 6) and esc["threshold"] == THRESHOLD
    assert "probability >= 90%" in esc["guarantee"]
    assert result["usage"]["total"]["calls"] == 8
    # each stored value names its judge
    with sqlite3.connect(cli_env["db"].removeprefix("sqlite:///")) as conn:
        rows = conn.execute("SELECT details FROM metric_values WHERE name = 'retrieval_grade'").fetchall()
    stored = [json.loads(d)["judged_by"] for (d,) in rows]
    assert sorted(stored) == ["cheap"] * 4 + ["strong"] * 2

    code, out, err = ragmeter_cli(*_args(cli_env, cheap, strong, card))  # the table shows it too
    assert code == 0, err
    assert "escalation on retrieval_grade" in out and "guarantee:" in out and "coverage 66.7%" in out


def _country_of(question: str) -> str:
    return re.search(r"capital of (\w+)\?", question).group(1)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ("no-card", "--escalate-to: needs --card"),
        ("other-judge", "field judge"),
        ("repeats", "field confidence"),
        ("repeat", "--repeat"),
    ],
)
def test_bad_cascades_are_refused_before_anything_runs(
    cli_env: dict[str, str], ragmeter_cli: Cli, judges: tuple[ScriptedServer, ScriptedServer], tmp_path: Path,
    change: str, needle: str,
) -> None:  # fmt: skip
    cheap_srv, strong_srv = judges
    cheap, strong = f"openai-compatible:cheap@{cheap_srv.url}", f"openai-compatible:strong@{strong_srv.url}"
    over: dict[str, object] = {"confidence": "repeats", "repeats": 5} if change == "repeats" else {}
    card = _card(tmp_path / "card.json", strong if change == "other-judge" else cheap, **over)
    args = _args(cli_env, cheap, strong, card)
    if change == "no-card":
        i = args.index("--card")
        del args[i : i + 2]
    if change == "repeat":
        args += ["--repeat", "3"]
    code, _out, err = ragmeter_cli(*args)
    assert code == 2 and needle in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not cheap_srv.requests and not strong_srv.requests
    assert not Path(cli_env["db"].removeprefix("sqlite:///")).exists() or not _runs(cli_env["db"])


def _runs(db: str) -> list[tuple[str]]:
    with sqlite3.connect(db.removeprefix("sqlite:///")) as conn:
        return conn.execute("SELECT id FROM runs").fetchall()


def test_the_strong_judges_spend_counts_under_the_judge_cap_on_resume() -> None:
    from ragmeter.llm.spend import spent_by_role

    usage = {
        "judge": {"retrieval_grade": {"cost_usd": 0.25}},
        "judge_strong": {"retrieval_grade": {"cost_usd": 0.5}},
        "generator": {"generator": {"cost_usd": 1.0}},
    }
    assert spent_by_role(usage) == {"judge": 0.75, "generator": 1.0}
