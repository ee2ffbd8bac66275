"""Resume after a real SIGKILL / SIGINT of a process in the middle of a run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from runner_fakes import KeywordSystem, SlowKeywordSystem, make_dataset

from ragmeter.models import EvalConfig
from ragmeter.run import run_evaluation
from ragmeter.store import open_store

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"

CHILD = """
import signal, sys
sys.path[:0] = [{here!r}, {src!r}]
from runner_fakes import SlowKeywordSystem, make_dataset
from ragmeter.models import EvalConfig
from ragmeter.run import run_evaluation

# Ctrl-C as in a terminal: pytest started as a background job of a non-interactive shell ignores SIGINT,
# and a child inherits an ignored or blocked SIGINT (it would then run to its end).
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {{signal.SIGINT}})
SlowKeywordSystem.stall_after = {stall_after!r}
ds = make_dataset()
config = EvalConfig(dataset="capitals", concurrency=2, retrieval_top_k=[1, 3], extra={{"semantic": False}})
print("started", flush=True)
run_evaluation(ds, SlowKeywordSystem(ds), config, store={db!r}, progress=False)
"""


def _start_child(db: str, stall_after: int) -> subprocess.Popen[str]:
    """The run of 12 queries in a child process: the first `stall_after` take 0.25 s, the others 60 s."""
    code = CHILD.format(here=str(HERE), src=str(SRC), db=db, stall_after=stall_after)
    return subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _wait_for_rows(db: str, at_least: int, proc: subprocess.Popen[str]) -> tuple[str, int]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        with open_store(db, sweep=False) as store:
            runs = store.list_runs()
            if runs and runs[0].run_id:
                done = len(store.finished_query_ids(runs[0].run_id))
                if done >= at_least:
                    return runs[0].run_id, done
        time.sleep(0.05)
    raise AssertionError("the child run made no progress")


def test_sigkill_mid_run_then_resume_evaluates_each_query_exactly_once(db_url: str) -> None:
    from sqlalchemy import func, select

    from ragmeter.store.schema import QueryResultRow

    proc = _start_child(db_url, stall_after=4)
    try:
        run_id, _ = _wait_for_rows(db_url, 4, proc)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == -signal.SIGKILL

    with open_store(db_url) as store:  # opening sweeps: the killed run is failed, not "running" forever
        dead = store.get_run(run_id)
        done_before = {q.query_id for q in dead.per_query}
    assert dead.status == "failed" and "is gone" in (dead.error or "")
    assert len(done_before) == 4  # the fifth and sixth were in flight, the rest not started

    ds = make_dataset()
    from ragmeter.errors import InputError

    with pytest.raises(InputError, match="fingerprint differs"):  # not the object the run evaluated
        run_evaluation(ds, KeywordSystem(ds), None, store=db_url, resume=run_id, progress=False)
    system = SlowKeywordSystem(ds)
    result = run_evaluation(ds, system, None, store=db_url, resume=run_id, progress=False)
    assert result.run_id == run_id and result.status == "completed"
    assert len(system.calls) == 12 - len(done_before)  # finished queries were skipped
    ids = [r.query_id for r in result.per_query]
    assert sorted(ids) == [q.query_id for q in ds.queries]  # every query, once, in dataset order
    assert ids == [q.query_id for q in ds.queries]
    assert all("ndcg@3" in r.metrics for r in result.per_query if r.query_id != "q03")

    with open_store(db_url) as store:
        stored = store.get_run(run_id)
        with store.engine.connect() as conn:
            n_rows = conn.execute(
                select(func.count()).select_from(QueryResultRow).where(QueryResultRow.run_id == run_id)
            ).scalar()
    assert stored.status == "completed" and stored.error is None and n_rows == 12
    # the resumed run equals a run made in one go
    fresh = run_evaluation(
        ds,
        KeywordSystem(ds),
        EvalConfig.model_validate(stored.config.model_dump()),
        store=False,
        progress=False,
    )
    assert fresh.aggregate.keys() == stored.aggregate.keys()
    for name, summary in fresh.aggregate.items():
        if name.startswith("latency_"):
            continue
        assert stored.aggregate[name].mean == pytest.approx(summary.mean, abs=1e-12), name


def test_ctrl_c_marks_the_run_failed_and_resumable(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'int.db'}"
    proc = _start_child(db, stall_after=2)  # the third query on waits 60 s: only the SIGINT ends the run
    try:
        run_id, _ = _wait_for_rows(db, 2, proc)
        os.kill(proc.pid, signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode != 0 and "KeyboardInterrupt" in stderr, stderr[-2000:]
    with open_store(db, sweep=False) as store:  # no sweep: the process itself recorded why it stopped
        run = store.get_run(run_id)
    assert run.status == "failed" and "interrupted (Ctrl-C" in (run.error or "")
    assert f"--resume {run_id}" in (run.error or "")
    result = run_evaluation(
        make_dataset(), SlowKeywordSystem(make_dataset()), None, store=db, resume=run_id, progress=False
    )
    assert result.status == "completed" and len(result.per_query) == 12


def test_resume_refuses_a_changed_dataset(tmp_path: Path) -> None:
    from ragmeter.errors import InputError

    db = f"sqlite:///{tmp_path / 'c.db'}"
    ds = make_dataset()
    cfg = EvalConfig(dataset="capitals", retrieval_top_k=[1], extra={"semantic": False})
    first = run_evaluation(ds, KeywordSystem(ds), cfg, store=db, progress=False)
    with pytest.raises(InputError, match="dataset changed"):
        run_evaluation(
            make_dataset(5), KeywordSystem(ds), None, store=db, resume=first.run_id, progress=False
        )
