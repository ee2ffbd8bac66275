"""Labelling in a real browser (Playwright driving Debian's Chromium): five labels from the queue survive a
server restart and feed `judges validate --run`; two browsers saving the same item: one 409, nothing lost;
a POST without its CSRF token is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from browser import browser, serve
from test_view_cli import ragmeter
from view_store import add_run

from ragmeter.store import open_store
from ragmeter.store.labels import all_labels

pytestmark = pytest.mark.browser
ANNOTATE = ("--annotate", "--annotator", "ann")


def test_five_labels_survive_a_restart_and_feed_validation(tmp_path: Path) -> None:
    db = str(tmp_path / "lab.db")
    with open_store(db) as store:
        run_id = add_run(store, "a", 12)
    labelled: list[str] = []
    with serve(db, *ANNOTATE) as base, browser() as b:
        page = b.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{base}/runs/{run_id}/queue?metric=factuality")
        for i in range(5):
            assert "queue=1" in page.url
            labelled.append(page.url.split("id=", 1)[1].split("&", 1)[0])
            form = page.locator("form.answer-label[data-metric='factuality']")
            form.locator("input[name=value]").fill(["1", "0", "0.5", "1", "0.25"][i])
            form.locator("button[name=save]").click()
    assert len(set(labelled)) == 5
    with serve(db, *ANNOTATE) as base, browser() as b:  # a new server process on the same store
        page = b.new_page()
        page.goto(f"{base}/runs/{run_id}/query?id={labelled[2]}")
        assert page.locator("form.answer-label .current").inner_text() == "0.5000"
        page.goto(f"{base}/runs/{run_id}")
        assert "recomputed now from 5 queue label(s)" in page.locator("#ppi-note").inner_text()
    proc = ragmeter(
        "judges", "validate", "--db", db, "--run", run_id, "--metric", "factuality", "--format", "json"
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["n_items"] == 5 and sorted(i["id"] for i in report["items"]) == sorted(labelled)
    assert sorted(float(i["human"]) for i in report["items"]) == [0.0, 0.25, 0.5, 1.0, 1.0]


def test_two_browsers_one_409_nothing_lost_and_csrf(tmp_path: Path) -> None:
    db = str(tmp_path / "two.db")
    with open_store(db) as store:
        run_id = add_run(store, "a", 4)
    with serve(db, *ANNOTATE) as base, browser() as b:
        one, two = b.new_context().new_page(), b.new_context().new_page()
        url = f"{base}/runs/{run_id}/query?id=q00001"
        one.goto(url)
        two.goto(url)  # both pages show version 0 of every item
        first_doc = one.locator("form.doc-label").first.get_attribute("data-doc")
        one.locator("form.doc-label").first.locator("button[value='1']").click()
        assert one.url.endswith("id=q00001")  # saved, back on the query page
        with two.expect_response(lambda r: r.url.endswith("/labels")) as posted:
            two.locator("form.doc-label").first.locator("button[value='0']").click()
        assert posted.value.status == 409
        assert two.locator("#theirs").inner_text() == "1" and two.locator("#yours").inner_text() == "0"
        # a POST without the CSRF token is refused
        r = one.request.post(
            f"{base}/labels",
            form={
                "kind": "relevance",
                "run_id": run_id,
                "query_id": "q00001",
                "doc_id": str(first_doc),
                "version": "1",
                "value": "0",
            },
        )
        assert r.status == 403
    with open_store(db) as store:
        history = all_labels(store.engine, run_id=None, history=True)
    assert [(lab.item.doc_id, lab.value, lab.version) for lab in history] == [(first_doc, 1.0, 1)]
