"""One cacheable prefix per query: what the judges of a query send to a scripted server that records them.

Every judge prompt of a query starts with the same bytes (system text, question, every context), the answer
and the reference come after that prefix and only to the judges that read them, factuality checks its claims
in batches (each batch failing on its own), and a query's first call has finished before its others start.
"""

from __future__ import annotations

import json
import math
import time
from typing import Any

import pytest

from ragmeter.errors import InputError
from ragmeter.judges import JUDGES, run_judges
from ragmeter.judges.factuality import BATCH_ENV
from ragmeter.judges.prompts import FACTUALITY, FACTUALITY_VERIFY, PROMPTS_IN_LAYOUT, task_of
from ragmeter.llm import from_spec
from ragmeter.llm.scripted import ScriptedRequest, Step

QUERIES = [
    {
        "id": "q1",
        "question": "What is the capital of France, and how many people live there?",
        "answer": "Paris is the capital of France [1]. It has about 2.1 million residents [2]. It is lovely.",
        "contexts": [
            "Paris is the capital and largest city of France. " * 3,
            "The City of Paris has an estimated population of 2,102,650 residents (ANSWERMARK-NOT).",
            "Lyon is a city in France.",
        ],
        "truth": "REFMARK Paris; about 2.1 million people live in the city proper.",
    },
    {
        "id": "q2",
        "question": "Who wrote Hamlet?",
        "answer": "ANSWERMARK Shakespeare wrote Hamlet [1].",
        "contexts": ["Hamlet is a tragedy by William Shakespeare.", "Macbeth is another of his plays."],
        "truth": "REFMARK William Shakespeare.",
    },
]
REFERENCE_FREE = {"groundedness", "relevance", "coherence", "citation_accuracy"}


def _claims(n: int) -> list[str]:
    return [f"Claim number {chr(65 + i)} holds." for i in range(n)]


def _listed(req: ScriptedRequest) -> list[str]:
    block = task_of(req.user).split("Claims:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split("] ", 1)[1] for line in block.splitlines()]


def _responder(
    n_claims: int, bad_claim: str | None = None, log: list[tuple[float, str]] | None = None
) -> Any:
    opens = {name: task_of(p.user).split("\n", 1)[0] for name, p in PROMPTS_IN_LAYOUT.items()}

    def respond(req: ScriptedRequest) -> Step:
        task = task_of(req.user)
        if log is not None:
            log.append((time.perf_counter(), req.user.split("\n", 1)[0]))
        if task.startswith(opens["factuality_verify"]):
            claims = _listed(req)
            if bad_claim in claims:
                return Step(text="I cannot do this.")
            verdicts = [
                {
                    "claim": i,
                    "reasoning": "texts say so",
                    "verdict": "SUPPORTED" if i % 2 else "NOT_SUPPORTED",
                }
                for i, _ in enumerate(claims, 1)
            ]
            return Step(text=json.dumps({"verdicts": verdicts}))
        if task.startswith(opens["factuality"]):
            return Step(text=json.dumps({"claims": _claims(n_claims)}))
        if task.startswith(opens["citation_accuracy"]):
            ids = [line.split(":", 1)[0] for line in task.split("Citations to check", 1)[1].splitlines()[1:]]
            ids = [i for i in ids if i.startswith("C")]
            cites = [{"id": i, "reasoning": "ok", "supported": True} for i in ids]
            return Step(text=json.dumps({"citations": cites, "uncited_claims": []}))
        if task.startswith(opens["retrieval_grade"]):
            return Step(text=json.dumps({"reasoning": "ok", "grade": 8}))
        return Step(text=json.dumps({"reasoning": "ok", "score": 7, "missing": [], "disagreements": []}))

    return respond


def _common_prefix(texts: list[str]) -> str:
    """The longest string every text starts with."""
    first, n = texts[0], len(texts[0])
    for t in texts[1:]:
        n = min(n, len(t))
        n = next((i for i in range(n) if t[i] != first[i]), n)
    return first[:n]


async def test_every_judge_of_a_query_starts_with_one_prefix_and_sees_only_its_parts(scripted) -> None:  # type: ignore[no-untyped-def]
    srv = await scripted(_responder(7))
    llm = from_spec(f"openai-compatible:m@{srv.url}", concurrency=4)
    names = list(JUDGES)
    for q in QUERIES:
        before = len(srv.requests)
        results = await run_judges(
            names,
            question=q["question"],
            answer=q["answer"],
            contexts=q["contexts"],
            ground_truth=q["truth"],
            llm=llm,
            relevant_rank=1,
            query_id=q["id"],
        )
        assert all(r.value is not None for r in results.values()), {n: r.error for n, r in results.items()}
        reqs = srv.requests[before:]
        # every judge asked, factuality in 1 + ceil(7 / 5) calls
        assert len(reqs) == len(names) - 1 + 1 + math.ceil(7 / 5)
        full = [r.messages[0]["content"] + "\n" + r.messages[1]["content"] for r in reqs]
        assert all(r.messages[0]["role"] == "system" for r in reqs)
        prefix = _common_prefix(full)
        # the shared prefix holds the question and every context, byte-identical for every judge
        assert q["question"] in prefix
        for c in q["contexts"]:
            assert " ".join(c.split()) in prefix
        # ... and nothing a judge might not read
        assert "ANSWERMARK Shakespeare" not in prefix and "REFMARK" not in prefix
        for r in reqs:
            task = task_of(r.user)
            name = next(
                n for n, p in PROMPTS_IN_LAYOUT.items() if task.startswith(task_of(p.user).split("\n", 1)[0])
            )
            if name == "retrieval_grade":
                assert q["answer"] not in r.user and "Answer to judge" not in r.user
                assert q["truth"] in r.user
            if name in REFERENCE_FREE or name == "factuality":  # factuality's extraction reads no reference
                assert q["truth"] not in r.user and "Reference answer" not in r.user
            # the order of the parts: prefix, answer, reference, task
            order = [
                r.user.find(x) for x in (q["contexts"][-1][:20], "Answer to judge:", "Reference answer (")
            ]
            present = [i for i in order if i >= 0]
            assert present == sorted(present) and r.user.find("\nTask: ") > max(present)
    await llm.aclose()


@pytest.mark.parametrize(("n_claims", "size"), [(7, None), (5, None), (11, "3"), (4, "1")])
async def test_factuality_checks_claims_in_batches(scripted, monkeypatch, n_claims, size) -> None:  # type: ignore[no-untyped-def]
    if size is not None:
        monkeypatch.setenv(BATCH_ENV, size)
    srv = await scripted(_responder(n_claims))
    llm = from_spec(f"openai-compatible:m@{srv.url}")
    q = QUERIES[1]
    res = await JUDGES["factuality"](q["question"], "Claims A to K hold.", q["contexts"], llm=llm)
    await llm.aclose()
    per = int(size or 5)
    verify = [r for r in srv.requests if "Claims:\n[1]" in r.user]
    assert len(verify) == math.ceil(n_claims / per) == res.details["n_batches"]
    assert len(srv.requests) == 1 + len(verify)
    assert [len(_listed(r)) for r in verify] == [min(per, n_claims - i) for i in range(0, n_claims, per)]
    # verdicts land on their own claims: odd positions within a batch are SUPPORTED
    rows = res.details["claims"]
    assert [row["claim"] for row in rows] == _claims(n_claims)
    expected = [("SUPPORTED" if (i % per) % 2 == 0 else "NOT_SUPPORTED") for i in range(n_claims)]
    assert [row["verdict"] for row in rows] == expected
    assert res.value == pytest.approx(expected.count("SUPPORTED") / n_claims)


async def test_a_bad_batch_nulls_only_its_own_claims(scripted) -> None:  # type: ignore[no-untyped-def]
    srv = await scripted(_responder(7, bad_claim="Claim number G holds."))
    llm = from_spec(f"openai-compatible:m@{srv.url}")
    q = QUERIES[1]
    res = await JUDGES["factuality"](q["question"], "Claims A to G hold.", q["contexts"], llm=llm)
    await llm.aclose()
    rows = res.details["claims"]
    assert [r["verdict"] is None for r in rows] == [False] * 5 + [True] * 2
    assert all("unusable reply" in r["error"] for r in rows[5:])
    assert res.value is None and res.error is not None
    assert res.error.startswith("2 of 7 claims could not be checked: claims 6-7: unusable reply")
    # the bad batch was re-asked once, the good one was not
    assert len(srv.requests) == 1 + 1 + 2


async def test_a_bad_batch_size_is_an_input_error(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from ragmeter.judges import check_judge_names

    monkeypatch.setenv(BATCH_ENV, "zero")
    with pytest.raises(InputError, match=BATCH_ENV):
        check_judge_names(["factuality"])
    check_judge_names(["groundedness"])  # only factuality reads it


async def test_a_querys_first_call_finishes_before_its_others_start(scripted) -> None:  # type: ignore[no-untyped-def]
    log: list[tuple[float, str]] = []
    srv = await scripted(_responder(3, log=log), latency=0.2)
    llm = from_spec(f"openai-compatible:m@{srv.url}", concurrency=16)
    q = QUERIES[0]
    await run_judges(
        list(JUDGES),
        question=q["question"],
        answer=q["answer"],
        contexts=q["contexts"],
        ground_truth=q["truth"],
        llm=llm,
        query_id="q1",
    )
    await llm.aclose()
    first_arrived = log[0][0]
    later = [t for t, _ in log[1:]]
    assert later and min(later) >= first_arrived + 0.2  # none arrived while the first was being answered
    assert srv.max_in_flight > 1  # the others did run side by side


def test_prompt_versions_were_bumped_and_share_the_system_text() -> None:
    for name, prompt in PROMPTS_IN_LAYOUT.items():
        assert prompt.system == FACTUALITY.system, name
        assert prompt.reads is not None
    assert FACTUALITY.version.startswith("factuality/v5+") and FACTUALITY.follow_up is FACTUALITY_VERIFY
    assert PROMPTS_IN_LAYOUT["retrieval_grade"].reads == ("reference",)
    assert JUDGES["retrieval_grade"].version.startswith("retrieval_grade/v2+")


async def test_the_reply_shape_has_an_entry_for_every_claim_and_citation(scripted) -> None:  # type: ignore[no-untyped-def]
    """A small model copies the reply's shape: shown one entry it replies with one (the local 1.5B judge did,
    and every batch was null), so the shape lists every claim number of the batch and every citation id."""
    srv = await scripted(_responder(7))
    llm = from_spec(f"openai-compatible:m@{srv.url}")
    q = QUERIES[0]
    fact = await JUDGES["factuality"](q["question"], q["answer"], q["contexts"], llm=llm)
    cite = await JUDGES["citation_accuracy"](q["question"], q["answer"], q["contexts"], llm=llm)
    await llm.aclose()
    assert fact.value is not None and cite.value is not None
    verify = [r for r in srv.requests if "Claims:\n[1]" in r.user]
    assert len(verify) == 2
    for r in verify:
        shape = json.loads(task_of(r.user).rsplit("\n", 1)[1].replace('"<verdict>"', '"SUPPORTED"'))
        assert [e["claim"] for e in shape["verdicts"]] == list(range(1, len(_listed(r)) + 1))
    (req,) = [r for r in srv.requests if "Citations to check" in r.user]
    shape_line = task_of(req.user).rsplit("\n", 1)[1]
    shape = json.loads(
        shape_line.replace("<true or false>", "true").replace('<ids such as "U1", or none>', "")
    )
    assert [e["id"] for e in shape["citations"]] == ["C1", "C2"]
    assert '<ids such as "U1", or none>' in shape_line  # the answer has a sentence without a citation
