"""The registry records of the judge metrics, beside the judges that compute them.

A light module: it imports the prompt texts (for each metric's version, which is its prompt's) and the
record type, never a judge or an LLM client; the registry collects `SPECS` by name on first need
(ragmeter.metrics.registry.FAMILY_MODULES). Each record's `computed_by` names the Judge (or function) that
computes it: `MetricSpec.computation()` resolves it.
"""

from __future__ import annotations

from typing import Any

from ragmeter.judges import prompts
from ragmeter.metrics.spec import MetricSpec

_ANSWER_JUDGE = ("question", "answer", "contexts", "judge")
_GRADES = "ragmeter.judges.retrieval:summarize_retrieval_grades"

# The judges that grade an answer in [0, 1]: name -> (the module that declares the Judge, what it measures).
ANSWER_JUDGES: dict[str, tuple[str, str]] = {
    "factuality": ("factuality", "supported claims / claims, per-claim verdicts against the contexts"),
    "groundedness": ("answer", "how far the answer is grounded in the contexts (0-10 reply / 10)"),
    "relevance": ("answer", "how far the answer addresses the question (0-10 reply / 10)"),
    "answer_correctness": ("answer", "agreement with the ground-truth answer (0-10 reply / 10)"),
    "coherence": ("answer", "clarity and logical flow (0-10 reply / 10)"),
    "completeness": ("answer", "how much of the question is answered (0-10 reply / 10)"),
    "citation_accuracy": ("citation", "share of citations that support their sentence"),
}

# RAGChecker's claim-level metrics (judges/ragchecker.py, values from judges/claims.py): name -> (higher is
# better, what it measures). Opt-in: computed only when a run names them.
RC_SPECS: dict[str, tuple[bool, str]] = {
    "rc_precision": (True, "answer claims entailed by the reference answer"),
    "rc_recall": (True, "reference-answer claims entailed by the answer"),
    "rc_f1": (True, "harmonic mean of rc_precision and rc_recall"),
    "rc_claim_recall": (True, "reference claims entailed by some context"),
    "rc_context_precision": (True, "contexts that entail some reference claim (relevant chunks)"),
    "rc_context_utilization": (True, "of the reference claims in the contexts, those the answer states"),
    "rc_noise_sensitivity_relevant": (False, "incorrect answer claims entailed by a relevant context"),
    "rc_noise_sensitivity_irrelevant": (
        False,
        "incorrect answer claims entailed only by irrelevant contexts",
    ),
    "rc_hallucination": (False, "incorrect answer claims entailed by no context"),
    "rc_self_knowledge": (False, "correct answer claims entailed by no context (lower = more grounded)"),
    "rc_faithfulness": (True, "answer claims entailed by some context"),
}


def prompt_version(name: str) -> str:
    """The version of the prompt a judge asks (name/vN+digest of its text): the version its values carry."""
    prompt: prompts.Prompt = getattr(prompts, name.upper())
    return prompt.version


def _judge(name: str, inputs: tuple[str, ...], value_range: tuple[float, float], **fields: Any) -> MetricSpec:
    """A per-query judge metric, versioned by its prompt."""
    if "version" not in fields:
        fields["version"] = prompt_version(name)
    return MetricSpec(
        name, "judge", "query", inputs, value_range, fields.pop("higher_is_better", True), **fields
    )


def _summary(
    name: str, of: str, value_range: tuple[float, float], scale: str, what: str, **extra: Any
) -> MetricSpec:
    """A retrieval-grade summary (DESIGN.md 3): one value per run, no per-query value."""
    shown: dict[str, Any] = {"scale": scale, "interval": "none", "description": what, "computed_by": _GRADES}
    return MetricSpec(name, "judge", "summary", (of,), value_range, True, **shown, **extra)


def _answer_judges() -> list[MetricSpec]:
    out = []
    for name, (module, what) in ANSWER_JUDGES.items():
        computed_by = f"ragmeter.judges.{module}:{name.upper()}"
        headline = 7 if name == "answer_correctness" else 0
        out.append(
            _judge(
                name, _ANSWER_JUDGE, (0.0, 1.0), description=what, computed_by=computed_by, headline=headline
            )
        )
    return out


def _retrieval_grade() -> list[MetricSpec]:
    """The retrieval grade, its total score (grade x position weight) and their summaries."""
    out = [
        _judge(
            "retrieval_grade",
            ("question", "contexts", "judge"),
            (1.0, 10.0),
            scale="1-10",
            level="ordinal",  # a grade: 9 is above 8, but 9 - 8 need not equal 2 - 1
            headline=8,
            computed_by="ragmeter.judges.retrieval:RETRIEVAL_GRADE",
            description="LLM grade 1-10 of how well the retrieved chunks answer the question",
        ),
        MetricSpec(
            "total_score",
            "judge",
            "run",
            ("retrieval_grade", "qrels"),
            (0.0, 10.0),
            True,
            scale="0-10",
            computed_by="ragmeter.score.runlevel:total_scores",
            description="retrieval grade x position weight (rank 1: 1.0, 2-3: 0.95, 4-5: 0.85, else 0.6)",
        ),
    ]
    for name, threshold in (("pass_rate_8", "8.0"), ("pass_rate_7", "7.0"), ("pass_rate_6_5", "6.5")):
        what = f"share of ALL queries with total_score >= {threshold} (a null grade does not pass)"
        out.append(_summary(name, "total_score", (0.0, 100.0), "%", what, unit="%"))
    what = "mean retrieval grade over the valid grades"
    out.append(_summary("avg_llm_grade", "retrieval_grade", (1.0, 10.0), "1-10", what))
    what = "mean total score over the valid grades"
    out.append(_summary("avg_total_score", "total_score", (0.0, 10.0), "0-10", what))
    return out


def _ragchecker() -> list[MetricSpec]:
    # Every rc_* judge asks RC_EXTRACT (and its follow-up RC_CHECK): their values carry its version.
    needs = ("question", "answer", "ground_truth", "contexts", "judge")
    return [
        _judge(
            name,
            needs,
            (0.0, 1.0),
            higher_is_better=higher,
            default=False,
            version=prompts.RC_EXTRACT.version,
            computed_by="ragmeter.judges.claims:" + name.removeprefix("rc_"),
            description=f"RAGChecker: {what}",
        )
        for name, (higher, what) in RC_SPECS.items()
    ]


def _nuggets() -> list[MetricSpec]:
    """The nugget metrics (judges/nuggets.py): opt-in, computed when a run has a nugget set (--nuggets). The
    record's version is the assignment prompt's; each value's adds the set's hash (`;nuggets=HASH`)."""
    from ragmeter.judges import nugget_prompts

    version = nugget_prompts.ASSIGN_NUGGETIZER.version
    computed_by = "ragmeter.judges.nuggets:nugget_scores"
    needs = ("question", "answer", "contexts", "nuggets", "judge")
    scores = {
        "nugget_vital": "vital nuggets the answer supports (partial support 0.5) / vital nuggets (nuggetizer)",
        "nugget_vital_strict": "vital nuggets the answer fully supports / vital nuggets (nuggetizer)",
        "nugget_all": "nuggets the answer supports (partial support 0.5) / nuggets (nuggetizer)",
        "nugget_all_strict": "nuggets the answer fully supports / nuggets (nuggetizer)",
        "nugget_weighted": "sum(w x support) / sum(w), w vital 1, okay 0.5; partial 0.5 (TREC 2024 RAG)",
        "nugget_weighted_strict": "the weighted score with partial support 0 (TREC 2024 RAG)",
        **nugget_prompts.CONTEXT_METRICS,
        nugget_prompts.RECALL: "nuggetizer's all score of the top k retrieved passages (a retrieval measure)",
    }
    out = [
        _judge(
            name,
            needs,
            (0.0, 1.0),
            default=False,
            version=version,
            computed_by=computed_by,
            description=what,
            parameters=("k",) if name.endswith("@k") else (),
        )
        for name, what in scores.items()
    ]
    out += [
        _judge(
            name,
            needs,
            (0.0, 1.0),
            higher_is_better=False,
            default=False,
            version=version,
            computed_by=computed_by,
            description=what,
        )
        for name, what in nugget_prompts.LOST_METRICS.items()
    ]
    return out


def _thin_context() -> list[MetricSpec]:
    """The reference-free binary judges (judges/sufficiency.py): opt-in, Wilson intervals on their rates."""
    binary: dict[str, Any] = {"default": False, "interval": "wilson", "scale": "0/1"}
    return [
        _judge(
            "context_sufficiency",
            ("question", "contexts", "judge"),
            (0.0, 1.0),
            computed_by="ragmeter.judges.sufficiency:CONTEXT_SUFFICIENCY",
            description="1 if the contexts the generator got suffice to infer the answer (sufficient-context "
            "autorater, Joren et al. ICLR 2025; no reference read)",
            **binary,
        ),
        _judge(
            "abstained",
            ("question", "answer", "judge"),
            (0.0, 1.0),
            higher_is_better=False,
            computed_by="ragmeter.judges.sufficiency:ABSTAINED",
            description="1 if the answer declines to answer (judge); abstained_lexical is the free fallback",
            **binary,
        ),
    ]


SPECS: tuple[MetricSpec, ...] = (
    *_answer_judges(),
    *_retrieval_grade(),
    *_ragchecker(),
    *_nuggets(),
    *_thin_context(),
)
