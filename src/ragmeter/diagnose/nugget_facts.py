"""Attribution by fact: which nuggets a nugget score lost at each part of the diagnose chain.

The chain's parts (ragmeter.diagnose.attribution) split a score's gap by differences of runs; for a nugget
score each difference is made of nuggets whose credit changed between two steps. Per query and nugget, with
credit 1 for support, 0.5 for partial support (0 in the strict scores) and 0 otherwise, read from the answer's
assignments each step stored:

- ranking_and_context: the nuggets whose credit rose from the run to oracle-rank;
- retrieval: those whose credit rose from oracle-rank to oracle-context;
- generation: those short of full credit with the oracle contexts (best - oracle-context).

A nugget whose credit fell between two steps (the generator dropped it given better contexts) is named
under the part's `regained_negative`: it counts against that part. The nuggets a score reads are its own:
vital ones for the vital scores, every one otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragmeter.models import EvalRunResult
from ragmeter.nuggets.model import NuggetSet
from ragmeter.nuggets.scores import SCORES

CHAIN_STEPS = ("run", "oracle-rank", "oracle-context")


def is_nugget_score(name: str) -> bool:
    return name in SCORES


def _credit(label: str | None, strict: bool) -> float:
    if label == "support":
        return 1.0
    if label == "partial_support" and not strict:
        return 0.5
    return 0.0


def _labels(run: EvalRunResult, name: str) -> dict[str, dict[str, str | None]]:
    """Per valued query, the answer's assignments stored with `name`'s value."""
    out: dict[str, dict[str, str | None]] = {}
    for r in run.per_query:
        m = r.metrics.get(name)
        if r.status == "ok" and m is not None and m.value is not None:
            got = (m.details or {}).get("assignments")
            if isinstance(got, dict):
                out[r.query_id] = {str(k): (str(v) if v is not None else None) for k, v in got.items()}
    return out


def lost_by_fact(name: str, runs: Mapping[str, EvalRunResult], nuggets: NuggetSet) -> dict[str, Any]:
    """{"set": hash, "parts": {part: {query: [nugget ids]}}, "regained_negative": {...}, "n": queries} for
    the nugget score `name` over the queries valued (with assignments) in all three steps."""
    field, strict = SCORES[name]
    vital_only = field.endswith("vital_score")
    steps = [_labels(runs[s], name) for s in CHAIN_STEPS]
    queries = sorted(set(steps[0]) & set(steps[1]) & set(steps[2]))
    parts: dict[str, dict[str, list[str]]] = {"ranking_and_context": {}, "retrieval": {}, "generation": {}}
    worse: dict[str, dict[str, list[str]]] = {"ranking_and_context": {}, "retrieval": {}}
    for q in queries:
        known = nuggets.get(q)
        if known is None:
            continue
        ids = [n.id for n in known.nuggets if n.importance == "vital" or not vital_only]
        run, rank, ctx = ({i: _credit(s[q].get(i), strict) for i in ids} for s in steps)
        pairs = (("ranking_and_context", run, rank), ("retrieval", rank, ctx))
        for part, before, after in pairs:
            rose = [i for i in ids if after[i] > before[i]]
            fell = [i for i in ids if after[i] < before[i]]
            if rose:
                parts[part][q] = rose
            if fell:
                worse[part][q] = fell
        short = [i for i in ids if ctx[i] < 1.0]
        if short:
            parts["generation"][q] = short
    return {"set": nuggets.hash, "n": len(queries), "parts": parts, "regained_negative": worse}


def load_set(run: EvalRunResult) -> tuple[NuggetSet | None, str | None]:
    """The run's nugget set as it was scored (its file, checked against the stored hash), or why not."""
    from ragmeter.errors import InputError
    from ragmeter.score.nugget_plan import load

    spec = run.config.nuggets
    if not isinstance(spec, dict):
        return None, "the run has no nugget set"
    try:
        return load(spec, source="the run's nugget set").nuggets, None
    except InputError as exc:
        return None, str(exc)


def lines(metrics: list[dict[str, Any]]) -> list[str]:
    """`METRIC PART: q1 n1,n2; q2 n3` lines of the table form."""
    out = []
    for m in metrics:
        facts = m.get("nuggets")
        if not facts:
            continue
        if facts.get("note"):
            out.append(f"{m['metric']}: no attribution by fact ({facts['note']})")
            continue
        for part, by_query in facts["parts"].items():
            named = "; ".join(f"{q} {','.join(ids)}" for q, ids in by_query.items())
            out.append(f"{m['metric']} {part} lost nuggets: {named or 'none'}")
    return out


def add_facts(metrics: list[dict[str, Any]], replays: dict[str, EvalRunResult]) -> None:
    """Each nugget score's lost nuggets by part (lost_by_fact), under "nuggets"."""
    scores = [m for m in metrics if is_nugget_score(m["metric"])]
    if not scores:
        return
    nuggets, why = load_set(replays["run"])
    for m in scores:
        m["nuggets"] = {"note": why} if nuggets is None else lost_by_fact(m["metric"], replays, nuggets)
