"""`--prompt nuggetizer` sends nuggetizer 0.0.5's own messages, character for character: its prompt builders
(Nuggetizer._create_assign_prompt, _create_nugget_prompt, _create_score_prompt) are called on an instance
made without its LLM handlers (no API key, no network)."""

from __future__ import annotations

import pytest

from ragmeter.judges.nugget_prompts import ASSIGN_NUGGETIZER, CREATE_NUGGETIZER, SCORE_NUGGETIZER


def _nuggetizer() -> object:
    module = pytest.importorskip(
        "nuggetizer.models.nuggetizer", reason="pip install --no-deps nuggetizer==0.0.5 (make setup does)"
    )
    from nuggetizer.core.types import NuggetAssignMode

    obj = module.Nuggetizer.__new__(module.Nuggetizer)  # __init__ would build OpenAI clients
    obj.assigner_mode = NuggetAssignMode.SUPPORT_GRADE_3
    obj.creator_max_nuggets = 30
    return obj


def test_assign_prompt_is_nuggetizers() -> None:
    from nuggetizer.core.types import ScoredNugget

    nz = _nuggetizer()
    nuggets = [
        ScoredNugget(text="Paris is the capital", importance="vital"),
        ScoredNugget(text="it's old", importance="okay"),
    ]
    theirs = nz._create_assign_prompt("where is paris?", "Paris is in France.", nuggets)  # type: ignore[attr-defined]
    ours = ASSIGN_NUGGETIZER.messages(
        query="where is paris?", passage="Paris is in France.", nuggets=str([n.text for n in nuggets]), n="2"
    )
    assert ours == theirs


def test_create_and_score_prompts_are_nuggetizers() -> None:
    from nuggetizer.core.types import Document, Nugget, Query, Request

    nz = _nuggetizer()
    docs = [Document(docid=f"d{i}", segment=f"text {i}") for i in range(12)]
    request = Request(query=Query(qid="1", text="why?"), documents=docs)
    current = ["a fact", "another"]
    theirs = nz._create_nugget_prompt(request, 10, 12, current)  # type: ignore[attr-defined]
    context = "\n".join(f"[{i + 1}] {d.segment}" for i, d in enumerate(docs[10:12]))
    ours = CREATE_NUGGETIZER.messages(
        query="why?", context=context, nuggets=str(current), count="2", max_nuggets="30"
    )
    assert ours == theirs
    nuggets = [Nugget(text="a fact"), Nugget(text="another")]
    theirs = nz._create_score_prompt("why?", nuggets)  # type: ignore[attr-defined]
    assert SCORE_NUGGETIZER.messages(query="why?", nuggets=str(["a fact", "another"]), n="2") == theirs
