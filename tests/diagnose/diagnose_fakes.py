"""A constructed dataset whose queries fall in known failure classes, a system scripted per question
(retrieved ids and answer), and a scripted judge server: answer_correctness is 9/10 when the answer says
RIGHT, 1/10 otherwise; claims are extracted one per text; a claim is entailed by a text saying SUPPORTS."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from ragmeter.llm.scripted import Responder, ScriptedRequest, ScriptedServer, Step
from ragmeter.models import Document, EvalConfig, EvalDataset, EvalQuery, EvalRunResult

CONTEXT_K = 2
# query id: (relevant ids, retrieved ids, answer, the class it must get)
CASES: dict[str, tuple[list[str], list[str], str | None, str]] = {
    "q_nr": (["rel-nr"], ["x1", "x2", "x3"], "WRONG guess", "no_relevant_retrieved"),
    "q_nc": (["rel-nc"], ["x1", "x2", "rel-nc"], "WRONG guess", "relevant_not_in_context"),
    "q_wrong": (["rel-wrong"], ["rel-wrong", "x1"], "WRONG reading", "answer_wrong_with_evidence"),
    "q_unsup": (["rel-unsup"], ["rel-unsup", "x2"], "RIGHT but from memory", "unsupported"),
    "q_ok": (["rel-ok"], ["rel-ok", "x3"], "RIGHT and SUPPORTED", "correct"),
    "q_noqrels": ([], ["x1", "x2"], "RIGHT anyway", "unknown"),
    "q_noanswer": (["rel-na"], ["rel-na", "x1"], None, "unknown"),
}
TEXTS = {
    "rel-nr": "The fact for nr. SUPPORTS",
    "rel-nc": "The fact for nc. SUPPORTS",
    "rel-wrong": "The fact for wrong. SUPPORTS",
    "rel-unsup": "The fact for unsup, without the claim.",
    "rel-ok": "The fact for ok. SUPPORTS",
    "rel-na": "The fact for na. SUPPORTS",
    "x1": "noise one",
    "x2": "noise two",
    "x3": "noise three",
}


def dataset() -> EvalDataset:
    corpus = [Document(doc_id=d, text=t) for d, t in TEXTS.items()]
    queries = [
        EvalQuery(
            query_id=q, question=f"question {q}?", ground_truth_answer=f"reference {q}", relevant_doc_ids=rel
        )
        for q, (rel, _, _, _) in CASES.items()
    ]
    return EvalDataset(name="classes", queries=queries, corpus=corpus)


class ScriptedSystem:
    """Returns the scripted list for each question; answers as scripted. Counts its calls."""

    name = "scripted-classes"

    def __init__(self, answers: dict[str, str | None] | None = None) -> None:
        self.by_question = {f"question {q}?": q for q in CASES}
        self.answers = answers
        self.retrieve_calls = 0
        self.answer_calls: list[tuple[str, list[str]]] = []

    def retrieve(self, question: str, k: int) -> list[tuple[str, float, str]]:
        self.retrieve_calls += 1
        ids = CASES[self.by_question[question]][1][:k]
        return [(d, float(len(ids) - i), TEXTS[d]) for i, d in enumerate(ids)]

    def answer(self, question: str, contexts: list[Any]) -> str | None:
        q = self.by_question[question]
        self.answer_calls.append((q, [c.doc_id for c in contexts]))
        if self.answers is not None:
            return self.answers[q]
        return CASES[q][2]


def judge_responder(req: ScriptedRequest) -> Step:
    system, user = req.system, req.user
    if "split texts into factual claims" in system:
        text = user.split("Text:", 1)[1].split("Split the text", 1)[0].strip()
        return Step(text=json.dumps({"claims": [f"claim: {text}"]}))
    if "check claims against a reference" in system:
        reference = user.split("Reference:", 1)[1].split("Claims:", 1)[0]
        n = int(re.search(r"exactly (\d+) verdicts", user).group(1))  # type: ignore[union-attr]
        verdict = "Entailment" if "SUPPORTS" in reference or "RIGHT" in reference else "Neutral"
        return Step(text=json.dumps({"verdicts": [verdict] * n}))
    answer = user.split("Answer:", 1)[-1] if "Answer:" in user else user
    score = 9 if "RIGHT" in answer else 1
    return Step(text=json.dumps({"reasoning": "compared", "score": score}))


async def judged_run(
    scripted: Callable[..., Any],
    system: Any,
    db: str,
    metrics: list[str],
    responder: Responder = judge_responder,
    **extra: object,
) -> tuple[ScriptedServer, Any, EvalRunResult]:
    """The constructed dataset run by `system` into the store `db`, judged over real HTTP by a scripted server
    (started with the `scripted` fixture; judge_responder unless told): the server, the judge client (the
    caller closes it) and the run."""
    from ragmeter.llm import from_spec
    from ragmeter.run import arun_evaluation

    srv = await scripted(responder)
    spec = f"openai-compatible:judge@{srv.url}"
    llm = from_spec(spec, max_retries=0)
    config = EvalConfig(
        dataset="classes",
        retrieval_top_k=[3],
        use_llm_judge=True,
        judge_model=spec,
        metrics=metrics,
        extra={"semantic": False, "context_k": CONTEXT_K, **extra},
    )
    run = await arun_evaluation(dataset(), system, config, store=db, llm=llm, progress=False)
    return srv, llm, run
