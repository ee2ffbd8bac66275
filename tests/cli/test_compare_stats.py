"""`runs compare` with effect sizes, MDE, Tukey HSD over three runs and --cluster-by; `ragmeter plan`."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from cli_fakes import dataset

Cli = Callable[..., tuple[int, str, str]]


def _run(cli: Cli, env: dict[str, str], system: str, data: str | None = None) -> str:
    code, out, err = cli(
        "run", "-d", data or env["dataset"], "-s", system, "--no-generation", "--no-progress",
        "--metrics", "mrr,ndcg@3", "--db", env["db"], "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    run_id: str = json.loads(out)["run_id"]
    return run_id


def test_compare_effect_sizes_mde_and_tukey(cli_env: dict[str, str], ragmeter_cli: Cli) -> None:
    ids = [_run(ragmeter_cli, cli_env, f"cli_fakes:{s}") for s in ("system_a", "system_b", "system_a")]
    code, out, err = ragmeter_cli(
        "runs", "compare", *ids, "--resamples", "500", "--db", cli_env["db"], "--format", "json"
    )
    assert code == 0, err
    report = json.loads(out)
    mrr = next(r for r in report["comparisons"][0]["metrics"] if r["metric"] == "mrr")
    assert mrr["dz"] is not None and mrr["dz_ci95"] is not None and mrr["mde"] > 0
    assert "paired over queries" in report["comparisons"][0]["method"]
    tukey = [r for r in report["tukey_hsd"] if r["metric"] == "mrr"]
    assert {(r["a"], r["b"]) for r in tukey} == {(ids[0], ids[1]), (ids[0], ids[2]), (ids[1], ids[2])}
    same = next(r for r in tukey if (r["a"], r["b"]) == (ids[0], ids[2]))
    assert same["delta"] == 0 and same["p_tukey"] == 1.0
    code, out, err = ragmeter_cli("runs", "compare", *ids, "--resamples", "500", "--db", cli_env["db"])
    assert code == 0, err
    assert "d_z [95% CI]" in out and "MDE" in out and "Tukey HSD" in out and "within query" in out


def test_compare_cluster_by(cli_env: dict[str, str], ragmeter_cli: Cli, tmp_path: Path) -> None:
    data = dataset()
    for i, q in enumerate(data.queries):
        q.metadata["region"] = "west" if i % 2 else "east"
    path = tmp_path / "caps_regions.json"
    path.write_text(data.model_dump_json())
    a = _run(ragmeter_cli, cli_env, "cli_fakes:system_a", str(path))
    b = _run(ragmeter_cli, cli_env, "cli_fakes:system_b", str(path))
    args = ("runs", "compare", a, b, "--resamples", "500", "--db", cli_env["db"])
    code, out, err = ragmeter_cli(*args, "--cluster-by", "region", "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["cluster_by"] == "region" and report["method"].startswith("clustered by region")
    assert all(r["n_clusters"] == 2 for r in report["metrics"] if r["n_pairs"])
    code, out, err = ragmeter_cli(*args, "--cluster-by", "region")
    assert code == 0 and "clustered by region" in out
    code, out, err = ragmeter_cli(*args, "--cluster-by", "topic")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "--cluster-by topic" in err and "has no metadata field 'topic'" in err


def test_plan(cli_env: dict[str, str], ragmeter_cli: Cli) -> None:
    from ragmeter.stats.power import queries_needed
    from ragmeter.store import open_store

    a = _run(ragmeter_cli, cli_env, "cli_fakes:system_a")
    b = _run(ragmeter_cli, cli_env, "cli_fakes:system_b")
    code, out, err = ragmeter_cli(
        "plan",
        "--pilot",
        a,
        "--vs",
        b,
        "--metric",
        "mrr",
        "--mde",
        "0.1",
        "--db",
        cli_env["db"],
        "--format",
        "json",
    )
    assert code == 0, err
    plan = json.loads(out)
    store = open_store(cli_env["db"])
    try:
        va = {q.query_id: q.metrics["mrr"].value for q in store.get_run(a).per_query}
        vb = {q.query_id: q.metrics["mrr"].value for q in store.get_run(b).per_query}
    finally:
        store.close()
    d = np.array([vb[q] - va[q] for q in sorted(va)])
    assert plan["sd_d"] == pytest.approx(d.std(ddof=1))
    assert plan["queries_needed"] == queries_needed(0.1, float(d.std(ddof=1)))
    assert plan["power_at_needed"] >= 0.8
    code, out, err = ragmeter_cli(
        "plan", "--pilot", a, "--metric", "mrr", "--mde", "0.1", "--rho", "0.5", "--db", cli_env["db"]
    )
    assert code == 0, err
    x = np.array(list(va.values()))
    assert f"queries needed: {queries_needed(0.1, math.sqrt(x.var(ddof=1)))} " in out
    code, out, err = ragmeter_cli(
        "plan", "--pilot", a, "--metric", "mrr", "--mde", "0.1", "--cluster-by", "doc", "--db", cli_env["db"]
    )
    assert code == 2 and len(err.strip().splitlines()) == 1 and "no clustered form" in err
    code, out, err = ragmeter_cli(
        "plan", "--pilot", a, "--metric", "nope", "--mde", "0.1", "--db", cli_env["db"]
    )
    assert code == 2 and "Traceback" not in err
