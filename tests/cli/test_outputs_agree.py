"""What the CLI lists agrees with what happened: a killed run's stored query count, a Python object listed
as itself (not as the built-in pipeline), the --judge help of every judge command, rescore's -o."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from ragmeter.models import EvalConfig, QueryEvalResult

Cli = Callable[..., tuple[int, str, str]]


def _listed(cli: Cli, db: str) -> list[dict[str, object]]:
    code, out, err = cli("runs", "list", "--db", db, "--format", "json")
    assert code == 0, err
    rows: list[dict[str, object]] = json.loads(out)
    return rows


def test_a_killed_run_lists_the_queries_it_stored(cli_env: dict[str, str], ragmeter_cli: Cli) -> None:
    from ragmeter.store import open_store

    with open_store(cli_env["db"]) as store:
        header = store.create_run(EvalConfig(dataset="caps"), n_dataset_queries=5)
        assert header.run_id is not None
        for i in range(3):
            status = "failed" if i == 2 else "ok"
            store.add_query_result(
                header.run_id, QueryEvalResult(query_id=f"q{i}", question="?", status=status), position=i
            )
        store.fail_run(header.run_id, "interrupted (Ctrl-C / cancelled)")
    (row,) = _listed(ragmeter_cli, cli_env["db"])
    assert (row["status"], row["n_queries"], row["n_failed"]) == ("failed", 3, 1)
    code, out, _ = ragmeter_cli("runs", "list", "--db", cli_env["db"])
    assert code == 0 and "│ 3 " in out.replace("  ", " "), out


def test_a_python_callable_is_not_listed_as_the_builtin_pipeline(
    cli_env: dict[str, str], ragmeter_cli: Cli
) -> None:
    from cli_fakes import system_a

    from ragmeter.run import run_evaluation

    config = EvalConfig(retrieval_top_k=[1], evaluate_generation=False)
    run_evaluation(cli_env["dataset"], system_a, config, store=cli_env["db"])
    code, out, err = ragmeter_cli("runs", "list", "--db", cli_env["db"])
    assert code == 0, err
    assert "system_a" in out and "builtin" not in out, out


@pytest.mark.parametrize("command", [["judges", "validate"], ["judge-qrels"]])
def test_judge_help_offers_only_forms_the_command_accepts(ragmeter_cli: Cli, command: list[str]) -> None:
    code, out, _ = ragmeter_cli(*command, "--help")
    assert code == 0
    help_text = " ".join(out.split()).replace("- ", "-")  # click wraps at hyphens
    assert "openai-compatible:MODEL@URL" in help_text
    assert "openai:MODEL, MODEL@URL" not in help_text  # the bare MODEL@URL form is refused by both


def test_rescore_writes_json_and_csv_with_output(
    cli_env: dict[str, str], ragmeter_cli: Cli, tmp_path: Path
) -> None:
    run = ["run", "--no-progress", "--no-generation", "-s", "cli_fakes:system_a", "-d", cli_env["dataset"]]
    code, _, err = ragmeter_cli(*run, "--db", cli_env["db"])
    assert code == 0, err
    run_id = str(_listed(ragmeter_cli, cli_env["db"])[0]["run_id"])
    out = tmp_path / "rescored" / "r.json"
    code, _, err = ragmeter_cli("rescore", run_id, "--db", cli_env["db"], "-o", str(out))
    assert code == 0, err
    assert json.loads(out.read_text())["run_id"] == run_id
    assert out.with_suffix(".csv").read_text().count("\n") > 1
    code, _, err = ragmeter_cli("rescore", run_id, "--db", cli_env["db"], "--output", "/proc/nope/r.json")
    assert code == 2 and "--output" in err and "Traceback" not in err
