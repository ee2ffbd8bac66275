"""Judge cards in the viewer, over a real SQLite store whose cards were built over real HTTP: the run page
shows, next to each judged metric, the card `runs show` and the report find for the run's judge (its
numbers, the flagged perturbation marked, drift and its items), "no card" where there is none, and every
card text escaped; a bundle's run page carries the same cards."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from card_store import CARD_NOTE, DRIFTED, HOSTILE_ID, make_card_store
from markupsafe import escape
from report_payloads import XSS

from ragmeter.store.pages import open_store_readonly

pytest.importorskip("starlette")
pytest.importorskip("aiohttp")
from starlette.testclient import TestClient

from ragmeter.view.app import Viewer, create_app
from ragmeter.view.cards import card_panels


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return make_card_store(tmp_path_factory.mktemp("cards") / "store.db")


@pytest.fixture
def client(stored: dict[str, Any]) -> TestClient:
    return TestClient(create_app(Viewer(open_store_readonly(stored["db"]))), base_url="http://127.0.0.1")


def _panels(stored: dict[str, Any], run: str) -> dict[str, dict[str, Any]]:
    store = open_store_readonly(stored["db"])
    return {p["metric"]: p for p in card_panels(store, store.get_run(run, with_queries=False))}


def test_the_viewer_finds_the_card_runs_show_and_the_report_find(stored: dict[str, Any]) -> None:
    from click.testing import CliRunner

    from ragmeter.cli import cli
    from ragmeter.validity.storage import card_notes

    card = stored["card"]
    panels = _panels(stored, stored["judged"])
    assert set(panels) == {"groundedness", "answer_correctness"}  # the judged metrics; mrr is not one
    shown = panels["groundedness"]["card"]
    assert shown is not None and shown["card_id"] == card.card_id != stored["anchor"].card_id
    out = CliRunner().invoke(
        cli, ["runs", "show", stored["judged"], "--db", stored["db"], "--format", "json"]
    )
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["judge_cards"]["groundedness"]["card_id"] == card.card_id
    store = open_store_readonly(stored["db"])
    notes = card_notes(store, store.get_run(stored["judged"], with_queries=False))
    assert len(notes) == 1 and notes[0].startswith(f"judge card {card.card_id} for groundedness")


def test_a_card_panel_holds_the_stored_card_s_numbers(stored: dict[str, Any]) -> None:
    card = stored["card"]
    c = _panels(stored, stored["judged"])["groundedness"]["card"]
    bias = {b["perturbation"]: b for b in c["bias"]}
    for s in card.bias:
        row = bias[s.perturbation]
        assert row["shift"] == f"{s.net_shift:+.3f}" and row["n"] == s.n == card.n_items
        assert s.ci95 is not None and row["ci"] == f"[{s.ci95[0]:+.3f}, {s.ci95[1]:+.3f}]"
        assert row["flagged"] is s.flagged and row["p"] == f"{s.p_value:.3g}"
    # the judge that likes length is flagged on padding, and only there
    assert bias["padding"]["flagged"] and bias["padding"]["flag"] == "FLAGGED (in favour)"
    assert not bias["master_key"]["flagged"] and bias["master_key"]["flag"] == "inside tolerance"
    assert c["flagged"] == ["padding"]
    assert (
        card.consistency is not None
        and c["consistency"]["flip_share"] == f"{card.consistency.flip_share:.3f}"
    )
    assert card.agreement is not None
    kappa = next(g for g in c["agreement"] if g["name"] == "Cohen's kappa")
    assert kappa["value"] == f"{card.agreement['kappa']:.3f}" and c["agreement_n"] == card.agreement["n"]
    assert card.drift is not None and card.drift.share == pytest.approx(len(DRIFTED) / 40)
    assert c["drift"]["share"] == f"{card.drift.share:.3f}" and set(c["drift"]["flipped"]) == DRIFTED
    assert c["drift"]["against"] == stored["anchor"].card_id


def test_no_card_is_said_plainly(stored: dict[str, Any]) -> None:
    judged = _panels(stored, stored["judged"])["answer_correctness"]
    assert judged["card"] is None and judged["summary"] == "no card"
    assert stored["card"].judge_spec in judged["missing"] and "answer_correctness" in judged["missing"]
    other = _panels(stored, stored["uncarded"])["groundedness"]
    assert other["card"] is None and "openai-compatible:other@http://127.0.0.1:9" in other["missing"]
    assert _panels(stored, stored["unjudged"])["groundedness"]["missing"] == "no card: the run names no judge"
    assert _panels(stored, stored["retrieval"]) == {}


def _section(page: str, metric: str) -> str:
    start = page.index(f'id="card-{metric}"')
    return page[start : page.index("</section>", start)]


def _row(page: str, perturbation: str) -> str:
    m = re.search(rf'<tr class="(\w+)" data-perturbation="{perturbation}">(.*?)</tr>', page, re.S)
    assert m is not None, perturbation
    return m.group(1) + " " + m.group(2)


def test_the_run_page_shows_each_judged_metric_s_card(stored: dict[str, Any], client: TestClient) -> None:
    card = stored["card"]
    page = client.get(f"/runs/{stored['judged']}").text
    # the metrics table: the judged metric's cell names its flags and links to its card
    cell = re.search(
        r'<tr data-metric="groundedness">.*?<td class="card-cell flagged">(.*?)</td>', page, re.S
    )
    assert cell is not None and 'href="#card-groundedness"' in cell.group(1)
    assert "flagged: padding" in cell.group(1) and f"drift {card.drift.share:.3f}" in cell.group(1)
    none = re.search(r'<tr data-metric="answer_correctness">.*?<td class="card-cell">(.*?)</td>', page, re.S)
    assert none is not None and "no card" in none.group(1)
    section = _section(page, "groundedness")
    assert card.card_id in section
    pad = next(s for s in card.bias if s.perturbation == "padding")
    assert _row(section, "padding").startswith("flagged ") and "FLAGGED (in favour)" in _row(
        section, "padding"
    )
    assert f"{pad.net_shift:+.3f}" in _row(section, "padding")
    assert _row(section, "master_key").startswith("ok ") and "FLAGGED" not in _row(section, "master_key")
    assert f'label flips <span class="num">{card.drift.share:.3f}</span>' in section
    assert "no card: no judge card of" in _section(page, "answer_correctness")
    # every card text is escaped: the card's dataset name, its note, a drifted item's id
    assert XSS not in page and HOSTILE_ID not in page
    assert str(escape(CARD_NOTE)) in section and str(escape(HOSTILE_ID)) in section


def test_the_query_page_links_each_judge_to_its_card(stored: dict[str, Any], client: TestClient) -> None:
    run = stored["judged"]
    page = client.get(f"/runs/{run}/query?id=r1").text

    def judge(metric: str) -> str:
        start = page.index(f'<section class="judge" data-metric="{metric}">')
        return page[start : page.index("</section>", start)]

    link = re.search(
        r'<p class="card-link flagged">judge card: <a href="([^"]+)">(.*?)</a>', judge("groundedness")
    )
    assert link is not None and link.group(1) == f"/runs/{run}#card-groundedness"
    assert "flagged: padding" in link.group(2)
    assert 'judge card: <a href="/runs/' in judge("answer_correctness") and "no card" in judge(
        "answer_correctness"
    )
    assert page.count('<p class="card-link') == 2  # the two judged metrics; mrr is no judge's


def test_pages_without_a_card(stored: dict[str, Any], client: TestClient) -> None:
    page = client.get(f"/runs/{stored['uncarded']}").text
    assert 'id="card-groundedness"' in page and "no card: no judge card of" in page
    assert 'class="bias"' not in page
    page = client.get(f"/runs/{stored['retrieval']}").text  # no judged metric: no cards at all
    assert 'id="judge-cards"' not in page and "judge card" not in page


def test_a_card_s_own_run_page_is_the_card(stored: dict[str, Any], client: TestClient) -> None:
    anchor = stored["anchor"]
    page = client.get(f"/runs/{anchor.card_id}").text
    assert 'id="card-groundedness"' in page and 'data-perturbation="padding"' in page
    assert "nothing flagged" in page and anchor.judge_spec in page


def test_a_bundle_carries_the_cards(stored: dict[str, Any], tmp_path: Path) -> None:
    from ragmeter.view.bundle import write_bundle

    store = open_store_readonly(stored["db"])
    write_bundle(store, [stored["judged"]], tmp_path / "b")
    page = (tmp_path / "b" / "run-1.html").read_text(encoding="utf-8")
    assert stored["card"].card_id in page and "FLAGGED (in favour)" in _row(page, "padding")
    assert XSS not in page and HOSTILE_ID not in page
