"""Kill the driver of a Ray run mid-run (a real child process, SIGKILL), resume it with either executor:
each query once, non-LLM numbers identical to an uninterrupted local run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from ray_systems import make_dataset

from ragmeter.models import EvalConfig
from ragmeter.run.api import run_evaluation

HERE = Path(__file__).resolve().parent
CONFIG = {"dataset": "capitals", "retrieval_top_k": [1, 3], "evaluate_generation": False, "concurrency": 2}

CHILD = textwrap.dedent(
    """
    import sys
    from ray_systems import make_dataset
    from ragmeter.run.ray_executor import RayExecutor
    from ragmeter.models import EvalConfig
    from ragmeter.run.api import run_evaluation
    url, address = sys.argv[1], sys.argv[2]
    ds = make_dataset()
    config = EvalConfig.model_validate({config!r})
    run_evaluation(ds, "ray_systems:slow_keyword_retrieve", config, store=url, progress=False,
                   name="ray-kill", executor=RayExecutor(ds, address=address, workers=2, concurrency=1))
    """
).format(config=CONFIG)


def _values(result: Any) -> dict[str, dict[str, float | None]]:
    return {
        r.query_id: {k: m.value for k, m in r.metrics.items() if not k.startswith("latency_")}
        for r in result.per_query
    }


@pytest.mark.parametrize("resume_with", ["local", "ray"])
def test_driver_killed_mid_run_resumes_with_each_query_once(
    ray_local: Any, tmp_path: Path, resume_with: str
) -> None:
    from ragmeter.run.ray_executor import RayExecutor
    from ragmeter.store import open_store

    address = ray_local.get_runtime_context().gcs_address
    url = f"sqlite:///{tmp_path / 'kill.db'}"
    env = {
        **os.environ,
        "RAGMETER_TEST_DELAY": "0.6",
        "PYTHONPATH": f"{HERE}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
    }
    child = subprocess.Popen([sys.executable, "-c", CHILD, url, address], env=env, cwd=tmp_path)
    run_id, done = None, 0
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.2)
            if not (tmp_path / "kill.db").exists():
                continue
            with open_store(url, sweep=False) as store:
                runs = [r for r in store.list_runs() if r.name == "ray-kill"]
                if runs:
                    run_id = runs[0].run_id
                    done = len(store.query_results(run_id or ""))
            if done >= 3:
                break
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    assert run_id is not None and 3 <= done < 12, f"killed at {done} of 12 stored results"

    ds = make_dataset()
    executor = RayExecutor(ds, workers=2, concurrency=2) if resume_with == "ray" else None
    resumed = run_evaluation(ds, None, None, store=url, resume=run_id, progress=False, executor=executor)
    uninterrupted = run_evaluation(
        ds, "ray_systems:keyword_retrieve", EvalConfig.model_validate(CONFIG), store=False, progress=False
    )
    assert resumed.status == "completed" and resumed.n_queries == 12 and resumed.n_failed == 0
    assert _values(resumed) == _values(uninterrupted)
    assert {k: s.mean for k, s in resumed.aggregate.items() if not k.startswith("latency_")} == {
        k: s.mean for k, s in uninterrupted.aggregate.items() if not k.startswith("latency_")
    }
    with open_store(url) as store:
        stored = store.query_results(run_id)
    assert sorted(r.query_id for r in stored) == sorted(q.query_id for q in ds.queries)
