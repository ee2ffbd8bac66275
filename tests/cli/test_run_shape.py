"""`ragmeter run` is thin: one validation step (the option groups, then `ragmeter.run.validate` once), the
validated run handed to `run_prepared` as it is, and one writer for every output (cli/run_outputs.py)."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

Cli = Callable[..., tuple[int, str, str]]


def _run_args(cli_env: dict[str, str], *more: str) -> list[str]:
    run = ["run", "--no-progress", "--no-generation", "-s", "cli_fakes:system_a", "-d", cli_env["dataset"]]
    return [*run, "--db", cli_env["db"], *more]


@pytest.fixture
def validate_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every call of `ragmeter.run.validate` (by the CLI or the run API), by the name it was given."""
    import ragmeter.run as run
    import ragmeter.run.api as api
    import ragmeter.run.prepare as prepare

    calls: list[str] = []
    real = prepare.validate

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(str(kwargs.get("resume") or "new"))
        return real(*args, **kwargs)

    for module in (prepare, api, run):  # where it is defined, imported, and re-exported (cached lazily)
        monkeypatch.setattr(module, "validate", counted, raising=False)
    return calls


def _stored_runs(db: str) -> int:
    from ragmeter.store import open_store

    store = open_store(db)
    try:
        return len(store.list_runs())
    finally:
        store.close()


def test_a_cli_run_is_validated_once(
    cli_env: dict[str, str], ragmeter_cli: Cli, validate_calls: list[str]
) -> None:
    code, _, err = ragmeter_cli(*_run_args(cli_env, "--top-k", "1,3"))
    assert code == 0, err
    assert validate_calls == ["new"]  # the CLI's check; the run does not check again


def test_a_cli_resume_is_validated_once(
    cli_env: dict[str, str], ragmeter_cli: Cli, validate_calls: list[str], tmp_path: Path
) -> None:
    out = tmp_path / "first.json"
    code, _, err = ragmeter_cli(*_run_args(cli_env, "-o", str(out)))
    assert code == 0, err
    run_id = json.loads(out.read_text())["run_id"]
    validate_calls.clear()
    code, _, err = ragmeter_cli("run", "--resume", run_id, "--db", cli_env["db"], "--no-progress")
    assert code == 0, err
    assert validate_calls == [run_id]


def test_the_config_is_built_once(
    cli_env: dict[str, str], ragmeter_cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ragmeter.run.config as config

    calls: list[Any] = []
    real = config.load_config

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(config, "load_config", counted)
    code, _, err = ragmeter_cli(*_run_args(cli_env))
    assert code == 0, err
    assert len(calls) == 1


def test_bad_input_is_refused_by_the_one_check_before_anything_is_stored(
    cli_env: dict[str, str], ragmeter_cli: Cli, validate_calls: list[str]
) -> None:
    code, _, err = ragmeter_cli(*_run_args(cli_env, "--metrics", "no_such_metric"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "no_such_metric" in err, err
    assert validate_calls == ["new"] and _stored_runs(cli_env["db"]) == 0
    validate_calls.clear()
    code, _, err = ragmeter_cli(*_run_args(cli_env, "--concurrency", "0"))  # a flag its group refuses
    assert code == 2 and "--concurrency" in err and validate_calls == [], err
    assert _stored_runs(cli_env["db"]) == 0


def test_the_python_api_still_validates(
    cli_env: dict[str, str], validate_calls: list[str], tmp_path: Path
) -> None:
    from cli_fakes import system_a

    from ragmeter.errors import InputError
    from ragmeter.models import EvalConfig
    from ragmeter.run import run_evaluation

    db = f"sqlite:///{tmp_path / 'api.db'}"
    config = EvalConfig(evaluate_generation=False, metrics=["no_such_metric"])
    with pytest.raises(InputError, match="no_such_metric"):
        run_evaluation(cli_env["dataset"], system_a, config, store=db, progress=False)
    assert validate_calls == ["new"] and _stored_runs(db) == 0
    config = EvalConfig(evaluate_generation=False, retrieval_top_k=[1])
    result = run_evaluation(cli_env["dataset"], system_a, config, store=db, progress=False)
    assert result.status == "completed" and validate_calls == ["new", "new"]


def test_run_prepared_runs_what_was_validated_without_checking_again(
    cli_env: dict[str, str], validate_calls: list[str], tmp_path: Path
) -> None:
    from cli_fakes import system_a

    from ragmeter.models import EvalConfig
    from ragmeter.run import run_prepared, validate
    from ragmeter.store import open_store

    store = open_store(f"sqlite:///{tmp_path / 'p.db'}")
    config = EvalConfig(evaluate_generation=False, retrieval_top_k=[1], output=str(tmp_path / "p.json"))
    prepared = validate(cli_env["dataset"], system_a, config, store=store)
    result = run_prepared(prepared, store=store, progress=False)
    store.close()
    assert validate_calls == ["new"]  # the explicit call only
    assert result.status == "completed" and result.n_queries == len(prepared.queries)
    assert json.loads((tmp_path / "p.json").read_text())["run_id"] == result.run_id  # the API still writes


class _Outputs:
    """Records the JSON and CSV writes, and whether they happened inside the one writer."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import ragmeter.cli.run_outputs as run_outputs
        import ragmeter.score.writers as writers

        self.inside = False
        self.writes: list[tuple[str, bool]] = []
        self.before: dict[str, bool] = {}
        self.watch: list[Path] = []
        for name in ("write_json", "write_csv"):
            monkeypatch.setattr(writers, name, self._recorded(name, getattr(writers, name)))
        real = run_outputs.write_run_outputs

        def single_writer(*args: Any, **kwargs: Any) -> Any:
            self.before = {str(p): p.exists() for p in self.watch}
            self.inside = True
            try:
                return real(*args, **kwargs)
            finally:
                self.inside = False

        monkeypatch.setattr(run_outputs, "write_run_outputs", single_writer)

    def _recorded(self, name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def recorded(*args: Any, **kwargs: Any) -> Any:
            self.writes.append((name, self.inside))
            return real(*args, **kwargs)

        return recorded


@pytest.fixture
def outputs(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Outputs]:
    yield _Outputs(monkeypatch)


def test_every_requested_output_is_written_by_the_one_writer(
    cli_env: dict[str, str], ragmeter_cli: Cli, outputs: _Outputs, tmp_path: Path
) -> None:
    out, junit = tmp_path / "o" / "run.json", tmp_path / "o" / "gates.xml"
    outputs.watch = [out, out.with_suffix(".csv"), junit]
    more = [
        "-o",
        str(out),
        "--csv-raw",
        "--fail-under",
        "P@1=0",
        "--junit-xml",
        str(junit),
        "--junit-per-query",
    ]
    code, stdout, err = ragmeter_cli(*_run_args(cli_env, *more))
    assert code == 0, err
    assert outputs.before == {str(p): False for p in outputs.watch}  # nothing written before the writer ran
    assert all(p.exists() for p in outputs.watch)
    assert sorted(outputs.writes) == [("write_csv", True), ("write_json", True)]  # each once, by the writer
    assert f"JUnit XML: {junit}" in err and str(out) in stdout
    assert json.loads(out.read_text())["run_id"] and "testcase" in junit.read_text()


def test_the_default_output_is_written_once(
    cli_env: dict[str, str], ragmeter_cli: Cli, outputs: _Outputs
) -> None:
    code, stdout, err = ragmeter_cli(*_run_args(cli_env))
    assert code == 0, err
    assert sorted(outputs.writes) == [("write_csv", True), ("write_json", True)]
    runs = list((Path(".ragmeter") / "runs").glob("*.json"))
    assert len(runs) == 1 and str(runs[0]) in stdout and runs[0].with_suffix(".csv").exists()


def test_the_mlflow_run_is_logged_by_the_one_writer(
    cli_env: dict[str, str], ragmeter_cli: Cli, outputs: _Outputs, tmp_path: Path
) -> None:
    pytest.importorskip("mlflow")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    outputs.watch = [tmp_path / "mlflow.db"]
    code, _, err = ragmeter_cli(*_run_args(cli_env, "--mlflow", uri))
    assert code == 0, err
    assert outputs.before == {str(tmp_path / "mlflow.db"): False} and (tmp_path / "mlflow.db").exists()
    assert "MLflow: run " in err and uri in err


class _Recording(Mapping[str, Any]):
    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data, self.read = dict(data), set[str]()

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


def test_every_option_of_run_is_read_by_its_group(cli_env: dict[str, str]) -> None:
    """An option added to `ragmeter run` but to no group would be silently ignored: this names it."""
    from ragmeter.cli.run import run_command
    from ragmeter.cli.run_check import RunFlags

    ctx = run_command.make_context("run", ["-d", cli_env["dataset"], "-s", "cli_fakes:system_a"])
    params = _Recording(ctx.params)
    flags = RunFlags.from_params(params)
    assert params.read == set(ctx.params)
    assert flags.system.dataset == cli_env["dataset"] and flags.output.progress


def test_the_system_group_sets_config_fields_by_name() -> None:
    from ragmeter.cli.run_options import SystemOptions
    from ragmeter.models import EvalConfig

    fields = SystemOptions(retrieval_top_k=[1], evaluate_generation=False, seed=3).config_fields()
    assert set(fields) <= set(EvalConfig.model_fields)  # each one an EvalConfig field, as named
    given = {k: v for k, v in fields.items() if v is not None}
    assert given == {"retrieval_top_k": [1], "evaluate_generation": False, "seed": 3}


def test_the_command_body_stays_short() -> None:
    from ragmeter.cli.run import run_command

    assert run_command.callback is not None
    lines, _ = inspect.getsourcelines(run_command.callback)
    body = lines[next(i for i, line in enumerate(lines) if line.startswith("def ")) :]
    assert len(body) < 60, len(body)
