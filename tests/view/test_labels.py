"""Labels from people in the store: versions and history, answers keyed by their text, PPI from queue labels
only, judge validation from a run's labels, the viewer's POST (CSRF, 409, bad values), and `ragmeter labels`."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from test_view_cli import one_line_exit_2, ragmeter
from view_store import add_run

from ragmeter.models import EvalQuery
from ragmeter.score.ppi import run_ppi
from ragmeter.store import Store, open_store
from ragmeter.store.labels import LabelItem, StaleLabel, all_labels, current_labels, save_label
from ragmeter.validity.human_labels import answer_labels, queue_order, store_ppi, validate_run

pytest.importorskip("starlette")
from starlette.testclient import TestClient

from ragmeter.view.annotate import AnnotatingViewer, annotate_routes
from ragmeter.view.app import create_app


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = open_store(str(tmp_path / "labels.db"))
    yield s  # type: ignore[misc]
    s.close()


def n_rows(store: Store) -> int:
    return sqlite3.connect(store.engine.url.database).execute("select count(*) from labels").fetchone()[0]


def test_versions_history_and_stale_saves(store: Store) -> None:
    run_id = add_run(store, "a", 4)
    item = LabelItem.answer(run_id, "q00001", "factuality", "Thing 1 is a thing.")
    first = save_label(store.engine, item, 0.5, annotator="ann", source="browse", expected_version=0)
    assert first.version == 1
    with pytest.raises(StaleLabel) as stale:  # a second person saving over version 0
        save_label(store.engine, item, 1.0, annotator="bob", source="browse", expected_version=0)
    assert stale.value.current is not None and stale.value.current.value == 0.5
    save_label(store.engine, item, 0.75, annotator="bob", source="browse", expected_version=1)
    assert current_labels(store.engine, [item])[item.key].value == 0.75
    assert [lab.value for lab in all_labels(store.engine, run_id=run_id, history=True)] == [0.5, 0.75]
    assert n_rows(store) == 2


def test_a_label_of_one_answer_does_not_apply_to_another(store: Store) -> None:
    a = add_run(store, "a", 6, seed=1)
    b = add_run(store, "b", 6, seed=2, hostile=True)  # same query ids, different answer texts
    run_a, run_b = store.get_run(a), store.get_run(b)
    qa = next(q for q in run_a.per_query if q.query_id == "q00002")
    qb = next(q for q in run_b.per_query if q.query_id == "q00002")
    assert qa.answer != qb.answer
    save_label(
        store.engine,
        LabelItem.answer(a, "q00002", "factuality", qa.answer),
        1.0,
        annotator="x",
        source="browse",
        expected_version=0,
    )
    assert answer_labels(store, run_a, run_a.per_query) == {"factuality": {"q00002": 1.0}}
    assert answer_labels(store, run_b, run_b.per_query) == {}
    # and within run A, a label of an answer the run no longer gives does not apply either
    save_label(
        store.engine,
        LabelItem.answer(a, "q00004", "factuality", "an older answer"),
        0.0,
        annotator="x",
        source="browse",
        expected_version=0,
    )
    assert "q00004" not in answer_labels(store, run_a, run_a.per_query)["factuality"]


def test_ppi_uses_queue_labels_only_and_validation_uses_all(store: Store) -> None:
    run_id = add_run(store, "a", 21)
    run = store.get_run(run_id)
    by_id = {q.query_id: q for q in run.per_query}
    judged = [q.query_id for q in run.per_query if q.metrics["factuality"].value is not None]
    queue = [qid for qid in queue_order(judged, 7)][:5]
    browse = [qid for qid in judged if qid not in queue][:4]
    for qid in queue:
        save_label(
            store.engine,
            LabelItem.answer(run_id, qid, "factuality", by_id[qid].answer),
            1.0,
            annotator="p",
            source="queue",
            expected_version=0,
        )
    for qid in browse:
        save_label(
            store.engine,
            LabelItem.answer(run_id, qid, "factuality", by_id[qid].answer),
            0.0,
            annotator="p",
            source="browse",
            expected_version=0,
        )
    estimates, _, n = store_ppi(store, run)
    assert n == 5
    expected, _ = run_ppi(
        [EvalQuery(query_id=q, question="", human_labels={"factuality": 1.0}) for q in queue], run.per_query
    )
    assert estimates["factuality"] == expected["factuality"]
    assert estimates["factuality"].n_labeled == 5
    report = validate_run(store, run_id, "factuality").to_dict()
    assert report["n_items"] == 9  # queue and browse labels both feed validation
    assert {i["id"] for i in report["items"]} == set(queue) | set(browse)


BASE = "http://127.0.0.1"  # a loopback Host, and the Origin of this server's own pages


def _client(store: Store, annotator: str = "ann") -> tuple[TestClient, AnnotatingViewer]:
    viewer = AnnotatingViewer(store, annotator=annotator)
    return TestClient(
        create_app(viewer, extra_routes=annotate_routes(viewer)), base_url=BASE, headers={"Origin": BASE}
    ), viewer


def test_post_needs_csrf_checks_values_and_versions(store: Store) -> None:
    run_id = add_run(store, "a", 4)
    client, viewer = _client(store)
    form = {
        "kind": "answer",
        "run_id": run_id,
        "query_id": "q00001",
        "metric": "factuality",
        "version": "0",
        "value": "0.5",
    }
    r = client.post("/labels", data=form, follow_redirects=False)
    assert r.status_code == 403 and n_rows(store) == 0
    r = client.post("/labels", data={**form, "csrf": "guess"}, follow_redirects=False)
    assert r.status_code == 403 and n_rows(store) == 0
    r = client.post("/labels", data={**form, "csrf": viewer.csrf, "value": "high"}, follow_redirects=False)
    assert r.status_code == 400 and "value: not a number" in r.text and n_rows(store) == 0
    r = client.post("/labels", data={**form, "csrf": viewer.csrf, "value": "7"}, follow_redirects=False)
    assert r.status_code == 400 and "factuality takes values in" in r.text and n_rows(store) == 0
    r = client.post(
        "/labels",
        data={**form, "csrf": viewer.csrf, "kind": "relevance", "doc_id": "d4", "value": "9"},
        follow_redirects=False,
    )
    assert r.status_code == 400 and n_rows(store) == 0
    r = client.post("/labels", data={**form, "csrf": viewer.csrf}, follow_redirects=False)
    assert r.status_code == 303 and n_rows(store) == 1
    r = client.post("/labels", data={**form, "csrf": viewer.csrf, "value": "1"}, follow_redirects=False)
    assert r.status_code == 409 and n_rows(store) == 1
    assert 'id="theirs">0.5000' in r.text and 'id="yours">1.0000' in r.text
    page = client.get(f"/runs/{run_id}/query?id=q00001").text
    assert 'labelled <span class="current">0.5000</span> by <bdi>ann (browse)</bdi>' in page


def test_queue_is_seeded_and_moves_on(store: Store) -> None:
    run_id = add_run(store, "a", 10)
    client, viewer = _client(store)
    run = store.get_run(run_id)
    answered = [q.query_id for q in run.per_query if "factuality" in q.metrics]
    order = queue_order(answered, 0)
    assert order == queue_order(answered, 0) != queue_order(answered, 1)
    r = client.get(f"/runs/{run_id}/queue?metric=factuality", follow_redirects=False)
    assert (
        r.status_code == 303
        and f"id={order[0]}" in r.headers["location"]
        and "queue=1" in r.headers["location"]
    )
    page = client.get(r.headers["location"]).text
    assert 'name="source" value="queue"' in page
    form = {
        "csrf": viewer.csrf,
        "kind": "answer",
        "run_id": run_id,
        "query_id": order[0],
        "metric": "factuality",
        "version": "0",
        "value": "1",
        "source": "queue",
    }
    r = client.post("/labels", data=form, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].endswith("/queue?metric=factuality")
    r = client.get(r.headers["location"], follow_redirects=False)
    assert f"id={order[1]}" in r.headers["location"]
    assert [lab.source for lab in all_labels(store.engine, run_id=run_id)] == ["queue"]


def test_labels_export_import_cli(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    with open_store(db) as store:
        a = add_run(store, "a", 6)
        run = store.get_run(a)
        q1 = run.per_query[1]
        save_label(
            store.engine,
            LabelItem.answer(a, q1.query_id, "factuality", q1.answer),
            1.0,
            annotator="p",
            source="queue",
            expected_version=0,
        )
        save_label(
            store.engine,
            LabelItem.relevance(run.dataset_hash or "", "q00001", "d3"),
            2,
            annotator="p",
            source="browse",
            expected_version=0,
        )
    out_json, out_qrels = tmp_path / "labels.json", tmp_path / "labels.qrels"
    assert ragmeter("labels", "export", "--db", db, "-o", str(out_json)).returncode == 0
    assert ragmeter("labels", "export", "--db", db, "-o", str(out_qrels), "--format", "qrels").returncode == 0
    assert out_qrels.read_text() == "q00001 0 d3 2\n"
    exported = json.loads(out_json.read_text())
    assert {r["kind"] for r in exported} == {"answer", "relevance"}
    # import into a second store holding the same run: round trip
    db2 = str(tmp_path / "cli2.db")
    sqlite3.connect(db).backup(sqlite3.connect(db2))
    sqlite3.connect(db2).execute("delete from labels").connection.commit()
    proc = ragmeter("labels", "import", "--db", db2, str(out_json))
    assert proc.returncode == 0, proc.stderr
    proc = ragmeter("labels", "import", "--db", db2, str(out_qrels), "--format", "qrels", "--run", a)
    assert proc.returncode == 0, proc.stderr
    with open_store(db2) as s2:
        assert len(all_labels(s2.engine)) == 2 and len(all_labels(s2.engine, history=True)) == 3
        before = len(all_labels(s2.engine, history=True))
    # bad files: one line, exit 2, nothing stored
    bad_qrels = tmp_path / "bad.qrels"
    bad_qrels.write_text("q00001 0 d1 1\nq99999 0 d1 1\n")
    one_line_exit_2(
        ragmeter("labels", "import", "--db", db2, str(bad_qrels), "--format", "qrels", "--run", a),
        "bad.qrels:2",
        "unknown query id",
    )
    bad_qrels.write_text("q00001 0 d1 1\nq00002 0 d1 7\n")
    one_line_exit_2(
        ragmeter("labels", "import", "--db", db2, str(bad_qrels), "--format", "qrels", "--run", a),
        "bad.qrels:2",
        "0..3",
    )
    bad_json = tmp_path / "bad.json"
    bad_json.write_text(json.dumps([exported[0], {**exported[0], "value": "lots"}]))
    one_line_exit_2(
        ragmeter("labels", "import", "--db", db2, str(bad_json)), "label 2: value", "not a number"
    )
    bad_json.write_text(json.dumps([{**exported[0], "run_id": "nope"}]))
    one_line_exit_2(ragmeter("labels", "import", "--db", db2, str(bad_json)), "unknown run id")
    with open_store(db2) as s2:
        assert len(all_labels(s2.engine, history=True)) == before


def test_judges_validate_run_cli(tmp_path: Path) -> None:
    db = str(tmp_path / "v.db")
    with open_store(db) as store:
        a = add_run(store, "a", 8)
        run = store.get_run(a)
        for q in run.per_query[:5]:
            save_label(
                store.engine,
                LabelItem.answer(a, q.query_id, "factuality", q.answer),
                1.0,
                annotator="p",
                source="browse",
                expected_version=0,
            )
    proc = ragmeter(
        "judges", "validate", "--db", db, "--run", a, "--metric", "factuality", "--format", "json"
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["n_items"] == 5 and {i["id"] for i in report["items"]} == {
        q.query_id for q in run.per_query[:5]
    }
    one_line_exit_2(
        ragmeter("judges", "validate", "--db", db, "--run", a, "--metric", "relevance"), "no labels"
    )


def test_agreement_reads_store_relevance_labels(tmp_path: Path) -> None:
    """`judges agreement --store-labels RUN`: the human side is the store's relevance labels (winning over
    --qrels on the same pair), scored the same as a qrels file holding those grades."""
    from ragmeter.ir import Qrels, Run
    from ragmeter.validity.human_labels import human_qrels, store_qrels

    db = str(tmp_path / "agree.db")
    with open_store(db) as store:
        run_id = add_run(store, "a", 3)
        ds = store.get_run(run_id, with_queries=False).dataset_hash or ""
        for qid, doc, grade in (
            ("q00000", "a", 1),
            ("q00001", "a", 1),
            ("q00002", "b", 1),
            ("q00001", "b", 0),
        ):
            save_label(
                store.engine,
                LabelItem.relevance(ds, qid, doc),
                grade,
                annotator="p",
                source="browse",
                expected_version=0,
            )
        labels = store_qrels(store, run_id)
    Qrels.from_dict({"q00001": {"b": 1, "c": 1}}).to_trec(tmp_path / "file.qrels")
    merged = human_qrels(str(tmp_path / "file.qrels"), labels).to_dict()
    assert merged["q00001"] == {
        "a": 1.0,
        "b": 0.0,
        "c": 1.0,
    }  # the store's 0 wins over the file's 1 on (q00001, b)
    Qrels.from_dict(labels).to_trec(tmp_path / "h.qrels")
    Qrels.from_dict({"q00000": {"a": 2}, "q00001": {"b": 3}, "q00002": {"b": 1}}).to_trec(
        tmp_path / "l.qrels"
    )
    paths = []
    for name, run in (
        ("x", {"q00000": {"a": 1.0}, "q00001": {"a": 1.0, "b": 0.5}, "q00002": {"b": 1.0}}),
        ("y", {"q00000": {"a": 1.0}, "q00001": {"b": 1.0}, "q00002": {"a": 1.0, "b": 0.2}}),
    ):
        Run.from_dict(run).to_trec(tmp_path / name)
        paths.append(str(tmp_path / name))
    common = ["--llm-qrels", str(tmp_path / "l.qrels"), "--runs", *paths, "--llm-only", "--format", "json"]
    from_store = ragmeter("judges", "agreement", "--db", db, "--store-labels", run_id, *common)
    from_file = ragmeter("judges", "agreement", "--qrels", str(tmp_path / "h.qrels"), *common)
    assert from_store.returncode == 0, from_store.stderr
    a, b = json.loads(from_store.stdout), json.loads(from_file.stdout)
    assert a["n_pairs"] == b["n_pairs"] == 3 and a["runs"] == b["runs"] and a["kappa"] == b["kappa"]
    one_line_exit_2(ragmeter("judges", "agreement", *common), "--store-labels")


def test_runs_show_recomputes_ppi_from_queue_labels(tmp_path: Path) -> None:
    db = str(tmp_path / "show.db")
    with open_store(db) as store:
        run_id = add_run(store, "a", 10)
        run = store.get_run(run_id)
        judged = [q for q in run.per_query if q.metrics["factuality"].value is not None]
        for q in judged[:3]:
            item = LabelItem.answer(run_id, q.query_id, "factuality", q.answer)
            save_label(store.engine, item, 1.0, annotator="p", source="queue", expected_version=0)
    before = json.loads(ragmeter("runs", "show", run_id, "--db", db, "--format", "json").stdout)
    assert before["ppi"]["factuality"]["n_labeled"] == 3
    assert "PPI recomputed from 3 queue label(s) in the store" in before["notes"]
