"""`ragmeter datasets unanswerable` on the demo, and `answerable: false` read from files (native, SQuAD v2)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragmeter.cli import cli
from ragmeter.datasets import demo_dataset, load_dataset


def _make(tmp_path: Path, name: str, seed: int, share: float = 0.2) -> tuple[str, Path]:
    out = tmp_path / name
    got = CliRunner().invoke(
        cli,
        ["datasets", "unanswerable", "demo", "--share", str(share), "--seed", str(seed), "-o", str(out)],
        catch_exceptions=False,
    )
    assert got.exit_code == 0, got.output
    return got.output, out


def test_only_the_chosen_queries_lose_their_documents(tmp_path: Path) -> None:
    demo = demo_dataset()
    uses = Counter(d for q in demo.queries for d in q.judgments())
    eligible = [q.query_id for q in demo.queries if all(uses[d] == 1 for d in q.judgments())]
    printed, path = _make(tmp_path, "u.json", seed=7)
    copy = load_dataset(str(path))
    chosen = [q for q in copy.queries if not q.answerable]
    assert len(chosen) == min(len(eligible), round(0.2 * len(demo.queries))) == 12
    assert f"{len(eligible)} of 60 queries eligible" in printed and "12 chosen" in printed
    corpus = {d.doc_id for d in copy.corpus or []}
    original = {q.query_id: q for q in demo.queries}
    for q in copy.queries:
        before = set(original[q.query_id].judgments())
        if q.answerable:
            assert q.judgments() == original[q.query_id].judgments()
            assert before <= corpus  # every other query's relevant documents are all still there
        else:
            assert q.query_id in eligible and not q.judgments()
            assert set(q.metadata["removed_relevant_doc_ids"]) == before and not before & corpus
    removed = {d.doc_id for d in demo.corpus or []} - corpus
    assert removed == {d for q in chosen for d in q.metadata["removed_relevant_doc_ids"]}


def test_the_same_seed_gives_the_same_copy(tmp_path: Path) -> None:
    _, a = _make(tmp_path, "a.json", seed=11)
    _, b = _make(tmp_path, "b.json", seed=11)
    _, c = _make(tmp_path, "c.json", seed=12)
    assert a.read_bytes() == b.read_bytes()
    chosen = [{q.query_id for q in load_dataset(str(p)).queries if not q.answerable} for p in (a, c)]
    assert chosen[0] != chosen[1]


def test_a_share_out_of_range_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "none.json"
    got = CliRunner().invoke(cli, ["datasets", "unanswerable", "demo", "--share", "1.5", "-o", str(out)])
    assert got.exit_code == 2 and "--share" in got.output and not out.exists()


def test_answerable_false_is_read_strictly_from_native_json(tmp_path: Path) -> None:
    from ragmeter.errors import InputError

    rows = [
        {"query_id": "a", "question": "q?", "answerable": False},
        {"query_id": "b", "question": "q?"},
    ]
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"name": "n", "queries": rows}))
    loaded = load_dataset(str(good))
    assert [q.answerable for q in loaded.queries] == [False, True]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"name": "n", "queries": [{**rows[0], "answerable": "no"}]}))
    with pytest.raises(InputError, match="answerable"):
        load_dataset(str(bad))


def test_squad_v2_is_impossible_maps_to_answerable_false(tmp_path: Path) -> None:
    squad = {
        "version": "v2.0",
        "data": [
            {
                "title": "T",
                "paragraphs": [
                    {
                        "context": "Paris is the capital of France.",
                        "qas": [
                            {"id": "p", "question": "Capital of France?", "is_impossible": False,
                             "answers": [{"text": "Paris", "answer_start": 0}]},
                            {"id": "i", "question": "Capital of Mars?", "is_impossible": True, "answers": []},
                        ],
                    }
                ],
            }
        ],
    }  # fmt: skip
    path = tmp_path / "dev-v2.0.json"
    path.write_text(json.dumps(squad))
    by_id = {q.query_id: q for q in load_dataset(str(path)).queries}
    assert by_id["p"].answerable and not by_id["i"].answerable
