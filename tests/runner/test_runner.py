from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from runner_fakes import KeywordSystem, make_dataset

from ragmeter.errors import InputError
from ragmeter.models import EvalConfig
from ragmeter.run import load_config, run_evaluation, sample_queries
from ragmeter.score.aggregate import aggregate_metrics
from ragmeter.store import open_store


def _config(tmp_path: Path, **kw: object) -> EvalConfig:
    base: dict[str, object] = {
        "dataset": "capitals",
        "retrieval_top_k": [1, 3, 5],
        "concurrency": 4,
        "output": str(tmp_path / "out" / "result.json"),
        "extra": {"semantic": False},
    }
    base.update(kw)
    return EvalConfig.model_validate(base)


def test_run_computes_retrieval_and_lexical_metrics_and_stores_them(tmp_path: Path) -> None:
    import pytrec_eval

    ds = make_dataset()
    system = KeywordSystem(ds)
    db = f"sqlite:///{tmp_path / 'r.db'}"
    result = run_evaluation(ds, system, _config(tmp_path), store=db, progress=False)

    assert result.status == "completed" and result.n_queries == 12 and result.n_failed == 0
    assert result.n_queries_without_relevant == 1
    assert len(system.calls) == 12

    # retrieval metrics equal pytrec_eval's, per query, for the queries with relevant documents
    qrels = {q.query_id: {d: 1 for d in q.relevant_doc_ids} for q in ds.queries if q.relevant_doc_ids}
    run = {r.query_id: {d.doc_id: d.score for d in r.retrieved} for r in result.per_query}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.3", "recall.5", "recip_rank", "P.1"}).evaluate(
        {q: run[q] for q in qrels}
    )
    for r in result.per_query:
        if r.query_id not in qrels:
            assert "ndcg@3" not in r.metrics  # no relevant doc: left out, not scored 0
            continue
        assert r.metrics["ndcg@3"].value == pytest.approx(ref[r.query_id]["ndcg_cut_3"], abs=1e-9)
        assert r.metrics["recall@5"].value == pytest.approx(ref[r.query_id]["recall_5"], abs=1e-9)
        assert r.metrics["mrr"].value == pytest.approx(ref[r.query_id]["recip_rank"], abs=1e-9)
        assert r.metrics["precision@1"].value == pytest.approx(ref[r.query_id]["P_1"], abs=1e-9)
        assert r.answer is not None and "token_f1" in r.metrics
        assert {"retrieve", "generate", "total"} <= set(r.latency_ms)
    mean_ndcg = sum(v["ndcg_cut_3"] for v in ref.values()) / len(ref)
    assert result.aggregate["ndcg@3"].mean == pytest.approx(mean_ndcg, abs=1e-12)
    assert result.aggregate["ndcg@3"].n == 11
    assert result.aggregate["exact_match"].n == 12

    # the store holds the same run, completed, with the run-level metrics in each row
    with open_store(db) as store:
        stored = store.get_run(result.run_id or "")
    assert stored.status == "completed" and stored.aggregate == result.aggregate
    assert [q.model_dump() for q in stored.per_query] == [q.model_dump() for q in result.per_query]

    # JSON is the EvalRunResult; CSV has one row per query and one column per metric
    data = json.loads((tmp_path / "out" / "result.json").read_text())
    assert data["run_id"] == result.run_id and len(data["per_query"]) == 12
    rows = list(csv.DictReader((tmp_path / "out" / "result.csv").open()))
    assert [r["query_id"] for r in rows] == [q.query_id for q in ds.queries]
    by_id = {r.query_id: r for r in result.per_query}
    for row in rows:
        expected = by_id[row["query_id"]].metrics.get("ndcg@3")
        assert (row["ndcg@3"] == "") == (expected is None)
        if expected is not None:
            assert float(row["ndcg@3"]) == expected.value


def test_failed_queries_are_recorded_and_the_run_goes_on(tmp_path: Path) -> None:
    ds = make_dataset()
    system = KeywordSystem(ds, fail_on={"Italy", "Greece"})
    result = run_evaluation(ds, system, _config(tmp_path), store=False, progress=False)
    failed = [r for r in result.per_query if r.status == "failed"]
    assert {r.question for r in failed} == {"What is the capital of Italy?", "What is the capital of Greece?"}
    assert all("retrieve failed: ConnectionError: backend unreachable" in (r.error or "") for r in failed)
    assert result.n_failed == 2 and result.status == "completed"
    assert result.aggregate["exact_match"].n == 10  # failures are left out of the averages ...
    assert any("2 of 12 queries failed" in n for n in result.notes)  # ... and said so


def test_same_seed_same_sample_and_same_numbers(tmp_path: Path) -> None:
    ds = make_dataset()
    a = run_evaluation(
        ds, KeywordSystem(ds), _config(tmp_path, limit=5, seed=3, output=None), store=False, progress=False
    )
    b = run_evaluation(
        ds, KeywordSystem(ds), _config(tmp_path, limit=5, seed=3, output=None), store=False, progress=False
    )
    c = run_evaluation(
        ds, KeywordSystem(ds), _config(tmp_path, limit=5, seed=4, output=None), store=False, progress=False
    )
    ids = [r.query_id for r in a.per_query]
    assert len(ids) == 5 and ids == [r.query_id for r in b.per_query]
    assert ids != [r.query_id for r in c.per_query]

    def quality(agg: dict[str, object]) -> dict[str, object]:  # latency is measured, not reproducible
        return {k: v for k, v in agg.items() if not k.startswith("latency_")}

    assert quality(a.aggregate) == quality(b.aggregate) and "ndcg@5" in a.aggregate
    assert [q.query_id for q in sample_queries(ds, 5, 3)] == ids


def test_aggregate_counts_nulls_and_uses_sample_std() -> None:
    from ragmeter.models import MetricResult, QueryEvalResult

    rows = [
        QueryEvalResult(query_id=str(i), metrics={"m": MetricResult(name="m", value=v)})
        for i, v in enumerate([1.0, 0.0, None, 0.5])
    ]
    rows.append(
        QueryEvalResult(query_id="f", status="failed", metrics={"m": MetricResult(name="m", value=9.0)})
    )
    agg = aggregate_metrics(rows)["m"]
    assert agg.n == 3 and agg.n_null == 1
    assert agg.mean == pytest.approx(0.5) and agg.std == pytest.approx(0.5)
    # a bootstrap percentile interval: within the values' span (a normal one would leave [0, 1] here)
    assert agg.ci95 is not None and agg.ci_method == "bootstrap-percentile"
    assert 0.0 <= agg.ci95[0] < 0.5 - 1e-9 and 0.5 + 1e-9 < agg.ci95[1] <= 1.0
    assert 0.5 - 1.96 * 0.5 / math.sqrt(3) < 0.0  # what the old interval would have printed


def test_config_from_yaml_and_toml_with_overrides(tmp_path: Path) -> None:
    y = tmp_path / "c.yaml"
    y.write_text("dataset: demo\nretrieval_top_k: [1, 10]\nconcurrency: 3\nseed: 9\n")
    cfg = load_config(y, {"concurrency": 8, "seed": None})
    assert cfg.retrieval_top_k == [1, 10] and cfg.concurrency == 8 and cfg.seed == 9
    t = tmp_path / "c.toml"
    t.write_text('[ragmeter]\ndataset = "x.json"\nuse_llm_judge = true\njudge_model = "local"\n')
    cfg = load_config(t)
    assert cfg.dataset == "x.json" and cfg.use_llm_judge and cfg.judge_model == "local"

    bad = tmp_path / "bad.yaml"
    bad.write_text("concurrency: lots\n")
    with pytest.raises(InputError, match=r"bad.yaml: field 'concurrency'"):
        load_config(bad)
    bad.write_text("retrieval_top_k: [1, 2\nx: 1\n")
    with pytest.raises(InputError, match=r"bad.yaml:\d+: not valid YAML"):
        load_config(bad)
    bad.write_text("no_such_field: 1\n")
    with pytest.raises(InputError, match="no_such_field"):
        load_config(bad)
    bad.write_text("x = [\n")
    with pytest.raises(InputError, match="not valid"):
        load_config(bad.rename(tmp_path / "bad.toml"))


def test_compare_counts_wins_in_the_metric_direction() -> None:
    from ragmeter.cli.runs import compare_rows
    from ragmeter.models import EvalRunResult, MetricResult, QueryEvalResult

    def run(values: dict[str, tuple[float, float]]) -> EvalRunResult:
        per_query = [
            QueryEvalResult(
                query_id=qid,
                metrics={
                    "ndcg@10": MetricResult(name="ndcg@10", value=nd),
                    "hallucination_rate": MetricResult(name="hallucination_rate", value=hr),
                },
            )
            for qid, (nd, hr) in values.items()
        ]
        return EvalRunResult(per_query=per_query, aggregate=aggregate_metrics(per_query))

    a = run({"q1": (0.5, 0.2), "q2": (0.5, 0.2), "q3": (0.5, 0.2)})
    b = run({"q1": (0.9, 0.1), "q2": (0.1, 0.1), "q3": (0.5, 0.4)})
    rows = {r["metric"]: r for r in compare_rows(a, b)}
    assert (rows["ndcg@10"]["wins"], rows["ndcg@10"]["losses"], rows["ndcg@10"]["ties"]) == (1, 1, 1)
    # less hallucination is better: q1 and q2 went down (wins), q3 went up (a loss)
    hr = rows["hallucination_rate"]
    assert (hr["wins"], hr["losses"], hr["ties"]) == (2, 1, 0)
    assert hr["delta"] == pytest.approx((0.1 + 0.1 + 0.4) / 3 - 0.2)


def test_a_system_without_answers_gets_a_note_not_silence(tmp_path: Path) -> None:
    from runner_fakes import keyword_retrieve

    ds = make_dataset()
    result = run_evaluation(ds, keyword_retrieve, _config(tmp_path, output=None), store=False, progress=False)
    assert all(r.answer is None for r in result.per_query) and "token_f1" not in result.aggregate
    assert any("returned no answers" in n for n in result.notes)
    assert "ndcg@5" in result.aggregate  # a plain function is a system: retrieval is still measured


def test_unknown_metric_names_are_input_errors(tmp_path: Path) -> None:
    ds = make_dataset()
    with pytest.raises(InputError, match="unknown metric 'factualty'"):
        run_evaluation(
            ds,
            KeywordSystem(ds),
            _config(tmp_path, metrics=["ndcg@10", "factualty"]),
            store=False,
            progress=False,
        )
    result = run_evaluation(
        ds,
        KeywordSystem(ds),
        _config(tmp_path, metrics=["ndcg@3", "mrr"], output=None),
        store=False,
        progress=False,
    )
    assert [m for m in result.aggregate if "@" in m or m == "mrr"] == ["ndcg@3", "mrr"]


def test_excluded_docs_are_never_retrieved(tmp_path: Path) -> None:
    # citation prediction: a query paper must not be found for itself (metadata exclude_doc_ids)
    ds = make_dataset(3)
    for q in ds.queries:
        q.metadata["exclude_doc_ids"] = list(q.relevant_doc_ids)
    result = run_evaluation(ds, KeywordSystem(ds), _config(tmp_path), store=False, progress=False)
    for r, q in zip(result.per_query, ds.queries, strict=True):
        assert len(r.retrieved) == 5 and not {d.doc_id for d in r.retrieved} & set(q.relevant_doc_ids)
    assert result.aggregate["recall@5"].mean == 0.0
