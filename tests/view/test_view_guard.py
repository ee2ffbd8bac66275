"""The viewer's guard over real HTTP against a `ragmeter view` child process: a Host that is not this server's
name gets 403 on every route (DNS rebinding), a label POST needs the CSRF token AND a same-origin request,
beyond loopback every request needs the access token, and numeric query parameters are bounded."""

from __future__ import annotations

import http.client
import re
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest
from browser import serve, serve_printed
from view_store import add_run

from ragmeter.store import open_store
from ragmeter.store.labels import all_labels

ANNOTATE = ("--annotate", "--annotator", "ann")


def call(
    base: str, path: str, *, host: str | None = None, method: str = "GET", body: str = "", **headers: str
) -> tuple[int, dict[str, str], str]:
    """One request to the server at base, with the Host header given (else the address's own)."""
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    sent = {k.replace("_", "-"): v for k, v in headers.items()}
    if host is not None:
        sent["Host"] = host
    if body:
        sent["Content-Type"] = "application/x-www-form-urlencoded"
    try:
        conn.request(method, path, body=body.encode() if body else None, headers=sent)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode("utf-8", "replace")
    finally:
        conn.close()


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    path = str(tmp_path_factory.mktemp("guard") / "store.db")
    with open_store(path) as store:
        a = add_run(store, "secret-run-name", 6, seed=1)
        b = add_run(store, "other", 6, seed=2)
    return path, a, b


def routes(a: str, b: str) -> list[tuple[str, str]]:
    return [
        ("GET", "/"),
        ("GET", f"/runs/{a}"),
        ("GET", f"/runs/{a}/queries"),
        ("GET", f"/runs/{a}/queries?page=2"),
        ("GET", f"/runs/{a}/query?id=q00001"),
        ("GET", f"/runs/{a}/queue?metric=factuality"),
        ("GET", f"/compare?run={a}&run={b}"),
        ("GET", "/static/view.css"),
        ("GET", "/static/view.js"),
        ("GET", "/no/such/page"),
        ("POST", "/labels"),
        ("HEAD", "/"),
    ]


def test_a_foreign_host_gets_403_on_every_route_and_loopback_names_are_served(
    db: tuple[str, str, str],
) -> None:
    path, a, b = db
    with serve(path, *ANNOTATE) as base:
        port = urlsplit(base).port
        for method, route in routes(a, b):
            for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1.evil.example:{port}", "", "a b"):
                status, _, text = call(base, route, host=host, method=method)
                assert status == 403, (method, route, host, status)
                assert "secret-run-name" not in text and a not in text
        # loopback names on any port (SSH / editor port forwarding)
        for host in ("localhost:9000", "127.0.0.1", f"[::1]:{port}", "LOCALHOST:1"):
            status, headers, text = call(base, "/", host=host)
            assert status == 200, host
            assert "secret-run-name" in text
            assert headers["referrer-policy"] == "same-origin"
        status, _, _ = call(base, f"/runs/{a}", host="localhost:9000")
        assert status == 200


def test_allow_host_adds_a_name_and_nothing_else(db: tuple[str, str, str]) -> None:
    path, a, _ = db
    with serve(path, "--allow-host", "proxy.example") as base:
        assert call(base, f"/runs/{a}", host="proxy.example:443")[0] == 200
        assert call(base, f"/runs/{a}", host="localhost")[0] == 200
        assert call(base, f"/runs/{a}", host="evil.example")[0] == 403


def _page_token(base: str, run_id: str) -> tuple[str, str]:
    status, _, page = call(base, f"/runs/{run_id}/query?id=q00002", host="localhost")
    assert status == 200
    m = re.search(r'name="csrf" value="([^"]+)"', page)
    doc = re.search(r'data-doc="([^"]+)"', page)
    assert m is not None and doc is not None
    return m.group(1), doc.group(1)


def test_label_post_needs_the_token_and_the_same_origin(tmp_path: Path) -> None:
    path = str(tmp_path / "post.db")
    with open_store(path) as store:
        run_id = add_run(store, "a", 4)
    with serve(path, *ANNOTATE) as base:
        csrf, doc = _page_token(base, run_id)
        form = {"kind": "relevance", "run_id": run_id, "query_id": "q00002", "doc_id": doc, "value": "1"}
        body = urlencode({**form, "csrf": csrf, "version": "0"})
        own = base  # http://127.0.0.1:PORT
        refused = [
            {"Origin": "http://evil.example"},
            {"Origin": f"http://evil.example:{urlsplit(base).port}"},
            {"Origin": "http://localhost"},  # another origin than the Host the request came by
            {"Origin": "null", "Sec-Fetch-Site": "cross-site"},
            {"Sec-Fetch-Site": "same-site"},
            {},  # neither header: not a same-origin page
        ]
        for headers in refused:
            status, _, _ = call(base, "/labels", method="POST", body=body, **headers)
            assert status == 403, headers
        with open_store(path, sweep=False) as store:
            assert all_labels(store.engine, run_id=None, history=True) == []
        # the right token from a foreign origin: still refused; a wrong token from our own origin: refused
        bad = urlencode({**form, "csrf": "guess", "version": "0"})
        assert call(base, "/labels", method="POST", body=bad, Origin=own)[0] == 403
        # the same POST from this server's own origin is stored
        status, headers, _ = call(base, "/labels", method="POST", body=body, Origin=own)
        assert status == 303, status
        # no usable Origin, but the browser says same-origin: accepted (version 1 now)
        again = urlencode({**form, "csrf": csrf, "version": "1", "value": "0"})
        status, _, _ = call(
            base, "/labels", method="POST", body=again, Origin="null", Sec_Fetch_Site="same-origin"
        )
        assert status == 303
        huge = urlencode({**form, "csrf": csrf, "version": "9" * 31})
        assert call(base, "/labels", method="POST", body=huge, Origin=own)[0] == 400
    with open_store(path, sweep=False) as store:
        history = all_labels(store.engine, run_id=None, history=True)
    assert [(lab.value, lab.version) for lab in history] == [(1.0, 1), (0.0, 2)]


def test_beyond_loopback_every_request_needs_the_token(db: tuple[str, str, str]) -> None:
    path, a, b = db
    with serve_printed(path, "--host", "0.0.0.0", *ANNOTATE) as (base, line):
        m = re.search(r"\?token=([A-Za-z0-9._~-]+)", line)
        assert m is not None, line
        token = m.group(1)
        for method, route in routes(a, b):
            status, _, text = call(base, route, method=method)
            assert status in (401, 403), (method, route, status)
            assert "secret-run-name" not in text
            assert call(base, route, method=method, Authorization="token wrong-token-1234")[0] in (401, 403)
        assert call(base, "/", Authorization=f"token {token}")[0] == 200
        # the printed URL sets the cookie (HttpOnly, SameSite=Strict) and drops the token from the address
        status, headers, _ = call(base, f"/runs/{a}?token={token}")
        assert status == 303 and headers["location"] == f"/runs/{a}"
        cookie = headers["set-cookie"]
        assert f"ragmeter_token={token}" in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie
        status, _, text = call(base, f"/runs/{a}", Cookie=f"ragmeter_token={token}")
        assert status == 200 and "secret-run-name" in text
        assert call(base, f"/runs/{a}", Cookie="ragmeter_token=stale-token-999")[0] == 401
        # a DNS name that is not this machine's is refused even with the token
        assert call(base, "/", host="evil.example", Authorization=f"token {token}")[0] == 403


def test_beyond_loopback_warns_who_can_read_and_write(db: tuple[str, str, str]) -> None:
    import os
    import signal
    import subprocess
    import sys

    from browser import ROOT

    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    cmd = [sys.executable, "-m", "ragmeter", "view", "--db", db[0], "--port", "0", "--host", "0.0.0.0"]
    proc = subprocess.Popen([*cmd, *ANNOTATE, "--token", "given-token-12345"], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert "?token=given-token-12345" in first
    assert "has the token can read the store and write labels as ann" in err
    proc = subprocess.run([*cmd, "--token", "short"], env=env, text=True, capture_output=True, check=False)
    assert proc.returncode == 2 and proc.stderr.startswith("ragmeter: error: --token")
    assert len(proc.stderr.strip().splitlines()) == 1
    proc = subprocess.run([*cmd, "--allow-host", "a b"], env=env, text=True, capture_output=True, check=False)
    assert (
        proc.returncode == 2
        and proc.stderr.strip() == "ragmeter: error: --allow-host: not a host name: 'a b'"
    )


def test_numeric_parameters_are_bounded(db: tuple[str, str, str]) -> None:
    path, a, _ = db
    with serve(path) as base:
        for query, name in [
            ("page=" + "9" * 31, "page"),
            ("page=0", "page"),
            ("page=-3", "page"),
            ("per=" + "1" * 40, "per"),
            ("per=0", "per"),
            ("metric=mrr&lo=1e400", "lo"),
            ("metric=mrr&hi=-" + "9" * 400, "hi"),
        ]:
            status, _, text = call(base, f"/runs/{a}/queries?{query}")
            assert status == 400, query
            assert f"{name}:" in text
        assert call(base, f"/runs/{a}/queries?page=2&per=2")[0] == 200
