"""Flaky gates (`run --repeat N`): a scripted judge over real HTTP that scores one metric at random and the
other the same every time. The random metric's gate is reported flaky (console, JSON, JUnit `skipped`) and
the exit code follows the stable gate, unless `--flaky fail`; each query carries its all-k pass beside its
mean."""

from __future__ import annotations

import json
import random
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp")
from ragmeter.judges.prompts import layout_name
from ragmeter.llm.scripted import ScriptedRequest, ScriptedServer, Step
from scripted_servers import by_judge

Cli = Callable[..., tuple[int, str, str]]
REPEATS = 5


def answering_system(question: str, k: int) -> dict[str, Any]:
    """cli_fakes' ranking, with an answer (so that the answer judges run)."""
    from cli_fakes import system_a

    return {"results": system_a(question, k), "answer": "It is the capital city."}


def random_score(req: ScriptedRequest) -> int:
    """A score drawn at random, a pure function of the question and the repeat's seed (the same call gives
    the same draw however the calls interleave)."""
    return random.Random(f"{req.user}|{req.body.get('seed')}").randint(0, 10)


def _coin(req: ScriptedRequest) -> Step:
    return Step(text=json.dumps({"reasoning": "coin", "score": random_score(req)}))


# groundedness: the same score every time; every other judge: a coin
_judge = by_judge(
    {"groundedness": lambda req: Step(text=json.dumps({"reasoning": "backed", "score": 8}))}, default=_coin
)


@pytest.fixture
def judge() -> Iterator[tuple[str, ScriptedServer]]:
    from cli_fakes import scripted_server

    with scripted_server(_judge) as server:
        yield f"openai-compatible:scripted@{server.url}", server


def _run(cli: Cli, env: dict[str, str], spec: str, *extra: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = cli(
        "run", "-d", env["dataset"], "-s", "test_flaky_gates:answering_system", "--no-progress",
        "--judge", spec, "--metrics", "mrr,groundedness,relevance", "--db", env["db"], "--format", "json",
        "--repeat", str(REPEATS), *extra,
    )  # fmt: skip
    return code, json.loads(out) if out.strip() else {}, err


def _expected_repeat_means(server: ScriptedServer) -> list[float]:
    """What the server itself answered for relevance, by repeat seed: each repeat's mean over the queries."""
    by_seed: dict[int, list[float]] = {}
    for req in server.requests:
        if layout_name(req.user) == "relevance":
            by_seed.setdefault(int(req.body["seed"]), []).append(random_score(req) / 10)
    return [sum(v) / len(v) for _, v in sorted(by_seed.items())]


GATES = ("--fail-under", "relevance=0.5", "--fail-under", "groundedness=0.7")


def test_the_random_gate_is_flaky_and_the_exit_code_follows_the_stable_one(
    cli_env: dict[str, str], ragmeter_cli: Cli, judge: tuple[str, ScriptedServer], tmp_path: Path
) -> None:
    spec, server = judge
    junit = tmp_path / "gates.xml"
    code, run, err = _run(ragmeter_cli, cli_env, spec, *GATES, "--junit-xml", str(junit))
    means = _expected_repeat_means(server)
    assert len(means) == REPEATS
    above = sum(m >= 0.5 for m in means)
    assert 0 < above < REPEATS  # the draws do straddle the threshold (fixed by the seeds)
    across = run["gates_across_repeats"]
    rel, grd = across["relevance"], across["groundedness"]
    assert rel["repeat_means"] == pytest.approx(means)
    verdict_pass = run["aggregate"]["relevance"]["mean"] >= 0.5
    assert rel["verdict"] == ("pass" if verdict_pass else "fail")
    other = REPEATS - above if verdict_pass else above
    assert rel["other_side"] == other and rel["share"] == pytest.approx(other / REPEATS)
    lo, hi = rel["share_ci95"]
    assert lo < rel["share"] < hi and rel["flaky"] is True
    assert (
        grd["flaky"] is False
        and grd["other_side"] == 0
        and grd["repeat_means"] == pytest.approx([0.8] * REPEATS)
    )
    # the stable gate passes (0.8 >= 0.7), the flaky one is named and left out: exit 0
    assert code == 0, err
    assert "relevance: flaky" in err and "left out of the exit code" in err
    # JUnit: the flaky gate is skipped with the reason, never a silent pass
    root = ET.parse(junit).getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    skipped = cases["relevance"].find("skipped")
    assert skipped is not None and "flaky" in (skipped.get("message") or "")
    assert cases["groundedness"].find("skipped") is None and cases["groundedness"].find("failure") is None
    assert root.find("testsuite").get("skipped") == "1"  # type: ignore[union-attr]
    # per query, the all-k pass beside the mean
    q = run["per_query"][0]
    values = [v["value"] for v in q["repeats"]["relevance"]]
    assert q["metrics"]["relevance_pass_all"]["value"] == float(all(v >= 0.5 for v in values))
    assert q["metrics"]["groundedness_pass_all"]["value"] == 1.0
    assert run["aggregate"]["groundedness_pass_all"]["ci_method"] == "wilson"


def test_flaky_fail_fails_the_run_and_a_stable_failing_gate_still_fails(
    cli_env: dict[str, str], ragmeter_cli: Cli, judge: tuple[str, ScriptedServer], tmp_path: Path
) -> None:
    spec, _ = judge
    junit = tmp_path / "gates.xml"
    code, run, err = _run(ragmeter_cli, cli_env, spec, *GATES, "--flaky", "fail", "--junit-xml", str(junit))
    assert code == 1 and run["gates_across_repeats"]["relevance"]["flaky"] is True
    assert "relevance: flaky (--flaky fail)" in err
    case = next(c for c in ET.parse(junit).getroot().iter("testcase") if c.get("name") == "relevance")
    assert case.find("failure") is not None and case.find("skipped") is None
    # a stable gate that falls short fails the run whatever the flaky one does
    code, run, err = _run(ragmeter_cli, cli_env, spec, "--fail-under", "relevance=0.5", "--fail-under",
                          "groundedness=0.9")  # fmt: skip
    assert code == 1 and "groundedness = 0.8000 < 0.9" in err
    # a tolerance above the measured share makes the random gate stable: its mean decides
    share = run["gates_across_repeats"]["relevance"]["share"]
    code, run, err = _run(ragmeter_cli, cli_env, spec, "--fail-under", "relevance=0.5",
                          "--flaky-tolerance", f"{min(share + 0.1, 0.99)}")  # fmt: skip
    assert run["gates_across_repeats"]["relevance"]["flaky"] is False and "flaky" not in err
    assert code == (0 if run["aggregate"]["relevance"]["mean"] >= 0.5 else 1)


def test_a_tolerance_outside_zero_to_one_is_refused(
    cli_env: dict[str, str], ragmeter_cli: Cli, judge: tuple[str, ScriptedServer]
) -> None:
    spec, server = judge
    for bad in ("1", "-0.1", "nan"):
        code, _, err = _run(
            ragmeter_cli, cli_env, spec, "--fail-under", "relevance=0.5", "--flaky-tolerance", bad
        )
        assert code == 2 and len(err.strip().splitlines()) == 1 and "--flaky-tolerance" in err
    assert server.requests == []
    assert re.search(r"Traceback", err) is None
