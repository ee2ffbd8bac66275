"""Scoring stored outputs: rescore (identical non-LLM values, a judge added later), exact token usage in the
run JSON, intervals inside each metric's range, validation before anything is stored, the JSON reader."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from runner_fakes import KeywordSystem, make_dataset

import ragmeter.metrics as rm
from ragmeter.errors import InputError
from ragmeter.models import EvalConfig, EvalRunResult
from ragmeter.run import arun_evaluation, run_evaluation
from ragmeter.store import open_store

pytest.importorskip("aiohttp")
SRC = Path(__file__).resolve().parents[2] / "src"


def _dataset_file(tmp_path: Path) -> str:
    path = tmp_path / "capitals.json"
    path.write_text(make_dataset().model_dump_json())
    return str(path)


def _config(path: str, **kw: Any) -> EvalConfig:
    return EvalConfig.model_validate({"dataset": path, "retrieval_top_k": [1, 3], **kw})


def _values(run: EvalRunResult) -> dict[str, dict[str, float | None]]:
    return {r.query_id: {n: m.value for n, m in r.metrics.items()} for r in run.per_query}


def _grader(req: Any) -> Any:
    from ragmeter.llm.scripted import Step

    return Step(text='{"reasoning": "ok", "grade": 8, "score": 8}', prompt_tokens=13, completion_tokens=5)


def test_rescore_gives_identical_non_llm_values_and_stores_each_once(tmp_path: Path) -> None:
    from ragmeter.run.rescore import rescore

    path, db = _dataset_file(tmp_path), f"sqlite:///{tmp_path / 's.db'}"
    ds = make_dataset()
    run = run_evaluation(ds, KeywordSystem(ds), _config(path), store=db, progress=False)
    assert {"ndcg@3", "token_f1", "sbert_similarity"} <= set(run.aggregate) or "semantic" in " ".join(
        run.notes
    )
    with open_store(db) as store:
        again = rescore(run.run_id or "", store=store)
        stored = store.get_run(run.run_id or "")
        from sqlalchemy import text

        with store.engine.connect() as conn:
            rows = conn.execute(
                text("SELECT count(*), count(DISTINCT query_id || name) FROM metric_values")
            ).one()
    assert _values(again) == _values(run) == _values(stored)
    assert rows[0] == rows[1] == sum(len(r.metrics) for r in run.per_query)
    for name, summary in run.aggregate.items():
        assert again.aggregate[name].mean == summary.mean, name
    # the CLI front: same numbers, one line and exit 2 for an unknown metric
    env = {"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}
    cmd = [sys.executable, "-m", "ragmeter", "rescore", run.run_id or "", "--db", db]
    proc = subprocess.run(
        [*cmd, "--format", "json"], capture_output=True, text=True, env=env, timeout=120, check=True
    )
    assert json.loads(proc.stdout)["aggregate"]["ndcg@3"]["mean"] == run.aggregate["ndcg@3"].mean
    bad = subprocess.run(
        [*cmd, "--metrics", "nosuch@5"], capture_output=True, text=True, env=env, timeout=120
    )
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "nosuch@5" in bad.stderr


async def test_a_judge_added_by_rescore_to_a_run_made_without_one(tmp_path: Path, scripted: Any) -> None:
    from ragmeter.run.rescore import arescore

    path, db = _dataset_file(tmp_path), f"sqlite:///{tmp_path / 'j.db'}"
    ds = make_dataset()
    run = await arun_evaluation(
        ds, KeywordSystem(ds), _config(path, extra={"semantic": False}), store=db, progress=False
    )
    assert "retrieval_grade" not in run.aggregate and run.usage is None
    server = await scripted(_grader)
    with open_store(db) as store:
        judged = await arescore(
            run.run_id or "",
            store=store,
            metrics=["retrieval_grade"],
            judge=f"openai-compatible:judge@{server.url}",
        )
        stored = store.get_run(run.run_id or "")
    assert judged.aggregate["retrieval_grade"].mean == 8.0 and judged.aggregate["retrieval_grade"].n == 12
    assert stored.per_query[0].metrics["retrieval_grade"].value == 8.0
    assert stored.aggregate["total_score"].n == 12  # derived from the new grades
    assert stored.aggregate["ndcg@3"] == run.aggregate["ndcg@3"]  # the rest of the run untouched
    assert (stored.usage or {})["judge"]["input_tokens"] == 12 * 13 and len(server.requests) == 12
    assert "prompt.retrieval_grade" in stored.versions


async def test_a_judged_run_shows_exact_token_totals_in_its_json(tmp_path: Path, scripted: Any) -> None:
    from ragmeter.score.writers import read_run_json

    server = await scripted(_grader)
    path = _dataset_file(tmp_path)
    ds = make_dataset()
    out = tmp_path / "judged.json"
    config = _config(
        path,
        use_llm_judge=True,
        judge_model=f"openai-compatible:judge@{server.url}",
        metrics=["retrieval_grade", "answer_correctness", "ndcg@3"],
        output=str(out),
        extra={"semantic": False},
    )
    db = f"sqlite:///{tmp_path / 'u.db'}"
    result = await arun_evaluation(ds, KeywordSystem(ds), config, store=db, progress=False)
    data = json.loads(out.read_text())
    assert data["schema_version"] == 3
    usage = data["usage"]
    n_calls = len(server.requests)
    assert n_calls == 24  # 12 queries x 2 judges
    assert usage["judge"]["calls"] == 24 and usage["judge"]["input_tokens"] == 24 * 13
    assert usage["judge"]["output_tokens"] == 24 * 5
    assert {k: v["calls"] for k, v in usage["judge_by_metric"].items()} == {
        "answer_correctness": 12,
        "retrieval_grade": 12,
    }
    # an unpriced model: cost null with the reason, never 0.0
    assert usage["judge"]["cost_usd"] is None and "price" in usage["judge"]["cost_note"]
    assert usage["generator"] is None and usage["total"]["input_tokens"] == 24 * 13
    with open_store(db) as store:  # the store's summary, which `runs show` reads, has the same block
        assert store.get_run(result.run_id or "").usage == usage
    assert read_run_json(out).usage == usage
    _every_interval_in_range(result)


def _every_interval_in_range(result: EvalRunResult) -> None:
    assert result.aggregate
    for name, s in result.aggregate.items():
        spec = rm.lookup(name)
        assert spec is not None, f"{name} is not registered"
        if s.ci95 is not None:
            lo, hi = s.ci95
            assert spec.in_range(lo) and spec.in_range(hi) and lo <= (s.mean or 0.0) + 1e-12 <= hi + 2e-12, (
                name
            )
            assert s.ci_method in ("bootstrap-percentile", "wilson")
        if name.startswith("latency_"):
            assert s.p50 is not None and s.p95 is not None and s.max is not None and s.ci95 is None


def test_intervals_of_a_run_with_answers_lie_in_range(tmp_path: Path) -> None:
    ds = make_dataset()
    result = run_evaluation(ds, KeywordSystem(ds), _config("capitals"), store=False, progress=False)
    assert {"token_f1", "hallucination_rate", "hit@1", "latency_retrieve_ms"} <= set(result.aggregate)
    _every_interval_in_range(result)


def test_a_user_metric_is_computed_per_query_and_aggregated(tmp_path: Path) -> None:
    rm.register(
        "answer_words", lambda i: float(len((i.answer or "").split())), range=(0, None), scale="words"
    )
    try:
        ds = make_dataset(4)
        result = run_evaluation(ds, KeywordSystem(ds), _config("capitals"), store=False, progress=False)
    finally:
        rm.unregister("answer_words")
    assert all(r.metrics["answer_words"].value == 1.0 for r in result.per_query)
    assert result.aggregate["answer_words"].mean == 1.0


def _count_runs(db: str) -> int:
    with open_store(db) as store:
        return len(store.list_runs())


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"metrics": ["nosuch@5"]}, "unknown metric 'nosuch@5'"),
        ({"use_llm_judge": True, "judge_model": "nosuchbackend:x"}, "--judge"),
        ({"system": "no_such_module_xyz:fn"}, "no_such_module_xyz"),
        ({"system": "builtin", "mode": "sideways"}, "mode"),
        ({"extra": {"context_k": 0}}, "context_k"),
    ],
)
def test_an_invalid_invocation_leaves_no_run_row(tmp_path: Path, change: dict[str, Any], match: str) -> None:
    db = f"sqlite:///{tmp_path / 'v.db'}"
    path = _dataset_file(tmp_path)
    system = change.get("system")
    with pytest.raises(InputError, match=match):
        run_evaluation(
            path, system or KeywordSystem(make_dataset()), _config(path, **change), store=db, progress=False
        )
    assert _count_runs(db) == 0


def test_a_jsonl_dataset_without_corpus_is_refused_for_builtin_before_storing(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'v.db'}"
    path = tmp_path / "q.jsonl"
    path.write_text("".join(q.model_dump_json() + "\n" for q in make_dataset(3).queries))
    with pytest.raises(InputError, match="corpus"):
        run_evaluation(str(path), "builtin", EvalConfig(dataset=str(path)), store=db, progress=False)
    assert _count_runs(db) == 0


def test_negative_cutoff_in_a_config_file_names_file_and_field_and_stores_nothing(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(f"dataset: {_dataset_file(tmp_path)}\nretrieval_top_k: [-1, 5]\n")
    db = tmp_path / "c.db"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ragmeter",
            "run",
            "--config",
            str(cfg),
            "--db",
            str(db),
            "--system",
            "builtin",
        ],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1
    assert "bad.yaml" in lines[0] and "retrieval_top_k" in lines[0]
    assert not db.exists() or _count_runs(f"sqlite:///{db}") == 0


def test_the_reader_accepts_the_previous_json_version(tmp_path: Path) -> None:
    from ragmeter.score.writers import read_run_json

    ds = make_dataset(3)
    result = run_evaluation(ds, KeywordSystem(ds), _config("capitals"), store=False, progress=False)
    old = result.model_dump(mode="json", exclude={"schema_version", "usage", "record"})
    for r in old["per_query"]:
        del r["usage"]
    (tmp_path / "old.json").write_text(json.dumps(old))
    back = read_run_json(tmp_path / "old.json")
    assert back.schema_version == 3 and _values(back) == _values(result)
    (tmp_path / "future.json").write_text(json.dumps({**old, "schema_version": 99}))
    with pytest.raises(InputError, match="schema_version 99"):
        read_run_json(tmp_path / "future.json")
