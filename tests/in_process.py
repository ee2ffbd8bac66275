"""`ragmeter ARGS` run in this process through its real entry point, for tests of the command line."""

from __future__ import annotations

import pytest


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr): what the call printed, with anything captured before it and not read."""
    from ragmeter.cli import main

    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err
