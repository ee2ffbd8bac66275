"""Run files: JSON (the EvalRunResult with `schema_version`) and CSV (one row per query), and the reader
that accepts the current and the previous JSON version (0.1's, which has no `schema_version`)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from ragmeter.errors import InputError
from ragmeter.models import RUN_SCHEMA_VERSION, EvalRunResult, QueryEvalResult


def csv_path_for(json_path: str | Path) -> Path:
    p = Path(json_path)
    return p.with_suffix(".csv") if p.suffix.lower() == ".json" else p.with_name(p.name + ".csv")


def write_json(result: EvalRunResult, path: str | Path, *, source: str | None = None) -> Path:
    """The run as JSON, secrets redacted (ragmeter.safety), written atomically; an unwritable path is an
    InputError naming `source` (the flag) and leaves nothing behind."""
    from ragmeter.safety import json_text, write_text_atomic

    current = result.model_copy(update={"schema_version": RUN_SCHEMA_VERSION})
    return write_text_atomic(path, json_text(current.model_dump(mode="json")), source=source)


def read_run_json(path: str | Path) -> EvalRunResult:
    """A run JSON of this version or the previous one (no `schema_version`: 0.1)."""
    p = Path(path)
    try:
        data: Any = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=str(p)) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg})", source=str(p), line=exc.lineno) from None
    return run_from_json(data, source=str(p))


def run_from_json(data: Any, *, source: str = "run JSON") -> EvalRunResult:
    from pydantic import ValidationError

    if not isinstance(data, dict):
        raise InputError("a run JSON is an object (an EvalRunResult)", source=source)
    version = data.get("schema_version", 1)
    if not isinstance(version, int) or not 1 <= version <= RUN_SCHEMA_VERSION:
        raise InputError(
            f"schema_version {version!r} is not one this ragmeter reads (1..{RUN_SCHEMA_VERSION})",
            source=source,
        )
    # v1 -> v2 only adds optional fields; v2 -> v3 moves config.extra's settings (EvalConfig lifts them)
    upgraded = {**data, "schema_version": RUN_SCHEMA_VERSION}
    try:
        return EvalRunResult.model_validate(upgraded)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "(file)"
        raise InputError(f"field {loc!r}: {err['msg']}", source=source) from None


def write_csv(
    result: EvalRunResult, path: str | Path, *, raw: bool = False, source: str | None = None
) -> Path:
    """One row per query, one column per metric (empty cell = null), then latency per stage. Text cells
    that a spreadsheet would run as formulas get a `'` prefix unless `raw` (ragmeter.safety.csv_cell)."""
    import ragmeter.metrics as rm
    from ragmeter.safety import check_output_path, csv_row

    names: dict[str, None] = {}
    stages: dict[str, None] = {}
    for r in result.per_query:
        names.update(dict.fromkeys(r.metrics))
        stages.update(dict.fromkeys(r.latency_ms))
    metric_cols = sorted(names, key=rm.sort_key)
    header = ["query_id", "status", "error", "question", "answer", "ground_truth_answer", "retrieved"]
    header += metric_cols + [f"latency_{s}_ms" for s in stages]
    with_usage = any(r.usage for r in result.per_query)
    header += list(USAGE_COLUMNS) if with_usage else []
    p = check_output_path(path, source=source or str(path))
    with p.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(csv_row(header, raw=raw))
        for r in result.per_query:
            row: list[Any] = [
                r.query_id,
                r.status,
                r.error or "",
                r.question,
                r.answer or "",
                r.ground_truth_answer or "",
                " ".join(d.doc_id for d in r.retrieved),
            ]
            for name in metric_cols:
                m = r.metrics.get(name)
                row.append("" if m is None or m.value is None else repr(m.value))
            row += [f"{r.latency_ms[s]:.3f}" if s in r.latency_ms else "" for s in stages]
            row += query_usage_cells(r) if with_usage else []
            writer.writerow(csv_row(row, raw=raw))
    return p


USAGE_COLUMNS = ("llm_calls", "llm_input_tokens", "llm_output_tokens", "llm_cost_usd")


def query_usage_cells(result: QueryEvalResult) -> list[str]:
    """A query's LLM calls, tokens and cost over its roles and labels (cost empty when a price is unknown)."""
    from ragmeter.llm.usage import UsageLine, merge

    line = merge(UsageLine.model_validate(v) for labels in result.usage.values() for v in labels.values())
    cost = "" if line.cost_usd is None else repr(line.cost_usd)
    return [str(line.calls), str(line.input_tokens), str(line.output_tokens), cost]


def write_outputs(
    result: EvalRunResult, json_path: str | Path, *, raw: bool = False, source: str | None = None
) -> tuple[Path, Path]:
    """The JSON and the CSV beside it (`raw`: CSV cells as they are); what the run API and `ragmeter run`
    both write. An unwritable path is an InputError naming `source`."""
    return (
        write_json(result, json_path, source=source),
        write_csv(result, csv_path_for(json_path), raw=raw, source=source),
    )
