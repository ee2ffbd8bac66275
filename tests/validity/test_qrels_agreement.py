"""`judges agreement` on merged qrels (provenance sidecar), one query set for both sides, tied
system scores, and tau_AP,b checked against a test-only port of Urbano and Marrero's definition (pyircor's
`tauap_b`: pyircor itself needs Python < 3.8 and cannot be installed here)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.cli import cli
from ragmeter.ir import Qrels, Run, evaluate
from ragmeter.llm.scripted import ScriptedRequest, Step
from ragmeter.models import Document, EvalDataset, EvalQuery
from ragmeter.validity.agreement import tau_ap
from ragmeter.validity.qrels_judging import meta_evaluate

DOCS = {"d1": "grade=3 the answer", "d2": "grade=2 part", "d3": "grade=0 unrelated", "d4": "grade=3 again"}
RUN_A = {"q1": {"d1": 3.0, "d2": 2.0, "d3": 1.0}, "q2": {"d4": 2.0, "d3": 1.0}}
RUN_B = {"q1": {"d3": 3.0, "d2": 2.0, "d1": 1.0}, "q2": {"d3": 2.0, "d4": 1.0}}
HUMAN = {"q1": {"d1": 1, "d3": 0}, "q2": {"d4": 1, "d3": 0}}


def responder(req: ScriptedRequest) -> Step:
    m = re.search(r"grade=(\d)", req.user)
    return Step(text=json.dumps({"reasoning": "because", "grade": int(m.group(1)) if m else 0}))


async def test_merged_qrels_are_scored_on_llm_pairs_only_and_refused_without_provenance(
    scripted: Callable[..., Any], tmp_path: Path
) -> None:
    server = await scripted(responder)
    data = EvalDataset(
        name="toy",
        queries=[EvalQuery(query_id=q, question=f"about {q}?") for q in ("q1", "q2")],
        corpus=[Document(doc_id=d, text=t) for d, t in DOCS.items()],
    )
    (tmp_path / "toy.json").write_text(data.model_dump_json(), encoding="utf-8")
    runs = []
    for name, run in (("a", RUN_A), ("b", RUN_B), ("c", RUN_A)):
        Run.from_dict(run).to_trec(tmp_path / f"{name}.trec")
        runs.append(str(tmp_path / f"{name}.trec"))
    Qrels.from_dict(HUMAN).to_trec(tmp_path / "human.qrels")
    merged = tmp_path / "merged.qrels"
    args = [
        "judge-qrels", "--runs", *runs, "--depth", "3", "--judge", f"openai-compatible:scripted@{server.url}",
        "--output", str(merged), "--dataset", str(tmp_path / "toy.json"), "--qrels", str(tmp_path / "human.qrels"),
        "--all", "--format", "json",
    ]  # fmt: skip
    result = await asyncio.to_thread(CliRunner().invoke, cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    sidecar = json.loads(Path(f"{merged}.provenance.json").read_text())
    assert sidecar["human"] == {"q1": ["d1", "d3"], "q2": ["d3", "d4"]}
    assert sidecar["llm"] == {"q1": ["d2"]}  # --all graded every pair, but people's grades won on four

    agree = [
        "judges", "agreement", "--qrels", str(tmp_path / "human.qrels"), "--llm-qrels", str(merged),
        "--runs", *runs, "--format", "json",
    ]  # fmt: skip
    out = json.loads(CliRunner().invoke(cli, agree, catch_exceptions=False).output)
    # The four copied human grades are not compared with themselves (main binarised them: accuracy 0.0).
    assert out["n_excluded_human_copies"] == 4
    assert out["n_pairs"] == 0 and out["kappa"] is None

    Path(f"{merged}.provenance.json").unlink()
    src = str(Path(__file__).resolve().parents[2] / "src")
    refused = subprocess.run(
        [sys.executable, "-m", "ragmeter", *agree],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])},
        timeout=120,
    )
    assert refused.returncode == 2
    assert refused.stdout == "" and "Traceback" not in refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "provenance" in lines[0] and "merged.qrels" in lines[0]


def test_both_sides_are_scored_on_one_query_set() -> None:
    # Binary human qrels, graded LLM qrels. q2's LLM grades are all 1 (no grade >= 2); q3 is not retrieved
    # by run y. Main scored the LLM side without q2 and both sides with q3 (as 0 for y, trec_eval -c).
    human = Qrels.from_dict({"q1": {"a": 1, "b": 0}, "q2": {"a": 1, "b": 0}, "q3": {"a": 1}, "q4": {"b": 1}})
    llm = Qrels.from_dict({"q1": {"a": 3, "b": 0}, "q2": {"a": 1, "b": 1}, "q3": {"a": 2}, "q4": {"b": 2}})
    ranked = {"a": 2.0, "b": 1.0}
    runs = {
        "x": Run.from_dict({"q1": ranked, "q2": ranked, "q3": ranked, "q4": {"b": 2.0, "a": 1.0}}),
        "y": Run.from_dict({"q1": {"b": 2.0, "a": 1.0}, "q2": ranked, "q4": ranked}),
    }
    res = meta_evaluate(human, llm, runs, measure="ndcg@10", n_resamples=20)
    assert res.n_queries == 3  # q1, q2, q4: judged by both, retrieved by both runs
    assert res.queries_left_out["not_retrieved_by_every_run"] == 1
    keep = Qrels.from_dict({q: d for q, d in human.to_dict().items() if q != "q3"})
    keep_llm = Qrels.from_dict({q: d for q, d in llm.to_dict().items() if q != "q3"})
    for row in res.runs:
        want_h = evaluate(keep, runs[row["run"]], ["ndcg@10"]).aggregate["ndcg@10"]
        want_l = evaluate(keep_llm, runs[row["run"]], ["ndcg@10"]).aggregate["ndcg@10"]
        assert row["human"] == pytest.approx(want_h) and row["llm"] == pytest.approx(want_l)


def test_agreement_prints_the_query_set_size(tmp_path: Path) -> None:
    Qrels.from_dict({"q1": {"a": 1}, "q2": {"a": 1}, "q3": {"b": 1}}).to_trec(tmp_path / "h.qrels")
    Qrels.from_dict({"q1": {"a": 2}, "q2": {"b": 3}, "q3": {"b": 1}}).to_trec(tmp_path / "l.qrels")
    paths = []
    for name, run in (
        ("x", {"q1": {"a": 1.0}, "q2": {"a": 1.0, "b": 0.5}}),
        ("y", {"q1": {"a": 1.0}, "q2": {"b": 1.0}}),
    ):
        Run.from_dict(run).to_trec(tmp_path / name)
        paths.append(str(tmp_path / name))
    args = ["judges", "agreement", "--qrels", str(tmp_path / "h.qrels"), "--llm-qrels", str(tmp_path / "l.qrels"),
            "--runs", *paths, "--llm-only"]  # fmt: skip
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert re.search(r"queries scored \(both sides\)\s*│\s*2\b", result.output), result.output


def test_tied_system_scores_share_a_rank() -> None:
    human = Qrels.from_dict({"q1": {"a": 1, "b": 0}})
    llm = Qrels.from_dict({"q1": {"a": 1, "b": 0}})
    same = {"a": 2.0, "b": 1.0}
    runs = {n: Run.from_dict({"q1": same}) for n in ("r1", "r2")}
    runs["r3"] = Run.from_dict({"q1": {"b": 2.0, "a": 1.0}})
    res = meta_evaluate(human, llm, runs, n_resamples=20)
    assert [r["rank_human"] for r in res.runs] == [1, 1, 3]
    assert [r["rank_llm"] for r in res.runs] == [1, 1, 3]
    assert res.tau_ap == pytest.approx(1.0)  # identical rankings, ties and all
    assert tau_ap([1, 1, 0], [1, 1, 0]) == pytest.approx(1.0)


def _tau_ap_b_reference(x: list[float], y: list[float]) -> float:
    """Urbano and Marrero (ICTIR 2017), eq. for tau_AP,b, written as pyircor's `tauap_b` computes it: the mean
    of both directions; in each, every item outside the grouping ranking's top tie group scores the share of
    the items strictly above it there that the other ranking also puts strictly above it."""

    def direction(group: list[float], other: list[float]) -> float:
        total, counted = 0.0, 0
        for i in range(len(group)):
            above = [j for j in range(len(group)) if group[j] > group[i]]
            if not above:
                continue
            counted += 1
            total += sum(1 for j in above if other[j] > other[i]) / len(above)
        return 2.0 * total / counted - 1.0

    return (direction(y, x) + direction(x, y)) / 2.0


@settings(max_examples=200, deadline=None)
@given(
    st.integers(3, 12).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(0, 4), min_size=n, max_size=n),
            st.lists(st.integers(0, 4), min_size=n, max_size=n),
        )
    )
)
def test_tau_ap_b_equals_the_reference_on_tied_rankings(pair: tuple[list[int], list[int]]) -> None:
    from ragmeter.validity.agreement import tau_ap_b

    x, y = ([float(v) for v in p] for p in pair)
    ours = tau_ap_b(x, y)
    if len(set(x)) < 2 or len(set(y)) < 2:
        assert ours is None
        return
    assert ours == pytest.approx(_tau_ap_b_reference(x, y), abs=1e-12)
    assert tau_ap_b(y, x) == pytest.approx(ours, abs=1e-12)  # symmetric
    assert tau_ap_b(x, x) == pytest.approx(1.0)


def test_tau_ap_b_by_hand_and_tau_ap_without_ties_is_yilmaz() -> None:
    from ragmeter.validity.agreement import tau_ap_b

    # x: a > b = c; y: a = b > c. Direction grouped by y: c scores 2/2 (x puts a, b... only a above c: 1/2).
    x, y = [3.0, 2.0, 2.0], [2.0, 2.0, 1.0]
    # grouped by y: c (above: a, b; x strictly above c: a only) -> 1/2; value 2 * 0.5 / 1 - 1 = 0
    # grouped by x: b (above: a; y: a not above b) -> 0, c (above: a; y: a above c) -> 1; 2 * 1 / 2 - 1 = 0
    assert tau_ap_b(x, y) == pytest.approx(0.0)
    truth = np.array([4.0, 3.0, 2.0, 1.0])
    assert tau_ap(truth, [3.0, 4.0, 2.0, 1.0]) == pytest.approx(1 / 3)  # Yilmaz's, untouched
