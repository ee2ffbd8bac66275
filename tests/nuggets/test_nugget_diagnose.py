"""Attribution by fact: `diagnose` names the nuggets each part of the chain lost, on a constructed case whose
every assignment is known (the rule-based assigner of nugget_fakes over real HTTP; a system whose answer is
its contexts' text, so that each replay's contexts decide which nuggets the answer supports).

context_k = 1. The truth, per query:
- qa: retrieved [weather, capital, seine], both capital and seine relevant. The run's context (weather)
  supports nothing; oracle-rank gives capital (n1); oracle-context gives capital and seine (n2). n3..n12
  are in no document: lost to generation.
- qb: retrieved [rome, weather]; rome and founded relevant, founded never retrieved: m2 comes only with
  oracle contexts (retrieval); m1 is in the run already.
- qc: the generator answers "I do not know." whatever it is given: k1 is lost to generation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from nugget_fakes import Assigner

from ragmeter.models import Document, EvalConfig, EvalDataset, EvalQuery

pytest.importorskip("aiohttp")

DOCS = {
    "capital": "Paris is the capital of France.",
    "seine": "Paris lies on the Seine.",
    "weather": "An unrelated note about the weather.",
    "rome": "Rome is the capital of Italy.",
    "founded": "Rome was founded in 753 BC.",
}
QUERIES = {  # id -> (question, retrieved in rank order, relevant)
    "qa": ("What is the capital of France?", ["weather", "capital", "seine"], ["capital", "seine"]),
    "qb": ("What is the capital of Italy?", ["rome", "weather"], ["rome", "founded"]),
    "qc": ("Where is Paris?", ["seine"], ["seine"]),
}
FILLERS = [{"id": f"n{i}", "text": f"Filler fact number {i}", "importance": "okay"} for i in range(4, 13)]
NUGGETS: list[dict[str, Any]] = [
    {
        "query_id": "qa",
        "nuggets": [
            {"id": "n1", "text": "Paris is the capital of France", "importance": "vital"},
            {"id": "n2", "text": "Paris lies on the Seine", "importance": "vital"},
            {"id": "n3", "text": "Paris has about two million inhabitants", "importance": "okay"},
            *FILLERS,
        ],
    },
    {
        "query_id": "qb",
        "nuggets": [
            {"id": "m1", "text": "Rome is the capital of Italy", "importance": "vital"},
            {"id": "m2", "text": "Rome was founded in 753 BC", "importance": "vital"},
            {"id": "m3", "text": "Rome has seven hills", "importance": "okay"},
        ],
    },
    {"query_id": "qc", "nuggets": [{"id": "k1", "text": "Paris lies on the Seine", "importance": "vital"}]},
]
FILLER_IDS = [f"n{i}" for i in range(3, 13)]
TRUTH = {
    "nugget_vital": {
        "ranking_and_context": {"qa": ["n1"]},
        "retrieval": {"qa": ["n2"], "qb": ["m2"]},
        "generation": {"qc": ["k1"]},
    },
    "nugget_all_strict": {
        "ranking_and_context": {"qa": ["n1"]},
        "retrieval": {"qa": ["n2"], "qb": ["m2"]},
        "generation": {"qa": FILLER_IDS, "qb": ["m3"], "qc": ["k1"]},
    },
}


class EchoSystem:
    """Retrieves the fixed lists; answers with its contexts' text (qc: "I do not know." always)."""

    name = "echo"

    def __init__(self) -> None:
        self.by_question = {q: (qid, ids) for qid, (q, ids, _) in QUERIES.items()}

    async def retrieve(self, question: str, k: int) -> list[tuple[str, float, str]]:
        ids = self.by_question[question][1][:k]
        return [(d, 1.0 - i / 10, DOCS[d]) for i, d in enumerate(ids)]

    async def answer(self, question: str, contexts: list[Any]) -> str | None:
        if self.by_question[question][0] == "qc":
            return "I do not know."
        return " ".join(c.text if hasattr(c, "text") else str(c[2]) for c in contexts)


def _dataset() -> EvalDataset:
    queries = [
        EvalQuery(query_id=qid, question=q, ground_truth_answer="x", relevant_doc_ids=rel)
        for qid, (q, _, rel) in QUERIES.items()
    ]
    return EvalDataset(
        name="nugget-diagnose", queries=queries, corpus=[Document(doc_id=k, text=v) for k, v in DOCS.items()]
    )


async def test_diagnose_names_the_lost_nuggets_of_each_part(tmp_path: Path, scripted: Any) -> None:
    from ragmeter.diagnose.attribution import adiagnose
    from ragmeter.run import arun_evaluation
    from ragmeter.store import open_store

    server = await scripted(Assigner())
    nuggets = tmp_path / "set.jsonl"
    nuggets.write_text("".join(json.dumps(q) + "\n" for q in NUGGETS))
    db = f"sqlite:///{tmp_path / 'd.db'}"
    config = EvalConfig(
        dataset="nugget-diagnose",
        retrieval_top_k=[3],
        use_llm_judge=True,
        judge_model=f"openai-compatible:judge@{server.url}",
        metrics=["ndcg@3", *TRUTH],
        extra={"semantic": False, "context_k": 1, "nuggets": {"path": str(nuggets)}},
    )
    data = _dataset()
    run = await arun_evaluation(data, EchoSystem(), config, store=db, progress=False)
    with open_store(db) as store:
        out = await adiagnose(
            run.run_id or "",
            store=store,
            metrics=list(TRUTH),
            system=EchoSystem(),
            dataset=data,
            n_resamples=100,
        )
    got = {m["metric"]: m for m in out["metrics"]}
    assert set(got) == set(TRUTH)
    for name, parts in TRUTH.items():
        facts = got[name]["nuggets"]
        assert facts["n"] == 3 and facts["parts"] == parts, name
        assert facts["regained_negative"] == {"ranking_and_context": {}, "retrieval": {}}
    # the facts agree with the numbers: nugget_vital's qa gains 0.5 at each of its first two steps
    vital = got["nugget_vital"]["parts"]
    assert vital["ranking_and_context"]["mean"] == pytest.approx(0.5 / 3)
    assert vital["retrieval"]["mean"] == pytest.approx(1.0 / 3)
    assert vital["generation"]["mean"] == pytest.approx(1.0 / 3)


def test_fact_lines_name_each_part() -> None:
    from ragmeter.diagnose.nugget_facts import lines

    metrics = [{"metric": "nugget_vital", "nuggets": {"parts": TRUTH["nugget_vital"]}}]
    assert lines(metrics) == [
        "nugget_vital ranking_and_context lost nuggets: qa n1",
        "nugget_vital retrieval lost nuggets: qa n2; qb m2",
        "nugget_vital generation lost nuggets: qc k1",
    ]
