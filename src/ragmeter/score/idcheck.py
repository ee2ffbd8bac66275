"""A run whose retrieved ids are all foreign to the dataset: warned about, not silently scored 0.

The usual cause is a framework's own ids (a vector store's generated uuids) where the dataset's document
ids were meant; the adapters' id rule (docs/systems.md "Document ids") reads `metadata["doc_id"]` first.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from ragmeter.models import EvalQuery, QueryEvalResult

log = logging.getLogger("ragmeter.score")


def foreign_ids_note(
    queries: Mapping[str, EvalQuery] | Sequence[EvalQuery], results: Sequence[QueryEvalResult]
) -> str | None:
    """A note (also logged as a warning) when the run retrieved documents and not one of their ids is a
    document id of the dataset's qrels; None otherwise (or when the dataset has no qrels to compare)."""
    by_id = queries if isinstance(queries, Mapping) else {q.query_id: q for q in queries}
    judged = {doc for q in by_id.values() for doc in q.judgments()}
    retrieved = [d.doc_id for r in results for d in r.retrieved]
    if not judged or not retrieved or not judged.isdisjoint(retrieved):
        return None
    examples = ", ".join(repr(d) for d in list(dict.fromkeys(retrieved))[:2])
    note = (
        f"not one of the {len(retrieved)} retrieved ids (e.g. {examples}) is a document id of the "
        "dataset, so every retrieval score is 0: does the system return its own ids? Framework "
        "adapters read metadata['doc_id'] (or id_key=) before the framework's generated ids"
    )
    log.warning(note)
    return note
