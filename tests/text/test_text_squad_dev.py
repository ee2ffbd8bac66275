"""EM and F1 on the real SQuAD v1.1 dev set, against a faithful copy of the official script's scoring."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from squad_official import exact_match_score, f1_score, metric_max_over_ground_truths, normalize_answer

from ragmeter.text import exact_match, lexical_metrics, rouge_l, token_f1, tokenize

REPO = Path(__file__).resolve().parents[2]
DATA_DIR = Path(os.environ.get("RAGMETER_DATA_DIR", REPO.parent / "shared" / "datasets"))
SQUAD = DATA_DIR / "squad" / "dev-v1.1.json"


def evaluate(dataset: list[dict[str, Any]], predictions: dict[str, str]) -> dict[str, float]:
    f1 = exact_match = total = 0.0
    for article in dataset:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                total += 1
                if qa["id"] not in predictions:
                    continue
                ground_truths = [x["text"] for x in qa["answers"]]
                prediction = predictions[qa["id"]]
                exact_match += metric_max_over_ground_truths(exact_match_score, prediction, ground_truths)
                f1 += metric_max_over_ground_truths(f1_score, prediction, ground_truths)
    exact_match = 100.0 * exact_match / total
    f1 = 100.0 * f1 / total
    return {"exact_match": exact_match, "f1": f1}


# ------------------------------------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@pytest.fixture(scope="module")
def squad() -> list[dict[str, Any]]:
    if not SQUAD.exists():
        pytest.skip(f"SQuAD v1.1 dev not found at {SQUAD} (set RAGMETER_DATA_DIR)")
    data: list[dict[str, Any]] = json.loads(SQUAD.read_text(encoding="utf-8"))["data"]
    return data


def _qas(dataset: list[dict[str, Any]]) -> list[tuple[str, str, str, list[str]]]:
    """(id, context, question, golds) for every question."""
    return [
        (qa["id"], para["context"], qa["question"], [a["text"] for a in qa["answers"]])
        for article in dataset
        for para in article["paragraphs"]
        for qa in para["qas"]
    ]


def _ours(qas: list[tuple[str, str, str, list[str]]], predictions: dict[str, str]) -> dict[str, float]:
    em = sum(exact_match(predictions[qid], golds).value or 0.0 for qid, _, _, golds in qas)
    f1 = sum(token_f1(predictions[qid], golds).value or 0.0 for qid, _, _, golds in qas)
    return {"exact_match": 100.0 * em / len(qas), "f1": 100.0 * f1 / len(qas)}


def test_gold_answers_as_predictions_score_100(squad: list[dict[str, Any]]) -> None:
    qas = _qas(squad)
    assert len(qas) == 10570
    predictions = {qid: golds[0] for qid, _, _, golds in qas}
    assert _ours(qas, predictions) == {"exact_match": 100.0, "f1": 100.0}
    assert evaluate(squad, predictions) == {"exact_match": 100.0, "f1": 100.0}


def test_first_sentence_predictions_agree_with_official(squad: list[dict[str, Any]]) -> None:
    qas = _qas(squad)
    predictions = {qid: _SENTENCE_END.split(ctx, maxsplit=1)[0] for qid, ctx, _, _ in qas}
    for qid, _, _, golds in qas:
        pred = predictions[qid]
        assert exact_match(pred, golds).value == float(
            metric_max_over_ground_truths(exact_match_score, pred, golds)
        )
        assert token_f1(pred, golds).value == pytest.approx(
            metric_max_over_ground_truths(f1_score, pred, golds), abs=1e-9
        )
    ours, official = _ours(qas, predictions), evaluate(squad, predictions)
    assert ours["exact_match"] == pytest.approx(official["exact_match"], abs=1e-9)
    assert ours["f1"] == pytest.approx(official["f1"], abs=1e-9)
    # a sanity bound, so a broken prediction builder cannot make the comparison vacuous
    assert 0.0 < official["exact_match"] < official["f1"] < 50.0


def test_normalisation_equals_official_on_every_squad_text(squad: list[dict[str, Any]]) -> None:
    texts = {t for _, ctx, q, golds in _qas(squad) for t in (ctx, q, *golds)}
    bad = [t for t in texts if tokenize(t) != normalize_answer(t).split()]
    assert bad == []


def test_rouge_l_equals_rouge_score_on_squad_pairs(squad: list[dict[str, Any]]) -> None:
    from rouge_score import rouge_scorer

    class OurTokens:
        def tokenize(self, text: str) -> list[str]:
            return tokenize(text)

    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=OurTokens())
    qas = _qas(squad)[::20]  # 529 questions, every gold
    n = 0
    for _, ctx, _, golds in qas:
        pred = _SENTENCE_END.split(ctx, maxsplit=1)[0]
        for gold in golds:
            if not tokenize(gold):
                continue
            expected = scorer.score(gold, pred)["rougeL"].fmeasure
            assert rouge_l(pred, gold).value == pytest.approx(expected, abs=1e-12)
            n += 1
    assert n > 1000


def test_lexical_metrics_on_squad_are_valid(squad: list[dict[str, Any]]) -> None:
    for _, ctx, q, golds in _qas(squad)[:300]:
        pred = _SENTENCE_END.split(ctx, maxsplit=1)[0]
        got = lexical_metrics(pred, golds, question=q, contexts=[ctx])
        # the prediction is a sentence of the context: fully supported
        assert got["support_density"].value == 1.0
        assert got["hallucination_rate"].value == 0.0
        for r in got.values():
            assert r.value is None or 0.0 <= r.value <= 1.0


def test_the_one_documented_difference_from_v11(squad: list[dict[str, Any]]) -> None:
    """Three dev golds are "." (empty after normalisation): an empty answer there is EM 1 both ways, F1 1
    with us (SQuAD v2.0 rule, F1 >= EM) and F1 0 with the v1.1 script."""
    golds = {qid: g for qid, _, _, g in _qas(squad)}
    for qid in ("5725bad5271a42140099d0c1", "5730b7ce069b5314008322c4", "57340d124776f419006617bf"):
        assert "." in golds[qid]
        for pred in (".", ""):
            assert exact_match(pred, golds[qid]).value == 1.0
            assert metric_max_over_ground_truths(exact_match_score, pred, golds[qid]) is True
            assert token_f1(pred, golds[qid]).value == 1.0
            assert metric_max_over_ground_truths(f1_score, pred, golds[qid]) == 0
