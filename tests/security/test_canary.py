"""Acceptance: a password in the judge URL and API keys in the environment appear in nothing a run
writes (store incl. WAL, JSON, CSV, TRACE logs, report, exports) nor on stdout/stderr."""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hostile import write_hostile

from ragmeter.llm.scripted import ScriptedRequest, Step

PASSWORD = "CanaryPassw0rd-7f3a"
QUERY_KEY = "CanaryQueryKey-91bd"
ENV_KEYS = {
    "OPENAI_API_KEY": "sk-CanaryOpenAI-5c2e11",
    "ANTHROPIC_API_KEY": "sk-ant-CanaryAnthropic-0b9d",
    "RAGMETER_LLM_API_KEY": "CanaryRagmeterKey-44aa",
}
CANARIES = [PASSWORD, QUERY_KEY, *ENV_KEYS.values()]


def _main(args: list[str]) -> tuple[int, str, str]:
    """ragmeter.cli.main in this process (so that logging at TRACE is captured), exit code and output."""
    from ragmeter.cli import main

    out, err = io.StringIO(), io.StringIO()
    code: Any = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(args)
        except SystemExit as exc:
            code = exc.code
    return int(code or 0), out.getvalue(), err.getvalue()


def _leaks(folder: Path, texts: dict[str, str]) -> list[str]:
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found += [f"{path.relative_to(folder)}: {c}" for c in CANARIES if c.encode() in data]
    for name, text in texts.items():
        found += [f"{name}: {c}" for c in CANARIES if c in text]
    return found


def _responder(request: ScriptedRequest) -> Step:
    # The first try of every third request fails (the error path is logged too), then a grade.
    if request.index % 3 == 0 and request.seen == 0:
        return Step(text=None, status=500)
    return Step(text='{"grade": 8, "reasoning": "the top document answers it"}')


async def test_canaries_never_written(
    scripted: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragmeter.llm.logs import TRACE, configure_logging

    server = await scripted(_responder)
    for name, value in ENV_KEYS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("RAGMETER_DB", str(tmp_path / "store.db"))
    dataset = write_hostile(tmp_path)
    url = server.url.replace("http://", f"http://judge:{PASSWORD}@") + f"?api_key={QUERY_KEY}"

    log_file = io.StringIO()
    configure_logging(TRACE, stream=log_file)
    everything = io.StringIO()  # every logger, not only ragmeter's, at TRACE
    root_handler = logging.StreamHandler(everything)
    root_handler.setLevel(TRACE)
    root_handler.setFormatter(logging.Formatter("%(name)s %(message)s"))
    logging.getLogger().addHandler(root_handler)
    old_level = logging.getLogger().level
    logging.getLogger().setLevel(TRACE)
    try:
        code, out, err = await asyncio.to_thread(
            _main,
            [
                "run",
                "--dataset",
                str(dataset),
                "--system",
                "hostile_system:retrieve",
                "--no-generation",
                "--judge",
                f"openai-compatible:judge-model@{server.url.replace('http://', f'http://judge:{PASSWORD}@')}",
                "--no-progress",
                "-o",
                "out/run.json",
            ],
        )
        assert code == 0, out + err
        run_id = out.split("stored as run ", 1)[1].split()[0]
        texts = {"run stdout": out, "run stderr": err}
        for args in (
            ["runs", "show", run_id],
            ["runs", "show", run_id, "--format", "json"],
            ["runs", "list"],
            ["runs", "export", run_id, "--format", "csv", "-o", "out/export.csv"],
            ["runs", "export", run_id, "--format", "json"],
            ["report", run_id, "--out", "out/report", "--no-plots"],
        ):
            code, out, err = await asyncio.to_thread(_main, args)
            assert code == 0, (args, out, err)
            texts[f"{' '.join(args[:2])} stdout"] = out
            texts[f"{' '.join(args[:2])} stderr"] = err
        # a URL with a key parameter is redacted the same way (this one is not called)
        code, out, err = await asyncio.to_thread(
            _main,
            [
                "run",
                "--dataset",
                str(dataset),
                "--system",
                "hostile_system:retrieve",
                "--no-generation",
                "--judge",
                f"openai-compatible:m@{url}",
                "--no-llm-judge",
                "--no-progress",
            ],
        )
        assert code == 0, out + err
        texts["run 2 stdout"], texts["run 2 stderr"] = out, err
    finally:
        logging.getLogger().removeHandler(root_handler)
        logging.getLogger().setLevel(old_level)
        configure_logging(logging.WARNING, stream=sys.stderr)
    texts["ragmeter log (TRACE)"] = log_file.getvalue()
    texts["all loggers (TRACE)"] = everything.getvalue()

    # the judge was really called with the credentials, and the logs are not empty
    assert server.requests, "the judge server was never called"
    assert "llm" in texts["ragmeter log (TRACE)"]
    assert (tmp_path / "store.db").stat().st_size > 0 and (
        tmp_path / "out" / "report" / "report.html"
    ).exists()
    assert _leaks(tmp_path, texts) == []
    # the judge spec is kept, without its credentials
    shown = texts["runs show stdout"]
    assert "judge-model@http://***@127.0.0.1" in shown
