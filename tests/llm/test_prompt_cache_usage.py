"""Prompt caching tells the truth: a scripted server that reports cache reads and writes (OpenAI's
`prompt_tokens_details.cached_tokens`, Anthropic's `cache_read_input_tokens` / `cache_creation_input_tokens`)
makes a run's usage, its cost, the spend ledger and the run summary use the cached rates; the Anthropic
backend marks the query prefix with cache_control and the local backend keeps one query on one slot."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ragmeter.judges import JUDGES, run_judges
from ragmeter.llm import from_spec
from ragmeter.llm.local import LocalClient
from ragmeter.llm.pricing import CACHE_RATES, PRICES, cache_rates, estimate_cost
from ragmeter.llm.scripted import ScriptedRequest, Step
from ragmeter.llm.spend import SpendLedger, capped
from ragmeter.llm.usage import Usage, describe_usage

pytest.importorskip("aiohttp")

QUESTION = "What is the capital of France?"
CONTEXTS = ["Paris is the capital of France.", "Lyon is a large French city."]
SCORE = json.dumps({"reasoning": "fine", "score": 7})
PROMPT, READ, WRITE, OUT = 2000, 1500, 300, 40


def _cached_reply(req: ScriptedRequest) -> Step:
    # every call after the first reads the prefix from the cache; the first writes it
    first = req.index == 0
    return Step(
        text=SCORE,
        prompt_tokens=PROMPT,
        completion_tokens=OUT,
        cache_read_tokens=0 if first else READ,
        cache_write_tokens=WRITE if first else 0,
    )


async def _judge(llm: Any) -> None:
    await run_judges(
        ["relevance", "coherence", "groundedness"],
        question=QUESTION,
        answer="Paris.",
        contexts=CONTEXTS,
        ground_truth=None,
        llm=llm,
        query_id="q1",
    )


async def test_openai_cached_tokens_are_priced_at_the_cached_rate(scripted) -> None:  # type: ignore[no-untyped-def]
    srv = await scripted(_cached_reply)
    model = "gpt-4.1-mini"
    llm = from_spec(f"openai-compatible:{model}@{srv.url}")
    ledger = SpendLedger(max_total=10.0)
    with capped(ledger):
        await _judge(llm)
    await llm.aclose()
    usage = llm.usage
    # OpenAI reports reads only: the first call's "write" is not in its reply
    assert (usage.calls, usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (
        3,
        3 * PROMPT,
        2 * READ,
        0,
    )
    price_in, price_out = PRICES[model]
    read_rate = cache_rates(model)[0]
    assert read_rate == CACHE_RATES["gpt-4.1"][0] < 1.0
    expected = (
        price_in * (3 * PROMPT - 2 * READ) + price_in * read_rate * 2 * READ + price_out * 3 * OUT
    ) / 1e6
    assert usage.cost_usd == pytest.approx(expected)
    full_price = 3 * (PROMPT * price_in + OUT * price_out) / 1e6
    assert usage.cost_usd < full_price
    assert ledger.total_spent == pytest.approx(expected)  # the spend cap is charged the same
    # the run summary's judge line shows the cached share (2 x 1500 of 6000 input tokens)
    summary = describe_usage({"judge": Usage.of({"judge": llm}).total.model_dump(mode="json")})
    assert any("50% of input tokens read from the server's prompt cache" in line for line in summary), summary


async def test_anthropic_cache_reads_and_writes_are_priced_and_the_prefix_is_marked(  # type: ignore[no-untyped-def]
    scripted, monkeypatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-anthropic")
    srv = await scripted(_cached_reply)
    model = "claude-haiku-4-5"
    llm = from_spec(f"anthropic:{model}@{srv.root}")
    await _judge(llm)
    await llm.aclose()
    usage = llm.usage
    # Anthropic's input_tokens leaves the cached ones out; ragmeter counts them in
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (
        3 * PROMPT,
        2 * READ,
        WRITE,
    )
    price_in, price_out = PRICES[model]
    read_rate, write_rate = cache_rates(model)
    assert (read_rate, write_rate) == (0.1, 1.25)
    full = 3 * PROMPT - 2 * READ - WRITE
    expected = (price_in * (full + 2 * READ * read_rate + WRITE * write_rate) + price_out * 3 * OUT) / 1e6
    assert usage.cost_usd == pytest.approx(expected)
    summary = describe_usage({"judge": usage.model_dump(mode="json")})
    assert any("50% of input tokens read from the server's prompt cache (300 written)" in s for s in summary)
    # the prefix (question and contexts) is its own content block, marked for caching; the rest follows
    for req in srv.requests:
        blocks = req.body["messages"][0]["content"]
        assert isinstance(blocks, list) and len(blocks) == 2
        head, rest = blocks
        assert head["cache_control"] == {"type": "ephemeral"} and "cache_control" not in rest
        assert QUESTION in head["text"] and all(c in head["text"] for c in CONTEXTS)
        assert "Answer to judge" not in head["text"] and rest["text"].startswith("Answer to judge")
    assert len({r.body["messages"][0]["content"][0]["text"] for r in srv.requests}) == 1


async def test_a_plain_call_to_anthropic_has_no_cache_marker(scripted, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-anthropic")
    srv = await scripted(lambda req: Step(text="ok"))
    llm = from_spec(f"anthropic:claude-haiku-4-5@{srv.root}")
    await llm.complete([{"role": "user", "content": "Hello."}])
    await llm.aclose()
    assert srv.requests[0].body["messages"] == [{"role": "user", "content": "Hello."}]


def test_cache_rates_price_reads_below_and_writes_at_or_above_the_input_price() -> None:
    plain = estimate_cost("gpt-4o", 1000, 0)
    assert plain is not None
    assert estimate_cost("gpt-4o", 1000, 0, cache_read_tokens=1000) == pytest.approx(plain * 0.5)
    assert estimate_cost("claude-sonnet-4-5", 1000, 0, cache_write_tokens=1000) == pytest.approx(
        1.25 * (estimate_cost("claude-sonnet-4-5", 1000, 0) or 0)
    )
    # a model without a cache rate pays full price for cached tokens: never an underestimate
    assert estimate_cost("mystery", 1000, 0, {"mystery": (1.0, 1.0)}, cache_read_tokens=900) == pytest.approx(
        1000 / 1e6
    )


class _SlotRecorder(LocalClient):
    """The local backend's requests, sent to a scripted server instead of a llama.cpp it would start."""

    async def _before_call(self) -> None:
        return None


async def test_the_local_backend_keeps_a_querys_calls_on_one_slot(scripted) -> None:  # type: ignore[no-untyped-def]
    srv = await scripted(lambda req: Step(text=SCORE))
    llm = _SlotRecorder(parallel=4)
    llm.base_url, llm._sdk = srv.url, None
    contexts_by_query = {f"q{i}": [f"Text {i} about topic {i}.", f"More on {i}."] for i in range(6)}
    for qid, contexts in contexts_by_query.items():
        await run_judges(
            ["relevance", "groundedness", "coherence", "retrieval_grade"],
            question=f"Question {qid}?",
            answer="An answer.",
            contexts=contexts,
            ground_truth="ref",
            llm=llm,
            query_id=qid,
        )
    await llm.aclose()
    slots: dict[str, set[int]] = {}
    for req in srv.requests:
        assert req.body["cache_prompt"] is True
        qid = req.user.split("Question ", 1)[1].split("?", 1)[0]
        slots.setdefault(qid, set()).add(int(req.body["id_slot"]))
    assert set(slots) == set(contexts_by_query)
    assert all(len(s) == 1 for s in slots.values()), slots  # one slot per query
    assert all(0 <= next(iter(s)) < 4 for s in slots.values())
    assert len({next(iter(s)) for s in slots.values()}) > 1  # queries spread over the slots
    # a call outside the judges' layout names no slot
    plain = _SlotRecorder(parallel=4)
    plain.base_url, plain._sdk = srv.url, None
    await plain.complete([{"role": "user", "content": "hi"}])
    await plain.aclose()
    assert "id_slot" not in srv.requests[-1].body and JUDGES
