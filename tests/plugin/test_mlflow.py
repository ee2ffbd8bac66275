"""MLflow logging, read back through MLflow's own client from real local stores (SQLite and file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from plugin_expected import MRR, RECALL_1

from ragmeter.cli import cli
from ragmeter.integrations.mlflow import log_run, metric_key, run_metrics
from ragmeter.models import EvalConfig, EvalRunResult, MetricSummary

mlflow = pytest.importorskip("mlflow", reason="the `mlflow` extra (mlflow-skinny) is not installed")
from mlflow.tracking import MlflowClient  # noqa: E402


def _result() -> EvalRunResult:
    return EvalRunResult(
        run_id="20260101-000000-abcdef",
        name="nightly",
        config=EvalConfig(dataset="capitals", system="mod:fn", judge_model="openai:gpt-x", seed=7),
        dataset_hash="sha256:1234",
        versions={"ragmeter": "0.1.0", "sentence-transformers": "5.0"},
        n_queries=10,
        n_failed=1,
        aggregate={
            "ndcg@10": MetricSummary(
                mean=0.61, std=0.2, n=9, ci95=(0.5, 0.72), ci_method="bootstrap-percentile"
            ),
            "faithfulness": MetricSummary(mean=None, std=None, n=0, n_null=9),
        },
        usage={
            "total": {
                "calls": 12,
                "input_tokens": 3400,
                "output_tokens": 120,
                "cost_usd": 0.0123,
                "cost_note": None,
            },
            "judge_by_metric": {"faithfulness": {"calls": 9, "cost_usd": None}},
        },
    )


def test_metric_keys_are_valid_mlflow_names() -> None:
    assert metric_key("ndcg@10") == "ndcg_at_10"
    assert metric_key("latency_total_ms") == "latency_total_ms"
    assert metric_key("a b(c)") == "a b_c_"
    metrics = run_metrics(_result())
    assert metrics["ndcg_at_10"] == 0.61 and (metrics["ndcg_at_10.ci_lo"], metrics["ndcg_at_10.ci_hi"]) == (
        0.5,
        0.72,
    )
    assert "faithfulness" not in metrics and metrics["faithfulness.n_null"] == 9
    assert (
        metrics["usage.total.cost_usd"] == 0.0123 and metrics["usage.judge_by_metric.faithfulness.calls"] == 9
    )
    assert "usage.judge_by_metric.faithfulness.cost_usd" not in metrics  # unknown cost: not a 0


def test_log_run_to_a_file_store_read_back_with_mlflow_client(tmp_path: Path) -> None:
    uri = (tmp_path / "mlruns").as_uri()
    artifact = tmp_path / "run.csv"
    artifact.write_text("query_id,ndcg@10\nq1,0.5\n")
    logged = log_run(_result(), tracking_uri=uri, experiment="ci", artifacts=[artifact])
    assert "MLFLOW_ALLOW_FILE_STORE" not in os.environ  # the opt-in lasted only for the call

    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"  # reading a file store back needs it too
    try:
        client = MlflowClient(tracking_uri=uri)
        run = client.get_run(logged.run_id)
        assert client.get_experiment(logged.experiment_id).name == "ci"
        assert run.info.status == "FINISHED" and run.info.run_name == "nightly"
        params = run.data.params
        assert params["dataset"] == "capitals" and params["system"] == "mod:fn" and params["seed"] == "7"
        assert params["judge_model"] == "openai:gpt-x" and params["dataset_hash"] == "sha256:1234"
        assert (
            params["ragmeter_run_id"] == "20260101-000000-abcdef"
            and params["version.sentence-transformers"] == "5.0"
        )
        assert json.loads(params["retrieval_top_k"]) == [1, 3, 5, 10]
        m = run.data.metrics
        assert m["ndcg_at_10"] == 0.61 and m["ndcg_at_10.ci_lo"] == 0.5 and m["ndcg_at_10.ci_hi"] == 0.72
        assert m["usage.total.input_tokens"] == 3400 and m["n_failed"] == 1
        assert run.data.tags["ragmeter.metric.ndcg_at_10"] == "ndcg@10"
        assert [a.path for a in client.list_artifacts(logged.run_id)] == ["run.csv"]
    finally:
        os.environ.pop("MLFLOW_ALLOW_FILE_STORE", None)


def test_cli_run_logs_to_mlflow_default_sqlite_store(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--mlflow` with no URI: MLflow's own default, sqlite:///mlflow.db in the working directory."""
    monkeypatch.chdir(project)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    monkeypatch.setenv("RAGMETER_DB", str(project / "cli.db"))
    args = ["run", "--dataset", "capitals4.json", "--system", "fixed_system:retrieve", "--no-generation"]
    args += ["--top-k", "1,3", "--no-progress", "--name", "mlflow-cli", "--format", "json"]
    result = CliRunner().invoke(cli, [*args, "--mlflow", "--fail-under", "recall@1=0.9"])
    assert result.exit_code == 1, result.output  # the gate still decides the exit code
    ours = json.loads(result.stdout)
    assert (project / "mlflow.db").is_file()
    assert "MLflow: run " in result.stderr

    client = MlflowClient(tracking_uri=f"sqlite:///{project / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("ragmeter")
    assert experiment is not None
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.data.params["ragmeter_run_id"] == ours["run_id"]
    assert run.data.metrics["recall_at_1"] == pytest.approx(RECALL_1)
    assert run.data.metrics["mrr"] == pytest.approx(MRR)
    lo, hi = ours["aggregate"]["mrr"]["ci95"]
    assert (run.data.metrics["mrr.ci_lo"], run.data.metrics["mrr.ci_hi"]) == (lo, hi)
    artifacts = sorted(a.path for a in client.list_artifacts(run.info.run_id))
    assert artifacts == [f"{ours['run_id']}.csv", f"{ours['run_id']}.json"]
    local = client.download_artifacts(run.info.run_id, f"{ours['run_id']}.json", str(project / "dl"))
    assert json.loads(Path(local).read_text())["aggregate"]["mrr"]["mean"] == pytest.approx(MRR)


def test_without_the_extra_one_line_names_it(project: Path) -> None:
    """A Python without mlflow importable: `--mlflow` is one line naming the extra, exit 2."""
    blocker = project / "blocker"
    blocker.mkdir()
    (blocker / "mlflow.py").write_text("raise ImportError('blocked for the test')\n")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(blocker), str(project)]),
        "RAGMETER_DB": str(project / "x.db"),
    }
    args = ["run", "--dataset", "capitals4.json", "--system", "fixed_system:retrieve", "--no-generation"]
    out = subprocess.run(
        [sys.executable, "-m", "ragmeter", *args, "--no-progress", "--mlflow"],
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
        timeout=300,
    )
    assert out.returncode == 2, out.stderr
    assert "pip install 'ragmeter[mlflow]'" in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert not (project / "x.db").exists()  # refused before the run: nothing evaluated or stored
