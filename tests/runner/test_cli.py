"""The CLI: run, runs, ingest, testcases (in-process with click's runner; exit codes via subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from runner_fakes import make_dataset

from ragmeter.cli import cli
from ragmeter.errors import InputError

HERE = Path(__file__).resolve().parent


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGMETER_DB", str(tmp_path / "cli.db"))
    (tmp_path / "capitals.json").write_text(make_dataset().model_dump_json())
    return {"db": str(tmp_path / "cli.db"), "dataset": str(tmp_path / "capitals.json")}


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _ragmeter(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    src = str(HERE.parents[1] / "src")
    pythonpath = os.pathsep.join([src, str(HERE), os.environ.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "ragmeter", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": pythonpath},
        timeout=120,
    )


def test_run_outputs_and_fail_under(env: dict[str, str], tmp_path: Path) -> None:
    base = [
        "run",
        "--dataset",
        env["dataset"],
        "--system",
        "runner_fakes:keyword_retrieve",
        "--no-generation",
        "--top-k",
        "1,5",
        "--no-progress",
    ]
    code, out, _ = _run(*base, "--output", "res/a.json", "--fail-under", "ndcg@5=0.5")
    assert code == 0, out
    assert "ndcg@5" in out and "res/a.json" in out
    data = json.loads((tmp_path / "res" / "a.json").read_text())
    assert data["status"] == "completed" and data["config"]["system"] == "runner_fakes:keyword_retrieve"
    assert (tmp_path / "res" / "a.csv").read_text().startswith("query_id,status,error")
    ndcg5 = data["aggregate"]["ndcg@5"]["mean"]

    code, out, err = _run(
        *base,
        "--fail-under",
        "ndcg@5=1",  # the top of its range (a value beyond it is refused)
        "--fail-under",
        "precision@5=0.9",
        "--fail-under",
        "recall@5=0.1",
    )
    assert code == 1
    assert (
        ndcg5 == 1 and "ndcg@5" not in err
    )  # at the top of the range: the gate passes and "precision@5 = " in err and "recall@5" not in err

    # default output location when --output is not given
    code, out, _ = _run(*base, "--format", "json")
    assert code == 0
    run = json.loads(out)
    assert (tmp_path / ".ragmeter" / "runs" / f"{run['run_id']}.json").is_file()
    assert len(run["per_query"]) == 12


def test_bad_input_is_one_line_and_exit_2(env: dict[str, str], tmp_path: Path) -> None:
    proc = _ragmeter(
        "run",
        "--dataset",
        env["dataset"],
        "--system",
        "runner_fakes:keyword_retrieve",
        "--no-generation",
        "--fail-under",
        "nosuch@3=1",
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    assert (
        proc.stderr.strip().splitlines()[-1].startswith("ragmeter: error: --fail-under: no metric 'nosuch@3'")
    )
    assert "Traceback" not in proc.stderr
    proc = _ragmeter("run", "--config", str(tmp_path / "missing.yaml"), cwd=tmp_path)
    assert proc.returncode == 2 and "missing.yaml: no such config file" in proc.stderr
    proc = _ragmeter("runs", "show", "no-such-run", cwd=tmp_path)
    assert proc.returncode == 2 and "no run 'no-such-run'" in proc.stderr


def test_config_file_with_cli_override(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "cfg.toml").write_text(
        f'dataset = "{env["dataset"]}"\nsystem = "runner_fakes:keyword_retrieve"\n'
        "evaluate_generation = false\nretrieval_top_k = [2]\nlimit = 4\n"
    )
    code, out, _ = _run("run", "--config", "cfg.toml", "--limit", "6", "--format", "json", "--no-progress")
    assert code == 0
    data = json.loads(out)
    assert (
        data["n_queries"] == 6 and "ndcg@2" in data["aggregate"] and data["config"]["retrieval_top_k"] == [2]
    )


def test_runs_list_show_compare_export_delete(env: dict[str, str], tmp_path: Path) -> None:
    base = [
        "run",
        "--dataset",
        env["dataset"],
        "--system",
        "runner_fakes:keyword_retrieve",
        "--no-generation",
        "--no-progress",
        "--format",
        "json",
    ]
    a = json.loads(_run(*base, "--top-k", "1,5")[1])
    b = json.loads(_run(*base, "--top-k", "1,5", "--limit", "6")[1])

    code, out, _ = _run("runs", "list", "--format", "json")
    listed = json.loads(out)
    assert code == 0 and [r["run_id"] for r in listed] == [b["run_id"], a["run_id"]]
    assert all("per_query" not in r for r in listed)  # the list is light: no per-query results
    code, out, _ = _run("runs", "list")
    assert a["run_id"] in out and "completed" in out

    code, out, _ = _run("runs", "show", a["run_id"], "--format", "json")
    shown = json.loads(out)
    assert shown["run_id"] == a["run_id"] and len(shown["per_query"]) == 12
    assert shown["aggregate"] == a["aggregate"]

    code, out, _ = _run("runs", "compare", a["run_id"], b["run_id"], "--format", "json")
    rows = {r["metric"]: r for r in json.loads(out)["metrics"]}
    # B evaluated a subset with the same system: identical per-query values, so only ties
    r = rows["ndcg@5"]
    assert r["wins"] == 0 and r["losses"] == 0 and r["ties"] == b["aggregate"]["ndcg@5"]["n"]
    assert r["delta"] == pytest.approx(r["b"] - r["a"])
    code, out, _ = _run("runs", "compare", a["run_id"], b["run_id"])
    assert "B - A" in out and "ndcg@5" in out and "p Holm" in out and "95% CI" in out
    # three runs: each against the first, with paired tests; identical values give no evidence of a change
    code, out, _ = _run(
        "runs", "compare", a["run_id"], b["run_id"], a["run_id"], "--format", "json", "--resamples", "500"
    )
    three = json.loads(out)
    assert code == 0 and [c["b"] for c in three["comparisons"]] == [b["run_id"], a["run_id"]]
    for comparison in three["comparisons"]:
        r = {m["metric"]: m for m in comparison["metrics"]}["ndcg@5"]
        assert r["ci95"] == [0.0, 0.0] and r["p_perm"] == 1.0 and r["p_holm"] == 1.0
    with pytest.raises(InputError, match="at least two"):
        _run("runs", "compare", a["run_id"])

    code, out, _ = _run("runs", "export", a["run_id"], "--format", "csv")
    assert out.splitlines()[0].startswith("query_id,") and len(out.splitlines()) == 13
    _run("runs", "export", a["run_id"], "-o", "exp.json")
    assert json.loads((tmp_path / "exp.json").read_text())["run_id"] == a["run_id"]

    code, out, _ = _run("runs", "delete", b["run_id"], "--yes")
    assert code == 0 and f"deleted {b['run_id']}" in out
    assert [r["run_id"] for r in json.loads(_run("runs", "list", "--format", "json")[1])] == [a["run_id"]]


def test_ingest_testcases_and_run_on_the_store(env: dict[str, str], tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "paris.md").write_text("# Paris\nParis is the capital of France.\n")
    (docs / "rome.txt").write_text("Rome is the capital of Italy.\n")
    code, out, _ = _run("ingest", str(docs), "--collection", "geo")
    assert code == 0 and "ingested 2 documents (2 chunks)" in out

    code, out, _ = _run(
        "testcases",
        "add",
        "-c",
        "geo",
        "-q",
        "What is the capital of France?",
        "--id",
        "t1",
        "--answer",
        "Paris",
        "--chunk",
        "paris#0",
    )
    assert code == 0 and "t1" in out
    _run("testcases", "add", "-c", "geo", "-q", "What is the capital of Italy?", "--id", "t2")
    code, out, _ = _run(
        "testcases", "ground-truth", "t2", "-c", "geo", "--answer", "Rome", "--add-chunk", "rome#0"
    )
    assert "relevant chunks=rome#0" in out
    code, out, _ = _run("testcases", "list", "-c", "geo", "--format", "json")
    cases = json.loads(out)
    assert [(c["query_id"], c["ground_truth_answer"], c["relevant_doc_ids"]) for c in cases] == [
        ("t1", "Paris", ["paris#0"]),
        ("t2", "Rome", ["rome#0"]),
    ]
    with pytest.raises(Exception, match="no chunk 'nope#0'"):
        CliRunner().invoke(
            cli, ["testcases", "add", "-c", "geo", "-q", "x", "--chunk", "nope#0"], catch_exceptions=False
        )

    # the collection's test cases are a dataset; the built-in BM25 pipeline retrieves its chunks
    code, out, _ = _run(
        "run",
        "--dataset",
        "store:geo",
        "--mode",
        "fulltext",
        "--no-generation",
        "--top-k",
        "1",
        "--format",
        "json",
        "--no-progress",
    )
    data = json.loads(out)
    assert code == 0 and data["n_queries"] == 2
    assert data["aggregate"]["recall@1"]["mean"] == 1.0
