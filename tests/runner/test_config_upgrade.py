"""Configs stored before the run settings were typed fields kept them as keys of `config.extra`: each reads
into its field (ragmeter.upgrade.upgrade_config, run by EvalConfig), the user's own keys stay in `extra`, and
a stored run of that shape (SQLite row, JSON file of schema 2) reads, shows and rescores as the typed one."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from runner_fakes import KeywordSystem, make_dataset

from ragmeter.cli.settings import apply_settings, parse_settings
from ragmeter.errors import InputError
from ragmeter.models import EvalConfig, EvalRunResult
from ragmeter.records import EscalationSpec, JudgeOptions, ReplayRef, SequentialGates
from ragmeter.run import run_evaluation
from ragmeter.store import open_store
from ragmeter.upgrade import LIFTED_KEYS

ESCALATION = {
    "strong": "openai-compatible:strong@http://127.0.0.1:9/v1",
    "metric": "answer_correctness",
    "threshold": 0.8,
    "guarantee": "risk <= 0.1",
    "calibration": {"judge": "cheap"},
}

# (old extra key, its stored value, the typed field's value)
OLD_KEYS: list[tuple[str, Any, Any]] = [
    (
        "replay",
        {"parent": "r1", "intervention": "oracle-context"},
        ReplayRef(parent="r1", intervention="oracle-context"),
    ),
    ("correct_if", "rouge_l>=0.4", "rouge_l>=0.4"),
    ("context_k", 3, 3),
    ("semantic", False, False),
    ("system_options", {"chunk_size": 100, "bm25_k1": 0.9}, {"chunk_size": 100, "bm25_k1": 0.9}),
    ("judge_options", {"timeout": 5.0, "max_retries": 0}, JudgeOptions(timeout=5.0, max_retries=0)),
    ("sequential", {"gates": {"hit@1": 0.5}, "alpha": 0.1}, SequentialGates(gates={"hit@1": 0.5}, alpha=0.1)),
    (
        "nuggets",
        {"path": "/n.jsonl", "hash": "abc", "prompt": "nuggetizer"},
        {"path": "/n.jsonl", "hash": "abc", "prompt": "nuggetizer"},
    ),
    ("escalation", ESCALATION, EscalationSpec(**ESCALATION)),
]


def test_every_key_that_steered_a_run_is_covered() -> None:
    assert sorted(k for k, _, _ in OLD_KEYS) == sorted(LIFTED_KEYS)


@pytest.mark.parametrize(("key", "old", "typed"), OLD_KEYS, ids=[k for k, _, _ in OLD_KEYS])
def test_each_old_extra_key_reads_into_its_field(key: str, old: Any, typed: Any) -> None:
    config = EvalConfig.model_validate({"dataset": "capitals", "extra": {key: old, "team": "search"}})
    assert getattr(config, key) == typed
    assert config.extra == {"team": "search"}  # the user's own entry passes through, the setting left extra
    again = EvalConfig.model_validate(config.model_dump(mode="json"))  # and today's shape reads back as it is
    assert again == config


@pytest.mark.parametrize(
    ("old", "semantic"), [(False, False), (True, True), (None, True), (0, True), ("no", True)]
)
def test_semantic_was_off_only_when_it_was_false(old: Any, semantic: bool) -> None:
    assert EvalConfig.model_validate({"extra": {"semantic": old}}).semantic is semantic


def test_an_empty_old_entry_meant_none_and_a_field_beside_an_old_key_wins() -> None:
    config = EvalConfig.model_validate({"extra": {"escalation": {}, "context_k": None}})
    assert config.escalation is None and config.context_k == EvalConfig().context_k
    assert EvalConfig.model_validate({"context_k": 2, "extra": {"context_k": 7}}).context_k == 2


def test_set_extra_key_the_old_spelling_sets_the_field() -> None:
    settings = parse_settings(["extra.correct_if=token_f1>=0.8", "extra.context_k=2", "extra.team=search"])
    config = apply_settings(EvalConfig(), settings)
    assert (config.correct_if, config.context_k, config.extra) == ("token_f1>=0.8", 2, {"team": "search"})
    with pytest.raises(InputError, match=r"extra\.context_k"):
        apply_settings(EvalConfig(), parse_settings(["extra.context_k=many"]))


def _old_shape(config: dict[str, Any]) -> dict[str, Any]:
    """A config as 0.4 stored it: the settings as keys of extra (only those that were set)."""
    old = {k: v for k, v in config.items() if k not in LIFTED_KEYS}
    old["extra"] = {**config["extra"], "context_k": config["context_k"], "semantic": config["semantic"]}
    old["extra"]["correct_if"] = config["correct_if"]
    return old


def _values(run: EvalRunResult) -> dict[str, dict[str, float | None]]:
    return {r.query_id: {n: m.value for n, m in r.metrics.items()} for r in run.per_query}


def test_a_run_stored_in_the_old_shape_reads_and_rescores_as_the_typed_one(tmp_path: Path) -> None:
    from ragmeter.run.rescore import rescore
    from ragmeter.score.writers import read_run_json

    ds = make_dataset(6)
    db = tmp_path / "runs.db"
    # a rule no answer meets: every class differs from the default rule's, so a lost rule shows
    config = EvalConfig(
        dataset="capitals", retrieval_top_k=[1, 3], context_k=1, semantic=False, correct_if="token_f1>=2"
    )
    run = run_evaluation(ds, KeywordSystem(ds), config, store=f"sqlite:///{db}", progress=False)
    assert run.run_id is not None
    assert {r.metrics["class_correct"].value for r in run.per_query} == {0.0}
    assert all(len(r.contexts or []) == 1 for r in run.per_query)
    old = _old_shape(run.config.model_dump(mode="json"))
    with sqlite3.connect(db) as conn:  # the row as the version before typed settings wrote it
        conn.execute("UPDATE runs SET config = ? WHERE id = ?", (json.dumps(old), run.run_id))
    with open_store(f"sqlite:///{db}") as store:
        stored = store.get_run(run.run_id)
        assert stored.config == run.config and store.list_runs()[0].config == run.config
        again = rescore(run.run_id, store=store, dataset=ds)
    assert _values(again) == _values(run)
    file = tmp_path / "old.json"
    file.write_text(json.dumps({**run.model_dump(mode="json"), "schema_version": 2, "config": old}))
    assert read_run_json(file).config == run.config


def test_a_record_no_ragmeter_wrote_is_left_out_with_a_note_and_the_run_still_reads() -> None:
    run = EvalRunResult.model_validate({"record": {"repeat": 3}, "notes": ["kept"]})
    assert run.record is None and run.notes[0] == "kept"
    assert "record could not be read" in run.notes[1]
