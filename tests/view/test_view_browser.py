"""`ragmeter view` in a real browser (Playwright driving Debian's Chromium): runs -> run -> query -> compare
by clicks, a 1280-px page with no sideways scroll, stored payloads that never run, and a bundle opened from
file:// that sorts and filters."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from browser import ROOT, browser, no_horizontal_overflow, pwned, serve
from view_store import make_store

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, str]]:
    return make_store(tmp_path_factory.mktemp("viewbrowser") / "store.db")


def test_click_through_runs_run_query_compare(stored: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    url, ids = stored
    with serve(url) as base, browser() as b:
        page = b.new_page(viewport={"width": 1280, "height": 900})
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(base + "/")
        page.click(f"a.run-link:text-is('{ids['base']}')")
        assert page.locator("h1").inner_text() == f"Run {ids['base']}"
        assert page.locator("figure[data-plot]").count() >= 1
        page.click("#queries-link")
        assert "20 queries match" in page.locator("#page-info").inner_text()
        # sort by mrr, descending, by clicking its header twice
        page.click("a.sort[data-col='mrr']")
        page.click("a.sort[data-col='mrr']")
        assert "sort=mrr" in page.url and "desc=1" in page.url
        first = page.locator("a.query-link").first.inner_text()
        page.locator("a.query-link").first.click()
        assert page.locator("h1").inner_text() == f"Query {first}"
        assert page.locator("table.docs tbody tr").count() == 3
        assert "factuality" in page.locator(".judges").inner_text()
        # back to the runs, tick two, compare
        page.click("a.brand")
        page.check(f"input[name=run][value='{ids['base']}']")
        page.check(f"input[name=run][value='{ids['better']}']")
        page.click("#compare-button")
        assert page.locator("h1").inner_text() == "Compare 2 runs"
        assert page.locator("figure[data-plot='forest']").count() == 1
        assert page.locator("table.changed tbody a.changed-link").count() >= 1
        target = page.locator("a.changed-link").nth(1).inner_text()
        page.locator("a.changed-link").nth(1).click()
        assert target in page.locator("#side-by-side").inner_text()
        assert page.locator(".side-col").count() == 2
        assert page.locator("table.diff tbody tr").count() == 3
        assert not dialogs and not pwned(page)
        width = no_horizontal_overflow(page)
        assert width[0] <= width[1] <= 1280, width


def test_1280px_no_overflow_and_payloads_never_run(
    stored: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    url, ids = stored
    hostile = ids["hostile"]
    with serve(url) as base, browser() as b:
        page = b.new_page(viewport={"width": 1280, "height": 1000})
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        for path in (
            "/",
            f"/runs/{hostile}",
            f"/runs/{hostile}/queries",
            f"/runs/{hostile}/query?id=q00000",
            f"/runs/{hostile}/query?id=q00003",
            f"/compare?run={hostile}&run={ids['base']}&query=q00000",
        ):
            page.goto(base + path)
            assert not pwned(page), path
            assert not dialogs, path
            scroll, client = no_horizontal_overflow(page)
            assert client <= 1280 and scroll <= client, (path, scroll, client)
        page.goto(base + f"/runs/{hostile}/query?id=q00000")
        assert '<script>document.title="PWNED"' in page.locator("#question").inner_text()  # shown as text
        shot = tmp_path / "query-1280.png"
        page.screenshot(path=str(shot), full_page=True)
        data = shot.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
        if os.environ.get("RAGMETER_SCREENSHOT_DIR"):
            shutil.copy(shot, Path(os.environ["RAGMETER_SCREENSHOT_DIR"]) / "view-query-1280.png")


def test_unknown_ids_give_a_404_page(stored: tuple[str, dict[str, str]]) -> None:
    url, _ = stored
    with serve(url) as base, browser() as b:
        page = b.new_page()
        response = page.goto(base + "/runs/does-not-exist")
        assert response is not None and response.status == 404
        assert "no run 'does-not-exist'" in page.locator("#error-message").inner_text()


def test_bundle_from_file_sorts_and_filters(stored: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    url, ids = stored
    out = tmp_path / "bundle"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    cmd = [
        sys.executable,
        "-m",
        "ragmeter",
        "view",
        "--db",
        url,
        "--bundle",
        str(out),
        "--run",
        ids["base"],
        "--run",
        ids["hostile"],
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    with browser() as b:
        page = b.new_page(viewport={"width": 1280, "height": 900})
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto((out / "index.html").as_uri())
        page.click(f"a.run-link:text-is('{ids['base']}')")
        assert page.url.startswith("file://") and page.url.endswith("run-1.html")
        page.wait_for_selector("html[data-bundle-ready='1']")
        rows = page.locator("#bundle-queries tbody tr")
        assert rows.count() == 20

        def column(name: str) -> list[str]:
            idx = page.evaluate(
                "(n) => Array.from(document.querySelectorAll('#bundle-queries thead button')).findIndex(b => b.dataset.col === n)",
                name,
            )
            return page.eval_on_selector_all(
                "#bundle-queries tbody tr", f"rs => rs.map(r => r.cells[{idx}].textContent)"
            )

        page.click("#bundle-queries button[data-col='mrr']")
        asc = [float(v) for v in column("mrr")]
        assert asc == sorted(asc)
        page.click("#bundle-queries button[data-col='mrr']")
        desc = [float(v) for v in column("mrr")]
        assert desc == sorted(asc, reverse=True)
        page.select_option("#bundle-metric", "mrr")
        page.fill("#bundle-lo", "0.5")
        kept = [float(v) for v in column("mrr")]
        assert kept and all(v >= 0.5 for v in kept) and len(kept) == sum(1 for v in asc if v >= 0.5)
        page.fill("#bundle-lo", "")
        page.fill("#bundle-filter", "q0001")
        assert rows.count() == 10
        assert "10 of 20 queries" in page.locator("#bundle-count").inner_text()
        # the hostile run's bundle page: payloads shown in the detail panel, never run
        page.goto((out / "run-2.html").as_uri())
        page.wait_for_selector("html[data-bundle-ready='1']")
        page.locator("a.query-link").first.click()
        assert '<script>document.title="PWNED"' in page.locator("#bundle-detail").inner_text()
        assert not pwned(page) and not dialogs
        scroll, client = page.evaluate(
            "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
        )
        assert scroll <= client <= 1280
