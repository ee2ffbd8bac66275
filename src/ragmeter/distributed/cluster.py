"""Connecting to Ray: a local instance or an existing cluster, with ragmeter's environment for workers."""

from __future__ import annotations

import os
from typing import Any

from ragmeter.errors import InputError, MissingExtraError
from ragmeter.models import (
    parse_executor as parse_executor,  # the executor spec is validated with the config record
)

# Environment variables a worker needs to reach models; their VALUES travel in the runtime_env of the job
# (set once by the driver), never in task arguments, and are never stored or logged.
FORWARDED_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "RAGMETER_LLM_API_KEY",
    "RAGMETER_INDEX_DIR",
    "RAGMETER_DATA_DIR",
    "HF_HUB_OFFLINE",
)


def ray_module() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise MissingExtraError("ray", "the Ray executor") from exc
    return ray


def ensure_ray(address: str | None = None, *, num_cpus: int | None = None) -> Any:
    """ray, initialised: connect to `address` (a cluster, 'auto', ray://host:port) or start a local instance.
    Workers get the forwarded environment through runtime_env (an existing init is reused as it is)."""
    ray = ray_module()
    if ray.is_initialized():
        return ray
    env = {k: os.environ[k] for k in FORWARDED_ENV if k in os.environ}
    kwargs: dict[str, Any] = {
        "runtime_env": {"env_vars": env} if env else None,
        "include_dashboard": False,
        "log_to_driver": False,
        "configure_logging": False,
    }
    if address:
        kwargs["address"] = address
    elif num_cpus is not None:
        kwargs["num_cpus"] = num_cpus
    if not address:  # a local throw-away instance needs no token; a cluster keeps its own auth settings
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    try:
        ray.init(**{k: v for k, v in kwargs.items() if v is not None})
    except ConnectionError as exc:
        raise InputError(f"cannot reach the Ray cluster at {address}: {exc}", source="--executor") from None
    return ray
