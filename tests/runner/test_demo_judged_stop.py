"""The demo's judged part always says what it did: when its time budget ends before the first question is
judged, one line names how far it got, why it stopped and the command that finishes it (it used to print
nothing). Real HTTP to a scripted OpenAI-compatible server whose replies take longer than the budget."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragmeter.llm.scripted import ScriptedRequest, ScriptedServer, Step
from scripted_servers import serve_in_thread


@pytest.fixture
def slow_server() -> Iterator[ScriptedServer]:
    """A server on its own loop in a thread (the demo runs its own loop) that answers after 30 s."""

    def responder(req: ScriptedRequest) -> Step:
        return Step(text='{"reasoning": "late", "grade": 5}', delay=30.0)

    with serve_in_thread(responder) as server:
        yield server


def _config(url: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    from ragmeter.models import EvalConfig

    spec = f"openai-compatible:m@{url}"
    return EvalConfig(
        dataset="demo",
        system="builtin",
        mode="fulltext",
        use_llm_judge=True,
        judge_model=spec,
        generator_model=spec,
        limit=2,
        concurrency=2,
        metrics=["token_f1", "retrieval_grade", "answer_correctness"],
        output=str(tmp_path / "hybrid-judged.json"),
        extra={"semantic": False, "context_k": 3},
    )


def test_a_budget_that_ends_before_the_first_answer_says_so_in_one_line(
    slow_server: ScriptedServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("bm25s")
    from ragmeter.cli import demo
    from ragmeter.datasets import demo_dataset
    from ragmeter.store import open_store

    monkeypatch.setattr(demo, "MIN_JUDGING_S", 0.0)  # a 4 s budget: the slow server's reply takes 30 s

    store = open_store(f"sqlite:///{tmp_path / 'demo.db'}")
    config = _config(slow_server.url, tmp_path)
    judged = demo._judge_within_budget(demo_dataset(), config, store, 4.0, True, None, 150.0)
    out = capsys.readouterr().out
    assert judged is None
    lines = [line for line in out.splitlines() if "judging stopped" in line]
    assert len(lines) == 1, out
    (run,) = [r for r in store.list_runs(limit=5) if r.name == "demo hybrid generated+judged"]
    assert "judging stopped by the demo's 150 s time budget after 0 of 2 questions" in lines[0]
    assert "no reply from 'm' yet after" in lines[0]  # how far it got
    assert lines[0].rstrip().endswith(f"finish it with `ragmeter run --resume {run.run_id}`")
    stored = store.get_run(run.run_id, with_queries=False)
    assert stored.status == "failed" and "after 0 of 2 questions" in (stored.error or "")
    store.close()


def test_no_time_left_names_the_command_that_judges(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from ragmeter.cli import demo
    from ragmeter.datasets import demo_dataset
    from ragmeter.models import EvalConfig

    config = EvalConfig(
        dataset="demo", use_llm_judge=True, judge_model="local", generator_model="local", limit=3
    )
    assert demo._judge_within_budget(demo_dataset(), config, None, 5.0, True, None, 150.0) is None
    (line,) = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert "judging not started: 5 s of the demo's 150 s time budget were left" in line
    assert line.rstrip().endswith(
        "`ragmeter run --dataset demo --system ragmeter.systems.demo:DemoHybridLocal --mode hybrid "
        "--generator local --judge local --limit 3`"
    )
