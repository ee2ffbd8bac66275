"""Long-format ("tidy") CSV: one row per run x query x metric, for pandas users."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ragmeter import metrics
from ragmeter.models import EvalRunResult, MetricSummary

LONG_COLUMNS = ("run_id", "run_name", "query_id", "status", "metric", "value", "error", "version")


def run_label(run: EvalRunResult, index: int = 0) -> str:
    """A short name for a run in tables and legends: its name, else its id, else its position."""
    return run.name or run.run_id or f"run{index + 1}"


def ci_text(name: str, summary: MetricSummary, digits: int = 3) -> tuple[str, str]:
    """(interval, method) as shown: the stored 95% interval clipped into the metric's range (runs stored
    before intervals were computed in range can hold one outside it) and the method that made it."""
    if summary.ci95 is None:
        return "-", "-"
    lo, hi = summary.ci95
    spec = metrics.lookup(name)
    method = summary.ci_method or "normal (old run)"
    if spec is not None:
        clipped = (spec.clip(lo), spec.clip(hi))
        if clipped != (lo, hi):
            lo, hi = clipped
            method += ", clipped to range"
    return f"[{_fmt(lo, digits)}, {_fmt(hi, digits)}]", method


def scale_of(name: str) -> str:
    spec = metrics.lookup(name)
    return "?" if spec is None else spec.scale


def _fmt(value: float, digits: int) -> str:
    return f"{value:.{digits}f}"


def iter_long_rows(run: EvalRunResult) -> Iterator[dict[str, Any]]:
    for q in run.per_query:
        for name, m in q.metrics.items():
            yield {
                "run_id": run.run_id or "",
                "run_name": run.name,
                "query_id": q.query_id,
                "status": q.status,
                "metric": name,
                "value": m.value,
                "error": m.error or "",
                "version": m.version or "",
            }


def write_long_csv(
    runs: EvalRunResult | Sequence[EvalRunResult], path: str | Path, *, raw: bool = False
) -> int:
    """Write the long table of one or more runs; returns the number of data rows.

    A null value is an empty cell (pandas reads it as NaN) and its reason is in `error`. Text cells that a
    spreadsheet would run as formulas get a `'` prefix unless `raw` (ragmeter.safety.csv_cell).
    """
    from ragmeter.safety import check_output_path, csv_dict

    items = [runs] if isinstance(runs, EvalRunResult) else list(runs)
    out = check_output_path(path, source=str(path))
    n = 0
    with out.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=LONG_COLUMNS)
        writer.writeheader()
        for run in items:
            for row in iter_long_rows(run):
                if row["value"] is None:
                    row["value"] = ""
                else:
                    row["value"] = repr(float(row["value"]))  # round-trips exactly
                writer.writerow(csv_dict(row, raw=raw))
                n += 1
    return n


def load_run_json(path: str | Path) -> EvalRunResult:
    """An EvalRunResult from a JSON file (the runner's export, or `model_dump_json`)."""
    from pydantic import ValidationError

    from ragmeter.errors import InputError

    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=str(source)) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not a run JSON: not UTF-8 text (byte {exc.start})", source=str(source)) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg})", source=str(source), line=exc.lineno) from None
    # Some exports wrap the run: {"run": {...}}.
    if isinstance(data, dict) and "per_query" not in data and isinstance(data.get("run"), dict):
        data = data["run"]
    try:
        return EvalRunResult.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "(record)"
        raise InputError(f"not an EvalRunResult: field '{loc}': {err['msg']}", source=str(source)) from None
