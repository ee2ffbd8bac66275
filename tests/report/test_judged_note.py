"""judged@10 beside nDCG@10 in the HTML report and in `runs show` (print_run) when it is below 0.9."""

from __future__ import annotations

import pytest

from ragmeter.models import MetricSummary
from ragmeter.report.html import render_html
from ragmeter.report.selection import judged_note


@pytest.fixture
def with_judged(make_run):
    return lambda value: _with_judged(make_run, value)


def _with_judged(make_run, value: float | None):
    run = make_run("a", 1)
    if value is not None:
        run.aggregate["judged@10"] = MetricSummary(mean=value, std=0.1, n=12)
    return run


def test_note_only_below_point_nine(with_judged) -> None:
    _with_judged = with_judged
    low = judged_note(_with_judged(0.42))
    assert low is not None and "judged@10 = 0.4200" in low and "ndcg@10" in low and "non-relevant" in low
    assert judged_note(_with_judged(0.9)) is None
    assert judged_note(_with_judged(None)) is None


def test_html_report_shows_it(with_judged) -> None:
    _with_judged = with_judged
    html = render_html([_with_judged(0.3)], plots=False)
    assert 'class="small judged"' in html and "judged@10 = 0.3000" in html
    assert 'class="small judged"' not in render_html([_with_judged(0.95)], plots=False)


def test_runs_show_prints_it(capsys, with_judged) -> None:
    _with_judged = with_judged
    from ragmeter.cli.options import print_run

    print_run(_with_judged(0.5))
    out = capsys.readouterr().out
    assert "judged@10 = 0.5000" in out
    print_run(_with_judged(0.99))
    assert "judged@10 = 0.99" not in capsys.readouterr().out.split("┘")[-1]


def test_the_note_is_one_quiet_line_that_says_what_judged_measures(capsys, with_judged) -> None:
    """Relevant-only qrels make judged@10 low on nearly every run: the line informs, it does not alarm."""
    from ragmeter.cli.options import print_run

    note = judged_note(with_judged(0.1))
    assert note is not None and "\n" not in note
    assert "share of the top 10" in note and "bpref" in note and "ragmeter eval --condensed" in note
    assert "understate" not in note and "warning" not in note.lower()
    print_run(with_judged(0.1))
    lines = [line for line in capsys.readouterr().out.splitlines() if "judged@10 = 0.1000" in line]
    assert len(lines) == 1 and lines[0].startswith("note: ") and lines[0].rstrip().endswith("--condensed`"), (
        lines
    )
