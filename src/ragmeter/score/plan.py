"""Which metrics a run computes: its `metrics` list and cut-offs read through the metric registry.

With no list: every default metric (the registry's `default` records: the retrieval measures it marks
default, at each cut-off for a family@k; every lexical metric that applies; the default semantic metric when
installed; the default judges when a judge is set; every user metric).
With a list, per family: the named retrieval measures (else the defaults), the named lexical metrics (else
all), the named judges (else the defaults), the semantic metric only when named, user metrics only when
named. A record with `plannable=False` (latency, agreement statistics, the cross-encoder) cannot be named.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragmeter.errors import InputError

if TYPE_CHECKING:
    from ragmeter.models import EvalConfig
    from ragmeter.records import PlanRef

# The metrics the run level computes by name (score/runlevel.py): the semantic batch and the total score.
SEMANTIC = "sbert_similarity"
TOTAL_SCORE = "total_score"
RETRIEVAL_GRADE = "retrieval_grade"


@dataclass(frozen=True)
class MetricPlan:
    retrieval: tuple[str, ...]
    lexical: tuple[str, ...] | None  # None: every lexical metric that applies
    judges: tuple[str, ...]
    semantic: bool
    custom: tuple[str, ...]
    total_score: bool = False  # from each query's retrieval grade (computed now, or stored)
    diagnosis: bool = True  # the failure class of each query (ragmeter.score.classes), no LLM call
    nuggets: Any = (
        None  # the run's nugget set (ragmeter.score.nugget_plan.NuggetPlan), for the nugget_* judges
    )

    def names(self, *, evaluate_generation: bool) -> set[str]:
        """The metric names a run with this plan produces (lexical ones only when it generates answers)."""
        import ragmeter.metrics as metrics

        names = {*self.retrieval, *self.judges, *self.custom}
        if self.total_score:  # and the grade summary derived from it (pass rates, averages): the registry's
            names |= {
                s.name for s in metrics.specs() if s.family == "judge" and s.stage in ("run", "summary")
            }
        if self.semantic:
            names |= {s.name for s in metrics.specs() if s.family == "semantic" and s.plannable}
        if evaluate_generation:
            names |= set(self.lexical or [s.name for s in metrics.specs() if s.family == "lexical"])
        return names


def planned_names(plan: MetricPlan, *, evaluate_generation: bool) -> set[str]:
    """The metric names a run with this plan produces (`MetricPlan.names`)."""
    return plan.names(evaluate_generation=evaluate_generation)


def judge_names(*, evaluate_generation: bool = True) -> list[str]:
    """The per-query judge metrics a judged run computes by default (opt-in ones only when named); without
    generation, those that read no answer (the retrieval grade)."""
    import ragmeter.metrics as rm

    judges = [s for s in rm.specs() if s.family == "judge" and s.stage == "query" and s.default]
    return [s.name for s in judges if evaluate_generation or "answer" not in s.inputs]


def default_retrieval(cutoffs: Sequence[int]) -> list[str]:
    """The retrieval measures the registry marks default: a family@k at each cut-off, then the others."""
    import ragmeter.metrics as rm

    defaults = [s for s in rm.specs() if s.family == "retrieval" and s.default]
    at_k = [f"{s.name.removesuffix('@k')}@{k}" for s in defaults if s.parameters for k in cutoffs]
    return at_k + [s.name for s in defaults if not s.parameters]


def semantic_names() -> list[str]:
    """The semantic metrics a run computes (the registry's plannable semantic records)."""
    import ragmeter.metrics as rm

    return [s.name for s in rm.specs() if s.family == "semantic" and s.plannable]


def plan_metrics(
    metrics: Sequence[str] | None,
    cutoffs: Sequence[int],
    *,
    evaluate_generation: bool = True,
    judged: bool = False,
    semantic: bool = True,
    strict: bool = False,
    source: str = "metrics",
) -> MetricPlan:
    """The plan of a run; an unknown or non-computable name is an InputError naming `source`.
    `strict` (rescore --metrics): exactly the named metrics, no family defaults."""
    import ragmeter.metrics as rm

    ks = sorted(set(cutoffs or [10]))
    bad = [k for k in ks if k < 1]
    if bad:
        raise InputError(f"cut-offs must be integers >= 1, got {bad[0]}", source="retrieval_top_k")
    names = rm.check(metrics, source=source) if metrics else []
    by_family: dict[str, list[str]] = {}
    for name in dict.fromkeys(names):
        spec = rm.get(name, source=source)
        if not spec.plannable:
            raise InputError(_not_plannable(spec), source=source)
        by_family.setdefault(spec.family, []).append(name)
    retrieval = by_family.get("retrieval") or default_retrieval(ks)
    judges: list[str] = []
    if judged:
        judges = _judges(by_family) or judge_names(evaluate_generation=evaluate_generation)
    lexical = by_family.get("lexical")
    wanted_semantic = not metrics or bool(by_family.get("semantic"))
    return MetricPlan(
        retrieval=tuple(retrieval),
        lexical=tuple(lexical) if lexical else None,
        judges=tuple(judges),
        semantic=evaluate_generation and semantic and wanted_semantic,
        custom=tuple(by_family.get("custom", []) if metrics else _custom_names()),
        total_score=bool(_run_level_judges(judges)),
        diagnosis=not strict or "diagnosis" in by_family,
    )


def plan_for(config: EvalConfig, *, judged: bool | None = None) -> MetricPlan:
    """The plan of a run made with `config` (judged: its judge setting unless told): the one place a config
    becomes a plan, stored in the run's record (`to_ref`) and read back from there (`from_ref`)."""
    return plan_metrics(
        config.metrics,
        config.retrieval_top_k,
        evaluate_generation=config.evaluate_generation,
        judged=config.use_llm_judge if judged is None else judged,
        semantic=config.semantic,
    )


def to_ref(plan: MetricPlan) -> PlanRef:
    """The plan as the run record stores it (its nugget set aside)."""
    from ragmeter.records import PlanRef

    return PlanRef.model_validate({name: getattr(plan, name) for name in PlanRef.model_fields})


def from_ref(ref: PlanRef, nuggets: Any = None) -> MetricPlan:
    """The stored plan as the scorers take it, with its nugget set (ragmeter.score.nugget_plan.NuggetPlan)."""
    fields: dict[str, Any] = {name: tuple(v) if isinstance(v, list) else v for name, v in ref}
    return MetricPlan(**fields, nuggets=nuggets)


def check_computable(
    metrics: Sequence[str] | None, *, evaluate_generation: bool, judged: bool, source: str = "metrics"
) -> None:
    """Each named metric is one the run can compute: a judge metric needs a judge, an answer metric (lexical,
    semantic) a generated answer. A name the plan would drop silently is an InputError naming `source`."""
    import ragmeter.metrics as rm

    for name in rm.check(metrics, source=source) if metrics else []:
        family = rm.get(name, source=source).family
        if family == "judge" and not judged:
            raise InputError(f"{name!r} is a judge metric: it needs a judge (--judge MODEL)", source=source)
        if family in ("lexical", "semantic") and not evaluate_generation:
            raise InputError(
                f"{name!r} scores the generated answer, and this run generates none (--no-generation)",
                source=source,
            )


def _not_plannable(spec: Any) -> str:
    """Why a run cannot compute `spec`, and what to name instead when its family has a metric runs compute."""
    import ragmeter.metrics as rm

    instead = [s.name for s in rm.specs() if s.family == spec.family and s.plannable]
    if instead:
        return f"{spec.name!r} is not computed by runs; use {', '.join(instead)}"
    return f"{spec.name!r} is not computed per run from outputs ({spec.family}); leave it out"


def _run_level_judges(judges: Sequence[str]) -> list[str]:
    """The run-level judge metrics (the total score) computed from the per-query judges planned."""
    import ragmeter.metrics as rm

    return [
        s.name for s in rm.specs() if s.family == "judge" and s.stage == "run" and set(s.inputs) & set(judges)
    ]


def _judges(by_family: dict[str, list[str]]) -> list[str]:
    """The per-query judges named, plus the ones a named run-level or summary judge metric is computed from
    (its registry inputs, followed down: a pass rate reads total_score, which reads retrieval_grade)."""
    import ragmeter.metrics as rm

    named: list[str] = []
    todo = list(by_family.get("judge", []))
    while todo:
        spec = rm.get(todo.pop(0))
        if spec.stage == "query":
            named += [spec.name] if spec.name not in named else []
        else:
            todo += [n for n in spec.inputs if (s := rm.lookup(n)) is not None and s.family == "judge"]
    return named


def _custom_names() -> list[str]:
    import ragmeter.metrics as rm

    return [s.name for s in rm.specs() if s.family == "custom"]


def __getattr__(name: str) -> Any:
    """DEFAULT_RETRIEVAL was a list of this module's own: the registry's `default` records replace it."""
    import warnings

    if name != "DEFAULT_RETRIEVAL":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        "ragmeter.score.plan.DEFAULT_RETRIEVAL is deprecated: use ragmeter.score.plan.default_retrieval(cutoffs) "
        "(the registry's retrieval records with default=True)",
        DeprecationWarning,
        stacklevel=2,
    )
    import ragmeter.metrics as rm

    return tuple(
        s.name.removesuffix("@k")
        for s in rm.specs()
        if s.family == "retrieval" and s.default and s.parameters
    )
