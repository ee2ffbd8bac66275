"""The queries page (paged and sorted in SQL, filtered, metric columns chosen in the URL) and one query's
page (stepping to the next and previous query of the queries page's order)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from ragmeter import metrics as registry
from ragmeter.report.selection import display_order
from ragmeter.store.pages import SORT_COLUMNS, QueryFilter, query_page, query_result
from ragmeter.view import data
from ragmeter.view.base import (
    MAX_PAGE,
    PAGE_SIZE,
    BadRequest,
    BaseViewer,
    NotFound,
    _number,
    _whole,
    query_href,
    run_href,
)
from ragmeter.view.cards import card_panels

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from ragmeter.models import EvalRunResult


class QueryPages(BaseViewer):
    """The queries page and the query page."""

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
            card_of={c["metric"]: c for c in card_panels(self.store, run)},  # the run page's cards
            **self.label_context(run, q, request),
        )

    def label_context(self, run: EvalRunResult, q: Any, request: Request) -> dict[str, Any]:
        """Extra context of the query page (the labelling mode adds its controls here)."""
        return {"annotate": False}
