"""Sequential gates while a run runs (`ragmeter run --fail-under M=V --sequential [--alpha A]`).

The queries are evaluated in a seeded random order. After each result the gate looks at the PREFIX of that
order whose queries have all finished (never at completion order, which can follow the values through
latency), bounds the mean of every gated metric over the whole query set with the without-replacement
confidence sequence (ragmeter.stats.confseq; Bonferroni over the gates, each side of each gate at alpha / k)
and tells the executor to stop once every gate is decided either way.

A query without a value for a gated metric (a failed judge call, a failed query) counts at the bottom of the
metric's range for the lower bound and at the top for the upper bound. The full run's mean is over the
valid values only, and lies between those two means, so a gate decides only what the full run would decide
(with probability 1 - alpha), whatever the missing values turn out to be. Retrieval measures are computed
per query as each query finishes, by the IR engine (the same call the end of the run makes for all); a
query without relevance judgments carries no retrieval value in the full run and is left out of those
gates' query set from the start.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragmeter.errors import InputError
from ragmeter.models import EvalConfig, EvalQuery, QueryEvalResult
from ragmeter.score.plan import RETRIEVAL_GRADE, SEMANTIC, TOTAL_SCORE
from ragmeter.stats.confseq import GateState

SEQUENTIAL_KEY = (
    "sequential"  # the EvalConfig field: SequentialGates {"gates": {metric: threshold}, "alpha": a}
)


@dataclass(frozen=True)
class SequentialSpec:
    gates: dict[str, float]
    alpha: float
    seed: int  # the order of the queries (the run's seed)


def check_alpha(alpha: Any, *, source: str = "--alpha") -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0.0 < float(alpha) < 1.0:
        raise InputError(f"alpha must be a number in (0, 1), got {alpha!r}", source=source)
    return float(alpha)


def sequential_spec(config: EvalConfig) -> SequentialSpec | None:
    """The run's sequential gates from config.sequential (None: not sequential), checked."""
    import ragmeter.metrics as rm

    raw = config.sequential
    if raw is None:
        return None
    if not raw.gates:
        raise InputError("needs --fail-under METRIC=VALUE (the gates it decides)", source="--sequential")
    alpha = check_alpha(raw.alpha)
    gates: dict[str, float] = {}
    for name, value in raw.gates.items():
        spec = rm.lookup(str(name))
        if spec is None:
            raise InputError(f"no metric {name!r}: see `ragmeter metrics list`", source="--fail-under")
        if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
            raise InputError(
                f"{spec.name}: threshold {value!r} is not a finite number", source="--fail-under"
            )
        gateable = spec.stage == "query" or spec.family == "retrieval" or spec.name in (TOTAL_SCORE, SEMANTIC)
        if not gateable or not spec.bounded:
            why = "it has no value per query" if not gateable else "its range is unbounded"
            raise InputError(f"{spec.name} cannot be gated sequentially: {why}", source="--sequential")
        gates[spec.name] = float(value)
    return SequentialSpec(gates, alpha, config.seed)


def seeded_order(n: int, seed: int) -> list[int]:
    """The order in which a sequential run evaluates its n queries (positions), from the run's seed."""
    return [int(i) for i in np.random.default_rng(seed).permutation(n)]


@dataclass
class _Gate:
    metric: str
    threshold: float
    lo: float
    hi: float
    higher: bool
    population: int  # queries that can carry a value of this metric
    family: str


@dataclass
class SequentialGate:
    """Follows a sequential run: `observe` each result, True once every gate is decided."""

    spec: SequentialSpec
    queries: Sequence[EvalQuery]
    relevance_level: int = 1
    order: list[int] = field(default_factory=list)
    used: int = 0  # the length of the finished prefix of `order`
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)
    decisions: dict[str, bool | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        import ragmeter.metrics as rm

        self.order = seeded_order(len(self.queries), self.spec.seed)
        self._by_id = {q.query_id: q for q in self.queries}
        self._values: dict[str, dict[str, float | None]] = {}
        self._gates: list[_Gate] = []
        self._judged = {q.query_id for q in self.queries if q.judgments()}
        judged = len(self._judged)
        for metric, threshold in self.spec.gates.items():
            s = rm.get(metric)
            lo, hi = s.range
            assert lo is not None and hi is not None  # checked by sequential_spec
            population = judged if s.family == "retrieval" else len(self.queries)
            self._gates.append(_Gate(metric, threshold, lo, hi, s.higher_is_better, population, s.family))
            self.decisions[metric] = None
        # each gate's values over the finished prefix, a missing one at the bottom / the top of the range;
        # grown as the prefix grows, so a step appends only the queries that joined it
        self._low: dict[str, list[float]] = {g.metric: [] for g in self._gates}
        self._high: dict[str, list[float]] = {g.metric: [] for g in self._gates}

    @property
    def state(self) -> GateState:
        return GateState(self.used, len(self.queries), dict(self.bounds), dict(self.decisions))

    @property
    def settled(self) -> bool:
        return self.state.settled

    @property
    def passed(self) -> bool | None:
        return self.state.passed

    def value(self, query_id: str, metric: str) -> float | None:
        """The value of a gated metric that the gate took for a finished query (None: missing)."""
        return self._values[query_id][metric]

    def pending_in_order(self, done: Mapping[str, Any]) -> list[tuple[int, EvalQuery]]:
        """The queries still to evaluate, as (position, query), in the gate's order."""
        return [(i, self.queries[i]) for i in self.order if self.queries[i].query_id not in done]

    def observe(self, result: QueryEvalResult) -> bool:
        """Take one finished query; True when every gate is decided (the executor then stops)."""
        self._values[result.query_id] = self._gate_values(result)
        before = self.used
        while self.used < len(self.order) and self.queries[self.order[self.used]].query_id in self._values:
            self._extend(self.queries[self.order[self.used]].query_id)
            self.used += 1
        if self.used != before:
            self._update()
        return self.settled

    def _gate_values(self, result: QueryEvalResult) -> dict[str, float | None]:
        if result.status != "ok":  # a failed query is left out of every average of the full run
            return {g.metric: None for g in self._gates}
        values = {name: m.value for name, m in result.metrics.items()}
        missing = [g for g in self._gates if g.metric not in values]
        if missing:
            values.update(self._computed_after_loop(result, missing))
        out: dict[str, float | None] = {}
        for g in self._gates:
            value = values.get(g.metric)
            out[g.metric] = None if value is None else min(max(float(value), g.lo), g.hi)
        return out

    def _computed_after_loop(
        self, result: QueryEvalResult, missing: Sequence[_Gate]
    ) -> dict[str, float | None]:
        """This query's value of the gated metrics that a run computes after its loop, computed now."""
        from ragmeter.score.runlevel import (
            RunLevel,
            grades_of,
            retrieval_scores,
            semantic_scores,
            total_scores,
        )

        by_id = {result.query_id: self._by_id[result.query_id]}
        level = RunLevel()
        measures = [g.metric for g in missing if g.family == "retrieval"]
        if measures:
            retrieval_scores([result], by_id, measures, relevance_level=self.relevance_level, out=level)
        names = {g.metric for g in missing}
        if TOTAL_SCORE in names and RETRIEVAL_GRADE in result.metrics:
            total_scores([result], grades_of([result]), out=level)
        if SEMANTIC in names:
            semantic_scores([result], by_id, out=level)
        return {name: m.value for name, m in level.values.get(result.query_id, {}).items()}

    def _extend(self, query_id: str) -> None:
        """Add a query that joined the finished prefix to the value lists of the gates it belongs to."""
        for g in self._gates:
            if g.family == "retrieval" and query_id not in self._judged:
                continue  # no relevance judgments: no retrieval value in the full run either
            v = self._values[query_id][g.metric]
            self._low[g.metric].append(g.lo if v is None else v)
            self._high[g.metric].append(g.hi if v is None else v)

    def _update(self) -> None:
        from ragmeter.stats.confseq import decide, wor_confidence_sequence

        share = 2.0 * self.spec.alpha / len(self._gates)  # each side of each sequence at alpha / k
        for g in self._gates:
            low, high = self._low[g.metric], self._high[g.metric]
            if not low or g.population == 0:
                continue
            bounds = (g.lo, g.hi)
            lower = wor_confidence_sequence(low, g.population, alpha=share, bounds=bounds)[0][-1]
            upper = wor_confidence_sequence(high, g.population, alpha=share, bounds=bounds)[1][-1]
            self.bounds[g.metric] = (float(lower), float(upper))
            settled, passes = decide(lower, upper, g.threshold, g.higher)
            self.decisions[g.metric] = bool(passes) if bool(settled) else None

    def report(self, n_evaluated: int, usage: Mapping[str, Any] | None) -> dict[str, Any]:
        """What is stored with the run (summary["sequential"]): the decision per gate with its interval,
        the queries used, and the LLM calls and cost saved by stopping (an estimate: the mean per evaluated
        query times the queries not evaluated)."""
        n = len(self.queries)
        stopped = self.settled and n_evaluated < n
        gates = {
            g.metric: {
                "threshold": g.threshold,
                "higher_is_better": g.higher,
                "decision": _word(self.decisions.get(g.metric)),
                "interval": list(self.bounds[g.metric]) if g.metric in self.bounds else None,
            }
            for g in self._gates
        }
        out: dict[str, Any] = {
            "stopped_early": stopped,
            "decision": _word(self.passed),
            "alpha": self.spec.alpha,
            "order_seed": self.spec.seed,
            "queries_used": self.used,
            "queries_evaluated": n_evaluated,
            "queries_total": n,
            "gates": gates,
        }
        if stopped:
            out["saved"] = _saved(usage, n_evaluated, n - n_evaluated)
        return out


def _word(decision: bool | None) -> str:
    return "undecided" if decision is None else "pass" if decision else "fail"


def _saved(usage: Mapping[str, Any] | None, evaluated: int, unused: int) -> dict[str, Any]:
    """An estimate of the LLM calls and cost that the queries not evaluated would have taken."""
    judge = dict((usage or {}).get("judge") or {})
    total = dict((usage or {}).get("total") or {})
    per = 1.0 / max(1, evaluated)

    def scaled(value: Any) -> float | None:
        return None if value is None else round(float(value) * per * unused, 6)

    return {
        "queries_not_evaluated": unused,
        "judge_calls": scaled(judge.get("calls", 0)),
        "judge_cost_usd": scaled(judge.get("cost_usd", 0.0)),
        "total_cost_usd": scaled(total.get("cost_usd", 0.0)),
        "method": "mean per evaluated query x queries not evaluated",
    }


def gate_for_run(
    config: EvalConfig,
    queries: Sequence[EvalQuery],
    done: Mapping[str, QueryEvalResult],
    earlier: Mapping[str, Any] | None,
) -> SequentialGate | None:
    """The gate of a sequential run, fed the results already stored (a resumed run). None when the run
    is not sequential, or when it is a stopped run being resumed: that one goes on to the full run."""
    spec = sequential_spec(config)
    once_stopped = (earlier or {}).get("stopped_early") or (earlier or {}).get("resumed_after_stop")
    if spec is None or once_stopped:  # a run that stopped once goes on to (or stays) the full run
        return None
    gate = SequentialGate(spec, queries, config.relevance_level)
    for i in gate.order:
        if queries[i].query_id in done:
            gate.observe(done[queries[i].query_id])
    return gate


def sequential_block(
    gate: SequentialGate | None,
    earlier: Mapping[str, Any] | None,
    n_evaluated: int,
    usage: Mapping[str, Any] | None,
) -> dict[str, Any] | None:
    """summary["sequential"] of a finished run: the gate's report, or, for a stopped run resumed to the
    full run, the stop it no longer is (its gates are then the ordinary ones of the full run)."""
    if gate is not None:
        return gate.report(n_evaluated, usage)
    if earlier and earlier.get("stopped_early"):
        return {"stopped_early": False, "resumed_after_stop": dict(earlier)}
    return dict(earlier) if earlier else None


def stopped_gates_short(block: Mapping[str, Any] | None) -> list[str] | None:
    """For a run that stopped early: a line per gate it decided to fail (the exit code follows them, not
    the means of the queries it evaluated). None for any other run (its gates are its means)."""
    if not block or not block.get("stopped_early"):
        return None
    out = []
    for metric, gate in (block.get("gates") or {}).items():
        if gate.get("decision") == "fail":
            lo, hi = gate.get("interval") or (None, None)
            op = "<" if gate.get("higher_is_better", True) else ">"
            out.append(
                f"{metric}: the mean over all {block.get('queries_total')} queries is {op} "
                f"{gate.get('threshold'):g} (sequential gate, interval [{lo:.4f}, {hi:.4f}] after "
                f"{block.get('queries_used')} queries, alpha {block.get('alpha')})"
            )
    return out


def describe_sequential(block: Mapping[str, Any] | None) -> list[str]:
    """The sequential block of a run in words, for `ragmeter run` and `runs show`."""
    if not block:
        return []
    earlier = block.get("resumed_after_stop")
    if earlier:
        return [
            f"sequential: stopped early at {earlier.get('queries_evaluated')} of {earlier.get('queries_total')} "
            f"queries ({earlier.get('decision')}), then resumed to the full run; the gates are the full run's"
        ]
    used, total = block.get("queries_used"), block.get("queries_total")
    head = "stopped early" if block.get("stopped_early") else "not stopped early"
    lines = [
        f"sequential gate: {block.get('decision')} ({head}; decided on the first {used} of {total} queries "
        f"in seeded order {block.get('order_seed')}, {block.get('queries_evaluated')} evaluated, "
        f"alpha {block.get('alpha')})"
    ]
    for metric, gate in (block.get("gates") or {}).items():
        interval = gate.get("interval")
        shown = "-" if not interval else f"[{interval[0]:.4f}, {interval[1]:.4f}]"
        op = ">=" if gate.get("higher_is_better", True) else "<="
        lines.append(f"  {metric} {op} {gate.get('threshold'):g}: {gate.get('decision')}, interval {shown}")
    saved = block.get("saved")
    if saved:
        cost = saved.get("total_cost_usd")
        lines.append(
            f"  saved (estimate, {saved.get('method')}): {saved.get('queries_not_evaluated')} queries, "
            f"{saved.get('judge_calls') or 0:.0f} judge calls" + ("" if cost is None else f", ${cost:.4f}")
        )
    return lines
