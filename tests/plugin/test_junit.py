"""JUnit XML from --fail-under gates: the library (report/junit.py) and `ragmeter run|eval --junit-xml`,
read back with junitparser and checked against the structure CI systems read (Surefire/Jenkins schema)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner
from plugin_expected import MRR, RECALL_1

from ragmeter.cli import cli
from ragmeter.models import EvalConfig, EvalRunResult, MetricResult, MetricSummary, QueryEvalResult
from ragmeter.report.junit import Gate, gates_of_run, junit_xml, write_junit_xml

junitparser = pytest.importorskip("junitparser")

# What Jenkins' and GitLab's JUnit readers accept (the Surefire XSD): a testcase holds only these
# elements; a suite's time is digits with at most three decimals; name/tests/failures/errors required.
CASE_CHILDREN = {"failure", "error", "skipped", "system-out", "system-err"}
SUREFIRE_TIME = re.compile(r"\d+(\.\d{1,3})?")


def check_ci_structure(text: str) -> ET.Element:
    """Assert the document has the shape CI systems read; returns its root."""
    root = ET.fromstring(text.encode())
    assert root.tag == "testsuites"
    total = {"tests": 0, "failures": 0, "errors": 0}
    for suite in root:
        assert suite.tag == "testsuite"
        for attr in ("name", "tests", "failures", "errors"):
            assert suite.get(attr) is not None, attr
        assert SUREFIRE_TIME.fullmatch(suite.get("time", "0"))
        assert set(child.tag for child in suite) <= {"properties", "testcase", "system-out", "system-err"}
        for prop in suite.iter("property"):
            assert prop.get("name") and prop.get("value") is not None
        cases = suite.findall("testcase")
        failures = sum(c.find("failure") is not None for c in cases)
        errors = sum(c.find("error") is not None for c in cases)
        assert (
            int(suite.get("tests", "")),
            int(suite.get("failures", "")),
            int(suite.get("errors", "")),
        ) == (
            len(cases),
            failures,
            errors,
        )
        for case in cases:
            assert case.get("name") and case.get("classname")
            assert SUREFIRE_TIME.fullmatch(case.get("time", "0"))
            assert {child.tag for child in case} <= CASE_CHILDREN
            for problem in [*case.findall("failure"), *case.findall("error")]:
                assert problem.get("message") and problem.get("type")
        total["tests"] += len(cases)
        total["failures"] += failures
        total["errors"] += errors
    assert {k: int(root.get(k, "-1")) for k in total} == total
    return root


def _cases(path: Path) -> dict[tuple[str, str], object]:
    """(classname, name) -> junitparser TestCase, from the file as a CI system would read it."""
    doc = junitparser.JUnitXml.fromfile(str(path))
    return {(case.classname, case.name): case for suite in doc for case in suite}


def _run_result() -> EvalRunResult:
    def q(qid: str, rec: float | None, halluc: float | None, *, error: str | None = None) -> QueryEvalResult:
        return QueryEvalResult(
            query_id=qid,
            question=f"question {qid}",
            metrics={
                "recall@5": MetricResult(name="recall@5", value=rec),
                "hallucination_rate": MetricResult(name="hallucination_rate", value=halluc, error=error),
            },
        )

    per_query = [
        q("a", 1.0, 0.0),
        q("b", 0.0, 1.0),
        q("c", 1.0, None, error="judge timed out\x00 after 3 tries"),  # a NUL XML cannot carry
        QueryEvalResult(query_id="d", status="failed", error="ConnectionError: backend unreachable"),
    ]
    return EvalRunResult(
        run_id="r-1",
        config=EvalConfig(dataset="capitals", system="mod:fn"),
        per_query=per_query,
        aggregate={
            "recall@5": MetricSummary(mean=2 / 3, std=0.5, n=3),
            "hallucination_rate": MetricSummary(mean=0.5, std=0.7, n=2, n_null=1),
        },
    )


def test_gates_of_a_run_follow_each_metric_direction_and_report_queries(tmp_path: Path) -> None:
    report = gates_of_run(_run_result(), {"recall@5": 0.6, "hallucination_rate": 0.2, "mrr": 0.1})
    by_metric = {g.metric: g for g in report.gates}
    assert by_metric["recall@5"].passed  # 0.667 >= 0.6
    assert not by_metric["hallucination_rate"].passed  # lower is better: 0.5 > 0.2
    assert by_metric["hallucination_rate"].message() == "hallucination_rate = 0.5000 > 0.2"
    assert not by_metric["mrr"].passed and by_metric["mrr"].value is None  # not in the run: falls short
    assert not report.passed

    path = write_junit_xml(tmp_path / "deep" / "gates.xml", report, per_query=True)
    check_ci_structure(path.read_text(encoding="utf-8"))
    cases = _cases(path)
    assert cases[("ragmeter.gates", "recall@5")].is_passed
    failure = cases[("ragmeter.gates", "hallucination_rate")].result[0]
    assert isinstance(failure, junitparser.Failure)
    assert failure.message == "hallucination_rate = 0.5000 > 0.2" and failure.type == "threshold"
    assert "1 null values left out" in failure.text
    assert "no valid value" in cases[("ragmeter.gates", "mrr")].result[0].text

    # per query: b fell short on both metrics, c's null hallucination value, d's system failure
    assert set(cases) - {("ragmeter.gates", m) for m in ("recall@5", "hallucination_rate", "mrr")} == {
        ("ragmeter.queries.recall@5", "b"),
        ("ragmeter.queries.hallucination_rate", "b"),
        ("ragmeter.queries.hallucination_rate", "c"),
        ("ragmeter.queries", "d"),
    }
    error = cases[("ragmeter.queries", "d")].result[0]
    assert isinstance(error, junitparser.Error) and "backend unreachable" in error.message
    null = cases[("ragmeter.queries.hallucination_rate", "c")].result[0]
    assert null.message.startswith("hallucination_rate = null > 0.2 (judge timed out")
    assert "\x00" not in path.read_text(encoding="utf-8")
    props = {p.get("name"): p.get("value") for p in ET.parse(path).iter("property")}
    assert props == {"run_id": "r-1", "dataset": "capitals", "system": "mod:fn"}


def test_without_per_query_only_the_gates_are_cases() -> None:
    report = gates_of_run(_run_result(), {"recall@5": 0.9})
    root = check_ci_structure(junit_xml(report, name="nightly"))
    assert [s.get("name") for s in root] == ["nightly.gates"]
    assert (root.get("tests"), root.get("failures")) == ("1", "1")


def test_gate_passes_on_its_threshold() -> None:
    assert Gate("ndcg@10", 0.5, 0.5).passed and not Gate("ndcg@10", 0.5, 0.4999).passed
    assert Gate("hallucination_rate", 0.1, 0.1, higher_is_better=False).passed
    assert not Gate("ndcg@10", 0.0, None).passed


def test_eval_writes_junit_and_keeps_the_exit_code(project: Path) -> None:
    out = project / "reports" / "eval.xml"
    args = ["eval", str(project / "qrels.txt"), str(project / "run.txt"), "-m", "P@1"]
    args += ["--fail-under", "P@1=0.75", "--fail-under", "recip_rank=0.5", "--junit-xml", str(out)]
    result = CliRunner().invoke(cli, [*args, "--junit-per-query"])
    assert result.exit_code == 1, result.output
    check_ci_structure(out.read_text(encoding="utf-8"))
    cases = _cases(out)
    assert cases[("ragmeter.gates", "mrr")].is_passed  # recip_rank is mrr: 0.583 >= 0.5
    assert cases[("ragmeter.gates", "precision@1")].result[0].message == "precision@1 = 0.5000 < 0.75"
    assert {k for k in cases if k[0].startswith("ragmeter.queries")} == {
        ("ragmeter.queries.precision@1", "q3"),
        ("ragmeter.queries.precision@1", "q4"),
        ("ragmeter.queries.mrr", "q4"),  # q3's 1/3 < 0.5 as well
        ("ragmeter.queries.mrr", "q3"),
    }
    passing = CliRunner().invoke(cli, [*args[:5], "--fail-under", "P@1=0.5", "--junit-xml", str(out)])
    assert passing.exit_code == 0, passing.output
    doc = junitparser.JUnitXml.fromfile(str(out))
    assert (doc.tests, doc.failures, doc.errors) == (1, 0, 0)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--junit-per-query"], "--junit-per-query: needs --junit-xml PATH"),
        (["--junit-xml", "x.xml"], "--junit-xml: needs --fail-under"),
    ],
)
def test_junit_flags_without_what_they_need_are_input_errors(
    project: Path, extra: list[str], message: str
) -> None:
    for command in (
        ["eval", str(project / "qrels.txt"), str(project / "run.txt")],
        ["run", "--dataset", str(project / "capitals4.json"), "--system", "fixed_system:retrieve"],
    ):
        result = subprocess.run(
            [sys.executable, "-m", "ragmeter", *command, *extra],
            capture_output=True,
            text=True,
            cwd=project,
            env={**os.environ, "PYTHONPATH": str(project), "RAGMETER_DB": str(project / "x.db")},
            timeout=120,
        )
        assert result.returncode == 2
        assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
        assert "Traceback" not in result.stderr
    assert not (project / "x.xml").exists() and not (project / "x.db").exists()


def test_run_writes_junit_per_gated_metric_and_query(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    monkeypatch.setenv("RAGMETER_DB", str(project / "cli.db"))
    out = project / "junit.xml"
    args = ["run", "--dataset", "capitals4.json", "--system", "fixed_system:retrieve", "--no-generation"]
    args += ["--top-k", "1,3", "--no-progress", "--fail-under", "recall@1=0.75", "--fail-under", "mrr=0.5"]
    result = CliRunner().invoke(cli, [*args, "--junit-xml", str(out), "--junit-per-query"])
    assert result.exit_code == 1, result.output
    check_ci_structure(out.read_text(encoding="utf-8"))
    cases = _cases(out)
    recall = cases[("ragmeter.gates", "recall@1")].result[0]
    assert recall.message == f"recall@1 = {RECALL_1:.4f} < 0.75"
    assert f"mean {RECALL_1!r} over 4 values" in recall.text
    mrr = cases[("ragmeter.gates", "mrr")]
    assert mrr.is_passed and f"mean {MRR!r}" in (mrr.system_out or "")
    assert {k for k in cases if k[0] == "ragmeter.queries.recall@1"} == {
        ("ragmeter.queries.recall@1", "q3"),
        ("ragmeter.queries.recall@1", "q4"),
    }
    props = {p.get("name"): p.get("value") for p in ET.parse(out).iter("property")}
    assert props["run_id"] and props["dataset"] == "capitals4.json"


def test_eval_with_junit_imports_neither_torch_nor_sqlalchemy(project: Path) -> None:
    code = (
        "import sys\nfrom ragmeter.cli import main\n"
        "sys.argv = ['ragmeter', 'eval', 'qrels.txt', 'run.txt', '--fail-under', 'P@1=0.9', '--junit-xml', 'j.xml']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'sqlalchemy', 'mlflow'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=project, timeout=120
    )
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stderr
    assert (project / "j.xml").is_file()


def test_per_query_cases_fail_only_where_the_exit_code_fails(project: Path) -> None:
    # The gate on the mean passes (0.667 >= 0.6) though query b fell short and query d failed: exit 0,
    # so the XML holds no failure and no error; the shortfalls are listed as passing cases that say so.
    root = check_ci_structure(junit_xml(gates_of_run(_run_result(), {"recall@5": 0.6}), per_query=True))
    assert (root.get("failures"), root.get("errors")) == ("0", "0")
    outs = [c.findtext("system-out") or "" for c in root.iter("testcase")]
    assert any("recall@5 = 0.0000 < 0.6: below the threshold" in o for o in outs), outs
    assert any("query d failed" in o for o in outs), outs
    # From the CLI: eval with a passing gate and short queries exits 0 and writes no failing case.
    out = project / "agree.xml"
    args = ["eval", str(project / "qrels.txt"), str(project / "run.txt"), "-m", "P@1"]
    result = CliRunner().invoke(
        cli, [*args, "--fail-under", "P@1=0.5", "--junit-xml", str(out), "--junit-per-query"]
    )
    assert result.exit_code == 0, result.output
    doc = junitparser.JUnitXml.fromfile(str(out))
    assert doc.tests > 1 and (doc.failures, doc.errors) == (0, 0)
