"""What each page of the viewer shows, as plain dicts built from the store: the runs, one run's summary, one
query, and a comparison. Templates only lay these out; every text in them is escaped by jinja2."""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter import metrics as registry
from ragmeter.models import EvalRunResult, MetricResult, QueryEvalResult
from ragmeter.report.export import ci_text, run_label
from ragmeter.report.selection import display_order
from ragmeter.safety import redact_data, redact_text

if TYPE_CHECKING:
    from ragmeter.store.api import Store


def fmt(value: Any, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-quantile (0..1) of ascending values, linear between ranks (numpy's default)."""
    if not values:
        return None
    pos = (len(values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


def system_of(run: EvalRunResult) -> str:
    c = run.config
    if c.replay is not None and c.replay.parent:  # a diagnose replay: its parent and intervention
        return f"{c.replay.intervention} replay of run {c.replay.parent}"
    return c.system + (f" ({c.mode})" if c.system == "builtin" else "")


def cost_of(run: EvalRunResult) -> float | None:
    total = run.usage.total if run.usage else None
    return total.cost_usd if total is not None else None


def duration_s(run: EvalRunResult) -> float | None:
    if run.started_at is None or run.completed_at is None:
        return None
    return (run.completed_at - run.started_at).total_seconds()


def headline(run: EvalRunResult) -> tuple[str, str, str]:
    """(metric, mean, 95% interval) of the registry's first headline metric with a value."""
    names = [n for n, s in run.aggregate.items() if s.mean is not None]
    for name in registry.headline(names) or sorted(names, key=registry.sort_key):
        s = run.aggregate[name]
        ci, _ = ci_text(name, s, digits=4)
        return name, fmt(s.mean), "" if ci == "-" else ci
    return "", "", ""


def replay_of(run: EvalRunResult) -> tuple[str, str] | None:
    """(parent run id, intervention) of a diagnose replay, when its record (or config) names them."""
    replay = (run.record.replay if run.record else None) or run.config.replay
    if replay is not None and replay.parent:
        return replay.parent, replay.intervention or "replay"
    return None


def run_rows(runs: Sequence[EvalRunResult]) -> list[dict[str, Any]]:
    rows = []
    for r in runs:
        metric, mean, ci = headline(r)
        dur = duration_s(r)
        replay = replay_of(r)
        mean_value = r.aggregate[metric].mean if metric else None
        rows.append(
            {
                "replay": replay,
                "badge": {"text": mean, "tone": tone(metric, mean_value)} if metric else None,
                "run_id": r.run_id or "",
                "name": r.name,
                "status": r.status,
                "started": f"{r.started_at:%Y-%m-%d %H:%M:%S}" if r.started_at else "",
                "dataset": r.config.dataset,
                "system": system_of(r),
                "n_queries": r.n_queries,
                "n_failed": r.n_failed,
                "metric": metric,
                "mean": mean,
                "ci": ci,
                "ci_short": _short_ci(r, metric),
                "cost": "–" if cost_of(r) is None else f"${cost_of(r):.4f}",
                "duration": "–" if dur is None else f"{dur:.1f} s",
            }
        )
    return rows


def _short_ci(run: EvalRunResult, metric: str) -> str:
    s = run.aggregate.get(metric) if metric else None
    if s is None or s.ci95 is None:
        return ""
    return f"[{value_text(metric, s.ci95[0])}, {value_text(metric, s.ci95[1])}]"


def summary_rows(run: EvalRunResult) -> list[dict[str, Any]]:
    rows = []
    for name in display_order(list(run.aggregate)):
        s = run.aggregate[name]
        ci, method = ci_text(name, s, digits=4)
        rows.append(
            {
                "metric": name,
                "mean": fmt(s.mean),
                "ci": "" if ci == "-" else ci,
                "method": "" if method == "-" else method,
                "n": s.n,
                "n_null": s.n_null,
                "direction": "higher" if registry.higher_is_better(name) else "lower",
            }
        )
    return rows


def usage_rows(run: EvalRunResult) -> list[dict[str, Any]]:
    usage = run.usage.dump() if run.usage else {}
    rows = []
    for role in ("generator", "judge", "total"):
        line = usage.get(role)
        if not line:
            continue
        cost = line.get("cost_usd")
        rows.append(
            {
                "role": role,
                "calls": line.get("calls", 0),
                "input_tokens": line.get("input_tokens", 0),
                "output_tokens": line.get("output_tokens", 0),
                "cost": "unknown" if cost is None else f"${cost:.6f}",
                "note": redact_text(str(line.get("cost_note") or "")),
            }
        )
    return rows


def ppi_rows(run: EvalRunResult) -> list[dict[str, Any]]:
    return [
        {
            "metric": name,
            "judge_mean": fmt(e.judge_mean),
            "estimate": fmt(e.estimate),
            "ci": f"[{fmt(e.ci95[0])}, {fmt(e.ci95[1])}]",
            "n": f"{e.n_labeled} / {e.n_total}",
            "labels": e.labels,
        }
        for name, e in ((n, run.ppi[n]) for n in display_order(list(run.ppi)))
    ]


def failure_classes(run: EvalRunResult) -> list[tuple[str, int]]:
    """(class, queries) of a run classified by the diagnosis metrics (pass the run with its queries);
    empty when the run was not classified."""
    from ragmeter.diagnose.classes import class_counts

    return [(str(row["class"]), int(row["n"])) for row in class_counts(run) if row["n"]]


def png_uri(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def plots(runs: Sequence[EvalRunResult], *, compare: bool = False) -> list[dict[str, str]]:
    """The report's plots of these runs as PNG data URIs (the forest plot first when comparing)."""
    from ragmeter.report.forest import compare_with_first
    from ragmeter.report.plots import report_figures

    comparisons = compare_with_first(runs, n_resamples=2000) if compare and len(runs) > 1 else None
    return [
        {"name": p.name, "caption": p.caption, "src": png_uri(p.figure)}
        for p in report_figures(runs, comparisons)
    ]


def config_text(run: EvalRunResult) -> dict[str, Any]:
    """The run's config with every secret-looking value redacted (none is stored; this is the second wall)."""
    data = redact_data(run.config.model_dump(mode="json"))
    return data if isinstance(data, dict) else {}


def failure_class_of(q: QueryEvalResult) -> str | None:
    from ragmeter.score.classes import class_of

    return class_of(q)


def generator_ids(q: QueryEvalResult) -> set[str] | None:
    """Doc ids that reached the generator, when the run stored its generator contexts; None otherwise."""
    for name in ("contexts", "generator_contexts", "context_ids"):
        value = getattr(q, name, None)
        if isinstance(value, list):
            ids = set()
            for item in value:
                if isinstance(item, str):
                    ids.add(item)
                elif isinstance(item, dict) and "doc_id" in item:
                    ids.add(str(item["doc_id"]))
                elif hasattr(item, "doc_id"):
                    ids.add(str(item.doc_id))
            return ids
    return None


@lru_cache(maxsize=16)
def _dataset_labels(name: str, seed: int, want_hash: str | None) -> dict[str, dict[str, int]] | None:
    from ragmeter.datasets.resolve import dataset_hash, resolve_dataset

    try:
        data = resolve_dataset(name, seed=seed)
    except Exception:  # a dataset that is gone or not local: the page says labels are unknown
        return None
    if want_hash and dataset_hash(data) != want_hash:
        return None
    out: dict[str, dict[str, int]] = {}
    for q in data.queries:
        grades = dict(q.relevance) if q.relevance else {d: 1 for d in q.relevant_doc_ids}
        out[q.query_id] = grades
    return out


def relevance_labels(run: EvalRunResult) -> dict[str, dict[str, int]] | None:
    """{query id: {doc id: grade}} from the run's dataset when it is here (a local file or the demo set)."""
    name = run.config.dataset
    if not (name == "demo" or Path(name).exists()):
        return None
    return _dataset_labels(name, run.config.seed, run.dataset_hash)


def judgement(name: str, m: MetricResult) -> dict[str, Any]:
    """One metric of one query as the query page shows a judge: value, reason, claims with their verdicts,
    RAGChecker's verdicts as true/false tables, and every other detail as readable text."""
    details = dict(m.details)
    reason = details.pop("reasoning", None) or details.pop("reason", None)
    tables = verdict_tables(details)
    if tables:
        details.pop("verdicts", None)
        details.pop("answer_claims", None)
        details.pop("reference_claims", None)
    claims = []
    for key in ("verdicts", "claims", "statements"):
        items = details.get(key)
        if not isinstance(items, list):
            continue
        details.pop(key)
        for item in items:
            if isinstance(item, dict):
                claim = item.get("claim") or item.get("statement") or item.get("text") or ""
                verdict = item.get("verdict") or item.get("label") or ""
                why = item.get("reasoning") or item.get("reason") or ""
                claims.append(
                    {"claim": readable(claim), "verdict": readable(verdict), "reason": readable(why)}
                )
            else:
                claims.append({"claim": readable(item), "verdict": "", "reason": ""})
    call = {k: details.pop(k) for k in CALL_KEYS if k in details}
    call_text = " · ".join(f"{k} {readable(v)}" for k, v in call.items() if not (k == "flags" and not v))
    return {
        "name": name,
        "value": fmt(m.value),
        "badge": badge(name, m),
        "error": m.error,
        "version": m.version or "",
        "reason": "" if reason is None else readable(reason),
        "claims": claims,
        "tables": tables,
        "other": [(k, readable(v)[:2000]) for k, v in details.items()],
        "call": call_text,
        "is_judge": _is_judge(name, bool(reason or claims or tables or m.error)),
    }


def _is_judge(name: str, says_why: bool) -> bool:
    """A judge's verdict for the judges section of the query page: a metric of the registry's judge family,
    or one the registry does not know (a user's judge), that gives a reason, claims, verdicts or a null
    reason. A value with nothing to say (total_score, from retrieval_grade's grade) is listed with the rest."""
    return says_why and registry.family_of(name) in ("judge", None)


def usage_of_query(q: QueryEvalResult) -> list[dict[str, Any]]:
    rows = []
    for role, labels in q.usage.items():
        for label, line in labels.items():
            cost = line.get("cost_usd")
            rows.append(
                {
                    "role": role,
                    "label": label,
                    "calls": line.get("calls", 0),
                    "input_tokens": line.get("input_tokens", 0),
                    "output_tokens": line.get("output_tokens", 0),
                    "cost": "unknown" if cost is None else f"${cost:.6f}",
                }
            )
    return rows


def query_detail(run: EvalRunResult, q: QueryEvalResult) -> dict[str, Any]:
    labels = relevance_labels(run)
    grades = None if labels is None else labels.get(q.query_id, {})
    reached = generator_ids(q)
    docs = [
        {
            "rank": d.rank,
            "doc_id": d.doc_id,
            "score": fmt(d.score),
            "label": "–" if grades is None else str(grades.get(d.doc_id, "unjudged")),
            "reached": "–" if reached is None else ("yes" if d.doc_id in reached else "no"),
            "text": d.text,
        }
        for d in sorted(q.retrieved, key=lambda d: d.rank)
    ]
    every = [judgement(n, q.metrics[n]) for n in display_order(list(q.metrics))]
    judged = [j for j in every if j["is_judge"]]
    klass = failure_class_of(q)
    # the failure class is the chip at the top, with its reason; its 0/1 metrics are not listed again
    diagnosis = {j["name"] for j in every if registry.family_of(j["name"]) == "diagnosis"}
    class_reason = next((j["reason"] for j in every if j["name"] == f"class_{klass}"), "") if klass else ""
    return {
        "query_id": q.query_id,
        "question": q.question,
        "status": q.status,
        "error": q.error,
        "reference": q.ground_truth_answer,
        "answer": q.answer,
        "docs": docs,
        "judged": judged,
        "measures": [j for j in every if not j["is_judge"] and j["name"] not in diagnosis],
        "class_reason": class_reason,
        "latency": [(k, f"{v:.1f} ms") for k, v in q.latency_ms.items()],
        "usage": usage_of_query(q),
        "failure_class": klass,
        "chip": class_chip(klass),
        "labels_known": labels is not None,
    }


def retrieved_diff(a: QueryEvalResult | None, b: QueryEvalResult | None) -> list[dict[str, Any]]:
    """Rank by rank, the doc ids of two runs for one query, each marked as in both / only this one."""
    la = [d.doc_id for d in sorted(a.retrieved, key=lambda d: d.rank)] if a else []
    lb = [d.doc_id for d in sorted(b.retrieved, key=lambda d: d.rank)] if b else []
    sa, sb = set(la), set(lb)
    rows = []
    for i in range(max(len(la), len(lb))):
        da = la[i] if i < len(la) else None
        db = lb[i] if i < len(lb) else None
        rows.append(
            {
                "rank": i + 1,
                "a": da or "",
                "a_state": "" if da is None else ("both" if da in sb else "only"),
                "b": db or "",
                "b_state": "" if db is None else ("both" if db in sa else "only"),
            }
        )
    return rows


def load_runs(store: Store, run_ids: Sequence[str]) -> list[EvalRunResult]:
    return [store.get_run(r) for r in run_ids]


def changed_queries(runs: Sequence[EvalRunResult], top: int = 20) -> tuple[list[dict[str, Any]], int]:
    """The queries that changed most between the first and the second run, on their headline metrics."""
    from ragmeter.report.selection import change_rows, headline_metrics

    common = [n for n in runs[0].aggregate if n in runs[1].aggregate]
    # the registry's headline metrics (they fit one line at 1280 px), else one cut-off per family
    names = registry.headline(common) or headline_metrics(common)
    rows, n = change_rows(runs[0], runs[1], names, top=top)
    for r in rows:
        for c in r["cells"]:
            c["text"] = "–" if c["delta"] is None else f"{c['delta']:+.3f}"
            c["a_text"] = value_text(c["metric"], c["a"])
            c["b_text"] = value_text(c["metric"], c["b"])
    return rows, n


def labels_of(runs: Sequence[EvalRunResult]) -> list[str]:
    return [run_label(r, i) for i, r in enumerate(runs)]


# ---------------------------------------------------------------- triage: badges, chips, readable details

# Five tones from worst to best on a blue-orange scale (after Okabe and Ito's colour-blind-safe palette): it
# reads the same under red-green colour blindness and in grey, and every badge prints its value as well.
TONES = ("t0", "t1", "t2", "t3", "t4")

# Failure classes as short chips (the full name is the chip's title).
CLASS_CHIPS = {
    "no_relevant_retrieved": "no relevant",
    "relevant_not_in_context": "not in context",
    "answer_wrong_with_evidence": "wrong answer",  # evidence was retrieved
    "unsupported": "unsupported",
    "correct": "correct",
    "unknown": "unknown",
}


def tone(name: str, value: float | None) -> str:
    """The badge tone of a value: its place in the metric's registry range, turned by its direction
    ("t0" worst .. "t4" best); "null" without a value; "plain" for a metric with no fixed range."""
    if value is None or not math.isfinite(value):
        return "null"
    spec = registry.lookup(name)
    if spec is None or not spec.bounded:
        return "plain"
    lo, hi = spec.range
    assert lo is not None and hi is not None
    if hi <= lo:
        return "plain"
    share = min(1.0, max(0.0, (value - lo) / (hi - lo)))
    if not spec.higher_is_better:
        share = 1.0 - share
    return TONES[min(4, int(share * 5))]


def badge(name: str, m: MetricResult | None) -> dict[str, Any]:
    """One metric of one query as a badge: the value printed, its tone, and the null reason as its title."""
    value = None if m is None else m.value
    text = "–" if m is None else ("null" if value is None else value_text(name, value))
    return {
        "metric": name,
        "text": text,
        "tone": "missing" if m is None else tone(name, value),
        "title": f"{name}: " + (("null: " + m.error) if m is not None and m.error else text),
    }


def value_text(name: str, value: float | None) -> str:
    """A value as badges and comparisons print it: 3 decimals on a 0-1 scale, 1 on a wider one."""
    if value is None or not math.isfinite(value):
        return "–"
    spec = registry.lookup(name)
    wide = spec is None or spec.range[1] is None or spec.range[1] > 1  # a grade 1-10, a count, ms
    return f"{value:.{1 if wide else 3}f}"


def class_chip(klass: str | None) -> dict[str, str]:
    if not klass:
        return {"text": "", "title": "", "cls": ""}
    return {"text": CLASS_CHIPS.get(klass, klass), "title": klass, "cls": "c-" + klass}


def default_columns(per_query: Sequence[str], limit: int = 8) -> list[str]:
    """The metric columns a queries page shows unless the URL names others: the registry's headline
    metrics among those with per-query values, then the other judges', at most `limit` (they fit 1280 px)."""
    heads = registry.headline(per_query)
    judges = [n for n in per_query if registry.family_of(n) == "judge" and n not in heads]
    return [*heads, *judges][:limit]


def worst_first(name: str) -> bool:
    """Whether sorting `name` worst-first is descending (lower is better) or ascending."""
    return not registry.higher_is_better(name)


def readable(value: Any, depth: int = 0) -> str:
    """A detail value as text for people: never a Python repr (`{'a': 1}`, `False`)."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "–" if not math.isfinite(value) else f"{value:.4g}"
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        if not value:
            return "none"
        return ", ".join(f"{k} {readable(v, depth + 1)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        if not value:
            return "none"
        parts = [readable(v, depth + 1) for v in value]
        return ("; " if depth == 0 else " / ").join(parts)
    return str(value)


# Details every judgment carries about the call rather than the verdict: shown small, last.
CALL_KEYS = ("attempts", "cached", "tokens", "latency_s", "flags")
# RAGChecker's four checks: which claims are the rows, and what they are checked against.
RC_CHECKS = {
    "answer2response": ("answer_claims", "the reference answer"),
    "response2answer": ("reference_claims", "the answer"),
    "retrieved2response": ("answer_claims", "each retrieved chunk"),
    "retrieved2answer": ("reference_claims", "each retrieved chunk"),
}


def verdict_tables(details: dict[str, Any]) -> list[dict[str, Any]]:
    """RAGChecker verdicts ({check: [bool] or [[bool]]}) as true/false tables: one row per claim, one
    column per reference text (one for the answer checks, one per chunk for the retrieved ones)."""
    verdicts = details.get("verdicts")
    if not isinstance(verdicts, dict):
        return []
    tables = []
    for check, rows in verdicts.items():
        if not isinstance(rows, list) or not rows:
            continue
        claims_key, against = RC_CHECKS.get(str(check), ("", "the reference"))
        claims = details.get(claims_key) or []
        grid = [row if isinstance(row, list) else [row] for row in rows]
        width = max(len(r) for r in grid)
        header = (
            ["entailed"]
            if width == 1 and not isinstance(rows[0], list)
            else [f"chunk {j + 1}" for j in range(width)]
        )
        body = []
        for i, row in enumerate(grid):
            claim = str(claims[i]) if i < len(claims) else f"claim {i + 1}"
            body.append({"claim": claim, "cells": ["true" if bool(v) else "false" for v in row]})
        tables.append({"check": str(check), "against": against, "header": header, "rows": body})
    return tables
