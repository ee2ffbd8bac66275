"""A replay names its parent and intervention (record, `runs list`, `runs show`, the viewer's label), and
`ragmeter run --resume REPLAY` completes an interrupted replay from its parent's stored outputs."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from diagnose_fakes import CASES, dataset

from ragmeter.models import EvalConfig
from ragmeter.run import run_evaluation


def test_a_replay_is_named_and_resumed(ragmeter_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from sqlalchemy import delete

    from ragmeter.diagnose.attribution import adiagnose
    from ragmeter.records import RunRecord
    from ragmeter.store import open_store
    from ragmeter.store.schema import MetricValueRow, QueryResultRow
    from ragmeter.view.data import system_of

    path = tmp_path / "classes.json"
    path.write_text(dataset().model_dump_json())
    db = f"sqlite:///{tmp_path / 'r.db'}"
    config = EvalConfig(
        dataset=str(path),
        retrieval_top_k=[3],
        metrics=["exact_match"],
        extra={"semantic": False, "context_k": 2},
    )
    run = run_evaluation(str(path), "diagnose_fakes:ScriptedSystem", config, store=db, progress=False)
    with open_store(db) as store:
        out = asyncio.run(adiagnose(run.run_id or "", store=store, n_resamples=100))
        replay_id = out["replays"]["oracle-context"]
        whole = store.get_run(replay_id)
        record = RunRecord.model_validate(whole.record)
        assert record.replay is not None
        assert (record.replay.parent, record.replay.intervention) == (run.run_id, "oracle-context")
        label = f"oracle-context replay of run {run.run_id}"
        assert whole.system_label() == label and system_of(whole) == label
        # interrupted: two queries never stored, the run marked failed
        gone = ["q_nr", "q_ok"]
        with store.engine.begin() as conn:
            for table in (MetricValueRow, QueryResultRow):
                conn.execute(delete(table).where(table.run_id == replay_id, table.query_id.in_(gone)))
        store.fail_run(replay_id, "interrupted")

    code, text = ragmeter_cli("runs", "list", "--db", db)
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(f"│ {replay_id}"))
    assert code == 0 and "oracle-context replay of run" in lines[at], text
    assert (run.run_id or "") in lines[at] + lines[at + 1]  # the table wraps the parent's id
    code, text = ragmeter_cli("run", "--resume", replay_id, "--db", db, "--no-progress")
    assert code == 0, text
    with open_store(db) as store:
        resumed = store.get_run(replay_id)
    assert resumed.status == "completed" and {r.query_id for r in resumed.per_query} == set(CASES)
    by_id = {r.query_id: r for r in resumed.per_query}
    before = {r.query_id: r for r in whole.per_query}
    for q in gone:  # the oracle contexts again, answered through the parent's rebuilt system
        assert [d.doc_id for d in by_id[q].contexts or []] == [d.doc_id for d in before[q].contexts or []]
        assert [d.doc_id for d in by_id[q].contexts or []] == CASES[q][0]
        assert by_id[q].answer == before[q].answer


def test_resuming_a_run_that_is_no_replay_is_the_ordinary_resume(tmp_path: Path) -> None:
    from ragmeter.diagnose.resume import aresume_replay
    from ragmeter.errors import InputError
    from ragmeter.store import open_store

    path = tmp_path / "classes.json"
    path.write_text(dataset().model_dump_json())
    db = f"sqlite:///{tmp_path / 'n.db'}"
    config = EvalConfig(
        dataset=str(path), retrieval_top_k=[3], metrics=["exact_match"], extra={"semantic": False}
    )
    run = run_evaluation(str(path), "diagnose_fakes:ScriptedSystem", config, store=db, progress=False)
    with open_store(db) as store, pytest.raises(InputError, match="not a diagnose replay"):
        asyncio.run(aresume_replay(run.run_id or "", store=store))
