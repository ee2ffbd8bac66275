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
    replay = c.extra.get("replay")
    if isinstance(replay, dict) and replay.get("parent"):  # a diagnose replay: its parent and intervention
        return f"{replay.get('intervention')} replay of run {replay['parent']}"
    return c.system + (f" ({c.mode})" if c.system == "builtin" else "")


def cost_of(run: EvalRunResult) -> float | None:
    total = (run.usage or {}).get("total") or {}
    cost = total.get("cost_usd")
    return float(cost) if isinstance(cost, int | float) else None


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


def run_rows(runs: Sequence[EvalRunResult]) -> list[dict[str, Any]]:
    rows = []
    for r in runs:
        metric, mean, ci = headline(r)
        dur = duration_s(r)
        rows.append(
            {
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
                "cost": "–" if cost_of(r) is None else f"${cost_of(r):.4f}",
                "duration": "–" if dur is None else f"{dur:.1f} s",
            }
        )
    return rows


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
    usage = run.usage or {}
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
    details = dict(m.details)
    reason = details.pop("reasoning", None) or details.pop("reason", None)
    claims = []
    for key in ("verdicts", "claims", "statements"):
        for item in details.pop(key, None) or []:
            if isinstance(item, dict):
                claim = item.get("claim") or item.get("statement") or item.get("text") or ""
                verdict = item.get("verdict") or item.get("label") or ""
                claims.append({"claim": str(claim), "verdict": str(verdict)})
            else:
                claims.append({"claim": str(item), "verdict": ""})
    return {
        "name": name,
        "value": fmt(m.value),
        "error": m.error,
        "version": m.version or "",
        "reason": "" if reason is None else str(reason),
        "claims": claims,
        "other": [(k, str(v)[:2000]) for k, v in details.items()],
    }


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
            "label": "–" if grades is None else str(grades.get(d.doc_id, 0)),
            "reached": "–" if reached is None else ("yes" if d.doc_id in reached else "no"),
            "text": d.text,
        }
        for d in sorted(q.retrieved, key=lambda d: d.rank)
    ]
    judged = [judgement(n, q.metrics[n]) for n in display_order(list(q.metrics))]
    return {
        "query_id": q.query_id,
        "question": q.question,
        "status": q.status,
        "error": q.error,
        "reference": q.ground_truth_answer,
        "answer": q.answer,
        "docs": docs,
        "judged": judged,
        "latency": [(k, f"{v:.1f} ms") for k, v in q.latency_ms.items()],
        "usage": usage_of_query(q),
        "failure_class": failure_class_of(q),
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

    names = [n for n in headline_metrics(list(runs[0].aggregate)) if n in runs[1].aggregate]
    rows, n = change_rows(runs[0], runs[1], names, top=top)
    for r in rows:
        for c in r["cells"]:
            c["text"] = "–" if c["delta"] is None else f"{c['delta']:+.3f}"
    return rows, n


def labels_of(runs: Sequence[EvalRunResult]) -> list[str]:
    return [run_label(r, i) for i, r in enumerate(runs)]
