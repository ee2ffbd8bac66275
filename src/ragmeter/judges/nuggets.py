"""Nugget assignment, a judge: which of a query's nuggets a passage (an answer, the contexts, the top-k
retrieved) supports, asked in batches of 10 nuggets per call as castorini nuggetizer does, fail-soft per batch.

Per query, one assignment per distinct passage: the answer; the contexts the generator was given (one
passage, numbered); the top-k retrieved texts at each cut-off a `nugget_recall@k` asks for; all retrieved
texts for the lost-at-stage metrics. A batch whose call fails (after one re-ask) leaves its nuggets unassigned:
every metric that needs them is null with the reason, the others keep their values.

Values carry the version `<prompt version>;nuggets=<set hash>`: the set is part of every nugget metric's version.
"""

from __future__ import annotations

import ast
import asyncio
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmeter.judges.core import numbered
from ragmeter.judges.nugget_prompts import CONTEXT_METRICS, LOST_METRICS, PROMPTS
from ragmeter.judges.parsing import ParseFailure
from ragmeter.judges.prompts import REASK, Prompt
from ragmeter.llm.types import LLMError
from ragmeter.models import MetricResult
from ragmeter.nuggets.model import ASSIGNMENTS, Nugget, QueryNuggets
from ragmeter.nuggets.scores import SCORES, nuggetizer_score

BATCH = 10  # nuggets per assignment call (nuggetizer's assigner_window_size)
PRESENT = ("support", "partial_support")  # a nugget counts as in a passage (lost-at-stage metrics)


def is_nugget_metric(name: str) -> bool:
    return name.startswith("nugget_")


def prompt_of(style: str) -> Prompt:
    return PROMPTS[style]["assign"]


def metric_version(style: str, set_hash: str) -> str:
    return f"{prompt_of(style).version};nuggets={set_hash}"


def _python_list(text: str) -> list[Any]:
    cleaned = text.replace("```python", "").replace("```", "").strip()
    try:
        value = ast.literal_eval(cleaned)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        match = re.search(r"\[.*\]", cleaned, re.S)  # lenient: the list inside surrounding words
        if match is None:
            raise ParseFailure("no Python list in the reply") from None
        try:
            value = ast.literal_eval(match.group(0))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise ParseFailure("the list in the reply is not a Python literal") from None
    if not isinstance(value, list):
        raise ParseFailure("the reply is not a list")
    return value


def _labels(style: str, text: str, n: int) -> tuple[list[str], list[str]]:
    """(labels, reasons) of a reply; ParseFailure unless exactly `n` known labels."""
    reasons: list[str] = []
    if style == "nuggetizer":
        raw = _python_list(text)
    else:
        from ragmeter.judges.parsing import extract_json

        obj = extract_json(text)
        items = obj.get("labels") if isinstance(obj, dict) else None
        if not isinstance(items, list):
            raise ParseFailure('the reply has no "labels" list')
        raw = [i.get("label") if isinstance(i, dict) else i for i in items]
        reasons = [str(i.get("reason", "")) if isinstance(i, dict) else "" for i in items]
    labels = [str(x).strip().lower() for x in raw]
    if len(labels) != n:  # nuggetizer zips and silently drops the unlabelled nuggets; we refuse the reply
        raise ParseFailure(f"{len(labels)} labels for {n} nuggets")
    bad = [x for x in labels if x not in ASSIGNMENTS]
    if bad:
        raise ParseFailure(f"label {bad[0]!r} is not one of {', '.join(ASSIGNMENTS)}")
    return labels, reasons


@dataclass
class Assigned:
    """One passage's labels, by nugget id (None: its batch failed), with the failures' reasons."""

    labels: dict[str, str | None] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    calls: int = 0
    tokens: list[int] = field(default_factory=lambda: [0, 0])


async def _batch(
    llm: Any,
    style: str,
    query: str,
    passage: str,
    batch: Sequence[Nugget],
    out: Assigned,
    query_id: str | None,
) -> None:
    prompt = prompt_of(style)
    texts = [n.text for n in batch]
    listed = str(texts) if style == "nuggetizer" else "\n".join(f"[{i}] {t}" for i, t in enumerate(texts, 1))
    messages = prompt.messages(query=query, passage=passage, nuggets=listed, n=str(len(batch)))
    reason = ""
    for attempt in (1, 2):
        try:
            resp = await llm.complete(
                messages,
                json=style == "ours",
                metric="nugget_assign",
                query_id=query_id,
                max_tokens=prompt.max_tokens,
            )
        except LLMError as exc:
            reason = f"LLM call failed: {exc.reason}"
            break
        out.calls += 1
        out.tokens[0] += resp.usage.prompt_tokens
        out.tokens[1] += resp.usage.completion_tokens
        try:
            labels, why = _labels(style, resp.text, len(batch))
        except ParseFailure as exc:
            reason = f"unusable reply{' after a re-ask' if attempt == 2 else ''}: {exc}"
            if resp.finish_reason == "length":  # a reply that ran to the limit would run to it again
                reason = (
                    f"unusable reply, not re-asked: {exc} (the reply hit the {prompt.max_tokens}-token limit)"
                )
                break
            messages = [
                *messages,
                {"role": "assistant", "content": resp.text or "(empty reply)"},
                {"role": "user", "content": REASK.format(reason=exc)},
            ]
            continue
        for i, (n, label) in enumerate(zip(batch, labels, strict=True)):
            out.labels[n.id] = label
            if i < len(why) and why[i]:
                out.reasons[n.id] = why[i]
        return
    for n in batch:
        out.labels[n.id] = None
    out.errors.append(f"nuggets {batch[0].id}..{batch[-1].id}: {reason}")


async def assign(
    llm: Any, style: str, query: str, passage: str, nuggets: Sequence[Nugget], *, query_id: str | None = None
) -> Assigned:
    """The labels of `nuggets` for one passage, ceil(len / 10) calls; an empty passage supports nothing
    (no call, as nuggetizer)."""
    out = Assigned()
    if not passage.strip():
        out.labels = {n.id: "not_support" for n in nuggets}
        return out
    batches = [nuggets[i : i + BATCH] for i in range(0, len(nuggets), BATCH)]
    await asyncio.gather(*(_batch(llm, style, query, passage, b, out, query_id) for b in batches))
    out.labels = {n.id: out.labels[n.id] for n in nuggets}  # nugget order, whatever order batches finished in
    return out


Result = Callable[..., MetricResult]
ANSWER_STAGES = (
    "nugget_lost_generation",
    "nugget_unsourced",
)  # the lost-at-stage metrics that read the answer


def calls_needed(nuggets: int) -> int:
    return math.ceil(nuggets / BATCH)


# ------------------------------------------------------------------------------------------------ metrics


@dataclass(frozen=True)
class NuggetQuery:
    """What the nugget metrics of one query read: plain data."""

    question: str
    nuggets: QueryNuggets | None
    answer: str | None
    contexts: Sequence[str]
    retrieved: Sequence[str]  # retrieved texts in rank order
    query_id: str | None = None


def _passage(texts: Sequence[str]) -> str:
    flags: list[str] = []
    return numbered(texts, flags, what="passage") if texts else ""


class _Memo:
    """Each distinct passage of one query assigned once, however many metrics read it."""

    def __init__(self, llm: Any, style: str, q: NuggetQuery, nuggets: Sequence[Nugget]) -> None:
        self.llm, self.style, self.q, self.nuggets = llm, style, q, nuggets
        self.tasks: dict[str, asyncio.Task[Assigned]] = {}

    def get(self, passage: str) -> asyncio.Task[Assigned]:
        if passage not in self.tasks:
            self.tasks[passage] = asyncio.ensure_future(
                assign(self.llm, self.style, self.q.question, passage, self.nuggets, query_id=self.q.query_id)
            )
        return self.tasks[passage]


def _k(name: str) -> int:
    return int(name.rsplit("@", 1)[1])


def _rows(nuggets: Sequence[Nugget], got: Assigned) -> tuple[list[tuple[str, str]], str | None]:
    missing = [n.id for n in nuggets if got.labels.get(n.id) is None]
    if missing:
        return [], "assignment failed for nuggets " + ", ".join(missing) + ": " + "; ".join(got.errors)
    return [(n.importance, got.labels[n.id] or "") for n in nuggets], None


async def nugget_scores(
    names: Sequence[str], q: NuggetQuery, llm: Any, *, style: str, set_hash: str
) -> dict[str, MetricResult]:
    """Every nugget metric of `names` for one query; never raises (a failure is null with the reason)."""
    version = metric_version(style, set_hash)

    def result(name: str, value: float | None, error: str | None = None, **details: Any) -> MetricResult:
        return MetricResult(name=name, value=value, error=error, details=details, version=version)

    if q.nuggets is None:
        return {n: result(n, None, "the nugget set has no nuggets for this query") for n in names}
    nuggets = q.nuggets.nuggets
    memo = _Memo(llm, style, q, nuggets)
    out: dict[str, MetricResult] = {}
    try:
        out = await _compute(names, q, nuggets, memo, result)
    except Exception as exc:  # a judge never takes a run down
        return {n: result(n, None, f"internal error: {type(exc).__name__}: {exc}") for n in names}
    return out


async def _compute(
    names: Sequence[str], q: NuggetQuery, nuggets: Sequence[Nugget], memo: _Memo, result: Result
) -> dict[str, MetricResult]:
    answer_p, context_p, retrieved_p = (q.answer or ""), _passage(q.contexts), _passage(q.retrieved)
    out: dict[str, MetricResult] = {}
    for name in names:
        if q.answer is None and (name in SCORES or name in ANSWER_STAGES):
            out[name] = result(name, None, "no answer to assign nuggets to (a retrieval-only run)")
            continue
        if name in SCORES or name in CONTEXT_METRICS:
            on_contexts = name in CONTEXT_METRICS
            score_name = "nugget_" + name.removeprefix("nugget_context_") if on_contexts else name
            got = await memo.get(context_p if on_contexts else answer_p)
            rows, error = _rows(nuggets, got)
            details = _details(got)
            if error:
                out[name] = result(name, None, error, **details)
                continue
            if on_contexts and not q.contexts:
                out[name] = result(name, None, "no contexts were given to the generator", **details)
                continue
            score = nuggetizer_score(score_name, rows)
            out[name] = result(name, score.value, score.reason, **details)
        elif name.startswith("nugget_recall@"):
            got = await memo.get(_passage(q.retrieved[: _k(name)]))
            rows, error = _rows(nuggets, got)
            recall = nuggetizer_score("nugget_all", rows) if not error else None
            value, why = (recall.value, recall.reason) if recall else (None, error)
            out[name] = result(name, value, why, **_details(got))
        elif name in LOST_METRICS:
            out[name] = await _lost(name, q, nuggets, memo, (answer_p, context_p, retrieved_p), result)
        else:
            out[name] = result(name, None, f"unknown nugget metric {name!r}")
    return out


async def _lost(
    name: str,
    q: NuggetQuery,
    nuggets: Sequence[Nugget],
    memo: _Memo,
    passages: tuple[str, str, str],
    result: Result,
) -> MetricResult:
    vital = [n for n in nuggets if n.importance == "vital"]
    if not vital:
        return result(name, None, "the query has no vital nuggets")
    answer, contexts, retrieved = await asyncio.gather(*(memo.get(p) for p in passages))
    stages = {"answer": answer, "contexts": contexts, "retrieved": retrieved}
    failed = [s for s, got in stages.items() if any(got.labels.get(n.id) is None for n in vital)]
    if failed:
        errors = "; ".join(e for got in stages.values() for e in got.errors)
        return result(name, None, f"assignment failed for the {', '.join(failed)}: {errors}")

    def present(got: Assigned, n: Nugget) -> bool:
        return got.labels.get(n.id) in PRESENT

    rule: Callable[[Nugget], bool] = {
        "nugget_lost_retrieval": lambda n: not present(retrieved, n),
        "nugget_lost_context": lambda n: present(retrieved, n) and not present(contexts, n),
        "nugget_lost_generation": lambda n: present(contexts, n) and not present(answer, n),
        "nugget_unsourced": lambda n: present(answer, n) and not present(contexts, n),
    }[name]
    ids = [n.id for n in vital if rule(n)]
    by_stage = {s: {n.id: got.labels.get(n.id) for n in vital} for s, got in stages.items()}
    return result(name, len(ids) / len(vital), None, nugget_ids=ids, vital=len(vital), assignments=by_stage)


def _details(got: Assigned) -> dict[str, Any]:
    details: dict[str, Any] = {"assignments": dict(got.labels), "calls": got.calls}
    if got.reasons:
        details["reasons"] = dict(got.reasons)
    if got.errors:
        details["failed_batches"] = list(got.errors)
    details["tokens"] = {"prompt": got.tokens[0], "completion": got.tokens[1]}
    return details
