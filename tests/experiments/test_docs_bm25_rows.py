"""The BM25 rows of docs/experiments.md's ablation tables come from the commands printed beside them: each
command is run as written (on the shared data) and its means must equal the row to the 4 decimals shown."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "experiments.md"
MARKER = "# BM25 rows of the two tables above"


def _commands() -> list[list[str]]:
    text = DOC.read_text(encoding="utf-8")
    block = text[text.index(MARKER) :].split("```", 1)[0]
    return [shlex.split(line)[1:] for line in block.splitlines() if line.startswith("ragmeter ")]


def _bm25_rows() -> list[dict[str, float]]:
    """Each table's bm25 row, in the order of the tables (SciFact, then ACM-CR), by column name."""
    rows: list[dict[str, float]] = []
    header: list[str] = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "variant":
            header = cells[1:]
        elif cells[0] == "bm25" and header:
            rows.append({h: float(re.sub(r"[^0-9.]", "", c)) for h, c in zip(header, cells[1:], strict=True)})
    return rows


def _main(args: list[str]) -> None:
    from ragmeter.cli import main

    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code in (0, None), args


def test_the_docs_print_a_command_for_each_bm25_row() -> None:
    runs = [c for c in _commands() if c[0] == "run"]
    assert len(runs) == len(_bm25_rows()) == 2
    assert all("fulltext" in c for c in runs)


def test_the_bm25_rows_reproduce_from_their_commands(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGMETER_DATA_DIR", str(data_dir))
    monkeypatch.delenv("RAGMETER_DB", raising=False)
    if not (data_dir / "acm_cr_citation").is_dir() or not (data_dir / "beir_scifact").is_dir():
        pytest.skip(f"SciFact or ACM-CR not in {data_dir}")
    rows = iter(_bm25_rows())
    for i, command in enumerate(_commands()):
        command = [a.replace("../shared/datasets", str(data_dir)) for a in command]
        if command[0] != "run":
            _main(command)
            continue
        out = tmp_path / f"run{i}.json"
        _main([*command, "--no-progress", "--db", f"sqlite:///{tmp_path / 'db.sqlite'}", "-o", str(out)])
        aggregate = json.loads(out.read_text())["aggregate"]
        expected = next(rows)
        measured = {name: round(aggregate[name]["mean"], 4) for name in expected}
        assert measured == expected, (command, measured)
