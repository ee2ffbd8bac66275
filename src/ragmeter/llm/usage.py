"""Calls, tokens and cost: counted per client and per label (a judge metric, "generator", ...).

A cost is only ever a price times tokens. A model missing from the price table has cost `None` and a
`cost_note` saying why, never 0.0; a cached reply costs 0.0 (nothing was sent). Nothing here holds a
secret: a `Usage` is safe to store and export (`usage.model_dump(mode="json")`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ragmeter.llm.types import LLMResponse
from ragmeter.result_models import UsageLine as UsageLine  # its home: it is part of a run's usage block

# The label of calls made without one (a user's own `complete()` calls).
UNLABELLED = "unlabelled"


class ClientUsage(UsageLine):
    """One client's usage, with the same numbers per label."""

    backend: str = ""
    model: str = ""
    api_requests: int = Field(0, description="HTTP requests sent, retries included")
    retries: int = 0
    latency_s_total: float = 0.0
    by_label: dict[str, UsageLine] = Field(default_factory=dict)


class Usage(BaseModel):
    """A run's usage: each client under its role ("judge", "generator"), every label merged over the
    clients, and the total. Build it with `Usage.of({"judge": judge_client, "generator": gen_client})`."""

    model_config = ConfigDict(extra="forbid")

    clients: dict[str, ClientUsage] = Field(default_factory=dict)
    by_label: dict[str, UsageLine] = Field(default_factory=dict)
    total: UsageLine = Field(default_factory=UsageLine)

    @classmethod
    def of(cls, clients: Mapping[str, Any]) -> Usage:
        """From {role: client or None}; a client given under two roles is counted once (first role)."""
        seen: set[int] = set()
        parts: dict[str, ClientUsage] = {}
        for role, client in clients.items():
            if client is None or id(client) in seen or not hasattr(client, "usage"):
                continue
            seen.add(id(client))
            parts[role] = client.usage
        labels: dict[str, list[UsageLine]] = {}
        for part in parts.values():
            for label, line in part.by_label.items():
                labels.setdefault(label, []).append(line)
        return cls(
            clients=parts,
            by_label={label: merge(lines) for label, lines in sorted(labels.items())},
            total=merge(parts.values()),
        )


def merge(lines: Iterable[UsageLine]) -> UsageLine:
    """The sum of lines; the cost is None (with every reason) when any part's cost is unknown."""
    out = UsageLine()
    notes: list[str] = []
    cost: float | None = 0.0
    for line in lines:
        out.calls += line.calls
        out.cached_calls += line.cached_calls
        out.failed_calls += line.failed_calls
        out.input_tokens += line.input_tokens
        out.output_tokens += line.output_tokens
        out.cache_read_tokens += line.cache_read_tokens
        out.cache_write_tokens += line.cache_write_tokens
        if line.cost_usd is None:
            cost = None
            if line.cost_note:
                notes.append(line.cost_note)
        elif cost is not None:
            cost += line.cost_usd
    out.cost_usd = None if cost is None else round(cost, 8)
    out.cost_note = merge_cost_notes(notes)
    return out


_UNPRICED = re.compile(r"^no price for model (.+?) \((\d+) of (\d+) calls\)(.*)$", re.DOTALL)


def merge_cost_notes(notes: Iterable[str]) -> str | None:
    """The notes of merged lines as one: the "(n of m calls)" of each unpriced model summed over the
    lines (8 queries with "(1 of 1 calls)" each are "(8 of 8 calls)"), other notes once each."""
    counts: dict[str, list[int]] = {}
    tails: dict[str, str] = {}
    others: list[str] = []
    for note in notes:
        for part in note.split("; no price for model "):
            part = part if part.startswith("no price for model ") else "no price for model " + part
            found = _UNPRICED.match(part)
            if found is None:
                if note not in others:
                    others.append(note)
                break
            model, n, m, tail = found.groups()
            total = counts.setdefault(model, [0, 0])
            total[0] += int(n)
            total[1] += int(m)
            tails.setdefault(model, tail)
    merged = [
        f"no price for model {model} ({n} of {m} calls){tails[model]}" for model, (n, m) in counts.items()
    ]
    return "; ".join(merged + others) or None


@dataclass
class _Tally:
    calls: int = 0
    cached_calls: int = 0
    failed_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0

    def add(self, resp: LLMResponse) -> None:
        self.calls += 1
        if resp.cached:
            self.cached_calls += 1
            return
        self.input_tokens += resp.usage.prompt_tokens
        self.output_tokens += resp.usage.completion_tokens
        self.cache_read_tokens += resp.usage.cache_read_tokens
        self.cache_write_tokens += resp.usage.cache_write_tokens
        if resp.cost_usd is None:
            self.unpriced_calls += 1
        else:
            self.cost_usd += resp.cost_usd

    def line(self, model: str) -> dict[str, Any]:
        unknown = self.unpriced_calls > 0
        note = (
            f"no price for model {model!r} ({self.unpriced_calls} of {self.calls} calls): "
            "give prices= or a RAGMETER_LLM_PRICES file"
        )
        return {
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "failed_calls": self.failed_calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "cost_usd": None if unknown else round(self.cost_usd, 8),
            "cost_note": note if unknown else None,
        }


@dataclass
class UsageMeter:
    """The running counts of one client."""

    total: _Tally = field(default_factory=_Tally)
    labels: dict[str, _Tally] = field(default_factory=dict)
    api_requests: int = 0
    retries: int = 0
    latency_s_total: float = 0.0

    def _label(self, label: str | None) -> _Tally:
        return self.labels.setdefault(label or UNLABELLED, _Tally())

    def answered(self, resp: LLMResponse, label: str | None) -> None:
        self.total.add(resp)
        self._label(label).add(resp)
        if not resp.cached:
            self.latency_s_total += resp.latency_s

    def failed(self, label: str | None) -> None:
        self.total.failed_calls += 1
        self._label(label).failed_calls += 1

    def summary(self, backend: str, model: str) -> ClientUsage:
        return ClientUsage(
            backend=backend,
            model=model,
            api_requests=self.api_requests,
            retries=self.retries,
            latency_s_total=round(self.latency_s_total, 6),
            by_label={k: UsageLine(**t.line(model)) for k, t in sorted(self.labels.items())},
            **self.total.line(model),
        )


def format_cost(line: Mapping[str, Any]) -> str:
    """`$0.0123`, or `unknown` when a price was missing (the reason is the line's cost_note)."""
    cost = line.get("cost_usd")
    return "unknown" if cost is None else f"${float(cost):.4f}"


def prompt_cache_share(line: Mapping[str, Any]) -> str:
    """', 62% of input tokens read from the server's prompt cache (10 written)', or '' when the server
    reported no prompt caching (not ragmeter's own reply cache: that is `cached_calls`)."""
    read, written = int(line.get("cache_read_tokens") or 0), int(line.get("cache_write_tokens") or 0)
    total = int(line.get("input_tokens") or 0)
    if not (read or written) or not total:
        return ""
    share = f", {100 * read / total:.0f}% of input tokens read from the server's prompt cache"
    return share + (f" ({written} written)" if written else "")


def describe_usage(usage: Mapping[str, Any] | None) -> list[str]:
    """A run's usage block (`EvalRunResult.usage`) as lines for people: each role's calls, tokens and
    cost, then the total when there are two roles, then why a cost is unknown. Empty without LLM calls."""
    if not usage:
        return []
    out: list[str] = []
    roles = [(role, usage.get(role)) for role in ("judge", "generator")]
    present = [(role, line) for role, line in roles if line]
    for role, line in [*present, *([("total", usage.get("total"))] if len(present) > 1 else [])]:
        assert line is not None
        out.append(
            f"{role}: {line.get('calls', 0)} calls ({line.get('cached_calls', 0)} cached, "
            f"{line.get('failed_calls', 0)} failed), {line.get('input_tokens', 0)} input + "
            f"{line.get('output_tokens', 0)} output tokens{prompt_cache_share(line)}, cost {format_cost(line)}"
        )
    note = (usage.get("total") or {}).get("cost_note")
    if note:
        out.append(f"cost unknown: {note}")
    return out
