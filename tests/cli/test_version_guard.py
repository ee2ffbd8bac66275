"""The version guard end to end: runs judged under different prompts are not compared until rescored; a
run whose values carry no versions (0.1) is refused unless allowed; a gate refuses mixed versions."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator

import pytest

pytest.importorskip("aiohttp")
from ragmeter.llm.scripted import ScriptedRequest, Step

Cli = Callable[..., tuple[int, str, str]]


def _grade(req: ScriptedRequest) -> Step:
    grade = 9 if "France" in req.user or "Spain" in req.user else 4
    return Step(text=json.dumps({"reasoning": "checked", "grade": grade}))


@pytest.fixture
def judge() -> Iterator[str]:
    from cli_fakes import scripted_server

    with scripted_server(_grade) as server:
        yield f"openai-compatible:scripted@{server.url}"


@pytest.fixture
def changed_prompt() -> Iterator[Callable[[], str]]:
    """Edits the retrieval_grade prompt's text in place (as a user editing the template would); restored after."""
    from ragmeter.judges import JUDGES, PROMPTS

    judge_obj = JUDGES["retrieval_grade"]
    original = judge_obj.prompt

    def change() -> str:
        new = dataclasses.replace(original, system=original.system + " Be strict.")
        object.__setattr__(judge_obj, "prompt", new)
        PROMPTS["retrieval_grade"] = new
        return new.version

    yield change
    object.__setattr__(judge_obj, "prompt", original)
    PROMPTS["retrieval_grade"] = original


def _run(cli: Cli, env: dict[str, str], judge: str, *extra: str) -> dict[str, object]:
    code, out, err = cli(
        "run", "-d", env["dataset"], "-s", "cli_fakes:system_a", "--no-generation", "--no-progress",
        "--judge", judge, "--metrics", "mrr,retrieval_grade", "--db", env["db"], "--format", "json", *extra,
    )  # fmt: skip
    assert code == 0, err
    run: dict[str, object] = json.loads(out)
    return run


def test_prompt_change_refused_until_rescored(
    cli_env: dict[str, str], ragmeter_cli: Cli, judge: str, changed_prompt: Callable[[], str]
) -> None:
    a = _run(ragmeter_cli, cli_env, judge)
    old = a["versions"]["prompt.retrieval_grade"]  # type: ignore[index]
    new = changed_prompt()
    assert new != old
    b = _run(ragmeter_cli, cli_env, judge)
    code, out, err = ragmeter_cli("runs", "compare", a["run_id"], b["run_id"], "--db", cli_env["db"])
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert "retrieval_grade" in lines[0] and old in lines[0] and new in lines[0]

    code, out, err = ragmeter_cli(
        "runs", "compare", a["run_id"], b["run_id"], "--allow-version-mismatch", "--db", cli_env["db"]
    )
    assert code == 0 and "version mismatch allowed: retrieval_grade" in err

    code, _, err = ragmeter_cli("rescore", str(a["run_id"]), "--db", cli_env["db"], "--format", "json")
    assert code == 0, err
    code, out, err = ragmeter_cli(
        "runs", "compare", a["run_id"], b["run_id"], "--db", cli_env["db"], "--format", "json"
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["version_mismatches"] == []
    grade = next(r for r in report["metrics"] if r["metric"] == "retrieval_grade")
    assert grade["delta"] == pytest.approx(0.0) and grade["n_pairs"] == 6


def test_unversioned_run_refused_unless_allowed(cli_env: dict[str, str], ragmeter_cli: Cli) -> None:
    from ragmeter.models import MetricResult
    from ragmeter.store import open_store

    ids = []
    for system in ("cli_fakes:system_a", "cli_fakes:system_b"):
        code, out, err = ragmeter_cli(
            "run", "-d", cli_env["dataset"], "-s", system, "--no-generation", "--no-progress",
            "--metrics", "mrr", "--db", cli_env["db"], "--format", "json",
        )  # fmt: skip
        assert code == 0, err
        ids.append(json.loads(out)["run_id"])
    store = open_store(cli_env["db"])
    try:  # make run A look like a 0.1 run: its values carry no version
        old = store.get_run(ids[0])
        store.put_metric_values(
            ids[0],
            {
                q.query_id: {"mrr": MetricResult(name="mrr", value=q.metrics["mrr"].value, version=None)}
                for q in old.per_query
            },
        )
    finally:
        store.close()
    code, out, err = ragmeter_cli("runs", "compare", *ids, "--db", cli_env["db"])
    assert code == 2 and len(err.strip().splitlines()) == 1 and "mrr" in err and "unknown" in err
    code, out, err = ragmeter_cli("runs", "compare", *ids, "--allow-version-mismatch", "--db", cli_env["db"])
    assert code == 0 and "mrr" in out
    code, _, err = ragmeter_cli("rescore", ids[0], "--db", cli_env["db"])
    assert code == 0, err
    code, out, err = ragmeter_cli("runs", "compare", *ids, "--db", cli_env["db"])
    assert code == 0, err


def test_gate_refuses_mixed_versions() -> None:
    from ragmeter.experiments.version_guard import mixed_versions
    from ragmeter.models import EvalRunResult, MetricResult, QueryEvalResult

    def q(qid: str, version: str) -> QueryEvalResult:
        return QueryEvalResult(
            query_id=qid, metrics={"mrr": MetricResult(name="mrr", value=1.0, version=version)}
        )

    run = EvalRunResult(per_query=[q("a", "1"), q("b", "2")])
    assert mixed_versions(run, ["mrr"]) == ["mrr mixes versions 1+2"]
    assert mixed_versions(EvalRunResult(per_query=[q("a", "1"), q("b", "1")]), ["mrr"]) == []
