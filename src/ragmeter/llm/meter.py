"""Per-query LLM usage: a client wrapper that counts each call into the query being evaluated.

Clients are shared by the queries in flight, so a client's own totals cannot say which query spent what.
`MeteredLLM` adds every answered (or failed) call to the meter of the current query, found through a context
variable that each query's task sets (asyncio tasks and `to_thread` copy it). Per-query usage is stored with
the query, so a run's totals survive a resume and add up across executors.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ragmeter.llm.types import LLMError
from ragmeter.llm.usage import UsageMeter

_CURRENT: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "ragmeter_query_usage", default=None
)


class MeteredLLM:
    """`client` under a role ("judge", "generator"): same interface, calls counted per query and label."""

    def __init__(self, client: Any, role: str, *, spend_role: str | None = None) -> None:
        self._client = client
        self._role = role
        self._spend_role = spend_role or role  # the spend cap's role (a cascade's strong judge: "judge")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    async def complete(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        from ragmeter.llm.spend import role

        label = kwargs.get("metric") or self._role
        try:
            with role(self._spend_role):  # the spend cap counts judge and system calls apart (llm/spend.py)
                resp = await self._client.complete(messages, *args, **kwargs)
        except LLMError:
            meter = self._meter()
            if meter is not None:
                meter.failed(label)
            raise
        meter = self._meter()
        if meter is not None:
            meter.answered(resp, label)
        return resp

    def _meter(self) -> Any:
        meters = _CURRENT.get()
        if meters is None:
            return None
        if self._role not in meters:
            meters[self._role] = (UsageMeter(), str(getattr(self._client, "backend", "")), self._model())
        return meters[self._role][0]

    def _model(self) -> str:
        return str(getattr(self._client, "model", "") or "")


@contextmanager
def query_usage() -> Iterator[dict[str, dict[str, dict[str, Any]]]]:
    """Collect the LLM usage of the calls made inside the block: {role: {label: UsageLine as JSON}}."""
    meters: dict[str, Any] = {}
    token = _CURRENT.set(meters)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    try:
        yield out
    finally:
        _CURRENT.reset(token)
        for role, (meter, backend, model) in meters.items():
            summary = meter.summary(backend, model)
            out[role] = {label: line.model_dump(mode="json") for label, line in summary.by_label.items()}
