"""One version: the installed package's metadata, `ragmeter --version` and a stored run record agree, and they
are src/ragmeter/_version.py's, the one place a release sets it (pyproject reads it, CHANGELOG.md names it)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import ragmeter
from ragmeter._version import __version__

REPO = Path(__file__).resolve().parents[2]
Cli = Callable[..., tuple[int, str, str]]


def test_metadata_cli_and_stored_run_record_agree(cli_env: dict[str, str], ragmeter_cli: Cli) -> None:
    installed = metadata.version("ragmeter")
    assert installed == __version__, (
        f"the installed metadata says {installed}, src/ragmeter/_version.py {__version__}: "
        "reinstall the package (make setup)"
    )
    assert ragmeter.__version__ == __version__

    # the installed console script in a fresh process, as a user types it (from the repository root, so that
    # a relative PYTHONPATH=src still points at this checkout)
    script = Path(sys.executable).parent / "ragmeter"
    assert script.is_file(), f"no console script beside {sys.executable}: is ragmeter installed?"
    proc = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"ragmeter, version {installed}"

    code, out, err = ragmeter_cli(
        "run", "-d", cli_env["dataset"], "-s", "cli_fakes:system_a", "--no-generation", "--no-progress",
        "--metrics", "mrr", "--db", cli_env["db"], "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    run_id = json.loads(out)["run_id"]
    # read back from the store, not from the run's own output
    code, out, err = ragmeter_cli("runs", "show", run_id, "--db", cli_env["db"], "--format", "json")
    assert code == 0, err
    assert json.loads(out)["versions"]["ragmeter"] == installed


def test_pyproject_reads_the_version_from_version_py() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"], "a second version source: pyproject.toml's static version"
    assert "version" in project["project"]["dynamic"]
    dynamic = project["tool"]["setuptools"]["dynamic"]["version"]
    assert dynamic == {"attr": "ragmeter._version.__version__"}


def test_changelog_names_the_release() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__), f"{__version__} is not MAJOR.MINOR.PATCH"
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.findall(r"^## \[([^\]]+)\]", text, re.M)
    assert releases[0] == "Unreleased", "CHANGELOG.md opens with ## [Unreleased]"
    assert releases[1] == __version__, (
        f"the newest release in CHANGELOG.md is {releases[1]}, the package says {__version__}: "
        "a version bump renames [Unreleased] to the new version (see CHANGELOG.md)"
    )
    assert len(set(releases)) == len(releases), "a release appears twice in CHANGELOG.md"
