"""Nugget sets edited by people: a run's set as it stands in the store (its newest version) or in its file,
one edit saved as a new version with its author, and a version read back (`nuggets export --version V`).

A set's name in the store is the absolute path of the file the run was scored against. The first edit stores
the file as version 1 (author "file") before saving the edit as version 2, so that the history starts at the
set the run was scored against.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter.errors import InputError
from ragmeter.nuggets.edit import apply, body, from_body
from ragmeter.nuggets.model import NuggetSet
from ragmeter.store.nugget_sets import SetVersion, by_hash, latest, save_version, versions

if TYPE_CHECKING:
    from ragmeter.models import EvalRunResult
    from ragmeter.store.api import Store


def set_name(path: str) -> str:
    return str(Path(path).expanduser().resolve())


def run_set_spec(run: EvalRunResult) -> dict[str, Any]:
    """{"path", "hash", "prompt"} of the set the run was last scored against (rescore --nuggets changes it)."""
    import json

    raw = run.versions.get("nuggets")
    spec = json.loads(raw) if raw else run.config.nuggets
    if not isinstance(spec, dict) or not spec.get("path"):
        raise InputError(f"run {run.run_id} was scored against no nugget set", source="nuggets")
    return dict(spec)


def run_set_name(store: Store, run: EvalRunResult) -> str:
    """The stored set the run's nuggets belong to: the one whose version the run was scored against (a run
    rescored with an exported version keeps its set's history), else the run's file."""
    spec = run_set_spec(run)
    stored = by_hash(store.engine, str(spec.get("hash") or "")) if spec.get("hash") else None
    return stored.name if stored is not None else set_name(str(spec["path"]))


def run_nuggets(store: Store, run: EvalRunResult) -> NuggetSet:
    """The set the run was scored against, exactly (a stored version with its hash, else its file, whose
    hash must not have changed)."""
    from ragmeter.score.nugget_plan import load

    spec = run_set_spec(run)
    stored = by_hash(store.engine, str(spec.get("hash") or "")) if spec.get("hash") else None
    if stored is not None:
        return from_body(stored.body, source=f"{stored.name} (version {stored.version})")
    return load(spec, source=f"run {run.run_id}'s nugget set").nuggets


def current_set(store: Store, name: str) -> tuple[NuggetSet, int]:
    """(the set as it stands, its store version: 0 when it was never edited and is read from its file)."""
    from ragmeter.nuggets.files import read_nuggets

    newest = latest(store.engine, name)
    if newest is not None:
        return from_body(newest.body, source=f"{name} (version {newest.version})"), newest.version
    return read_nuggets(name), 0


def save_edit(
    store: Store, name: str, query_id: str, op: str, *, author: str, expected_version: int, **edit: Any
) -> SetVersion:
    """Apply one edit to the set's newest version and store the result as the next version (StaleVersion
    when someone saved since `expected_version`)."""
    if not author.strip():
        raise InputError("an edit needs its author's name", source="annotator")
    nuggets, version = current_set(store, name)
    if version != expected_version:
        from ragmeter.store.nugget_sets import StaleVersion

        raise StaleVersion(latest(store.engine, name), expected_version)
    edited, change = apply(nuggets, query_id, op, **edit)
    if version == 0:  # the file the runs were scored against starts the history
        save_version(
            store.engine,
            name,
            body=body(nuggets),
            set_hash=nuggets.hash,
            author="file",
            changes=[{"op": "import", "path": name}],
            expected_version=0,
        )
        version = 1
    return save_version(
        store.engine,
        name,
        body=body(edited),
        set_hash=edited.hash,
        author=author.strip(),
        changes=[change],
        expected_version=version,
    )


def version_of(store: Store, name: str, version: int) -> NuggetSet:
    """Version `version` of the set named `name` (an InputError naming the versions there are)."""
    found = versions(store.engine, name)
    for v in found:
        if v.version == version:
            return from_body(v.body, source=f"{name} (version {v.version})")
    known = ", ".join(str(v.version) for v in found) or "none: it was never edited"
    raise InputError(
        f"the nugget set {name} has no version {version} (versions: {known})", source="--version"
    )


def history(store: Store, name: str) -> list[dict[str, Any]]:
    return [v.summary() for v in versions(store.engine, name)]
