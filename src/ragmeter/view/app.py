"""The viewer's web app (Starlette): runs, one run, its queries (paged in SQL), one query, and a comparison.

Read-only: the store is opened without migration or sweep and nothing here writes to it. Every stored text
is escaped by jinja2's autoescaping; a Content-Security-Policy admits only the app's own script and styles,
so a payload that escaping missed still would not run."""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from ragmeter import metrics as registry
from ragmeter.errors import InputError
from ragmeter.report.nugget_note import nugget_set_note
from ragmeter.report.selection import display_order
from ragmeter.store.labels import all_labels
from ragmeter.store.pages import SORT_COLUMNS, QueryFilter, latencies, query_page, query_result
from ragmeter.view import data
from ragmeter.view.guard import Guard, GuardMiddleware

if TYPE_CHECKING:
    from jinja2 import Environment
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from ragmeter.models import EvalRunResult
    from ragmeter.store.api import Store

HERE = Path(__file__).parent
PAGE_SIZE = 50
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'; connect-src 'self'"
)


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


class Viewer:
    """The pages, over one open store."""

    def __init__(self, store: Store, *, annotator: str | None = None) -> None:
        self.store = store
        self.annotator = annotator
        self.env = environment()
        self._plots = lru_cache(maxsize=32)(self._plots_uncached)

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

    # ------------------------------------------------------------------ pages

    def runs_page(self, request: Request) -> Response:
        p = request.query_params
        runs = self.store.list_runs()
        flt = {"dataset": p.get("dataset", ""), "system": p.get("system", ""), "status": p.get("status", "")}
        shown = [
            r
            for r in runs
            if (not flt["dataset"] or r.config.dataset == flt["dataset"])
            and (not flt["system"] or data.system_of(r) == flt["system"])
            and (not flt["status"] or r.status == flt["status"])
        ]
        return self.render(
            "runs.html.j2",
            rows=data.run_rows(shown),
            f=flt,
            datasets=sorted({r.config.dataset for r in runs}),
            systems=sorted({data.system_of(r) for r in runs}),
        )

    def _classes(self, run_id: str, stamp: str) -> list[tuple[str, int]]:
        run = self.store.get_run(run_id, with_queries=False)
        if not any(registry.family_of(n) == "diagnosis" for n in run.aggregate):
            return []
        return data.failure_classes(self.store.get_run(run_id))

    def _plots_uncached(self, run_id: str, stamp: str) -> list[dict[str, str]]:
        return data.plots([self.store.get_run(run_id)])

    def run_page(self, request: Request) -> Response:
        run = self.run(request.path_params["run_id"])
        assert run.run_id is not None
        lat = latencies(self.store.engine, run.run_id)
        dur = data.duration_s(run)
        stamp = f"{run.completed_at}:{run.n_queries}:{sorted(run.aggregate)}"
        ppi, ppi_note = data.ppi_rows(run), "as stored with the run (dataset labels)"
        if all_labels(self.store.engine, run_id=run.run_id):  # PPI recomputed on read from queue labels
            from ragmeter.validity.human_labels import store_ppi

            full = self.store.get_run(run.run_id)
            estimates, notes, n_labels = store_ppi(self.store, full)
            ppi = data.ppi_rows(full.model_copy(update={"ppi": {**full.ppi, **estimates}}))
            ppi_note = f"recomputed now from {n_labels} queue label(s) in the store" + "".join(
                f"; {n}" for n in notes
            )
        return self.render(
            "run.html.j2",
            run=run,
            system=data.system_of(run),
            replay=data.replay_of(run),
            duration="–" if dur is None else f"{dur:.1f} s",
            queries_url=run_href(run.run_id) + "/queries",
            summary=data.summary_rows(run),
            nugget_set=nugget_set_note(run),
            usage=data.usage_rows(run),
            ppi=ppi,
            ppi_note=ppi_note,
            classes=self._classes(run.run_id, stamp),
            notes=run.notes,
            p50=data.fmt(data.percentile(lat, 0.5), 1) + " ms" if lat else "–",
            p95=data.fmt(data.percentile(lat, 0.95), 1) + " ms" if lat else "–",
            n_latency=len(lat),
            plots=self._plots(run.run_id, stamp),
            config=data.config_text(run),
        )

    def _filter(self, params: Any, names: list[str], default_sort: str = "position") -> QueryFilter:
        sort = params.get("sort", "") or default_sort
        if sort not in SORT_COLUMNS and sort not in names:
            raise BadRequest(f"sort: no column or metric {sort[:60]!r} in this run")
        metric = params.get("metric") or None
        if metric is not None and metric not in names:
            raise BadRequest(f"metric: no metric {metric[:60]!r} in this run")
        status = params.get("status") or None
        if status not in (None, "ok", "failed"):
            raise BadRequest("status: ok or failed")
        desc = params.get("desc", "")
        if desc not in ("", "0", "1"):
            raise BadRequest("desc: 0 or 1")
        return QueryFilter(
            sort=sort,
            # no sort in the URL: the default, worst first (descending for a lower-is-better metric)
            descending=desc == "1" if desc or params.get("sort") else data.worst_first(sort),
            status=status,
            text=params.get("q") or None,
            metric=metric,
            low=_number(params, "lo"),
            high=_number(params, "hi"),
            null_only=params.get("null") == "1",
            reason=params.get("reason") or None,
        )

    def _metric_names(self, run: EvalRunResult) -> tuple[list[str], list[str], str]:
        """(metrics with per-query values, the default columns, the default sort: the first headline metric
        with per-query values, else run order)."""
        from ragmeter.store.pages import run_metric_names

        per_query = display_order(run_metric_names(self.store.engine, run.run_id or ""))
        defaults = data.default_columns(per_query)
        heads = registry.headline(per_query)
        return per_query, defaults, heads[0] if heads else (defaults[0] if defaults else "position")

    def _columns(self, params: Any, per_query: list[str], defaults: list[str]) -> list[str]:
        chosen = params.getlist("col")
        if not chosen:
            return defaults
        if len(chosen) > len(per_query):
            raise BadRequest(f"col: at most {len(per_query)} columns")
        for name in chosen:
            if name not in per_query:
                raise BadRequest(f"col: no metric with per-query values {name[:60]!r} in this run")
        return list(dict.fromkeys(chosen))

    def queries_page(self, request: Request) -> Response:
        run = self.run(request.path_params["run_id"])
        assert run.run_id is not None
        per_query, defaults, default_sort = self._metric_names(run)
        params = request.query_params
        flt = self._filter(params, per_query, default_sort)
        shown = self._columns(params, per_query, defaults)
        page_no = _whole(params, "page", 1, 1, MAX_PAGE)
        size = _whole(params, "per", PAGE_SIZE, 1, 500)
        page = query_page(self.store.engine, run.run_id, flt, offset=(page_no - 1) * size, limit=size)
        n_pages = max(1, math.ceil(page.total / size))
        # the view as the URL states it (sort and direction spelled out), carried by every link
        state = [(k, v) for k, v in params.multi_items() if k not in ("page", "sort", "desc", "col")]
        state += [("sort", flt.sort), ("desc", "1" if flt.descending else "0")]
        state += [("col", c) for c in shown] if params.getlist("col") else []

        def href(**changes: Any) -> str:
            merged = [(k, v) for k, v in state if k not in changes]
            merged += [(k, str(v)) for k, v in changes.items()]
            return run_href(run.run_id or "") + "/queries?" + urlencode(merged)

        def sort_href(col: str) -> tuple[str, str]:
            active = flt.sort == col or (col == "query_id" and flt.sort == "position")
            if active:
                desc = "0" if flt.descending else "1"
            else:
                desc = "1" if col in per_query and data.worst_first(col) else "0"
            arrow = (" ▼" if flt.descending else " ▲") if active else ""
            return href(sort=col, desc=desc), arrow

        columns = []
        for col in ("query_id", "question", "class", *shown, "null reason"):
            if col in ("question", "class", "null reason"):
                columns.append({"name": col, "href": "", "arrow": "", "kind": col.replace(" ", "-")})
                continue
            link, arrow = sort_href(col)
            kind = "id" if col == "query_id" else "metric"
            columns.append({"name": col, "href": link, "arrow": arrow, "kind": kind})
        list_state = [(k, v) for k, v in state if k != "col"]
        rows = []
        for i, q in enumerate(page.rows):
            reason = next(
                (
                    f"{n}: {m.error}"
                    for n, m in q.metrics.items()
                    if m.value is None and m.error and (registry.family_of(n) == "judge")
                ),
                next((f"{n}: {m.error}" for n, m in q.metrics.items() if m.value is None and m.error), ""),
            )
            at = page.offset + i
            rows.append(
                {
                    "query_id": q.query_id,
                    "question": q.question,
                    "href": query_href(run.run_id, q.query_id, [*list_state, ("at", str(at))]),
                    "status": q.status,
                    "chip": data.class_chip(data.failure_class_of(q))
                    if q.status == "ok"
                    else {"text": "failed", "title": q.error or "failed", "cls": "c-failed"},
                    "badges": [data.badge(n, q.metrics.get(n)) for n in shown],
                    "reason": reason,
                }
            )
        run_level = [n for n in display_order(list(run.aggregate)) if n not in per_query]
        return self.render(
            "queries.html.j2",
            run=run,
            f=flt,
            metric_names=per_query,
            shown=shown,
            run_level=run_level,
            sort_default=default_sort,
            page=page,
            rows=rows,
            columns=columns,
            page_no=page_no,
            n_pages=n_pages,
            prev_href=href(page=page_no - 1) if page_no > 1 else "",
            next_href=href(page=page_no + 1) if page_no < n_pages else "",
        )

    def query_page(self, request: Request) -> Response:
        run = self.run(request.path_params["run_id"])
        assert run.run_id is not None
        params = request.query_params
        qid = params.get("id", "")
        q = query_result(self.store.engine, run.run_id, qid)
        if q is None:
            raise NotFound(f"run {run.run_id} has no query {qid!r}")
        prev_href = next_href = ""
        back = run_href(run.run_id) + "/queries"
        if params.get("at", "").strip():  # opened from the queries page: its order, for j and k
            per_query, _, default_sort = self._metric_names(run)
            flt = self._filter(params, per_query, default_sort)
            at = _whole(params, "at", 0, 0, MAX_PAGE)
            near = query_page(self.store.engine, run.run_id, flt, offset=max(0, at - 1), limit=3).rows
            here = at - max(0, at - 1)
            if here < len(near) and near[here].query_id == qid:
                state = [(k, v) for k, v in params.multi_items() if k not in ("id", "at")]
                if here > 0:
                    prev_href = query_href(run.run_id, near[here - 1].query_id, [*state, ("at", str(at - 1))])
                if here + 1 < len(near):
                    next_href = query_href(run.run_id, near[here + 1].query_id, [*state, ("at", str(at + 1))])
                size = _whole(params, "per", PAGE_SIZE, 1, 500)
                back += "?" + urlencode([*state, ("page", str(at // size + 1))])
        return self.render(
            "query.html.j2",
            run=run,
            q=data.query_detail(run, q),
            queries_url=back,
            prev_href=prev_href,
            next_href=next_href,
            **self.label_context(run, q, request),
        )

    def label_context(self, run: EvalRunResult, q: Any, request: Request) -> dict[str, Any]:
        """Extra context of the query page (the labelling mode adds its controls here)."""
        return {"annotate": False}

    def compare_page(self, request: Request) -> Response:
        ids = request.query_params.getlist("run")
        if len(ids) < 2:
            raise BadRequest("run: pick two or more runs to compare")
        runs = []
        for rid in ids:
            try:
                runs.append(self.store.get_run(rid))
            except InputError:
                raise NotFound(f"no run {rid!r} in this store") from None
        labels = data.labels_of(runs)
        changes, n_changed = data.changed_queries(runs)
        first_id = runs[0].run_id or ""
        for r in changes:
            r["href"] = "/compare?" + urlencode(
                [("run", x.run_id or "") for x in runs] + [("query", r["query_id"])]
            )
        qid = request.query_params.get("query") or (changes[0]["query_id"] if changes else None)
        side = None
        if qid is not None:
            found = [next((q for q in r.per_query if q.query_id == qid), None) for r in runs]
            if all(f is None for f in found):
                raise NotFound(f"no query {qid!r} in these runs")
            first = next(f for f in found if f is not None)
            side = {
                "query_id": qid,
                "question": first.question,
                "columns": [
                    {
                        "label": lab,
                        "answer": f.answer if f else None,
                        "metrics": [(n, data.fmt(f.metrics[n].value)) for n in display_order(list(f.metrics))]
                        if f
                        else [],
                    }
                    for lab, f in zip(labels, found, strict=True)
                ],
                "diff": data.retrieved_diff(found[0], found[1]),
            }
        return self.render(
            "compare.html.j2",
            runs=runs,
            labels=labels,
            plots=data.plots(runs, compare=True),
            changes=changes,
            n_changed=n_changed,
            change_metrics=[c["metric"] for c in changes[0]["cells"]] if changes else [],
            side=side,
            first_id=first_id,
        )

    # ------------------------------------------------------------------ errors

    def error_page(self, code: int, title: str, message: str) -> Response:
        return self.render("error.html.j2", status=code, code=code, title=title, message=message)


def create_app(
    viewer: Viewer, *, extra_routes: list[Any] | None = None, guard: Guard | None = None
) -> Starlette:
    """The app behind its guard (Host, access token, same origin: guard.py); a loopback guard by default."""
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.middleware import Middleware
    from starlette.middleware.base import BaseHTTPMiddleware
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    async def headers(request: Request, call_next: Any) -> Response:
        response: Response = await call_next(request)
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        # same-origin, not no-referrer: under no-referrer Chromium sends `Origin: null` with a form POST, and
        # the guard needs the real Origin to tell this server's own pages from any other.
        response.headers["Referrer-Policy"] = "same-origin"
        return response

    async def not_found(request: Request, exc: Exception) -> Response:
        return viewer.error_page(404, "not found", str(exc) if isinstance(exc, NotFound) else "no such page")

    async def bad_request(request: Request, exc: Exception) -> Response:
        return viewer.error_page(400, "bad request", str(exc))

    async def http_error(request: Request, exc: Exception) -> Response:
        code = exc.status_code if isinstance(exc, HTTPException) else 500
        if code == 404:
            return await not_found(request, exc)
        detail = exc.detail if isinstance(exc, HTTPException) else "error"
        return viewer.error_page(code, "error", str(detail))

    async def server_error(request: Request, exc: Exception) -> Response:
        first = (str(exc).splitlines() or [""])[0][:200]
        return viewer.error_page(500, "server error", f"{exc.__class__.__name__}: {first}")

    routes = [
        Route("/", viewer.runs_page),
        Route("/runs/{run_id}", viewer.run_page),
        Route("/runs/{run_id}/queries", viewer.queries_page),
        Route("/runs/{run_id}/query", viewer.query_page),
        Route("/compare", viewer.compare_page),
        *(extra_routes or []),
        Mount("/static", app=StaticFiles(directory=HERE / "static"), name="static"),
    ]
    return Starlette(
        routes=routes,
        middleware=[
            Middleware(GuardMiddleware, guard=guard or Guard.for_bind("127.0.0.1")),
            Middleware(BaseHTTPMiddleware, dispatch=headers),
        ],
        exception_handlers={
            NotFound: not_found,
            BadRequest: bad_request,
            HTTPException: http_error,
            Exception: server_error,
        },
    )
