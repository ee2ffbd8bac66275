"""The registry collects each family's records from beside its code, loads the lexical, semantic and judge
families only when asked, and the metric plan, headline picks and the demo's choices are read from its
records (no list of metric names of their own)."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import ragmeter.metrics as rm
from ragmeter.cli import cli
from ragmeter.metrics import registry
from ragmeter.score.plan import default_retrieval, judge_names, plan_metrics

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"


@pytest.fixture
def restored() -> Iterator[None]:
    """Put back every record a test replaced or added."""
    registry.load_families()  # loaded before the copy, or the put-back would leave the families out
    specs, aliases = dict(registry._SPECS), dict(registry._ALIASES)
    yield
    registry._SPECS.clear()
    registry._SPECS.update(specs)
    registry._ALIASES.clear()
    registry._ALIASES.update(aliases)


def _listed() -> dict[str, dict[str, object]]:
    result = CliRunner().invoke(cli, ["metrics", "list", "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return {row["name"]: row for row in json.loads(result.stdout)}


@pytest.mark.parametrize(
    ("module", "family", "code_module"),
    [
        ("ragmeter.judges.specs", "judge", ("ragmeter.judges.", "ragmeter.score.runlevel:total_scores")),
        ("ragmeter.text.specs", "lexical", ("ragmeter.text.metrics:",)),
        ("ragmeter.semantic.specs", "semantic", ("ragmeter.semantic.similarity:",)),
    ],
)
def test_records_declared_beside_their_code_are_listed(
    module: str, family: str, code_module: tuple[str, ...]
) -> None:
    import importlib

    declared = importlib.import_module(module).SPECS
    assert declared and {s.family for s in declared} <= {family}
    listed = _listed()
    for spec in declared:
        assert listed[spec.name] == spec.to_dict(), spec.name  # the listed record is the one declared there
        assert spec.computed_by.startswith(code_module), spec.computed_by  # computed beside it
    assert module in registry.FAMILY_MODULES


def test_family_modules_are_light() -> None:
    """A family's record module imports the record type (and the judges' prompt texts), nothing heavier."""
    allowed = {"__future__", "typing", "ragmeter.metrics.spec", "ragmeter.judges"}
    for module in registry.FAMILY_MODULES:
        path = SRC / (module.replace(".", "/") + ".py")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert imported <= allowed, (module, imported - allowed)


_PROBE = """
import json, sys
from ragmeter.cli import cli
from ragmeter.metrics import registry
try:
    cli.main(args=sys.argv[1:], prog_name="ragmeter", standalone_mode=False)
finally:
    loaded = sorted(m for m in sys.modules if m.startswith("ragmeter."))
    print(json.dumps({"modules": loaded, "families": registry.loaded_families()}))
"""


def _probe(*args: str) -> dict[str, list[str]]:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    last = proc.stdout.strip().splitlines()[-1]
    result: dict[str, list[str]] = json.loads(last)
    return result


def test_eval_loads_no_judge_text_or_semantic_family(tmp_path: Path) -> None:
    qrels, run = tmp_path / "q.qrels", tmp_path / "r.run"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n")
    run.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\nq2 Q0 d4 1 1.0 t\n")
    seen = _probe("eval", str(qrels), str(run), "-m", "ndcg@10,recall@5", "--fail-under", "ndcg@10=0.1")
    modules = seen["modules"]
    assert "ragmeter.metrics.registry" in modules  # the gate asked the registry
    assert seen["families"] == []
    for package in ("ragmeter.judges", "ragmeter.text", "ragmeter.semantic", "ragmeter.llm"):
        assert not [m for m in modules if m == package or m.startswith(package + ".")], package


def _python(probe: str) -> Any:
    """Run `probe` in a fresh interpreter with only our source on the path; its JSON line, parsed."""
    proc = subprocess.run(
        [sys.executable, "-c", probe],
        env={"PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_asking_for_a_lexical_or_judge_name_loads_the_families() -> None:
    seen = _probe("metrics", "list", "--family", "retrieval", "--format", "json")
    assert seen["families"] == list(registry.FAMILY_MODULES)  # the whole list was asked for
    probe = (
        "import sys, json\nimport ragmeter.metrics as rm\nfrom ragmeter.metrics import registry\n"
        "before = registry.loaded_families()\nspec = rm.get('em')\n"
        "print(json.dumps([before, registry.loaded_families(), spec.name, 'ragmeter.ir' in sys.modules]))"
    )
    before, after, name, ir_loaded = _python(probe)
    assert before == [] and after == list(registry.FAMILY_MODULES) and name == "exact_match"
    assert not ir_loaded  # a lexical name is found among the records, not by the IR parser


def test_retrieval_names_load_no_family_in_a_fresh_process() -> None:
    probe = (
        "import json, sys\nimport ragmeter.metrics as rm\nfrom ragmeter.metrics import registry\n"
        "names = [rm.get(n).name for n in ('ndcg@10', 'P_5', 'ndcg_cut_10', 'success@1', 'recip_rank', 'map')]\n"
        "print(json.dumps([names, registry.loaded_families(), 'ragmeter.judges' in sys.modules]))"
    )
    names, families, judges_loaded = _python(probe)
    assert names == ["ndcg@10", "precision@5", "ndcg@10", "hit@1", "mrr", "map"]
    assert families == [] and not judges_loaded


def test_no_record_name_is_also_an_ir_measure_name() -> None:
    """lookup may ask the IR parser or the family records first: a name must mean one thing."""
    from ragmeter.errors import InputError
    from ragmeter.ir.measures import parse_measure

    both = []
    for spec in rm.specs():
        if spec.family == "retrieval":
            continue
        for name in (spec.name, *spec.aliases):
            try:
                parse_measure(name)
            except InputError:
                continue
            both.append(name)
    assert not both


def test_a_user_metric_cannot_take_a_lazy_builtin_name() -> None:
    from ragmeter.errors import InputError

    with pytest.raises(InputError, match="already registered"):
        rm.register("rouge_l", lambda i: 0.0)


def test_a_user_headline_metric_is_a_headline_pick(restored: None) -> None:
    rm.register("answer_words_h", lambda i: float(len((i.answer or "").split())), range=(0, None), headline=1)
    names = ["recall@5", "recall@10", "ndcg@10", "token_f1", "answer_words_h", "exact_match"]
    assert rm.headline(names) == ["answer_words_h", "ndcg@10", "recall@5", "token_f1"]  # ties: name order
    rm.unregister("answer_words_h")
    assert rm.headline(names) == ["ndcg@10", "recall@5", "token_f1"]


def test_runs_list_headline_follows_the_registry(restored: None) -> None:
    from ragmeter.cli.runs import _headline
    from ragmeter.models import EvalConfig, EvalRunResult, MetricSummary

    agg = {n: MetricSummary(mean=v, std=None, n=3) for n, v in (("ndcg@10", 0.5), ("a_words_h2", 7.0))}
    run = EvalRunResult(run_id="r1", config=EvalConfig(dataset="d"), aggregate=agg, n_queries=3)
    assert _headline(run).startswith("ndcg@10")
    rm.register("a_words_h2", lambda i: 1.0, range=(0, None), headline=1)  # rank 1 ties ndcg@10: by name
    assert _headline(run).startswith("a_words_h2")


def test_the_plan_defaults_are_the_registry_default_records(restored: None) -> None:
    assert default_retrieval([5, 10]) == [
        "recall@5", "recall@10", "precision@5", "precision@10", "ndcg@5", "ndcg@10", "hit@5", "hit@10", "mrr", "map",
    ]  # fmt: skip
    # Mark bpref default and map not: the plan follows.
    registry._add(replace(registry.lookup_template("bpref"), default=True), replace=True)
    registry._add(replace(registry.lookup_template("map"), default=False), replace=True)
    plan = plan_metrics(None, [10])
    assert "bpref" in plan.retrieval and "map" not in plan.retrieval
    # A judge made opt-in leaves the default judges; the retrieval-only judges are those reading no answer.
    registry._add(replace(registry.lookup_template("coherence"), default=False), replace=True)
    assert "coherence" not in judge_names() and "groundedness" in judge_names()
    assert judge_names(evaluate_generation=False) == ["retrieval_grade"]
    assert plan_metrics(None, [10], judged=True, evaluate_generation=False).judges == ("retrieval_grade",)


def test_naming_a_summary_judge_metric_plans_the_judges_its_inputs_need() -> None:
    plan = plan_metrics(["pass_rate_8"], [10], judged=True)
    assert plan.judges == ("retrieval_grade",) and plan.total_score  # pass rate <- total_score <- grade
    plan = plan_metrics(["avg_llm_grade", "factuality"], [10], judged=True)
    assert plan.judges == ("factuality", "retrieval_grade")
    assert not plan_metrics(["factuality"], [10], judged=True).total_score


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("cross_encoder_similarity", "is not computed by runs; use sbert_similarity"),
        ("kappa", "is not computed per run from outputs (agreement); leave it out"),
        ("latency_retrieve_ms", "is not computed per run from outputs (latency); leave it out"),
    ],
)
def test_records_a_run_cannot_compute_are_refused_by_name(name: str, message: str) -> None:
    from ragmeter.errors import InputError

    assert rm.get(name).plannable is False
    with pytest.raises(InputError, match=re.escape(message)):
        plan_metrics([name], [10])


def test_demo_choices_come_from_the_registry(restored: None) -> None:
    from ragmeter.cli.demo import _modes_table
    from ragmeter.models import EvalConfig, EvalRunResult, MetricSummary

    assert rm.names("lexical", default=True) == [s.name for s in rm.specs() if s.family == "lexical"]
    assert rm.names("judge", "run") == ["total_score"] and "sbert_similarity" in rm.names(plannable=True)
    names = [
        "recall@1",
        "recall@5",
        "recall@10",
        "ndcg@10",
        "mrr",
        "map",
        "token_f1",
        "rouge_l",
        "exact_match",
    ]
    agg = {n: MetricSummary(mean=0.5, std=None, n=1) for n in names}
    run = EvalRunResult(run_id="r", config=EvalConfig(dataset="demo"), aggregate=agg, n_queries=1)
    rows = [c for c in _modes_table({"hybrid": run}).columns[0]._cells]
    assert rows == ["ndcg@10", "recall@5", "mrr", "token_f1", "rouge_l"]
    registry._add(replace(registry.lookup_template("map"), headline=4), replace=True)
    rows = [c for c in _modes_table({"hybrid": run}).columns[0]._cells]
    assert rows == ["ndcg@10", "recall@5", "mrr", "map", "token_f1", "rouge_l"]


def test_deprecated_names_still_answer_with_a_warning() -> None:
    import importlib

    for module, name, instead in (
        ("ragmeter.score.plan", "DEFAULT_RETRIEVAL", "default_retrieval"),
        ("ragmeter.metrics.diagnosis", "RC_SPECS", "ragmeter.judges.specs.RC_SPECS"),
        ("ragmeter.metrics.builtin", "HEADLINES", "ragmeter.metrics.specs()"),
        ("ragmeter.cli.demo", "HEADLINE", "ragmeter.metrics.headline"),
    ):
        with pytest.warns(DeprecationWarning, match=instead.replace("(", r"\(").replace(")", r"\)")):
            value = getattr(importlib.import_module(module), name)
        assert value
    with pytest.warns(DeprecationWarning):
        assert importlib.import_module("ragmeter.score.plan").DEFAULT_RETRIEVAL == (
            "recall",
            "precision",
            "ndcg",
            "hit",
        )
    with pytest.warns(DeprecationWarning):
        headline = importlib.import_module("ragmeter.cli.demo").HEADLINE
    assert headline == ("ndcg@10", "recall@5", "mrr", "token_f1", "rouge_l", "sbert_similarity", "answer_correctness", "retrieval_grade")  # fmt: skip
