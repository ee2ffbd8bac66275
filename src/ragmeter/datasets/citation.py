"""Retrospective citation recommendation: a paper's abstract is the query, the papers it cites are the
relevant documents.

Two inputs:
- a JSONL of papers, one a line: ``{"id", "title", "abstract", "references": [id, ...]}`` (``doi`` is
  accepted for ``id`` and ``in_corpus_references`` for ``references``); every line is a corpus record;
- the ACM-CR folder layout (github.com/boudinfl/acm-cr): BibTeX records anywhere under the folder
  (``**/*.bib``, keyed by DOI) and the citing papers as ``papers/<venue>/<doi-suffix>.xml`` (title,
  abstract and ``<references>``; the sibling ``<doi-suffix>.dois`` is read when the XML lists none).
  A reference is in the corpus when the corpus has a record with its DOI.

A paper becomes a query when it has an abstract and at least ``min_refs`` references that are in the
corpus, not counting itself. The query paper stays in the corpus only when another query cites it; then
its query's metadata lists it under ``exclude_doc_ids`` so that a system can leave it out of its own
results. It is never its own ground truth.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.datasets.native import iter_jsonl
from ragmeter.errors import InputError
from ragmeter.models import Document, EvalDataset, EvalQuery
from ragmeter.yamlfile import read_text_any


@dataclass
class Paper:
    paper_id: str
    title: str = ""
    abstract: str = ""
    # None: the reference list is unknown (a plain corpus record), as opposed to an empty list.
    references: list[str] | None = None
    n_references_listed: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


def build_citation_dataset(path: str | Path, *, min_refs: int = 5, name: str | None = None) -> EvalDataset:
    """Build the citation-prediction dataset from a JSONL of papers or an ACM-CR folder."""
    if min_refs < 1:
        raise InputError("min_refs must be >= 1", source="--min-refs")
    source = Path(path)
    if source.is_dir():
        corpus, citing = _read_acm_cr(source)
        default_name = "acm-cr-citation"
    elif source.is_file():
        corpus = _read_papers_jsonl(source)
        citing = [p for p in corpus.values() if p.references is not None]
        default_name = f"{source.stem}-citation"
    else:
        raise InputError("no such file or folder", source=str(source))
    return _assemble(corpus, citing, min_refs=min_refs, name=name or default_name, source=source)


def _key(doc_id: str) -> str:
    # DOIs are case-insensitive; other ids compare the same way, which is harmless.
    return doc_id.strip().lower()


def _assemble(
    corpus: dict[str, Paper], citing: list[Paper], *, min_refs: int, name: str, source: Path
) -> EvalDataset:
    """Select the query papers and lay out queries + corpus. ``corpus`` is keyed by ``_key(id)``."""
    kept: list[tuple[Paper, list[str]]] = []
    dropped_no_abstract: list[str] = []
    dropped_few_refs: list[str] = []
    for paper in citing:
        own = _key(paper.paper_id)
        refs: list[str] = []
        seen: set[str] = {own}
        for ref in paper.references or []:
            k = _key(ref)
            if k in corpus and k not in seen:
                seen.add(k)
                refs.append(corpus[k].paper_id)
        if not paper.abstract.strip():
            dropped_no_abstract.append(paper.paper_id)
        elif len(refs) < min_refs:
            dropped_few_refs.append(paper.paper_id)
        else:
            kept.append((paper, refs))

    cited = {_key(ref) for _, refs in kept for ref in refs}
    query_keys = {_key(p.paper_id) for p, _ in kept}
    removed = query_keys - cited
    queries = []
    for paper, refs in kept:
        own = _key(paper.paper_id)
        metadata: dict[str, Any] = {
            "title": paper.title,
            "n_in_corpus_references": len(refs),
            **paper.metadata,
        }
        if paper.n_references_listed is not None:
            metadata["n_references_listed"] = paper.n_references_listed
        if own not in removed and own in corpus:
            metadata["exclude_doc_ids"] = [corpus[own].paper_id]
        queries.append(
            EvalQuery(
                query_id=paper.paper_id,
                question=paper.abstract.strip(),
                relevant_doc_ids=refs,
                metadata=metadata,
            )
        )
    documents = [
        Document(doc_id=p.paper_id, title=p.title, text=p.abstract or p.title, metadata=p.metadata)
        for k, p in corpus.items()
        if k not in removed
    ]
    return EvalDataset(
        name=name,
        description=(
            "Citation prediction: the abstract of a paper is the query; the in-corpus papers it cites are "
            "the relevant documents."
        ),
        queries=queries,
        corpus=documents,
        metadata={
            "task": "citation-prediction",
            "source": str(source),
            "min_refs": min_refs,
            "n_citing_papers": len(citing),
            "n_queries": len(queries),
            "dropped_few_references": dropped_few_refs,
            "dropped_no_abstract": dropped_no_abstract,
            "query_papers_removed_from_corpus": len(removed),
        },
    )


# --- JSONL of papers -------------------------------------------------------------------------------------


def _str_field(record: dict[str, Any], keys: tuple[str, ...], source: Path, lineno: int) -> str | None:
    for key in keys:
        if key in record and record[key] is not None:
            value = record[key]
            if not isinstance(value, str):
                raise InputError(f"field '{key}' must be a string", source=str(source), line=lineno)
            return value
    return None


def _read_papers_jsonl(path: Path) -> dict[str, Paper]:
    papers: dict[str, Paper] = {}
    for lineno, record in iter_jsonl(path):  # bad bytes or JSON: an InputError naming the line
        if not isinstance(record, dict):
            raise InputError("a paper must be a JSON object", source=str(path), line=lineno)
        paper_id = _str_field(record, ("id", "doi", "paper_id"), path, lineno)
        if not paper_id or not paper_id.strip():
            raise InputError("missing field 'id'", source=str(path), line=lineno)
        refs: list[str] | None = None
        for key in ("references", "in_corpus_references"):
            if key in record and record[key] is not None:
                value = record[key]
                if not isinstance(value, list) or not all(isinstance(r, str) for r in value):
                    raise InputError(
                        f"field '{key}' must be a list of paper ids", source=str(path), line=lineno
                    )
                refs = list(value)
                break
        k = _key(paper_id)
        if k in papers:
            raise InputError(f"duplicate paper id {paper_id!r}", source=str(path), line=lineno)
        listed = record.get("n_references_listed")
        papers[k] = Paper(
            paper_id=paper_id.strip(),
            title=_str_field(record, ("title",), path, lineno) or "",
            abstract=_str_field(record, ("abstract",), path, lineno) or "",
            references=refs,
            n_references_listed=listed if isinstance(listed, int) else None,
        )
    if not papers:
        raise InputError("no papers in file", source=str(path))
    return papers


# --- ACM-CR folder ----------------------------------------------------------------------------------------

_ENTRY = re.compile(r"@\s*(\w+)\s*[{(]")
_FIELD = re.compile(r"\s*,?\s*([A-Za-z][\w\-:.]*)\s*=\s*")
_BRACES = re.compile(r"[{}]")
_SPACES = re.compile(r"\s+")


def _match_brace(text: str, open_pos: int, source: Path) -> int:
    """Index of the brace closing the one at ``open_pos``."""
    depth = 0
    for m in _BRACES.finditer(text, open_pos):
        depth += 1 if m.group() == "{" else -1
        if depth == 0:
            return m.start()
    raise InputError("unbalanced braces", source=str(source), line=text.count("\n", 0, open_pos) + 1)


def iter_bibtex(text: str, source: Path) -> Iterator[tuple[str, str, dict[str, str]]]:
    """(entry type, key, fields) for each entry; field names lower-cased, values with braces removed."""
    pos = 0
    while True:
        m = _ENTRY.search(text, pos)
        if m is None:
            return
        kind = m.group(1).lower()
        open_pos = m.end() - 1
        if kind in ("comment", "preamble", "string") or text[open_pos] == "(":
            pos = m.end()
            continue
        close = _match_brace(text, open_pos, source)
        body = text[open_pos + 1 : close]
        pos = close + 1
        key, _, rest = body.partition(",")
        fields: dict[str, str] = {}
        i = 0
        while i < len(rest):
            fm = _FIELD.match(rest, i)
            if fm is None:
                break
            name = fm.group(1).lower()
            j = fm.end()
            if j >= len(rest):
                break
            if rest[j] == "{":
                end = _match_brace(rest, j, source)
                value = rest[j + 1 : end]
                i = end + 1
            elif rest[j] == '"':
                end = rest.find('"', j + 1)
                end = len(rest) if end < 0 else end
                value = rest[j + 1 : end]
                i = end + 1
            else:
                end = rest.find(",", j)
                end = len(rest) if end < 0 else end
                value = rest[j:end]
                i = end
            fields[name] = _SPACES.sub(" ", value.replace("{", "").replace("}", "")).strip()
        yield kind, key.strip(), fields


def _read_bib_records(folder: Path) -> dict[str, Paper]:
    records: dict[str, Paper] = {}
    files = sorted(p for p in folder.rglob("*.bib") if p.is_file())
    if not files:
        raise InputError("no BibTeX (*.bib) collection files under the folder", source=str(folder))
    for bib in files:
        text = bib.read_text(encoding="utf-8", errors="replace")
        for kind, key, fields in iter_bibtex(text, bib):
            doi = fields.get("doi") or key
            if not doi:
                continue
            k = _key(doi)
            if k in records:  # the ACM-CR collection repeats some DOIs; the first entry wins
                continue
            meta: dict[str, Any] = {
                name: fields[name] for name in ("year", "venue", "booktitle", "journal") if name in fields
            }
            meta["type"] = kind
            records[k] = Paper(
                paper_id=doi.strip(),
                title=fields.get("title", ""),
                abstract=fields.get("abstract", ""),
                metadata=meta,
            )
    return records


def _read_dois(path: Path) -> list[str]:
    """The references of an ACM-CR ``.dois`` file (a leading ``-`` is kept: membership in the corpus
    decides what counts, and some ``-`` DOIs do have a record)."""
    refs: list[str] = []
    for lineno, raw in enumerate(read_text_any(path).splitlines(), start=1):
        parts = raw.split()  # tab-separated in most files, spaces in a few
        if not parts:
            continue
        if len(parts) < 2:
            raise InputError("expected '[n] DOI [venue]'", source=str(path), line=lineno)
        refs.append(parts[1])
    return refs


def _read_acm_cr(folder: Path) -> tuple[dict[str, Paper], list[Paper]]:
    corpus = _read_bib_records(folder)
    citing: list[Paper] = []
    for xml_path in sorted(p for p in folder.rglob("*.xml") if p.is_file()):
        try:
            root = ET.parse(xml_path).getroot()
        except ET.ParseError as exc:
            raise InputError(f"not valid XML ({exc})", source=str(xml_path)) from None
        doi = (root.findtext("doi") or "").strip()
        if root.tag != "doc" or not doi:
            continue  # not an ACM-CR paper record
        # The curated DOIs of <references>; the .dois file holds the same list in older snapshots.
        refs = [(r.text or "").strip() for r in root.iterfind("references/reference")]
        refs = [r for r in refs if r]
        dois = xml_path.with_suffix(".dois")
        if not refs and dois.is_file():
            refs = _read_dois(dois)
        citing.append(
            Paper(
                paper_id=corpus[_key(doi)].paper_id if _key(doi) in corpus else doi,
                title=_SPACES.sub(" ", root.findtext("title") or "").strip(),
                abstract=_SPACES.sub(" ", root.findtext("abstract") or "").strip(),
                references=refs,
                n_references_listed=len(refs),
                metadata={"venue_folder": xml_path.parent.name},
            )
        )
    if not citing:
        raise InputError("no citing papers (ACM-CR <doc> XML files) under the folder", source=str(folder))
    return corpus, citing
