"""Lexical metrics: definitions, edge cases, and agreement with the official SQuAD and rouge-score code."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from squad_official import exact_match_score as official_exact_match_score
from squad_official import f1_score as official_f1_score
from squad_official import normalize_answer as official_normalize_answer

from ragmeter.models import MetricResult
from ragmeter.text import (
    STOP_WORDS,
    answer_relevance,
    exact_match,
    hallucination_rate,
    lcs_length,
    lexical_metrics,
    normalize_answer,
    rouge_l,
    support_coverage,
    support_density,
    token_f1,
    tokenize,
)

# --- normalisation ---------------------------------------------------------------------------------------

TRICKY = [
    "The Eiffel Tower!",
    "  a  AN the   ",
    "the–end of an era",  # en dash is not ASCII punctuation: \b splits there
    "’the’ quote",  # curly quotes are kept by SQuAD, and are word boundaries
    "theatre another anthem",  # articles only as whole words
    "snake_case a_b the_c",  # underscore is punctuation: removed before the article rule
    "Zürich, CAFÉ; 東京 (Tōkyō)",
    "tab\tthe\nnewline\u00a0nbsp the",
    "İstanbul the ΣΊΣΥΦΟΣ",
    "",
    "...!?",
    "50°C the°F a°",
    "3.14 isn't 1,000",
]


@pytest.mark.parametrize("text", TRICKY)
def test_tokenize_equals_official_normalisation(text: str) -> None:
    assert normalize_answer(text) == official_normalize_answer(text)
    assert tokenize(text) == official_normalize_answer(text).split()


_alphabet = st.sampled_from(
    [*"abcehtnAETH .,!'-_\t\n", "–", "’", "é", "°", "ß", "İ", "東", " the ", " a ", " an ", "The", "\u00a0"]
)
_texts = st.lists(_alphabet, max_size=30).map("".join)


@settings(max_examples=400, deadline=None)
@given(_texts)
def test_tokenize_matches_official_on_random_text(text: str) -> None:
    assert tokenize(text) == official_normalize_answer(text).split()


@settings(max_examples=400, deadline=None)
@given(_texts, st.lists(_texts, min_size=1, max_size=3))
def test_em_and_f1_match_official(pred: str, golds: list[str]) -> None:
    em = exact_match(pred, golds).value
    f1 = token_f1(pred, golds).value
    assert em == float(max(official_exact_match_score(pred, g) for g in golds))
    official_f1 = max(official_f1_score(pred, g) for g in golds)
    if tokenize(pred) or not any(not tokenize(g) for g in golds):
        # Only the both-empty case differs (we give 1, v1.1 gives 0): see the convention test below.
        assert f1 == official_f1
    assert f1 is not None
    assert em <= f1


# --- exact match and token F1 ------------------------------------------------------------------------------


def test_exact_match_and_f1_basic() -> None:
    assert exact_match("The Eiffel Tower.", "eiffel tower").value == 1.0
    assert exact_match("Eiffel", ["tower", "EIFFEL!"]).value == 1.0
    assert exact_match("Eiffel", ["tower", "EIFFEL!"]).details["matched_gold"] == 1
    assert exact_match("Paris, France", "Paris").value == 0.0
    f1 = token_f1("Paris, France", ["Paris", "London"])
    # precision 1/2, recall 1/1 -> 2/3
    assert f1.value == pytest.approx(2 / 3)
    assert f1.details == {"precision": 0.5, "recall": 1.0, "best_gold": 0}
    # max over golds, and duplicates count as a bag (min of counts)
    assert token_f1("the cat cat", ["dog", "cat cat cat"]).value == pytest.approx(
        2 * 1.0 * (2 / 3) / (1 + 2 / 3)
    )


def test_golds_as_string_or_list_agree() -> None:
    for fn in (exact_match, token_f1, rouge_l):
        assert (
            fn("Denver Broncos", "the Denver Broncos").value
            == fn("Denver Broncos", ["the Denver Broncos"]).value
        )


def test_edge_cases_empty_and_degenerate() -> None:
    # no gold answer at all: undefined, with a reason
    for fn in (exact_match, token_f1, rouge_l):
        r = fn("Paris", [])
        assert r.value is None and r.error == "no gold answer"
        assert fn("Paris", None).error == "no gold answer"
        r = fn(None, ["Paris"])
        assert r.value is None and r.error == "no answer to score"
    # empty answer against a real gold: wrong, 0
    for fn in (exact_match, token_f1, rouge_l):
        assert fn("", "Paris").value == 0.0
        assert fn("   ", "Paris").value == 0.0
    # answers that normalise to nothing (punctuation, articles) against an empty gold: a match (SQuAD v2 rule)
    for pred in ("", "...", "the", "A, an; THE!"):
        for fn in (exact_match, token_f1, rouge_l):
            assert fn(pred, "").value == 1.0
            assert fn(pred, "the").value == 1.0
            assert fn(pred, "Paris").value == 0.0
        # the official v1.1 script gives F1 = 0 but EM = 1 here; we keep F1 >= EM
        assert official_f1_score(pred, "the") == 0
        assert official_exact_match_score(pred, "the")
    # a real answer against an empty gold: 0
    assert token_f1("Paris", "").value == 0.0


def test_unicode() -> None:
    assert exact_match("Zürich.", "zürich").value == 1.0
    assert exact_match("東京", "東京").value == 1.0
    assert token_f1("東京 Tokyo", "東京").value == pytest.approx(2 / 3)
    # non-ASCII punctuation is kept (as SQuAD does), so a curly-quoted word is another token
    assert exact_match("“Paris”", "Paris").value == 0.0
    assert exact_match("“Paris”", "“Paris”").value == 1.0


# --- ROUGE-L ---------------------------------------------------------------------------------------------


def _lcs_dp(a: list[str], b: list[str]) -> int:
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from("abcde"), max_size=80), st.lists(st.sampled_from("abcde"), max_size=80))
def test_lcs_bit_parallel_equals_dynamic_programming(a: list[str], b: list[str]) -> None:
    assert lcs_length(a, b) == _lcs_dp(a, b) == lcs_length(b, a)


_words = st.lists(st.sampled_from(["x", "y", "z", "w", "the", "x."]), max_size=25).map(" ".join)


@settings(max_examples=400, deadline=None)
@given(_words, st.lists(_words, min_size=1, max_size=4))
def test_rouge_l_is_max_over_golds_of_2lcs_over_lengths(pred: str, golds: list[str]) -> None:
    p = tokenize(pred)
    expected = []
    for gold in golds:
        g = tokenize(gold)
        expected.append(1.0 if not p and not g else 2 * _lcs_dp(p, g) / (len(p) + len(g)) if p and g else 0.0)
    r = rouge_l(pred, golds)
    assert r.value == pytest.approx(max(expected), abs=1e-12)
    assert r.details["best_gold"] == expected.index(max(expected))


def test_rouge_l_definition() -> None:
    # pred tokens: police killed gunman ; gold: police kill gunman -> LCS 2, 2*2/(3+3)
    r = rouge_l("the police killed the gunman", "the police kill the gunman")
    assert r.value == pytest.approx(4 / 6)
    assert r.details["lcs"] == 2
    # order matters for ROUGE-L but not for token F1
    assert rouge_l("gunman police", "police gunman").value == pytest.approx(2 * 1 / 4)
    assert token_f1("gunman police", "police gunman").value == 1.0
    # max over golds
    assert rouge_l("a b c", ["x", "a b c"]).value == 1.0


class _OurTokenizer:
    """Hands rouge-score exactly our normalised tokens, so only the scoring is compared."""

    def tokenize(self, text: str) -> list[str]:
        return tokenize(text)


PAIRS = [
    ("the police killed the gunman", "the police kill the gunman"),
    ("Denver Broncos defeated the Carolina Panthers", "Denver Broncos"),
    ("Super Bowl 50 was an American football game", "American football game to determine the champion"),
    ("cat sat on mat mat cat", "the cat was sat on the mat"),
    ("x y z", "a b c"),
    ("one", "one two three four five six"),
]


@pytest.mark.parametrize(("pred", "gold"), PAIRS)
def test_rouge_l_equals_rouge_score_fmeasure(pred: str, gold: str) -> None:
    from rouge_score import rouge_scorer

    ours = rouge_l(pred, gold)
    theirs = rouge_scorer.RougeScorer(["rougeL"], tokenizer=_OurTokenizer()).score(gold, pred)["rougeL"]
    m, n, lcs = len(tokenize(pred)), len(tokenize(gold)), ours.details["lcs"]
    # rouge-score: P = LCS/m, R = LCS/n, F = 2PR/(P+R) (beta = 1) ...
    assert theirs.precision == pytest.approx(lcs / m, abs=1e-12)
    assert theirs.recall == pytest.approx(lcs / n, abs=1e-12)
    # ... which is algebraically 2*LCS/(m+n), our definition: equal up to float rounding
    assert ours.value == pytest.approx(theirs.fmeasure, abs=1e-12)
    assert ours.details["precision"] == pytest.approx(theirs.precision, abs=1e-12)
    assert ours.details["recall"] == pytest.approx(theirs.recall, abs=1e-12)


def test_rouge_l_with_rouge_scores_own_tokenizer() -> None:
    """With rouge-score's default tokenizer the two agree when the texts tokenise the same way
    (lower-case ASCII words, no articles) and differ where SQuAD normalisation differs."""
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"])
    same = ("police killed gunman yesterday", "police kill gunman")
    assert rouge_l(*same).value == pytest.approx(scorer.score(same[1], same[0])["rougeL"].fmeasure, abs=1e-12)
    # rouge-score keeps articles and drops non-ASCII letters; SQuAD normalisation does the opposite
    assert rouge_l("the cat", "cat").value == 1.0
    assert scorer.score("cat", "the cat")["rougeL"].fmeasure == pytest.approx(2 / 3)
    assert rouge_l("東京", "東京").value == 1.0
    assert scorer.score("東京", "東京")["rougeL"].fmeasure == 0.0


# --- answer relevance and support -------------------------------------------------------------------------


def test_answer_relevance() -> None:
    r = answer_relevance("The Eiffel Tower is in Paris", "Where is the Eiffel Tower?")
    # answer: eiffel tower is in paris (5) ; question: where is eiffel tower (4) ; common 3
    assert r.value == pytest.approx(2 * (3 / 5) * (3 / 4) / (3 / 5 + 3 / 4))
    assert answer_relevance("", "Where is it?").value == 0.0
    r = answer_relevance("Paris", "?!")
    assert r.value is None and r.error is not None and "question" in r.error


CONTEXTS = ["The Eiffel Tower is a wrought-iron tower in Paris.", "It was built by Gustave Eiffel's company."]


def test_support_metrics_hand_computed() -> None:
    answer = "The tower is in Paris and was built in 1889 by Eiffel."
    # tokens: tower is in paris and was built in 1889 by eiffel -> 11 tokens
    # supported: tower is in paris was built in by eiffel (9) ; unsupported: and, 1889
    assert support_density(answer, CONTEXTS).value == pytest.approx(9 / 11)
    assert hallucination_rate(answer, CONTEXTS).value == pytest.approx(2 / 11)
    # content words (stop words removed): tower paris built 1889 eiffel -> 4 of 5 supported
    cov = support_coverage(answer, CONTEXTS)
    assert cov.value == pytest.approx(4 / 5)
    assert cov.details == {"supported": 4, "content_words": 5, "n_contexts": 2}
    # one context alone supports less
    assert support_coverage(answer, CONTEXTS[:1]).value == pytest.approx(3 / 5)
    assert {"tower", "paris", "built", "eiffel"}.isdisjoint(STOP_WORDS)


def test_support_edge_cases() -> None:
    # no contexts given: undefined; an empty list of contexts: nothing is supported
    for fn in (support_coverage, support_density, hallucination_rate):
        r = fn("Paris", None)
        assert r.value is None and r.error is not None
        r = fn("", CONTEXTS)
        assert r.value is None and r.error is not None and "no tokens" in r.error
        r = fn("...the...", CONTEXTS)
        assert r.value is None
    assert support_coverage("Paris", []).value == 0.0
    assert support_density("Paris", []).value == 0.0
    assert hallucination_rate("Paris", []).value == 1.0
    # an answer of stop words only: coverage undefined, density still defined
    r = support_coverage("it is", CONTEXTS)
    assert r.value is None and r.error is not None and "content words" in r.error
    assert support_density("it is", CONTEXTS).value == 1.0
    assert hallucination_rate("it was not", CONTEXTS).value == pytest.approx(1 / 3)
    # unicode
    assert support_density("Zürich 東京", ["zürich and 東京"]).value == 1.0
    # repeated tokens count in density, once in coverage
    assert support_density("Paris Paris Rome", ["Paris"]).value == pytest.approx(2 / 3)
    assert support_coverage("Paris Paris Rome", ["Paris"]).value == pytest.approx(1 / 2)


# --- lexical_metrics: the runner's entry point ---------------------------------------------------------

ALL = {
    "exact_match",
    "token_f1",
    "rouge_l",
    "answer_relevance",
    "support_coverage",
    "support_density",
    "hallucination_rate",
}


def test_lexical_metrics_selects_what_applies() -> None:
    assert set(lexical_metrics("Paris", ["Paris"])) == {"exact_match", "token_f1", "rouge_l"}
    assert set(lexical_metrics("Paris", [], question="Where?")) == {"answer_relevance"}
    assert set(lexical_metrics("Paris", [], contexts=[])) == {
        "support_coverage",
        "support_density",
        "hallucination_rate",
    }
    assert set(lexical_metrics("Paris", ["Paris"], question="q", contexts=CONTEXTS)) == ALL
    none = lexical_metrics(None, ["Paris"], question="q", contexts=CONTEXTS)
    assert set(none) == ALL
    assert all(r.value is None and r.error == "no answer to score" for r in none.values())


def test_lexical_metrics_equal_the_single_functions() -> None:
    pred, golds, q = (
        "The tower is in Paris, built 1889.",
        ["Paris", "in Paris, France"],
        "Where is the tower?",
    )
    got = lexical_metrics(pred, golds, question=q, contexts=CONTEXTS)
    singles = {
        "exact_match": exact_match(pred, golds),
        "token_f1": token_f1(pred, golds),
        "rouge_l": rouge_l(pred, golds),
        "answer_relevance": answer_relevance(pred, q),
        "support_coverage": support_coverage(pred, CONTEXTS),
        "support_density": support_density(pred, CONTEXTS),
        "hallucination_rate": hallucination_rate(pred, CONTEXTS),
    }
    assert got == singles
    assert all(isinstance(r, MetricResult) and r.name == name for name, r in got.items())


@settings(max_examples=300, deadline=None)
@given(_texts, st.lists(_texts, max_size=3), _texts, st.none() | st.lists(_texts, max_size=3))
def test_values_are_in_unit_interval_or_null_with_reason(
    pred: str, golds: list[str], question: str, contexts: list[str] | None
) -> None:
    for r in lexical_metrics(pred, golds, question=question, contexts=contexts).values():
        if r.value is None:
            assert r.error
        else:
            assert not math.isnan(r.value)
            assert 0.0 <= r.value <= 1.0


def test_import_is_light() -> None:
    code = (
        "import sys, ragmeter.text; print(any(m in sys.modules for m in ('numpy', 'torch', 'rouge_score')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
