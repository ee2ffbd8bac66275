"""Synthetic test cases: one specific, searchable question per sampled chunk, asked of an LLM.

The same seed samples the same chunks. A question is kept only if it is non-empty, not a duplicate (of
an existing test case of the collection or of one made in this batch) and not copied from its chunk;
every LLM failure is counted with its reason. Kept questions are stored as `synthetic` test cases with
their chunk as the relevant chunk.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmeter.errors import InputError
from ragmeter.models import Document

PROMPT_VERSION = "generate-v1"
DEFAULT_PROMPT = """Here is a passage from a document collection:

<passage>
{chunk_text}
</passage>

Write ONE question that this passage answers. The question must be specific (someone reading only the
question should know what to search for: name the entities, terms or numbers it is about), answerable from
this passage alone, and phrased the way a user would type it into a search box. Do not copy sentences from
the passage. Reply with JSON only: {{"question": "..."}}"""

# Fewest words a question must have, and the span of consecutive chunk words above which it counts as copied.
MIN_WORDS = 3
COPY_MIN_SPAN = 8
COPY_FRACTION = 0.8
_WORD = re.compile(r"\w+", re.UNICODE)
_PREFIX = re.compile(r"^\s*(?:[-*\d.)]+\s*)?(?:q(?:uestion)?\s*[:.-]\s*)?", re.IGNORECASE)


@dataclass
class GeneratedCase:
    case_id: str
    question: str
    chunk_id: str


@dataclass
class GenerationReport:
    """What happened to each sampled chunk. Nothing is dropped silently."""

    requested: int
    sampled: int
    created: list[GeneratedCase] = field(default_factory=list)
    empty: list[str] = field(default_factory=list)  # chunk ids
    duplicate: list[str] = field(default_factory=list)
    copied: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (chunk id, reason)

    def summary(self) -> str:
        parts = [
            f"{len(self.created)} synthetic test case(s) from {self.sampled} sampled chunk(s)",
            f"{len(self.empty)} empty",
            f"{len(self.duplicate)} duplicate",
            f"{len(self.copied)} copied from the chunk",
            f"{len(self.failed)} LLM failure(s)",
        ]
        return ", ".join(parts)


def sample_chunks(
    chunks: Sequence[Document], n: int, seed: int, source_id: str | None = None
) -> list[Document]:
    """n chunks drawn with `seed` (ordered by chunk id first, so the draw does not depend on storage order)."""
    pool = [c for c in chunks if source_id is None or c.metadata.get("document") == source_id]
    pool.sort(key=lambda c: c.doc_id)
    if n >= len(pool):
        return pool
    return random.Random(seed).sample(pool, n)


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def normalise_question(text: str) -> str:
    """The comparison key of a question: lower-cased words joined by single spaces."""
    return " ".join(_words(text))


def extract_question(reply: str) -> str:
    """The question in an LLM reply: a JSON {"question": ...} (fenced or not), else the first line
    that ends with '?', else the first non-empty line; list markers and a "Question:" prefix removed."""
    text = reply.strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    if fenced:
        text = fenced.group(1).strip()
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        try:
            data = json.loads(text[start : end + 1])
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict):
            value = data.get("question")
            return value.strip() if isinstance(value, str) else ""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return ""
    line = next((ln for ln in lines if ln.endswith("?")), lines[0])
    return _PREFIX.sub("", line).strip().strip("\"'“”").strip()


def copies_chunk(question: str, chunk_text: str) -> bool:
    """True when the question is a run of the chunk's words: a common span of at least COPY_MIN_SPAN words
    that covers at least COPY_FRACTION of the question's words."""
    q = _words(question)
    c = _words(chunk_text)
    if len(q) < COPY_MIN_SPAN or not c:
        return False
    longest = 0
    previous = [0] * (len(c) + 1)
    for qi in range(1, len(q) + 1):
        current = [0] * (len(c) + 1)
        for ci in range(1, len(c) + 1):
            if q[qi - 1] == c[ci - 1]:
                current[ci] = previous[ci - 1] + 1
                longest = max(longest, current[ci])
        previous = current
    return longest >= COPY_MIN_SPAN and longest >= COPY_FRACTION * len(q)


def render_prompt(template: str, chunk_text: str) -> str:
    if "{chunk_text}" not in template:
        raise InputError("the prompt template must contain {chunk_text}", source="--prompt")
    # Only {chunk_text} is a field; any other brace in a custom prompt is literal.
    return (
        template.replace("{{", "\x00")
        .replace("}}", "\x01")
        .replace("{chunk_text}", chunk_text)
        .replace("\x00", "{")
        .replace("\x01", "}")
    )


def check_request(
    store: Any,
    collection: str,
    *,
    sample_size: int = 20,
    seed: int = 42,
    prompt: str | None = None,
    source_id: str | None = None,
) -> list[Document]:
    """The chunks a generation would sample, after checking the request (sample size, prompt template,
    collection, document): an InputError naming the flag on the first problem, before any LLM call."""
    if sample_size < 1:
        raise InputError("sample size must be >= 1", source="--sample-size")
    render_prompt(prompt if prompt is not None else DEFAULT_PROMPT, "")  # the template, before any call
    chunks = store.chunks(collection)
    if not chunks:
        raise InputError(
            f"collection {collection!r} has no chunks; ingest documents first", source="--collection"
        )
    picked = sample_chunks(chunks, sample_size, seed, source_id)
    if not picked:
        raise InputError(f"no chunks of document {source_id!r} in {collection!r}", source="--source-id")
    return picked


async def agenerate_test_cases(
    store: Any,
    collection: str,
    *,
    llm: Any,
    sample_size: int = 20,
    seed: int = 42,
    prompt: str | None = None,
    source_id: str | None = None,
) -> GenerationReport:
    """Sample chunks of `collection`, ask `llm` for a question each, store the keepers.

    `llm` is a ragmeter.llm client, or a spec string (`openai:MODEL`, ...) for a client made and closed here.
    """
    from ragmeter.llm.base import LLMError

    if isinstance(llm, str):
        from ragmeter.llm import from_spec

        client = from_spec(llm, seed=seed)
        try:
            return await agenerate_test_cases(
                store,
                collection,
                llm=client,
                sample_size=sample_size,
                seed=seed,
                prompt=prompt,
                source_id=source_id,
            )
        finally:
            await client.aclose()

    template = prompt if prompt is not None else DEFAULT_PROMPT
    picked = check_request(
        store, collection, sample_size=sample_size, seed=seed, prompt=prompt, source_id=source_id
    )
    report = GenerationReport(requested=sample_size, sampled=len(picked))

    async def ask(chunk: Document) -> tuple[Document, str | None, str | None]:
        messages = [{"role": "user", "content": render_prompt(template, chunk.text)}]
        try:
            resp = await llm.complete(messages, json=True, metric="generate", query_id=chunk.doc_id)
        except LLMError as exc:
            return chunk, None, exc.reason
        return chunk, resp.text, None

    replies = await asyncio.gather(*(ask(c) for c in picked))
    seen = {normalise_question(q.question) for q in store.test_cases(collection)}
    public = getattr(llm, "spec_public", None)  # a property on ragmeter.llm clients
    generator = dict(public) if isinstance(public, dict) else {"model": str(getattr(llm, "model", "?"))}
    for chunk, text, error in replies:  # in sample order, so duplicates resolve the same way every time
        if error is not None or text is None:
            report.failed.append((chunk.doc_id, error or "no reply"))
            continue
        question = extract_question(text)
        key = normalise_question(question)
        if len(key.split()) < MIN_WORDS:
            report.empty.append(chunk.doc_id)
        elif key in seen:
            report.duplicate.append(chunk.doc_id)
        elif copies_chunk(question, chunk.text):
            report.copied.append(chunk.doc_id)
        else:
            seen.add(key)
            case_id = store.add_test_case(
                collection,
                question,
                relevant_chunks=[chunk.doc_id],
                source="synthetic",
                metadata={
                    "generator": generator,
                    "prompt_version": PROMPT_VERSION if prompt is None else "custom",
                    "seed": seed,
                    "source_document": chunk.metadata.get("document"),
                },
            )
            report.created.append(GeneratedCase(case_id, question, chunk.doc_id))
    return report


def generate_test_cases(store: Any, collection: str, *, llm: Any, **options: Any) -> GenerationReport:
    """Synchronous wrapper of `agenerate_test_cases` (for `ragmeter run --generate`)."""
    return asyncio.run(agenerate_test_cases(store, collection, llm=llm, **options))
