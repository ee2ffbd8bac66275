"""The constructed case of `ragmeter diagnose`: five kinds of query over the built-in pipeline (full text),
a scripted generator and judge over real HTTP, every class and every lost point known in advance.

Kinds (context_k = 1, top 3 retrieved):
- miss: the relevant document is not retrieved (and is long: its answer lies beyond the 2,000-character
  passage limit, so only the window that holds it lets the generator answer);
- rank: the relevant document is retrieved at rank 2, outside the context;
- wrong: the relevant document is first, the generator answers wrongly anyway;
- right: answered with the reference's exact words;
- verbose: right in a sentence (exact_match 0, the judges' full marks).
The generator answers "I do not know." without the answer in its passages: no claims, so rc_f1 is null
there and RAGChecker's 0 counts.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmeter.llm.scripted import ScriptedRequest, ScriptedServer, Step
from ragmeter.models import Document, EvalConfig, EvalDataset, EvalQuery
from scripted_servers import serve_in_thread

pytest.importorskip("aiohttp")
pytest.importorskip("bm25s")

KINDS = ("miss", "rank", "wrong", "right", "verbose")
WORDS = ("amber", "basil", "cedar", "delta", "ember", "fjord", "gravel", "harbor", "indigo", "juniper")
PER_KIND = 2
# (run, oracle-rank, oracle-context) answer of each kind: "idk", "wrong", "right", "verbose"
ANSWERS = {
    "miss": ("idk", "idk", "right"),
    "rank": ("idk", "right", "right"),
    "wrong": ("wrong", "wrong", "wrong"),
    "right": ("right", "right", "right"),
    "verbose": ("verbose", "verbose", "verbose"),
}
# each answer's value per metric (idk: rc_f1 null, counted 0 as RAGChecker counts it)
VALUE = {
    "answer_correctness": {"idk": 0.0, "wrong": 0.2, "right": 1.0, "verbose": 1.0},
    "exact_match": {"idk": 0.0, "wrong": 0.0, "right": 1.0, "verbose": 0.0},
    "rc_f1": {"idk": 0.0, "wrong": 0.0, "right": 1.0, "verbose": 1.0},
}
CLASSES = {  # the class of each kind in the run and each replay
    "miss": ("no_relevant_retrieved", "no_relevant_retrieved", "correct"),
    "rank": ("relevant_not_in_context", "correct", "correct"),
    "wrong": ("answer_wrong_with_evidence",) * 3,
    "right": ("correct",) * 3,
    "verbose": ("correct",) * 3,
}
STEPS = ("run", "oracle-rank", "oracle-context")


def cases() -> dict[str, tuple[str, str]]:
    """query id -> (kind, topic word)."""
    words = iter(WORDS)
    return {f"{kind}-{i}": (kind, next(words)) for kind in KINDS for i in range(PER_KIND)}


def gold(word: str) -> str:
    return f"x{word}"


def dataset() -> EvalDataset:
    corpus, queries = [], []
    for qid, (kind, w) in cases().items():
        if kind == "miss":  # three noise documents take the top 3; the answer sits past 2,000 characters
            corpus += [Document(doc_id=f"n{i}-{qid}", text=f"{w} " * (4 - i) + "noise") for i in range(3)]
            text = "filler " * 700 + f"the answer is {gold(w)} " + "filler " * 50
            corpus.append(Document(doc_id=f"rel-{qid}", text=text))
        elif kind == "rank":  # a noise document ranks first, the relevant one second
            corpus.append(Document(doc_id=f"n0-{qid}", text=f"{w} {w} {w} noise"))
            corpus.append(Document(doc_id=f"rel-{qid}", text=f"{w} fact: the answer is {gold(w)} here"))
        else:
            corpus.append(Document(doc_id=f"rel-{qid}", text=f"{w} {w} {w} fact {gold(w)}"))
            corpus.append(Document(doc_id=f"n0-{qid}", text=f"{w} noise and more words"))
        queries.append(
            EvalQuery(
                query_id=qid,
                question=f"what about {w}?",
                ground_truth_answer=gold(w),
                relevant_doc_ids=[f"rel-{qid}"],
            )
        )
    return EvalDataset(name="constructed", queries=queries, corpus=corpus)


def _generate(user: str) -> str:
    word = re.search(r"Question: what about (\w+)\?", user).group(1)  # type: ignore[union-attr]
    kind = next(k for k, w in cases().values() if w == word)
    passages = user.split("Question:", 1)[0]
    if gold(word) not in passages:
        return "I do not know."
    return {"wrong": f"y{word}", "right": gold(word), "verbose": f"It is {gold(word)} indeed."}.get(
        kind, gold(word)
    )


def _golds(text: str) -> set[str]:
    return set(re.findall(r"\bx[a-z]+\b", text))


class Counted:
    """The responder: generator and judges; every request's arrival time and role is kept."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, str]] = []
        self.lock = threading.Lock()

    def __call__(self, req: ScriptedRequest) -> Step:
        system, user = req.system, req.user
        role = "generator" if "Passages:" in user else "judge"
        with self.lock:
            self.seen.append((time.time(), role))
        if role == "generator":
            return Step(text=_generate(user))
        if "split texts into factual claims" in system:
            text = user.split("Text:", 1)[1].split("Split the text", 1)[0].strip()
            return Step(text=json.dumps({"claims": [] if "do not know" in text else [text]}))
        if "check claims against a reference" in system:
            reference = user.split("Reference:", 1)[1].split("Claims:", 1)[0]
            claims = user.split("Claims:", 1)[1]
            n = int(re.search(r"exactly (\d+) verdicts", user).group(1))  # type: ignore[union-attr]
            ok = bool(_golds(reference) & _golds(claims))
            return Step(text=json.dumps({"verdicts": ["Entailment" if ok else "Neutral"] * n}))
        # answer_correctness in the shared judge layout: "Answer to judge:", then "Reference answer (...):"
        answer = user.split("Answer to judge:\n", 1)[1].split("\n\nReference answer", 1)[0]
        reference = user.split("Reference answer", 1)[1].split(":\n", 1)[1].split("\n\nTask: ", 1)[0].strip()
        score = 10 if reference in answer else 0 if "do not know" in answer else 2
        return Step(text=json.dumps({"reasoning": "compared", "score": score}))

    def since(self, start: float, end: float | None = None) -> dict[str, int]:
        got = {"generator": 0, "judge": 0}
        for at, role in self.seen:
            if at >= start and (end is None or at < end):
                got[role] += 1
        return got


@pytest.fixture
def server() -> Iterator[tuple[ScriptedServer, Counted]]:
    """The scripted server on its own event loop in a thread (the CLI runs its own loop)."""
    counted = Counted()
    with serve_in_thread(counted) as srv:
        yield srv, counted


def _at(when: Any) -> float:
    from datetime import UTC

    return float(when.replace(tzinfo=when.tzinfo or UTC).timestamp())


def truth(metric: str) -> dict[str, float]:
    """The mean lost points of each part, from the table of answers above (best = 1)."""
    parts = {"ranking_and_context": 0.0, "retrieval": 0.0, "generation": 0.0}
    ids = cases()
    for kind, _ in ids.values():
        run, rank, ctx = (VALUE[metric][a] for a in ANSWERS[kind])
        parts["ranking_and_context"] += (rank - run) / len(ids)
        parts["retrieval"] += (ctx - rank) / len(ids)
        parts["generation"] += (1.0 - ctx) / len(ids)
    return parts


def test_diagnose_splits_the_constructed_losses_exactly_and_counts_its_calls(
    server: tuple[ScriptedServer, Counted],
    ragmeter_cli: Callable[..., tuple[int, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ragmeter.run import run_evaluation
    from ragmeter.score.classes import class_of
    from ragmeter.store import open_store

    srv, counted = server
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "constructed.json"
    path.write_text(dataset().model_dump_json())
    db = f"sqlite:///{tmp_path / 'c.db'}"
    config = EvalConfig(
        dataset=str(path),
        mode="fulltext",
        retrieval_top_k=[3],
        use_llm_judge=True,
        judge_model=f"openai-compatible:judge@{srv.url}",
        generator_model=f"openai-compatible:gen@{srv.url}",
        metrics=["ndcg@3", "answer_correctness", "exact_match", "rc_f1"],
        concurrency=4,
        extra={"semantic": False, "context_k": 1},
    )
    run = run_evaluation(str(path), "builtin", config, store=db, progress=False)
    ids = cases()
    assert {r.query_id: class_of(r) for r in run.per_query} == {q: CLASSES[k][0] for q, (k, _) in ids.items()}

    started = time.time()
    code, out = ragmeter_cli(
        "diagnose", run.run_id or "", "--db", db, "--resamples", "200", "--format", "json"
    )
    assert code == 0, out
    report = json.loads(out[out.index("{") :])
    with open_store(db) as store:
        replays = {k: store.get_run(v) for k, v in report["replays"].items()}

    # every replayed query's class is right
    for i, step in enumerate(STEPS[1:], start=1):
        got = {r.query_id: class_of(r) for r in replays[step].per_query}
        assert got == {q: CLASSES[k][i] for q, (k, _) in ids.items()}, step
    # the three parts equal the truth to 1e-9, over every query
    for m in report["metrics"]:
        assert m["n"] == len(ids) and m["n_left_out"] == 0, m
        for part, value in truth(m["metric"]).items():
            assert m["parts"][part]["mean"] == pytest.approx(value, abs=1e-9), (m["metric"], part)
    assert {m["metric"] for m in report["metrics"]} == set(VALUE)
    f1 = next(m for m in report["metrics"] if m["metric"] == "rc_f1")
    idk = {s: sum(ANSWERS[k][i] == "idk" for k, _ in ids.values()) for i, s in enumerate(STEPS)}
    assert f1["counted_as_zero"] == idk
    # each replay's calls, as the server counted them (replays run one after the other)
    bounds = [started, *(_at(replays[s].started_at) for s in STEPS[2:]), None]
    for step, start, end in zip(STEPS[1:], bounds[:-1], bounds[1:], strict=True):
        usage = report["usage"][step]
        served = counted.since(start, end)  # type: ignore[arg-type]
        assert served["generator"] == len(ids), step  # one answer per query, none for retrieval
        assert usage["generator"]["calls"] == served["generator"], step
        assert usage["judge"]["calls"] == served["judge"] and usage["total"]["calls"] == sum(served.values())
        assert replays[step].usage is not None and replays[step].usage["generator"]["calls"] == len(ids)

    # the table form prints each replay's calls
    code, text = ragmeter_cli("diagnose", run.run_id or "", "--db", db, "--resamples", "200")
    assert code == 0, text
    for step in STEPS[1:]:
        line = next(x for x in text.splitlines() if x.startswith(f"{step} spent:"))
        assert f"generator {len(ids)}," in line and " calls (" in line
