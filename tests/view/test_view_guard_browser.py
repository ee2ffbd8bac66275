"""The viewer against hostile names and pages in a real browser (Playwright driving Debian's Chromium): a name
resolved to 127.0.0.1 (DNS rebinding) gets 403; a label given through the page's own form is stored (the
browser's Origin passes the guard); run names `$x^$` and an RTL override answer 200 everywhere and the RTL text
stays inside its element; a bundle opened from file:// carries its CSP and no absolute path."""

from __future__ import annotations

import os
import subprocess
import sys
from itertools import pairwise
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from browser import ROOT, browser, pwned, serve, serve_printed
from view_store import add_run

from ragmeter.store import open_store
from ragmeter.store.labels import all_labels

pytestmark = pytest.mark.browser
DOLLAR = "$x^$"
RTL = "\u202eevil name"
ANNOTATE = ("--annotate", "--annotator", "ann")

# The x positions of each character of `word` in the first text node under `sel` that holds it.
CHAR_XS = """([sel, word]) => {
  const root = document.querySelector(sel);
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  let node = null;
  while ((node = walker.nextNode())) { if (node.textContent.includes(word)) break; }
  if (!node) return null;
  const start = node.textContent.indexOf(word), xs = [];
  for (let k = start; k < start + word.length; k++) {
    const r = document.createRange(); r.setStart(node, k); r.setEnd(node, k + 1);
    xs.push(r.getBoundingClientRect().left);
  }
  return xs;
}"""


def left_to_right(page: Any, sel: str, word: str) -> bool:
    xs = page.evaluate(CHAR_XS, [sel, word])
    assert xs is not None, (sel, word)
    return all(a < b for a, b in pairwise(xs))


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, str]]:
    path = str(tmp_path_factory.mktemp("hostilenames") / "store.db")
    with open_store(path) as store:
        ids = {
            "dollar": add_run(store, DOLLAR, 6, seed=1),
            "rtl": add_run(store, RTL, 6, seed=2, boost=0.2),
        }
    return path, ids


def test_a_rebound_name_gets_403_and_the_page_form_stores_a_label(tmp_path: Path) -> None:
    db = str(tmp_path / "lab.db")
    with open_store(db) as store:
        run_id = add_run(store, "a", 4)
    with serve(db, *ANNOTATE) as base:
        port = urlsplit(base).port
        # evil.example resolves to 127.0.0.1 in this browser, as a rebinding attacker's DNS would make it
        with browser("--host-resolver-rules=MAP evil.example 127.0.0.1") as b:
            page = b.new_page()
            for path in ("/", f"/runs/{run_id}", f"/runs/{run_id}/query?id=q00001"):
                response = page.goto(f"http://evil.example:{port}{path}")
                assert response is not None and response.status == 403
                assert run_id not in page.content() and 'name="csrf"' not in page.content()
            # the same server by a loopback name: the label form works
            page.goto(f"http://localhost:{port}/runs/{run_id}/query?id=q00001")
            form = page.locator("form.doc-label").first
            doc = form.get_attribute("data-doc")
            with page.expect_request(lambda r: r.url.endswith("/labels")) as sent:
                form.locator("button[value='1']").click()
            assert (
                sent.value.headers.get("origin") == f"http://localhost:{port}"
            )  # Referrer-Policy same-origin
            assert page.url.endswith("id=q00001")
            assert form.locator(".current").inner_text() == "1"
    with open_store(db, sweep=False) as store:
        labels = all_labels(store.engine, run_id=None, history=True)
    assert [(lab.item.doc_id, lab.value, lab.annotator) for lab in labels] == [(doc, 1.0, "ann")]


def test_the_printed_token_url_logs_the_browser_in(stored: tuple[str, dict[str, str]]) -> None:
    db, ids = stored
    with serve_printed(db, "--host", "0.0.0.0") as (base, line), browser() as b:
        url = line.split()[2]
        assert "?token=" in url
        stranger = b.new_context().new_page()
        response = stranger.goto(f"{base}/runs/{ids['rtl']}")
        assert response is not None and response.status == 401
        page = b.new_context().new_page()
        response = page.goto(url)
        assert response is not None and response.status == 200
        assert page.url == base + "/"  # the token left the address bar
        cookie = next(c for c in page.context.cookies() if c["name"] == "ragmeter_token")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        page.click(f"a.run-link:text-is('{ids['rtl']}')")
        assert page.url.endswith(f"/runs/{ids['rtl']}") and page.locator("main > p.wrap").count() > 0


def test_tex_and_rtl_names_answer_200_and_rtl_stays_inside(stored: tuple[str, dict[str, str]]) -> None:
    db, ids = stored
    a, r = ids["dollar"], ids["rtl"]
    with serve(db) as base, browser() as b:
        page = b.new_page(viewport={"width": 1280, "height": 900})
        for path in (
            "/",
            f"/runs/{a}",
            f"/runs/{r}",
            f"/runs/{a}/queries",
            f"/runs/{r}/queries",
            f"/runs/{r}/query?id=q00001",
            f"/compare?run={a}&run={r}",
            f"/compare?run={r}&run={a}",
        ):
            response = page.goto(base + path)
            assert response is not None and response.status == 200, path
            assert not pwned(page)
        page.goto(f"{base}/runs/{r}")
        line = "main > p.wrap"  # the run's summary line: name · status · dataset · system · ...
        assert page.locator(line).first.inner_text().startswith(RTL)
        # the rest of the summary line still reads left to right, after the name's box
        assert left_to_right(page, line, "completed")
        name_right = page.evaluate("document.querySelector('#run-line bdi').getBoundingClientRect().right")
        assert name_right <= page.evaluate(CHAR_XS, [line, "completed"])[0]
        page.goto(f"{base}/compare?run={a}&run={r}")
        assert left_to_right(page, "main", "changed)")
        assert page.locator("figure[data-plot='forest'] img").count() == 1


def test_bundle_from_file_has_its_csp_and_no_absolute_path(tmp_path: Path) -> None:
    db = str(tmp_path / "b.db")
    secret = "/home/alice/private-project"
    with open_store(db) as store:
        run_id = add_run(store, RTL, 5, dataset=f"{secret}/data.jsonl", system=f"{secret}/sys.py:answer")
    out = tmp_path / "bundle"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    cmd = [sys.executable, "-m", "ragmeter", "view", "--db", db, "--bundle", str(out), "--run", run_id]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    with browser() as b:
        page = b.new_page(viewport={"width": 1280, "height": 900})
        for name in ("index.html", "run-1.html"):
            page.goto((out / name).as_uri())
            policy = page.locator("meta[http-equiv='Content-Security-Policy']").get_attribute("content")
            assert policy is not None and "script-src 'self'" in policy and "default-src 'none'" in policy
            html = page.content()
            assert secret not in html and "/home/" not in html and str(tmp_path) not in html
        assert "data.jsonl" in page.locator("main > p.wrap").first.inner_text()
        page.wait_for_selector("html[data-bundle-ready='1']")  # the bundle's own script runs under the CSP
        assert page.locator("#bundle-queries tbody tr").count() == 5
        # an inline script (what a payload that escaping missed would be) does not run
        page.evaluate(
            "() => { const s = document.createElement('script');"
            " s.textContent = \"document.documentElement.setAttribute('data-pwned', '1')\";"
            " document.body.appendChild(s); }"
        )
        assert not pwned(page)
        assert left_to_right(page, "main > p.wrap", "completed")
