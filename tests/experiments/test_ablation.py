from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragmeter.datasets import load_dataset
from ragmeter.errors import InputError
from ragmeter.experiments.ablation import (
    ExperimentSpec,
    Variant,
    experiment_table,
    format_markdown,
    load_experiment,
    run_experiment,
    variant_system_options,
)
from ragmeter.models import EvalConfig, EvalRunResult

# Variants that use only BM25 (fast, no model download): the real pipeline and runner on the demo dataset.
BM25_ONLY = """
name: demo-grid
dataset: demo
seed: 7
k: [1, 5, 10]
columns: [recall@1, recall@5, mrr, map, ndcg@10]
variants:
  - name: bm25-nochunk
    mode: fulltext
    disable: [chunking]
  - name: bm25-b0
    mode: fulltext
    options: {bm25_b: 0.0, bm25_k1: 0.1}
"""


def write(tmp_path: Path, text: str, name: str = "exp.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_load_and_baseline_first(tmp_path: Path) -> None:
    spec = load_experiment(write(tmp_path, BM25_ONLY))
    names = [v.name for v in spec.all_variants()]
    assert names == ["bm25", "bm25-nochunk", "bm25-b0"]
    # A user-defined "bm25" variant is the baseline and moves first.
    spec2 = spec.model_copy(update={"variants": [*spec.variants, Variant(name="bm25", mode="fulltext")]})
    assert [v.name for v in spec2.all_variants()] == ["bm25", "bm25-nochunk", "bm25-b0"]
    assert spec.model_copy(update={"baseline": False}).all_variants()[0].name == "bm25-nochunk"


def test_variant_options() -> None:
    spec = ExperimentSpec(
        dataset="demo", pipeline={"mode": "hybrid", "chunk_size": 120, "disable": ["rerank"]}
    )
    v = Variant(
        name="x", disable=["reranking", "dense"], embedding="my-model", weights={"bm25": 0.2}, rrf_k=5
    )
    mode, options = variant_system_options(spec, v)
    assert mode == "hybrid"
    assert options == {
        "chunk_size": 120,
        "disable": ["dense", "generation", "rerank"],  # no generator in the spec: generation off
        "weights": {"bm25": 0.2},
        "rrf_k": 5,
        "model": "my-model",
    }
    mode, options = variant_system_options(
        spec.model_copy(update={"generator": "m"}), Variant(name="y", mode="dense")
    )
    assert mode == "dense" and options["disable"] == ["rerank"]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("dataset: demo\nvariants:\n  - name: a\n    disable: [expansion]\n", "no query-expansion component"),
        ("dataset: demo\nvariants:\n  - name: a\n    disable: [foo]\n", "unknown component 'foo'"),
        ("dataset: demo\nvariants:\n  - {name: a}\n  - {name: a}\n", "duplicate variant name(s): a"),
        ("variants: []\n", "field 'dataset'"),
        ("dataset: demo\nvariants:\n  - name: a\n    colour: red\n", "field 'variants.0.colour'"),
        ("dataset: demo\nvariants: [\n", "not valid YAML"),
        ("- 1\n- 2\n", "must be a mapping"),
    ],
)
def test_bad_files_name_the_field(tmp_path: Path, text: str, needle: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(InputError) as info:
        load_experiment(path)
    assert needle in str(info.value)
    assert str(path) in str(info.value)


def test_no_variants_at_all() -> None:
    with pytest.raises(InputError, match="no variants"):
        ExperimentSpec(dataset="demo", baseline=False).all_variants()


def test_run_experiment_calls_runner_per_variant() -> None:
    calls: list[dict[str, Any]] = []

    def fake_runner(dataset: Any, system: str, config: EvalConfig, **kw: Any) -> EvalRunResult:
        calls.append({"system": system, "config": config, **kw})
        return EvalRunResult(run_id=f"r{len(calls)}", name=kw["name"], config=config)

    spec = ExperimentSpec(dataset="demo", variants=[Variant(name="dense", mode="semantic")], limit=5)
    result = run_experiment(spec, store=False, runner=fake_runner, dataset=load_dataset("demo", seed=42))
    assert [c["name"] for c in calls] == ["experiment/bm25", "experiment/dense"]
    assert [c["config"].mode for c in calls] == ["fulltext", "semantic"]
    assert all(c["config"].limit == 5 and c["config"].seed == 42 for c in calls)
    assert calls[1]["config"].extra["variant"] == "dense"
    assert calls[1]["system_options"]["disable"] == {"generation"}
    assert [r.run.run_id for r in result.results] == ["r1", "r2"]


def test_real_grid_on_demo_dataset_stored(tmp_path: Path) -> None:
    pytest.importorskip("bm25s")
    pytest.importorskip("sqlalchemy")
    from ragmeter.store import open_store

    spec = load_experiment(write(tmp_path, BM25_ONLY))
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    with open_store(url) as store:
        result = run_experiment(spec, store=store)
        stored = store.list_runs()
    assert len(result.results) == 3
    assert {r.run_id for r in stored} == {r.run.run_id for r in result.results}
    assert {r.name for r in stored} == {"demo-grid/bm25", "demo-grid/bm25-nochunk", "demo-grid/bm25-b0"}
    columns, rows = experiment_table(result, n_resamples=500)
    assert columns == ["recall@1", "recall@5", "mrr", "map", "ndcg@10"]
    assert [r["variant"] for r in rows] == ["bm25", "bm25-nochunk", "bm25-b0"]
    for c in columns:
        values = [r["values"][c] for r in rows]
        assert all(v is not None and 0.0 <= v <= 1.0 for v in values)
        best = max(v for v in values if v is not None)
        assert [r["best"][c] for r in rows] == [abs(v - best) <= 1e-12 for v in values if v is not None]
        # Means are the runs' own aggregates.
        assert values[0] == result.results[0].run.aggregate[c].mean
    assert rows[0]["p_holm"] == {}  # the baseline is not compared with itself
    assert set(rows[2]["p_holm"]) == set(columns)
    # A crippled BM25 (k1=0.1, b=0) ranks differently from the baseline on this data.
    assert rows[2]["values"]["mrr"] != rows[0]["values"]["mrr"]
    table = format_markdown(columns, rows)
    assert table.splitlines()[0] == "| variant | recall@1 | recall@5 | mrr | map | ndcg@10 |"
    assert len(table.splitlines()) == 2 + 3
    assert "**" in table
    # The result renders itself: the same table as Markdown, JSON and a console table.
    rendered = result.table(n_resamples=500)
    assert rendered.to_markdown() == table
    assert json.loads(rendered.to_json())["rows"] == json.loads(json.dumps(rows))
    console_table = rendered.to_table()
    assert [c.header for c in console_table.columns] == ["variant", *columns, "run"]
    assert console_table.row_count == 3


def test_experiment_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("bm25s")
    from ragmeter.cli import main

    spec = write(tmp_path, BM25_ONLY)
    out = tmp_path / "table.md"
    with pytest.raises(SystemExit) as info:
        main(
            [
                "experiment",
                str(spec),
                "--no-store",
                "--format",
                "markdown",
                "--output",
                str(out),
                "--resamples",
                "200",
            ]
        )
    assert info.value.code == 0
    printed = capsys.readouterr().out
    assert "| bm25 |" in printed and "| bm25-b0 |" in printed
    assert out.read_text(encoding="utf-8").strip() == printed.strip()
    with pytest.raises(SystemExit) as info:
        main(["experiment", str(tmp_path / "missing.yaml")])
    assert info.value.code == 2
    assert "missing.yaml: no such file" in capsys.readouterr().err


def test_table_best_follows_metric_direction() -> None:
    from ragmeter.experiments.ablation import ExperimentResult, VariantResult
    from ragmeter.models import MetricSummary

    def run(hall: float, mrr: float) -> EvalRunResult:
        return EvalRunResult(
            aggregate={
                "hallucination_rate": MetricSummary(mean=hall, std=None, n=1),
                "mrr": MetricSummary(mean=mrr, std=None, n=1),
            }
        )

    spec = ExperimentSpec(dataset="demo", columns=["hallucination_rate", "mrr"])
    result = ExperimentResult(
        spec=spec,
        results=[
            VariantResult(variant=Variant(name="bm25"), run=run(0.1, 0.2)),
            VariantResult(variant=Variant(name="x"), run=run(0.5, 0.9)),
        ],
    )
    _, rows = experiment_table(result, significance=False)
    assert [r["best"]["hallucination_rate"] for r in rows] == [True, False]
    assert [r["best"]["mrr"] for r in rows] == [False, True]


def test_judge_columns_only_with_a_judge() -> None:
    from ragmeter.experiments.ablation import ExperimentResult, VariantResult
    from ragmeter.models import MetricSummary

    agg = {
        "total_score": MetricSummary(mean=7.0, std=None, n=1),
        "mrr": MetricSummary(mean=0.5, std=None, n=1),
        "retrieval_grade": MetricSummary(mean=7.5, std=None, n=1),
        "token_f1": MetricSummary(mean=0.4, std=None, n=1),
    }
    results = [VariantResult(variant=Variant(name="bm25"), run=EvalRunResult(aggregate=agg))]
    plain = ExperimentResult(spec=ExperimentSpec(dataset="demo", columns=["mrr"]), results=results)
    judged = ExperimentResult(
        spec=ExperimentSpec(dataset="demo", columns=["mrr"], judge="local"), results=results
    )
    assert plain.columns() == ["mrr"]
    # the judge metrics present (the registry's judge family, in its order), not the other metrics
    assert judged.columns() == ["mrr", "retrieval_grade", "total_score"]
    _, rows = experiment_table(judged, significance=False)
    assert rows[0]["values"] == {"mrr": 0.5, "retrieval_grade": 7.5, "total_score": 7.0}


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("columns: [mrr, nosuch@5]\n", "field 'columns.1': unknown metric 'nosuch@5'"),
        ("columns: [ndcg@7]\n", "field 'columns.0': 'ndcg@7' is not computed by this experiment"),
        ("columns: [factuality]\n", "a judge metric needs `judge: MODEL`"),
        ("columns: [token_f1]\n", "an answer metric needs `generator: MODEL`"),
        ("columns: [latency_retrieve_ms]\n", "not computed by this experiment"),
        (
            "variants:\n  - {name: a}\n  - {name: b, mode: sparse}\n",
            "field 'variants.1' (b): unknown mode 'sparse'",
        ),
        (
            "variants:\n  - {name: a, options: {bm25_q: 1}}\n",
            "field 'variants.0' (a): unknown pipeline option(s) bm25_q",
        ),
        ("pipeline: {mode: nope}\nvariants: [{name: a}]\n", "field 'variants.0' (a): unknown mode 'nope'"),
        ("judge: gpt-4o\n", "field 'judge': bad judge spec 'gpt-4o'"),
        ("generator: m@http://127.0.0.1:1/v1\n", "field 'generator': unknown judge backend"),
    ],
)
def test_the_whole_file_is_checked_before_anything_runs(tmp_path: Path, text: str, needle: str) -> None:
    from ragmeter.models import Document, EvalDataset, EvalQuery

    path = write(tmp_path, "dataset: demo\nk: [5, 10, 20]\n" + text)
    dataset = EvalDataset(
        name="tiny",
        queries=[EvalQuery(query_id="q1", question="what?", relevant_doc_ids=["d1"])],
        corpus=[Document(doc_id="d1", text="an answer")],
    )

    def runner(*a: Any, **k: Any) -> EvalRunResult:
        raise AssertionError("no variant may run")

    with pytest.raises(InputError) as info:  # when the file is read, or at the latest before the first run
        run_experiment(load_experiment(path), store=False, runner=runner, dataset=dataset)
    assert needle in str(info.value) and str(path) in str(info.value)
