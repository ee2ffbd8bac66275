"""Drift anchors: the same anchor items judged by a new judge, prompt or model, against an earlier card.

A label is the pass verdict (the judge's value at least the middle of its range); a flip is an anchor whose
verdict differs between the two cards. The share of flips has a Wilson interval (`ragmeter.stats`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.errors import InputError
from ragmeter.stats.intervals import wilson
from ragmeter.validity.judge_validation import judge_range
from ragmeter.validity.models import Drift, JudgeCard


def passes(value: float | None, metric: str) -> bool | None:
    """The pass verdict of a judge value: at least the middle of the judge's range."""
    if value is None:
        return None
    lo, hi = judge_range(metric)
    return value >= (lo + hi) / 2


def check_anchors(metric: str, ids: Sequence[str], print_: str, before: JudgeCard) -> None:
    """Refuse items that are not `before`'s anchors (other ids, or other inputs: the fingerprint)."""
    if metric != before.metric:
        raise InputError(
            f"card {before.card_id or '?'} is for {before.metric!r}, not {metric!r}", source="--against"
        )
    if list(ids) != before.anchors.ids or print_ != before.anchors.fingerprint:
        raise InputError(
            f"the items are not card {before.card_id or '?'}'s anchors (ids or inputs differ: fingerprint "
            f"{print_[:12]} vs {before.anchors.fingerprint[:12]}); give the same dataset and sample",
            source="--against",
        )


def drift(card: JudgeCard, before: JudgeCard) -> Drift:
    """Label flips of `card` against `before` on the same anchors (refused when the anchors differ)."""
    check_anchors(card.metric, card.anchors.ids, card.anchors.fingerprint, before)
    flipped, failed, n = [], 0, 0
    for qid in card.anchors.ids:
        a = passes(before.anchors.values.get(qid), card.metric)
        b = passes(card.anchors.values.get(qid), card.metric)
        if a is None or b is None:
            failed += 1
            continue
        n += 1
        if a != b:
            flipped.append(qid)
    k_before = _kappa(before.agreement)
    k_after = _kappa(card.agreement)
    return Drift(
        against=before.card_id or "?",
        against_judge=before.judge_spec,
        n=n,
        n_failed=failed,
        flips=len(flipped),
        share=len(flipped) / n if n else None,
        ci95=wilson(len(flipped), n) if n else None,
        items=flipped,
        kappa_before=k_before,
        kappa_after=k_after,
        kappa_change=None if k_before is None or k_after is None else k_after - k_before,
    )


def _kappa(agreement: Mapping[str, Any] | None) -> float | None:
    value = (agreement or {}).get("kappa")
    return float(value) if isinstance(value, int | float) else None
