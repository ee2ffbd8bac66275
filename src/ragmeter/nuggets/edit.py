"""Edits people make to a query's nuggets (in `ragmeter view --annotate`): add, reword, merge, delete and
re-grade. Each edit gives a new set (the old one is left alone) and a plain record of the change, kept in the
set's history; the new set's hash is its new version.

- add: a new nugget, id `p1`, `p2`, ... (the first free one), vital or okay;
- reword: a nugget's new text (its id and importance stay);
- merge: nuggets B, C, ... into A: A takes the given text (vital when any merged one was), the others go;
- delete: a nugget goes;
- regrade: a nugget becomes vital or okay.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from ragmeter.errors import InputError
from ragmeter.nuggets.files import nugget_lines
from ragmeter.nuggets.model import Nugget, NuggetSet, QueryNuggets

OPS = ("add", "reword", "merge", "delete", "regrade")


def body(nuggets: NuggetSet) -> str:
    """The set as ragmeter JSONL (what the store keeps of each version)."""
    return "".join(line + "\n" for line in nugget_lines(nuggets, "ragmeter"))


def from_body(text: str, *, source: str) -> NuggetSet:
    queries: dict[str, QueryNuggets] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                q = QueryNuggets.model_validate_json(line)
            except ValidationError as exc:
                raise InputError(
                    f"a stored nugget set is unreadable: {exc.errors()[0]['msg']}", source=source, line=number
                ) from None
            queries[q.query_id] = q
    return NuggetSet(queries, source=source)


def _free_id(q: QueryNuggets) -> str:
    taken = {n.id for n in q.nuggets}
    return next(f"p{i}" for i in range(1, len(taken) + 2) if f"p{i}" not in taken)


def _find(q: QueryNuggets, nugget_id: str) -> Nugget:
    for n in q.nuggets:
        if n.id == nugget_id:
            return n
    raise InputError(f"query {q.query_id!r} has no nugget {nugget_id!r}", source="nugget")


def _nugget(nugget_id: str, text: str, importance: str) -> Nugget:
    try:
        return Nugget(id=nugget_id, text=text, importance=importance)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError(str(err["msg"]).removeprefix("Value error, "), source=str(err["loc"][0])) from None


def apply(
    nuggets: NuggetSet,
    query_id: str,
    op: str,
    *,
    nugget_id: str = "",
    text: str = "",
    importance: str = "",
    merge: Sequence[str] = (),
) -> tuple[NuggetSet, dict[str, Any]]:
    """(the set after one edit of query `query_id`'s nuggets, the change's record); an InputError names
    what is wrong with an edit that cannot be made (nothing changes)."""
    q = nuggets.get(query_id)
    if q is None:
        raise InputError(f"the nugget set has no query {query_id!r}", source="query")
    if op not in OPS:
        raise InputError(f"unknown edit {op!r}; known: {', '.join(OPS)}", source="op")
    items = list(q.nuggets)
    change: dict[str, Any] = {"op": op, "query_id": query_id}
    if op == "add":
        new = _nugget(_free_id(q), text, importance or "okay")
        items.append(new)
        change.update(nugget_id=new.id, text=new.text, importance=new.importance)
    elif op == "reword":
        old = _find(q, nugget_id)
        new = _nugget(old.id, text, old.importance)
        items = [new if n.id == old.id else n for n in items]
        change.update(nugget_id=old.id, before=old.text, text=new.text)
    elif op == "regrade":
        old = _find(q, nugget_id)
        new = _nugget(old.id, old.text, importance)
        items = [new if n.id == old.id else n for n in items]
        change.update(nugget_id=old.id, before=old.importance, importance=new.importance)
    elif op == "delete":
        old = _find(q, nugget_id)
        items = [n for n in items if n.id != old.id]
        change.update(nugget_id=old.id, before=old.text)
    else:
        into = _find(q, nugget_id)
        others = [_find(q, m) for m in merge if m != into.id]
        if not others:
            raise InputError("a merge names at least one other nugget to merge in", source="merge")
        vital = any(n.importance == "vital" for n in (into, *others))
        new = _nugget(into.id, text or into.text, "vital" if vital else "okay")
        gone = {n.id for n in others}
        items = [new if n.id == into.id else n for n in items if n.id not in gone]
        change.update(nugget_id=into.id, merged=sorted(gone), text=new.text, importance=new.importance)
    edited = q.model_copy(update={"nuggets": items})
    queries = {k: (edited if k == query_id else v) for k, v in nuggets.queries.items()}
    return NuggetSet(queries, source=nuggets.source), change
