"""The viewer's pages over a real SQLite store, through Starlette's test client: the paged read agrees with
the whole-run read, filters and sorts, 404/400 pages, escaping and the security headers."""

from __future__ import annotations

import html
import math
import sqlite3
from pathlib import Path

import pytest
from report_payloads import IMG_XSS, XSS
from view_store import add_run, make_store

from ragmeter.errors import InputError
from ragmeter.store import open_store
from ragmeter.store.pages import QueryFilter, open_store_readonly, query_page, query_result
from ragmeter.view.app import Viewer, create_app

pytest.importorskip("starlette")
from starlette.testclient import TestClient


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, str]]:
    return make_store(tmp_path_factory.mktemp("view") / "store.db")


@pytest.fixture
def client(stored: tuple[str, dict[str, str]]) -> TestClient:
    return TestClient(create_app(Viewer(open_store_readonly(stored[0]))), base_url="http://127.0.0.1")


def _sorted_ids(store_url: str, run_id: str, metric: str, descending: bool) -> list[str]:
    with open_store(store_url, sweep=False) as store:
        rows = store.query_results(run_id)
    valued = [
        (q.metrics[metric].value, i, q.query_id)
        for i, q in enumerate(rows)
        if q.metrics[metric].value is not None
    ]
    valued.sort(key=lambda t: ((-t[0] if descending else t[0]), t[1]))
    nulls = [q.query_id for q in rows if q.metrics[metric].value is None]
    return [t[2] for t in valued] + nulls


@pytest.mark.parametrize("descending", [False, True])
def test_paged_read_matches_the_whole_run(stored: tuple[str, dict[str, str]], descending: bool) -> None:
    url, ids = stored
    run_id = ids["base"]
    expected = _sorted_ids(url, run_id, "factuality", descending)
    store = open_store_readonly(url)
    for size in (7, 3):  # pages that cross from valued to null queries, and pages of nulls only
        got: list[str] = []
        for offset in range(0, 20, size):
            flt = QueryFilter(sort="factuality", descending=descending)
            page = query_page(store.engine, run_id, flt, offset=offset, limit=size)
            assert page.total == 20
            got += [q.query_id for q in page.rows]
            # each row carries its metric values from the metric_values table
            assert all("factuality" in q.metrics and "ndcg@10" in q.metrics for q in page.rows)
        assert got == expected
    assert expected[-1] in {q for q in expected[-3:]}  # nulls last, both directions
    with open_store(url, sweep=False) as full:
        whole = {q.query_id: q for q in full.query_results(run_id)}
    one = query_result(store.engine, run_id, "q00005")
    assert one is not None and one == whole["q00005"]
    assert query_result(store.engine, run_id, "nope") is None


def test_filters_in_sql(stored: tuple[str, dict[str, str]]) -> None:
    url, ids = stored
    store = open_store_readonly(url)
    with open_store(url, sweep=False) as full:
        whole = full.query_results(ids["base"])
    lo, hi = 0.2, 0.6
    page = query_page(store.engine, ids["base"], QueryFilter(metric="mrr", low=lo, high=hi), limit=100)
    want = {q.query_id for q in whole if lo <= (q.metrics["mrr"].value or -1) <= hi}
    assert {q.query_id for q in page.rows} == want and page.total == len(want)
    nulls = query_page(
        store.engine, ids["base"], QueryFilter(metric="factuality", reason="timed out"), limit=100
    )
    assert {q.query_id for q in nulls.rows} == {
        q.query_id for q in whole if q.metrics["factuality"].value is None
    }
    assert nulls.total == 3
    text = query_page(store.engine, ids["base"], QueryFilter(text="q0001"), limit=100)
    assert sorted(q.query_id for q in text.rows) == [f"q000{i}" for i in range(10, 20)]


def test_pages_render_and_escape(client: TestClient, stored: tuple[str, dict[str, str]]) -> None:
    _, ids = stored
    hostile = ids["hostile"]
    for path in (
        "/",
        f"/runs/{hostile}",
        f"/runs/{hostile}/queries?sort=mrr&desc=1",
        f"/runs/{hostile}/query?id=q00000",
        f"/compare?run={hostile}&run={ids['base']}",
    ):
        r = client.get(path)
        assert r.status_code == 200, (path, r.text[-500:])
        assert XSS not in r.text and IMG_XSS not in r.text, path
        assert "script-src 'self'" in r.headers["content-security-policy"]
        assert r.text.count("<script") == 1  # the app's own script only
    page = client.get(f"/runs/{hostile}/query?id=q00000").text
    assert html.escape(XSS, quote=False) in page.replace("&#34;", '"').replace("&#39;", "'")
    assert "judge timed out" not in page  # q00000 has a value; q00003 is the null one
    null_page = client.get(f"/runs/{hostile}/query?id=q00003").text
    assert "null: judge timed out after 3 retries" in null_page


def test_queries_page_sorts_filters_and_pages(client: TestClient, stored: tuple[str, dict[str, str]]) -> None:
    url, ids = stored
    r = client.get(f"/runs/{ids['base']}/queries?sort=mrr&desc=1&per=5&page=2")
    assert r.status_code == 200
    expected = _sorted_ids(url, ids["base"], "mrr", True)[5:10]
    shown = [line.split(">", 1)[1].split("<", 1)[0] for line in r.text.split('class="query-link" href=')[1:]]
    assert shown == expected
    assert "page 2 of 4" in r.text
    r = client.get(f"/runs/{ids['base']}/queries?metric=factuality&null=1")
    assert "3 queries match" in r.text and "factuality: judge timed out after 3 retries" in r.text


def test_unknown_ids_and_bad_parameters(client: TestClient, stored: tuple[str, dict[str, str]]) -> None:
    _, ids = stored
    for path in (
        "/runs/no-such-run",
        f"/runs/{ids['base']}/query?id=zz",
        "/no/page",
        f"/compare?run={ids['base']}&run=zz",
    ):
        r = client.get(path)
        assert r.status_code == 404, path
        assert "Traceback" not in r.text and "404" in r.text
    for path in (
        f"/runs/{ids['base']}/queries?lo=abc",
        f"/runs/{ids['base']}/queries?sort=nope",
        "/compare?run=x",
    ):
        r = client.get(path)
        assert r.status_code == 400, path
        assert "Traceback" not in r.text


def test_runs_page_filters_and_headline(client: TestClient, stored: tuple[str, dict[str, str]]) -> None:
    _, ids = stored
    r = client.get("/?status=failed")
    assert "no runs match" in r.text
    r = client.get("/?dataset=fixture")
    for run_id in ids.values():
        assert run_id in r.text
    assert "ndcg@10" in r.text and "$0.0040" in r.text  # headline metric, and cost of the 20-query run


def test_readonly_open_refuses_what_is_not_a_store(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no store at"):
        open_store_readonly(str(tmp_path / "missing.db"))
    assert not (tmp_path / "missing.db").exists()
    junk = tmp_path / "junk.db"
    junk.write_text("not a database at all\n" * 20)
    with pytest.raises(InputError, match="not a ragmeter store"):
        open_store_readonly(str(junk))
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("create table t (x)").connection.commit()
    with pytest.raises(InputError, match="not a ragmeter store"):
        open_store_readonly(str(other))


def test_readonly_open_neither_migrates_nor_sweeps(tmp_path: Path) -> None:
    url = str(tmp_path / "s.db")
    with open_store(url) as store:
        add_run(store, "r", 3)
        running = store.create_run(store.list_runs()[0].config, name="alive?")
    con = sqlite3.connect(url)
    con.execute("update runs set pid = 999999, pid_token = 'gone' where id = ?", (running.run_id,))
    con.commit()
    store = open_store_readonly(url)
    assert {r.status for r in store.list_runs()} == {"completed", "running"}  # not swept
    store.close()
    con.execute("update alembic_version set version_num = '0001'")
    con.commit()
    with pytest.raises(InputError, match="revision 0001"):
        open_store_readonly(url)
    assert con.execute("select version_num from alembic_version").fetchone()[0] == "0001"  # not migrated


def test_percentile_matches_numpy() -> None:
    np = pytest.importorskip("numpy")
    from ragmeter.view.data import percentile

    values = sorted([3.0, 1.0, 10.0, 7.5, 2.25, 8.0])
    for q in (0.5, 0.95):
        assert math.isclose(percentile(values, q) or 0.0, float(np.percentile(values, q * 100)))


def test_contexts_and_failure_classes_are_shown(tmp_path: Path) -> None:
    """Stored generator contexts mark which retrieved docs reached the generator; failure classes (the
    diagnosis metrics) are counted on the run page and shown per query."""
    from ragmeter.models import EvalConfig, MetricResult, MetricSummary, QueryEvalResult, RetrievedDoc

    url = str(tmp_path / "diag.db")
    with open_store(url) as store:
        run = store.create_run(EvalConfig(dataset="fixture"), name="diag", dataset_hash="h")
        assert run.run_id is not None
        docs = [RetrievedDoc(doc_id=f"d{r}", score=3.0 - r, rank=r + 1, text=f"t{r}") for r in range(3)]
        for i, cls in enumerate(["class_correct", "class_correct", "class_unsupported"]):
            metrics = {
                n: MetricResult(name=n, value=1.0 if n == cls else 0.0)
                for n in ("class_correct", "class_unsupported")
            }
            q = QueryEvalResult(
                query_id=f"q{i}", question="?", retrieved=docs, contexts=docs[:2], answer="a", metrics=metrics
            )
            store.add_query_result(run.run_id, q, position=i)
        aggregate = {
            n: MetricSummary(mean=0.5, std=None, n=3) for n in ("class_correct", "class_unsupported")
        }
        store.finish_run(run.run_id, status="completed", aggregate=aggregate, n_queries=3)
    client = TestClient(create_app(Viewer(open_store_readonly(url))), base_url="http://127.0.0.1")
    page = client.get(f"/runs/{run.run_id}").text
    assert "<li>correct: 2</li>" in page and "<li>unsupported: 1</li>" in page
    q = client.get(f"/runs/{run.run_id}/query?id=q2").text
    assert "class unsupported" in q
    rows = q.split('<table class="docs">')[1].split("<tbody>")[1].split("</tbody>")[0].split("<tr>")[1:]
    assert [("<td>yes</td>" in r, "<td>no</td>" in r) for r in rows] == [
        (True, False),
        (True, False),
        (False, True),
    ]
