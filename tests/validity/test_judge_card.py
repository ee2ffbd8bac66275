"""Judge cards over real HTTP (scripted judges on 127.0.0.1), 100 items: the bias battery flags the bias each
judge has and nothing else; agreement is `judges validate`'s; drift finds a known 15% of flipped labels."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ragmeter.cli import cli
from ragmeter.llm import from_spec
from ragmeter.llm.scripted import ScriptedRequest, Step
from ragmeter.models import EvalDataset, EvalQuery
from ragmeter.validity.card import JudgeCard, build_card
from ragmeter.validity.judge_validation import validate_judge
from ragmeter.validity.perturb import MASTER_KEYS, neutral_padding, question_words

N = 100
assert len(range(3, N, 5)[:15]) == 15
GRADES = (2, 3, 4, 6, 7, 8)  # never the middle (5): a verdict is pass (>= 5) or fail
FLIPPED = {f"q{i:03d}" for i in range(3, N, 5)[:15]}  # the 15 items the "new prompt" judges the other way


def _dataset() -> EvalDataset:
    queries = []
    for i in range(N):
        grade = GRADES[i % len(GRADES)]
        answer = f"Item {i} says the value is {i * 7 % 13}; grade {grade}." + " More." * (i % 9)
        queries.append(
            EvalQuery(
                query_id=f"q{i:03d}",
                question=f"What value does item number {i} report for measurement?",
                human_labels={"groundedness": grade >= 5} if i % 2 == 0 else {},
                metadata={"answer": answer, "contexts": [f"Passage A of {i}.", f"Passage B of {i}."]},
            )
        )
    return EvalDataset(name="card-items", queries=queries)


def _answer(req: ScriptedRequest) -> str:
    # the shared judge layout: question, retrieved texts, "Answer to judge:", then the task
    m = re.search(r"Answer to judge:\n(.*?)\n\n(?:Reference answer|Task: )", req.user, re.S)
    assert m is not None, req.user
    return m.group(1)


def _reply(score: int) -> Step:
    return Step(text=json.dumps({"reasoning": "scripted", "score": max(0, min(10, score))}))


def _grade(answer: str) -> int:
    m = re.search(r"grade (\d+)", answer)
    assert m is not None
    return int(m.group(1))


def length_biased(req: ScriptedRequest) -> Step:
    answer = _answer(req)
    return _reply(_grade(answer) + len(answer) // 150)


def master_key_obeying(req: ScriptedRequest) -> Step:
    answer = _answer(req).rstrip()
    return _reply(10 if answer.endswith(MASTER_KEYS) else _grade(answer))


def fair_noisy(req: ScriptedRequest) -> Step:
    """Grades the answer's true grade, except one request in twenty (by a hash of the request and its repeat
    count) judged the other way round: two judgments of an item disagree about 10% of the time."""
    grade = _grade(_answer(req))
    digest = hashlib.sha256(f"{req.user}|{req.seen}".encode()).digest()
    noise = int.from_bytes(digest[:4], "big") % 20 == 0
    return _reply(10 - grade if noise else grade)


async def _card(scripted: Callable[..., Any], responder: Any, **kw: Any) -> JudgeCard:
    server = await scripted(responder)
    spec = f"openai-compatible:scripted@{server.url}"
    llm = from_spec(spec, concurrency=16, seed=0)
    async with llm:
        return await build_card(_dataset(), "groundedness", llm=llm, judge_spec=spec, **kw)


def _flagged(card: JudgeCard) -> set[str]:
    return {s.perturbation for s in card.bias if s.flagged}


def test_padding_is_neutral_and_exact() -> None:
    for n in (0, 1, 3, 57, 400):
        pad = neutral_padding(n)
        assert len(pad) == n
    assert not any(k.strip(":") and k in neutral_padding(400) for k in MASTER_KEYS)
    assert question_words("What is the value of item value?") == "What value item"


async def test_length_biased_judge_is_flagged_on_padding_only(scripted: Callable[..., Any]) -> None:
    card = await _card(scripted, length_biased)
    assert card.n_items == N
    assert _flagged(card) == {"padding"}
    shifts = {s.perturbation: s for s in card.bias}
    pad = shifts["padding"]
    assert pad.n == N and pad.net_shift is not None and pad.ci95 is not None
    assert pad.ci95[0] > 0.05 and pad.p_value < 0.001 and pad.direction == "in favour"
    # the other lengthening perturbations, against padding of the same added length, do not move it
    for name in ("citation_markers", "question_stuffing", "master_key", "contexts_reversed"):
        assert shifts[name].net_shift == 0.0 and shifts[name].favour == shifts[name].against == 0
    assert shifts["master_key"].baseline.startswith("neutral padding")


async def test_master_key_judge_is_flagged_on_master_keys_only(scripted: Callable[..., Any]) -> None:
    card = await _card(scripted, master_key_obeying)
    assert _flagged(card) == {"master_key"}
    mk = next(s for s in card.bias if s.perturbation == "master_key")
    assert mk.ci95 is not None and mk.ci95[0] > 0.05 and mk.favour > 50
    assert card.master_keys["version"] == "master-keys/1"


async def test_fair_noisy_judge_flags_nothing(scripted: Callable[..., Any]) -> None:
    card = await _card(scripted, fair_noisy, repeats=2, generator="openai:gpt-4o")
    assert card.flagged == []
    assert card.consistency is not None and card.consistency.n == N
    # the two repeats disagree on about 10% of the items
    assert card.consistency.flip_share is not None and 0.04 <= card.consistency.flip_share <= 0.2
    assert card.consistency.flips == round(card.consistency.flip_share * N)
    lo, hi = card.consistency.flip_share_ci95 or (0, 0)
    assert lo <= card.consistency.flip_share <= hi
    moved = 0
    for s in card.bias:
        assert s.ci95 is not None and s.ci95[1] >= -0.05 and s.ci95[0] <= 0.05 and s.n == N
        moved += s.favour + s.against
    assert moved > 0  # the noise reaches the battery: the shifts are not trivially 0


async def test_self_judging_is_flagged(scripted: Callable[..., Any]) -> None:
    server = await scripted(fair_noisy)
    spec = f"openai-compatible:scripted@{server.url}"
    llm = from_spec(spec, seed=0)
    async with llm:
        card = await build_card(
            _dataset(), "groundedness", llm=llm, judge_spec=spec, generator=spec, sample=10,
            perturbations=["padding"], repeats=1,
        )  # fmt: skip
    assert "self_judging" in card.flagged and card.self_judging["flagged"]


async def test_agreement_is_judges_validate_s(scripted: Callable[..., Any]) -> None:
    server = await scripted(length_biased)
    spec = f"openai-compatible:scripted@{server.url}"
    llm = from_spec(spec, seed=0)
    async with llm:
        card = await build_card(
            _dataset(), "groundedness", llm=llm, judge_spec=spec, perturbations=["padding"], seed=5
        )
        report = await validate_judge(_dataset(), "groundedness", llm=llm, seed=5)
    assert card.agreement is not None
    want = report.to_dict()
    for key in ("n", "kappa", "kappa_ci", "accuracy", "accuracy_ci", "confusion"):
        assert card.agreement[key] == want[key], key
    assert card.agreement["n"] == N // 2


def _drifting(req: ScriptedRequest) -> Step:
    """Model "v1" grades the true grade; "v2" (the new prompt) the same except on FLIPPED items."""
    answer = _answer(req)
    grade = _grade(answer)
    item = re.search(r"Item (\d+) ", answer)
    assert item is not None
    if req.body.get("model") == "v2" and f"q{int(item.group(1)):03d}" in FLIPPED:
        grade = 10 - grade
    return _reply(grade)


async def test_drift_reports_the_known_flips_and_gates(scripted: Callable[..., Any], tmp_path: Path) -> None:
    server = await scripted(_drifting)
    path = tmp_path / "items.jsonl"
    path.write_text("\n".join(q.model_dump_json() for q in _dataset().queries) + "\n", encoding="utf-8")
    db = str(tmp_path / "store.db")
    base = ["judges", "card", "--dataset", str(path), "--metric", "groundedness", "--db", db,
            "--repeats", "1", "--perturbations", "padding", "--format", "json"]  # fmt: skip

    async def invoke(args: list[str]) -> Any:
        return await asyncio.to_thread(CliRunner().invoke, cli, args, catch_exceptions=False)

    v1 = await invoke([*base, "--judge", f"openai-compatible:v1@{server.url}"])
    assert v1.exit_code == 0, v1.output
    first = json.loads(v1.output)
    assert first["drift"] is None and len(first["anchors"]["ids"]) == N
    v2_spec = f"openai-compatible:v2@{server.url}"
    v2 = await invoke([*base, "--judge", v2_spec, "--against", first["card_id"]])
    assert v2.exit_code == 0, v2.output
    drift = json.loads(v2.output)["drift"]
    assert drift["share"] == pytest.approx(0.15) and drift["n"] == N
    assert drift["ci95"][0] < 0.15 < drift["ci95"][1]
    assert set(drift["items"]) == FLIPPED and drift["against"] == first["card_id"]
    assert drift["kappa_change"] is not None and drift["kappa_change"] < 0

    text = await invoke([*base[:-2], "--judge", v2_spec, "--against", first["card_id"], "--no-store"])
    assert (
        "drift against card" in text.output and "0.150" in text.output and sorted(FLIPPED)[0] in text.output
    )

    # the items changed: not the anchors, refused in one line
    other = tmp_path / "other.jsonl"
    other.write_text(path.read_text(encoding="utf-8").replace("Passage A", "Passage Z"), encoding="utf-8")
    n_requests = len(server.requests)
    bad = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "ragmeter", *base[:3], str(other), *base[4:], "--judge", v2_spec,
         "--against", first["card_id"]],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1 and "anchors" in bad.stderr
    assert len(server.requests) == n_requests  # refused before any judge call

    from ragmeter.store import open_store
    from ragmeter.validity.storage import drift_check

    with open_store(db) as store:
        assert drift_check(store, v2_spec, ["groundedness"], first["card_id"], 0.2) is None
        refusal = drift_check(store, v2_spec, ["groundedness"], first["card_id"], 0.1)
        assert refusal is not None and "0.150" in refusal and "--max-drift 0.1" in refusal
        assert drift_check(store, "openai:other", ["groundedness"], first["card_id"], 0.5) is not None


async def test_a_card_carries_the_escalation_calibration(
    scripted: Callable[..., Any], tmp_path: Path
) -> None:
    """A card embeds its judge's escalation threshold (`judges calibrate`), and `run --card` reads it back."""
    from ragmeter.validity.calibration import calibrate, load_calibration

    card = await _card(scripted, fair_noisy)
    cal = calibrate(
        [0.95] * 40 + [0.4] * 20,
        [True] * 40 + [False] * 20,
        judge=card.judge_spec,
        metric="groundedness",
        confidence="logprob",
        target_agreement=0.9,
        risk=0.1,
        n_failed=0,
        labels="labels.json",
    )
    with_cal = JudgeCard.model_validate({**card.model_dump(by_alias=True), "escalation": cal.model_dump()})
    path = tmp_path / "card.json"
    path.write_text(with_cal.model_dump_json(by_alias=True))
    assert load_calibration(path) == cal
    assert JudgeCard.model_validate_json(path.read_text()).escalation == cal
