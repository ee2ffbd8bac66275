"""A real local Ray instance (2 CPUs) shared by the tests of this folder."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def ray_local() -> Iterator[Any]:
    ray = pytest.importorskip("ray", reason="the 'ray' extra is not installed")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    from ragmeter.distributed.cluster import ensure_ray

    ensure_ray(num_cpus=2)
    yield ray
    ray.shutdown()
