"""A refused invocation writes nothing: no run row for a binary run file, no `<file>.lock` beside a file
that is not a store."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

Cli = Callable[..., tuple[int, str, str]]


def test_a_binary_run_file_leaves_no_run_row(
    cli_env: dict[str, str], ragmeter_cli: Cli, tmp_path: Path
) -> None:
    run_file = tmp_path / "run.trec"
    run_file.write_bytes(b"q1 Q0 d1 1 1.0 x\n" + os.urandom(64) + b"\x00\x01")
    code, _, err = ragmeter_cli(
        "run", "-d", cli_env["dataset"], "-s", str(run_file), "--no-progress", "--db", cli_env["db"]
    )
    assert code == 2 and "binary data" in err and str(run_file.name) in err and "Traceback" not in err, err
    code, out, err = ragmeter_cli("runs", "list", "--db", cli_env["db"], "--format", "json")
    assert code == 0 and json.loads(out) == [], (out, err)


def test_a_file_that_is_not_a_store_gets_no_lock_beside_it(ragmeter_cli: Cli, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes, not a database\n" * 10)
    before = sorted(p.name for p in tmp_path.iterdir())
    code, _, err = ragmeter_cli("runs", "list", "--db", str(notes))
    assert code == 2 and "Traceback" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert notes.read_text() == "my notes, not a database\n" * 10
