"""Compatibility shim: the run loop moved to `ragmeter.run` (record, validation, loop, executors) and
scoring to `ragmeter.score`. Import from there; this module only re-exports the 0.1 names."""

from __future__ import annotations

from ragmeter.records import CONTEXT_K
from ragmeter.run.api import RunOptions, arun_evaluation, package_versions, run_evaluation
from ragmeter.run.config import load_config
from ragmeter.run.prepare import dataset_hash, sample_queries
from ragmeter.run.rebuild import resolve_dataset
from ragmeter.score.aggregate import aggregate_metrics
from ragmeter.score.writers import csv_path_for, write_csv, write_json

__all__ = [
    "CONTEXT_K",
    "RunOptions",
    "aggregate_metrics",
    "arun_evaluation",
    "csv_path_for",
    "dataset_hash",
    "load_config",
    "package_versions",
    "resolve_dataset",
    "run_evaluation",
    "sample_queries",
    "write_csv",
    "write_json",
]
