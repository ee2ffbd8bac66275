"""Retrieval measures for incomplete judgments (bpref, infAP, judged@k), declared through the registry."""

from __future__ import annotations

from typing import Any

from ragmeter.metrics.registry import declare

UNIT = (0.0, 1.0)
RUN_INPUTS = ("retrieved", "qrels")
VERSION = "trec_eval-9.0.7"  # bpref and infAP as m_bpref.c and m_infap.c compute them
IR_ENGINE = "ragmeter.ir.evaluate:evaluate"

# name -> (aliases, version, description); none is in a run's default plan (default=False).
MEASURES: dict[str, tuple[tuple[str, ...], str, str]] = {
    "bpref": (
        (),
        VERSION,
        "binary preference: relevant docs ranked above judged non-relevant ones; unjudged skipped",
    ),
    "infap": (
        ("infAP",),
        VERSION,
        "inferred AP (Yilmaz & Aslam): negative grades are pooled but unjudged (trec_eval infAP)",
    ),
    "judged@k": (("Judged@k",), "1", "share of the top k with a judgment (grade >= 0); denominator k"),
}


def load() -> None:
    for name, (aliases, version, description) in MEASURES.items():
        parameters = ("k",) if name.endswith("@k") else ()
        extra: dict[str, Any] = {
            "version": version,
            "aliases": aliases,
            "description": description,
            "parameters": parameters,
        }
        declare(name, "retrieval", "run", RUN_INPUTS, UNIT, default=False, computed_by=IR_ENGINE, **extra)
