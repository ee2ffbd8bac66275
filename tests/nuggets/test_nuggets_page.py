"""The viewer's nuggets page (annotate mode) over a real store: its POSTs need the CSRF token, a bad edit or
label is a 400 naming it with nothing stored, a save over a replaced version is a 409, and a merge, a
re-grade and an add each make one new version."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from nugget_fakes import Assigner, FixedSystem, dataset, write_set

from ragmeter.models import EvalConfig

pytest.importorskip("aiohttp")
pytest.importorskip("starlette")
BASE = "http://127.0.0.1"


async def test_posts_csrf_bad_input_conflicts_and_edits(tmp_path: Path, scripted: Any) -> None:
    from starlette.testclient import TestClient

    from ragmeter.run import arun_evaluation
    from ragmeter.store import open_store
    from ragmeter.store.labels import all_labels
    from ragmeter.validity.nugget_versions import history, set_name
    from ragmeter.view.annotate import AnnotatingViewer, annotate_routes
    from ragmeter.view.app import create_app

    server = await scripted(Assigner())
    path = write_set(tmp_path / "set.jsonl")
    db = f"sqlite:///{tmp_path / 'p.db'}"
    config = EvalConfig(
        dataset="nuggets-case",
        retrieval_top_k=[1, 3],
        use_llm_judge=True,
        judge_model=f"openai-compatible:judge@{server.url}",
        metrics=["nugget_all", "nugget_lost_context"],
        extra={"semantic": False, "context_k": 1, "nuggets": {"path": str(path)}},
    )
    run = await arun_evaluation(dataset(), FixedSystem(), config, store=db, progress=False)
    rid = run.run_id or ""
    with open_store(db) as store:
        viewer = AnnotatingViewer(store, annotator="ann")
        client = TestClient(
            create_app(viewer, extra_routes=annotate_routes(viewer)), base_url=BASE, headers={"Origin": BASE}
        )
        page = client.get(f"/runs/{rid}/nuggets?id=qa")
        assert page.status_code == 200 and 'data-nugget="n2"' in page.text
        edit = {"run_id": rid, "query_id": "qb", "version": "0", "op": "regrade", "nugget_id": "m2"}
        assert client.post("/nuggets/edit", data={**edit, "importance": "okay"}).status_code == 403
        bad = client.post("/nuggets/edit", data={**edit, "csrf": viewer.csrf, "importance": "essential"})
        assert bad.status_code == 400 and "importance" in bad.text
        assert history(store, set_name(str(path))) == []
        ok = {**edit, "csrf": viewer.csrf, "importance": "okay"}
        assert client.post("/nuggets/edit", data=ok, follow_redirects=False).status_code == 303
        again = client.post("/nuggets/edit", data=ok, follow_redirects=False)  # over version 0 again
        assert again.status_code == 409
        merge = {**edit, "csrf": viewer.csrf, "version": "2", "op": "merge", "nugget_id": "m1", "merge": "m2"}
        assert client.post("/nuggets/edit", data=merge, follow_redirects=False).status_code == 303
        add = {**merge, "version": "3", "op": "add", "text": "Rome has seven hills", "importance": "vital"}
        assert client.post("/nuggets/edit", data=add, follow_redirects=False).status_code == 303
        log = history(store, set_name(str(path)))
        assert [(v["version"], v["author"], v["changes"][0]["op"]) for v in log] == [
            (1, "file", "import"),
            (2, "ann", "regrade"),
            (3, "ann", "merge"),
            (4, "ann", "add"),
        ]
        label = {"run_id": rid, "query_id": "qa", "nugget_id": "n1", "version": "0", "value": "support"}
        assert client.post("/nuggets/assign", data=label).status_code == 403
        wrong = client.post("/nuggets/assign", data={**label, "csrf": viewer.csrf, "value": "yes"})
        assert wrong.status_code == 400 and all_labels(store.engine) == []
        r = client.post("/nuggets/assign", data={**label, "csrf": viewer.csrf}, follow_redirects=False)
        assert r.status_code == 303 and len(all_labels(store.engine)) == 1
        r = client.post(
            "/nuggets/assign",
            data={**label, "csrf": viewer.csrf, "value": "not_support"},
            follow_redirects=False,
        )
        assert r.status_code == 409 and 'id="theirs">support' in r.text
