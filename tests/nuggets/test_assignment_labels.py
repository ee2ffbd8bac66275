"""Assignment labels (a person's support / partial_support / not_support of one nugget for one answer): stored
for the run's set version and answer, exported by `labels export`, compared with the assignment judge by
`judges validate --run RUN --metric nugget_all_strict` item by item, and used by PPI as human nugget scores.
The run is the constructed nugget case over real HTTP (nugget_fakes); the store is real SQLite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from nugget_fakes import Assigner, FixedSystem, dataset, write_set

from in_process import run_main
from ragmeter.errors import InputError
from ragmeter.models import EvalConfig, EvalRunResult
from ragmeter.score.nugget_plan import default_names

pytest.importorskip("aiohttp")

# (query, nugget, the person's label); the judge (the rule of nugget_fakes) says: qa n1 support, n2
# not_support, n3 partial_support; qb m1 support, m2 not_support
GIVEN = [
    ("qa", "n1", "support"),
    ("qa", "n2", "partial_support"),
    ("qa", "n3", "partial_support"),
    ("qb", "m1", "not_support"),
    ("qb", "m2", "not_support"),
]
CODE = {"not_support": 0, "partial_support": 1, "support": 2}
JUDGE = {"n1": 2, "n2": 0, "n3": 1, "m1": 2, "m2": 0}


async def _run(url: str, db: str, nuggets: Path) -> EvalRunResult:
    from ragmeter.run import arun_evaluation

    config = EvalConfig(
        dataset="nuggets-case",
        retrieval_top_k=[1, 3],
        use_llm_judge=True,
        judge_model=f"openai-compatible:judge@{url}",
        metrics=["ndcg@3", *default_names([1, 3])],
        extra={"semantic": False, "context_k": 1, "nuggets": {"path": str(nuggets)}},
    )
    return await arun_evaluation(dataset(), FixedSystem(), config, store=db, progress=False)


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code, out, err = run_main(capsys, *args)
    return code, out + err


async def test_labels_flow_to_export_validation_and_ppi(
    tmp_path: Path, scripted: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragmeter.store import open_store
    from ragmeter.validity.human_labels import store_ppi
    from ragmeter.validity.nugget_labels import save_assignment

    server = await scripted(Assigner())
    db = f"sqlite:///{tmp_path / 'l.db'}"
    run = await _run(server.url, db, write_set(tmp_path / "set.jsonl"))
    rid = run.run_id or ""
    from ragmeter.report.html import render_html

    set_hash = (run.config.nuggets or {})["hash"]
    assert f"nugget metrics scored against nugget set {set_hash} " in render_html([run], plots=False)
    with open_store(db) as store:
        for qid, nid, label in GIVEN:
            save_assignment(store, run, qid, nid, label, annotator="ann", source="browse", expected_version=0)
        with pytest.raises(InputError, match="no nugget 'zz'"):
            save_assignment(
                store, run, "qa", "zz", "support", annotator="ann", source="browse", expected_version=0
            )
        with pytest.raises(InputError, match="not one of"):
            save_assignment(
                store, run, "qa", "n1", "maybe", annotator="ann", source="browse", expected_version=1
            )

    out = tmp_path / "labels.json"
    code, text = _cli(capsys, "labels", "export", "-o", str(out), "--db", db)
    assert code == 0, text
    exported = [x for x in json.loads(out.read_text()) if x["kind"] == "assignment"]
    assert sorted((x["query_id"], x["nugget_id"], x["assignment"]) for x in exported) == sorted(GIVEN)
    assert {x["nugget_set"] for x in exported} == {(run.config.nuggets or {})["hash"]}
    # the export reads back (each label appended after the one it copies); a bad assignment stores nothing
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([exported[0], {**exported[1], "assignment": "maybe"}]))
    code, text = _cli(capsys, "labels", "import", str(bad), "--db", db)
    assert code == 2 and "label 2" in text and "maybe" in text and "Traceback" not in text
    code, text = _cli(capsys, "labels", "import", str(out), "--db", db)
    assert code == 0 and f"stored {len(json.loads(out.read_text()))} labels" in text, text

    code, text = _cli(
        capsys,
        "judges",
        "validate",
        "--run",
        rid,
        "--metric",
        "nugget_all_strict",
        "--db",
        db,
        "--format",
        "json",
    )
    assert code == 0, text
    report = json.loads(text[text.index("{") :])
    items = {i["id"]: (i["human"], i["judge"]) for i in report["items"]}
    assert items == {f"{q}/{n}": (CODE[label], JUDGE[n]) for q, n, label in GIVEN}
    agree = sum(CODE[label] == JUDGE[n] for _, n, label in GIVEN) / len(GIVEN)
    assert report["accuracy"] == pytest.approx(agree) and report["human_scale"]["kind"] == "ordinal"
    lo, hi = report["kappa_ci"]
    assert report["kappa"] is not None and lo <= report["kappa"] <= hi

    # PPI: queue labels of every nugget of qb and qc give human nugget scores of those two queries
    with open_store(db) as store:
        full = store.get_run(rid)
        before, _, _ = store_ppi(store, full)
        assert "nugget_all_strict" not in before
        for nid, label in (("m1", "support"), ("m2", "partial_support")):
            save_assignment(
                store, full, "qb", nid, label, annotator="ann", source="queue", expected_version=2
            )
        save_assignment(
            store, full, "qc", "k1", "support", annotator="ann", source="queue", expected_version=0
        )
        estimates, _, _ = store_ppi(store, full)
    est = estimates["nugget_all"]
    assert est.n_labeled == 2 and est.human_mean == pytest.approx((0.75 + 1.0) / 2)
    assert estimates["nugget_all_strict"].human_mean == pytest.approx((0.5 + 1.0) / 2)
