"""Hand-made edge cases of ../shared/ir_crosscheck/semantics_cases.json, with trec_eval as the reference."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmeter.errors import InputError
from ragmeter.ir import Qrels, Run, evaluate, parse_measure

CASE_FILE = "semantics_cases.json"
# measures of the cases that are not ours or where we deliberately differ from pytrec_eval
SKIP_MEASURES = {"ndcg_gdeval@5", "ndcg_gdeval@10"}


def _cases(crosscheck_dir: Path) -> list[dict]:
    return json.loads((crosscheck_dir / CASE_FILE).read_text())["cases"]


def test_every_case(crosscheck_dir: Path) -> None:
    checked = 0
    for case in _cases(crosscheck_dir):
        level = case.get("relevance_level", 1)
        if "run_trec" in case or "qrels_trec" in case:
            # duplicates in files are input errors, as in trec_eval
            with pytest.raises(InputError, match="twice"):
                if "run_trec" in case:
                    Run.from_trec_bytes("\n".join(case["run_trec"]).encode(), source="run")
                else:
                    Qrels.from_trec_bytes("\n".join(case["qrels_trec"]).encode(), source="qrels")
            checked += 1
            continue
        pytrec = case["results"]["pytrec_eval"]
        if "error" in pytrec and "per_query" not in pytrec:
            continue
        measures = [m for m in case["measures"] if m not in SKIP_MEASURES]
        res = evaluate(
            Qrels.from_dict(case["qrels"]),
            Run.from_dict(case["run"]),
            measures,
            relevance_level=level,
            missing="ignore",
            no_relevant="zero",
        )
        ours = res.per_query
        for qid, vals in pytrec["per_query"].items():
            if qid not in ours:
                # pytrec_eval's wrapper drops queries with empty judgments; we keep them
                assert case["id"] in {"query_with_empty_judgments"}, (case["id"], qid)
                continue
            for m, want in vals.items():
                if m in SKIP_MEASURES or want is None:
                    continue
                got = ours[qid][parse_measure(m).name]
                if m.startswith("mrr@"):
                    # we apply the cutoff (trec_eval ignores it and reports the full reciprocal rank)
                    k = int(m.split("@")[1])
                    want = want if want >= 1.0 / k - 1e-12 else 0.0
                assert got == pytest.approx(want, abs=1e-9), (case["id"], qid, m, got, want)
                checked += 1
    assert checked > 100


def test_query_sets_mismatch_default_and_complete(crosscheck_dir: Path) -> None:
    case = next(c for c in _cases(crosscheck_dir) if c["id"] == "query_sets_mismatch")
    qrels, run = Qrels.from_dict(case["qrels"]), Run.from_dict(case["run"])
    ref = case["trec_eval_reference"]
    assert evaluate(qrels, run, ["map"], missing="ignore", no_relevant="zero").aggregate[
        "map"
    ] == pytest.approx(ref["map (default)"])
    assert evaluate(qrels, run, ["map"], missing="zero", no_relevant="zero").aggregate[
        "map"
    ] == pytest.approx(ref["map (-c)"])


def test_mrr_cutoff_is_applied(crosscheck_dir: Path) -> None:
    case = next(c for c in _cases(crosscheck_dir) if c["id"] == "mrr_cutoff")
    res = evaluate(Qrels.from_dict(case["qrels"]), Run.from_dict(case["run"]), ["mrr", "mrr@10"])
    assert res.aggregate["mrr"] == pytest.approx(case["trec_eval_reference"]["mrr"])
    assert res.aggregate["mrr@10"] == 0.0
