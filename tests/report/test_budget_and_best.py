"""A demo judged sample stopped by its time budget says so (not "interrupted (Ctrl-C / cancelled)"), and a
run of 1 query is never marked best against runs of 60 in the report's summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragmeter.models import EvalConfig


def test_a_one_query_run_is_not_best_against_sixty(make_run: Any) -> None:
    from ragmeter.report.html import _summary_rows, render_html

    big_a, big_b = make_run("a", 1, n=60), make_run("b", 2, n=60)
    tiny = make_run("tiny", 3, n=1, boost=1.0)  # every retrieval value 1.0: the highest mean
    rows = {r["metric"]: r for r in _summary_rows([big_a, big_b, tiny], ["recall@10", "mrr"])}
    cells = rows["recall@10"]["cells"]
    assert cells[2]["mean"] > max(cells[0]["mean"], cells[1]["mean"])
    assert not cells[2]["best"] and sum(c["best"] for c in cells) == 1
    assert cells[0]["best"] == (cells[0]["mean"] >= cells[1]["mean"])
    # Two runs of comparable size still compete.
    rows = {r["metric"]: r for r in _summary_rows([big_a, make_run("c", 4, n=40, boost=1.0)], ["recall@10"])}
    assert rows["recall@10"]["cells"][1]["best"]
    assert "at least half as many queries" in render_html([big_a, tiny], plots=False)


def test_a_demo_run_stopped_by_its_budget_is_labelled_so(tmp_path: Path, monkeypatch: Any) -> None:
    from ragmeter.cli.demo import _score_what_was_judged
    from ragmeter.datasets import load_dataset
    from ragmeter.run import run_evaluation
    from ragmeter.store import open_store

    monkeypatch.chdir(tmp_path)
    dataset = load_dataset("demo", seed=1)
    config = EvalConfig(dataset="demo", limit=3, mode="fulltext", evaluate_generation=False)
    with open_store(str(tmp_path / "s.db")) as store:
        run = run_evaluation(dataset, "builtin", config, store=store, name="demo hybrid generated+judged")
        assert run.run_id is not None
        # What the run loop records when the budget's wait_for cancels the run.
        store.fail_run(
            run.run_id,
            f"interrupted (Ctrl-C / cancelled); resume it with `ragmeter run --resume {run.run_id}`",
        )
        partial = _score_what_was_judged(dataset, config.model_copy(update={"limit": 10}), store)
        stored = store.get_run(run.run_id, with_queries=False)
    assert partial is not None and partial.status == "failed"
    for error in (partial.error, stored.error):
        assert error is not None and "time budget after 3 of 10 questions" in error
        assert "Ctrl-C" not in error and f"--resume {run.run_id}" in error
    assert stored.status == "failed"
