"""The judge cards beside a run's judged metrics (the run page, a bundle's run page): each judged metric's card
as the store keeps it, found by `ragmeter.validity.storage.run_cards` (the lookup `runs show` and the report
use, so the three agree), or a plain "no card". A judge-card run's own page shows its card whole.

Plain dicts of text for the templates; every text in them (judge specs, item ids, notes) is escaped there."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ragmeter import metrics as registry
from ragmeter.report.selection import display_order

if TYPE_CHECKING:
    from ragmeter.models import EvalRunResult
    from ragmeter.validity.models import JudgeCard

# The agreement numbers a card carries from `judges validate`, in the order shown, with the method.
AGREEMENT = (
    ("kappa", "Cohen's kappa"),
    ("weighted_kappa", "kappa, quadratic weights"),
    ("accuracy", "accuracy"),
    ("spearman", "Spearman"),
    ("kendall", "Kendall tau"),
)


def _num(v: Any, signed: bool = False) -> str:
    if not isinstance(v, int | float) or isinstance(v, bool):
        return "–"
    return f"{v:+.3f}" if signed else f"{v:.3f}"


def _ci(ci: Any, signed: bool = False) -> str:
    if not isinstance(ci, list | tuple) or len(ci) != 2 or not all(isinstance(x, int | float) for x in ci):
        return "–"
    return f"[{_num(ci[0], signed)}, {_num(ci[1], signed)}]"


def judged_metrics(run: EvalRunResult) -> list[str]:
    """The run's metrics that a judge gave (the registry's judge family), in display order."""
    return [n for n in display_order(list(run.aggregate)) if registry.family_of(n) == "judge"]


def card_view(card: JudgeCard) -> dict[str, Any]:
    """One card as the page lays it out: agreement, self-consistency, the bias battery row by row (a
    flagged perturbation marked in words, not by colour alone), self-judging, drift, notes."""
    a: Mapping[str, Any] = card.agreement or {}
    agreement = [
        {"name": label, "value": _num(a.get(key)), "ci": _ci(a.get(f"{key}_ci"))}
        for key, label in AGREEMENT
        if isinstance(a.get(key), int | float)
    ]
    c = card.consistency
    consistency = None
    if c is not None:
        consistency = {
            "repeats": c.repeats,
            "n": c.n,
            "flips": c.flips,
            "flip_share": _num(c.flip_share),
            "flip_ci": _ci(c.flip_share_ci95),
            "flip_method": c.ci_method,
            "alpha": _num(c.alpha),
            "alpha_ci": _ci(c.alpha_ci95),
        }
    bias = [
        {
            "perturbation": s.perturbation,
            "baseline": s.baseline,
            "n": s.n,
            "n_failed": s.n_failed,
            "counts": f"+{s.favour} −{s.against} ={s.ties}",
            "shift": _num(s.net_shift, signed=True),
            "ci": _ci(s.ci95, signed=True),
            "method": s.ci_method,
            "p": f"{s.p_value:.3g}",
            "flagged": s.flagged,
            "flag": f"FLAGGED ({s.direction})" if s.flagged else "inside tolerance",
        }
        for s in card.bias
    ]
    d = card.drift
    drift = None
    if d is not None:
        drift = {
            "against": d.against,
            "against_judge": d.against_judge,
            "share": _num(d.share),
            "ci": _ci(d.ci95),
            "method": d.ci_method,
            "flips": d.flips,
            "n": d.n,
            "n_failed": d.n_failed,
            "flipped": list(d.items),
            "kappa": ""
            if d.kappa_change is None
            else f"{_num(d.kappa_before)} → {_num(d.kappa_after)} ({_num(d.kappa_change, signed=True)})",
        }
    sj = card.self_judging
    return {
        "card_id": card.card_id or "(not stored)",
        "judge_spec": card.judge_spec,
        "metric": card.metric,
        "prompt_version": card.prompt_version or "–",
        "dataset": card.dataset,
        "n_items": card.n_items,
        "tolerance": f"{card.tolerance:g}",
        "battery_version": card.battery_version,
        "created_at": card.created_at,
        "agreement": agreement,
        "agreement_n": a.get("n", "–") if agreement else "",
        "consistency": consistency,
        "bias": bias,
        "self_judging": {
            "flagged": bool(sj.get("flagged")),
            "generator": "" if sj.get("generator") is None else str(sj.get("generator")),
        },
        "drift": drift,
        "flagged": card.flagged,
        "notes": list(card.notes),
    }


def _summary(card: JudgeCard) -> str:
    """The card in one cell of the metrics table: its flags, and drift when it has an anchor."""
    flagged = card.flagged
    text = "flagged: " + ", ".join(flagged) if flagged else "nothing flagged"
    if card.drift is not None and card.drift.share is not None:
        text += f"; drift {card.drift.share:.3f}"
    return text


def card_panels(store: Any, run: EvalRunResult) -> list[dict[str, Any]]:
    """One panel per judged metric of the run: its judge's newest stored card, or why there is none. A
    judge-card run gets one panel: the card it holds."""
    from ragmeter.llm.spec import public_spec
    from ragmeter.validity.storage import own_card, run_cards

    own = own_card(store, run)
    if own is not None:
        return [{"metric": own.metric, "card": card_view(own), "summary": _summary(own), "missing": ""}]
    cards = run_cards(store, run)
    judge = run.config.judge_model
    panels: list[dict[str, Any]] = []
    for metric in judged_metrics(run):
        card = cards.get(metric)
        if card is not None:
            panels.append(
                {"metric": metric, "card": card_view(card), "summary": _summary(card), "missing": ""}
            )
            continue
        why = (
            f"no card: no judge card of {public_spec(judge)} for {metric} is stored "
            f"(`ragmeter judges card --judge ... --metric {metric}` makes one)"
            if judge
            else "no card: the run names no judge"
        )
        panels.append({"metric": metric, "card": None, "summary": "no card", "missing": why})
    return panels
