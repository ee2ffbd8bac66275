"""The viewer's web app (Starlette): runs, one run, its queries (paged in SQL), one query, and a comparison.

Read-only: the store is opened without migration or sweep and nothing here writes to it. Every stored text
is escaped by jinja2's autoescaping; a Content-Security-Policy admits only the app's own script and styles,
so a payload that escaping missed still would not run."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from ragmeter import metrics as registry
from ragmeter.errors import InputError
from ragmeter.report.nugget_note import nugget_set_note
from ragmeter.report.selection import display_order
from ragmeter.store.labels import all_labels
from ragmeter.store.pages import latencies
from ragmeter.view import data
from ragmeter.view.base import (
    HERE,
    MAX_PAGE,
    PAGE_SIZE,
    BadRequest,
    BaseViewer,
    NotFound,
    environment,
    query_href,
    run_href,
)
from ragmeter.view.cards import card_panels
from ragmeter.view.guard import Guard, GuardMiddleware
from ragmeter.view.query_pages import QueryPages

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from ragmeter.store.api import Store

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'; connect-src 'self'"
)
# the pages' shared part (base.py) and the queries and query pages (query_pages.py): importers read them here
__all__ = [
    "CSP",
    "HERE",
    "MAX_PAGE",
    "PAGE_SIZE",
    "BadRequest",
    "BaseViewer",
    "NotFound",
    "QueryPages",
    "Viewer",
    "create_app",
    "environment",
    "query_href",
    "run_href",
]


class Viewer(QueryPages):
    """The pages, over one open store."""

    def __init__(self, store: Store, *, annotator: str | None = None) -> None:
        super().__init__(store, annotator=annotator)
        self._plots = lru_cache(maxsize=32)(self._plots_uncached)

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
        cards = card_panels(self.store, run)  # each judged metric's judge card, as runs show finds it
        return self.render(
            "run.html.j2",
            run=run,
            cards=cards,
            card_of={p["metric"]: p for p in cards},
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
