"""`ragmeter run` settings: judge options, --set, -v/--log-level against a real scripted judge server;
`generate --question-model` (and its deprecated --judge alias)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest

pytest.importorskip("aiohttp")
from ragmeter.llm.scripted import ScriptedRequest, ScriptedServer, Step

Cli = Callable[..., tuple[int, str, str]]


def _grade(req: ScriptedRequest) -> Step:
    if "capital of France?" in req.user:  # this query's judge call fails: with --judge-retries 0, asked once
        return Step(status=500, text="overloaded")
    return Step(text='{"reasoning": "checked", "grade": 8}')


@pytest.fixture
def judge_url() -> Iterator[tuple[str, ScriptedServer]]:
    from cli_fakes import scripted_server

    with scripted_server(_grade) as server:
        yield f"openai-compatible:scripted@{server.url}", server


def _judged(cli_env: dict[str, str], judge: str) -> list[str]:
    return [
        "run", "-d", cli_env["dataset"], "-s", "cli_fakes:system_a", "--no-generation", "--no-progress",
        "--judge", judge, "--metrics", "mrr,retrieval_grade", "--db", cli_env["db"], "--format", "json",
    ]  # fmt: skip


def test_judge_options_and_log_levels(
    cli_env: dict[str, str], ragmeter_cli: Cli, judge_url: tuple[str, ScriptedServer]
) -> None:
    spec, server = judge_url
    args = _judged(cli_env, spec)
    code, out, err = ragmeter_cli(*args, "--set", "limit=1")
    assert code == 0 and "DEBUG" not in err and "TRACE" not in err  # quiet by default
    code, out, err = ragmeter_cli(
        *args, "--judge-retries", "0", "--judge-timeout", "5", "--set", "limit=4", "-v"
    )
    assert code == 0, err
    run = json.loads(out)
    assert run["n_queries"] == 4 and run["config"]["limit"] == 4
    assert run["config"]["judge_options"] == {"max_retries": 0, "timeout": 5.0}
    assert "q-france" in [q["query_id"] for q in run["per_query"]]
    asked = [r for r in server.requests if "capital of France?" in r.user]
    assert len(asked) == 1  # the failing call was not retried
    assert run["aggregate"]["retrieval_grade"]["n_null"] == 1
    # DEBUG: one line per judge call on stderr, no prompts
    debug = [line for line in err.splitlines() if line.startswith("DEBUG ragmeter.llm")]
    assert len(debug) >= 4 and not any(line.startswith("TRACE") for line in err.splitlines())

    code, out, err = ragmeter_cli(*args, "--set", "limit=1", "--log-level", "trace")
    assert code == 0, err
    assert any(line.startswith("TRACE ragmeter.llm") for line in err.splitlines())
    assert "What is the capital of" in err  # the prompt itself, at TRACE

    from ragmeter.llm.logs import configure_logging

    configure_logging("warning")  # in-process runs share the logging setup; leave it quiet for other tests


def test_generate_names_the_question_model(
    ragmeter_cli: Cli, cli_env: dict[str, str], judge_url: tuple[str, ScriptedServer]
) -> None:
    _, server = judge_url
    code, _, err = ragmeter_cli("generate", "--collection", "kb", "--db", cli_env["db"])
    assert (
        code == 2
        and err.strip()
        == "ragmeter: error: --question-model: give --question-model MODEL, the LLM that writes the questions"
    )
    code, _, err = ragmeter_cli(
        "generate", "--collection", "kb", "--question-model", "gpt-4o", "--db", cli_env["db"]
    )
    assert code == 2 and "--question-model: bad judge spec 'gpt-4o'" in err and not server.requests
    # the old flag is checked as well; given wrongly, its error is the one line (the deprecation warning
    # appears only when the command goes on: tests/datasets/test_generate.py)
    code, _, err = ragmeter_cli("generate", "--collection", "kb", "--judge", "gpt-4o", "--db", cli_env["db"])
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith("ragmeter: error: --judge: bad judge spec 'gpt-4o'")
    assert "deprecated" not in err
    code, out, _ = ragmeter_cli("generate", "--help")
    assert "--question-model" in out and "--judge" not in out


def test_help_shows_one_meaning_per_flag(ragmeter_cli: Cli) -> None:
    from ragmeter.cli import COMMANDS

    for command in ("run", "runs list", "report", "experiment", "generate", "ingest", "runs compare"):
        code, out, _ = ragmeter_cli(*command.split(), "--help")
        assert code == 0 and "--db URL" in out, command
    code, out, _ = ragmeter_cli("run", "--help")
    assert "MODEL@URL" not in out.replace("openai-compatible:MODEL@URL", "")  # only the accepted syntax
    assert "--namespace NAME" in out and "--collection NAME" in out and "--set KEY=VALUE" in out
    code, out, _ = ragmeter_cli("report", "--help")
    assert "--plot-format" in out and "--format" not in out
    assert "metrics" in COMMANDS
