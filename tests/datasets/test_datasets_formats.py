"""Loaders of public formats on small files written here: BEIR, TREC, SQuAD, HotpotQA, NQ-open."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from datasets_testutil import write_jsonl

from ragmeter.datasets import load_dataset, validate_dataset
from ragmeter.datasets.beir import load_trec
from ragmeter.datasets.qa import load_hotpotqa, load_squad, passage_id
from ragmeter.errors import InputError


def _beir(root: Path) -> Path:
    write_jsonl(
        root / "corpus.jsonl",
        [
            {"_id": "10", "title": "A", "text": "alpha text", "metadata": {}},
            {"_id": "11", "title": "", "text": "beta text", "metadata": {}},
            {"_id": "12", "title": "C", "text": "gamma text", "metadata": {}},
        ],
    )
    write_jsonl(
        root / "queries.jsonl",
        [{"_id": "1", "text": "alpha?"}, {"_id": "2", "text": "beta?"}, {"_id": "3", "text": "x"}],
    )
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\t10\t2\n1\t12\t0\n2\t11\t1\n")
    (root / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n3\t12\t1\n")
    return root


def test_beir_folder_keeps_the_split_queries_with_graded_qrels(tmp_path: Path) -> None:
    ds = load_dataset(str(_beir(tmp_path)))
    assert [q.query_id for q in ds.queries] == ["1", "2"]
    assert ds.queries[0].relevance == {"10": 2, "12": 0}
    assert ds.queries[0].relevant_doc_ids == ["10"]
    assert ds.corpus is not None and [d.doc_id for d in ds.corpus] == ["10", "11", "12"]
    train = load_dataset(str(tmp_path), split="train")
    assert [q.query_id for q in train.queries] == ["3"]
    with pytest.raises(InputError, match="no split 'dev'"):
        load_dataset(str(tmp_path), split="dev")
    assert validate_dataset(tmp_path) == []


def test_beir_bad_qrels_line_is_located(tmp_path: Path) -> None:
    _beir(tmp_path)
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\t10\n")
    with pytest.raises(InputError, match=r"test.tsv:2: expected 3 tab-separated fields"):
        load_dataset(str(tmp_path))


def test_trec_topics_sgml_and_tsv(tmp_path: Path) -> None:
    (tmp_path / "topics.txt").write_text(
        "<top>\n<num> Number: 301\n<title> International Organized Crime\n<desc> Description:\nlong\n</top>\n"
        "<top>\n<num> Number: 302\n<title> Poliomyelitis  and Post-Polio\n</top>\n"
    )
    (tmp_path / "qrels.txt").write_text("301 0 D1 1\n301 0 D2 0\n302 0 D3 2\n")
    (tmp_path / "corpus.tsv").write_text("D1\tcrime text\nD2\tother\nD3\tpolio text\n")
    ds = load_trec(tmp_path / "topics.txt", tmp_path / "qrels.txt", tmp_path / "corpus.tsv")
    assert [(q.query_id, q.question) for q in ds.queries] == [
        ("301", "International Organized Crime"),
        ("302", "Poliomyelitis and Post-Polio"),
    ]
    assert ds.queries[0].relevant_doc_ids == ["D1"] and ds.queries[1].relevance == {"D3": 2}
    (tmp_path / "topics.tsv").write_text("301\tcrime\n302\tpolio\n")
    ds2 = load_trec(tmp_path / "topics.tsv", tmp_path / "qrels.txt", tmp_path / "corpus.tsv")
    assert [q.question for q in ds2.queries] == ["crime", "polio"]
    (tmp_path / "qrels.txt").write_text("301 0 D1\n")
    with pytest.raises(InputError, match=r"qrels.txt:1: expected 4 fields"):
        load_trec(tmp_path / "topics.tsv", tmp_path / "qrels.txt", tmp_path / "corpus.tsv")


SQUAD = {
    "version": "1.1",
    "data": [
        {
            "title": "Super_Bowl",
            "paragraphs": [
                {
                    "context": "The Broncos won Super Bowl 50.",
                    "qas": [
                        {
                            "id": "a1",
                            "question": "Who won?",
                            "answers": [
                                {"text": "Broncos", "answer_start": 4},
                                {"text": "The Broncos", "answer_start": 0},
                                {"text": "Broncos", "answer_start": 4},
                            ],
                        }
                    ],
                },
                {
                    "context": "It was held in Santa Clara.",
                    "qas": [
                        {
                            "id": "a2",
                            "question": "Where?",
                            "answers": [{"text": "Santa Clara", "answer_start": 15}],
                        }
                    ],
                },
            ],
        },
        {
            "title": "Bees",
            "paragraphs": [
                {
                    "context": "Bees make honey.",
                    "qas": [
                        {
                            "id": "b1",
                            "question": "What do bees make?",
                            "answers": [{"text": "honey", "answer_start": 10}],
                        }
                    ],
                }
            ],
        },
    ],
}


def test_squad_paragraphs_become_the_corpus(tmp_path: Path) -> None:
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(SQUAD))
    ds = load_dataset(str(path))
    assert ds.corpus is not None
    assert [d.doc_id for d in ds.corpus] == ["Super_Bowl_p0", "Super_Bowl_p1", "Bees_p0"]
    assert ds.corpus[0].title == "Super Bowl"
    q = ds.queries[0]
    assert q.relevant_doc_ids == ["Super_Bowl_p0"]
    assert q.answers == ["Broncos", "The Broncos"] and q.ground_truth_answer == "Broncos"
    sample = load_squad(path, limit=2, seed=1)
    assert len(sample.queries) == 2 and len(sample.corpus or []) == 3
    assert sample == load_squad(path, limit=2, seed=1)


def test_hotpotqa_official_json_and_hf_jsonl_agree(tmp_path: Path) -> None:
    official = [
        {
            "_id": "h1",
            "question": "Which is older?",
            "answer": "X",
            "type": "comparison",
            "level": "hard",
            "supporting_facts": [["X", 0], ["Y", 1], ["X", 1]],
            "context": [["X", ["X is old.", " Very old."]], ["Y", ["Y is new."]], ["Z", ["Z."]]],
        },
        {
            "_id": "h2",
            "question": "Where is Y?",
            "answer": "here",
            "type": "bridge",
            "level": "hard",
            "supporting_facts": [["Y", 0]],
            "context": [["Y", ["Y is new."]], ["W", ["W."]]],
        },
    ]
    (tmp_path / "h.json").write_text(json.dumps(official))
    hf = [
        {
            "id": r["_id"],
            "question": r["question"],
            "answer": r["answer"],
            "type": r["type"],
            "level": r["level"],
            "supporting_facts": {
                "title": [t for t, _ in r["supporting_facts"]],
                "sent_id": [s for _, s in r["supporting_facts"]],
            },
            "context": {"title": [t for t, _ in r["context"]], "sentences": [s for _, s in r["context"]]},
        }
        for r in official
    ]
    write_jsonl(tmp_path / "h.jsonl", hf)
    a = load_hotpotqa(tmp_path / "h.json")
    b = load_dataset(str(tmp_path / "h.jsonl"))
    assert [d.doc_id for d in a.corpus or []] == ["X", "Y", "Z", "W"]
    assert (a.corpus or [])[0].text == "X is old. Very old."
    assert a.queries[0].relevant_doc_ids == ["X", "Y"]
    assert [q.model_dump(exclude={"metadata"}) for q in a.queries] == [
        q.model_dump(exclude={"metadata"}) for q in b.queries
    ]
    assert a.corpus == b.corpus


def test_nq_open_pools_passages_and_marks_gold(tmp_path: Path) -> None:
    recs = [
        {
            "question": "q one",
            "answers": ["a1"],
            "ctxs": [
                {"title": "T1", "text": "gold one", "isgold": True},
                {"title": "T2", "text": "distractor", "isgold": False},
            ],
        },
        {
            "question": "q two",
            "answers": ["a2", "a2"],
            "ctxs": [
                {"title": "T2", "text": "distractor", "isgold": False},
                {"title": "T3", "text": "gold two", "isgold": True},
            ],
        },
    ]
    path = tmp_path / "nq.jsonl.gz"
    with gzip.open(path, "wt") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in recs)
    ds = load_dataset(str(path))
    assert len(ds.corpus or []) == 3  # the shared distractor is one document
    assert ds.queries[0].relevant_doc_ids == [passage_id("T1", "gold one")]
    assert ds.queries[1].answers == ["a2"] and ds.queries[1].query_id == "nq-1"
