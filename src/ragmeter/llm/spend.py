"""Spend caps (`run --max-cost-usd X`, `--max-judge-cost-usd Y`): no LLM request is sent that could take the
run's spend past its cap.

Before each request (each attempt: a retry is a request, and counts), the client reserves the request's worst
case: its input tokens by the declared estimate below plus its maximum output tokens (`max_tokens`), at the
model's price. The request is sent only when spend + what the requests in flight reserved + this worst case is
at most every cap that applies (the total cap for every role, the judge cap for the judge's calls). A request
that would fit once the requests in flight settle waits for them; one that cannot fit is refused
(`SpendRefused`, an LLMError) and the ledger remembers the query that asked. When a request
ends, its reservation becomes spend: the reply's own usage at the price when it answered, its worst case when
it failed (a provider may bill a request that timed out or answered malformed; the cap assumes it did). A
cached reply sends nothing and costs nothing.

The run loop (ragmeter.run.api) stops handing out queries once a call was refused, keeps no result of a query
that had a call refused, and stops the run resumable; the spend of the queries stored before is where a resume
starts counting. The ledger is found through a context variable, so clients need no wiring: the loop opens it
around the executor, and `ragmeter.llm.meter.MeteredLLM` names the role (judge, generator) of each call.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ragmeter.errors import RagmeterError
from ragmeter.llm.types import LLMError

# The declared input-token estimate of a request: one token per 3 characters of its messages (English text
# runs near 4 characters a token with the common tokenizers, so this errs high) plus 4 per message (the chat
# format's own tokens).
CHARS_PER_TOKEN = 3
TOKENS_PER_MESSAGE = 4

_LEDGER: contextvars.ContextVar[SpendLedger | None] = contextvars.ContextVar("ragmeter_spend", default=None)
_ROLE: contextvars.ContextVar[str] = contextvars.ContextVar("ragmeter_spend_role", default="judge")
_QUERY: contextvars.ContextVar[str | None] = contextvars.ContextVar("ragmeter_spend_query", default=None)


def estimate_input_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """The declared input-token estimate of one request (see CHARS_PER_TOKEN)."""
    chars = sum(len(str(m.get("content", ""))) for m in messages)
    return math.ceil(chars / CHARS_PER_TOKEN) + TOKENS_PER_MESSAGE * len(messages)


class SpendRefused(LLMError):
    """A request refused because its worst case could take spend past a cap."""


class SpendCapReached(RagmeterError):
    """The run stopped at its spend cap; it is stored resumable."""


@dataclass
class SpendLedger:
    """What a run has spent and reserved, by role, against its caps (USD; None: no cap)."""

    max_total: float | None = None
    max_judge: float | None = None
    spent: dict[str, float] = field(default_factory=dict)
    reserved: dict[str, float] = field(default_factory=dict)
    refused_queries: set[str] = field(default_factory=set)
    refusal: str | None = None  # why the first request was refused
    in_flight: int = 0  # requests reserved and not settled
    _settled: asyncio.Event | None = field(default=None, repr=False)

    @property
    def total_spent(self) -> float:
        return math.fsum(self.spent.values())

    def _room(self, role: str, *, in_flight: bool = True) -> float:
        """How much more may be reserved for a request of `role` now (`in_flight`: less what the requests
        in flight reserved; without: once they all settled at no cost)."""
        rooms = []
        if self.max_total is not None:
            held = math.fsum(self.reserved.values()) if in_flight else 0.0
            rooms.append(self.max_total - self.total_spent - held)
        if self.max_judge is not None and role == "judge":
            held = self.reserved.get("judge", 0.0) if in_flight else 0.0
            rooms.append(self.max_judge - self.spent.get("judge", 0.0) - held)
        return min(rooms) if rooms else math.inf

    async def reserve(self, role: str, worst: float | None, model: str) -> None:
        """Reserve a request's worst case; wait while it fits only once requests in flight settle; refuse it
        (SpendRefused) when it cannot fit."""
        while True:
            if worst is None:
                return self._refuse(f"no price for model {model!r} (add it to the RAGMETER_LLM_PRICES file)")
            if worst <= self._room(role) + 1e-12:
                self.reserved[role] = self.reserved.get(role, 0.0) + worst
                self.in_flight += 1
                return None
            left = self._room(role, in_flight=False)
            if worst > left + 1e-12 or self.in_flight == 0:
                return self._refuse(
                    f"a {role} request could cost up to ${worst:.6f}, more than the ${max(left, 0.0):.6f} "
                    "left under the cap"
                )
            if self._settled is None:
                self._settled = asyncio.Event()
            await self._settled.wait()

    def _refuse(self, why: str) -> None:
        query = _QUERY.get()
        if query is not None:
            self.refused_queries.add(query)
        self.refusal = self.refusal or why
        raise SpendRefused(f"spend cap: {why}")

    def settle(self, role: str, worst: float, charged: float) -> None:
        """A reserved request ended: its reservation becomes `charged` of spend."""
        self.reserved[role] = max(0.0, self.reserved.get(role, 0.0) - worst)
        self.in_flight -= 1
        self.spent[role] = self.spent.get(role, 0.0) + charged
        if self._settled is not None:  # wake the requests waiting for room, each checks again
            self._settled.set()
            self._settled = None

    def describe(self) -> str:
        """Spend so far against the caps, judge and system apart."""
        judge, system = self.spent.get("judge", 0.0), self.spent.get("generator", 0.0)
        caps = []
        if self.max_total is not None:
            caps.append(f"--max-cost-usd {self.max_total:g}")
        if self.max_judge is not None:
            caps.append(f"--max-judge-cost-usd {self.max_judge:g}")
        return (
            f"spent ${self.total_spent:.6f} (judge ${judge:.6f}, system (generator) ${system:.6f}) "
            f"of {' and '.join(caps)}"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "max_cost_usd": self.max_total,
            "max_judge_cost_usd": self.max_judge,
            "spent_usd": round(self.total_spent, 10),
            "judge_usd": round(self.spent.get("judge", 0.0), 10),
            "system_usd": round(self.spent.get("generator", 0.0), 10),
            "refusal": self.refusal,
        }


def current() -> SpendLedger | None:
    """The ledger of the run in progress (None: no cap)."""
    return _LEDGER.get()


@contextmanager
def capped(ledger: SpendLedger | None) -> Iterator[SpendLedger | None]:
    """Every LLM request made inside the block (and the tasks it starts) is checked against `ledger`."""
    token = _LEDGER.set(ledger)
    try:
        yield ledger
    finally:
        _LEDGER.reset(token)


@contextmanager
def role(name: str) -> Iterator[None]:
    """The requests made inside the block are `name`'s ("judge", "generator")."""
    token = _ROLE.set(name)
    try:
        yield
    finally:
        _ROLE.reset(token)


def current_role() -> str:
    return _ROLE.get()


def for_query(query_id: str) -> None:
    """Name the query the current task evaluates (a refused request marks it)."""
    _QUERY.set(query_id)


def spent_by_role(usage_lines: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> dict[str, float]:
    """A stored query's spend by role, from its usage block ({role: {label: UsageLine JSON}})."""
    out: dict[str, float] = {}
    for r, labels in usage_lines.items():
        key = "judge" if r == "judge_strong" else r  # a cascade's strong judge spends under the judge's cap
        out[key] = out.get(key, 0.0) + math.fsum(
            float(line.get("cost_usd") or 0.0) for line in labels.values()
        )
    return out
