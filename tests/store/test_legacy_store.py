"""A store written by ragmeter 0.3 (commit 31ed09a, before the typed run record) read by today's CLI.

tests/fixtures/legacy_v03/store.db was written by that commit's own code (tests/fixtures/legacy_v03/make.py
runs it), and expected.json holds the numbers that code printed for each command on that store. Its runs
carry the `config.extra` keys 0.3 steered runs with (semantic, context_k, correct_if, system_options,
judge_options, sequential); two were judged by a scripted judge that is gone when the store is read here (no
network, nothing of ../shared). Today's `runs list`, `runs show`, `runs compare`, `rescore` and `run --resume` on a
copy must print the same numbers (JSON; the exceptions are named below), and a resumed run must equal a fresh run
of its stored config.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "legacy_v03"


def _load_make() -> ModuleType:
    spec = importlib.util.spec_from_file_location("legacy_v03_make", FIXTURE / "make.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKE = _load_make()
EXPECTED: dict[str, Any] = json.loads((FIXTURE / "expected.json").read_text())
IDS = {role: run["id"] for role, run in EXPECTED["runs"].items()}
OLD_METRICS = set(EXPECTED["metrics_0_3"])  # what `ragmeter metrics list` said in 0.3 (names and aliases)

Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture
def legacy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[Cli]:
    """Today's `ragmeter ARGS --db COPY` in-process on a copy of the 0.3 store: (exit code, stdout, stderr).
    `db=` names another store in tmp_path (a fresh run's)."""
    from ragmeter.cli import main

    shutil.copyfile(FIXTURE / "store.db", tmp_path / "store.db")
    for name in ("RAGMETER_DB", "RAGMETER_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # no index built by another version
    monkeypatch.chdir(tmp_path)

    def run(*args: str, db: str = "store.db") -> tuple[int, str, str]:
        try:
            main([*args, "--db", f"sqlite:///{tmp_path / db}"])
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        out, err = capsys.readouterr()
        return code, out, err

    yield run


def _json(cli: Cli, *args: str, db: str = "store.db") -> Any:
    code, out, err = cli(*args, "--format", "json", db=db)
    assert code == 0, err[-3000:]
    return json.loads(out)


def test_the_fixture_is_the_old_codes_and_small() -> None:
    assert EXPECTED["commit"].startswith("31ed09a")
    assert (FIXTURE / "store.db").stat().st_size < 512 * 1024
    shown = EXPECTED["show"]
    assert shown["interrupted"]["status"] == "failed" and shown["interrupted"]["n_queries"] == 3
    assert shown["sequential"]["sequential"]["stopped_early"] is True


def test_runs_list_gives_the_numbers_0_3_gave(legacy: Cli) -> None:
    assert MAKE.list_numbers(_json(legacy, "runs", "list")) == EXPECTED["list"]
    code, out, err = legacy("runs", "list")
    assert code == 0, err
    assert all(run_id in out for run_id in IDS.values())


@pytest.mark.parametrize("role", sorted(IDS))
def test_runs_show_gives_the_numbers_0_3_gave(legacy: Cli, role: str) -> None:
    expected = EXPECTED["show"][role]
    assert MAKE.run_numbers(_json(legacy, "runs", "show", IDS[role])) == expected
    code, out, err = legacy("runs", "show", IDS[role])  # the table: each mean as printed (4 decimals)
    assert code == 0, err
    for name, summary in expected["aggregate"].items():
        if not name.startswith(("latency_", "class_")):
            assert f"{summary['mean']:.4f}" in out, name


def _same(old: Any, new: Any, where: str = "") -> None:
    """`new` holds every value of `old`, equal; a dict may have keys that old had not (metrics and fields
    added since 0.3). Floats are equal exactly, but for the bounds of a bootstrap interval (`ci95`) to 1e-12:
    the one bootstrap of ragmeter.stats (0.4.0) sums the resampled means in another order (last-digit changes)."""
    if isinstance(old, dict):
        assert isinstance(new, dict), f"{where}: {new!r}"
        for key, value in old.items():
            assert key in new, f"{where}.{key} is missing"
            _same(value, new[key], f"{where}.{key}")
    elif isinstance(old, list):
        assert isinstance(new, list) and len(new) == len(old), f"{where}: {new!r} != {old!r} (0.3)"
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            _same(a, b, f"{where}[{i}]")
    elif isinstance(old, float) and where.rsplit(".", 1)[-1].startswith("ci95["):
        assert new == pytest.approx(old, rel=0, abs=1e-12), f"{where}: {new!r} != {old!r} (0.3)"
    else:
        assert new == old and type(new) is type(old), f"{where}: {new!r} != {old!r} (0.3)"


def _only_newer_metrics_added(old: dict[str, Any], new: dict[str, Any]) -> None:
    """A metric in today's output of an old run that 0.3's did not have must be one 0.3 did not know (added
    since); one it knew but did not compute means a setting of the run was lost (e.g. `semantic: false`)."""
    added = set(new["aggregate"]) - set(old["aggregate"])
    for q in new["per_query"].values():
        added |= set(q["metrics"]) - {n for o in old["per_query"].values() for n in o["metrics"]}
    known = {n for n in added if re.sub(r"@\d+$", "@k", n) in OLD_METRICS}
    assert not known, f"0.3 knew these metrics and did not compute them for this run: {sorted(known)}"


# What 0.4.0 changed on purpose in `runs compare` (CHANGELOG 0.4.0): the d_z interval is the plain percentile
# bootstrap (Fixed), and `class_*` shares leave the paired tests and Holm's family and their per-query lists
# become moves (Changed). These fields of 0.3's output are not expected again; every other number is.
PAIRED_STATS = ("n_pairs", "ci95", "dz", "dz_ci95", "mde", "p_t", "p_perm", "p_holm")


def _without_040_changes(node: Any) -> Any:
    if isinstance(node, list):
        return [_without_040_changes(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _without_040_changes(v) for k, v in node.items() if k != "dz_ci95"}
    if str(node.get("metric", "")).startswith("class_") and "wins" in node:
        out = {k: v for k, v in out.items() if k not in PAIRED_STATS}
    queries = out.get("queries")
    if isinstance(queries, dict):
        out["queries"] = {
            name: ({} if name.startswith("class_") else lists) for name, lists in queries.items()
        }
    return out


@pytest.mark.parametrize("roles", sorted(EXPECTED["compare"]))
def test_runs_compare_gives_the_numbers_0_3_gave(legacy: Cli, roles: str) -> None:
    ids = [IDS[role] for role in roles.split(",")]
    new = _json(legacy, "runs", "compare", *ids, *EXPECTED["compare_options"])
    _same(_without_040_changes(EXPECTED["compare"][roles]), new, "compare")


@pytest.mark.parametrize("role", sorted(EXPECTED["rescore"]))
def test_rescore_gives_the_numbers_0_3_gave(legacy: Cli, role: str) -> None:
    new = MAKE.run_numbers(_json(legacy, "rescore", IDS[role], *EXPECTED["rescore_args"][role]))
    _same(EXPECTED["rescore"][role], new, "rescore")
    _only_newer_metrics_added(EXPECTED["rescore"][role], new)


def _fresh_config(cli: Cli, run_id: str, whole: bool) -> dict[str, Any]:
    """The stored run's config as today's code reads it (`runs show`), for a fresh run of it; `whole`: without
    its sequential gate (a run the gate stopped is finished by `--resume` as the whole run)."""
    config: dict[str, Any] = _json(cli, "runs", "show", run_id)["config"]
    if whole:
        config.pop("sequential", None)
        (config.get("extra") or {}).pop("sequential", None)
    return config


@pytest.mark.parametrize("role", sorted(EXPECTED["resume"]))
def test_resume_finishes_the_run_as_0_3_did_and_as_a_fresh_run(
    legacy: Cli, role: str, tmp_path: Path
) -> None:
    stored = EXPECTED["show"][role]
    whole = bool(
        stored["sequential"] and stored["sequential"]["stopped_early"] and stored["status"] == "completed"
    )
    config = _fresh_config(legacy, IDS[role], whole)
    resumed = MAKE.run_numbers(_json(legacy, "run", "--resume", IDS[role], "--no-progress"), latency=False)
    _same(EXPECTED["resume"][role], resumed, "resume")
    _only_newer_metrics_added(EXPECTED["resume"][role], resumed)
    assert resumed["status"] == "completed" and resumed["n_queries"] > stored["n_queries"]
    # a fresh run of the same config (JSON is YAML) gives the same numbers
    (tmp_path / "fresh.yaml").write_text(json.dumps(config))
    fresh = MAKE.run_numbers(
        _json(legacy, "run", "--config", str(tmp_path / "fresh.yaml"), "--no-progress", db="fresh.db"),
        latency=False,
    )
    for key in ("aggregate", "per_query", "query_order", "n_queries", "n_failed", "status"):
        assert fresh[key] == resumed[key], key
