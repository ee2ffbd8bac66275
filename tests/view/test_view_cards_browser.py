"""Judge cards in a real browser (Playwright driving Debian's Chromium) over `ragmeter view`: on the run page
of a run judged by a judge with a stored card, the judged metric's row names the card's flags and links to
the card, whose numbers are the stored card's and whose flagged perturbation is marked (a flag glyph and
words, tinted); a judged metric with no card, and a run whose judge has none, say "no card"; no card text
runs as markup; the page does not scroll sideways at 1280 px; a query page's judge links to its card."""

from __future__ import annotations

from typing import Any

import pytest
from browser import browser, no_horizontal_overflow, pwned, serve
from card_store import DRIFTED, make_card_store

pytestmark = pytest.mark.browser
pytest.importorskip("aiohttp")


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return make_card_store(tmp_path_factory.mktemp("cardsbrowser") / "store.db")


def _background(locator: Any) -> str:
    return str(locator.evaluate("e => getComputedStyle(e).backgroundColor"))


def test_cards_next_to_judged_metrics_in_a_browser(stored: dict[str, Any]) -> None:
    card = stored["card"]
    pad = next(s for s in card.bias if s.perturbation == "padding")
    with serve(stored["db"]) as base, browser() as b:
        page = b.new_page(viewport={"width": 1280, "height": 900})
        page.goto(base + f"/runs/{stored['judged']}")
        assert not pwned(page)
        cell = page.locator("table.summary tr[data-metric='groundedness'] td.card-cell")
        assert cell.is_visible() and "⚑ flagged: padding" in cell.inner_text()
        none = page.locator("table.summary tr[data-metric='answer_correctness'] td.card-cell")
        assert none.inner_text().strip() == "no card"
        assert page.locator("table.summary tr[data-metric='mrr'] td.card-cell").inner_text().strip() == ""
        # the link in the metrics table brings the card into view
        cell.locator("a").click()
        section = page.locator("#card-groundedness")
        assert page.url.endswith("#card-groundedness") and section.is_visible()
        assert section.evaluate("e => e.getBoundingClientRect().top") < 900
        assert card.card_id is not None and card.card_id in section.locator("h3").inner_text()
        flagged = section.locator("tr[data-perturbation='padding']")
        ok = section.locator("tr[data-perturbation='master_key']")
        assert flagged.is_visible() and "⚑ padding" in flagged.inner_text()
        assert "FLAGGED (in favour)" in flagged.locator("td.flag").inner_text()
        assert flagged.locator("td.net-shift").inner_text() == f"{pad.net_shift:+.3f}"
        assert pad.ci95 is not None
        assert flagged.locator("td.ci").inner_text() == f"[{pad.ci95[0]:+.3f}, {pad.ci95[1]:+.3f}]"
        assert ok.locator("td.flag").inner_text() == "inside tolerance"
        # marked for the eye as well as in words: the flagged row is tinted, the other is not
        assert _background(flagged.locator("td").first) != _background(ok.locator("td").first)
        assert "flagged: padding" in section.locator(".card-flags").inner_text()
        assert card.drift is not None
        drift = section.locator(".card-drift").inner_text()
        assert f"label flips {card.drift.share:.3f}" in drift and str(stored["anchor"].card_id) in drift
        shown = section.locator(".drift-items bdi").all_inner_texts()
        assert set(shown) == DRIFTED  # a hostile item id is shown as its text
        assert "no card: no judge card of" in page.locator("#card-answer_correctness").inner_text()
        scroll, client = no_horizontal_overflow(page)
        assert scroll <= client <= 1280, (scroll, client)
        assert not pwned(page)
        # a query's page: each judge's verdict links to its card on the run page
        page.goto(base + f"/runs/{stored['judged']}/query?id=r1")
        link = page.locator("section.judge[data-metric='groundedness'] p.card-link a")
        assert "⚑ flagged: padding" in link.inner_text()
        link.click()
        page.wait_for_url(f"**/runs/{stored['judged']}#card-groundedness")
        assert page.locator("#card-groundedness tr[data-perturbation='padding']").is_visible()
        # a run whose judge has no stored card
        page.goto(base + f"/runs/{stored['uncarded']}")
        text = page.locator("#card-groundedness").inner_text()
        assert "no card" in text and "openai-compatible:other@http://127.0.0.1:9" in text
        assert page.locator("table.bias").count() == 0
        assert not pwned(page)
