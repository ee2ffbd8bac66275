"""The demo dataset's nugget set, written by hand (not generated): 60 queries, ragmeter's own docs."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

DEMO_DATASET = "demo"


def demo_nuggets_path() -> Path:
    # beside the demo dataset itself (ragmeter/datasets/demo/), found by package name
    return Path(str(resources.files("ragmeter.datasets").joinpath("demo/demo.nuggets.jsonl")))
