"""The demo's judged step shows nugget scores: each judged answer gets the demo's hand-written nuggets assigned
(one call per answer) and the demo prints nugget_all / nugget_vital with the nuggets supported, partly
supported and missing. Without a judge, one line says that nugget scores need one and which command gives them.
Real HTTP to a scripted OpenAI-compatible server on 127.0.0.1 that generates and judges."""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from cli_fakes import scripted_server

from ragmeter.llm.scripted import Step

# position of a nugget in the assignment prompt's list -> its scripted label (every demo query has <= 5
# nuggets: one batch); the rest: not_support. The first is partial, so that no score is trivially 1.
LABEL_AT = {0: "partial_support", 1: "support"}
SCORE = {"support": 1.0, "partial_support": 0.5, "not_support": 0.0}


def _demo_nuggets() -> dict[str, list[tuple[str, str, str]]]:
    """query id -> [(nugget id, text, importance)], read from the shipped file itself (not through ragmeter)."""
    from ragmeter.nuggets.demo import demo_nuggets_path

    rows = [json.loads(line) for line in demo_nuggets_path().read_text().splitlines() if line.strip()]
    return {r["query_id"]: [(n["id"], n["text"], n["importance"]) for n in r["nuggets"]] for r in rows}


class Judge:
    """Generates an answer that states the query's first nugget, assigns nuggets by position, grades."""

    def __init__(self, questions: dict[str, str], nuggets: dict[str, list[tuple[str, str, str]]]) -> None:
        self.questions, self.nuggets = questions, nuggets
        self.calls: Counter[str] = Counter()

    def answer_of(self, qid: str) -> str:
        return f"In short: {self.nuggets[qid][0][1]}."

    def __call__(self, req: Any) -> Step:
        from ragmeter.judges.prompts import layout_name
        from ragmeter.systems.pipeline import SYSTEM_PROMPT

        user = req.user
        if req.system == SYSTEM_PROMPT:
            self.calls["generate"] += 1
            qid = max((q for q in self.questions if q in user), key=len)
            return Step(text=self.answer_of(self.questions[qid]))
        if "Nugget List: [" in user:  # nuggetizer's assignment prompt, verbatim
            self.calls["assign"] += 1
            listed = ast.literal_eval(user.split("Nugget List: ", 1)[1].split("\n", 1)[0])
            return Step(text=str([LABEL_AT.get(i, "not_support") for i in range(len(listed))]))
        name = layout_name(user)
        self.calls[name or "?"] += 1
        if name == "retrieval_grade":
            return Step(text=json.dumps({"reasoning": "Chunk 1 answers it.", "grade": 8}))
        if name == "answer_correctness":
            body = {"reasoning": "Matches.", "disagreements": [], "missing": [], "score": 7}
            return Step(text=json.dumps(body))
        return Step(status=400, text="unscripted prompt")


def _expected(rows: list[tuple[str, str, str]]) -> tuple[str, str, str, str]:
    """By hand: the scores of the scripted labels (nuggetizer's rule: partial counts 0.5), and the ids."""
    labels = [LABEL_AT.get(i, "not_support") for i in range(len(rows))]
    all_score = sum(SCORE[x] for x in labels) / len(rows)
    vital = [SCORE[x] for x, (_, _, imp) in zip(labels, rows, strict=True) if imp == "vital"]
    vital_score = sum(vital) / len(vital)
    mark = {nid: nid + ("*" if imp == "vital" else "") for nid, _, imp in rows}

    def ids(label: str) -> str:
        return ", ".join(mark[r[0]] for r, x in zip(rows, labels, strict=True) if x == label) or "-"

    scores = f"nugget_all {all_score:.2f}  nugget_vital {vital_score:.2f}"
    return scores, ids("support"), ids("partial_support"), ids("not_support")


def _nuggets_line(block: str) -> str:
    (line,) = [x.strip() for x in block.splitlines() if x.strip().startswith("nuggets: ")]
    return line


def test_the_judged_demo_prints_each_answers_nugget_scores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("bm25s")
    from ragmeter.cli import demo
    from ragmeter.cli.demo_print import print_judged
    from ragmeter.datasets import demo_dataset
    from ragmeter.score.plan import semantic_names
    from ragmeter.store import open_store

    dataset = demo_dataset()
    nuggets = _demo_nuggets()
    judge = Judge({q.question: q.query_id for q in dataset.queries}, nuggets)
    store = open_store(f"sqlite:///{tmp_path / 'demo.db'}")
    with scripted_server(judge) as server:
        config = demo.judged_config(f"openai-compatible:m@{server.url}", 3, tmp_path)
        assert {"nugget_all", "nugget_vital"} <= set(config.metrics)  # the demo asks for them itself
        # BM25 only, no embeddings: the nugget step is what is tested, not the hybrid retriever
        config = config.model_copy(
            update={
                "mode": "fulltext",
                "metrics": [m for m in config.metrics if m not in semantic_names()],
                "extra": {**config.extra, "semantic": False},
            }
        )
        judged = demo._judge_within_budget(dataset, config, store, 300.0, True, None, 300.0)
    assert judged is not None and judged.n_queries == 3
    # A run the demo's budget stopped is scored from its stored outputs (no call: the server is gone); the
    # nugget scores of the questions judged in time are kept and printed the same way.
    store.fail_run(judged.run_id, "interrupted (Ctrl-C / cancelled)")
    stopped_run = demo._score_what_was_judged(dataset, config, store, 300.0)
    store.close()
    capsys.readouterr()
    for run in (stopped_run, judged):
        print_judged(run, dataset, demo.DEMO_JUDGES)
    stopped, out = capsys.readouterr().out.split("LLM judges (", 1)
    assert judge.calls["assign"] == 3  # one assignment call per judged answer (<= 10 nuggets each)
    blocks = re.split(r"\n  \[\d\] ", out)
    for r in judged.per_query:
        (block,) = [b for b in blocks if b.startswith(f"{r.query_id}: ")]
        (kept,) = [b for b in re.split(r"\n  \[\d\] ", stopped) if b.startswith(f"{r.query_id}: ")]
        assert _nuggets_line(kept) == _nuggets_line(block)
        assert f"generated answer: {judge.answer_of(r.query_id)}" in block
        scores, supported, partial, missing = _expected(nuggets[r.query_id])
        assert (
            f"nuggets: {scores}  supported: {supported}  partial: {partial}  missing: {missing}  (* vital)"
        ) in block, block
    assert re.search(r"│ nugget_all\s+│\s+[0-9.]+\s+│\s+3 │", out), out  # the means' table has them too


def test_without_a_judge_one_line_names_the_command_that_gives_nugget_scores(
    tmp_path: Path, cli_env: dict[str, str], ragmeter_cli: Any
) -> None:
    """The hint's command is real: run as printed (with a scripted judge for MODEL), it scores nuggets."""
    pytest.importorskip("bm25s")
    from ragmeter.cli.demo_print import nugget_hint
    from ragmeter.datasets import demo_dataset

    line = nugget_hint()
    assert "\n" not in line and "need a judge" in line
    command = re.search(r"`ragmeter (run [^`]+)`", line).group(1)  # type: ignore[union-attr]
    dataset = demo_dataset()
    judge = Judge({q.question: q.query_id for q in dataset.queries}, _demo_nuggets())
    out = tmp_path / "run.json"
    assert command.count("MODEL") == 2  # the generator that writes the answers, the judge that assigns
    with scripted_server(judge) as server:
        args = command.replace("MODEL", f"openai-compatible:m@{server.url}").split()
        args += ["--limit", "2", "--db", cli_env["db"], "--output", str(out), "--no-progress"]
        code, stdout, stderr = ragmeter_cli(*args)
    assert code == 0, stdout + stderr
    per_query = json.loads(out.read_text())["per_query"]
    assert len(per_query) == 2 and judge.calls["generate"] == 2 and judge.calls["assign"] == 2
    nuggets = _demo_nuggets()
    for q in per_query:
        scores = _expected(nuggets[q["query_id"]])[0]
        got = {n: q["metrics"][n]["value"] for n in ("nugget_all", "nugget_vital")}
        assert scores == f"nugget_all {got['nugget_all']:.2f}  nugget_vital {got['nugget_vital']:.2f}"
