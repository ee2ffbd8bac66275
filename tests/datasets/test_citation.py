from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ragmeter.datasets.citation import build_citation_dataset, iter_bibtex
from ragmeter.errors import InputError

DATA_DIR = Path(
    os.environ.get("RAGMETER_DATA_DIR", Path(__file__).resolve().parents[3] / "shared" / "datasets")
)
ACM_CR = DATA_DIR / "acm_cr_citation"


def write_jsonl(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def papers() -> list[dict[str, object]]:
    corpus = [{"id": f"d{i}", "title": f"Paper {i}", "abstract": f"About topic {i}."} for i in range(8)]
    return [
        *corpus,
        # 3 in-corpus refs + 1 unknown + itself + a duplicate -> 3 counted.
        {
            "id": "p1",
            "title": "P1",
            "abstract": "Query one.",
            "references": ["d0", "d1", "d2", "zz", "p1", "d1"],
        },
        # 5 in-corpus refs, cites p3 (so p3 stays in the corpus).
        {"id": "p2", "title": "P2", "abstract": "Query two.", "references": ["d0", "d1", "d2", "d3", "p3"]},
        {
            "id": "p3",
            "title": "P3",
            "abstract": "Query three.",
            "references": ["d4", "d5", "d6", "D7", "p2", "d0"],
        },
        # Enough refs but no abstract: not a query.
        {"id": "p4", "title": "P4", "abstract": "", "references": ["d0", "d1", "d2", "d3", "d4"]},
    ]


def test_jsonl_selection_and_self_exclusion(tmp_path: Path) -> None:
    ds = build_citation_dataset(write_jsonl(tmp_path / "papers.jsonl", papers()), min_refs=5)
    by_id = {q.query_id: q for q in ds.queries}
    assert sorted(by_id) == ["p2", "p3"]
    assert ds.metadata["dropped_few_references"] == ["p1"]
    assert ds.metadata["dropped_no_abstract"] == ["p4"]
    assert by_id["p2"].question == "Query two."
    assert by_id["p2"].relevant_doc_ids == ["d0", "d1", "d2", "d3", "p3"]
    # Case-insensitive match maps D7 onto the corpus id d7.
    assert by_id["p3"].relevant_doc_ids == ["d4", "d5", "d6", "d7", "p2", "d0"]
    for q in ds.queries:
        assert q.query_id not in q.relevant_doc_ids
    assert ds.corpus is not None
    corpus_ids = {d.doc_id for d in ds.corpus}
    for q in ds.queries:
        assert set(q.relevant_doc_ids) <= corpus_ids
    # p2 and p3 cite each other, so both stay in the corpus, each flagged for exclusion from its own query.
    assert {"p2", "p3", "p1", "p4"} <= corpus_ids
    assert by_id["p2"].metadata["exclude_doc_ids"] == ["p2"]
    # p4 has no abstract: it is kept as a corpus record with its title as text.
    assert next(d for d in ds.corpus if d.doc_id == "p4").text == "P4"


def test_uncited_query_paper_leaves_the_corpus(tmp_path: Path) -> None:
    ds = build_citation_dataset(write_jsonl(tmp_path / "papers.jsonl", papers()), min_refs=3)
    ids = {q.query_id for q in ds.queries}
    assert ids == {"p1", "p2", "p3"}
    assert ds.corpus is not None
    corpus_ids = {d.doc_id for d in ds.corpus}
    assert "p1" not in corpus_ids  # nobody cites p1: it would only be found as itself
    assert "exclude_doc_ids" not in next(q for q in ds.queries if q.query_id == "p1").metadata
    assert ds.metadata["query_papers_removed_from_corpus"] == 1


@pytest.mark.parametrize(
    ("content", "line", "needle"),
    [
        ('{"id": "a", "abstract": "x"}\n{not json}\n', 2, "not valid JSON"),
        ('{"title": "no id"}\n', 1, "missing field 'id'"),
        ('{"id": "a", "references": "d0"}\n', 1, "'references' must be a list"),
        ('{"id": "a"}\n{"id": "A"}\n', 2, "duplicate paper id"),
        ("[1, 2]\n", 1, "JSON object"),
    ],
)
def test_bad_jsonl_names_line(tmp_path: Path, content: str, line: int, needle: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as info:
        build_citation_dataset(path)
    assert info.value.line == line and info.value.source == str(path)
    assert needle in str(info.value)


def test_missing_path_and_bad_min_refs(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        build_citation_dataset(tmp_path / "nope.jsonl")
    with pytest.raises(InputError, match="min_refs"):
        build_citation_dataset(tmp_path, min_refs=0)
    with pytest.raises(InputError, match=r"\*\.bib"):
        build_citation_dataset(tmp_path)


def test_bibtex_parser_nested_braces_and_quotes(tmp_path: Path) -> None:
    text = """@comment{ignored}
@inproceedings{10.1/A,
title = {The {BM25} Model, Revisited},
doi = {10.1/A},
abstract = {A {nested {deep}} value,
  over lines},
year = 2020,
note = "quoted, with comma"
}
@article{KEY2, title={Second}}
"""
    entries = list(iter_bibtex(text, tmp_path / "x.bib"))
    assert [(k, key) for k, key, _ in entries] == [("inproceedings", "10.1/A"), ("article", "KEY2")]
    fields = entries[0][2]
    assert fields["title"] == "The BM25 Model, Revisited"
    assert fields["abstract"] == "A nested deep value, over lines"
    assert fields["year"] == "2020"
    assert fields["note"] == "quoted, with comma"
    with pytest.raises(InputError, match="unbalanced"):
        list(iter_bibtex("@article{x, title={open}", tmp_path / "y.bib"))


def test_acm_cr_layout_small(tmp_path: Path) -> None:
    (tmp_path / "acm-dl").mkdir()
    bib = "".join(
        f"@inproceedings{{10.1/{i},\ntitle = {{T{i}}},\ndoi = {{10.1/{i}}},\nabstract = {{Abs {i}}}\n}}\n\n"
        for i in range(6)
    )
    (tmp_path / "acm-dl" / "x.bib").write_text(bib, encoding="utf-8")
    papers_dir = tmp_path / "topics+qrels" / "papers" / "v"
    papers_dir.mkdir(parents=True)
    (papers_dir / "0.xml").write_text(
        "<doc><doi>10.1/0</doi><title>T0</title><abstract>Query &amp; abstract</abstract>"
        "<references>"
        + "".join(f"<reference>10.1/{i}</reference>" for i in (0, 1, 2, 3))
        + "</references></doc>",
        encoding="utf-8",
    )
    (papers_dir / "0.dois").write_text("[1]\t10.1/9\n", encoding="utf-8")  # ignored: the XML lists refs
    # A paper whose XML has no <references>: its .dois file (tab or space separated, '-' kept) is read.
    (papers_dir / "5.xml").write_text(
        "<doc><doi>10.1/5</doi><abstract>Five</abstract></doc>", encoding="utf-8"
    )
    (papers_dir / "5.dois").write_text("[1]\t10.1/1\tX\n-[2]   10.1/2\n[3] 10.1/404\n", encoding="utf-8")
    ds = build_citation_dataset(tmp_path, min_refs=2)
    by_id = {q.query_id: q for q in ds.queries}
    assert by_id["10.1/0"].relevant_doc_ids == ["10.1/1", "10.1/2", "10.1/3"]
    assert by_id["10.1/0"].question == "Query & abstract"
    assert by_id["10.1/5"].relevant_doc_ids == ["10.1/1", "10.1/2"]
    assert ds.corpus is not None
    assert {d.doc_id for d in ds.corpus} == {"10.1/1", "10.1/2", "10.1/3", "10.1/4"}


@pytest.mark.skipif(not ACM_CR.is_dir(), reason=f"ACM-CR data not found at {ACM_CR} (set RAGMETER_DATA_DIR)")
def test_acm_cr_real_data() -> None:
    ds = build_citation_dataset(ACM_CR, min_refs=5)
    assert len(ds.queries) == 45  # as SOURCE.md states
    assert ds.metadata["n_citing_papers"] == 50
    assert ds.corpus is not None
    corpus_ids = {d.doc_id for d in ds.corpus}
    derived = {}
    with (ACM_CR / "citation_eval.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            derived[rec["doi"]] = rec
    expected = {doi for doi, rec in derived.items() if len(set(rec["in_corpus_references"])) >= 5}
    assert {q.query_id for q in ds.queries} == expected
    for q in ds.queries:
        assert q.query_id not in q.relevant_doc_ids
        assert set(q.relevant_doc_ids) <= corpus_ids
        # Same links as the curator's derived file (which keeps 5 duplicate listings; we keep each once).
        assert q.relevant_doc_ids == list(dict.fromkeys(derived[q.query_id]["in_corpus_references"]))
        assert q.question == derived[q.query_id]["abstract"]
        if q.query_id in corpus_ids:
            assert q.metadata["exclude_doc_ids"] == [q.query_id]
    # 10,644 records; the 41 query papers no other query cites are left out.
    assert len(corpus_ids) == 10_644 - ds.metadata["query_papers_removed_from_corpus"]


def test_cli_build_citation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ragmeter.cli import main
    from ragmeter.models import EvalDataset

    src = write_jsonl(tmp_path / "papers.jsonl", papers())
    out = tmp_path / "out" / "dataset.json"
    with pytest.raises(SystemExit) as info:
        main(["datasets", "build-citation", "--corpus", str(src), "--min-refs", "5", "--output", str(out)])
    assert info.value.code == 0
    assert "2 of 4 citing papers" in capsys.readouterr().out
    ds = EvalDataset.model_validate_json(out.read_text(encoding="utf-8"))
    assert sorted(q.query_id for q in ds.queries) == ["p2", "p3"]

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a"}\n{oops\n', encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        main(["datasets", "build-citation", "--corpus", str(bad), "--output", str(tmp_path / "x.json")])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"{bad}:2: not valid JSON" in err and "Traceback" not in err
