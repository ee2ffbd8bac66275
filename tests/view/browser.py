"""Playwright for Python driving Debian's Chromium by path (Playwright's own browser download is not
reachable here), and a `ragmeter view` server in a child process on a free port."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from test_report_browser import chromium_binary

ROOT = Path(__file__).resolve().parents[2]
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]


@contextmanager
def browser(*extra_args: str) -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    path = chromium_binary()  # the report's browser test finds Chromium the same way
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=[*ARGS, *extra_args])
        try:
            yield b
        finally:
            b.close()


@contextmanager
def serve(db: str, *extra: str) -> Iterator[str]:
    """`ragmeter view --db DB --port 0 ...` in a child process; yields its base URL; stops it after."""
    with serve_printed(db, *extra) as (base, _):
        yield base


@contextmanager
def serve_printed(db: str, *extra: str) -> Iterator[tuple[str, str]]:
    """As serve, yielding (base URL, the first line the server printed: its URL, with a token if any)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragmeter", "view", "--db", db, "--port", "0", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.search(r"(http://127\.0\.0\.1:\d+)/", line)
        if m is None:
            proc.kill()
            raise AssertionError(
                f"no URL from ragmeter view: {line!r} {proc.stderr.read() if proc.stderr else ''}"
            )
        yield m.group(1), line
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def pwned(page: Any) -> bool:
    """Whether a planted payload ran: it sets the title to PWNED/PWNED2 or marks <html data-pwned>."""
    return bool(
        page.title() in ("PWNED", "PWNED2")
        or page.evaluate("document.documentElement.hasAttribute('data-pwned')")
    )


def no_horizontal_overflow(page: Any) -> tuple[int, int]:
    return tuple(
        page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    )
