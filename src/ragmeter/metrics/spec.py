"""What a metric is: one record that every consumer reads (runner, gate, compare, report, exports).

Modelled on ir_measures (a measure is a small object with declared parameters, registered once) and
lm-evaluation-harness's MetricSpec (everything a metric's consumers need in one record).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

Family = Literal["retrieval", "lexical", "semantic", "judge", "diagnosis", "latency", "agreement", "custom"]
# query: computed for each query as it completes (lexical, judges, user metrics);
# run: computed after the loop over all queries at once, still one value per query (IR engine, SBERT batch);
# summary: one value for the whole run, no per-query value (pass rates, PPI estimates, latency percentiles).
Stage = Literal["query", "run", "summary"]
Interval = Literal["bootstrap", "wilson", "none"]


@dataclass(frozen=True)
class ScoreInput:
    """What a per-query metric may read: plain data, no store, no dataset classes."""

    query_id: str
    question: str
    answer: str | None
    gold_answers: Sequence[str]
    contexts: Sequence[str]
    retrieved_ids: Sequence[str]
    qrels: Mapping[str, int]


@dataclass(frozen=True)
class MetricSpec:
    """One metric. `name` is canonical; a parametrised family is registered once under a template name
    (``ndcg@k``) and instantiated per cut-off by the registry (``ndcg@10``)."""

    name: str
    family: Family
    stage: Stage
    inputs: tuple[str, ...]
    range: tuple[float | None, float | None]  # None = unbounded on that side
    higher_is_better: bool
    scale: str = "0-1"  # how values are shown to users
    unit: str = ""
    aggregation: str = "mean"
    interval: Interval = "bootstrap"
    version: str = "1"
    aliases: tuple[str, ...] = ()
    description: str = ""
    parameters: tuple[str, ...] = ()  # e.g. ("k",) for ndcg@k
    # Headline rank in summaries (runs list, the demo, the report's first rows): 0 = not a headline metric;
    # for a family, the cut-off shown is headline_k when the run has it.
    headline: int = 0
    headline_k: int | None = None
    # False: computed only when a run names it (costly judges such as the rc_* claim metrics, the retrieval
    # measures beyond recall/precision/ndcg/hit@k, mrr and map). The metric plan's defaults are these.
    default: bool = True
    # False: a run's `--metrics` may not name it: measured anyway (latency), computed by experiments
    # (agreement statistics) or by the library only (the cross-encoder).
    plannable: bool = True
    # User metrics: fn(ScoreInput) -> float | None, called per query by the scorer.
    compute: Callable[[ScoreInput], float | None] | None = field(default=None, compare=False, repr=False)
    # Built-in metrics: "module:attribute" of the code that computes the values (a function, or a Judge).
    # A name, not an import: the registry sits below the families that compute (DESIGN.md's layers).
    computed_by: str = ""
    # Level of measurement of the values (how far apart two values are): "ordinal" for grades on a ranked
    # scale, "interval" for scores; Krippendorff's alpha across judge repeats is computed at this level.
    level: Literal["nominal", "ordinal", "interval"] = "interval"

    def computation(self) -> Any:
        """What computes this metric: a user metric's `compute`, else the object `computed_by` names."""
        if self.compute is not None:
            return self.compute
        if not self.computed_by:
            return None
        import importlib

        module, _, attribute = self.computed_by.partition(":")
        return getattr(importlib.import_module(module), attribute)

    def with_name(self, name: str, **changes: Any) -> MetricSpec:
        return replace(self, name=name, **changes)

    @property
    def bounded(self) -> bool:
        return self.range[0] is not None and self.range[1] is not None

    def clip(self, value: float) -> float:
        lo, hi = self.range
        if lo is not None and value < lo:
            return lo
        if hi is not None and value > hi:
            return hi
        return value

    def in_range(self, value: float, tol: float = 1e-9) -> bool:
        lo, hi = self.range
        return (lo is None or value >= lo - tol) and (hi is None or value <= hi + tol)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "family": self.family,
            "stage": self.stage,
            "inputs": list(self.inputs),
            "range": [self.range[0], self.range[1]],  # null on an unbounded side
            "scale": self.scale,
            "unit": self.unit,
            "higher_is_better": self.higher_is_better,
            "aggregation": self.aggregation,
            "interval": self.interval,
            "version": self.version,
            "aliases": list(self.aliases),
            "parameters": list(self.parameters),
            "headline": self.headline,
            "default": self.default,
            "plannable": self.plannable,
            "level": self.level,
            "computed_by": self.computed_by or ("user function" if self.compute is not None else ""),
            "description": self.description,
        }
