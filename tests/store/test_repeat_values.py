"""Metric values with a repeat index (migration 0005), on SQLite and PostgreSQL: a store of revision 0004
upgrades and its values read as repeat 0; a run judged in repeats stores one row per repeat, reads back the
mean as the metric's value (also in the viewer's SQL-sorted pages) and refuses a repeat stored twice."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import IntegrityError

from ragmeter.models import EvalConfig, MetricResult, QueryEvalResult, RetrievedDoc
from ragmeter.store import DuplicateQueryError, open_store


def _result(qid: str, grades: list[float | None]) -> QueryEvalResult:
    repeats = [
        MetricResult(
            name="retrieval_grade", value=g, error=None if g is not None else "unparseable", version="v1"
        )
        for g in grades
    ]
    from ragmeter.models import mean_of_repeats

    return QueryEvalResult(
        query_id=qid,
        question=f"question {qid}?",
        retrieved=[RetrievedDoc(doc_id="d1", score=1.0, rank=1, text="t")],
        metrics={
            "retrieval_grade": mean_of_repeats("retrieval_grade", repeats),
            "hit@1": MetricResult(name="hit@1", value=1.0),
        },
        repeats={"retrieval_grade": repeats},
    )


def test_a_0004_store_upgrades_and_its_values_read_as_repeat_0(db_url: str) -> None:
    from sqlalchemy import text
    from store_db import old_store

    plain = QueryEvalResult(query_id="q1", question="q?").model_dump(mode="json")
    old_store(
        db_url,
        "0004",
        plain,
        "INSERT INTO metric_values (run_id, query_id, name, value, details) "
        "VALUES ('old', 'q1', 'retrieval_grade', 7.0, '{}')",
    )
    with open_store(db_url) as store:
        with store.engine.connect() as conn:
            assert conn.execute(text("SELECT repeat FROM metric_values")).scalars().all() == [0]
        run = store.get_run("old")
        q = run.per_query[0]
        assert q.metrics["retrieval_grade"].value == 7.0 and q.repeats == {} and run.stability == {}
        # the old unique key is gone, the new one holds: a second value of repeat 0 is refused
        with pytest.raises(IntegrityError), store.engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO metric_values (run_id, query_id, name, repeat, value, details) "
                    "VALUES ('old', 'q1', 'retrieval_grade', 0, 8.0, '{}')"
                )
            )
        with store.engine.begin() as conn:  # ... and repeat 1 of the same value is a row of its own
            conn.execute(
                text(
                    "INSERT INTO metric_values (run_id, query_id, name, repeat, value, details) "
                    "VALUES ('old', 'q1', 'retrieval_grade', 1, 8.0, '{}')"
                )
            )
        again = store.get_run("old").per_query[0]
        assert again.metrics["retrieval_grade"].value == 7.5
        assert [v.value for v in again.repeats["retrieval_grade"]] == [7.0, 8.0]


def test_repeats_are_rows_and_the_value_is_their_mean_everywhere(db_url: str) -> None:
    from sqlalchemy import text

    from ragmeter.store.pages import QueryFilter, query_page

    with open_store(db_url) as store:
        run = store.create_run(EvalConfig(), record={"repeat": 3})  # what the pages look at
        assert run.run_id is not None
        rid = run.run_id
        grades = {"a": [9.0, 1.0, 2.0], "b": [5.0, 5.0, 5.0], "c": [None, 8.0, None], "d": [None, None, None]}
        for i, (qid, g) in enumerate(grades.items()):
            store.add_query_result(rid, _result(qid, g), position=i)
        with pytest.raises(DuplicateQueryError):
            store.add_query_result(rid, _result("a", [1.0, 1.0, 1.0]))
        with store.engine.connect() as conn:
            rows = conn.execute(
                text("SELECT query_id, repeat FROM metric_values WHERE name = 'retrieval_grade'")
            ).all()
        assert sorted(rows) == sorted((q, r) for q in grades for r in range(3))
        back = {r.query_id: r for r in store.query_results(rid)}
        means = {q: back[q].metrics["retrieval_grade"].value for q in grades}
        assert means == {"a": 4.0, "b": 5.0, "c": 8.0, "d": None}
        assert back["d"].metrics["retrieval_grade"].error == "unparseable"
        assert back["a"].metrics["retrieval_grade"].details["repeats"]["sd"] == pytest.approx(
            4.358898943540674
        )
        assert [v.value for v in back["c"].repeats["retrieval_grade"]] == [None, 8.0, None]
        assert "hit@1" not in back["a"].repeats and back["a"].metrics["hit@1"].value == 1.0
        # the viewer sorts and filters on the mean, in SQL
        page = query_page(store.engine, rid, QueryFilter(sort="retrieval_grade"))
        assert [r.query_id for r in page.rows] == ["a", "b", "c", "d"]
        assert page.rows[0].metrics["retrieval_grade"].value == 4.0
        page = query_page(
            store.engine, rid, QueryFilter(sort="retrieval_grade", metric="retrieval_grade", low=4.5)
        )
        assert [r.query_id for r in page.rows] == ["b", "c"] and page.total == 2
        page = query_page(store.engine, rid, QueryFilter(metric="retrieval_grade", null_only=True))
        assert [r.query_id for r in page.rows] == ["d"]
        # a rescore replaces every repeat of the values it recomputes
        store.put_metric_values(
            rid, {"a": {"retrieval_grade": MetricResult(name="retrieval_grade", value=3.0)}}
        )
        a = next(r for r in store.query_results(rid) if r.query_id == "a")
        assert a.metrics["retrieval_grade"].value == 3.0 and "retrieval_grade" not in a.repeats


def test_0005_downgrades_to_one_value_per_metric(db_url: str) -> None:
    from alembic import command
    from sqlalchemy import inspect, text

    with open_store(db_url) as store:
        run = store.create_run(EvalConfig(), record={"repeat": 2})
        store.add_query_result(run.run_id or "", _result("a", [3.0, 5.0]))
        with store.engine.begin() as conn:
            from ragmeter.store.engine import alembic_config

            command.downgrade(alembic_config(conn), "0004")
        with store.engine.connect() as conn:
            assert "repeat" not in {c["name"] for c in inspect(conn).get_columns("metric_values")}
            rows = conn.execute(text("SELECT name, value FROM metric_values ORDER BY name")).all()
        assert [tuple(r) for r in rows] == [("hit@1", 1.0), ("retrieval_grade", 3.0)]  # repeat 0 kept
