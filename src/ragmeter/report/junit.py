"""JUnit XML from quality gates, so CI systems (GitHub, GitLab, Jenkins, Azure) show them as tests.

One test case per gated metric (a `<failure>` carrying value and threshold when the mean falls short),
and, when asked, one per query that fell short of a gate (and one per query whose system call failed):
a `<failure>` (`<error>`) only when that gate (any gate) failed, so the XML never fails while the exit
code passes; otherwise a passing case saying what fell short. A gate fails when the mean is below its threshold (above it, for a metric where lower is
better, as the metric registry says) or has no valid value: the rule of `--fail-under`, so the XML
agrees with the exit code.

Plain data in (means, per-query values), XML out: `gates_of_run` / `gates_of_ir` adapt a run or an
`ragmeter.evaluate` result, `junit_xml` renders, `write_junit_xml` writes.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragmeter.ir.evaluate import IREvaluation
    from ragmeter.models import EvalRunResult

__all__ = [
    "Gate",
    "GateReport",
    "QueryCheck",
    "falls_short",
    "gates_of_ir",
    "gates_of_run",
    "junit_xml",
    "write_junit_xml",
]

# Characters XML 1.0 cannot carry at all (an error message may hold any byte a system returned).
_ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: str) -> str:
    return _ILLEGAL_XML.sub("\N{REPLACEMENT CHARACTER}", text)


def _num(value: float | None) -> str:
    return "null" if value is None else f"{value:.4f}"


def falls_short(value: float | None, threshold: float, higher_is_better: bool = True) -> bool:
    """The gate rule (`ragmeter.metrics.gate.falls_short`)."""
    from ragmeter.metrics.gate import falls_short as rule

    return rule(value, threshold, higher_is_better)


def _op(short: bool, higher_is_better: bool) -> str:
    if higher_is_better:
        return "<" if short else ">="
    return ">" if short else "<="


@dataclass(frozen=True)
class Gate:
    """One `--fail-under METRIC=VALUE` check: passes when the mean is at least the threshold (at most,
    when lower is better)."""

    metric: str
    threshold: float
    value: float | None  # the mean over valid values; None when there was none
    n: int | None = None  # valid values the mean is over
    n_null: int = 0
    higher_is_better: bool = True
    # A run that stopped early (--sequential): its gate's decision over all the queries, which the mean
    # of the queries it evaluated does not give.
    decided: bool | None = None
    # A flaky gate (run --repeat N: its repeat means fall on both sides of the threshold) says why here; it
    # is a `<skipped>` case, left out of the verdict, unless `flaky_fails` (`--flaky fail`): a failure.
    flaky: str | None = None
    flaky_fails: bool = False

    @property
    def skipped(self) -> bool:
        return self.flaky is not None and not self.flaky_fails

    @property
    def passed(self) -> bool:
        if self.flaky is not None:
            return not self.flaky_fails
        if self.decided is not None:
            return self.decided
        return not falls_short(self.value, self.threshold, self.higher_is_better)

    def message(self) -> str:
        if self.flaky is not None:
            return self.flaky
        op = _op(not self.passed, self.higher_is_better)
        text = f"{self.metric} = {_num(self.value)} {op} {self.threshold:g}"
        return text if self.decided is None else f"{text} (sequential decision over all queries)"


@dataclass(frozen=True)
class QueryCheck:
    """A query that fell short of a gate (value below the threshold or null), or whose system call failed."""

    query_id: str
    metric: str | None  # None: the query failed as a whole (`error` says why)
    value: float | None = None
    threshold: float | None = None
    error: str | None = None
    higher_is_better: bool = True

    def message(self) -> str:
        if self.metric is None:
            return f"query {self.query_id} failed: {self.error or 'unknown error'}"
        text = f"{self.metric} = {_num(self.value)} {_op(True, self.higher_is_better)} {self.threshold:g}"
        return f"{text} ({self.error})" if self.error else text


@dataclass
class GateReport:
    """The gates of one evaluation and the queries that fell short, with what identifies the run."""

    gates: list[Gate]
    queries: list[QueryCheck] = field(default_factory=list)
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return all(g.passed for g in self.gates)  # a skipped (flaky) gate counts as passed: it is not judged


def _short_queries(
    per_query: Iterable[tuple[str, Mapping[str, float | None], Mapping[str, str | None]]],
    thresholds: Mapping[str, float],
) -> list[QueryCheck]:
    from ragmeter.metrics import higher_is_better

    directions = {metric: higher_is_better(metric) for metric in thresholds}
    out: list[QueryCheck] = []
    for qid, values, errors in per_query:
        for metric, threshold in thresholds.items():
            if metric not in values:
                continue  # not scored for this query (e.g. no relevant doc): not a shortfall
            value, hib = values[metric], directions[metric]
            if falls_short(value, threshold, hib):
                out.append(QueryCheck(qid, metric, value, threshold, errors.get(metric), hib))
    return out


def gates_of_run(
    result: EvalRunResult, thresholds: Mapping[str, float], *, flaky_fails: bool = False
) -> GateReport:
    """Gates over a ragmeter run (`EvalRunResult`); thresholds name metrics of `result.aggregate`.

    A metric absent from the run is a gate with no value (it fails); the CLI rejects such names first.
    A flaky gate (`result.gates_across_repeats`) is skipped with the reason, or fails with `flaky_fails`.
    """
    from ragmeter.metrics import higher_is_better
    from ragmeter.score.flaky import flaky_line

    stopped = result.sequential.dump() if result.sequential and result.sequential.stopped_early else {}
    gates = []
    for metric, threshold in thresholds.items():
        s = result.aggregate.get(metric)
        mean, n, n_null = (s.mean, s.n, s.n_null) if s else (None, 0, 0)
        word = (stopped.get("gates") or {}).get(metric, {}).get("decision")
        decided = None if word not in ("pass", "fail") else word == "pass"
        across = result.gates_across_repeats.get(metric)
        flaky = flaky_line(metric, across) if across is not None and across.flaky else None
        hib = higher_is_better(metric)
        gates.append(Gate(metric, threshold, mean, n, n_null, hib, decided, flaky, flaky_fails))
    rows = [
        (q.query_id, {k: m.value for k, m in q.metrics.items()}, {k: m.error for k, m in q.metrics.items()})
        for q in result.per_query
        if q.status == "ok"
    ]
    queries = [QueryCheck(q.query_id, None, error=q.error) for q in result.per_query if q.status != "ok"]
    queries += _short_queries(rows, thresholds)
    props = {"run_id": result.run_id or "", "dataset": result.config.dataset, "system": result.config.system}
    return GateReport(gates, queries, {k: v for k, v in props.items() if v})


def gates_of_ir(result: IREvaluation, thresholds: Mapping[str, float]) -> GateReport:
    """Gates over an `ragmeter.evaluate(qrels, run)` result (`ragmeter eval`); measures are canonical."""
    from ragmeter.metrics import higher_is_better

    agg = result.aggregate
    gates = [Gate(m, t, agg.get(m), result.n_queries, 0, higher_is_better(m)) for m, t in thresholds.items()]
    no_errors: dict[str, str | None] = {}
    rows = [(qid, values, no_errors) for qid, values in result.per_query.items()]
    return GateReport(gates, _short_queries(rows, thresholds))


def _suite(parent: ET.Element, name: str, timestamp: str, properties: Mapping[str, str]) -> ET.Element:
    suite = ET.SubElement(parent, "testsuite", name=name, timestamp=timestamp, time="0.000")
    if properties:
        props = ET.SubElement(suite, "properties")
        for key, value in properties.items():
            ET.SubElement(props, "property", name=key, value=_clean(value))
    return suite


def _case(
    suite: ET.Element, classname: str, name: str, text: str, problem: tuple[str, str, str] | None = None
) -> None:
    """A test case; `problem` = (element, type, message) makes it a failure or error carrying `text`."""
    case = ET.SubElement(suite, "testcase", classname=classname, name=_clean(name), time="0.000")
    if problem is None:
        ET.SubElement(case, "system-out").text = _clean(text)
    else:
        kind, type_, message = problem
        ET.SubElement(case, kind, type=type_, message=_clean(message)).text = _clean(text)


def _count(suite: ET.Element) -> tuple[int, int]:
    cases = suite.findall("testcase")
    failures = sum(1 for c in cases if c.find("failure") is not None)
    errors = sum(1 for c in cases if c.find("error") is not None)
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
    return failures, errors


def _gate_detail(gate: Gate) -> str:
    counted = f" over {gate.n} values" if gate.n is not None else ""
    nulls = f" ({gate.n_null} null values left out)" if gate.n_null else ""
    if gate.value is None:
        return f"{gate.metric} has no valid value{nulls}; threshold {gate.threshold:g}"
    return f"{gate.metric}: mean {gate.value!r}{counted}{nulls}; threshold {gate.threshold:g}"


def _query_outcome(
    q: QueryCheck, failed_gates: set[str], passed: bool
) -> tuple[str, tuple[str, str, str] | None]:
    """(text, problem) of a query's test case. It fails only where the exit code fails too: a shortfall
    is a `<failure>` when its metric's gate failed, a failed query an `<error>` when any gate failed;
    otherwise the case passes and says what fell short in its output."""
    if q.metric is not None:
        if q.metric in failed_gates:
            return q.message(), ("failure", "threshold", q.message())
        return f"{q.message()}: below the threshold, but the gate on the mean passed", None
    if not passed:
        return q.message(), ("error", "query-failed", q.message())
    return f"{q.message()} (left out of the means; every gate passed)", None


def junit_xml(
    report: GateReport,
    *,
    name: str = "ragmeter",
    per_query: bool = False,
    timestamp: datetime | None = None,
) -> str:
    """The JUnit XML document (`<testsuites>` root) for `report`; queries go in a second suite if asked."""
    stamp = (timestamp or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S")
    root = ET.Element("testsuites", name=name, time="0.000")
    suite = _suite(root, f"{name}.gates", stamp, report.properties)
    for gate in report.gates:
        problem = None if gate.passed else ("failure", "threshold", gate.message())
        if gate.skipped:
            problem = ("skipped", "flaky", gate.message())
        elif gate.flaky is not None:
            problem = ("failure", "flaky", gate.message())
        _case(suite, f"{name}.gates", gate.metric, _gate_detail(gate), problem)
    suites = [suite]
    if per_query:
        qsuite = _suite(root, f"{name}.queries", stamp, report.properties)
        failed_gates = {g.metric for g in report.gates if not g.passed}
        for q in report.queries:
            classname = f"{name}.queries" + (f".{q.metric}" if q.metric else "")
            _case(qsuite, classname, q.query_id, *_query_outcome(q, failed_gates, report.passed))
        suites.append(qsuite)
    totals = [_count(s) for s in suites]
    root.set("tests", str(sum(int(s.get("tests", "0")) for s in suites)))
    root.set("failures", str(sum(f for f, _ in totals)))
    root.set("errors", str(sum(e for _, e in totals)))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit_xml(
    path: str | Path, report: GateReport, *, name: str = "ragmeter", per_query: bool = False
) -> Path:
    """Write `junit_xml(report)` to `path` (parent folders created); returns the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(junit_xml(report, name=name, per_query=per_query), encoding="utf-8")
    return out
