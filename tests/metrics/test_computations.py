"""Every built-in metric that `ragmeter metrics list` shows names the code that computes it, and that code
exists: `MetricSpec.computation()` resolves to a callable (a function, or a Judge whose `run` grades)."""

from __future__ import annotations

import json

from click.testing import CliRunner

import ragmeter.metrics as rm
from ragmeter.cli import cli


def _listed() -> list[str]:
    result = CliRunner().invoke(cli, ["metrics", "list", "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    return [row["name"] for row in rows]


def test_every_listed_builtin_metric_has_a_reachable_computation() -> None:
    listed = _listed()
    assert len(listed) >= 40  # the retrieval, lexical, semantic, judge, latency and agreement families
    missing = []
    for name in listed:
        templates = {s.name: s for s in rm.specs()}
        spec = templates[name] if name in templates else rm.get(name)
        if spec.family == "custom":
            continue
        target = spec.computation()
        runs = callable(target) or callable(getattr(target, "run", None))
        if not runs:
            missing.append(f"{name}: {spec.computed_by or 'no computed_by'}")
    assert not missing, "built-in metrics without a computation:\n" + "\n".join(missing)


def test_judge_specs_name_their_judge_and_user_metrics_their_function() -> None:
    from ragmeter.judges import JUDGES

    for name, judge in JUDGES.items():
        if name in {s.name for s in rm.specs()}:
            assert rm.get(name).computation() is judge, name
    spec = rm.register("words_in_answer_t", lambda i: float(len((i.answer or "").split())), range=(0, None))
    try:
        assert spec.computation() is spec.compute and spec.to_dict()["computed_by"] == "user function"
    finally:
        rm.unregister("words_in_answer_t")
