"""The pytest plugin, exercised the way users meet it: pytest sessions run with pytester (in process, and
in subprocesses for the entry point and pytest-xdist)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from plugin_expected import MRR, NDCG_3, RECALL_1

from ragmeter.store import open_store

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "store"))
from store_db import PG_ENV, _drop_pg_database, _fresh_pg_database

CONFIG = 'retrieval_top_k=[1, 3], evaluate_generation=False, extra={"semantic": False}'


def _quiet(pytester: pytest.Pytester) -> None:
    # the inner sessions load pytest-asyncio too: set its loop scope so it does not warn
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


def _write_tests(pytester: pytest.Pytester, project: Path, body: str) -> None:
    """A test module for the inner session; `project` holds the system module and the dataset."""
    _quiet(pytester)
    pytester.makepyfile(
        test_inner=f"import sys\nsys.path.insert(0, {str(project)!r})\nimport fixed_system\n"
        f"DATASET = {str(project / 'capitals4.json')!r}\n\n{body}"
    )


def test_registered_through_the_pytest11_entry_point(pytester: pytest.Pytester) -> None:
    plugins = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert plugins.get("ragmeter") == "ragmeter.pytest_plugin"
    # a fresh interpreter, no -p: the options come from the installed entry point alone
    result = pytester.runpytest_subprocess("--help")
    result.stdout.fnmatch_lines(["*ragmeter*", "*--ragmeter-db=URL*", "*--ragmeter-judge=MODEL*"])


def test_plugin_import_is_cheap() -> None:
    code = (
        "import sys, pytest\nbefore = set(sys.modules)\nimport ragmeter.pytest_plugin\n"
        "heavy = {m.split('.')[0] for m in set(sys.modules) - before} & "
        "{'torch', 'sqlalchemy', 'numpy', 'pydantic', 'mlflow', 'ragmeter.store'}\nprint(sorted(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_evaluate_store_and_assert_passing(pytester: pytest.Pytester, project: Path) -> None:
    db = project / "runs.db"
    _write_tests(
        pytester,
        project,
        f"""
def test_quality(ragmeter_eval):
    run = ragmeter_eval.evaluate(fixed_system.retrieve, DATASET, name="plugin-pass", {CONFIG})
    assert run.run_id
    assert run.mean("recall@1") == {RECALL_1!r}
    assert abs(run.mean("ndcg@3") - {NDCG_3!r}) < 1e-12
    assert run.values("recall@1") == {{"q1": 1.0, "q2": 1.0, "q3": 0.0, "q4": 0.0}}
    run.assert_metric("recall@1", 0.5)
    run.assert_metric("mrr", at_least=0.5, at_most=0.6)
    run.assert_metrics({{"ndcg@3": 0.6, "recall@3": 0.75}})
    run.assert_metric("latency_total_ms", 60_000)  # lower is better: at most a minute
    print("RUN_ID=" + run.run_id)
""",
    )
    result = pytester.runpytest("-s", f"--ragmeter-db={db}")
    result.assert_outcomes(passed=1)
    run_id = re.search(r"RUN_ID=(\S+)", result.stdout.str())
    assert run_id is not None
    with open_store(str(db)) as store:
        stored = store.get_run(run_id.group(1))
    assert stored.status == "completed" and stored.name == "plugin-pass"
    assert stored.aggregate["mrr"].mean == pytest.approx(MRR, abs=1e-12)


def test_failing_assertion_names_metric_value_threshold_and_worst_queries(
    pytester: pytest.Pytester, project: Path
) -> None:
    _write_tests(
        pytester,
        project,
        f"""
def test_quality(ragmeter_eval):
    run = ragmeter_eval.evaluate(fixed_system.retrieve, DATASET, {CONFIG})
    run.assert_metric("ndcg@3", 0.9, worst=3)
""",
    )
    result = pytester.runpytest("--ragmeter-db=none")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E*AssertionError: ragmeter: ndcg@3 = 0.6250, wanted at least 0.9",
            "E*run (not stored) dataset=* system=*: mean over 4 values, 95% CI [[]*, *[]] (bootstrap*)",
            "E*worst 3 of 4 queries:",
            "E*q4  0.0000  What is the capital of Italy?",
            "E*q3  0.5000  What is the capital of Spain?",
            "E*q1  1.0000  What is the capital of France?",
        ]
    )
    # the helper's own frames are hidden: the traceback points at the test's line
    assert "def _check(" not in result.stdout.str()


def test_lower_is_better_and_several_failures_in_one_message(
    pytester: pytest.Pytester, project: Path
) -> None:
    _write_tests(
        pytester,
        project,
        f"""
def test_quality(ragmeter_eval):
    run = ragmeter_eval.evaluate(fixed_system.retrieve, DATASET, {CONFIG})
    run.assert_metrics({{"recall@1": 0.75, "mrr": 0.5, "latency_total_ms": 0.0}})
""",
    )
    result = pytester.runpytest("--ragmeter-db=none")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E*AssertionError: ragmeter: 2 of 3 metrics fell short",
            "E*recall@1 = 0.5000, wanted at least 0.75",
            "E*latency_total_ms = *, wanted at most 0",
        ]
    )
    assert "mrr =" not in result.stdout.str()  # 0.583 >= 0.5 passed


def test_unknown_metric_lists_what_the_run_has(pytester: pytest.Pytester, project: Path) -> None:
    _write_tests(
        pytester,
        project,
        f"""
def test_quality(ragmeter_eval):
    ragmeter_eval.evaluate(fixed_system.retrieve, DATASET, {CONFIG}).assert_metric("ndcg@10", 0.5)
""",
    )
    result = pytester.runpytest("--ragmeter-db=none")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["E*AssertionError: ragmeter: no metric 'ndcg@10' in run None; it has: *ndcg@3*"]
    )


def test_evaluate_inside_an_async_test(pytester: pytest.Pytester, project: Path) -> None:
    _write_tests(
        pytester,
        project,
        f"""
import asyncio
import pytest


@pytest.mark.asyncio
async def test_async(ragmeter_eval):
    asyncio.get_running_loop()  # a loop is running: evaluate must not start a second one on this thread
    run = ragmeter_eval.evaluate(fixed_system.retrieve, DATASET, {CONFIG})
    run.assert_metric("recall@1", 0.5)
""",
    )
    pytester.runpytest("--ragmeter-db=none").assert_outcomes(passed=1)


def test_load_a_stored_run_by_id_prefix(pytester: pytest.Pytester, project: Path) -> None:
    import fixed_system  # written by the `project` fixture

    import ragmeter
    from ragmeter.models import EvalConfig

    db = project / "stored.db"
    config = EvalConfig(retrieval_top_k=[1, 3], evaluate_generation=False, extra={"semantic": False})
    stored = ragmeter.run_evaluation(
        str(project / "capitals4.json"), fixed_system.retrieve, config, store=str(db), progress=False
    )
    assert stored.run_id
    _quiet(pytester)
    pytester.makepyfile(
        test_inner=f"""
def test_stored(ragmeter_eval):
    run = ragmeter_eval.load({stored.run_id[:8]!r})
    assert run.run_id == {stored.run_id!r}
    run.assert_metric("recall@1", 0.5)
    run.assert_metric("recall@3", 0.8)
"""
    )
    result = pytester.runpytest(f"--ragmeter-db={db}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E*AssertionError: ragmeter: recall@3 = 0.7500, wanted at least 0.8",
            f"E*run {stored.run_id} dataset=* system=*: mean over 4 values*",
            "E*q4  0.0000  What is the capital of Italy?",
        ]
    )


def test_ir_evaluation_of_files(pytester: pytest.Pytester, project: Path) -> None:
    _quiet(pytester)
    pytester.makepyfile(
        test_inner=f"""
def test_files(ragmeter_eval):
    run = ragmeter_eval.evaluate_files({str(project / "qrels.txt")!r}, {str(project / "run.txt")!r}, ["ndcg@3", "P@1"])
    assert run.mean("ndcg@3") == {NDCG_3!r}
    run.assert_metric("precision@1", 0.6)
"""
    )
    result = pytester.runpytest("--ragmeter-db=none")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E*AssertionError: ragmeter: precision@1 = 0.5000, wanted at least 0.6",
            "E*ragmeter.evaluate(qrels, run): mean over 4 queries",
            "E*worst 4 of 4 queries:",
            "E*q3  0.0000",
        ]
    )


async def test_ragmeter_judge_option_reaches_the_judge(
    pytester: pytest.Pytester, project: Path, scripted: object
) -> None:
    from ragmeter.llm.scripted import Step

    def respond(req: object) -> Step:
        grade = 9 if "capital of France?" in getattr(req, "user", "") else 2  # q1's question only
        return Step(text=f'{{"reasoning": "checked", "grade": {grade}}}')

    server = await scripted(respond)  # type: ignore[operator]
    db = project / "judged.db"
    _write_tests(
        pytester,
        project,
        f"""
def test_judged(ragmeter_eval):
    run = ragmeter_eval.evaluate(fixed_system.retrieve, DATASET, metrics=["retrieval_grade"], {CONFIG})
    assert run.result.config.judge_model == {"openai-compatible:judge@" + server.url!r}
    assert run.values("retrieval_grade")["q1"] == 9
    run.assert_metric("retrieval_grade", 5)
""",
    )
    judge = f"--ragmeter-judge=openai-compatible:judge@{server.url}"
    # the scripted server answers on this event loop: run the inner session in a thread
    result = await asyncio.to_thread(pytester.runpytest_subprocess, f"--ragmeter-db={db}", judge)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["E*AssertionError: ragmeter: retrieval_grade = 3.7500, wanted at least 5", "E*q2  2.0000  *"]
    )


XDIST_TESTS = "".join(
    f"""
def test_system_{i}(ragmeter_eval):
    run = ragmeter_eval.evaluate(fixed_system.retrieve, DATASET, name="xdist-{i}", {CONFIG})
    run.assert_metric("recall@1", 0.5)
"""
    for i in range(4)
)


def test_xdist_workers_write_their_own_sqlite_files(pytester: pytest.Pytester, project: Path) -> None:
    pytest.importorskip("xdist")
    db = project / "ci.db"
    _write_tests(pytester, project, XDIST_TESTS)
    result = pytester.runpytest_subprocess("-n", "2", f"--ragmeter-db={db}")
    result.assert_outcomes(passed=4)
    files = sorted(p.name for p in project.glob("ci*.db"))
    assert not db.exists()  # every write went to a worker's file
    assert files and all(re.fullmatch(r"ci-gw[01]\.db", f) for f in files)
    names = []
    for name in files:
        with open_store(str(project / name)) as store:
            names += [r.name for r in store.list_runs()]
    assert sorted(names) == [f"xdist-{i}" for i in range(4)]


@pytest.mark.postgres
def test_xdist_workers_share_one_postgresql_store(pytester: pytest.Pytester, project: Path) -> None:
    """A fresh database: the plugin migrates it in the controller, so the workers do not race to."""
    pytest.importorskip("xdist")
    base = os.environ.get(PG_ENV)
    if not base:
        if os.environ.get("RAGMETER_CI"):
            pytest.fail(f"{PG_ENV} is unset under CI (RAGMETER_CI=1)")
        pytest.skip(f"needs {PG_ENV} (a PostgreSQL server URL; .ci/services.sh starts one)")
    url, name = _fresh_pg_database(base)
    try:
        _write_tests(pytester, project, XDIST_TESTS)
        result = pytester.runpytest_subprocess("-n", "2", f"--ragmeter-db={url}")
        result.assert_outcomes(passed=4)
        with open_store(url) as store:
            names = sorted(r.name for r in store.list_runs())
        assert names == [f"xdist-{i}" for i in range(4)]
        assert not list(project.glob("*.db"))  # nothing went to SQLite
    finally:
        _drop_pg_database(base, name)
