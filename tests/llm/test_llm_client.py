"""The LLM client over real HTTP against a scripted server: retries, timeouts, budget, cache, logs."""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import time
from pathlib import Path

import pytest

from ragmeter.errors import InputError
from ragmeter.llm import TRACE, BudgetExceededError, LLMError, from_spec
from ragmeter.llm.base import backoff_delay, parse_retry_after
from ragmeter.llm.pricing import estimate_cost
from ragmeter.llm.scripted import ScriptedRequest, Step

MSG = [{"role": "system", "content": "You grade. Reply in JSON."}, {"role": "user", "content": "Grade this."}]
SECRET = "sk-test-never-store-me-123"


def ok(text: str = '{"grade": 9}') -> Step:
    return Step(text=text, prompt_tokens=100, completion_tokens=20)


class SleepRecorder:
    """Stands in for the client's sleep between retries: records the delay it was asked for."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
        await asyncio.sleep(0)


# --- specs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    ["", "gpt-4o", "openai:", "openai-compatible:model", "mystery:model", "local:something"],
)
def test_bad_specs_are_input_errors(spec: str) -> None:
    with pytest.raises(InputError) as info:
        from_spec(spec)
    assert "spec" in str(info.value) or "backend" in str(info.value)


def test_openai_without_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(InputError, match="OPENAI_API_KEY"):
        from_spec("openai:gpt-4o-mini")


def test_spec_public_holds_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    client = from_spec("openai-compatible:m@http://user:pw@127.0.0.1:9/v1?key=abc", seed=7)
    public = client.spec_public
    text = json.dumps(public)
    assert SECRET not in text and "pw" not in text and "key=abc" not in text
    assert public["backend"] == "openai-compatible"
    assert public["model"] == "m"
    assert public["base_url"] == "http://127.0.0.1:9/v1"
    assert public["params"] == {"temperature": 0.0, "seed": 7, "max_tokens": 1024}


def test_reasoning_models_get_no_temperature(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    assert from_spec("openai:gpt-5-mini").params["temperature"] is None
    assert from_spec("openai:gpt-4o-mini").params["temperature"] == 0.0


# --- helpers -------------------------------------------------------------------------------------


def test_retry_after_forms() -> None:
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert parse_retry_after({}) is None
    assert parse_retry_after({"Retry-After": "soon"}) is None
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    delay = parse_retry_after({"Retry-After": future})
    assert delay is not None and 25 <= delay <= 31
    assert backoff_delay(0, 2.5) == 2.5
    assert all(0 <= backoff_delay(3, None) <= 4.0 for _ in range(50))


def test_price_table_prefix_and_override() -> None:
    assert estimate_cost("gpt-4o-mini-2024-07-18", 1_000_000, 0) == pytest.approx(0.15)
    assert estimate_cost("gpt-4o", 0, 1_000_000) == pytest.approx(10.0)
    assert estimate_cost("no-such-model", 10, 10) is None
    assert estimate_cost("no-such-model", 1_000_000, 1_000_000, {"no-such": (1.0, 2.0)}) == pytest.approx(3.0)


# --- over HTTP -----------------------------------------------------------------------------------


async def test_complete_sends_params_and_reports_usage(scripted) -> None:  # type: ignore[no-untyped-def]
    srv = await scripted(lambda req: ok())
    client = from_spec(f"openai-compatible:judge-model@{srv.url}", seed=3, prices={"judge-model": (1.0, 2.0)})
    resp = await client.complete(MSG, json=True, metric="m1", query_id="q1", max_tokens=50)
    await client.aclose()
    assert resp.text == '{"grade": 9}'
    assert (resp.usage.prompt_tokens, resp.usage.completion_tokens) == (100, 20)
    assert resp.cost_usd == pytest.approx((100 * 1.0 + 20 * 2.0) / 1e6)
    assert resp.cached is False and resp.latency_s >= 0
    body = srv.requests[0].body
    assert body["temperature"] == 0 and body["seed"] == 3 and body["max_tokens"] == 50
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"] == MSG
    usage = client.usage
    assert (usage.calls, usage.api_requests, usage.input_tokens, usage.output_tokens) == (1, 1, 100, 20)
    assert usage.by_label["m1"].calls == 1 and usage.by_label["m1"].cost_usd == pytest.approx(140 / 1e6)


async def test_429_honours_retry_after(scripted) -> None:  # type: ignore[no-untyped-def]
    def responder(req: ScriptedRequest) -> Step:
        return Step(status=429, headers={"Retry-After": "2"}) if req.seen == 0 else ok()

    srv = await scripted(responder)
    client = from_spec(f"openai-compatible:m@{srv.url}")
    client.sleep = recorder = SleepRecorder()
    resp = await client.complete(MSG)
    await client.aclose()
    assert resp.text == '{"grade": 9}' and resp.attempts == 2
    assert recorder.delays == [2.0]
    assert len(srv.requests) == 2 and client.usage.retries == 1


async def test_500_is_retried_then_given_up(scripted) -> None:  # type: ignore[no-untyped-def]
    srv = await scripted(lambda req: Step(status=500))
    client = from_spec(f"openai-compatible:m@{srv.url}", max_retries=2)
    client.sleep = recorder = SleepRecorder()
    with pytest.raises(LLMError) as info:
        await client.complete(MSG)
    await client.aclose()
    assert "HTTP 500" in info.value.reason and "3 attempts" in info.value.reason
    assert len(srv.requests) == 3
    # Exponential backoff with full jitter: each delay within base * 2**attempt.
    assert len(recorder.delays) == 2
    assert 0 <= recorder.delays[0] <= 0.5 and 0 <= recorder.delays[1] <= 1.0
    assert client.usage.failed_calls == 1


async def test_client_errors_are_not_retried(scripted) -> None:  # type: ignore[no-untyped-def]
    srv = await scripted(lambda req: Step(status=401))
    client = from_spec(f"openai-compatible:m@{srv.url}")
    with pytest.raises(LLMError, match="HTTP 401"):
        await client.complete(MSG)
    await client.aclose()
    assert len(srv.requests) == 1


async def test_hang_past_timeout_fails_with_reason(scripted) -> None:  # type: ignore[no-untyped-def]
    srv = await scripted(lambda req: Step(text="late", delay=30))
    client = from_spec(f"openai-compatible:m@{srv.url}", timeout=0.3, max_retries=1)
    client.sleep = SleepRecorder()
    with pytest.raises(LLMError, match="timed out") as info:
        await client.complete(MSG)
    await client.aclose()
    assert "2 attempts" in info.value.reason
    assert len(srv.requests) == 2


async def test_json_mode_falls_back_when_server_rejects_it(scripted) -> None:  # type: ignore[no-untyped-def]
    def responder(req: ScriptedRequest) -> Step:
        if "response_format" in req.body:
            return Step(status=400, raw_body='{"error": {"message": "response_format is not supported"}}')
        return ok()

    srv = await scripted(responder)
    client = from_spec(f"openai-compatible:m@{srv.url}")
    assert (await client.complete(MSG, json=True)).text == '{"grade": 9}'
    assert (await client.complete(MSG, json=True)).text == '{"grade": 9}'
    await client.aclose()
    # One rejected request, then the client stops sending response_format.
    assert ["response_format" in r.body for r in srv.requests] == [True, False, False]


async def test_concurrency_is_bounded(scripted) -> None:  # type: ignore[no-untyped-def]
    srv = await scripted(lambda req: ok(), latency=0.05)
    client = from_spec(f"openai-compatible:m@{srv.url}", concurrency=4)
    msgs = [[{"role": "user", "content": f"q{i}"}] for i in range(24)]
    out = await asyncio.gather(*(client.complete(m) for m in msgs))
    await client.aclose()
    assert len(out) == 24
    assert srv.max_in_flight == 4


async def test_budget_stops_calls(scripted) -> None:  # type: ignore[no-untyped-def]
    srv = await scripted(lambda req: ok())
    client = from_spec(f"openai-compatible:m@{srv.url}", budget=2)
    await client.complete([{"role": "user", "content": "a"}])
    await client.complete([{"role": "user", "content": "b"}])
    with pytest.raises(BudgetExceededError, match="budget of 2"):
        await client.complete([{"role": "user", "content": "c"}])
    await client.aclose()
    assert len(srv.requests) == 2


async def test_cache_makes_reruns_free_and_identical(scripted, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("RAGMETER_LLM_API_KEY", SECRET)
    counter = iter(range(1000))
    srv = await scripted(lambda req: ok(f'{{"grade": {next(counter)}}}'))
    cache = tmp_path / "llm-cache.sqlite"
    spec = f"openai-compatible:m@{srv.url}"

    first = from_spec(spec, cache=cache)
    a = [await first.complete(MSG, json=True), await first.complete(MSG, json=False)]
    await first.aclose()
    assert len(srv.requests) == 2

    second = from_spec(spec, cache=cache)
    b = [await second.complete(MSG, json=True), await second.complete(MSG, json=False)]
    assert len(srv.requests) == 2  # nothing sent
    assert [r.text for r in b] == [r.text for r in a]
    assert all(r.cached and r.cost_usd == 0.0 for r in b)
    assert second.usage.cached_calls == 2 and second.usage.input_tokens == 0
    await second.aclose()

    other_seed = from_spec(spec, cache=cache, seed=99)
    c = await other_seed.complete(MSG, json=True)
    await other_seed.aclose()
    assert not c.cached and len(srv.requests) == 3
    assert srv.requests[0].headers["Authorization"] == f"Bearer {SECRET}"
    assert SECRET.encode() not in cache.read_bytes()


async def test_debug_and_trace_logs(scripted, caplog, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("RAGMETER_LLM_API_KEY", SECRET)
    srv = await scripted(lambda req: ok())
    client = from_spec(f"openai-compatible:m@{srv.url}")
    with caplog.at_level(logging.DEBUG, logger="ragmeter.llm"):
        await client.complete(MSG, metric="factuality", query_id="q42")
    lines = [r.getMessage() for r in caplog.records if r.name == "ragmeter.llm"]
    assert len(lines) == 1
    assert "metric=factuality" in lines[0] and "query=q42" in lines[0] and "tokens=100+20" in lines[0]
    assert "latency=" in lines[0]
    caplog.clear()
    with caplog.at_level(TRACE, logger="ragmeter.llm"):
        await client.complete(MSG, metric="factuality", query_id="q43")
    await client.aclose()
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "Grade this." in text and '{"grade": 9}' in text
    assert SECRET not in text


async def test_anthropic_backend(scripted, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)

    def responder(req: ScriptedRequest) -> Step:
        if req.api != "anthropic":
            return Step(status=404)
        return Step(status=529) if req.seen == 0 else ok()

    srv = await scripted(responder)
    client = from_spec(f"anthropic:claude-haiku-4-5@{srv.root}")
    client.sleep = SleepRecorder()
    resp = await client.complete(MSG, json=True, max_tokens=77)
    await client.aclose()
    assert resp.text == '{"grade": 9}' and resp.attempts == 2
    assert resp.cost_usd == pytest.approx((100 * 1.0 + 20 * 5.0) / 1e6)
    body = srv.requests[-1].body
    assert body["max_tokens"] == 77 and "temperature" not in body
    assert body["messages"] == [{"role": "user", "content": "Grade this."}]
    assert body["system"].startswith("You grade. Reply in JSON.") and "JSON" in body["system"]
    assert SECRET not in json.dumps(client.spec_public)
