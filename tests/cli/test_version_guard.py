"""The version guard end to end: a metric judged under different prompts is left out of a comparison (one
line naming both versions) until rescored, every other metric is compared; a run whose values carry no
versions (0.1) has them left out unless allowed; judge repeats are part of the version; a gate on mixed
versions is refused with exit 2."""

from __future__ import annotations

import csv
import dataclasses
import json
from collections.abc import Callable, Iterator
from pathlib import Path

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


def test_prompt_change_left_out_until_rescored(
    cli_env: dict[str, str], ragmeter_cli: Cli, judge: str, changed_prompt: Callable[[], str]
) -> None:
    a = _run(ragmeter_cli, cli_env, judge)
    old = a["versions"]["prompt.retrieval_grade"]  # type: ignore[index]
    new = changed_prompt()
    assert new != old
    b = _run(ragmeter_cli, cli_env, judge)
    code, out, err = ragmeter_cli(
        "runs", "compare", a["run_id"], b["run_id"], "--db", cli_env["db"], "--format", "json"
    )
    # every metric whose versions agree is compared; the judge metric and the total score made from it
    # are left out, one line each naming both versions
    assert code == 0, err
    lines = err.strip().splitlines()
    assert "Traceback" not in err and len(lines) == 2, lines
    for line, name in zip(sorted(lines), ("retrieval_grade", "total_score"), strict=True):
        assert line.startswith(f"not compared: {name}: ") and old in line and new in line
    report = json.loads(out)
    compared = {r["metric"] for r in report["metrics"]}
    assert "mrr" in compared and not compared & {"retrieval_grade", "total_score"}
    assert [x.split(":")[0] for x in report["left_out"]] == ["retrieval_grade", "total_score"]
    # report: the same, its significance table tests mrr and leaves the judge metrics out
    out_dir = Path(cli_env["db"].removeprefix("sqlite:///")).parent / "rep"
    code, out, err = ragmeter_cli(
        "report", a["run_id"], b["run_id"], "--db", cli_env["db"], "--out", str(out_dir), "--no-plots"
    )
    assert code == 0, err
    assert "not compared: retrieval_grade: " in err and "Traceback" not in err
    tested = {row["metric"] for row in csv.DictReader((out_dir / "significance.csv").open())}
    assert "mrr" in tested and not tested & {"retrieval_grade", "total_score"}

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


def test_unversioned_values_left_out_unless_allowed(cli_env: dict[str, str], ragmeter_cli: Cli) -> None:
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
    assert code == 0 and len(err.strip().splitlines()) == 1 and "mrr" in err and "unknown" in err
    assert "not compared: mrr" in err and "mrr" not in out.split("queries that changed most")[0]
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


def _judged(run_id: str, *, repeat: int = 1, temperature: float | None = None) -> object:
    from ragmeter.models import EvalConfig, EvalRunResult, MetricResult, QueryEvalResult

    metrics = {
        "retrieval_grade": MetricResult(name="retrieval_grade", value=7.0, version="retrieval_grade/v1+abc"),
        "mrr": MetricResult(name="mrr", value=1.0, version="1"),
    }
    return EvalRunResult(
        run_id=run_id,
        config=EvalConfig(repeat=repeat, repeat_temperature=temperature),
        versions={"judge": json.dumps({"backend": "openai", "model": "m", "params": {"temperature": 0}})},
        per_query=[QueryEvalResult(query_id="q", metrics=metrics)],
        record={"repeat": repeat, "repeat_temperature": temperature},
    )


def test_judge_repeats_are_part_of_the_version() -> None:
    from ragmeter.errors import InputError
    from ragmeter.experiments.version_guard import check_comparable, guard_runs, version_conflicts

    once, mean3 = _judged("once"), _judged("mean3", repeat=3, temperature=0.7)
    (line,) = version_conflicts(once, mean3)  # type: ignore[arg-type]
    assert line.startswith("retrieval_grade: ") and "judged once" in line
    assert "mean of 3 repeats at temperature 0.7" in line and "seed" in line
    assert version_conflicts(mean3, _judged("again", repeat=3, temperature=0.7)) == []  # type: ignore[arg-type]
    guarded = guard_runs([once, mean3])  # type: ignore[list-item]
    assert guarded.left_out == [line] and guarded.allowed == []
    assert all(set(q.metrics) == {"mrr"} for r in guarded.runs for q in r.per_query)
    allowed = guard_runs([once, mean3], allow=True)  # type: ignore[list-item]
    assert allowed.allowed == [line] and "retrieval_grade" in allowed.runs[1].per_query[0].metrics
    with pytest.raises(InputError, match="mean of 3"):  # a gate (plan, experiment) on it is refused
        check_comparable([once, mean3], metrics=["retrieval_grade"])  # type: ignore[list-item]


def test_a_fail_under_gate_on_mixed_versions_is_refused_with_exit_2(
    cli_env: dict[str, str], ragmeter_cli: Cli, judge: str
) -> None:
    from ragmeter.store import open_store

    run_id = str(_run(ragmeter_cli, cli_env, judge)["run_id"])
    with open_store(cli_env["db"]) as store:  # one grade made by another prompt (a resume across versions)
        q = store.get_run(run_id).per_query[0]
        old = q.metrics["retrieval_grade"].model_copy(update={"version": "retrieval_grade/v0"})
        store.put_metric_values(run_id, {q.query_id: {"retrieval_grade": old}})
    code, out, err = ragmeter_cli(
        "run", "--resume", run_id, "--no-progress", "--fail-under", "retrieval_grade=1", "--db", cli_env["db"]
    )
    assert code == 2, (out, err)
    assert "retrieval_grade mixes versions" in err and "refused" in err and "Traceback" not in err
