"""What every page of the viewer shares: the templates' environment, the links between pages, the query
parameters read with their bounds, the 404 and 400 exceptions, and the viewer's base (render, run lookup,
error page)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from ragmeter.errors import InputError

if TYPE_CHECKING:
    from jinja2 import Environment
    from starlette.responses import Response

    from ragmeter.models import EvalRunResult
    from ragmeter.store.api import Store

HERE = Path(__file__).parent
PAGE_SIZE = 50


class NotFound(Exception):
    """An unknown run or query id: a 404 page."""


class BadRequest(Exception):
    """A query parameter that cannot be read: a 400 page naming it."""


def environment() -> Environment:
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    return Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def run_href(run_id: str) -> str:
    return "/runs/" + quote(run_id, safe="")


def query_href(run_id: str, query_id: str, state: list[tuple[str, str]] | None = None) -> str:
    """A query's page; `state` (the queries page's sort and filters, and the row's place in that order)
    lets the page step to the next and previous query with j and k."""
    return run_href(run_id) + "/query?" + urlencode([("id", query_id), *(state or [])])


MAX_PAGE = 1_000_000_000


def _whole(params: Any, name: str, default: int, lo: int, hi: int) -> int:
    """A whole-number query parameter inside lo..hi (a 31-digit page is a 400, not an SQLite overflow)."""
    raw = params.get(name, "").strip()
    if not raw:
        return default
    if len(raw) > 12 or not raw.lstrip("+-").isdigit():
        raise BadRequest(f"{name}: a whole number from {lo} to {hi}, got {raw[:40]!r}")
    value = int(raw)
    if not lo <= value <= hi:
        raise BadRequest(f"{name}: a whole number from {lo} to {hi}, got {raw[:40]!r}")
    return value


def _number(params: Any, name: str) -> float | None:
    raw = params.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise BadRequest(f"{name}: not a number: {raw[:40]!r}") from None
    if not math.isfinite(value):
        raise BadRequest(f"{name}: not a finite number")
    return value


class BaseViewer:
    """The pages' shared part, over one open store."""

    def __init__(self, store: Store, *, annotator: str | None = None) -> None:
        self.store = store
        self.annotator = annotator
        self.env = environment()

    def render(self, template: str, status: int = 200, **context: Any) -> Response:
        from starlette.responses import HTMLResponse

        base = {
            "static": "/static/",
            "home": "/",
            "readonly": self.annotator is None,
            "annotator": self.annotator or "",
            "db": self.store.url,
        }
        html = self.env.get_template(template).render(**base, **context)
        return HTMLResponse(html, status_code=status)

    def run(self, run_id: str) -> EvalRunResult:
        try:
            return self.store.get_run(run_id, with_queries=False)
        except InputError:
            raise NotFound(f"no run {run_id!r} in this store") from None

    # ------------------------------------------------------------------ errors

    def error_page(self, code: int, title: str, message: str) -> Response:
        return self.render("error.html.j2", status=code, code=code, title=title, message=message)
