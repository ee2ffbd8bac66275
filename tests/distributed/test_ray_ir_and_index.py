"""IR evaluation partitioned by query on Ray, and the dense index built on Ray Data: same numbers as local."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragmeter.ir import Qrels, Run, evaluate

MEASURES = ["ndcg@10", "ndcg@3", "map", "mrr", "precision@5", "recall@20", "hit@1", "rprec", "aqwv@10"]


def _workload(seed: int) -> tuple[Qrels, Run]:
    rng = np.random.default_rng(seed)
    q: list[str] = []
    d: list[str] = []
    g: list[int] = []
    rq: list[str] = []
    rd: list[str] = []
    rs: list[float] = []
    for i in range(300):
        for j in rng.choice(120, 8, replace=False):
            q.append(f"q{i}")
            d.append(f"d{j}")
            g.append(int(rng.integers(-1, 4)))  # graded, negative = unjudged
        if i % 5:  # every fifth judged query is missing from the run
            for j in rng.choice(120, 40, replace=False):
                rq.append(f"q{i}")
                rd.append(f"d{j}")
                rs.append(float(rng.integers(0, 6)))  # many ties
    rq += ["run-only"]
    rd += ["d1"]
    rs += [1.0]
    return Qrels.from_columns(q, d, g), Run.from_columns(rq, rd, rs)


@pytest.mark.parametrize("policy", [{}, {"missing": "ignore", "no_relevant": "zero"}])
@pytest.mark.parametrize("partitions", [1, 3, 7])
def test_partitioned_on_ray_equals_local(ray_local: Any, policy: dict[str, str], partitions: int) -> None:
    from ragmeter.distributed.ir_eval import evaluate_ray

    qrels, run = _workload(partitions)
    local = evaluate(qrels, run, MEASURES, **policy)  # type: ignore[arg-type]
    remote = evaluate_ray(qrels, run, MEASURES, partitions=partitions, **policy)
    assert remote.per_query == local.per_query
    assert remote.aggregate == local.aggregate  # bit for bit: the same values summed by the same code
    assert remote.n_queries == local.n_queries
    assert remote.n_queries_without_relevant == local.n_queries_without_relevant
    assert remote.n_run_only_queries == local.n_run_only_queries == 1
    assert remote.policy_notes() == local.policy_notes()


def test_dense_index_on_ray_data_is_the_local_index(ray_local: Any, tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    from ragmeter.datasets import demo_dataset
    from ragmeter.distributed.ray_index import build_dense_index_ray
    from ragmeter.systems.pipeline import Pipeline

    corpus = demo_dataset().corpus
    assert corpus
    local = Pipeline(corpus, mode="semantic", collection="demo", index_dir=tmp_path / "local").build()
    remote = Pipeline(corpus, mode="semantic", collection="demo", index_dir=tmp_path / "ray")
    folder = build_dense_index_ray(remote, workers=2, rows_per_task=16)
    assert folder is not None and (folder / "embeddings.npy").is_file()
    remote.build()
    assert remote.dense is not None and local.dense is not None
    assert not remote.dense.built  # the pipeline loaded the files Ray wrote instead of building
    assert local.dense.matrix is not None and remote.dense.matrix is not None
    np.testing.assert_allclose(remote.dense.matrix, local.dense.matrix, atol=1e-5)
    for question in ("how does BM25 rank documents", "what is reciprocal rank fusion"):
        assert [h.doc_id for h in remote.retrieve(question, 5)] == [
            h.doc_id for h in local.retrieve(question, 5)
        ]


def test_eval_cli_with_the_ray_executor_prints_the_local_numbers(ray_local: Any, tmp_path: Path) -> None:
    """`ragmeter eval --executor ray:ADDRESS` against this session's Ray: JSON identical to the local engine."""
    import subprocess
    import sys

    qrels, run = _workload(11)
    qrels.to_trec(tmp_path / "q.qrels")
    run_lines = [
        f"{q} Q0 {d} {i + 1} {s!r} t" for q in run.query_ids for i, (d, s) in enumerate(run.query(q))
    ]
    (tmp_path / "r.run").write_text("\n".join(run_lines) + "\n")
    address = ray_local.get_runtime_context().gcs_address
    base = [sys.executable, "-m", "ragmeter", "eval", str(tmp_path / "q.qrels"), str(tmp_path / "r.run")]
    base += ["-m", "ndcg@10", "-m", "map", "-m", "mrr", "--per-query", "--format", "json"]
    local = subprocess.run(base, capture_output=True, text=True, check=True)
    remote = subprocess.run(
        [*base, "--executor", f"ray:{address}"], capture_output=True, text=True, check=True
    )
    assert remote.stdout == local.stdout and '"per_query"' in local.stdout
    bad = subprocess.run([*base, "--executor", "spark"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--executor" in bad.stderr
