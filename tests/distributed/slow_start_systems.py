"""A system module whose import takes 4 s in the first Ray actor that loads it (a marker file in
$RAGMETER_TEST_MARKERS picks that actor; the driver, which also checks the spec, never waits), like a worker
whose system is slow to load while another is ready."""

from __future__ import annotations

import os
import time
from pathlib import Path

import ray
from ray_systems import seq_good_retrieve


def _first_actor() -> bool:
    if ray.get_runtime_context().get_actor_id() is None:  # the driver
        return False
    try:
        fd = os.open(
            Path(os.environ["RAGMETER_TEST_MARKERS"]) / "slow-start", os.O_CREAT | os.O_EXCL | os.O_WRONLY
        )
    except FileExistsError:
        return False
    os.close(fd)
    return True


if _first_actor():
    time.sleep(4)

retrieve = seq_good_retrieve
