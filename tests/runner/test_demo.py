"""`ragmeter demo` end to end (real BM25, real MiniLM embeddings), judging off: slow, run by CI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragmeter.cli.demo import _judge_hint

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.mark.slow
def test_demo_runs_three_modes_and_says_where_things_are(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("bm25s")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    env.pop("RAGMETER_DB", None)
    proc = subprocess.run(
        [sys.executable, "-m", "ragmeter", "demo", "--no-judge", "--no-progress"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "ingested 40 documents" in out and "LLM judging skipped (--no-judge)" in out
    for mode in ("fulltext", "semantic", "hybrid"):
        data = json.loads((tmp_path / ".ragmeter" / "demo" / f"{mode}.json").read_text())
        assert data["status"] == "completed" and data["n_queries"] == 60 and data["config"]["mode"] == mode
        assert data["aggregate"]["ndcg@10"]["mean"] > 0.5  # the demo's questions are answerable
        assert data["aggregate"]["sbert_similarity"]["n"] > 0 and "token_f1" in data["aggregate"]
        assert (tmp_path / ".ragmeter" / "demo" / f"{mode}.csv").is_file()
        assert data["run_id"] in out
    assert "ragmeter runs compare" in out and (tmp_path / ".ragmeter" / "ragmeter.db").is_file()


def test_judge_hint_names_every_way_to_judge() -> None:
    hint = _judge_hint()
    for needle in ("--judge", "openai-compatible:", "openai:", "anthropic:", "local-judge"):
        assert needle in hint


def test_demo_systems_are_specs_that_resume_can_rebuild() -> None:
    pytest.importorskip("bm25s")
    import asyncio

    from ragmeter.datasets import demo_dataset
    from ragmeter.systems import Retrieved, aanswer, aretrieve, build_system
    from ragmeter.systems.demo import DemoFulltext
    from ragmeter.systems.demo import system_ref as _spec

    system = build_system(_spec(DemoFulltext))
    hits = asyncio.run(aretrieve(system, "What does ragmeter evaluate?", 3))
    corpus_ids = {d.doc_id for d in demo_dataset().corpus or []}
    assert len(hits) == 3 and {h.doc_id for h in hits} <= corpus_ids
    assert system.name.endswith("+extractive")
    contexts = [Retrieved("a", 1.0, "Cats sleep. Ragmeter evaluates retrieval systems. Dogs bark.")]
    answer = asyncio.run(aanswer(system, "What does ragmeter evaluate?", contexts))
    assert answer == "Ragmeter evaluates retrieval systems."
