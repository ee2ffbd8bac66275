"""The one reader of run configs stored by older versions: the settings that steer a run were keys of
`config.extra` until the record's schema version 2; `upgrade_config` lifts them into EvalConfig's typed
fields (EvalConfig runs it before validating, so the store, JSON run files and the Python API all read
old runs through it), and leaves in `extra` only the user's own entries, which ragmeter never reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

# The config.extra keys that steered a run before they were typed fields (each lifted to the field of its name).
LIFTED_KEYS = (
    "replay",
    "correct_if",
    "context_k",
    "semantic",
    "system_options",
    "judge_options",
    "sequential",
    "nuggets",
    "escalation",
)


def upgrade_config(data: Any) -> Any:
    """A config as stored by any version, in today's shape: each key of LIFTED_KEYS in `extra` becomes the
    field of its name (a field given beside it wins), with the value the old reader gave it: `semantic`
    was off only when false; a null entry meant the default."""
    if not isinstance(data, Mapping):
        return data
    old = data.get("extra")
    if not isinstance(old, Mapping) or not any(k in old for k in LIFTED_KEYS):
        return data
    out = {k: v for k, v in data.items() if k != "extra"}
    for key, value in old.items():
        if key not in LIFTED_KEYS or key in out:
            continue
        if key == "semantic":
            out[key] = value is not False
        elif value is not None and (value or key != "escalation"):  # an empty escalation was none
            out[key] = value
    out["extra"] = {k: v for k, v in old.items() if k not in LIFTED_KEYS}
    return out


def upgrade_run(data: Any, read_record: Callable[[Any], Any]) -> Any:
    """A run (EvalRunResult) as stored by any version: its config through `upgrade_config` (EvalConfig runs
    it), and a record that `read_record` refuses (not one a ragmeter wrote) left out with a note saying so,
    so that the run still reads; the store keeps the record as it was."""
    if not isinstance(data, Mapping) or not isinstance(data.get("record"), Mapping):
        return data
    try:
        read_record(data["record"])
    except ValueError as exc:  # pydantic's ValidationError is one
        why = str(exc).splitlines()[0]
        note = f"the run's record could not be read ({why}); it is kept in the store as stored"
        return {**data, "record": None, "notes": [*(data.get("notes") or []), note]}
    return data
