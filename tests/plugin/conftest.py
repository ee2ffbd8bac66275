"""Fixtures of the pytest-plugin, JUnit and MLflow tests: a tiny dataset and a system with known rankings.

Four queries, one relevant document each; the system's rankings are fixed, so the metrics are known by
hand: q1 and q2 find their document at rank 1, q3 at rank 3, q4 not at all. recall@1 = (1+1+0+0)/4 =
0.5; ndcg@3 = (1 + 1 + 1/log2(4) + 0)/4 = 0.625; mrr = (1 + 1 + 1/3 + 0)/4.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from plugin_expected import MRR, NDCG_3, RECALL_1  # noqa: F401 - re-exported for the fixtures

DOCS = {
    "d1": "Paris is the capital of France.",
    "d2": "Berlin is the capital of Germany.",
    "d3": "Madrid is the capital of Spain.",
    "d4": "Rome is the capital of Italy.",
}
QUERIES = [  # (id, question, relevant doc, the system's ranking)
    ("q1", "What is the capital of France?", "d1", ["d1", "d2", "d3"]),
    ("q2", "What is the capital of Germany?", "d2", ["d2", "d1", "d3"]),
    ("q3", "What is the capital of Spain?", "d3", ["d1", "d2", "d3"]),
    ("q4", "What is the capital of Italy?", "d4", ["d1", "d2", "d3"]),
]

SYSTEM_MODULE = f'''
"""A system with fixed rankings (written by tests/plugin/conftest.py)."""
DOCS = {DOCS!r}
RANKING = {{q: ranking for _, q, _, ranking in {QUERIES!r}}}


def retrieve(question, k):
    return [(d, 1.0 / (i + 1), DOCS[d]) for i, d in enumerate(RANKING[question][:k])]
'''


def dataset_json() -> str:
    return json.dumps(
        {
            "name": "capitals4",
            "queries": [
                {
                    "query_id": qid,
                    "question": q,
                    "relevant_doc_ids": [rel],
                    "ground_truth_answer": DOCS[rel].split()[0],
                }
                for qid, q, rel, _ in QUERIES
            ],
            "corpus": [{"doc_id": d, "text": t} for d, t in DOCS.items()],
        }
    )


def qrels_text() -> str:
    return "".join(f"{qid} 0 {rel} 1\n" for qid, _, rel, _ in QUERIES)


def run_text() -> str:
    lines = []
    for qid, _, _, ranking in QUERIES:
        lines += [f"{qid} Q0 {d} {i + 1} {1.0 / (i + 1)} sys\n" for i, d in enumerate(ranking)]
    return "".join(lines)


def pytest_configure(config: pytest.Config) -> None:
    # `pytest_plugins` is only allowed in the root conftest: register pytester from here instead.
    if not config.pluginmanager.has_plugin("pytester"):
        config.pluginmanager.import_plugin("pytester")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding the system module and the dataset, on sys.path (pytester's sessions run in
    their own folder, so this one is not the working directory)."""
    monkeypatch.delenv("RAGMETER_DB", raising=False)
    # The inner (pytester) sessions are not xdist workers, even when this suite runs under xdist: without
    # this, an in-process inner session would write to the outer worker's per-worker store file.
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    (tmp_path / "fixed_system.py").write_text(SYSTEM_MODULE)
    (tmp_path / "capitals4.json").write_text(dataset_json())
    (tmp_path / "qrels.txt").write_text(qrels_text())
    (tmp_path / "run.txt").write_text(run_text())
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


@pytest.fixture(scope="session", autouse=True)
def _import_before_pytester(tmp_path_factory: pytest.TempPathFactory) -> None:
    """In-process pytester sessions drop the modules first imported inside them when they end, and numpy's
    or SQLAlchemy's compiled parts cannot be imported twice in one process: do out here, once, what the
    inner sessions do (an evaluation stored in SQLite, an IR evaluation of files)."""
    import ragmeter
    from ragmeter.models import EvalConfig

    folder = tmp_path_factory.mktemp("preload")
    (folder / "capitals4.json").write_text(dataset_json())
    config = EvalConfig(retrieval_top_k=[1, 3], evaluate_generation=False, extra={"semantic": False})

    def system(question: str, k: int) -> list[tuple[str, float, str]]:
        return [(d, 1.0, DOCS[d]) for d in list(DOCS)[:k]]

    ragmeter.run_evaluation(
        str(folder / "capitals4.json"), system, config, store=str(folder / "preload.db"), progress=False
    )
    (folder / "qrels.txt").write_text(qrels_text())
    (folder / "run.txt").write_text(run_text())
    qrels, run = ragmeter.Qrels.read(folder / "qrels.txt"), ragmeter.Run.read(folder / "run.txt")
    ragmeter.evaluate(qrels, run, ["ndcg@3"])
