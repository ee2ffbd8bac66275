"""Lexical generation metrics: exact match, token F1, ROUGE-L, answer relevance, support, hallucination.

Every text is normalised the SQuAD v1.1 way (`ragmeter.text.normalize.tokenize`). With several gold
answers a gold-based metric takes the max over them (the SQuAD / Natural Questions convention).
Values are floats in [0, 1]; an undefined value is None with `error` saying why (never NaN).

Conventions where the official script is silent or degenerate (see docs/generation_metrics.md):
- a prediction and a gold that both normalise to nothing (e.g. "" vs "the") match: EM = F1 = ROUGE-L = 1
  (the SQuAD v2.0 rule; v1.1's f1_score gives 0 there, which would make F1 < EM). Only one of them empty: 0;
- an empty list of golds, a question with no tokens, or no contexts at all (None) make the metric None;
- an empty *list* of contexts is "retrieved nothing": nothing is supported (coverage 0, hallucination 1).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from ragmeter.models import MetricResult
from ragmeter.text.normalize import STOP_WORDS, context_vocabulary, tokenize

__all__ = [
    "METRIC_VERSION",
    "answer_relevance",
    "exact_match",
    "hallucination_rate",
    "lcs_length",
    "lexical_metrics",
    "rouge_l",
    "support_coverage",
    "support_density",
    "token_f1",
]

# Bumped whenever a definition (normalisation, convention) changes; stored with every result.
METRIC_VERSION = "1"

_NO_ANSWER = "no answer to score"
_NO_GOLD = "no gold answer"

Golds = str | Sequence[str] | None


def _ok(name: str, value: float, details: Mapping[str, object] | None = None) -> MetricResult:
    return MetricResult(
        name=name, value=value, details=dict(details) if details else {}, version=METRIC_VERSION
    )


def _undefined(name: str, why: str) -> MetricResult:
    return MetricResult(name=name, value=None, error=why, version=METRIC_VERSION)


def _gold_list(golds: Golds) -> list[str]:
    if golds is None:
        return []
    return [golds] if isinstance(golds, str) else list(golds)


# --- kernels on token lists -------------------------------------------------------------------------


def _bitmasks(seq: Sequence[str]) -> dict[str, int]:
    masks: dict[str, int] = {}
    for i, tok in enumerate(seq):
        masks[tok] = masks.get(tok, 0) | (1 << i)
    return masks


def _lcs_with_masks(masks: dict[str, int], m: int, b: Sequence[str]) -> int:
    # Allison-Dix / Hyyro bit-parallel LCS: the zero bits of v (low m bits) count the LCS.
    full = (1 << m) - 1
    v = full
    for tok in b:
        bits = masks.get(tok)
        if bits:
            u = v & bits
            v = (v + u) | (v - u)
    return m - (v & full).bit_count()


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token sequences.

    Bit-parallel: one big-int step per token of `b` after one pass over `a`, instead of an O(m*n)
    table, which in pure Python is 10-50x faster on sentence-length inputs.
    """
    if not a or not b:
        return 0
    return _lcs_with_masks(_bitmasks(a), len(a), b)


def _common_count(pred_counts: Counter[str], gold: list[str]) -> int:
    """Size of the multiset intersection of the two token bags."""
    gold_set = set(gold)
    if len(gold_set) == len(gold):  # usual for answers: no repeated token, no Counter needed
        return sum(1 for tok in gold if tok in pred_counts)
    num_same = 0
    for tok, c in Counter(gold).items():
        other = pred_counts.get(tok)
        if other:
            num_same += other if other < c else c
    return num_same


def _f1_tokens(pred: list[str], pred_counts: Counter[str], gold: list[str]) -> tuple[float, float, float]:
    """(F1, precision, recall) of two token bags, computed exactly as SQuAD v1.1's f1_score."""
    if not pred or not gold:
        v = 1.0 if not pred and not gold else 0.0
        return v, v, v
    num_same = _common_count(pred_counts, gold)
    if num_same == 0:
        return 0.0, 0.0, 0.0
    precision = 1.0 * num_same / len(pred)
    recall = 1.0 * num_same / len(gold)
    return (2 * precision * recall) / (precision + recall), precision, recall


def _em_result(pred: list[str], golds: list[list[str]]) -> MetricResult:
    for i, gold in enumerate(golds):
        if pred == gold:
            return _ok("exact_match", 1.0, {"matched_gold": i})
    return _ok("exact_match", 0.0)


def _f1_result(pred: list[str], pred_counts: Counter[str], golds: list[list[str]]) -> MetricResult:
    best = (-1.0, 0.0, 0.0)
    best_i = 0
    for i, gold in enumerate(golds):
        score = _f1_tokens(pred, pred_counts, gold)
        if score[0] > best[0]:
            best, best_i = score, i
    f1, p, r = best
    return _ok("token_f1", f1, {"precision": p, "recall": r, "best_gold": best_i})


def _rouge_result(pred: list[str], golds: list[list[str]]) -> MetricResult:
    best = (-1.0, 0.0, 0.0, 0)
    best_i = 0
    m = len(pred)
    # Bitmasks of the prediction, built once for all golds and only for tokens some gold has
    # (often none: then every LCS is 0 without a loop).
    gold_vocab = {tok for gold in golds for tok in gold}
    masks: dict[str, int] = {}
    for pos, tok in enumerate(pred):
        if tok in gold_vocab:
            masks[tok] = masks.get(tok, 0) | (1 << pos)
    for i, gold in enumerate(golds):
        n = len(gold)
        if m == 0 or n == 0:
            v = 1.0 if m == n else 0.0
            score = (v, v, v, 0)
        else:
            lcs = _lcs_with_masks(masks, m, gold) if masks else 0
            score = (2.0 * lcs / (m + n), lcs / m, lcs / n, lcs)
        if score[0] > best[0]:
            best, best_i = score, i
    f, p, r, lcs = best
    return _ok("rouge_l", f, {"precision": p, "recall": r, "lcs": lcs, "best_gold": best_i})


def _relevance_result(pred: list[str], pred_counts: Counter[str], question: list[str]) -> MetricResult:
    if not question:
        return _undefined("answer_relevance", "question has no tokens after normalisation")
    f1, p, r = _f1_tokens(pred, pred_counts, question)
    return _ok("answer_relevance", f1, {"precision": p, "recall": r})


def _support_results(pred: list[str], contexts: Sequence[str]) -> dict[str, MetricResult]:
    names = ("support_coverage", "support_density", "hallucination_rate")
    if not pred:
        why = "answer has no tokens after normalisation"
        return {name: _undefined(name, why) for name in names}
    vocabs = [context_vocabulary(c) for c in contexts]
    if len(vocabs) == 1:
        vocab = vocabs[0]
        found = [tok in vocab for tok in pred]
    else:
        found = [any(tok in v for v in vocabs) for tok in pred]
    n_found = sum(found)
    density = n_found / len(pred)
    n_ctx = len(vocabs)
    content = {tok for tok in pred if tok not in STOP_WORDS}
    out: dict[str, MetricResult] = {}
    if content:
        covered = len({tok for tok, hit in zip(pred, found, strict=True) if hit and tok in content})
        out["support_coverage"] = _ok(
            "support_coverage",
            covered / len(content),
            {"supported": covered, "content_words": len(content), "n_contexts": n_ctx},
        )
    else:
        out["support_coverage"] = _undefined(
            "support_coverage", "answer has no content words (only stop words)"
        )
    details = {"supported": n_found, "tokens": len(pred), "n_contexts": n_ctx}
    out["support_density"] = _ok("support_density", density, details)
    out["hallucination_rate"] = _ok("hallucination_rate", 1.0 - density, dict(details))
    return out


# --- public, one metric at a time ---------------------------------------------------------------------


def _against_golds(
    name: str,
    prediction: str | None,
    golds: Golds,
    score: Callable[[list[str], list[list[str]]], MetricResult],
) -> MetricResult:
    """`score` of the normalised prediction against the normalised golds; undefined without either."""
    gl = _gold_list(golds)
    if prediction is None:
        return _undefined(name, _NO_ANSWER)
    if not gl:
        return _undefined(name, _NO_GOLD)
    return score(tokenize(prediction), [tokenize(g) for g in gl])


def _f1_of(pred: list[str], golds: list[list[str]]) -> MetricResult:
    return _f1_result(pred, Counter(pred), golds)


def exact_match(prediction: str | None, golds: Golds) -> MetricResult:
    """1.0 when the normalised prediction equals a normalised gold answer, else 0.0 (SQuAD EM)."""
    return _against_golds("exact_match", prediction, golds, _em_result)


def token_f1(prediction: str | None, golds: Golds) -> MetricResult:
    """Token-bag F1 between the normalised prediction and the best gold answer (SQuAD F1)."""
    return _against_golds("token_f1", prediction, golds, _f1_of)


def rouge_l(prediction: str | None, golds: Golds) -> MetricResult:
    """LCS-based F1, 2 * LCS / (len(prediction) + len(gold)) over normalised tokens; max over golds."""
    return _against_golds("rouge_l", prediction, golds, _rouge_result)


def answer_relevance(answer: str | None, question: str) -> MetricResult:
    """Token F1 between the answer and the question (a cheap proxy: does the answer talk about it?)."""
    if answer is None:
        return _undefined("answer_relevance", _NO_ANSWER)
    pred = tokenize(answer)
    return _relevance_result(pred, Counter(pred), tokenize(question))


def _support(name: str, answer: str | None, contexts: Sequence[str] | None) -> MetricResult:
    if answer is None:
        return _undefined(name, _NO_ANSWER)
    if contexts is None:
        return _undefined(name, "no retrieved contexts given")
    return _support_results(tokenize(answer), contexts)[name]


def support_coverage(answer: str | None, contexts: Sequence[str] | None) -> MetricResult:
    """Fraction of the answer's distinct content words (stop words removed) found in the contexts."""
    return _support("support_coverage", answer, contexts)


def support_density(answer: str | None, contexts: Sequence[str] | None) -> MetricResult:
    """Fraction of all the answer's tokens (with repeats) found in the contexts."""
    return _support("support_density", answer, contexts)


def hallucination_rate(answer: str | None, contexts: Sequence[str] | None) -> MetricResult:
    """1 - support_density: the share of the answer's tokens that no context contains."""
    return _support("hallucination_rate", answer, contexts)


# --- public, everything that applies, each text normalised once ---------------------------------------


def lexical_metrics(
    prediction: str | None,
    golds: Golds,
    *,
    question: str | None = None,
    contexts: Sequence[str] | None = None,
) -> dict[str, MetricResult]:
    """All lexical metrics that apply to one answer, keyed by metric name.

    Gold-based metrics (exact_match, token_f1, rouge_l) when `golds` is non-empty; answer_relevance when
    `question` is given; support_coverage, support_density and hallucination_rate when `contexts` is not
    None. A missing answer (None) gives each applicable metric value None with the reason.
    """
    gl = _gold_list(golds)
    names: list[str] = []
    if gl:
        names += ["exact_match", "token_f1", "rouge_l"]
    if question is not None:
        names.append("answer_relevance")
    if contexts is not None:
        names += ["support_coverage", "support_density", "hallucination_rate"]
    if prediction is None:
        return {name: _undefined(name, _NO_ANSWER) for name in names}

    pred = tokenize(prediction)
    pred_counts = Counter(pred)
    out: dict[str, MetricResult] = {}
    if gl:
        gold_tokens = [tokenize(g) for g in gl]
        out["exact_match"] = _em_result(pred, gold_tokens)
        out["token_f1"] = _f1_result(pred, pred_counts, gold_tokens)
        out["rouge_l"] = _rouge_result(pred, gold_tokens)
    if question is not None:
        out["answer_relevance"] = _relevance_result(pred, pred_counts, tokenize(question))
    if contexts is not None:
        out.update(_support_results(pred, contexts))
    return out
