"""What the three framework adapters share: the extra check, context numbering, answer text, spec targets."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.errors import InputError, MissingExtraError
from ragmeter.systems.base import Retrieved


def require(module: str, extra: str, what: str) -> None:
    """Fail with one line naming the extra when a framework is not installed (imports nothing)."""
    if importlib.util.find_spec(module) is None:
        raise MissingExtraError(extra, what)


def number_contexts(contexts: Sequence[Retrieved]) -> str:
    """The contexts as the prompt sees them: `[1] text`, blank-line separated, in the order given
    (the same numbering the protocol's `[n]` citations refer to)."""
    return "\n\n".join(f"[{i}] {c.text}" for i, c in enumerate(contexts, start=1))


def answer_text(result: Any, *, source: str) -> str | None:
    """The answer's text from what a framework returned: a string, a chat message (`.content`), an
    object with `.text`, `.response` or `.data`, or a mapping with `answer` (or one of those)."""
    if result is None or isinstance(result, str):
        return result
    if isinstance(result, Mapping):
        for key in ("answer", "output", "text", "response", "result"):
            if key in result:
                return answer_text(result[key], source=source)
        raise InputError(f"the answer is a mapping without 'answer' (keys: {sorted(result)})", source=source)
    for attr in ("content", "text", "response", "data"):
        value = getattr(result, attr, None)
        if isinstance(value, str):
            return value
        if attr == "content" and isinstance(value, list):  # chat message content blocks
            return "".join(b if isinstance(b, str) else str(b.get("text", "")) for b in value)
    raise InputError(f"cannot read an answer from a {type(result).__name__}", source=source)


def rank_score(score: Any, rank: int, n: int) -> float:
    """The framework's score when it gave one, else a score from the rank (n, n-1, ...), as
    `coerce_results` does for bare ids."""
    if score is None:
        return float(n - rank)
    return float(score)


# The one id rule of every adapter (docs/systems.md "Document ids"): metadata[id_key] when id_key is given,
# else metadata["doc_id"] (where a user puts the dataset's id), else the framework's own document id.
DOC_ID_KEY = "doc_id"


def document_id(
    meta: Mapping[str, Any] | None, framework_ids: Sequence[Any], *, id_key: str | None, source: str
) -> str:
    """A retrieved document's id by the adapters' one rule; `framework_ids` are the framework's own ids in
    its order of preference (a source document's id before a chunk's). No id at all is an InputError."""
    meta = meta or {}
    if id_key is not None:
        if meta.get(id_key) is None:
            raise InputError(f"a document has no metadata[{id_key!r}]", source=source)
        return str(meta[id_key])
    for value in (meta.get(DOC_ID_KEY), *framework_ids):
        if value is not None and value != "":
            return str(value)
    raise InputError(f"a document has no id: set metadata[{DOC_ID_KEY!r}] or pass id_key=", source=source)
