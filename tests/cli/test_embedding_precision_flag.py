"""`ragmeter run --embedding-precision`: a precision the backend does not have is refused before anything is
stored, in one line naming the flag."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

Cli = Callable[..., tuple[int, str, str]]


def _runs(db: str) -> int:
    path = Path(db.removeprefix("sqlite:///"))
    if not path.exists():
        return 0
    with sqlite3.connect(path) as conn:
        tables = {r[0] for r in conn.execute("select name from sqlite_master where type='table'")}
        return conn.execute("select count(*) from runs").fetchone()[0] if "runs" in tables else 0


@pytest.mark.parametrize(
    ("backend", "precision", "allowed"),
    [("torch", "fp16", "fp32, bf16"), ("onnx", "bf16", "int8-block64, fp32")],
)
def test_a_precision_the_backend_lacks_is_one_line_and_stores_nothing(
    cli_env: dict[str, str], ragmeter_cli: Cli, backend: str, precision: str, allowed: str
) -> None:
    code, out, err = ragmeter_cli(
        "run", "-d", "demo", "-s", "builtin", "--mode", "semantic", "--no-generation", "--no-progress",
        "--embedding-backend", backend, "--embedding-precision", precision, "--db", cli_env["db"],
    )  # fmt: skip
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        f"ragmeter: error: --embedding-precision: {precision!r} is not an embedding_precision of the {backend} "
        f"backend; use one of {allowed}"
    ]
    assert _runs(cli_env["db"]) == 0
