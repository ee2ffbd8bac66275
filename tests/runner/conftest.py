"""Fixtures of the runner tests; the fakes themselves live in runner_fakes.py."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from runner_fakes import KeywordSystem, make_dataset

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "store"))
from store_db import db_url

from ragmeter.models import EvalDataset

__all__ = ["db_url"]


@pytest.fixture
def dataset() -> EvalDataset:
    return make_dataset()


@pytest.fixture
def system_factory() -> Callable[..., KeywordSystem]:
    return KeywordSystem
