"""Editing a nugget set: each edit (add, reword, merge, delete, re-grade) gives a new set and a change record;
saved in a real SQLite store, each save is a new version with its author, the file is version 1, history is
kept, a save over an old version is refused (StaleVersion), and `nuggets export --version V` reads it back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from nugget_fakes import NUGGETS, write_set

from ragmeter.cli import main
from ragmeter.errors import InputError
from ragmeter.nuggets import NuggetSet, read_nuggets
from ragmeter.nuggets.edit import apply


def _ids(nuggets: NuggetSet, qid: str) -> list[tuple[str, str, str]]:
    q = nuggets.get(qid)
    assert q is not None
    return [(n.id, n.importance, n.text) for n in q.nuggets]


def test_each_edit(tmp_path: Path) -> None:
    base = read_nuggets(write_set(tmp_path / "s.jsonl"))
    added, change = apply(base, "qb", "add", text="Rome has seven hills", importance="vital")
    assert _ids(added, "qb")[-1] == ("p1", "vital", "Rome has seven hills") and change["nugget_id"] == "p1"
    assert added.hash != base.hash and _ids(base, "qb") != _ids(added, "qb")  # the old set is left alone
    reworded, change = apply(base, "qb", "reword", nugget_id="m2", text="Rome was founded in 753 BCE")
    assert _ids(reworded, "qb")[1] == ("m2", "vital", "Rome was founded in 753 BCE")
    assert change["before"] == "Rome was founded in 753 BC"
    regraded, _ = apply(base, "qa", "regrade", nugget_id="n3", importance="vital")
    assert _ids(regraded, "qa")[2][:2] == ("n3", "vital")
    deleted, _ = apply(base, "qa", "delete", nugget_id="n4")
    assert "n4" not in [i for i, *_ in _ids(deleted, "qa")] and len(_ids(deleted, "qa")) == 11
    merged, change = apply(
        base, "qa", "merge", nugget_id="n3", merge=["n1"], text="Paris, capital, 2M people"
    )
    assert [i for i, *_ in _ids(merged, "qa")][:2] == ["n2", "n3"]
    assert _ids(merged, "qa")[1] == ("n3", "vital", "Paris, capital, 2M people")  # vital: n1 was
    assert change["merged"] == ["n1"]
    with pytest.raises(InputError, match="no nugget 'zz'"):
        apply(base, "qa", "delete", nugget_id="zz")
    with pytest.raises(InputError, match="blank"):
        apply(base, "qa", "reword", nugget_id="n1", text="   ")
    with pytest.raises(InputError, match="unknown edit"):
        apply(base, "qa", "shuffle")


def test_versions_history_stale_and_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ragmeter.store import open_store
    from ragmeter.store.nugget_sets import StaleVersion
    from ragmeter.validity.nugget_versions import current_set, history, save_edit, set_name

    path = write_set(tmp_path / "s.jsonl")
    name = set_name(str(path))
    db = f"sqlite:///{tmp_path / 'v.db'}"
    with open_store(db) as store:
        assert current_set(store, name)[1] == 0
        v2 = save_edit(store, name, "qb", "delete", author="alice", expected_version=0, nugget_id="m2")
        assert v2.version == 2
        v3 = save_edit(
            store, name, "qb", "regrade", author="bob", expected_version=2, nugget_id="m1", importance="okay"
        )
        with pytest.raises(StaleVersion):  # bob saved since alice's page was drawn
            save_edit(store, name, "qb", "delete", author="alice", expected_version=2, nugget_id="m1")
        log = history(store, name)
        assert [(v["version"], v["author"]) for v in log] == [(1, "file"), (2, "alice"), (3, "bob")]
        assert log[0]["hash"] == read_nuggets(path).hash and log[2]["hash"] == v3.set_hash
        assert log[2]["parent"] == v2.set_hash and log[2]["changes"][0]["op"] == "regrade"
    out = tmp_path / "v2.jsonl"
    with pytest.raises(SystemExit) as info:
        main(["nuggets", "export", str(path), "--version", "2", "-o", str(out), "--db", db])
    assert info.value.code in (0, None)
    assert read_nuggets(out).hash == v2.set_hash
    assert [json.loads(x)["query_id"] for x in out.read_text().splitlines()] == [
        q["query_id"] for q in NUGGETS
    ]
    with pytest.raises(SystemExit) as info:
        main(["nuggets", "export", str(path), "--version", "9", "-o", str(out), "--db", db])
    assert info.value.code == 2 and "no version 9 (versions: 1, 2, 3)" in capsys.readouterr().err
