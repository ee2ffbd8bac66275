"""The free abstention detector: a declared, versioned phrase list."""

from __future__ import annotations

import hashlib

import pytest

import ragmeter.metrics as rm
from ragmeter.metrics.abstention import PHRASES_NUMBER, PHRASES_VERSION, REFUSAL_PHRASES
from ragmeter.text.abstention import refusal_phrase


@pytest.mark.parametrize(
    ("answer", "phrase"),
    [
        ("I don’t know.", "i don't know"),  # a curly apostrophe is read as a straight one
        ("The   sources DO NOT MENTION the year.", "do not mention"),
        ("There is not enough information to say.", "not enough information"),
        ("", ""),  # an empty answer declines by saying nothing
        ("   ", ""),
        ("Paris is the capital of France.", None),
        ("Known: the answer is 42.", None),
    ],
)
def test_refusal_phrases(answer: str, phrase: str | None) -> None:
    assert refusal_phrase(answer) == phrase


def test_the_list_is_declared_with_its_version() -> None:
    digest = hashlib.sha256("\n".join(REFUSAL_PHRASES).encode()).hexdigest()[:8]
    assert f"refusal-phrases/v{PHRASES_NUMBER}+{digest}" == PHRASES_VERSION
    spec = rm.get("abstained_lexical")
    assert spec.version == PHRASES_VERSION and not spec.default
    assert all(p == p.lower() and "’" not in p for p in REFUSAL_PHRASES)


def test_no_new_name_starts_with_hallucination() -> None:
    from ragmeter.metrics.abstention import ABSTENTION_METRICS

    names = [
        *ABSTENTION_METRICS,
        "abstained_lexical",
        "abstained",
        "context_sufficiency",
        "closed_book_correct",
    ]
    assert all(rm.get(n).interval == "wilson" for n in names)
    assert not [n for n in names if n.startswith("hallucination")]
