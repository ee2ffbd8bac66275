"""`ragmeter view --annotate --annotator NAME`: label controls on the query page, a queue of what to label
next, and the one state-changing request (POST /labels) with its CSRF token and version check."""

from __future__ import annotations

import hmac
import secrets
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import ragmeter.metrics as rm
from ragmeter.errors import InputError
from ragmeter.report.selection import display_order
from ragmeter.store.labels import LabelItem, StaleLabel, current_labels, save_label
from ragmeter.store.pages import query_result
from ragmeter.validity.human_labels import check_answer_value, check_grade, queue_order
from ragmeter.view import data
from ragmeter.view.app import BadRequest, NotFound, Viewer, query_href, run_href
from ragmeter.view.nuggets import nugget_routes, nuggets_href

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from ragmeter.models import EvalRunResult, QueryEvalResult
    from ragmeter.store.api import Store


def judge_metrics(q: QueryEvalResult) -> list[str]:
    return [n for n in display_order(list(q.metrics)) if rm.family_of(n) == "judge"]


class AnnotatingViewer(Viewer):
    """The viewer with labelling: every POST carries this server's CSRF token and the version it replaces."""

    def __init__(
        self, store: Store, *, annotator: str, grades: tuple[int, int] | None = None, seed: int = 0
    ) -> None:
        super().__init__(store, annotator=annotator)
        self.csrf = secrets.token_urlsafe(32)
        self.grades = grades
        self.seed = seed

    def grade_scale(self, run: EvalRunResult) -> tuple[int, int]:
        """--grades, else min..max of the grades in the run's dataset qrels, else 0..1."""
        if self.grades is not None:
            return self.grades
        known = data.relevance_labels(run)
        values = [g for grades in (known or {}).values() for g in grades.values()]
        return (min(0, *values), max(values)) if values and max(values) > 0 else (0, 1)

    def label_context(self, run: EvalRunResult, q: Any, request: Request) -> dict[str, Any]:
        """The label forms of the query page; opened from the queue (?queue=1), its labels count as queue
        labels (the random sample that PPI uses)."""
        assert run.run_id is not None
        source = "queue" if request.query_params.get("queue") == "1" else "browse"
        grades = self.grade_scale(run)
        rel = {
            d.doc_id: LabelItem.relevance(run.dataset_hash or "", q.query_id, d.doc_id) for d in q.retrieved
        }
        ans = {m: LabelItem.answer(run.run_id, q.query_id, m, q.answer) for m in judge_metrics(q)}
        current = current_labels(self.store.engine, [*rel.values(), *ans.values()])

        def state(item: LabelItem) -> dict[str, Any]:
            lab = current.get(item.key)
            return {
                "version": lab.version if lab else 0,
                "value": (str(int(lab.value)) if item.kind == "relevance" else data.fmt(lab.value))
                if lab
                else "",
                "by": f"{lab.annotator} ({lab.source})" if lab else "",
            }

        nuggets = run.config.nuggets or run.versions.get("nuggets")
        return {
            "annotate": True,
            "nuggets_href": nuggets_href(run.run_id, q.query_id) if nuggets else "",
            "csrf": self.csrf,
            "source": source,
            "grades": list(range(grades[0], grades[1] + 1)),
            "can_judge_docs": bool(run.dataset_hash),
            "doc_labels": [
                {"doc_id": d.doc_id, "rank": d.rank, **state(rel[d.doc_id])}
                for d in sorted(q.retrieved, key=lambda d: d.rank)
            ],
            "answer_labels": [
                {
                    "metric": m,
                    "judge": data.fmt(q.metrics[m].value),
                    "has_judge": q.metrics[m].value is not None,
                    "scale": rm.get(m).scale,
                    **state(ans[m]),
                }
                for m in ans
            ],
        }

    def queue_page(self, request: Request) -> Response:
        """Redirect to the next query of the seeded queue whose answer has no queue label for the metric."""
        from starlette.responses import RedirectResponse

        from ragmeter.validity.human_labels import answer_labels

        run = self.store.get_run(self.run(request.path_params["run_id"]).run_id or "")
        names = sorted({m for q in run.per_query for m in judge_metrics(q)}, key=rm.sort_key)
        metric = request.query_params.get("metric") or (names[0] if names else "")
        if metric not in names:
            raise BadRequest(f"metric: run {run.run_id} has no judge metric {metric[:60]!r} to label")
        done = answer_labels(self.store, run, run.per_query, queue_only=True).get(metric, {})
        answered = [q.query_id for q in run.per_query if q.status == "ok" and metric in q.metrics]
        for qid in queue_order(answered, self.seed):
            if qid not in done:
                target = query_href(run.run_id or "", qid) + "&" + urlencode({"queue": "1", "metric": metric})
                return RedirectResponse(target, status_code=303)
        return self.error_page(
            200, "queue done", f"every answer of run {run.run_id} has a queue label for {metric}"
        )

    async def post_label(self, request: Request) -> Response:
        from starlette.responses import RedirectResponse

        form = await request.form()
        token = str(form.get("csrf") or request.headers.get("x-csrf-token") or "")
        if not hmac.compare_digest(token, self.csrf):
            return self.error_page(
                403, "forbidden", "missing or wrong CSRF token: reload the page and try again"
            )
        field = {k: str(v) for k, v in form.items() if isinstance(v, str)}
        run = self.run(field.get("run_id", ""))
        q = query_result(self.store.engine, run.run_id or "", field.get("query_id", ""))
        if q is None:
            raise NotFound(f"run {run.run_id} has no query {field.get('query_id', '')!r}")
        source = "queue" if field.get("source") == "queue" else "browse"
        raw_version = field.get("version", "").strip()
        if not raw_version.isdigit() or len(raw_version) > 9:  # SQLite integers overflow past 19 digits
            raise BadRequest(f"version: a whole number from 0 to 999999999, got {raw_version[:40]!r}")
        version = int(raw_version)
        try:
            item, value = self._item(run, q, field)
        except InputError as exc:
            raise BadRequest(str(exc)) from None
        try:
            save_label(
                self.store.engine,
                item,
                value,
                annotator=self.annotator or "",
                source=source,
                expected_version=version,
            )
        except StaleLabel as stale:
            cur = stale.current

            def show(v: float) -> str:
                return str(int(v)) if item.kind == "relevance" else data.fmt(v)

            return self.render(
                "conflict.html.j2",
                status=409,
                code=409,
                yours=show(value),
                theirs=show(cur.value) if cur else "–",
                by=f"{cur.annotator} ({cur.source}, version {cur.version})" if cur else "",
                back=query_href(run.run_id or "", q.query_id),
            )
        if source == "queue":
            target = run_href(run.run_id or "") + "/queue?" + urlencode({"metric": item.metric or ""})
        else:
            target = query_href(run.run_id or "", q.query_id)
        return RedirectResponse(target, status_code=303)

    def _item(self, run: EvalRunResult, q: QueryEvalResult, field: dict[str, str]) -> tuple[LabelItem, float]:
        kind = field.get("kind")
        if kind == "relevance":
            doc = field.get("doc_id", "")
            if not run.dataset_hash or doc not in {d.doc_id for d in q.retrieved}:
                raise InputError(f"no retrieved doc {doc[:60]!r} to judge for this query", source="doc_id")
            grade = check_grade(field.get("value"), self.grade_scale(run))
            return LabelItem.relevance(run.dataset_hash, q.query_id, doc), grade
        if kind == "answer":
            metric = field.get("metric", "")
            if metric not in judge_metrics(q):
                raise InputError(f"no judge metric {metric[:60]!r} on this answer", source="metric")
            value = check_answer_value(metric, field.get("value"))
            return LabelItem.answer(run.run_id or "", q.query_id, metric, q.answer), value
        raise InputError("kind: relevance or answer", source="kind")


def annotate_routes(viewer: AnnotatingViewer) -> list[Any]:
    from starlette.routing import Route

    return [
        Route("/labels", viewer.post_label, methods=["POST"]),
        Route("/runs/{run_id}/queue", viewer.queue_page),
        *nugget_routes(viewer),
    ]
