"""A real local Ray instance (2 CPUs) shared by the tests of this folder."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def ray_local() -> Iterator[Any]:
    ray = pytest.importorskip("ray", reason="the 'ray' extra is not installed")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    # workers import `ray_systems` by module path, and find the marker folder of die_once_retrieve
    here = str(Path(__file__).resolve().parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
    os.environ["RAGMETER_TEST_MARKERS"] = tempfile.mkdtemp(prefix="ragmeter-ray-markers-")
    from ragmeter.distributed.cluster import ensure_ray

    ensure_ray(num_cpus=2)
    yield ray
    ray.shutdown()
