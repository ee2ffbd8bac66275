"""Where a judge card is kept: in the run store, as a completed run of system "judge-card" named
"card:<metric>" whose config names the judge spec it describes and whose summary holds the whole card
(the way `judges validate` keeps its reports: no table of its own, no migration). A card can also be
written to and read from a JSON file (`--out`, `--against FILE`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ragmeter.errors import InputError

if TYPE_CHECKING:
    # read on first parse: the card's model pulls in scipy (the escalation calibration), which a store
    # with no card (a viewer page, a bundle) never needs
    from ragmeter.validity.models import JudgeCard

CARD_SYSTEM = "judge-card"


def store_card(store: Any, card: JudgeCard) -> str:
    """Keep the card as a run; returns its id (also set as the card's card_id)."""
    from ragmeter._version import __version__
    from ragmeter.models import EvalConfig

    config = EvalConfig(
        dataset=card.dataset,
        system=CARD_SYSTEM,
        evaluate_generation=False,
        use_llm_judge=True,
        judge_model=card.judge_spec,
        metrics=[card.metric],
        seed=card.seed,
        extra={"drift_against": card.drift.against if card.drift else None},
    )
    run = store.create_run(
        config,
        name=f"card:{card.metric}",
        dataset_name=card.dataset,
        n_dataset_queries=card.n_items,
        versions={"ragmeter": __version__},
    )
    card.card_id = str(run.run_id)
    store.finish_run(
        card.card_id,
        status="completed",
        n_queries=card.n_items,
        n_failed=0,
        summary={"judge_card": card.dump()},
    )
    return card.card_id


def _from_summary(summary: Any, where: str) -> JudgeCard:
    data = (summary or {}).get("judge_card") if isinstance(summary, dict) else None
    if not isinstance(data, dict):
        raise InputError(f"{where} is not a judge card", source="--against")
    return parse_card(data, where)


def parse_card(data: Any, where: str) -> JudgeCard:
    from ragmeter.validity.models import JudgeCard

    try:
        return JudgeCard.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(top)"
        raise InputError(f"{where}: field {field}: {err['msg']}", source="--against") from None


def load_card(store: Any | None, ref: str) -> JudgeCard:
    """A card by id (a unique prefix works) from the store, or from a JSON file path."""
    path = Path(ref)
    if path.suffix == ".json" or path.is_file():
        if not path.is_file():
            raise InputError(f"no card file {ref}", source="--against")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(f"{ref}: not a JSON card ({exc})", source="--against") from None
        return parse_card(data, ref)
    if store is None:
        raise InputError(f"no store to look up card {ref!r} in", source="--against")
    run_id = store.resolve_run_id(ref)
    rows = [r for r in _card_rows(store) if r[0] == run_id]
    if not rows:
        raise InputError(f"run {run_id} is not a judge card", source="--against")
    return _from_summary(rows[0][1], f"card {run_id}")


def _card_rows(store: Any) -> list[tuple[str, Any]]:
    """(id, summary) of every completed card run, newest first (the summary is not on EvalRunResult)."""
    from sqlalchemy import select

    from ragmeter.store.schema import RunRow

    stmt = (
        select(RunRow.id, RunRow.summary, RunRow.config)
        .where(RunRow.status == "completed", RunRow.name.like("card:%"))
        .order_by(RunRow.started_at.desc(), RunRow.id.desc())
    )
    with store.engine.connect() as conn:
        return [(r[0], r[1]) for r in conn.execute(stmt) if (r[2] or {}).get("system") == CARD_SYSTEM]


def stored_cards(store: Any, *, judge_spec: str | None = None, metric: str | None = None) -> list[JudgeCard]:
    """Every stored card (newest first), of this judge spec and metric when given."""
    out = []
    for run_id, summary in _card_rows(store):
        try:
            card = _from_summary(summary, f"card {run_id}")
        except InputError:
            continue
        if judge_spec is not None and card.judge_spec != judge_spec:
            continue
        if metric is not None and card.metric != metric:
            continue
        out.append(card)
    return out


def drift_check(
    store: Any, judge_spec: str, metrics: list[str], against: str, max_drift: float
) -> str | None:
    """Why a gate with this judge is refused (None when it may gate): for each judged metric, the newest
    stored card of this judge against card `against` must exist and show a flip share <= max_drift."""
    base = load_card(store, against)
    judged = [m for m in metrics if m == base.metric] or [base.metric]
    for metric in judged:
        cards = [
            c
            for c in stored_cards(store, judge_spec=judge_spec, metric=metric)
            if c.drift is not None and c.drift.against == base.card_id
        ]
        if not cards:
            return (
                f"no stored card of judge {judge_spec} for {metric} against card {base.card_id}: "
                f"run `ragmeter judges card --judge ... --metric {metric} --against {base.card_id}` first"
            )
        d = cards[0].drift
        assert d is not None
        if d.share is None or d.share > max_drift:
            share = "unknown" if d.share is None else f"{d.share:.3f}"
            return (
                f"judge {judge_spec} drifted {share} of {metric} labels against card {base.card_id} "
                f"(card {cards[0].card_id}), more than --max-drift {max_drift:g}"
            )
    return None


def cards_for_run(store: Any, judge_spec: str | None, metrics: list[str]) -> dict[str, JudgeCard]:
    """The newest stored card of this judge for each of `metrics` that has one."""
    if not judge_spec:
        return {}
    from ragmeter.llm.spec import public_spec

    spec = public_spec(judge_spec)
    out: dict[str, JudgeCard] = {}
    for card in stored_cards(store, judge_spec=spec):
        if card.metric in metrics and card.metric not in out:
            out[card.metric] = card
    return out


def run_cards(store: Any, run: Any) -> dict[str, JudgeCard]:
    """The cards beside a stored run's metrics: the newest stored card of the run's judge for each of its
    metrics that has one. `runs show`, the report and the viewer all find a run's cards here."""
    return cards_for_run(store, run.config.judge_model, list(run.aggregate))


def own_card(store: Any, run: Any) -> JudgeCard | None:
    """The card a judge-card run holds (None for any other run): `runs show` and the viewer print it whole."""
    if run.config.system != CARD_SYSTEM or not run.run_id:
        return None
    rows = [summary for run_id, summary in _card_rows(store) if run_id == run.run_id]
    return _from_summary(rows[0], f"card {run.run_id}") if rows else None


def card_notes(store: Any, run: Any) -> list[str]:
    """One line per judged metric of `run` with a stored card of its judge (for reports' run notes)."""
    from ragmeter.validity.render import card_summary

    return [card_summary(c) for c in run_cards(store, run).values()]
