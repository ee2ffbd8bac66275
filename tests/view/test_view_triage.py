"""The viewer as a triage tool, over a judged run of the demo (scripted judge over real HTTP, real SQLite):
the queries page (question, badges, class chips, null reasons, worst first, columns in the URL), the query
page (judges first, RAGChecker verdicts as a true/false table, readable details, unjudged documents), j/k
links in the list's order, the compare page (changed queries first) and replays in the runs list."""

from __future__ import annotations

import html
import re

import pytest
from judged_demo import make_judged_demo
from markupsafe import escape

import ragmeter.metrics as rm
from ragmeter.store import open_store
from ragmeter.store.pages import open_store_readonly
from ragmeter.view import data
from ragmeter.view.app import Viewer, create_app

pytest.importorskip("starlette")
pytest.importorskip("aiohttp")
pytest.importorskip("bm25s")
from starlette.testclient import TestClient

REPR = re.compile(r"\{'|': |\bFalse\b|\bTrue\b|\bNone\b")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    db = tmp_path_factory.mktemp("triage") / "demo.db"
    first = make_judged_demo(db)
    replay = {"replay": {"parent": first, "intervention": "oracle_contexts"}}
    second = make_judged_demo(db, n=24, salt="b", extra=replay, name="replay")
    return str(db), first, second


@pytest.fixture
def client(demo: tuple[str, str, str]) -> TestClient:
    return TestClient(create_app(Viewer(open_store_readonly(demo[0]))), base_url="http://127.0.0.1")


def _text(page: str) -> str:
    """What a person reads: the page without tags and scripts, unescaped."""
    body = re.sub(r"<script.*?</script>|<[^>]+>", " ", page, flags=re.S)
    return html.unescape(body)


def _rows(page: str) -> list[str]:
    return re.findall(r'<tr data-query="([^"]+)"', page)


def test_queries_page_worst_first_by_the_headline_with_questions_and_badges(
    client: TestClient, demo: tuple[str, str, str]
) -> None:
    db, run_id, _ = demo
    with open_store(db, sweep=False) as store:
        run = store.get_run(run_id)
    per_query = sorted({n for q in run.per_query for n in q.metrics})
    head = rm.headline(per_query)[0]
    page = client.get(f"/runs/{run_id}/queries").text
    ids = _rows(page)
    assert len(ids) == 50 and "60 queries match" in page  # the first page of 50
    values = {q.query_id: q.metrics[head].value for q in run.per_query}
    worst = min(v for v in values.values() if v is not None)
    assert values[ids[0]] == worst  # the first row is a worst query by the headline metric
    got = [values[i] for i in ids if values[i] is not None]
    assert sorted(v for v in values.values() if v is not None)[:50] == got
    assert got == sorted(got)  # worst first (higher is better: ascending), nulls last
    # every row shows its question, and one badge per default column with the value printed
    by_id = {q.query_id: q for q in run.per_query}
    for qid in ids:
        assert str(escape(by_id[qid].question)) in page
    shown = data.default_columns(
        rm.headline(per_query) + [n for n in per_query if n not in rm.headline(per_query)]
    )
    for name in shown:
        assert f'data-col="{name}"' in page
    for m in re.finditer(
        r'<span class="badge (t\d|null|plain|missing)" data-metric="([^"]+)" title="[^"]*">([^<]*)<', page
    ):
        tone, name, text = m.groups()
        if tone.startswith("t"):
            assert text not in ("", "–") and float(text) >= 0  # the value is printed, not only a colour
    # run-level-only metrics are not columns but are named behind the picker
    header = page.split("<thead>")[1].split("</thead>")[0]
    for name in ("avg_llm_grade", "pass_rate_7", "latency_total_ms"):
        assert name in run.aggregate and f'data-col="{name}"' not in header
        assert name in page.split('id="column-picker"')[1].split("</details>")[0]
    # the failure class as a short chip with the full name as its title
    assert re.search(r'<span class="chip c-\w+" title="(correct|answer_wrong_with_evidence)">', page)
    # the judge's null reason is on its row
    null_q = next(q for q in run.per_query if q.metrics["answer_correctness"].value is None)
    row = page.split(f'<tr data-query="{null_q.query_id}">')[1].split("</tr>")[0]
    assert "answer_correctness: " + str(escape(null_q.metrics["answer_correctness"].error or "")) in row


def test_columns_sort_and_direction_live_in_the_url(client: TestClient, demo: tuple[str, str, str]) -> None:
    _, run_id, _ = demo
    page = client.get(f"/runs/{run_id}/queries?col=mrr&col=factuality&sort=mrr&desc=1").text
    header = page.split("<thead>")[1].split("</thead>")[0]
    assert re.findall(r'data-col="([^"]+)"', header) == ["query_id", "mrr", "factuality"]
    # the sort links keep the chosen columns; the active column flips its direction
    mrr_link = html.unescape(re.search(r'data-col="mrr" href="([^"]+)"', header).group(1))  # type: ignore[union-attr]
    assert "col=mrr" in mrr_link and "col=factuality" in mrr_link and "desc=0" in mrr_link
    # a query link carries the list's order for j/k
    first = html.unescape(re.search(r'class="query-link" href="([^"]+)"', page).group(1))  # type: ignore[union-attr]
    assert "sort=mrr" in first and "desc=1" in first and "at=0" in first
    for bad in ("col=nope", "desc=2", "col=avg_llm_grade", "at=-1"):
        path = (
            f"/runs/{run_id}/queries?{bad}"
            if not bad.startswith("at")
            else f"/runs/{run_id}/query?id=q01&{bad}"
        )
        r = client.get(path)
        assert r.status_code == 400, bad
        assert "Traceback" not in r.text


def test_query_page_judges_first_verdict_tables_and_no_repr(
    client: TestClient, demo: tuple[str, str, str]
) -> None:
    db, run_id, _ = demo
    with open_store(db, sweep=False) as store:
        run = store.get_run(run_id)
    q = next(q for q in run.per_query if q.metrics["rc_faithfulness"].value is not None)
    page = client.get(f"/runs/{run_id}/query?id={q.query_id}").text
    reason = html.escape(
        q.metrics["answer_correctness"].details.get("reasoning")
        or q.metrics["retrieval_grade"].details["reasoning"]
    )
    assert page.index(reason) < page.index('<table class="docs">')  # judges come before the documents
    assert page.index('id="answer"') < page.index('<table class="docs">')
    # RAGChecker's verdicts: one row per answer claim, one true/false cell per chunk, as stored
    stored = q.metrics["rc_faithfulness"].details["verdicts"]["retrieved2response"]
    table = page.split('data-check="retrieved2response"')[1].split("</table>")[0]
    cells = re.findall(r'<td class="bool (true|false)">(true|false)</td>', table)
    assert [c[1] for c in cells] == ["true" if v else "false" for row in stored for v in row]
    assert all(a == b for a, b in cells)
    assert "answer2response" not in _text(page).split("Answer")[0] or "entailed" in page
    # details as text: token counts, flags and yes/no, never a Python repr
    text = _text(page)
    assert not REPR.search(text), REPR.search(text)
    assert "prompt 11, completion 7" in text
    # a retrieved document that the dataset's qrels do not grade says so, not 0
    from ragmeter.datasets import demo_dataset

    qrels = next(x for x in demo_dataset().queries if x.query_id == q.query_id)
    graded = set(qrels.relevance or {}) | set(qrels.relevant_doc_ids)
    labels = re.findall(r'<td class="num( note)?">(unjudged|\d+)</td><td>(yes|no|–)</td>', page)
    docs = sorted(q.retrieved, key=lambda d: d.rank)
    assert [lab for _, lab, _ in labels] == [
        ("unjudged" if d.doc_id not in graded else str((qrels.relevance or {}).get(d.doc_id, 1)))
        for d in docs
    ]
    assert "unjudged" in [lab for _, lab, _ in labels]


def test_j_and_k_follow_the_queries_page_order(client: TestClient, demo: tuple[str, str, str]) -> None:
    _, run_id, _ = demo
    listing = client.get(f"/runs/{run_id}/queries?sort=retrieval_grade&desc=1&per=100").text
    order = _rows(listing)
    links = [html.unescape(h) for h in re.findall(r'class="query-link" href="([^"]+)"', listing)]
    page = client.get(links[1]).text
    nxt = html.unescape(re.search(r'id="next-query" href="([^"]+)"', page).group(1))  # type: ignore[union-attr]
    prv = html.unescape(re.search(r'id="prev-query" href="([^"]+)"', page).group(1))  # type: ignore[union-attr]
    assert f"id={order[2]}&" in nxt and f"id={order[0]}&" in prv
    last = client.get(links[-1]).text
    assert 'id="next-query"' not in last and 'id="prev-query"' in last
    assert 'id="prev-query"' not in client.get(links[0]).text
    # j crosses pages: the last row of a page of 50 steps to the first of the next, whose back link is page 2
    paged = client.get(f"/runs/{run_id}/queries?sort=retrieval_grade&desc=1").text
    end = client.get(
        [html.unescape(h) for h in re.findall(r'class="query-link" href="([^"]+)"', paged)][-1]
    ).text
    step = html.unescape(re.search(r'id="next-query" href="([^"]+)"', end).group(1))  # type: ignore[union-attr]
    assert f"id={order[50]}&" in step and "at=50" in step
    assert "page=2" in html.unescape(
        re.search(r'id="all-queries" href="([^"]+)"', client.get(step).text).group(1)
    )  # type: ignore[union-attr]
    # opened without the list's order (a shared link to one query): no j/k links, no error
    plain = client.get(f"/runs/{run_id}/query?id={order[0]}").text
    assert 'id="next-query"' not in plain


def test_compare_changed_queries_first_with_both_values(
    client: TestClient, demo: tuple[str, str, str]
) -> None:
    db, first, second = demo
    page = client.get(f"/compare?run={first}&run={second}").text
    assert page.index('<table class="changed') < page.index("<figure")
    with open_store(db, sweep=False) as store:
        a, b = store.get_run(first), store.get_run(second)
    qa = {q.query_id: q for q in a.per_query}
    qb = {q.query_id: q for q in b.per_query}
    row = page.split('class="changed-link"')[1].split("</tr>")[0]
    qid = re.search(r">([^<]+)</a>", row).group(1)  # type: ignore[union-attr]
    assert str(escape(qb[qid].question)) in row
    va = qa[qid].metrics["answer_correctness"].value
    vb = qb[qid].metrics["answer_correctness"].value
    assert (
        f"{data.value_text('answer_correctness', va)} → {data.value_text('answer_correctness', vb)}"
        in html.unescape(row)
    )
    assert not REPR.search(_text(page))


def test_runs_list_names_a_replays_parent_and_intervention(
    client: TestClient, demo: tuple[str, str, str]
) -> None:
    _, first, second = demo
    page = client.get("/").text
    row = page.split(f'<tr data-run="{second}">')[1].split("</tr>")[0]
    assert "oracle_contexts" in row and f'href="/runs/{first}"' in row
    plain = page.split(f'<tr data-run="{first}">')[1].split("</tr>")[0]
    assert "replay of" not in plain
    assert f'href="/runs/{first}"' in client.get(f"/runs/{second}").text
    assert not REPR.search(_text(page))


def test_badge_tones_follow_direction_and_range() -> None:
    from ragmeter.models import MetricResult

    assert data.tone("ndcg@10", 0.0) == "t0" and data.tone("ndcg@10", 1.0) == "t4"
    assert data.tone("hallucination_rate", 0.0) == "t4" and data.tone("hallucination_rate", 1.0) == "t0"
    assert data.tone("retrieval_grade", 1.0) == "t0" and data.tone("retrieval_grade", 10.0) == "t4"
    assert data.tone("retrieval_grade", 5.5) == "t2"
    assert data.tone("latency_total_ms", 120.0) == "plain" and data.tone("ndcg@10", None) == "null"
    b = data.badge(
        "answer_correctness", MetricResult(name="answer_correctness", value=None, error="timed out")
    )
    assert b["text"] == "null" and "timed out" in b["title"]
    assert data.badge("retrieval_grade", MetricResult(name="retrieval_grade", value=7.0))["text"] == "7.0"
    assert data.readable({"prompt": 400, "completion": 80}) == "prompt 400, completion 80"
    assert (
        data.readable(False) == "no" and data.readable([]) == "none" and data.readable(["a", "b"]) == "a; b"
    )
    assert data.class_chip("answer_wrong_with_evidence")["text"] == "wrong answer"


def test_rc_verdicts_dict_is_a_table_not_a_list_of_keys() -> None:
    from ragmeter.models import MetricResult

    m = MetricResult(
        name="rc_f1",
        value=0.5,
        details={
            "answer_claims": ["A", "B"],
            "reference_claims": ["R"],
            "verdicts": {
                "answer2response": [True, False],
                "response2answer": [True],
                "retrieved2response": None,
                "retrieved2answer": None,
            },
            "tokens": {"prompt": 400, "completion": 80},
            "cached": False,
        },
    )
    j = data.judgement("rc_f1", m)
    assert j["claims"] == []  # the dict's keys are not claims
    assert [(t["check"], [(r["claim"], r["cells"]) for r in t["rows"]]) for t in j["tables"]] == [
        ("answer2response", [("A", ["true"]), ("B", ["false"])]),
        ("response2answer", [("R", ["true"])]),
    ]
    assert j["call"] == "cached no · tokens prompt 400, completion 80"
    assert j["is_judge"]
