"""The HTML report in a real browser: Debian's headless Chromium loads the file, dumps the DOM after the
page's scripts ran, and takes a screenshot. In CI (RAGMETER_CI=1) a missing Chromium fails the test."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from report_payloads import XSS

from ragmeter.models import EvalRunResult, MetricResult
from ragmeter.report.html import render_html

pytestmark = pytest.mark.browser
MakeRun = Callable[..., EvalRunResult]


def chromium_binary() -> str:
    for name in (os.environ.get("RAGMETER_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and (found := shutil.which(name)):
            return found
    message = "headless Chromium not found (Debian: apt-get install -y chromium)"
    if os.environ.get("RAGMETER_CI") == "1":
        pytest.fail(message)
    pytest.skip(message)


def chromium(page: Path, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / "profile"
    profile.mkdir(exist_ok=True)
    cmd = [
        chromium_binary(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        *extra,
        page.resolve().as_uri(),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def dump_dom(page: Path, tmp_path: Path) -> str:
    return chromium(page, tmp_path, "--dump-dom").stdout


def title_of(dom: str) -> str:
    m = re.search(r"<title>(.*?)</title>", dom, re.S)
    assert m is not None
    return m.group(1)


def test_chromium_runs_an_unescaped_script(tmp_path: Path) -> None:
    """The detector works: the same payload, not escaped, does run in this browser."""
    page = tmp_path / "raw.html"
    page.write_text(f"<!DOCTYPE html><html><head><title>raw</title></head><body>{XSS}</body></html>", "utf-8")
    dom = dump_dom(page, tmp_path)
    assert title_of(dom) == "PWNED"
    assert 'data-pwned="1"' in dom


@pytest.mark.parametrize("csp", [True, False], ids=["escaping+csp", "escaping-only"])
def test_report_in_browser_scripts_in_data_do_not_run(tmp_path: Path, make_run: MakeRun, csp: bool) -> None:
    runs = [make_run("bm25", 1, n=10, hostile=True), make_run("hybrid", 2, n=10, boost=0.1)]
    page = tmp_path / "report.html"
    page.write_text(render_html(runs, n_resamples=300, csp=csp), encoding="utf-8")
    dom = dump_dom(page, tmp_path)
    # The report's own script ran (JavaScript is on): it marked the sortable tables.
    # One table of changed queries, one significance table, two per-query tables.
    assert 'data-sortable-ready="4"' in dom
    # None of the planted scripts or handlers ran.
    title = title_of(dom)
    assert title not in ("PWNED", "PWNED2")
    assert title.startswith("ragmeter report: bm25&lt;script&gt;document.title=")  # the name, as text
    html_tag = re.search(r"<html[^>]*>", dom)
    assert html_tag is not None and "data-pwned" not in html_tag.group(0)
    assert len(re.findall(r"<script\b", dom)) == 1
    assert len(re.findall(r"<img\b[^>]*onerror", dom)) == 0
    # The payload is on the page as text.
    assert "&lt;script&gt;document.title=" in dom

    shot = tmp_path / "report.png"
    chromium(page, tmp_path, f"--screenshot={shot}", "--window-size=1280,1600", "--hide-scrollbars")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (1280, 1600)
    assert len(data) > 20_000  # a rendered page, not a blank canvas
    if os.environ.get("RAGMETER_SCREENSHOT_DIR"):
        shutil.copy(
            shot, Path(os.environ["RAGMETER_SCREENSHOT_DIR"]) / f"report-{'csp' if csp else 'nocsp'}.png"
        )


def test_sorting_in_browser(tmp_path: Path, make_run: MakeRun) -> None:
    """Click the mrr header of the first per-query table twice and record the row orders."""
    run = make_run("bm25", 1, n=9)
    html = render_html([run], plots=False, csp=False)
    probe = """<script>
(function () {
  var table = document.querySelectorAll("table.per-query")[0];
  var th = Array.prototype.filter.call(table.querySelectorAll("thead th"),
    function (h) { return h.textContent.trim() === "retrieval_grade"; })[0];
  function order() {
    return Array.prototype.map.call(table.tBodies[0].rows, function (r) { return r.cells[0].textContent; }).join(",");
  }
  th.click(); document.body.setAttribute("data-asc", order());
  th.click(); document.body.setAttribute("data-desc", order());
})();
</script></body>"""
    page = tmp_path / "sort.html"
    page.write_text(html.replace("</body>", probe), encoding="utf-8")
    dom = dump_dom(page, tmp_path)
    asc = re.search(r'data-asc="([^"]*)"', dom)
    desc = re.search(r'data-desc="([^"]*)"', dom)
    assert asc is not None and desc is not None
    grades = {q.query_id: q.metrics["retrieval_grade"].value for q in run.per_query}
    asc_ids, desc_ids = asc.group(1).split(","), desc.group(1).split(",")
    assert sorted(asc_ids) == sorted(grades)
    valued = [g for g in (grades[q] for q in asc_ids) if g is not None]
    assert valued == sorted(valued)
    assert grades[asc_ids[-1]] is None  # the null grade sorts last...
    assert grades[desc_ids[-1]] is None  # ...both ways
    valued_desc = [g for g in (grades[q] for q in desc_ids) if g is not None]
    assert valued_desc == sorted(valued_desc, reverse=True)


def wide_runs(make_run: MakeRun) -> list[EvalRunResult]:
    """Three runs with long unbroken ids, questions and run names, and a metric that never varies."""
    runs = []
    for i, (name, boost) in enumerate((("bm25", 0.0), ("hybrid", 0.2), ("dense", 0.1))):
        run = make_run(name, i + 1, n=14, boost=boost)
        per_query = []
        for j, q in enumerate(run.per_query):
            metrics = {**q.metrics, "support_coverage": MetricResult(name="support_coverage", value=1.0)}
            per_query.append(
                q.model_copy(
                    update={
                        "query_id": f"{q.query_id}-" + "x" * 70,
                        "question": ("Whyisthisquestionwrittenwithoutanyspaces" * 3) + f" {j}?",
                        "metrics": metrics,
                    }
                )
            )
        runs.append(
            run.model_copy(
                update={
                    "name": f"{name}-" + "configuration" * 6,
                    "run_id": f"20260101-000000-{'f' * 40}{i}",
                    "per_query": per_query,
                }
            )
        )
    return runs


LAYOUT_PROBE = """<script>
(function () {
  var root = document.documentElement;
  root.setAttribute("data-scroll-width", String(root.scrollWidth));
  root.setAttribute("data-client-width", String(root.clientWidth));
  var plotted = Array.prototype.map.call(document.querySelectorAll("figure[data-metrics]"),
    function (f) { return f.getAttribute("data-plot") + ":" + f.getAttribute("data-metrics"); });
  root.setAttribute("data-plotted", plotted.join("|"));
  var flat = Array.prototype.map.call(document.querySelectorAll(".no-variation [data-metric]"),
    function (c) { return c.getAttribute("data-metric"); });
  root.setAttribute("data-flat", flat.join(","));
})();
</script></body>"""


def test_report_fits_1280px_and_skips_flat_metrics(tmp_path: Path, make_run: MakeRun) -> None:
    """At a 1280-px window the page does not scroll sideways (wide tables scroll in their own box), the
    comparison leads with its forest plot, and a metric with one value everywhere is named, not drawn."""
    runs = wide_runs(make_run)
    html = render_html(runs, n_resamples=300, csp=False)
    page = tmp_path / "wide.html"
    page.write_text(html.replace("</body>", LAYOUT_PROBE), encoding="utf-8")
    dom = chromium(page, tmp_path, "--dump-dom", "--window-size=1280,1000").stdout
    html_tag = re.search(r"<html[^>]*>", dom)
    assert html_tag is not None
    attrs = dict(re.findall(r'(data-[\w-]+)="([^"]*)"', html_tag.group(0)))
    assert int(attrs["data-client-width"]) <= 1280
    assert int(attrs["data-scroll-width"]) <= 1280, attrs
    plotted = dict(item.split(":", 1) for item in attrs["data-plotted"].split("|"))
    assert list(plotted) == ["forest", "metric_at_k", "distribution", "judge_grades"]
    assert "support_coverage" in attrs["data-flat"].split(",")
    for metrics in plotted.values():
        assert "support_coverage" not in metrics.split()
    assert "mrr" in plotted["forest"].split() and "mrr" in plotted["distribution"].split()

    shot = tmp_path / "wide.png"
    chromium(page, tmp_path, f"--screenshot={shot}", "--window-size=1280,2400", "--hide-scrollbars")
    assert struct.unpack(">II", shot.read_bytes()[16:24]) == (1280, 2400)
    if os.environ.get("RAGMETER_SCREENSHOT_DIR"):
        shutil.copy(shot, Path(os.environ["RAGMETER_SCREENSHOT_DIR"]) / "report-1280.png")
