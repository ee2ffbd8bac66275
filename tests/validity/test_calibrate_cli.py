"""`ragmeter judges calibrate` over real HTTP: a scripted cheap judge, sure and right on easy items, unsure and
right half the time on hard ones; the calibrated threshold keeps exactly the easy items."""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ragmeter.cli import cli
from ragmeter.errors import InputError
from ragmeter.llm.scripted import ScriptedRequest, Step
from ragmeter.models import EvalQuery
from ragmeter.validity.calibration import load_calibration

pytest.importorskip("aiohttp")

SURE, UNSURE = 0.99, 0.55


def items() -> list[EvalQuery]:
    out = []
    for i in range(120):
        label = i % 2
        kind = "easy" if i < 80 else "hard"
        # hard items: the cheap judge says 1 whatever the label, so it is right on half of them
        verdict = label if kind == "easy" else 1
        out.append(
            EvalQuery(
                query_id=f"q{i}",
                question=f"question {i}?",
                human_labels={"relevance": label},
                metadata={"answer": f"{kind} verdict={verdict}"},
            )
        )
    return out


def cheap(req: ScriptedRequest) -> Step:
    m = re.search(r"(easy|hard) verdict=(\d)", req.user)
    assert m is not None
    score = 10 if m.group(2) == "1" else 0
    prob = SURE if m.group(1) == "easy" else UNSURE
    tokens = [('{"reasoning": "r", "score": ', -0.01), (str(score), math.log(prob)), ("}", -0.001)]
    return Step(text="".join(t for t, _ in tokens), logprobs=tokens)


def _write(tmp_path: Path) -> Path:
    path = tmp_path / "labels.jsonl"
    path.write_text(
        "\n".join(q.model_dump_json(exclude_defaults=True) for q in items()) + "\n", encoding="utf-8"
    )
    return path


async def test_calibrate_keeps_exactly_the_sure_items(scripted: Callable[..., Any], tmp_path: Path) -> None:
    server = await scripted(cheap)
    out = tmp_path / "cal.json"
    args = [
        "judges", "calibrate", "--judge", f"openai-compatible:cheap@{server.url}", "--metric", "relevance",
        "--labels", str(_write(tmp_path)), "--target-agreement", "0.9", "--risk", "0.1", "-o", str(out),
        "--format", "json",
    ]  # fmt: skip
    result = await asyncio.to_thread(CliRunner().invoke, cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    cal = load_calibration(out)
    assert cal.threshold == 0.56  # the lowest grid threshold above the unsure items' 0.55
    assert cal.coverage == pytest.approx(80 / 120)
    assert cal.empirical_agreement == 1.0 and cal.n_labels == 120 and cal.n_failed == 0
    assert cal.tests[-1].threshold == 0.55 and not cal.tests[-1].rejected  # 20 of 120 disagree there
    assert cal.confidence == "logprob" and cal.prompt_version
    assert shown["threshold"] == 0.56 and "probability >= 90%" in shown["guarantee"]
    assert len(server.requests) == 120 and all(r.body.get("logprobs") is True for r in server.requests)


async def test_calibrate_from_repeats(scripted: Callable[..., Any], tmp_path: Path) -> None:
    # Easy items: the same verdict every repeat; hard ones: a verdict that flips with the seed.
    def flaky(req: ScriptedRequest) -> Step:
        m = re.search(r"(easy|hard) verdict=(\d)", req.user)
        assert m is not None
        score = 10 if m.group(2) == "1" else 0
        if m.group(1) == "hard" and int(req.body.get("seed", 0)) % 2:
            score = 10 - score
        return Step(text=json.dumps({"reasoning": "r", "score": score}))

    server = await scripted(flaky)
    out = tmp_path / "cal.json"
    args = [
        "judges", "calibrate", "--judge", f"openai-compatible:cheap@{server.url}", "--metric", "relevance",
        "--labels", str(_write(tmp_path)), "--target-agreement", "0.9", "--risk", "0.1", "-o", str(out),
        "--confidence", "repeats", "--repeats", "4",
    ]  # fmt: skip
    result = await asyncio.to_thread(CliRunner().invoke, cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    cal = load_calibration(out)
    assert cal.confidence == "repeats" and cal.repeats == 4
    assert cal.threshold is not None and 0.5 < cal.threshold <= 1.0  # hard items reach only 2 of 4
    assert cal.coverage == pytest.approx(80 / 120)
    assert len(server.requests) == 4 * 120
    assert "wrote" in result.output


@pytest.mark.parametrize(("flag", "value"), [("--risk", "1.5"), ("--target-agreement", "0")])
async def test_bad_levels_fail_before_any_call(
    scripted: Callable[..., Any], tmp_path: Path, flag: str, value: str
) -> None:
    server = await scripted(cheap)
    out = tmp_path / "cal.json"
    args = [
        "judges", "calibrate", "--judge", f"openai-compatible:cheap@{server.url}", "--metric", "relevance",
        "--labels", str(_write(tmp_path)), "--target-agreement", "0.9", "--risk", "0.1", "-o", str(out),
    ]  # fmt: skip
    args[args.index(flag) + 1] = value
    result = await asyncio.to_thread(CliRunner().invoke, cli, args)
    # An InputError is what `ragmeter.cli.main` prints as one line and exits 2 on.
    assert isinstance(result.exception, InputError) and str(result.exception).startswith(flag)
    assert not out.exists() and not server.requests
