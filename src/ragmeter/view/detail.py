"""What the query page shows of one query: its retrieved documents with their labels and whether they reached
the generator, each judge's value, reason, claims and verdicts, the other measures, latency and usage."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from ragmeter import metrics as registry
from ragmeter.models import EvalRunResult, MetricResult, QueryEvalResult
from ragmeter.report.selection import display_order
from ragmeter.view.triage import CALL_KEYS, badge, class_chip, fmt, readable, verdict_tables


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
