"""The run record rebuilds the run: a variant with non-default pipeline options, SIGKILLed in a real child
process and resumed with `ragmeter run --resume`, equals an uninterrupted run of that variant."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from runner_fakes import KeywordSystem, make_dataset

from ragmeter.models import EvalConfig, EvalRunResult
from ragmeter.store import open_store

pytest.importorskip("aiohttp")
pytest.importorskip("bm25s")

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"
OPTIONS = {"chunk_size": 4, "chunk_overlap": 1, "bm25_k1": 0.9, "bm25_b": 0.4}


def _env(tmp_path: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    env["RAGMETER_CACHE_DIR"] = str(tmp_path / "cache")  # the pipeline's indexes
    env.pop("RAGMETER_DB", None)
    return env


def _spawn(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    # output to files, not pipes: nobody reads a pipe while the child runs, and a full one blocks it
    n = len(list(tmp_path.glob("out-*")))
    out, err = (tmp_path / f"out-{n}").open("w"), (tmp_path / f"err-{n}").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragmeter", *args],
        cwd=tmp_path,
        env=_env(tmp_path),
        stdout=out,
        stderr=err,
        text=True,
    )
    proc.args = [out.name, err.name]
    return proc


def _outputs(proc: subprocess.Popen[str]) -> tuple[str, str]:
    out, err = proc.args  # type: ignore[misc]
    return Path(out).read_text(), Path(err).read_text()


async def _finish(proc: subprocess.Popen[str], timeout: float = 240) -> tuple[int, str, str]:
    """Wait for a child while the scripted server (in this event loop) keeps answering it."""
    deadline = time.monotonic() + timeout
    while proc.poll() is None:
        assert time.monotonic() < deadline, "child process timed out"
        await asyncio.sleep(0.05)
    return proc.returncode, *_outputs(proc)


async def _kill_after(db: str, proc: subprocess.Popen[str], at_least: int) -> str:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        assert proc.poll() is None, _outputs(proc)
        if Path(db.removeprefix("sqlite:///")).exists():
            with open_store(db, sweep=False) as store:
                runs = store.list_runs()
                if runs and runs[0].run_id and len(store.finished_query_ids(runs[0].run_id)) >= at_least:
                    os.kill(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=30)
                    return runs[0].run_id
        await asyncio.sleep(0.05)
    raise AssertionError("the child run made no progress")


def _generator(req: Any) -> Any:
    from ragmeter.llm.scripted import Step

    m = re.search(r"\[1\] (\S+)", req.user)
    return Step(text=f"{m.group(1) if m else 'unknown'} [1]")


def _per_query(run: EvalRunResult) -> dict[str, Any]:
    return {
        r.query_id: (
            r.status,
            [(d.doc_id, d.score, d.rank, d.text) for d in r.retrieved],
            r.answer,
            {n: (m.value, m.error) for n, m in sorted(r.metrics.items())},
        )
        for r in run.per_query
    }


def _launch(how: str, tmp_path: Path, db: str, url: str) -> subprocess.Popen[str]:
    spec = f"openai-compatible:gen@{url}"
    if how == "experiment":
        (tmp_path / "exp.yaml").write_text(
            f"name: kill\ndataset: capitals.json\nseed: 7\nk: [2, 4]\nbaseline: false\ngenerator: '{spec}'\n"
            f"columns: [ndcg@4, recall@2, token_f1]\nconcurrency: 2\npipeline: {json.dumps(OPTIONS)}\nvariants:\n  - name: small-chunks\n    mode: fulltext\n"
        )
        return _spawn(tmp_path, "experiment", "exp.yaml", "--db", db)
    (tmp_path / "chunks.yaml").write_text(f"extra:\n  system_options: {json.dumps(OPTIONS)}\n")
    return _spawn(
        tmp_path,
        "run",
        "--dataset",
        "capitals.json",
        "--system",
        "builtin",
        "--mode",
        "fulltext",
        "--top-k",
        "2,4",
        "--generator",
        spec,
        "--concurrency",
        "2",
        "--config",
        "chunks.yaml",
        "--no-progress",
        "--db",
        db,
    )


@pytest.mark.parametrize("how", ["experiment", "run"])
async def test_killed_variant_resumes_with_exactly_its_system(
    how: str, tmp_path: Path, scripted: Any
) -> None:
    (tmp_path / "capitals.json").write_text(make_dataset().model_dump_json())
    server = await scripted(_generator, latency=0.3)
    killed_db, whole_db = f"sqlite:///{tmp_path / 'killed.db'}", f"sqlite:///{tmp_path / 'whole.db'}"

    run_id = await _kill_after(killed_db, _launch(how, tmp_path, killed_db, server.url), at_least=3)
    with open_store(killed_db) as store:  # the sweep marks it failed
        dead = store.get_run(run_id)
    assert dead.status == "failed" and 3 <= len(dead.per_query) < 12
    record = dead.record or {}
    assert record["system"]["kind"] == "builtin" and record["system"]["mode"] == "fulltext"
    assert {k: record["system"]["options"][k] for k in OPTIONS} == OPTIONS and record["cutoffs"] == [2, 4]

    code, _, err = await _finish(
        _spawn(tmp_path, "run", "--resume", run_id, "--db", killed_db, "--no-progress", "--format", "json")
    )
    assert code == 0, err[-3000:]
    code, _, err = await _finish(_launch(how, tmp_path, whole_db, server.url))
    assert code == 0, err[-3000:]

    with open_store(killed_db) as a, open_store(whole_db) as b:
        resumed, whole = a.get_run(run_id), b.get_run(b.list_runs()[0].run_id or "")
    assert resumed.status == "completed" and len(resumed.per_query) == 12
    assert _per_query(resumed) == _per_query(whole)  # retrieved lists, answers and every metric value
    assert resumed.per_query[0].retrieved[0].doc_id.startswith("d-")
    assert max(len(r.retrieved) for r in resumed.per_query) == 4  # the recorded cut-offs, not 1,3,5,10
    # generator usage of every query, across the kill: 12 calls of 11 + 7 tokens
    usage = resumed.usage or {}
    assert usage["generator"]["calls"] == 12 and usage["generator"]["input_tokens"] == 12 * 11
    assert usage["generator"]["output_tokens"] == 12 * 7


def test_an_in_process_system_is_refused_on_the_cli_with_one_line(tmp_path: Path) -> None:
    from ragmeter.run import run_evaluation

    db = f"sqlite:///{tmp_path / 'o.db'}"
    ds = make_dataset(4)
    config = EvalConfig(dataset="capitals", retrieval_top_k=[1], extra={"semantic": False})
    run = run_evaluation(ds, KeywordSystem(ds), config, store=db, progress=False)
    assert (run.record or {})["system"]["kind"] == "object"
    proc = subprocess.run(
        [sys.executable, "-m", "ragmeter", "run", "--resume", run.run_id or "", "--db", db],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "runner_fakes.KeywordSystem" in lines[0] and "Python API" in lines[0]
    with open_store(db) as store:
        assert store.get_run(run.run_id or "").status == "completed"
    # through the Python API, the same object resumes (nothing left to evaluate: the run is complete)
    again = run_evaluation(ds, KeywordSystem(ds), None, store=db, resume=run.run_id, progress=False)
    assert again.status == "completed" and len(again.per_query) == 4


def test_a_library_system_is_stored_by_reference_and_resumable(tmp_path: Path) -> None:
    from ragmeter.run import validate
    from ragmeter.systems.demo import DemoFulltext, system_ref

    ds = make_dataset(2)
    config = EvalConfig(dataset="capitals", system=system_ref(DemoFulltext), retrieval_top_k=[1])
    prepared = validate(ds, object.__new__(DemoFulltext), config)
    assert prepared.record.system.kind == "reference"
    assert prepared.record.system.spec == "ragmeter.systems.demo:DemoFulltext"
