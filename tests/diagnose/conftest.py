"""Fixtures of the diagnosis tests; the constructed dataset and scripted system live in diagnose_fakes.py."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def ragmeter_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str]]:
    """Run `ragmeter ARGS` in-process through its real entry point: (exit code, stdout + stderr)."""
    from in_process import run_main

    def run(*args: str) -> tuple[int, str]:
        capsys.readouterr()
        code, out, err = run_main(capsys, *args)
        return code, out + err

    return run
