"""`ragmeter nuggets ...` and `run/rescore --nuggets`: conversions, a bad file as one line naming the file and
the line with exit 2, and the creation loop (windows of 10 passages, importance in batches of 10, vital first)
over the scripted HTTP server."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import pytest
from nugget_fakes import write_set

from ragmeter.cli import main
from ragmeter.llm.scripted import ScriptedRequest, Step

FIXTURES = Path(__file__).parent / "fixtures"


def run_cli(args: list[str]) -> int:
    with pytest.raises(SystemExit) as info:
        main(args)
    code = info.value.code
    return 0 if code is None else int(code)


def test_validate_show_import_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = FIXTURES / "trec_nuggets.tsv"
    assert run_cli(["nuggets", "validate", str(src)]) == 0
    out = capsys.readouterr().out
    assert "2 queries, 3 nuggets (2 vital, 1 okay)" in out
    digest = re.search(r"hash ([0-9a-f]{12})", out)
    assert digest is not None
    ours = tmp_path / "ours.jsonl"
    assert run_cli(["nuggets", "import", str(src), "-o", str(ours)]) == 0
    assert json.loads(ours.read_text().splitlines()[0])["query_id"] == "q1"
    nz = tmp_path / "nz.jsonl"
    assert run_cli(["nuggets", "export", str(ours), "--to", "nuggetizer", "-o", str(nz)]) == 0
    assert digest.group(1) in capsys.readouterr().out  # the same set in every layout
    assert json.loads(nz.read_text().splitlines()[1]) == {
        "qid": "q2",
        "query": "",
        "nuggets": [{"text": "Rome is the capital of Italy", "importance": "vital"}],
    }
    assert run_cli(["nuggets", "show", str(nz), "--query", "q1"]) == 0
    shown = capsys.readouterr().out
    assert "vital  Paris is the capital of France" in shown and "Rome" not in shown


@pytest.mark.parametrize("command", ["validate", "show", "run", "rescore"])
def test_a_bad_file_is_one_line_naming_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"query_id": "a", "nuggets": [{"id": "1", "text": "x", "importance": "vital"}]}\n'
        '{"query_id": "b", "nuggets": [{"id": "1", "text": "y", "importance": "essential"}]}\n'
    )
    db = tmp_path / "r.db"
    args = {
        "validate": ["nuggets", "validate", str(bad)],
        "show": ["nuggets", "show", str(bad)],
        "run": [
            "run",
            "--dataset",
            "demo",
            "--judge",
            "openai-compatible:j@http://127.0.0.1:9/v1",
            "--nuggets",
            str(bad),
            "--db",
            f"sqlite:///{db}",
            "-o",
            str(tmp_path / "out.json"),
        ],
        "rescore": ["rescore", "no-such-run", "--nuggets", str(bad), "--db", f"sqlite:///{db}"],
    }[command]
    code = run_cli(args)
    err = capsys.readouterr().err.strip()
    if command == "rescore":  # the run is looked up first: a missing run is its own one line
        assert code == 2 and len(err.splitlines()) == 1
        return
    assert code == 2
    assert err.splitlines() == [err] and f"{bad}:2:" in err and "importance" in err
    assert "Traceback" not in err
    assert not (tmp_path / "out.json").exists()


def _creator(calls: list[str]) -> Any:
    """Nuggetizer-style replies: each creation call adds one nugget per passage in its window; importance:
    every third nugget vital."""

    def reply(req: ScriptedRequest) -> Step:
        user = req.user
        if "Initial Nugget List:" in user:
            calls.append("create")
            current = ast.literal_eval(user.split("Initial Nugget List: ", 1)[1].split("\n", 1)[0])
            passages = re.findall(r"^\[\d+\] (.*)$", user, re.M)
            return Step(text=str(current + [f"fact from {p}" for p in passages]))
        calls.append("score")
        nuggets = ast.literal_eval(user.split("Nugget List: ", 1)[1].split("\n", 1)[0])
        start = int(re.search(r"fact from passage (\d+)", nuggets[0]).group(1))  # type: ignore[union-attr]
        return Step(text=str(["vital" if (start + i) % 3 == 0 else "okay" for i in range(len(nuggets))]))

    return reply


async def test_create_windows_batches_and_vital_first(scripted: Any) -> None:
    from ragmeter.judges.nugget_create import create
    from ragmeter.llm import from_spec

    calls: list[str] = []
    server = await scripted(_creator(calls))
    llm = from_spec(f"openai-compatible:m@{server.url}")
    passages = [(f"d{i}", f"passage {i}") for i in range(1, 24)]  # 23 passages: windows of 10, 10, 3
    made = await create(llm, "q1", "what?", passages, keep=8, model="m")
    await llm.aclose()
    # 23 nuggets made, cut to 30 max (not reached); importance: 3 calls (10, 10, 3)
    assert calls == ["create"] * 3 + ["score"] * 3
    got = made.nuggets.nuggets
    assert len(got) == 8
    vital = [n.text for n in got if n.importance == "vital"]
    assert vital == [f"fact from passage {i}" for i in (3, 6, 9, 12, 15, 18, 21)]  # all 7 vital, in order
    assert got[-1].text == "fact from passage 1" and got[-1].importance == "okay"  # then okay, in order
    assert made.nuggets.provenance.documents[0] == "d1" and made.nuggets.provenance.model == "m"


async def test_a_reply_that_repeats_its_list_keeps_each_nugget_once(scripted: Any) -> None:
    """Seen with the local 1.5B model: one list of facts returned four times over. Each fact is kept once
    (compared up to case and spacing), in first-seen order, and the set's provenance says how many went."""
    from ragmeter.judges.nugget_create import create
    from ragmeter.llm import from_spec

    facts = ["Indexes are saved under a name.", "A fingerprint is stored.", "A change rebuilds the index."]
    repeated = facts + [f.upper() for f in facts] + [f"  {f}  " for f in facts] + facts

    def reply(req: ScriptedRequest) -> Step:
        if "Initial Nugget List:" in req.user:
            return Step(text=str(repeated))
        nuggets = ast.literal_eval(req.user.split("Nugget List: ", 1)[1].split("\n", 1)[0])
        return Step(text=str(["vital"] * len(nuggets)))

    server = await scripted(reply)
    llm = from_spec(f"openai-compatible:m@{server.url}")
    made = await create(llm, "q1", "what?", [("d1", "passage 1")], keep=20, model="m")
    await llm.aclose()
    assert [n.text for n in made.nuggets.nuggets] == facts
    assert made.flags == ["passages 1-1: 9 repeated nugget(s) kept once"]
    assert "9 repeated" in (made.nuggets.provenance.note or "")


def test_demo_set_is_shipped_and_valid(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from ragmeter.nuggets.demo import demo_nuggets_path

    assert run_cli(["nuggets", "validate", str(demo_nuggets_path())]) == 0
    assert "valid" in capsys.readouterr().out
    write_set(tmp_path / "x.jsonl")  # the fakes' set is valid too
    assert run_cli(["nuggets", "validate", str(tmp_path / "x.jsonl")]) == 0


def test_a_demo_run_naming_nugget_metrics_gets_the_shipped_set() -> None:
    from ragmeter.models import EvalConfig
    from ragmeter.nuggets.demo import demo_nuggets_path
    from ragmeter.run.prepare import validate

    config = EvalConfig(
        dataset="demo",
        use_llm_judge=True,
        judge_model="openai-compatible:j@http://127.0.0.1:9/v1",
        metrics=["nugget_vital"],
    )
    prepared = validate("demo", "builtin", config)
    assert prepared.config.nuggets["path"] == str(demo_nuggets_path())
    assert prepared.record.nuggets is not None and prepared.plan.judges == ("nugget_vital",)


def test_passages_are_the_relevant_documents_else_the_runs_pool() -> None:
    from ragmeter.judges.nugget_create import passages_of
    from ragmeter.models import Document, EvalDataset, EvalQuery, EvalRunResult, QueryEvalResult, RetrievedDoc

    data = EvalDataset(
        name="p",
        queries=[
            EvalQuery(query_id="a", question="qa", relevance={"d2": 1, "d3": 2}),
            EvalQuery(query_id="b", question="qb"),  # no qrels: pooled
        ],
        corpus=[Document(doc_id=f"d{i}", text=f"text {i}") for i in range(1, 5)],
    )

    def run(ids: list[str]) -> EvalRunResult:
        docs = [RetrievedDoc(doc_id=d, score=1.0, rank=i, text="") for i, d in enumerate(ids, 1)]
        return EvalRunResult(per_query=[QueryEvalResult(query_id="b", question="qb", retrieved=docs)])

    got = passages_of(data, [run(["d1", "d4", "d2"]), run(["d4", "d3"])], depth=2)
    assert got["a"] == [("d3", "text 3"), ("d2", "text 2")]  # best grade first
    assert [d for d, _ in got["b"]] == ["d1", "d4", "d3"]  # rank 1 of each run, then rank 2; depth 2


def test_create_command_writes_a_set_with_provenance(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`ragmeter nuggets create` end to end, the scripted server in a thread (the command runs its own loop)."""
    from ragmeter.nuggets import read_nuggets
    from scripted_servers import serve_in_thread

    calls: list[str] = []

    def reply(req: ScriptedRequest) -> Step:
        user = req.user
        if "Initial Nugget List:" in user:
            calls.append("create")
            return Step(text=str(["first fact", "second fact"]))
        calls.append("score")
        return Step(text=str(["okay", "vital"]))

    out = tmp_path / "made.jsonl"
    with serve_in_thread(reply) as server:
        args = ["nuggets", "create", "--dataset", "demo", "--model", f"openai-compatible:m@{server.url}"]
        code = run_cli([*args, "--limit", "2", "--max-nuggets", "1", "-o", str(out)])
    assert code == 0 and sorted(calls) == ["create", "create", "score", "score"]  # 2 queries, concurrently
    made = read_nuggets(out)
    q01 = made.get("q01")
    assert q01 is not None and [(n.text, n.importance) for n in q01.nuggets] == [("second fact", "vital")]
    assert q01.provenance.documents == ["overview"] and (q01.provenance.prompt or "").startswith(
        "nugget_create_nuggetizer/"
    )
    assert f"hash {made.hash}" in capsys.readouterr().out
