"""The nuggets page of `ragmeter view --annotate`: one query's nuggets of the run's set, with the judge's
assignment of each to the answer and where each vital one was lost (the lost-at-stage metrics), a person's
assignment labels (support / partial_support / not_support), and edits of the set (add, reword, merge,
delete, re-grade). Each edit saves a new set version with the person as author (ragmeter.experiments.
nugget_versions); every POST carries the server's CSRF token and the version it replaces."""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlencode

from ragmeter.errors import InputError
from ragmeter.store.labels import ASSIGNMENT_VALUES, StaleLabel, assignment_name
from ragmeter.store.nugget_sets import StaleVersion
from ragmeter.validity.nugget_labels import assignment_labels, save_assignment
from ragmeter.validity.nugget_versions import current_set, history, run_nuggets, run_set_name, save_edit
from ragmeter.view.app import BadRequest, NotFound, run_href

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from ragmeter.store.api import Store


class AnnotatingViewer(Protocol):
    """What this page needs of ragmeter.view.annotate.AnnotatingViewer (which imports this module)."""

    store: Store
    csrf: str
    annotator: str | None

    def render(self, template: str, status: int = 200, **context: Any) -> Response: ...

    def error_page(self, code: int, title: str, message: str) -> Response: ...


LOST = {
    "nugget_lost_retrieval": "retrieval",
    "nugget_lost_context": "ranking/context",
    "nugget_lost_generation": "generation",
}


def nuggets_href(run_id: str, query_id: str) -> str:
    return run_href(run_id) + "/nuggets?" + urlencode({"id": query_id})


def _where_lost(q: Any) -> dict[str, str]:
    """{vital nugget id: the stage it was lost at} from the run's lost-at-stage metrics."""
    out: dict[str, str] = {}
    for metric, stage in LOST.items():
        m = q.metrics.get(metric)
        for nid in (m.details or {}).get("nugget_ids", []) if m is not None else []:
            out[str(nid)] = stage
    return out


def _judge_assignments(q: Any) -> dict[str, str]:
    for name in ("nugget_all", "nugget_all_strict", "nugget_vital", "nugget_weighted"):
        m = q.metrics.get(name)
        got = (m.details or {}).get("assignments") if m is not None else None
        if isinstance(got, dict):
            return {str(k): str(v) if v is not None else "failed" for k, v in got.items()}
    return {}


class NuggetPages:
    def __init__(self, viewer: AnnotatingViewer) -> None:
        self.viewer = viewer
        self.store = viewer.store

    def _check_csrf(self, form: dict[str, str]) -> Response | None:
        if not hmac.compare_digest(form.get("csrf", ""), self.viewer.csrf):
            return self.viewer.error_page(
                403, "forbidden", "missing or wrong CSRF token: reload the page and try again"
            )
        return None

    def _version(self, form: dict[str, str]) -> int:
        raw = form.get("version", "").strip()
        if not raw.isdigit() or len(raw) > 9:
            raise BadRequest(f"version: a whole number from 0 to 999999999, got {raw[:40]!r}")
        return int(raw)

    def _run_query(self, run_id: str, qid: str) -> tuple[Any, Any]:
        try:
            run = self.store.get_run(run_id)
        except InputError:
            raise NotFound(f"no run {run_id!r} in this store") from None
        q = next((r for r in run.per_query if r.query_id == qid), None)
        if q is None:
            raise NotFound(f"run {run.run_id} has no query {qid!r}")
        return run, q

    def page(self, request: Request) -> Response:
        run, q = self._run_query(request.path_params["run_id"], request.query_params.get("id", ""))
        try:
            name = run_set_name(self.store, run)
            scored = run_nuggets(self.store, run)
        except InputError as exc:
            raise BadRequest(str(exc)) from None
        edited, version = current_set(self.store, name)
        labels = assignment_labels(self.store, run, set_hash=scored.hash).get(q.query_id, {})
        judged, lost = _judge_assignments(q), _where_lost(q)
        scored_q = scored.get(q.query_id)
        rows = [
            {
                "id": n.id,
                "text": n.text,
                "importance": n.importance,
                "judge": judged.get(n.id, "–"),
                "lost": lost.get(n.id, "kept" if n.importance == "vital" and lost else ""),
                "label": assignment_name(labels[n.id].value) if n.id in labels else "",
                "label_version": labels[n.id].version if n.id in labels else 0,
                "by": labels[n.id].annotator if n.id in labels else "",
            }
            for n in (scored_q.nuggets if scored_q else [])
        ]
        current_q = edited.get(q.query_id)
        return self.viewer.render(
            "nuggets.html.j2",
            run=run,
            q=q,
            rows=rows,
            assignments=list(ASSIGNMENT_VALUES),
            scored_hash=scored.hash,
            set_name=name,
            set_version=version,
            set_hash=edited.hash,
            current=[n.model_dump() for n in (current_q.nuggets if current_q else [])],
            history=history(self.store, name),
            csrf=self.viewer.csrf,
            query_href=run_href(run.run_id or "") + "/query?" + urlencode({"id": q.query_id}),
            stale=scored.hash != edited.hash,
            # opened as part of a seeded sample (?queue=1), its labels feed PPI as queue labels do
            source="queue" if request.query_params.get("queue") == "1" else "browse",
        )

    async def _form(self, request: Request) -> dict[str, str]:
        form = await request.form()
        return {k: str(v) for k, v in form.items() if isinstance(v, str)}

    async def post_assign(self, request: Request) -> Response:
        from starlette.responses import RedirectResponse

        form = await self._form(request)
        if (denied := self._check_csrf(form)) is not None:
            return denied
        run, q = self._run_query(form.get("run_id", ""), form.get("query_id", ""))
        source = "queue" if form.get("source") == "queue" else "browse"
        try:
            save_assignment(
                self.store,
                run,
                q.query_id,
                form.get("nugget_id", ""),
                form.get("value", ""),
                annotator=self.viewer.annotator or "",
                source=source,
                expected_version=self._version(form),
            )
        except InputError as exc:
            raise BadRequest(str(exc)) from None
        except StaleLabel as stale:
            cur = stale.current
            return self.viewer.render(
                "conflict.html.j2",
                status=409,
                code=409,
                yours=form.get("value", ""),
                theirs=assignment_name(cur.value) if cur else "–",
                by=f"{cur.annotator} ({cur.source}, version {cur.version})" if cur else "",
                back=nuggets_href(run.run_id or "", q.query_id),
            )
        back = nuggets_href(run.run_id or "", q.query_id) + ("&queue=1" if source == "queue" else "")
        return RedirectResponse(back, status_code=303)

    async def post_edit(self, request: Request) -> Response:
        from starlette.responses import RedirectResponse

        form = await self._form(request)
        if (denied := self._check_csrf(form)) is not None:
            return denied
        run, q = self._run_query(form.get("run_id", ""), form.get("query_id", ""))
        try:
            name = run_set_name(self.store, run)
            save_edit(
                self.store,
                name,
                q.query_id,
                form.get("op", ""),
                author=self.viewer.annotator or "",
                expected_version=self._version(form),
                nugget_id=form.get("nugget_id", ""),
                text=form.get("text", ""),
                importance=form.get("importance", ""),
                merge=[m for m in form.get("merge", "").replace(",", " ").split() if m],
            )
        except InputError as exc:
            raise BadRequest(str(exc)) from None
        except StaleVersion as stale:
            cur = stale.current
            return self.viewer.render(
                "conflict.html.j2",
                status=409,
                code=409,
                yours=f"an edit over version {stale.posted}",
                theirs=f"version {cur.version}" if cur else "–",
                by=cur.author if cur else "",
                back=nuggets_href(run.run_id or "", q.query_id),
            )
        return RedirectResponse(nuggets_href(run.run_id or "", q.query_id), status_code=303)


def nugget_routes(viewer: AnnotatingViewer) -> list[Any]:
    from starlette.routing import Route

    pages = NuggetPages(viewer)
    return [
        Route("/runs/{run_id}/nuggets", pages.page),
        Route("/nuggets/assign", pages.post_assign, methods=["POST"]),
        Route("/nuggets/edit", pages.post_edit, methods=["POST"]),
    ]
