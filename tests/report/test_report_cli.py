from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

import pytest

from ragmeter.cli import main
from ragmeter.models import EvalRunResult

MakeRun = Callable[..., EvalRunResult]


def run_cli(args: list[str]) -> int:
    with pytest.raises(SystemExit) as info:
        main(args)
    code = info.value.code
    return 0 if code is None else int(code)


def test_report_from_json_files(
    tmp_path: Path, make_run: MakeRun, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = make_run("bm25", 1, n=10), make_run("hybrid", 2, n=10, boost=0.2)
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(a.model_dump_json(), encoding="utf-8")
    pb.write_text(b.model_dump_json(), encoding="utf-8")
    out = tmp_path / "out"
    assert run_cli(["report", str(pa), str(pb), "--out", str(out), "--resamples", "300"]) == 0
    printed = capsys.readouterr().out.split()
    assert str(out / "report.html") in printed
    for name in ("report.html", "per_query_long.csv", "significance.csv"):
        assert (out / name).is_file()
    assert sorted(p.name for p in (out / "plots").iterdir()) == sorted(
        f"{plot}.{ext}"
        for plot in ("forest", "metric_at_k", "distribution", "judge_grades")
        for ext in ("png", "svg")
    )
    for plot in ("forest", "metric_at_k", "distribution", "judge_grades"):
        assert (out / "plots" / f"{plot}.png").is_file() and (out / "plots" / f"{plot}.svg").is_file()
    with (out / "significance.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["metric"] for r in rows] == list(a.per_query[0].metrics)
    assert {(r["run_a"], r["run_b"]) for r in rows} == {("bm25", "hybrid")}
    mrr = next(r for r in rows if r["metric"] == "mrr")
    expected = (
        sum(q.metrics["mrr"].value for q in b.per_query) / 10
        - sum(  # type: ignore[misc]
            q.metrics["mrr"].value  # type: ignore[misc]
            for q in a.per_query
        )
        / 10
    )
    assert float(mrr["delta"]) == pytest.approx(expected)
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "hybrid vs bm25" in page and "300 resamples" in page


def test_report_from_the_store(tmp_path: Path, make_run: MakeRun) -> None:
    pytest.importorskip("sqlalchemy")
    from ragmeter.store import open_store

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    src = make_run("stored", 3, n=6)
    with open_store(url) as store:
        created = store.create_run(src.config, name="stored")
        for i, q in enumerate(src.per_query):
            store.add_query_result(created.run_id or "", q, position=i)
        store.finish_run(created.run_id or "", status="completed", aggregate=src.aggregate, n_queries=6)
    run_id = created.run_id or ""
    out = tmp_path / "out"
    assert run_cli(["report", run_id[:12], "--db", url, "--out", str(out), "--no-plots"]) == 0
    assert not (out / "plots").exists()
    assert not (out / "significance.csv").exists()
    page = (out / "report.html").read_text(encoding="utf-8")
    assert run_id in page and "Passage text 0 for q000." in page
    with (out / "per_query_long.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 6 * len(src.per_query[0].metrics)
    assert {r["run_id"] for r in rows} == {run_id}


def test_report_bad_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.json"
    assert run_cli(["report", str(missing), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"{missing}: no such file" in err and "Traceback" not in err
    bad = tmp_path / "bad.json"
    bad.write_text("{", encoding="utf-8")
    assert run_cli(["report", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "not valid JSON" in capsys.readouterr().err
    pytest.importorskip("sqlalchemy")
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    assert run_cli(["report", "no-such-run", "--db", url, "--out", str(tmp_path / "o")]) == 2
    assert "no run 'no-such-run'" in capsys.readouterr().err
