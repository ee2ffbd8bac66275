"""Judge repeats (`run --repeat N`) end to end: a scripted judge over real HTTP, a real SQLite store.

Each judged query is judged N times at the repeat temperature with seed `seed + r`; the store keeps one row
per (query, metric, repeat); the run's value of a query is the mean of its repeats, and the run records each
judge metric's Krippendorff alpha across the repeats, its bootstrap interval and the flip share.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import sqlite3
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from ragmeter.models import Document, EvalConfig, EvalDataset, EvalQuery
from ragmeter.run import arun_evaluation

pytest.importorskip("aiohttp")

HERE = Path(__file__).resolve().parent


def items_dataset(n: int) -> EvalDataset:
    corpus = [Document(doc_id=f"d{i}", text=f"item{i} is a fact") for i in range(n)]
    queries = [
        EvalQuery(query_id=f"q{i:03d}", question=f"what about item{i}?", relevant_doc_ids=[f"d{i}"])
        for i in range(n)
    ]
    return EvalDataset(name="items", queries=queries, corpus=corpus)


class ItemSystem:
    """Retrieves the one document of the item a question names."""

    name = "items"

    async def retrieve(self, question: str, k: int) -> list[tuple[str, float, str]]:
        i = int(re.search(r"item(\d+)", question).group(1))  # type: ignore[union-attr]
        return [(f"d{i}", 1.0, f"item{i} is a fact")]


def item_of(req: object) -> int:
    return int(re.search(r"item(\d+)", getattr(req, "user", "")).group(1))  # type: ignore[union-attr]


def config(url: str, repeat: int, **extra: object) -> EvalConfig:
    """A retrieval-only run of `retrieval_grade`, judged `repeat` times by the judge at `url`."""
    judged = {"use_llm_judge": True, "judge_model": f"openai-compatible:judge@{url}", "repeat": repeat}
    plan = {"retrieval_top_k": [1], "evaluate_generation": False, "metrics": ["retrieval_grade"]}
    return EvalConfig.model_validate(
        {"dataset": "items", **plan, **judged, "extra": {"semantic": False}, **extra}
    )


def grade_rows(db: Path) -> list[tuple[str, int, float | None]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT query_id, repeat, value FROM metric_values WHERE name = 'retrieval_grade'"
        ).fetchall()


async def test_grades_that_vary_by_item_but_not_by_repeat_give_alpha_one(tmp_path: Path) -> None:
    from ragmeter.llm.scripted import ScriptedServer, Step
    from ragmeter.store import open_store

    def responder(req: object) -> Step:
        return Step(text=json.dumps({"reasoning": "r", "grade": item_of(req) % 10 + 1}))

    ds, db = items_dataset(100), tmp_path / "r.db"
    async with ScriptedServer(responder) as server:
        cfg = config(server.url, 3, seed=7)
        result = await arun_evaluation(ds, ItemSystem(), cfg, store=f"sqlite:///{db}", progress=False)
        sent = Counter((r.body.get("temperature"), r.body.get("seed")) for r in server.requests)
    # 100 queries x 3 repeats, each repeat at the default repeat temperature with its own seed
    assert sent == {(0.7, 7): 100, (0.7, 8): 100, (0.7, 9): 100}
    s = result.stability["retrieval_grade"]
    assert s.level == "ordinal"  # the registry's level of measurement of a 1-10 grade
    assert s.alpha == pytest.approx(1.0) and s.alpha_ci95 == pytest.approx((1.0, 1.0))
    assert s.flip_share == 0.0 and s.mean_sd == 0.0 and s.items == 100 and s.repeats == 3
    assert s.threshold == 5.5 and s.threshold_from == "mid-range"
    assert s.temperature == 0.7 and s.seeds == [7, 8, 9]
    q = result.per_query[3]
    assert q.metrics["retrieval_grade"].value == 4.0
    assert [v.details["sampling"]["seed"] for v in q.repeats["retrieval_grade"]] == [7, 8, 9]
    assert [v.details["sampling"]["cache"] for v in q.repeats["retrieval_grade"]] == [True, False, False]
    rows = grade_rows(db)
    assert len(rows) == 300 and len({(qid, r) for qid, r, _ in rows}) == 300
    assert {r for _, r, _ in rows} == {0, 1, 2}
    with open_store(f"sqlite:///{db}") as store:  # what is read back is what the run returned
        back = store.get_run(result.run_id or "")
    assert back.stability == result.stability
    assert back.per_query[3].metrics == result.per_query[3].metrics
    assert back.per_query[3].repeats == result.per_query[3].repeats
    assert back.record is not None and back.record["repeat"] == 3 and back.record["repeat_temperature"] == 0.7


async def test_random_grades_give_alpha_near_zero_and_means_per_query(tmp_path: Path) -> None:
    from ragmeter.llm.scripted import ScriptedServer, Step

    rng = random.Random(3)

    def responder(req: object) -> Step:
        return Step(text=json.dumps({"reasoning": "r", "grade": rng.randint(1, 10)}))

    ds = items_dataset(100)
    async with ScriptedServer(responder) as server:
        cfg = config(server.url, 3, repeat_temperature=1.2)
        result = await arun_evaluation(
            ds, ItemSystem(), cfg, store=f"sqlite:///{tmp_path / 'r.db'}", progress=False, gates={}
        )
        temperatures = {r.body.get("temperature") for r in server.requests}
    assert temperatures == {1.2}
    s = result.stability["retrieval_grade"]
    assert s.alpha is not None and abs(s.alpha) < 0.15
    assert s.alpha_ci95 is not None and s.alpha_ci95[0] < 0.0 < s.alpha_ci95[1]
    assert s.flip_share is not None and s.flip_share > 0.4
    for q in result.per_query:  # each query's value is the mean of its repeats, and its sd is kept
        values = [v.value for v in q.repeats["retrieval_grade"]]
        assert q.metrics["retrieval_grade"].value == pytest.approx(sum(values) / 3)  # type: ignore[arg-type]
        assert q.metrics["retrieval_grade"].details["repeats"]["values"] == values
    mean = sum(q.metrics["retrieval_grade"].value or 0 for q in result.per_query) / 100
    assert result.aggregate["retrieval_grade"].mean == pytest.approx(mean)


async def test_a_gate_on_the_metric_sets_the_flip_threshold(tmp_path: Path) -> None:
    from ragmeter.llm.scripted import ScriptedServer, Step

    def responder(req: object) -> Step:  # item 0: 2 / 3 / 4 by repeat, so the verdict at 3.5 flips
        seed = int(getattr(req, "body", {}).get("seed"))
        grade = 2 + (seed - 42) if item_of(req) == 0 else 9
        return Step(text=json.dumps({"reasoning": "r", "grade": grade}))

    async with ScriptedServer(responder) as server:
        result = await arun_evaluation(
            items_dataset(4),
            ItemSystem(),
            config(server.url, 3),
            store=False,
            progress=False,
            gates={"retrieval_grade": 3.5},
        )
    s = result.stability["retrieval_grade"]
    assert (s.threshold, s.threshold_from, s.flip_share) == (3.5, "gate", 0.25)
    assert result.per_query[0].metrics["retrieval_grade"].details["repeats"]["sd"] == pytest.approx(1.0)


async def test_resume_judges_only_the_repeats_that_were_not_stored(tmp_path: Path) -> None:
    """Rows cut from the SQLite file (as a crash between queries leaves it): the resume judges exactly the
    missing (query, repeat) pairs, and every pair ends up stored once."""
    from ragmeter.llm.scripted import ScriptedServer, Step

    def responder(req: object) -> Step:
        return Step(text=json.dumps({"reasoning": "r", "grade": item_of(req) % 7 + 2}))

    ds, db = items_dataset(20), tmp_path / "r.db"
    async with ScriptedServer(responder) as server:
        first = await arun_evaluation(
            ds, ItemSystem(), config(server.url, 3), store=f"sqlite:///{db}", progress=False
        )
        cut = [f"q{i:03d}" for i in (1, 5, 6, 13, 19)]
        marks = ",".join("?" * len(cut))
        with sqlite3.connect(db) as conn:
            conn.execute(f"DELETE FROM metric_values WHERE query_id IN ({marks})", cut)
            conn.execute(f"DELETE FROM query_results WHERE query_id IN ({marks})", cut)
            conn.execute("UPDATE runs SET status = 'failed' WHERE id = ?", (first.run_id,))
        n_before = len(server.requests)
        resumed = await arun_evaluation(
            ds, ItemSystem(), None, store=f"sqlite:///{db}", resume=first.run_id, progress=False
        )
        again = Counter((item_of(r), r.body.get("seed")) for r in server.requests[n_before:])
    assert again == {(int(q[1:]), seed): 1 for q in cut for seed in (42, 43, 44)}
    rows = Counter((qid, r) for qid, r, _ in grade_rows(db))
    assert rows == {(q.query_id, r): 1 for q in ds.queries for r in range(3)}
    assert resumed.status == "completed" and resumed.stability["retrieval_grade"].items == 20
    assert resumed.stability["retrieval_grade"].alpha == pytest.approx(1.0)


KILLED_RUN = """
import sys
sys.path.insert(0, {here!r})
from test_judge_repeats import ItemSystem, config, items_dataset
from ragmeter.run import run_evaluation

run_evaluation(items_dataset(30), ItemSystem(), config({url!r}, 3, concurrency=2), store={store!r},
               progress=False)
"""


async def test_repeats_survive_a_killed_run_and_its_resume(tmp_path: Path) -> None:
    """A run killed while judging resumes to every (query, repeat) stored exactly once; what was stored
    before the kill is never judged again."""
    from ragmeter.llm.scripted import ScriptedServer, Step

    def responder(req: object) -> Step:
        return Step(text=json.dumps({"reasoning": "r", "grade": item_of(req) % 5 + 3}), delay=0.02)

    ds, db = items_dataset(30), tmp_path / "r.db"
    store = f"sqlite:///{db}"
    async with ScriptedServer(responder) as server:
        script = textwrap.dedent(KILLED_RUN.format(here=str(HERE), url=server.url, store=store))
        proc = await asyncio.create_subprocess_exec(sys.executable, "-c", script)
        stored: set[str] = set()
        for _ in range(600):  # until a third of the queries are stored (each with its three repeats)
            await asyncio.sleep(0.05)
            if db.exists():
                try:
                    with sqlite3.connect(db) as conn:
                        stored = {r[0] for r in conn.execute("SELECT query_id FROM query_results")}
                except sqlite3.OperationalError:
                    continue
            if len(stored) >= 10 or proc.returncode is not None:
                break
        proc.kill()
        await proc.wait()
        assert proc.returncode != 0, "the run finished before it could be killed"
        with sqlite3.connect(db) as conn:
            stored = {r[0] for r in conn.execute("SELECT query_id FROM query_results")}
            run_id = conn.execute("SELECT id FROM runs").fetchone()[0]
        assert 0 < len(stored) < 30
        assert Counter(q for q, _, _ in grade_rows(db)) == {q: 3 for q in stored}  # all repeats or none
        n_before = len(server.requests)
        resumed = await arun_evaluation(ds, ItemSystem(), None, store=store, resume=run_id, progress=False)
        judged_again = {f"q{item_of(r):03d}" for r in server.requests[n_before:]}
    assert not judged_again & stored
    assert Counter((q, r) for q, r, _ in grade_rows(db)) == {
        (q.query_id, r): 1 for q in ds.queries for r in range(3)
    }
    assert resumed.status == "completed" and resumed.stability["retrieval_grade"].alpha == pytest.approx(1.0)


async def test_total_score_of_a_repeated_grade_is_the_mean_grade_times_its_weight(tmp_path: Path) -> None:
    from ragmeter.llm.scripted import ScriptedServer, Step

    def responder(req: object) -> Step:  # grades 3, 4, 5 by repeat, each with its own reasoning
        seed = int(getattr(req, "body", {})["seed"])
        return Step(text=json.dumps({"reasoning": f"seed {seed}", "grade": 3 + seed - 42}))

    async with ScriptedServer(responder) as server:
        result = await arun_evaluation(
            items_dataset(3), ItemSystem(), config(server.url, 3), store=False, progress=False
        )
    for q in result.per_query:
        grade = q.metrics["retrieval_grade"]
        assert grade.value == 4.0 and grade.details["relevant_rank"] == 1 and "reasoning" not in grade.details
        assert q.metrics["total_score"].value == pytest.approx(4.0)  # rank 1: weight 1.0
    assert result.aggregate["avg_total_score"].mean == pytest.approx(4.0)


async def test_a_rescore_that_judges_again_replaces_the_repeats_and_their_stability(tmp_path: Path) -> None:
    from ragmeter.llm import from_spec
    from ragmeter.llm.scripted import ScriptedServer, Step
    from ragmeter.run.rescore import arescore
    from ragmeter.store import open_store

    def responder(req: object) -> Step:
        return Step(text=json.dumps({"reasoning": "r", "grade": item_of(req) % 4 + 5}))

    ds, url = items_dataset(5), f"sqlite:///{tmp_path / 'r.db'}"
    async with ScriptedServer(responder) as server:
        first = await arun_evaluation(ds, ItemSystem(), config(server.url, 3), store=url, progress=False)
        assert first.stability["retrieval_grade"].repeats == 3
        with open_store(url) as store:  # no judge: the stored repeats and their stability stay
            kept = await arescore(first.run_id or "", store=store, dataset=ds)
        assert kept.stability == first.stability and kept.per_query[0].repeats
        llm = from_spec(f"openai-compatible:judge@{server.url}")
        with open_store(url) as store:
            again = await arescore(first.run_id or "", store=store, dataset=ds, llm=llm)
        await llm.aclose()
    assert again.stability == {} and all(not r.repeats for r in again.per_query)
    assert [r.metrics["retrieval_grade"].value for r in again.per_query] == [5.0, 6.0, 7.0, 8.0, 5.0]
    assert Counter(r for _, r, _ in grade_rows(tmp_path / "r.db")) == {0: 5}
