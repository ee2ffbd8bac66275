"""`ragmeter view` from the command line: bad stores and a port in use are one line and exit 2; a host other
than this machine warns; --bundle writes the pages."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from view_store import make_store

ROOT = Path(__file__).resolve().parents[2]


def ragmeter(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-m", "ragmeter", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )


def one_line_exit_2(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ragmeter: error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in lines[0]


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, str]]:
    return make_store(tmp_path_factory.mktemp("viewcli") / "store.db")


def test_bad_stores_are_one_line(tmp_path: Path) -> None:
    junk = tmp_path / "notes.txt"
    junk.write_text("hello\n" * 100)
    one_line_exit_2(ragmeter("view", "--db", str(junk)), "not a ragmeter store")
    one_line_exit_2(ragmeter("view", "--db", str(tmp_path / "absent.db")), "no store at")
    assert not (tmp_path / "absent.db").exists()


def test_port_in_use_is_one_line(stored: tuple[str, dict[str, str]]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        one_line_exit_2(ragmeter("view", "--db", stored[0], "--port", str(port)), f"127.0.0.1:{port}")


def test_other_host_warns(stored: tuple[str, dict[str, str]]) -> None:
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        proc = ragmeter("view", "--db", stored[0], "--host", "0.0.0.0", "--port", str(port))
    assert "warning: listening on 0.0.0.0" in proc.stderr
    assert proc.returncode == 2


def test_bundle_writes_pages(stored: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    url, ids = stored
    out = tmp_path / "bundle"
    proc = ragmeter(
        "view", "--db", url, "--bundle", str(out), "--run", ids["base"], "--run", ids["hostile"][:-2]
    )
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "index.html",
        "run-1.html",
        "run-2.html",
        "view.css",
        "view.js",
    ]
    page = (out / "run-2.html").read_text("utf-8")
    assert page.count("<script") == 2  # the data block and the app's script
    assert "</script><script>" not in page.split('id="bundle-data">', 1)[1].split("</script>", 1)[0]
    one_line_exit_2(ragmeter("view", "--db", url, "--bundle", str(out)), "--run")
    one_line_exit_2(ragmeter("view", "--db", url, "--bundle", str(out), "--run", "zzz"), "no run")
