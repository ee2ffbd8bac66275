"""`ragmeter prices`: the table in use, versioned with its date, the prices file's entries marked (and what
they replace); a bad prices file is one line naming the file and the entry, exit 2."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from ragmeter.llm.pricing import PRICES, PRICES_DATE, PRICES_VERSION

Cli = Callable[..., tuple[int, str, str]]


def test_the_table_in_use_marks_the_files_entries(
    ragmeter_cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = ragmeter_cli("prices", "--format", "json")
    assert code == 0, err
    table = json.loads(out)
    assert table["version"] == PRICES_VERSION and table["date"] == PRICES_DATE and table["file"] is None
    assert {r["model"] for r in table["prices"]} == set(PRICES)
    assert {r["source"] for r in table["prices"]} == {"built-in"}

    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"gpt-4o": [3, 11], "house-model": [0.5, 1.5]}))
    monkeypatch.setenv("RAGMETER_LLM_PRICES", str(path))
    code, out, err = ragmeter_cli("prices", "--format", "json")
    rows = {r["model"]: r for r in json.loads(out)["prices"]}
    assert rows["gpt-4o"]["source"] == "file, overrides built-in" and rows["gpt-4o"]["input_per_mtok"] == 3
    assert rows["gpt-4o"]["built_in"] == list(PRICES["gpt-4o"])
    assert rows["house-model"]["source"] == "file" and rows["gpt-4o-mini"]["source"] == "built-in"
    code, out, err = ragmeter_cli("prices")
    assert code == 0 and PRICES_VERSION in out and PRICES_DATE in out and str(path.name) in out
    line = next(x for x in out.splitlines() if " gpt-4o " in x)
    assert "overrides built-in" in line and f"was {PRICES['gpt-4o'][0]:g}" in line


def test_a_bad_prices_file_is_one_line_exit_2(
    ragmeter_cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i, text in enumerate(('{"m": [1]}', "not json", '["m"]', '{"m": [-1, 2]}')):
        path = tmp_path / f"bad{i}.json"
        path.write_text(text)
        monkeypatch.setenv("RAGMETER_LLM_PRICES", str(path))
        code, _, err = ragmeter_cli("prices")
        assert code == 2 and len(err.strip().splitlines()) == 1 and path.name in err, err
        assert "Traceback" not in err
