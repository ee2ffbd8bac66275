"""Usage and cost per client and per label (judge metric, generator), and the judge logs."""

from __future__ import annotations

import io
import json
import logging

import pytest

from ragmeter.errors import InputError
from ragmeter.judges import run_judges
from ragmeter.llm import TRACE, LLMError, Usage, configure_logging, from_spec, parse_level
from ragmeter.llm.logs import level_for_verbosity
from ragmeter.llm.scripted import ScriptedRequest, Step
from ragmeter.llm.usage import UsageLine, merge
from ragmeter.models import Document
from ragmeter.systems import Pipeline, aanswer, aretrieve

SECRET = "sk-test-never-store-me-456"
SCORE = json.dumps({"reasoning": "fine", "score": 7})


def judge_reply(req: ScriptedRequest) -> Step:
    if "capital" in req.user and "Passages" in req.user:  # the generator's prompt
        return Step(text="Paris [1].", prompt_tokens=50, completion_tokens=5)
    return Step(text=SCORE, prompt_tokens=30, completion_tokens=9)


async def test_unpriced_model_costs_none_with_a_reason(scripted) -> None:  # type: ignore[no-untyped-def]
    srv = await scripted(judge_reply)
    llm = from_spec(f"openai-compatible:no-such-model@{srv.url}")
    await run_judges(
        ["relevance", "coherence"], question="q", answer="a", contexts=[], ground_truth=None, llm=llm
    )
    await llm.aclose()
    usage = llm.usage
    assert (usage.calls, usage.input_tokens, usage.output_tokens) == (2, 60, 18)
    assert usage.cost_usd is None
    assert usage.cost_note is not None and "no-such-model" in usage.cost_note and "2 of 2" in usage.cost_note
    for label in ("relevance", "coherence"):
        line = usage.by_label[label]
        assert (line.calls, line.input_tokens, line.output_tokens, line.cost_usd) == (1, 30, 9, None)
        assert line.cost_note
    assert Usage.of({"judge": llm}).total.cost_usd is None


async def test_priced_judge_and_generator_are_counted_apart(scripted, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("RAGMETER_LLM_API_KEY", SECRET)
    srv = await scripted(judge_reply)
    prices = {"judge-model": (1.0, 2.0), "gen-model": (3.0, 4.0)}
    judge = from_spec(f"openai-compatible:judge-model@{srv.url}", prices=prices)
    generator = from_spec(f"openai-compatible:gen-model@{srv.url}", prices=prices)
    docs = [Document(doc_id="paris", text="Paris is the capital of France.")]
    pipeline = Pipeline(docs, mode="fulltext", persist=False, llm=generator)
    contexts = await aretrieve(pipeline, "capital of France", 1)
    answer = await aanswer(pipeline, "What is the capital of France?", contexts)
    assert answer == "Paris [1]."
    await run_judges(
        ["relevance", "groundedness"],
        question="What is the capital of France?",
        answer=answer,
        contexts=[c.text or "" for c in contexts],
        ground_truth=None,
        llm=judge,
    )
    usage = Usage.of({"judge": judge, "generator": generator, "also-judge": judge})
    await judge.aclose()
    await generator.aclose()
    assert set(usage.clients) == {"judge", "generator"}  # one client under two roles is counted once
    assert set(usage.by_label) == {"generator", "relevance", "groundedness"}
    gen = usage.by_label["generator"]
    assert (gen.calls, gen.input_tokens, gen.output_tokens) == (1, 50, 5)
    assert gen.cost_usd == pytest.approx((50 * 3.0 + 5 * 4.0) / 1e6)
    rel = usage.by_label["relevance"]
    assert (rel.calls, rel.input_tokens, rel.output_tokens) == (1, 30, 9)
    assert rel.cost_usd == pytest.approx((30 * 1.0 + 9 * 2.0) / 1e6)
    assert (usage.total.calls, usage.total.input_tokens, usage.total.output_tokens) == (3, 110, 23)
    assert usage.total.cost_usd == pytest.approx((50 * 3 + 5 * 4 + 2 * (30 * 1 + 9 * 2)) / 1e6)
    assert usage.clients["generator"].model == "gen-model" and usage.clients["judge"].api_requests == 2
    dumped = usage.model_dump(mode="json")
    assert json.loads(json.dumps(dumped)) == dumped
    assert SECRET not in json.dumps(dumped)
    assert set(dumped) == {"clients", "by_label", "total"}
    assert set(dumped["total"]) == {
        "calls",
        "cached_calls",
        "failed_calls",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "cost_usd",
        "cost_note",
    }


async def test_cached_calls_cost_nothing_and_failures_are_counted(scripted, tmp_path) -> None:  # type: ignore[no-untyped-def]
    srv = await scripted(lambda req: Step(status=400) if "fail" in req.user else Step(text=SCORE))
    cache = tmp_path / "c.sqlite"
    for _ in range(2):
        llm = from_spec(f"openai-compatible:unpriced@{srv.url}", cache=cache)
        await llm.complete([{"role": "user", "content": "hello"}], metric="m")
        with pytest.raises(LLMError):
            await llm.complete([{"role": "user", "content": "fail"}], metric="m")
        await llm.aclose()
    line = llm.usage.by_label["m"]
    # the second client's call came from the cache: nothing sent, nothing paid, even unpriced
    assert (line.calls, line.cached_calls, line.failed_calls, line.input_tokens) == (1, 1, 1, 0)
    assert line.cost_usd == 0.0 and line.cost_note is None


def test_merge_keeps_an_unknown_cost_unknown() -> None:
    priced = UsageLine(calls=2, input_tokens=10, output_tokens=4, cost_usd=0.5)
    unknown = UsageLine(calls=1, input_tokens=3, output_tokens=1, cost_usd=None, cost_note="no price for 'x'")
    total = merge([priced, unknown, priced])
    assert (total.calls, total.input_tokens, total.output_tokens) == (5, 23, 9)
    assert total.cost_usd is None and total.cost_note == "no price for 'x'"
    assert merge([priced, priced]).cost_usd == pytest.approx(1.0)
    assert merge([]).cost_usd == 0.0


async def test_unlabelled_calls_have_their_own_label(scripted) -> None:  # type: ignore[no-untyped-def]
    srv = await scripted(lambda req: Step(text="hi"))
    llm = from_spec(f"openai-compatible:m@{srv.url}")
    await llm.complete([{"role": "user", "content": "x"}])
    await llm.aclose()
    assert list(llm.usage.by_label) == ["unlabelled"]


# --- logs ------------------------------------------------------------------------------------------


async def test_judge_logs_debug_lines_and_trace_replies_without_keys(scripted, monkeypatch, caplog) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("RAGMETER_LLM_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    srv = await scripted(judge_reply)
    llm = from_spec(f"openai-compatible:judge-model@{srv.url}")
    with caplog.at_level(logging.DEBUG, logger="ragmeter"):
        await run_judges(
            ["relevance"], question="q", answer="a", contexts=[], ground_truth=None, llm=llm, query_id="q7"
        )
    judged = [r.getMessage() for r in caplog.records if r.name == "ragmeter.judges"]
    assert len(judged) == 1
    line = judged[0]
    for part in ("metric=relevance", "query=q7", "model=judge-model", "value=0.7", "tokens=30+9", "latency="):
        assert part in line, line
    assert not [r for r in caplog.records if r.levelno < logging.DEBUG]
    caplog.clear()
    with caplog.at_level(TRACE, logger="ragmeter"):
        await run_judges(
            ["coherence"], question="q", answer="a", contexts=[], ground_truth=None, llm=llm, query_id="q8"
        )
    await llm.aclose()
    traced = [r for r in caplog.records if r.levelno == TRACE]
    assert {r.name for r in traced} == {"ragmeter.llm", "ragmeter.judges"}
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert SCORE in text and "coherence of the answer" in text  # the reply and the prompt
    assert SECRET not in text


def test_configure_logging_levels_and_one_handler() -> None:
    assert parse_level("trace") == TRACE == 5 and parse_level("DEBUG") == logging.DEBUG
    assert parse_level("15") == 15 and parse_level(logging.INFO) == logging.INFO
    with pytest.raises(InputError, match="log level"):
        parse_level("chatty")
    assert [level_for_verbosity(n) for n in (0, 1, 2, 3)] == [logging.WARNING, logging.DEBUG, TRACE, TRACE]
    root = logging.getLogger("ragmeter")
    before, level = list(root.handlers), root.level
    first, second = io.StringIO(), io.StringIO()
    try:
        configure_logging("debug", stream=first)
        configure_logging("trace", stream=second)
        added = [h for h in root.handlers if h not in before]
        assert len(added) == 1
        logging.getLogger("ragmeter.judges").log(TRACE, "a trace line")
        assert "TRACE ragmeter.judges: a trace line" in second.getvalue() and first.getvalue() == ""
    finally:
        for handler in [h for h in root.handlers if h not in before]:
            root.removeHandler(handler)
        root.setLevel(level)
