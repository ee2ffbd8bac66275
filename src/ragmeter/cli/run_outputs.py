"""Everything a finished `ragmeter run` writes, in one place: the JSON and the CSV beside it (through
`ragmeter.score.writers.write_outputs`, which the run API uses too), the JUnit XML of the gates, the MLflow
run. The run itself writes none of them (`RunOptions.write_outputs=False`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ragmeter.cli.options import default_output
from ragmeter.cli.run_options import OutputOptions

if TYPE_CHECKING:
    from ragmeter.models import EvalRunResult


@dataclass(frozen=True)
class Written:
    """Where the outputs went, and a line for each of the other outputs (shown on stderr)."""

    json_path: str
    csv_path: Path
    notes: list[str] = field(default_factory=list)


def write_run_outputs(
    result: EvalRunResult,
    output: OutputOptions,
    thresholds: Mapping[str, float],
    *,
    flaky_fails: bool = False,
) -> Written:
    """Write every output that `output` asks for. The JSON goes to -o, else the config's output (for a
    resume: the stored run's), else .ragmeter/runs/RUN_ID.json."""
    from ragmeter.score.writers import csv_path_for, write_outputs

    json_path = output.output or result.config.output or str(default_output(result.run_id))
    write_outputs(result, json_path, raw=output.csv_raw, source="--output")
    written = Written(json_path, csv_path_for(json_path))
    if output.junit_xml:
        from ragmeter.report.junit import gates_of_run, write_junit_xml

        report = gates_of_run(result, thresholds, flaky_fails=flaky_fails)
        write_junit_xml(output.junit_xml, report, per_query=output.junit_per_query)
        written.notes.append(f"JUnit XML: {output.junit_xml}")
    if output.mlflow_uri is not None:
        from ragmeter.integrations.mlflow import log_run

        artifacts: list[str | Path] = [json_path, written.csv_path]
        logged = log_run(result, tracking_uri=output.mlflow_uri or None, artifacts=artifacts)
        written.notes.append(
            f"MLflow: run {logged.run_id} in experiment {logged.experiment!r} at {logged.tracking_uri}"
        )
    return written
