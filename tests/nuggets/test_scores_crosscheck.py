"""nugget_* scores against castorini nuggetizer 0.0.5's own `calculate_nugget_scores` on 1,000 random
assignment tables. nuggetizer is a test-only `pip install --no-deps nuggetizer==0.0.5` (the Makefile's setup
does it); its core.metrics module imports nothing outside the standard library."""

from __future__ import annotations

import random

import pytest

from ragmeter.nuggets.scores import NO_NUGGETS, NO_VITAL, SCORES, all_scores, nuggetizer_score

FIELDS = {name: field for name, (field, _) in SCORES.items() if field}


def _table(rng: random.Random) -> list[dict[str, str]]:
    n = rng.choice([0, 1, 2, 3, 5, 10, 17, 30, rng.randint(0, 40)])
    vital_share = rng.choice([0.0, 0.3, 0.5, 1.0, rng.random()])
    return [
        {
            "text": f"nugget {i}",
            "importance": "vital" if rng.random() < vital_share else "okay",
            "assignment": rng.choice(["support", "partial_support", "not_support"]),
        }
        for i in range(n)
    ]


def test_equal_to_nuggetizer_on_1000_random_tables() -> None:
    metrics = pytest.importorskip(
        "nuggetizer.core.metrics", reason="pip install --no-deps nuggetizer==0.0.5 (make setup does)"
    )
    rng = random.Random(20240)
    nulls = compared = 0
    for i in range(1000):
        table = _table(rng)
        theirs = metrics.calculate_nugget_scores(f"q{i}", table)
        ours = all_scores([(n["importance"], n["assignment"]) for n in table])
        has_vital = any(n["importance"] == "vital" for n in table)
        for name, field in FIELDS.items():
            expected = getattr(theirs, field)
            got = ours[name]
            empty = not table or ("vital" in field and not has_vital)
            if empty:  # the documented difference: nuggetizer's 0.0 for nothing to divide is our null
                assert expected == 0.0 and got.value is None, (i, name)
                assert got.reason == (NO_VITAL if "vital" in field else NO_NUGGETS)
                nulls += 1
            else:
                assert got.value == expected, (i, name, table)  # exactly: the same sums in the same order
                compared += 1
    assert compared > 3000 and nulls > 100  # both branches were exercised


def test_weighted_by_hand() -> None:
    rows = [("vital", "support"), ("vital", "partial_support"), ("okay", "support"), ("okay", "not_support")]
    # weights 1, 1, 0.5, 0.5 (sum 3); credit 1, 0.5, 1, 0 -> 1 + 0.5 + 0.5 = 2.0; strict: 1 + 0 + 0.5 = 1.5
    assert nuggetizer_score("nugget_weighted", rows).value == pytest.approx(2.0 / 3.0)
    assert nuggetizer_score("nugget_weighted_strict", rows).value == pytest.approx(1.5 / 3.0)
    assert nuggetizer_score("nugget_vital", rows).value == pytest.approx(0.75)
    assert nuggetizer_score("nugget_all_strict", rows).value == pytest.approx(0.5)
    only_okay = [("okay", "support")]
    assert nuggetizer_score("nugget_weighted", only_okay).value == 1.0
    assert nuggetizer_score("nugget_vital", only_okay).value is None
    assert nuggetizer_score("nugget_weighted", []).reason == NO_NUGGETS


def test_docs_worked_example_runs() -> None:
    """docs/nuggets.md's worked example, executed as written."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "nuggets.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, "docs/nuggets.md", "exec"), {})
