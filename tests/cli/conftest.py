"""CLI tests: a dataset file, a temporary SQLite store, and the CLI run in-process."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from cli_fakes import dataset

from in_process import run_main


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RAGMETER_DB", raising=False)
    (tmp_path / "caps.json").write_text(dataset().model_dump_json())
    return {"db": f"sqlite:///{tmp_path / 'cli.db'}", "dataset": str(tmp_path / "caps.json")}


@pytest.fixture
def ragmeter_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """Run `ragmeter ARGS` in-process through its real entry point: (exit code, stdout, stderr)."""

    def run(*args: str) -> tuple[int, str, str]:
        return run_main(capsys, *args)

    return run
