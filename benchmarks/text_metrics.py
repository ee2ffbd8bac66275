"""Time ragmeter's lexical metrics on the SQuAD v1.1 dev set (10,570 questions).

Prediction for each question: the first sentence of its paragraph (a realistic, longish answer); golds:
the reference answers; question: the question; contexts: [the paragraph]. Three timings, in one process:

1. ragmeter.text.lexical_metrics: all seven lexical metrics, with MetricResult records (cold cache);
2. ragmeter.text.exact_match + token_f1 (two calls per question, as a user would make them);
3. the official SQuAD v1.1 script's functions (normalize_answer, f1_score, exact_match_score and
   metric_max_over_ground_truths, re-implemented verbatim below) for the same EM + F1.

Prints the times, the throughput ratio of (2) against (3) and checks that both give the same numbers.
With --semantic N it also times sbert_similarity_batch (one encode call for the run) against one encode
call per answer on the first N questions (needs the semantic extra).

    .venv/bin/python benchmarks/text_metrics.py [--repeat 3] [--semantic 200]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import string
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

# --- official SQuAD v1.1 evaluation functions (evaluate-v1.1.py), unchanged ---------------------------


def normalize_answer(s: str) -> str:
    """Lower text and remove punctuation, articles and extra whitespace."""

    def remove_articles(text: str) -> str:
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text: str) -> str:
        return " ".join(text.split())

    def remove_punc(text: str) -> str:
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text: str) -> str:
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def f1_score(prediction: str, ground_truth: str) -> float:
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1


def exact_match_score(prediction: str, ground_truth: str) -> bool:
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def metric_max_over_ground_truths(metric_fn: Any, prediction: str, ground_truths: list[str]) -> Any:
    scores_for_ground_truths = []
    for ground_truth in ground_truths:
        score = metric_fn(prediction, ground_truth)
        scores_for_ground_truths.append(score)
    return max(scores_for_ground_truths)


# ------------------------------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def load_squad(data_dir: Path) -> list[dict[str, Any]]:
    path = data_dir / "squad" / "dev-v1.1.json"
    if not path.exists():
        sys.exit(f"SQuAD dev not found at {path} (set RAGMETER_DATA_DIR)")
    rows = []
    for article in json.loads(path.read_text(encoding="utf-8"))["data"]:
        for para in article["paragraphs"]:
            context = para["context"]
            first = _SENTENCE_END.split(context, maxsplit=1)[0]
            for qa in para["qas"]:
                rows.append(
                    {
                        "question": qa["question"],
                        "golds": [a["text"] for a in qa["answers"]],
                        "context": context,
                        "prediction": first,
                    }
                )
    return rows


def best_of(repeat: int, fn: Any) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="take the best of N runs (default 3)")
    parser.add_argument(
        "--semantic",
        type=int,
        default=0,
        metavar="N",
        help="also time sbert_similarity_batch on the first N questions against a per-answer encode loop",
    )
    args = parser.parse_args()

    repo = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(repo / "src"))
    from ragmeter.text import exact_match, lexical_metrics, token_f1
    from ragmeter.text.normalize import context_vocabulary

    data_dir = Path(os.environ.get("RAGMETER_DATA_DIR", repo.parent / "shared" / "datasets"))
    rows = load_squad(data_dir)
    n = len(rows)

    def run_all() -> list[dict[str, Any]]:
        context_vocabulary.cache_clear()  # cold: every paragraph is normalised again
        return [
            lexical_metrics(r["prediction"], r["golds"], question=r["question"], contexts=[r["context"]])
            for r in rows
        ]

    def run_ours() -> list[tuple[float | None, float | None]]:
        return [
            (exact_match(r["prediction"], r["golds"]).value, token_f1(r["prediction"], r["golds"]).value)
            for r in rows
        ]

    def run_official() -> list[tuple[float, float]]:
        return [
            (
                float(metric_max_over_ground_truths(exact_match_score, r["prediction"], r["golds"])),
                float(metric_max_over_ground_truths(f1_score, r["prediction"], r["golds"])),
            )
            for r in rows
        ]

    t_all, results = best_of(args.repeat, run_all)
    t_ours, ours = best_of(args.repeat, run_ours)
    t_off, official = best_of(args.repeat, run_official)

    worst = max(abs(a[0] - b[0]) + abs(a[1] - b[1]) for a, b in zip(ours, official, strict=True))
    em = 100.0 * sum(o[0] for o in ours) / n
    f1 = 100.0 * sum(o[1] for o in ours) / n
    n_metrics = sum(len(r) for r in results)

    print(f"SQuAD v1.1 dev: {n} questions, prediction = first sentence of the paragraph")
    print(f"  EM = {em:.4f}  F1 = {f1:.4f}  (max |ours - official| per question = {worst:.1e})")
    print(
        f"  lexical_metrics, all 7 metrics ({n_metrics} values): {t_all:.3f} s  ({n / t_all:,.0f} answers/s)"
    )
    print(f"  ragmeter exact_match + token_f1:                 {t_ours:.3f} s  ({n / t_ours:,.0f} answers/s)")
    print(f"  official SQuAD v1.1 EM + F1 functions:           {t_off:.3f} s  ({n / t_off:,.0f} answers/s)")
    print(f"  EM+F1 throughput ratio ragmeter / official: {t_off / t_ours:.2f}x")
    print(f"  all 7 ragmeter metrics vs official EM+F1 alone: {t_off / t_all:.2f}x")
    verdict = "met" if t_all * 10000 / n < 2 else "MISSED"
    print(f"  target: all lexical metrics for 10k answers < 2 s -> {verdict}")
    if args.semantic:
        semantic_benchmark(rows[: args.semantic])


def semantic_benchmark(rows: list[dict[str, Any]]) -> None:
    """One encode call for the run (ragmeter) vs one encode call per answer and its golds (naive)."""
    import numpy as np

    from ragmeter.semantic import load_embedder, sbert_similarity_batch

    t0 = time.perf_counter()
    model = load_embedder()
    t_load = time.perf_counter() - t0
    preds = [r["prediction"] for r in rows]
    golds = [r["golds"] for r in rows]

    t0 = time.perf_counter()
    ours = sbert_similarity_batch(preds, golds)
    t_ours = time.perf_counter() - t0

    t0 = time.perf_counter()
    naive = []
    for pred, gold_list in zip(preds, golds, strict=True):
        emb = model.encode([pred, *gold_list], normalize_embeddings=True, show_progress_bar=False)
        naive.append(float(np.max(emb[1:] @ emb[0])))
    t_naive = time.perf_counter() - t0

    worst = max(abs((r.details["cosine"]) - v) for r, v in zip(ours, naive, strict=True))
    n = len(rows)
    print(f"SBERT similarity (all-MiniLM-L6-v2, CPU), {n} answers; model load {t_load:.1f} s")
    print(f"  sbert_similarity_batch (one encode call): {t_ours:.2f} s  ({n / t_ours:,.0f} answers/s)")
    print(f"  per-answer encode loop:                   {t_naive:.2f} s  ({n / t_naive:,.0f} answers/s)")
    print(f"  ratio: {t_naive / t_ours:.2f}x  (max |cosine difference| {worst:.1e})")


if __name__ == "__main__":
    main()
