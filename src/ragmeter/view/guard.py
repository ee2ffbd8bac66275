"""Who may talk to the viewer: the checks that run before any page handler (Jupyter's model).

- **Host**: a browser sends the name it resolved in `Host`, so a page whose own name was pointed at 127.0.0.1
  (DNS rebinding) still says `Host: evil.example`. A loopback bind answers loopback names only (any port, so
  SSH and editor port forwarding keep working); `--host X` answers X; `--allow-host NAME` adds names for a
  proxy. A wildcard bind (0.0.0.0, ::) also answers IP literals and this machine's own names: a rebinding
  page always carries a DNS name, and that bind needs the access token anyway.
- **Same origin**: a request that may change state (any method but GET, HEAD, OPTIONS) needs an `Origin` that
  is this server's own, or, where the browser sends no usable `Origin`, `Sec-Fetch-Site: same-origin`. The
  CSRF token is checked by the handler (annotate.py); this is the second wall.
- **Access token** (every bind beyond loopback, or `--token` anywhere): on every request, as the
  `ragmeter_token` cookie, an `Authorization: token T` header, or `?token=T`; the last is the URL printed at
  start, which sets the cookie (HttpOnly, SameSite=Strict) and redirects to the same page without it.

A refused request gets a short plain-text 403 (401 for a missing or wrong token) and reaches no handler."""

from __future__ import annotations

import hmac
import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
WILDCARDS = frozenset({"0.0.0.0", "::", ""})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
COOKIE = "ragmeter_token"

Scope = dict[str, Any]


def is_loopback(host: str) -> bool:
    """Whether a bind address (or a Host name) is this machine only."""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_name(header: str) -> str | None:
    """The name of a `Host` header without its port, lower case ('[::1]:80' -> '::1'); None if malformed."""
    header = header.strip().lower()
    if not header or any(c.isspace() or c in "/\\@?#" for c in header):
        return None
    if header.startswith("["):
        end = header.find("]")
        rest = header[end + 1 :]
        if end < 0 or (rest and not rest.startswith(":")):
            return None
        name, port = header[1:end], rest[1:]
    else:
        name, _, port = header.partition(":")
    if port and not port.isdigit():
        return None
    return name.rstrip(".") or None


def allowed_name(arg: str) -> str | None:
    """An --allow-host NAME (a name, an IP, or a [v6] literal; a port is ignored), as Host names compare."""
    bare = arg.strip().strip("[]").lower()
    return bare if _is_ip(bare) else host_name(arg)


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class Guard:
    """The names this server answers to, and the access token (None: no token asked)."""

    names: frozenset[str]
    token: str | None = None
    any_ip: bool = False  # a wildcard bind: IP literals are answered too
    extra: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def for_bind(cls, host: str, *, allow: Iterable[str] = (), token: str | None = None) -> Guard:
        """The guard of a server bound to `host` (--host), with --allow-host names and --token."""
        allowed = frozenset(n for n in (allowed_name(a) for a in allow) if n)
        bind = host.strip("[]").lower()
        if bind in WILDCARDS:
            own = {socket.gethostname().lower(), socket.getfqdn().lower()} - {""}
            return cls(LOOPBACK_NAMES | own | allowed, token, any_ip=True, extra=allowed)
        if is_loopback(bind):
            return cls(LOOPBACK_NAMES | {bind} | allowed, token, extra=allowed)
        return cls(frozenset({bind}) | allowed, token, extra=allowed)

    def host_allowed(self, header: str) -> bool:
        name = host_name(header)
        if name is None:
            return False
        return name in self.names or (self.any_ip and _is_ip(name))


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in scope.get("headers", []):
        name = key.decode("latin-1").lower()
        if name not in out:  # the first of repeated headers; a second Host is refused below
            out[name] = value.decode("latin-1")
    return out


def _repeated_host(scope: Scope) -> bool:
    return sum(1 for key, _ in scope.get("headers", []) if key.lower() == b"host") > 1


def same_origin(headers: dict[str, str]) -> bool:
    """An Origin naming this server (the Host it was reached by; http or https behind a proxy), or no usable
    Origin and `Sec-Fetch-Site: same-origin`."""
    origin = headers.get("origin", "").strip()
    if origin and origin != "null":
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and parts.netloc.lower() == headers.get("host", "").lower()
    return headers.get("sec-fetch-site", "").strip().lower() == "same-origin"


class GuardMiddleware:
    """ASGI middleware: Host, then access token, then same origin for state changes; else a 4xx here."""

    def __init__(self, app: Any, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        if _repeated_host(scope) or not self.guard.host_allowed(headers.get("host", "")):
            await _plain(send, 403, "403: this server does not answer to that Host name (see --allow-host)")
            return
        if self.guard.token is not None:
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
            if not any(self._matches(t) for t in self._tokens(headers, query)):
                await _plain(send, 401, "401: open the URL with the token that `ragmeter view` printed")
                return
            if "token" in query and scope["method"] in SAFE_METHODS:
                await self._login(scope, send, query)
                return
        if scope["method"] not in SAFE_METHODS and not same_origin(headers):
            await _plain(send, 403, "403: a request that changes data must come from this server's own pages")
            return
        await self.app(scope, receive, send)

    def _matches(self, given: str) -> bool:
        assert self.guard.token is not None
        return hmac.compare_digest(given.encode("utf-8"), self.guard.token.encode("utf-8"))

    @staticmethod
    def _tokens(headers: dict[str, str], query: dict[str, str]) -> list[str]:
        """Every token the request offers (a stale cookie must not hide a fresh URL's token)."""
        found = [query["token"]] if "token" in query else []
        auth = headers.get("authorization", "")
        if auth.lower().startswith("token "):
            found.append(auth[6:].strip())
        cookie: SimpleCookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except Exception:  # a malformed Cookie header: as if none were sent
            cookie = SimpleCookie()
        if COOKIE in cookie:
            found.append(cookie[COOKIE].value)
        return found

    async def _login(self, scope: Scope, send: Any, query: dict[str, str]) -> None:
        """The printed URL: set the cookie and go to the same page without the token in the address."""
        rest = urlencode([(k, v) for k, v in query.items() if k != "token"])
        raw = scope.get("raw_path") or quote(scope.get("path") or "/").encode("ascii")
        path = raw.decode("latin-1")
        if not path.startswith("/") or path.startswith(("//", "/\\")):  # never a redirect off this server
            path = "/"
        target = path + ("?" + rest if rest else "")
        cookie = f"{COOKIE}={self.guard.token}; Path=/; HttpOnly; SameSite=Strict"
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [
                    (b"location", target.encode("latin-1", "replace")),
                    (b"set-cookie", cookie.encode("latin-1")),
                    (b"referrer-policy", b"same-origin"),
                    (b"cache-control", b"no-store"),
                    (b"content-length", b"0"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b""})


async def _plain(send: Any, status: int, text: str) -> None:
    body = (text + "\n").encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                (b"x-content-type-options", b"nosniff"),
                (b"referrer-policy", b"same-origin"),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
