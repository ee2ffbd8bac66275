"""The viewer guard's reading of Host and Origin headers (the server-level tests are in tests/view)."""

from __future__ import annotations

import pytest

from ragmeter.view.guard import Guard, allowed_name, host_name, is_loopback, same_origin


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("localhost:9000", "localhost"),
        ("LOCALHOST", "localhost"),
        ("127.0.0.1:80", "127.0.0.1"),
        ("[::1]:8765", "::1"),
        ("[::1]", "::1"),
        ("example.org.", "example.org"),
        ("", None),
        ("a b", None),
        ("evil.example@127.0.0.1", None),
        ("127.0.0.1/x", None),
        ("[::1", None),
        ("[::1]x", None),
        ("localhost:port", None),
    ],
)
def test_host_name(header: str, name: str | None) -> None:
    assert host_name(header) == name


def test_loopback_guard_answers_loopback_names_only() -> None:
    guard = Guard.for_bind("127.0.0.1")
    for ok in ("127.0.0.1:1", "localhost:9000", "[::1]:8765", "localhost"):
        assert guard.host_allowed(ok), ok
    for bad in (
        "evil.example:8765",
        "127.0.0.2",
        "127.0.0.1.evil.example",
        "localhost.evil.example",
        "[::2]",
    ):
        assert not guard.host_allowed(bad), bad
    assert guard.token is None


def test_named_bind_and_allow_host() -> None:
    guard = Guard.for_bind("192.168.1.5", allow=["proxy.example", "[fe80::1]", "fe80::2"], token="t" * 10)
    assert guard.host_allowed("192.168.1.5:8765") and guard.host_allowed("proxy.example")
    assert guard.host_allowed("[fe80::1]:1") and guard.host_allowed("[fe80::2]")
    assert not guard.host_allowed("localhost") and not guard.host_allowed("10.0.0.1")
    assert allowed_name("not a name") is None


def test_wildcard_bind_answers_ip_literals_not_foreign_names() -> None:
    guard = Guard.for_bind("0.0.0.0", token="t" * 10)
    assert guard.host_allowed("10.1.2.3:8765") and guard.host_allowed("[fe80::1]:8765")
    assert guard.host_allowed("localhost:1")
    assert not guard.host_allowed("evil.example:8765")
    assert is_loopback("::1") and is_loopback("localhost") and not is_loopback("0.0.0.0")


@pytest.mark.parametrize(
    ("headers", "ok"),
    [
        ({"host": "127.0.0.1:8765", "origin": "http://127.0.0.1:8765"}, True),
        ({"host": "proxy.example", "origin": "https://proxy.example"}, True),
        ({"host": "127.0.0.1:8765", "origin": "http://127.0.0.1:8766"}, False),
        ({"host": "127.0.0.1:8765", "origin": "http://evil.example"}, False),
        ({"host": "127.0.0.1:8765", "origin": "ftp://127.0.0.1:8765"}, False),
        ({"host": "127.0.0.1:8765", "origin": "null", "sec-fetch-site": "same-origin"}, True),
        ({"host": "127.0.0.1:8765", "origin": "null"}, False),
        ({"host": "127.0.0.1:8765", "sec-fetch-site": "same-site"}, False),
        ({"host": "127.0.0.1:8765", "sec-fetch-site": "same-origin"}, True),
        ({"host": "127.0.0.1:8765"}, False),
    ],
)
def test_same_origin(headers: dict[str, str], ok: bool) -> None:
    assert same_origin(headers) is ok
