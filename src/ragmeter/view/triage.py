"""How one value reads in the viewer's triage: numbers as text, badges with a colour-blind-safe tone, failure
classes as chips, the default columns and sort direction, and judge details as readable text and tables."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ragmeter import metrics as registry
from ragmeter.models import MetricResult


def fmt(value: Any, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


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
