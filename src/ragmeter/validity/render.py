"""A judge card as text lines (console, `runs show`) and as markdown (docs, reports)."""

from __future__ import annotations

from ragmeter.validity.models import JudgeCard


def _f(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def _ci(ci: tuple[float, float] | None) -> str:
    return "-" if ci is None else f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"


def card_rows(card: JudgeCard) -> list[tuple[str, str, str, str, str, str]]:
    """(perturbation, baseline, n, net shift, 95% interval, flag) rows of the bias battery."""
    rows = []
    for s in card.bias:
        flag = f"FLAGGED ({s.direction})" if s.flagged else "ok"
        shift = "-" if s.net_shift is None else f"{s.net_shift:+.3f}"
        rows.append((s.perturbation, s.baseline, str(s.n), shift, _ci(s.ci95), f"p={s.p_value:.3g} {flag}"))
    return rows


def card_lines(card: JudgeCard) -> list[str]:
    """The card in plain lines."""
    head = f"judge card {card.card_id or '(not stored)'}: {card.metric} by {card.judge_spec}"
    lines = [
        head
        + f" (prompt {card.prompt_version}), {card.n_items} items of {card.dataset}, tolerance {card.tolerance:g}"
    ]
    a = card.agreement
    if a is not None:
        lines.append(
            f"  agreement with people: n={a.get('n')}, kappa {_f(a.get('kappa'))} {_ci(_pair(a.get('kappa_ci')))}, "
            f"accuracy {_f(a.get('accuracy'))} {_ci(_pair(a.get('accuracy_ci')))} (percentile bootstrap)"
        )
    c = card.consistency
    if c is not None:
        lines.append(
            f"  self-consistency over {c.repeats} repeats: verdict flips {_f(c.flip_share)} "
            f"{_ci(c.flip_share_ci95)} (Wilson) of {c.n}; alpha {_f(c.alpha)} {_ci(c.alpha_ci95)}"
        )
    for s in card.bias:
        flag = f"FLAGGED ({s.direction})" if s.flagged else "ok"
        shift = "-" if s.net_shift is None else f"{s.net_shift:+.3f}"
        lines.append(
            f"  bias {s.perturbation} vs {s.baseline}: net shift {shift} {_ci(s.ci95)}, n={s.n} "
            f"(+{s.favour} -{s.against} ={s.ties}), sign test p={s.p_value:.3g}: {flag}"
        )
    sj = card.self_judging
    if sj.get("flagged"):
        lines.append(f"  self-judging: FLAGGED (the generator {sj.get('generator')} is the judge)")
    d = card.drift
    if d is not None:
        share = "-" if d.share is None else f"{d.share:.3f}"
        items = ", ".join(d.items[:20]) + (" ..." if len(d.items) > 20 else "")
        lines.append(
            f"  drift against card {d.against} ({d.against_judge}): label flips {share} {_ci(d.ci95)} (Wilson), "
            f"{d.flips} of {d.n}" + (f": {items}" if items else "")
        )
        if d.kappa_change is not None:
            lines.append(
                f"  agreement change: kappa {d.kappa_before:.3f} -> {d.kappa_after:.3f} ({d.kappa_change:+.3f})"
            )
    flagged = card.flagged
    lines.append("  flagged: " + (", ".join(flagged) if flagged else "nothing"))
    lines.extend(f"  note: {n}" for n in card.notes)
    return lines


def _pair(v: object) -> tuple[float, float] | None:
    if isinstance(v, list | tuple) and len(v) == 2 and all(isinstance(x, int | float) for x in v):
        return (float(v[0]), float(v[1]))
    return None


def card_markdown(card: JudgeCard) -> str:
    out = [
        f"Judge card: `{card.metric}` by `{card.judge_spec}` (prompt {card.prompt_version}), "
        f"{card.n_items} items, tolerance {card.tolerance:g}, {card.seconds:.0f} s.",
        "",
        "| perturbation | compared with | n | net shift | 95% CI (percentile bootstrap) | sign test |",
        "|---|---|---:|---:|---:|---|",
    ]
    out += [f"| {' | '.join(r)} |" for r in card_rows(card)]
    return "\n".join(out) + "\n"


def card_summary(card: JudgeCard) -> str:
    """One line: a judged metric's card as `runs show` prints it beside the metric."""
    parts = [f"judge card {card.card_id} for {card.metric} ({card.n_items} items)"]
    if card.consistency is not None and card.consistency.flip_share is not None:
        parts.append(f"repeat flips {card.consistency.flip_share:.3f}")
    if card.agreement is not None and card.agreement.get("kappa") is not None:
        parts.append(f"kappa {card.agreement['kappa']:.3f}")
    if card.drift is not None and card.drift.share is not None:
        parts.append(f"drift {card.drift.share:.3f} against {card.drift.against}")
    flagged = card.flagged
    parts.append("flagged: " + (", ".join(flagged) if flagged else "nothing"))
    return "; ".join(parts)
