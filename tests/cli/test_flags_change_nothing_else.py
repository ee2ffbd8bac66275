"""Flags that change nothing else: the judge's timeout, retries and budget leave its request parameters
(seed included) and so its cache keys as they were; -o with --resume writes the resumed run there."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Cli = Callable[..., tuple[int, str, str]]
JUDGE = "openai-compatible:judge-m@http://127.0.0.1:9/v1"


def _judge_client(dataset: str, **flags: Any) -> Any:
    from ragmeter.cli.settings import apply_settings, parse_settings
    from ragmeter.models import EvalConfig
    from ragmeter.run import validate
    from ragmeter.run.rebuild import make_llm

    config = EvalConfig(dataset=dataset, system="cli_fakes:system_a", judge_model=JUDGE, use_llm_judge=True)
    config = apply_settings(config, parse_settings([], **flags))
    prepared = validate(dataset, "cli_fakes:system_a", config, store=None)
    assert prepared.record.judge is not None
    return make_llm(prepared.record.judge, prepared.record)


@pytest.mark.parametrize("flags", [{"judge_timeout": 5.0}, {"judge_retries": 1}, {"judge_budget": 7}])
def test_judge_flags_keep_the_seed_and_cache_key(cli_env: dict[str, str], flags: dict[str, Any]) -> None:
    from ragmeter.llm.cache import ResponseCache

    plain, flagged = _judge_client(cli_env["dataset"]), _judge_client(cli_env["dataset"], **flags)
    assert plain.params == flagged.params and flagged.params["seed"] == plain.seed
    messages = [{"role": "user", "content": "grade this"}]
    keys = [ResponseCache.key(c.backend, c.model, c.params, messages) for c in (plain, flagged)]
    assert keys[0] == keys[1]
    changed = {"judge_timeout": "timeout", "judge_retries": "max_retries", "judge_budget": "budget"}
    ((flag, value),) = flags.items()
    assert getattr(flagged, changed[flag]) == value  # the flag did reach the client


def test_output_with_resume_is_written(cli_env: dict[str, str], ragmeter_cli: Cli, tmp_path: Path) -> None:
    run = ["run", "--no-progress", "--no-generation", "-s", "cli_fakes:system_a", "-d", cli_env["dataset"]]
    code, _, err = ragmeter_cli(*run, "--db", cli_env["db"], "-o", str(tmp_path / "first.json"))
    assert code == 0, err
    run_id = json.loads((tmp_path / "first.json").read_text())["run_id"]
    out = tmp_path / "resumed" / "again.json"
    code, stdout, err = ragmeter_cli(
        "run", "--resume", run_id, "--db", cli_env["db"], "-o", str(out), "--no-progress"
    )
    assert code == 0, err
    assert json.loads(out.read_text())["run_id"] == run_id and out.with_suffix(".csv").exists()
    assert str(out) in stdout
    code, _, err = ragmeter_cli("run", "--resume", run_id, "--db", cli_env["db"], "-o", "/proc/nope/x.json")
    assert code == 2 and "--output" in err and "Traceback" not in err
