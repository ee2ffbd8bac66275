"""The protocol every system under test follows, and the helpers that call it sync or async alike."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

from ragmeter.errors import InputError


class Retrieved(NamedTuple):
    """One retrieved document: its id (a document id, not a chunk id, for the built-in pipeline)."""

    doc_id: str
    score: float
    text: str = ""


@runtime_checkable
class System(Protocol):
    """What is evaluated. `retrieve` may be sync or async and may return `Retrieved`, tuples
    `(doc_id, score[, text])`, dicts `{id|doc_id, score, text}` or bare ids. An optional
    `answer(query, contexts)` (sync or async) returns text with [n] citations of `contexts`."""

    name: str

    def retrieve(self, query: str, k: int) -> Any: ...


def coerce_results(raw: Any, *, source: str) -> list[Retrieved]:
    """Turn what a system returned into a list of Retrieved; bad shapes raise InputError naming `source`."""
    if raw is None:
        return []
    if isinstance(raw, Mapping) and "results" in raw:
        raw = raw["results"]
    if isinstance(raw, str | bytes | Mapping) or not isinstance(raw, Iterable):
        raise InputError(f"retrieve() must return a list, got {type(raw).__name__}", source=source)
    raw = list(raw)
    out: list[Retrieved] = []
    n = len(raw)
    for i, item in enumerate(raw):
        try:
            out.append(_coerce_one(item, default_score=float(n - i)))
        except (TypeError, ValueError, KeyError) as exc:
            raise InputError(f"result {i}: {exc}", source=source) from None
    return out


def _coerce_one(item: Any, *, default_score: float) -> Retrieved:
    if isinstance(item, Retrieved):
        return item
    if isinstance(item, str):
        return Retrieved(item, default_score, "")
    if isinstance(item, Mapping):
        doc_id = item.get("doc_id", item.get("id", item.get("_id")))
        if doc_id is None:
            raise KeyError("a result needs 'id' or 'doc_id'")
        score = item.get("score", default_score)
        return Retrieved(str(doc_id), float(score), str(item.get("text") or ""))
    if isinstance(item, tuple | list):
        if len(item) == 2:
            return Retrieved(str(item[0]), float(item[1]), "")
        if len(item) == 3:
            return Retrieved(str(item[0]), float(item[1]), str(item[2] or ""))
        raise ValueError(f"a result tuple needs 2 or 3 fields (doc_id, score[, text]), got {len(item)}")
    raise TypeError(f"cannot read a result of type {type(item).__name__}")


async def timed_call(fn: Any, *args: Any) -> tuple[Any, float]:
    """`_call`, and how long `fn` itself took in ms: a sync function is timed inside its worker thread,
    from the moment the thread starts it, so waiting for a free thread (many queries in flight) is not
    counted as the stage's time."""
    if inspect.iscoroutinefunction(fn):
        t = time.perf_counter()
        result = await fn(*args)
        return result, (time.perf_counter() - t) * 1000

    def run() -> tuple[Any, float]:
        t = time.perf_counter()
        out = fn(*args)
        return out, (time.perf_counter() - t) * 1000

    result, ms = await asyncio.to_thread(run)
    if inspect.isawaitable(result):
        t = time.perf_counter()
        result = await result
        ms += (time.perf_counter() - t) * 1000
    return result, ms


async def _call(fn: Any, *args: Any) -> Any:
    """Await an async callable; run a sync one in a worker thread (so it does not block the loop)."""
    if inspect.iscoroutinefunction(fn):
        return await fn(*args)
    result = await asyncio.to_thread(fn, *args)
    if inspect.isawaitable(result):
        result = await result
    return result


async def aretrieve(system: Any, query: str, k: int) -> list[Retrieved]:
    """Retrieve with any system, sync or async; the results are normalised to Retrieved."""
    raw = await _call(system.retrieve, query, k)
    return coerce_results(raw, source=getattr(system, "name", type(system).__name__))


async def aretrieve_timed(system: Any, query: str, k: int) -> tuple[list[Retrieved], float]:
    """`aretrieve` and the milliseconds the system's retrieve took, timed where it runs (see `timed_call`)."""
    raw, ms = await timed_call(system.retrieve, query, k)
    return coerce_results(raw, source=getattr(system, "name", type(system).__name__)), ms


async def aanswer(system: Any, query: str, contexts: list[Retrieved]) -> str | None:
    """The system's answer, or None when it has no `answer` (or declines with None)."""
    return (await aanswer_timed(system, query, contexts))[0]


async def aanswer_timed(system: Any, query: str, contexts: list[Retrieved]) -> tuple[str | None, float]:
    """`aanswer` and the milliseconds the system's answer took, timed where it runs."""
    fn = getattr(system, "answer", None)
    if fn is None or not callable(fn):
        return None, 0.0
    result, ms = await timed_call(fn, query, contexts)
    return _answer_text(system, result), ms


async def awarm_up(system: Any) -> None:
    """Load what a system loads lazily (indexes, models) before any query is timed: its `warm_up()`, sync
    or async, when it has one (the built-in pipeline and the demo systems do)."""
    fn = getattr(system, "warm_up", None)
    if callable(fn):
        await _call(fn)


class Answer(str):
    """An answer text that carries the system's `confidence` in it (selective answering: the risk-coverage
    curve). answer() returns one of these, or an object with `text` and `confidence`, or a mapping
    {"answer": ..., "confidence": ...}; a plain string has no confidence."""

    confidence: float | None = None

    def __new__(cls, text: str, confidence: float | None = None) -> Answer:
        made = super().__new__(cls, text)
        made.confidence = confidence
        return made


def _confidence(system: Any, raw: Any) -> float | None:
    import math

    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
        raise InputError(
            f"answer()'s confidence must be a finite number, got {raw!r}",
            source=getattr(system, "name", type(system).__name__),
        )
    return float(raw)


def _answer_text(system: Any, result: Any) -> str | None:
    if result is None:
        return None
    if isinstance(result, Answer):
        return result
    if isinstance(result, Mapping) and isinstance(result.get("answer"), str):
        return Answer(result["answer"], _confidence(system, result.get("confidence")))
    if not isinstance(result, str):
        text = getattr(result, "text", None)
        if not isinstance(text, str):
            raise InputError(
                f"answer() must return a string, got {type(result).__name__}",
                source=getattr(system, "name", type(system).__name__),
            )
        confidence = getattr(result, "confidence", None)
        return Answer(text, _confidence(system, confidence)) if confidence is not None else text
    return result


def document_level(results: Sequence[Retrieved], *, separator: str = "#") -> list[Retrieved]:
    """Map chunk ids `doc_id#n` to their document, keeping each document once at its best rank.

    For systems that return chunk ids; the built-in pipeline already returns documents."""
    seen: set[str] = set()
    out: list[Retrieved] = []
    for r in results:
        head, sep, tail = r.doc_id.rpartition(separator)
        doc_id = head if sep and tail.isdigit() else r.doc_id
        if doc_id not in seen:
            seen.add(doc_id)
            out.append(Retrieved(doc_id, r.score, r.text))
    return out
