"""The spend ledger with a real client over real HTTP: each attempt reserves its worst case (retries count),
a failed attempt is charged in full, an answered one at its reply's usage; a request that cannot fit is
refused before it is sent, one that fits once others settle waits for them."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest

from ragmeter.llm import from_spec
from ragmeter.llm.scripted import ScriptedRequest, ScriptedServer, Step
from ragmeter.llm.spend import SpendLedger, SpendRefused, capped, estimate_input_tokens, for_query

pytest.importorskip("aiohttp")

PRICES = {"m": (1.0, 10.0)}  # USD per million tokens
MESSAGES = [{"role": "user", "content": "x" * 300}]


async def _no_sleep(_: float) -> None:
    await asyncio.sleep(0)


def _worst(max_tokens: int) -> float:
    return (estimate_input_tokens(MESSAGES) * 1.0 + max_tokens * 10.0) / 1e6


async def test_retries_count_and_answers_are_charged_at_their_usage() -> None:
    def flaky(req: ScriptedRequest) -> Step:
        if req.seen == 0:
            return Step(text=None, status=500)
        return Step(text="ok", prompt_tokens=80, completion_tokens=20)

    ledger = SpendLedger(max_total=1.0)
    async with ScriptedServer(flaky) as srv:
        client = from_spec(f"openai-compatible:m@{srv.url}", prices=PRICES, max_retries=2)
        client.sleep = _no_sleep
        with capped(ledger):
            resp = await client.complete(MESSAGES, max_tokens=100)
        await client.aclose()
    assert resp.text == "ok" and len(srv.requests) == 2
    answered = (80 * 1.0 + 20 * 10.0) / 1e6
    assert ledger.spent["judge"] == pytest.approx(_worst(100) + answered)  # the 500 charged in full
    assert ledger.in_flight == 0 and sum(ledger.reserved.values()) == pytest.approx(0.0)


async def test_a_request_that_cannot_fit_is_refused_unsent_and_marks_its_query() -> None:
    async with ScriptedServer(lambda req: Step(text="ok")) as srv:
        client = from_spec(f"openai-compatible:m@{srv.url}", prices=PRICES)
        ledger = SpendLedger(max_total=_worst(100) * 0.99)
        with capped(ledger):
            for_query("q7")
            with pytest.raises(SpendRefused, match="more than"):
                await client.complete(MESSAGES, max_tokens=100)
        await client.aclose()
    assert srv.requests == [] and ledger.refused_queries == {"q7"} and ledger.total_spent == 0.0
    assert client.usage.api_requests == 0


async def test_a_request_that_fits_once_others_settle_waits_for_them() -> None:
    async with ScriptedServer(
        lambda req: Step(text="ok", prompt_tokens=1, completion_tokens=1), latency=0.2
    ) as srv:
        client = from_spec(f"openai-compatible:m@{srv.url}", prices=PRICES)
        # room for one worst case at a time, and for both at what they really cost
        ledger = SpendLedger(max_total=_worst(100) * 1.5)
        with capped(ledger):
            both = await asyncio.gather(*(client.complete(MESSAGES, max_tokens=100) for _ in range(2)))
        await client.aclose()
    assert [r.text for r in both] == ["ok", "ok"] and srv.max_in_flight == 1  # one after the other
    assert ledger.total_spent == pytest.approx(2 * 11.0 / 1e6) and not ledger.refused_queries


async def test_an_unpriced_model_is_refused_under_a_cap() -> None:
    async with ScriptedServer(lambda req: Step(text="ok")) as srv:
        client = from_spec(f"openai-compatible:unpriced-model@{srv.url}")
        with capped(SpendLedger(max_total=100.0)), pytest.raises(SpendRefused, match="no price"):
            await client.complete(MESSAGES)
        await client.aclose()
    assert srv.requests == []


def test_the_input_estimate_is_declared_and_errs_high() -> None:
    text = "The quick brown fox jumps over the lazy dog. " * 20
    assert estimate_input_tokens([{"role": "user", "content": text}]) == math.ceil(len(text) / 3) + 4
    assert estimate_input_tokens([{"role": "user", "content": text}]) > len(text) / 4


def test_the_prices_file_wins_over_the_built_in_table_and_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragmeter.errors import InputError
    from ragmeter.llm.pricing import PRICES, price_of, price_source

    path = tmp_path / "p.json"
    path.write_text(json.dumps({"gpt-4o-mini": [9.0, 9.5], "my-model": [1, 2]}))
    monkeypatch.setenv("RAGMETER_LLM_PRICES", str(path))
    assert price_source("gpt-4o-mini-2024") == (str(path), (9.0, 9.5))
    assert price_source("gpt-4o") == ("built-in", PRICES["gpt-4o"])
    assert price_of("my-model") == (1.0, 2.0) and price_of("nobody") is None
    assert price_source("my-model", {"my-model": (3.0, 4.0)}) == ("prices=", (3.0, 4.0))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"m": [1, "x"]}))
    monkeypatch.setenv("RAGMETER_LLM_PRICES", str(bad))
    with pytest.raises(InputError, match="field 'm'"):
        price_of("m")
