"""Retrieval measures for incomplete judgments (bpref, infAP, judged@k), declared through the registry."""

from __future__ import annotations

from ragmeter.metrics.registry import declare

UNIT = (0.0, 1.0)
RUN_INPUTS = ("retrieved", "qrels")
VERSION = "trec_eval-9.0.7"  # bpref and infAP as m_bpref.c and m_infap.c compute them


def load() -> None:
    declare(
        "bpref",
        "retrieval",
        "run",
        RUN_INPUTS,
        UNIT,
        version=VERSION,
        description="binary preference: relevant docs ranked above judged non-relevant ones; unjudged skipped",
    )
    declare(
        "infap",
        "retrieval",
        "run",
        RUN_INPUTS,
        UNIT,
        version=VERSION,
        aliases=("infAP",),
        description="inferred AP (Yilmaz & Aslam): negative grades are pooled but unjudged (trec_eval infAP)",
    )
    declare(
        "judged@k",
        "retrieval",
        "run",
        RUN_INPUTS,
        UNIT,
        parameters=("k",),
        version="1",
        aliases=("Judged@k",),
        description="share of the top k with a judgment (grade >= 0); denominator k",
    )
