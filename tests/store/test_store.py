from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from ragmeter.errors import InputError
from ragmeter.models import Document, EvalConfig, MetricResult, MetricSummary, QueryEvalResult, RetrievedDoc
from ragmeter.store import ChunkRecord, DuplicateQueryError, Store, open_store
from ragmeter.store.api import utcnow

TABLES = {
    "collections",
    "documents",
    "chunks",
    "test_cases",
    "test_case_chunks",
    "runs",
    "query_results",
    "metric_values",
}


def _result(qid: str, value: float, status: str = "ok") -> QueryEvalResult:
    return QueryEvalResult(
        query_id=qid,
        question=f"question {qid}?",
        status=status,  # type: ignore[arg-type]
        error=None if status == "ok" else "boom",
        retrieved=[RetrievedDoc(doc_id="d1", score=1.5, rank=1, text="t")],
        answer="an answer",
        metrics={"token_f1": MetricResult(name="token_f1", value=value)},
        latency_ms={"retrieve": 1.0, "total": 2.5},
    )


def head_revision() -> str | None:
    """The newest revision in migrations/versions (others add revisions: not a fixed string)."""
    from alembic.script import ScriptDirectory

    from ragmeter.store.engine import alembic_config

    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def test_open_runs_migrations_and_is_idempotent(db_url: str) -> None:
    from sqlalchemy import inspect, text

    store = open_store(db_url)
    assert set(inspect(store.engine).get_table_names()) >= TABLES
    with store.engine.connect() as conn:
        version = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    assert version == head_revision() and version is not None and version >= "0002"
    store.close()
    again = open_store(db_url)  # a second open finds the schema current and changes nothing
    with again.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM alembic_version")).scalar() == 1
    again.close()


def test_default_store_is_sqlite_wal_in_working_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sqlalchemy import text

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RAGMETER_DB", raising=False)
    with open_store() as store:
        assert (tmp_path / ".ragmeter" / "ragmeter.db").is_file()
        with store.engine.connect() as conn:
            assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
    monkeypatch.setenv("RAGMETER_DB", str(tmp_path / "elsewhere.db"))
    with open_store() as store:
        assert store.url.endswith("elsewhere.db")
    assert (tmp_path / "elsewhere.db").is_file()


def test_bad_url_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--db"):
        open_store("nosuchdb://x/y")


def test_run_lifecycle_round_trip(db_url: str) -> None:
    store = open_store(db_url)
    config = EvalConfig(dataset="demo", retrieval_top_k=[1, 5], seed=7)
    run = store.create_run(config, name="r", dataset_name="demo", dataset_hash="abc", versions={"x": "1"})
    assert run.status == "running" and run.run_id
    rid = run.run_id
    store.add_query_result(rid, _result("q1", 0.5), position=0)
    store.add_query_result(rid, _result("q2", 0.0, status="failed"), position=1)

    # each row is visible to another connection the moment it is written
    other = open_store(db_url)
    assert other.finished_query_ids(rid) == {"q1", "q2"}
    assert other.get_run(rid).status == "running"

    with pytest.raises(DuplicateQueryError):
        store.add_query_result(rid, _result("q1", 0.9), position=0)

    agg = {"token_f1": MetricSummary(mean=0.5, std=0.0, n=1, n_null=0)}
    store.finish_run(
        rid, status="completed", aggregate=agg, n_queries=2, n_failed=1, summary={"notes": ["n"]}
    )
    got = other.get_run(rid[:12])  # a unique prefix is enough
    assert got.status == "completed" and got.completed_at is not None and got.started_at is not None
    assert got.config == config and got.dataset_hash == "abc" and got.versions == {"x": "1"}
    assert got.aggregate == agg and got.n_failed == 1 and got.notes == ["n"]
    assert [q.query_id for q in got.per_query] == ["q1", "q2"]
    assert got.per_query[0] == _result("q1", 0.5)
    assert got.per_query[1].status == "failed" and got.per_query[1].error == "boom"

    # run-level metrics added later are rows of their own; the outputs row is never rewritten
    before = _rows(store, "SELECT result FROM query_results WHERE query_id = 'q1'")
    assert store.put_metric_values(rid, {"q1": {"ndcg@10": MetricResult(name="ndcg@10", value=0.25)}}) == 1
    assert store.get_run(rid).per_query[0].metrics["ndcg@10"].value == 0.25
    assert _rows(store, "SELECT result FROM query_results WHERE query_id = 'q1'") == before
    # a recomputed value replaces its row: each (query, metric) is stored once
    store.put_metric_values(rid, {"q1": {"ndcg@10": MetricResult(name="ndcg@10", value=0.5)}})
    assert store.get_run(rid).per_query[0].metrics["ndcg@10"].value == 0.5
    names = _rows(
        store, f"SELECT query_id, name FROM metric_values WHERE run_id = '{rid}' ORDER BY query_id, name"
    )
    assert names == [("q1", "ndcg@10"), ("q1", "token_f1"), ("q2", "token_f1")]

    assert [r.run_id for r in store.list_runs()] == [rid]
    assert store.delete_failed_results(rid) == 1
    assert store.finished_query_ids(rid) == {"q1"}
    assert (
        _rows(store, f"SELECT query_id FROM metric_values WHERE run_id = '{rid}' AND query_id = 'q2'") == []
    )
    store.delete_run(rid)
    assert store.list_runs() == []
    assert _rows(store, "SELECT count(*) FROM metric_values") == [(0,)]
    with pytest.raises(InputError, match="no run"):
        store.get_run(rid)
    store.close()
    other.close()


def _rows(store: Store, sql: str) -> list[tuple[object, ...]]:
    from sqlalchemy import text

    with store.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(sql))]


def test_a_0001_store_is_migrated_and_its_runs_read_as_before(tmp_path: Path) -> None:
    """A store written by 0.1 (metric values inside each outputs row, no record) upgrades to 0002 on open."""
    from store_db import old_store

    url = f"sqlite:///{tmp_path / 'old.db'}"
    old_store(url, "0001", _result("q1", 0.75).model_dump(mode="json"))
    with open_store(url) as store:
        run = store.get_run("old")
        assert run.record is None and run.per_query[0].metrics["token_f1"].value == 0.75
        store.put_metric_values("old", {"q1": {"ndcg@10": MetricResult(name="ndcg@10", value=1.0)}})
        assert set(store.get_run("old").per_query[0].metrics) == {"token_f1", "ndcg@10"}


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_running_runs_are_marked_failed_on_open(db_url: str) -> None:
    from sqlalchemy import update

    from ragmeter.store.schema import RunRow

    store = open_store(db_url)
    mine = store.create_run(EvalConfig()).run_id
    dead = store.create_run(EvalConfig()).run_id
    remote_old = store.create_run(EvalConfig()).run_id
    remote_fresh = store.create_run(EvalConfig()).run_id
    assert mine and dead and remote_old and remote_fresh
    with store.engine.begin() as conn:
        conn.execute(update(RunRow).where(RunRow.id == dead).values(pid=_dead_pid()))
        conn.execute(
            update(RunRow)
            .where(RunRow.id == remote_old)
            .values(host="another-host", heartbeat_at=utcnow() - timedelta(hours=1))
        )
        conn.execute(update(RunRow).where(RunRow.id == remote_fresh).values(host="another-host"))

    reopened = open_store(db_url)
    status = {r.run_id: r for r in reopened.list_runs()}
    assert status[mine].status == "running"  # this very process is alive
    assert status[remote_fresh].status == "running"
    assert status[dead].status == "failed"
    assert "is gone" in (status[dead].error or "") and f"--resume {dead}" in (status[dead].error or "")
    assert status[remote_old].status == "failed" and "no heartbeat" in (status[remote_old].error or "")

    # a failed run can be claimed again for resuming; a live one owned by another process cannot
    assert reopened.claim_run(dead).status == "running"
    with store.engine.begin() as conn:
        conn.execute(update(RunRow).where(RunRow.id == remote_fresh).values(pid=os.getppid()))
    with pytest.raises(InputError, match="still running"):
        reopened.claim_run(remote_fresh)
    store.close()
    reopened.close()


def test_collections_chunks_and_test_cases(db_url: str) -> None:
    store = open_store(db_url)
    docs = [
        (
            Document(doc_id="a", text="Paris is the capital of France. It is big.", title="A"),
            [ChunkRecord("a#0", "Paris is the capital of France.", 0), ChunkRecord("a#1", "It is big.", 1)],
        ),
        (Document(doc_id="b", text="Berlin."), [ChunkRecord("b#0", "Berlin.", 0)]),
    ]
    assert store.add_documents("geo", docs, source="geo.jsonl") == (2, 3)
    chunks = store.chunks("geo")
    assert [c.doc_id for c in chunks] == ["a#0", "a#1", "b#0"]
    assert chunks[0].metadata["document"] == "a" and chunks[0].title == "A"

    cid = store.add_test_case(
        "geo",
        "What is the capital of France?",
        case_id="t1",
        ground_truth_answer="Paris",
        relevant_chunks=["a#0"],
    )
    assert cid == "t1"
    store.add_test_case("geo", "Where is Berlin?", case_id="t2", source="synthetic")
    with pytest.raises(InputError, match="already exists"):
        store.add_test_case("geo", "dup", case_id="t1")
    with pytest.raises(InputError, match="no chunk 'zz'"):
        store.add_test_case("geo", "q", relevant_chunks=["zz"])
    with pytest.raises(InputError, match="manual or synthetic"):
        store.add_test_case("geo", "q", source="made-up")
    with pytest.raises(InputError, match="no collection"):
        store.add_test_case("nope", "q")

    q = store.set_ground_truth("geo", "t2", answer="Germany", add_chunks=["b#0", "a#1"])
    assert q.ground_truth_answer == "Germany" and q.relevant_doc_ids == ["a#1", "b#0"]
    q = store.set_ground_truth("geo", "t2", relevant_chunks=["b#0"])
    assert q.relevant_doc_ids == ["b#0"]

    cases = store.test_cases("geo")
    assert [(c.query_id, c.relevant_doc_ids, c.metadata["source"]) for c in cases] == [
        ("t1", ["a#0"], "manual"),
        ("t2", ["b#0"], "synthetic"),
    ]
    ds = store.dataset("geo")
    assert ds.name == "store:geo" and len(ds.queries) == 2 and ds.corpus and len(ds.corpus) == 3

    # re-ingesting a document replaces it and its chunks; its test-case links go with the old chunks
    store.add_documents("geo", [(Document(doc_id="b", text="Berlin!"), [ChunkRecord("b#0", "Berlin!", 0)])])
    assert [c.text for c in store.chunks("geo") if c.doc_id == "b#0"] == ["Berlin!"]
    assert store.list_collections()[0] | {"created_at": None} == {
        "name": "geo",
        "created_at": None,
        "documents": 2,
        "chunks": 3,
        "test_cases": 2,
    }
    store.close()


def test_processes_opening_one_fresh_sqlite_file_at_once_all_succeed(tmp_path: Path) -> None:
    """Six processes create the same new store at the same moment: one migrates, the others wait for it
    (before: 'table collections already exists' in all but one)."""
    import subprocess
    import sys

    url = f"sqlite:///{tmp_path / 'race.db'}"
    code = (
        "import sys, time\n"
        "from ragmeter.store import open_store\n"
        "t = float(sys.argv[2])\n"
        "time.sleep(max(0.0, t - time.time()))\n"
        "with open_store(sys.argv[1]) as s:\n"
        "    print(len(s.list_runs()))\n"
    )
    import time

    start = str(time.time() + 3.0)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, url, start], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(6)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, [o[1].decode()[-300:] for o in outs]
    assert all(o[0].strip() == b"0" for o in outs)
