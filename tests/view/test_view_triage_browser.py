"""The triage acceptance in a real browser (Playwright driving Debian's Chromium) on a judged demo run made
with a scripted judge: at 1280x900 the queries page shows the question text and at least 15 one-line rows
above the fold with no sideways scroll, the worst query by the headline metric first; on a query page the
first judge reason is above the first retrieved document and RAGChecker verdicts are a table of booleans;
j moves to the next query in the list's order; no page shows a Python repr. With RAGMETER_SCREENSHOT_DIR set,
the four pages' 1280x900 screenshots are saved there."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from browser import browser, no_horizontal_overflow, serve
from judged_demo import make_judged_demo

import ragmeter.metrics as rm
from ragmeter.store import open_store

pytestmark = pytest.mark.browser
pytest.importorskip("aiohttp")
pytest.importorskip("bm25s")

REPR = re.compile(r"\{'|': ")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    db = tmp_path_factory.mktemp("triagebrowser") / "demo.db"
    first = make_judged_demo(db)
    replay = {"replay": {"parent": first, "intervention": "oracle_contexts"}}
    second = make_judged_demo(db, n=24, salt="b", extra=replay, name="demo replay (scripted judge)")
    return str(db), first, second


def _shot(page: object, name: str, tmp_path: Path) -> None:
    out = os.environ.get("RAGMETER_SCREENSHOT_DIR")
    path = Path(out) / name if out else tmp_path / name
    page.screenshot(path=str(path))  # type: ignore[attr-defined]
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_triage_pages_at_1280x900(demo: tuple[str, str, str], tmp_path: Path) -> None:
    db, run_id, replay_id = demo
    with open_store(db, sweep=False) as store:
        run = store.get_run(run_id)
    head = rm.headline(sorted({n for q in run.per_query for n in q.metrics}))[0]
    values = {q.query_id: q.metrics[head].value for q in run.per_query}
    worst = min(v for v in values.values() if v is not None)
    questions = {q.query_id: q.question for q in run.per_query}
    with serve(db) as base, browser() as b:
        page = b.new_page(viewport={"width": 1280, "height": 900})
        # runs list: one line per run
        page.goto(base + "/")
        heights = page.eval_on_selector_all(
            "table.runs tbody tr", "rs => rs.map(r => r.getBoundingClientRect().height)"
        )
        assert len(heights) == 2 and max(heights) < 40, heights
        assert "oracle_contexts" in page.locator(f"tr[data-run='{replay_id}']").inner_text()
        scroll, client = no_horizontal_overflow(page)
        assert scroll <= client <= 1280
        assert not REPR.search(page.locator("body").inner_text())
        _shot(page, "view-runs-1280x900.png", tmp_path)
        # queries page
        page.goto(base + f"/runs/{run_id}/queries")
        scroll, client = no_horizontal_overflow(page)
        assert scroll <= client <= 1280, (scroll, client)
        rows = page.eval_on_selector_all(
            "table.queries tbody tr",
            "rs => rs.map(r => [r.dataset.query, r.getBoundingClientRect().top, r.getBoundingClientRect().bottom,"
            " r.querySelector('td.question').innerText])",
        )
        above = [r for r in rows if r[2] <= 900]
        assert len(above) >= 15, len(above)
        assert all(r[2] - r[1] < 34 for r in rows)  # one line per row
        for qid, _, _, text in above:
            assert text and questions[qid].startswith(text.rstrip("…")[:20])
        assert values[rows[0][0]] == worst  # the worst query by the headline metric is the first row
        assert not REPR.search(page.locator("body").inner_text())
        _shot(page, "view-queries-1280x900.png", tmp_path)
        # the query page, opened from the first row
        first_id = rows[0][0]
        second_id = rows[1][0]
        rc = next(q.query_id for q in run.per_query if q.metrics["rc_faithfulness"].value is not None)
        page.click(f"tr[data-query='{first_id}'] a.query-link")
        assert page.locator("h1").inner_text().startswith(f"Query {first_id}")
        reason_y = page.locator(".judge .reason").first.bounding_box()
        doc_y = page.locator("table.docs tbody tr").first.bounding_box()
        assert reason_y is not None and doc_y is not None and reason_y["y"] < doc_y["y"]
        assert not REPR.search(page.locator("body").inner_text())
        _shot(page, "view-query-1280x900.png", tmp_path)
        page.keyboard.press("j")  # the next query in the queries page's order
        page.wait_for_url(re.compile(f"id={second_id}&"))
        assert page.locator("h1").inner_text().startswith(f"Query {second_id}")
        page.keyboard.press("k")
        page.wait_for_url(re.compile(f"id={first_id}&"))
        # RAGChecker verdicts: a table of booleans
        page.goto(base + f"/runs/{run_id}/query?id={rc}")
        cells = page.eval_on_selector_all("table.verdicts td.bool", "cs => cs.map(c => c.innerText.trim())")
        assert cells and set(cells) <= {"true", "false"}
        assert page.locator("table.verdicts").first.is_visible()
        scroll, client = no_horizontal_overflow(page)
        assert scroll <= client <= 1280
        # compare: the changed queries first, with question text
        page.goto(base + f"/compare?run={run_id}&run={replay_id}")
        table_y = page.locator("table.changed").bounding_box()
        assert table_y is not None and table_y["y"] < 900
        assert page.locator("table.changed tbody tr").count() >= 10
        first_fig = page.locator("figure").first.bounding_box()
        assert first_fig is not None and first_fig["y"] > table_y["y"]
        assert page.locator("table.changed td.question").first.inner_text()
        scroll, client = no_horizontal_overflow(page)
        assert scroll <= client <= 1280
        assert not REPR.search(page.locator("body").inner_text())
        _shot(page, "view-compare-1280x900.png", tmp_path)
