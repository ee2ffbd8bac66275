"""Pass rates are metric values like any other: stored with the run, read back, and gated by --fail-under."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from runner_fakes import make_dataset

from ragmeter.cli import cli

pytest.importorskip("aiohttp")


@pytest.fixture
def judge_url() -> Iterator[str]:
    """A scripted OpenAI-compatible judge in its own process: grade 9 for every query."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragmeter.llm.scripted", "--text", '{"reasoning": "ok", "grade": 9}'],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_fail_under_gates_a_pass_rate(
    judge_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    db = str(tmp_path / "g.db")
    (tmp_path / "capitals.json").write_text(make_dataset().model_dump_json())
    base = [
        "run",
        "--dataset",
        "capitals.json",
        "--system",
        "runner_fakes:keyword_retrieve",
        "--no-generation",
        "--top-k",
        "1,5",
        "--judge",
        f"openai-compatible:judge@{judge_url}",
        "--metrics",
        "retrieval_grade,ndcg@5",
        "--db",
        db,
        "--no-progress",
    ]
    code, out, err = _run(*base, "--format", "json", "--fail-under", "pass_rate_8=1")
    assert code == 0, err
    run = json.loads(out)
    rate = run["aggregate"]["pass_rate_8"]["mean"]
    totals = [q["metrics"]["total_score"]["value"] for q in run["per_query"]]
    assert rate == pytest.approx(100.0 * sum(t is not None and t >= 8.0 for t in totals) / len(totals))
    assert 0 < rate < 100  # grade 9 passes 8.0 only where the relevant doc is in the top 3

    # stored like any other aggregate: read back from the store, not only from this process's summary
    code, out, _ = _run("runs", "show", run["run_id"], "--format", "json", "--db", db)
    assert code == 0 and json.loads(out)["aggregate"]["pass_rate_8"]["mean"] == pytest.approx(rate)

    code, out, err = _run(*base, "--fail-under", "pass_rate_8=99.5", "--fail-under", "pass_rate_6_5=1")
    assert code == 1
    assert f"pass_rate_8 = {rate:.4f} < 99.5" in err and "pass_rate_6_5" not in err
