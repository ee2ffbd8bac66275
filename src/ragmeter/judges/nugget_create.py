"""Nugget creation as castorini nuggetizer 0.0.5 does it (`Nuggetizer.create`): iterate over the passages in
windows of 10, each call updating the nugget list (at most 30); then label importance in batches of 10; then
keep vital first, in their order, up to `keep` (nuggetizer keeps 30; the TREC 2024 RAG track kept 20).

Differences, on purpose: a reply that cannot be parsed is re-asked once (nuggetizer retries up to 500 times at
temperature 0.2) and then that window leaves the list as it was / that batch's nuggets are labelled "okay"
with a flag (nuggetizer labels them "failed", which its scores count as neither vital nor okay's support);
a nugget the reply repeats (the same text up to case and spacing) is kept once, with a flag (nuggetizer keeps
repeats: the local 1.5B model measured in benchmarks/nuggets.py returned one list of four nuggets four times,
which made 16 nuggets of 4 facts and so weighed each fact four times in every score).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmeter.judges.nugget_prompts import PROMPTS
from ragmeter.judges.nuggets import _python_list
from ragmeter.judges.parsing import ParseFailure, extract_json
from ragmeter.judges.prompts import REASK, Prompt
from ragmeter.llm.types import LLMError
from ragmeter.nuggets.model import Nugget, Provenance, QueryNuggets

WINDOW = 10  # passages per creation call (creator_window_size)
MAX_NUGGETS = 30  # nuggets a creation call may return (creator_max_nuggets)
SCORE_BATCH = 10  # nuggets per importance call (scorer_window_size)


@dataclass
class Created:
    nuggets: QueryNuggets
    calls: int = 0
    flags: list[str] = field(default_factory=list)


def _once(texts: list[str]) -> tuple[list[str], int]:
    """The texts in order, each kept once (compared up to case and spacing), and how many repeats went."""
    seen: set[str] = set()
    out = []
    for t in texts:
        key = " ".join(t.lower().split())
        if key not in seen:
            seen.add(key)
            out.append(t)
    return out, len(texts) - len(out)


async def _ask(
    llm: Any, prompt: Prompt, style: str, values: dict[str, str], key: str, query_id: str
) -> tuple[list[Any], int]:
    """The list a reply holds (a Python list, or JSON {key: [...]}) and the calls it took; ParseFailure after a re-ask."""
    messages = prompt.messages(**values)
    for attempt in (1, 2):
        resp = await llm.complete(
            messages,
            json=style == "ours",
            metric=prompt.name,
            query_id=query_id,
            max_tokens=prompt.max_tokens,
        )
        try:
            if style == "nuggetizer":
                return _python_list(resp.text), attempt
            obj = extract_json(resp.text)
            items = obj.get(key) if isinstance(obj, dict) else None
            if not isinstance(items, list):
                raise ParseFailure(f'the reply has no "{key}" list')
            return items, attempt
        except ParseFailure as exc:
            if resp.finish_reason == "length":  # a reply that ran to the limit would run to it again
                raise ParseFailure(f"{exc} (the reply hit the {prompt.max_tokens}-token limit)") from None
            if attempt == 2:
                raise ParseFailure(f"{exc} (after a re-ask)") from None
            messages = [
                *messages,
                {"role": "assistant", "content": resp.text or "(empty reply)"},
                {"role": "user", "content": REASK.format(reason=exc)},
            ]
    raise AssertionError("unreachable")


async def create(
    llm: Any,
    query_id: str,
    query: str,
    passages: Sequence[tuple[str, str]],
    *,
    style: str = "nuggetizer",
    keep: int = 20,
    model: str | None = None,
) -> Created:
    """The nuggets of one query from its (doc id, text) passages."""
    prompts = PROMPTS[style]
    out_calls, flags = 0, []
    current: list[str] = []
    for start in range(0, len(passages), WINDOW):
        window = passages[start : start + WINDOW]
        context = "\n".join(f"[{i + 1}] {text}" for i, (_, text) in enumerate(window))
        shown = str(current) if style == "nuggetizer" else ", ".join(current) or "(none)"
        values = {
            "query": query,
            "context": context,
            "nuggets": shown,
            "count": str(len(current)),
            "max_nuggets": str(MAX_NUGGETS),
        }
        try:
            got, calls = await _ask(llm, prompts["create"], style, values, "nuggets", query_id)
        except (ParseFailure, LLMError) as exc:
            out_calls += 2 if isinstance(exc, ParseFailure) else 0
            flags.append(
                f"passages {start + 1}-{start + len(window)}: {getattr(exc, 'reason', exc)}; list kept as it was"
            )
            continue
        out_calls += calls
        current, repeats = _once([str(x).strip() for x in got if str(x).strip()])
        current = current[:MAX_NUGGETS]
        if repeats:
            flags.append(
                f"passages {start + 1}-{start + len(window)}: {repeats} repeated nugget(s) kept once"
            )
    labelled: list[tuple[str, str]] = []
    for start in range(0, len(current), SCORE_BATCH):
        batch = current[start : start + SCORE_BATCH]
        shown = (
            str(batch) if style == "nuggetizer" else "\n".join(f"[{i}] {t}" for i, t in enumerate(batch, 1))
        )
        try:
            got, calls = await _ask(
                llm,
                prompts["score"],
                style,
                {"query": query, "nuggets": shown, "n": str(len(batch))},
                "labels",
                query_id,
            )
            out_calls += calls
            labels = [str(x).strip().lower() for x in got]
            if len(labels) != len(batch) or any(x not in ("vital", "okay") for x in labels):
                raise ParseFailure(f"labels {labels!r} for {len(batch)} nuggets")
        except (ParseFailure, LLMError) as exc:
            flags.append(
                f"importance of nuggets {start + 1}-{start + len(batch)}: {getattr(exc, 'reason', exc)}; labelled okay"
            )
            labels = ["okay"] * len(batch)
        labelled += list(zip(batch, labels, strict=True))
    ordered = sorted(range(len(labelled)), key=lambda i: (0 if labelled[i][1] == "vital" else 1, i))[:keep]
    nuggets = [
        Nugget(id=str(n + 1), text=labelled[i][0], importance=labelled[i][1]) for n, i in enumerate(ordered)
    ]
    prompt_version = f"{prompts['create'].version}+{prompts['score'].version}"
    provenance = Provenance(
        documents=[d for d, _ in passages], model=model, prompt=prompt_version, note="; ".join(flags) or None
    )
    return Created(
        QueryNuggets(query_id=query_id, query=query, nuggets=nuggets, provenance=provenance), out_calls, flags
    )


def passages_of(dataset: Any, runs: Sequence[Any] = (), depth: int = 20) -> dict[str, list[tuple[str, str]]]:
    """Per query, the passages nuggets are made from: its relevant documents (grade >= 1, best grade first)
    from the dataset's corpus; without qrels for a query, the runs' pooled top `depth` (by rank, then run)."""
    corpus = {d.doc_id: d.text for d in dataset.corpus or []}
    out: dict[str, list[tuple[str, str]]] = {}
    pooled: dict[str, list[tuple[str, str]]] = {}
    for rank in range(depth):
        for run in runs:
            for r in run.per_query:
                if rank < len(r.retrieved):
                    doc = r.retrieved[rank]
                    seen = pooled.setdefault(r.query_id, [])
                    if all(d != doc.doc_id for d, _ in seen) and (doc.text or corpus.get(doc.doc_id)):
                        seen.append((doc.doc_id, doc.text or corpus[doc.doc_id]))
    for q in dataset.queries:
        grades = sorted(
            ((g, d) for d, g in q.judgments().items() if g >= 1 and d in corpus), key=lambda x: (-x[0], x[1])
        )
        relevant = [(d, corpus[d]) for _, d in grades]
        chosen = relevant or pooled.get(q.query_id, [])
        if chosen:
            out[q.query_id] = chosen
    return out


async def create_set(
    llm: Any,
    dataset: Any,
    *,
    runs: Sequence[Any] = (),
    depth: int = 20,
    style: str = "nuggetizer",
    keep: int = 20,
    model: str | None = None,
    concurrency: int = 4,
) -> tuple[list[QueryNuggets], int, list[str]]:
    """Nuggets of every query that has passages: (records in dataset order, calls made, flags)."""
    import asyncio

    passages = passages_of(dataset, runs, depth)
    gate = asyncio.Semaphore(max(1, concurrency))
    questions = {q.query_id: q.question for q in dataset.queries}

    async def one(qid: str) -> Created:
        async with gate:
            return await create(llm, qid, questions[qid], passages[qid], style=style, keep=keep, model=model)

    made = await asyncio.gather(*(one(q) for q in passages))
    flags = [f"{c.nuggets.query_id}: {f}" for c in made for f in c.flags]
    return [c.nuggets for c in made], sum(c.calls for c in made), flags
