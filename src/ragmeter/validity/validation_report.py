"""Keeping and showing a judge-validation report: stored as a run (system "judge-validation"), printed as a
table or markdown. The report itself is built by ragmeter.validity.judge_validation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.models import MetricResult
from ragmeter.validity.judge_validation import ValidationReport

VALIDATION_SYSTEM = "judge-validation"


def store_report(
    store: Any,
    report: ValidationReport,
    *,
    dataset_name: str,
    dataset_hash: str | None = None,
    judge_spec: str,
    sample: int | None,
    concurrency: int,
) -> str:
    """Keep the report in the run store as a completed run (system "judge-validation", name
    "validate:<metric>"): kappa, weighted kappa and accuracy as its aggregates with their intervals,
    one result per item (the judge's value, the human label in details), the whole report in the
    run's summary. Returns the run id."""
    from ragmeter._version import __version__
    from ragmeter.models import EvalConfig, MetricSummary, QueryEvalResult

    config = EvalConfig(
        dataset=dataset_name,
        system=VALIDATION_SYSTEM,
        evaluate_generation=False,
        use_llm_judge=True,
        judge_model=judge_spec,
        metrics=[report.metric],
        seed=report.seed,
        limit=sample,
        concurrency=concurrency,
        extra={"human_scale": report.to_dict()["human_scale"]},
    )
    run = store.create_run(
        config,
        name=f"validate:{report.metric}",
        dataset_name=dataset_name,
        dataset_hash=dataset_hash,
        n_dataset_queries=report.n_items,
        versions={"ragmeter": __version__},
    )
    run_id = str(run.run_id)
    for position, item in enumerate(report.items):
        failed = item["judge"] is None
        result = MetricResult(
            name=report.metric,
            value=item["judge_value"],
            error=item["reason"] if failed else None,
            details={
                "human_label": item["human"],
                "judge_on_human_scale": item["judge"],
                "reason": item["reason"],
            },
        )
        store.add_query_result(
            run_id,
            QueryEvalResult(query_id=str(item["id"]), metrics={report.metric: result}),
            position=position,
        )
    stats = report.stats
    aggregate = {}
    for key in ("kappa", "weighted_kappa", "accuracy"):
        value = stats.get(key)
        ci = stats.get(f"{key}_ci") or [None, None]
        aggregate[key] = MetricSummary(
            mean=value,
            std=None,
            n=int(stats.get("n", 0)),
            n_null=report.n_failed,
            ci95=(ci[0], ci[1]) if value is not None and None not in ci else None,
            ci_method="bootstrap-percentile" if value is not None and None not in ci else None,
        )
    store.finish_run(
        run_id,
        status="completed",
        aggregate=aggregate,
        n_queries=report.n_items,
        n_failed=report.n_failed,
        summary={"judge_validation": report.to_dict(), "notes": report.notes},
    )
    return run_id


def _fmt(value: Any, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _ci(ci: Sequence[Any] | None) -> str:
    if not ci or ci[0] is None:
        return "-"
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def summary_rows(report: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(statistic, value, 95% interval) rows of a report dict, for tables."""
    rows = [("n compared", str(report.get("n", 0)), ""), ("failed", str(report["n_failed"]), "")]
    for key, label in (
        ("accuracy", "accuracy"),
        ("kappa", "Cohen's kappa"),
        ("weighted_kappa", "kappa, quadratic weights"),
        ("spearman", "Spearman rho"),
        ("kendall", "Kendall tau-b"),
    ):
        rows.append((label, _fmt(report.get(key)), _ci(report.get(f"{key}_ci"))))
    return rows


def usage_line(usage: Mapping[str, Any]) -> str:
    """'N calls (C cached), I+O tokens, $X (estimated), T s' from a client's usage dump."""
    tokens_in = usage.get("input_tokens", usage.get("prompt_tokens", 0))
    tokens_out = usage.get("output_tokens", usage.get("completion_tokens", 0))
    cost = usage.get("cost_usd")
    price = "cost unknown" if cost is None else f"${cost:.4f} (estimated)"
    return (
        f"{usage.get('calls', 0)} calls ({usage.get('cached_calls', 0)} cached), "
        f"{tokens_in}+{tokens_out} tokens, {price}, {usage.get('seconds', 0.0):.1f} s"
    )


def format_markdown(report: Mapping[str, Any]) -> str:
    """The report as markdown: the statistics, the confusion matrix (rows human, columns judge), usage."""
    lines = [
        f"### Judge `{report['metric']}` vs human labels",
        "",
        f"Judge: {report['judge'].get('backend')}:{report['judge'].get('model')}; human scale: "
        f"{report['human_scale']['kind']} ({report['mapping']}).",
        "",
        "| statistic | value | 95% CI |",
        "|---|---:|---:|",
    ]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in summary_rows(report)]
    conf = report.get("confusion")
    if conf:
        labels = conf["labels"]
        lines += ["", "| human \\ judge | " + " | ".join(str(x) for x in labels) + " |"]
        lines.append("|---|" + "---:|" * len(labels))
        for lab, row in zip(labels, conf["matrix"], strict=True):
            lines.append(f"| {lab} | " + " | ".join(str(v) for v in row) + " |")
    lines += ["", f"Judge usage: {usage_line(report['usage'])}."]
    lines += [f"\nNote: {n}" for n in report.get("notes", [])]
    return "\n".join(lines) + "\n"
