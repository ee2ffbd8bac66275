"""A refused path or field is named as the user gave it, not as a folder or field derived from it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

Cli = Callable[..., tuple[int, str, str]]
RUN = ["run", "--no-progress", "--no-generation", "-s", "cli_fakes:system_a"]


def _one_line(code: int, err: str) -> str:
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_db_error_names_the_path_given(ragmeter_cli: Cli) -> None:
    line = _one_line(*ragmeter_cli("runs", "list", "--db", "/proc/nope/x.db")[::2])
    assert line.startswith("ragmeter: error: --db: ") and "/proc/nope/x.db" in line, line


@pytest.mark.parametrize("output", ["/proc/nope/x.json", "/proc/x.json"])
def test_output_error_names_the_file_given(output: str, cli_env: dict[str, str], ragmeter_cli: Cli) -> None:
    code, _, err = ragmeter_cli(*RUN, "-d", cli_env["dataset"], "--db", cli_env["db"], "--output", output)
    line = _one_line(code, err)
    assert line.startswith("ragmeter: error: --output: ") and output in line, line


def test_experiment_cutoff_is_the_files_field(
    cli_env: dict[str, str], ragmeter_cli: Cli, tmp_path: Path
) -> None:
    path = tmp_path / "k0.yaml"
    path.write_text(f"dataset: {cli_env['dataset']}\nk: [0]\nvariants:\n  - {{name: a, mode: fulltext}}\n")
    line = _one_line(*ragmeter_cli("experiment", str(path), "--db", cli_env["db"])[::2])
    assert f"{path}: field 'k'" in line and "retrieval_top_k" not in line, line
