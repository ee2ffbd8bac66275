"""Nugget sets, the qrels of answers: per query, the atomic facts a good answer contains, each vital or okay.

A set is data, like qrels: read from a file, stored with a run by path and hash, reused across runs. Its hash
(`NuggetSet.hash`, over the canonical JSON of every query's nuggets) is its version: it is part of the version
of every nugget metric's values, so values scored against two different sets are never compared silently.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Importance = Literal["vital", "okay"]
Assignment = Literal["support", "partial_support", "not_support"]
ASSIGNMENTS: tuple[str, ...] = ("support", "partial_support", "not_support")


class Provenance(BaseModel):
    """Where a query's nuggets came from: the documents they were made from and the model and prompt that made
    them, or the person who wrote them."""

    model_config = ConfigDict(extra="forbid")

    documents: list[str] = Field(default_factory=list)
    model: str | None = None
    prompt: str | None = None  # prompt version, e.g. "nuggetizer-0.0.5" or "nugget_create/v1+digest"
    author: str | None = None  # a person (hand-written nuggets)
    note: str | None = None


class Nugget(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    text: str = Field(min_length=1)
    importance: Importance

    @field_validator("text")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("a nugget's text is blank")
        return v.strip()

    @field_validator("importance", mode="before")
    @classmethod
    def _lower(cls, v: Any) -> Any:
        return v.strip().lower() if isinstance(v, str) else v


class QueryNuggets(BaseModel):
    """One line of a nugget file: one query's nuggets, in order of importance as written."""

    model_config = ConfigDict(extra="forbid")

    query_id: str = Field(min_length=1)
    query: str | None = None
    nuggets: list[Nugget]
    provenance: Provenance = Field(default_factory=Provenance)

    @field_validator("nuggets")
    @classmethod
    def _unique_ids(cls, v: list[Nugget]) -> list[Nugget]:
        seen: set[str] = set()
        for n in v:
            if n.id in seen:
                raise ValueError(f"nugget id {n.id!r} is repeated")
            seen.add(n.id)
        return v

    @property
    def vital(self) -> list[Nugget]:
        return [n for n in self.nuggets if n.importance == "vital"]


class NuggetSet:
    """Every query's nuggets, by query id, in file order."""

    def __init__(self, queries: Mapping[str, QueryNuggets], *, source: str | None = None) -> None:
        self.queries: dict[str, QueryNuggets] = dict(queries)
        self.source = source

    def __iter__(self) -> Iterator[QueryNuggets]:
        return iter(self.queries.values())

    def __len__(self) -> int:
        return len(self.queries)

    def get(self, query_id: str) -> QueryNuggets | None:
        return self.queries.get(query_id)

    @property
    def hash(self) -> str:
        """The set's version: sha256 (first 12 hex digits) of its canonical JSON, queries in id order. The
        text, importance and id of every nugget count; provenance does not (the same facts are the same set)."""
        body = [
            [q.query_id, [[n.id, n.text, n.importance] for n in q.nuggets]]
            for q in sorted(self.queries.values(), key=lambda q: q.query_id)
        ]
        text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def counts(self) -> dict[str, int]:
        nuggets = [n for q in self for n in q.nuggets]
        vital = sum(1 for n in nuggets if n.importance == "vital")
        return {"queries": len(self), "nuggets": len(nuggets), "vital": vital, "okay": len(nuggets) - vital}
