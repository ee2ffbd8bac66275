"""LLM relevance labels for pooled (query, doc) pairs, and how far they can stand in for human qrels.

1. `pool(runs, depth)`: the top `depth` docs of every run, per query (TREC pooling).
2. `pairs_to_label(pool, human)`: the pooled pairs the human qrels do not judge (or all of them).
3. `label_pairs(...)`: the UMBRELA-style judge (`ragmeter.judges.trec_relevance`) grades each pair 0-3 with
   bounded concurrency; a failed pair is left unjudged and counted, never guessed.
4. `merge_qrels(human, llm)`: one qrels in which a human grade always wins.
5. `meta_evaluate(human, llm, runs, measure)`: per-label agreement on the pairs both judge (Cohen's kappa,
   quadratic-weighted kappa, bootstrap intervals) and how well the system ranking under the LLM qrels matches
   the one under the human qrels (Kendall's tau-b and tau_AP over the runs, as UMBRELA reports).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from ragmeter.ir import Qrels, Run
from ragmeter.llm.base import LLMClient
from ragmeter.validity.qrels_meta import DEFAULT_LLM_RELEVANT_GRADE as DEFAULT_LLM_RELEVANT_GRADE
from ragmeter.validity.qrels_meta import MetaEvaluation as MetaEvaluation
from ragmeter.validity.qrels_meta import meta_evaluate as meta_evaluate
from ragmeter.validity.qrels_provenance import Provenance, provenance_of
from ragmeter.validity.qrels_provenance import judged_pairs as judged_pairs
from ragmeter.validity.qrels_provenance import restrict as restrict


@dataclass(frozen=True)
class PairLabel:
    query_id: str
    doc_id: str
    grade: int | None  # None: the judge failed
    reason: str  # the judge's reasoning, or why it failed
    flags: tuple[str, ...] = ()


def pool(runs: Sequence[Run], depth: int, *, query_ids: Sequence[str] | None = None) -> dict[str, list[str]]:
    """query id -> the docs any run ranks in its top `depth` (first-seen order, runs in the given order)."""
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    wanted = set(query_ids) if query_ids is not None else None
    out: dict[str, dict[str, None]] = {}
    for run in runs:
        for qid in run.query_ids:
            if wanted is not None and qid not in wanted:
                continue
            docs = out.setdefault(qid, {})
            for doc, _score in run.query(qid)[:depth]:
                docs.setdefault(doc, None)
    return {q: list(d) for q, d in out.items()}


def pairs_to_label(
    pooled: Mapping[str, Sequence[str]], human: Qrels | None = None, *, all_pairs: bool = False
) -> list[tuple[str, str]]:
    """Pooled pairs to send to the judge: those the human qrels leave unjudged, or every one."""
    known = judged_pairs(human) if human is not None and not all_pairs else {}
    return [(q, d) for q, docs in pooled.items() for d in docs if (q, d) not in known]


async def label_pairs(
    pairs: Sequence[tuple[str, str]],
    *,
    queries: Mapping[str, str],
    docs: Mapping[str, str],
    llm: LLMClient,
    concurrency: int = 8,
    prompt: str = "ours",
) -> list[PairLabel]:
    """Grade each pair 0-3 (in the order given). A pair whose query or doc text is unknown fails with
    that reason; so does a judge failure. Never raises for one pair."""
    from ragmeter.judges.trec_relevance import trec_relevance

    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(qid: str, did: str) -> PairLabel:
        if qid not in queries:
            return PairLabel(qid, did, None, "query text not found in the dataset")
        if did not in docs:
            return PairLabel(qid, did, None, "document text not found in the corpus")
        async with gate:
            result = await trec_relevance(
                queries[qid],
                docs[did],
                llm=llm,
                query_id=qid,
                doc_id=did,
                prompt="umbrela" if prompt == "umbrela" else "ours",
            )
        if result.value is None:
            return PairLabel(qid, did, None, result.error or "the judge gave no grade")
        flags = tuple(str(f) for f in result.details.get("flags", []))
        return PairLabel(qid, did, int(result.value), str(result.details.get("reasoning", "")), flags)

    return list(await asyncio.gather(*(one(q, d) for q, d in pairs)))


def labels_to_qrels(labels: Sequence[PairLabel], *, source: str = "<llm labels>") -> Qrels | None:
    """The graded pairs as Qrels (failed pairs left out); None when no pair was graded."""
    ok = [lab for lab in labels if lab.grade is not None]
    if not ok:
        return None
    return Qrels.from_columns(
        [lab.query_id for lab in ok],
        [lab.doc_id for lab in ok],
        [float(lab.grade or 0) for lab in ok],
        source=source,
    )


def merge_qrels(human: Qrels | None, llm: Qrels | None) -> Qrels:
    """Every pair of both; where both judge a pair, the human grade wins (an unjudged human entry,
    a negative grade, does not win)."""
    merged: dict[str, dict[str, float]] = {}
    for table, wins in ((llm, False), (human, True)):
        if table is None:
            continue
        for q, docs in table.to_dict().items():
            slot = merged.setdefault(q, {})
            for d, g in docs.items():
                if wins and g < 0 and d in slot:
                    continue
                slot[d] = g
    if not any(merged.values()):
        raise ValueError("nothing to merge: both qrels are empty")
    return Qrels.from_dict(merged, source="<merged qrels>")


@dataclass
class JudgingReport:
    n_pooled: int
    n_human_judged: int
    n_sent: int
    n_labelled: int
    n_failed: int
    grades: dict[int, int]
    failures: list[dict[str, str]]
    usage: dict[str, Any]
    seconds: float
    provenance: Provenance | None = None  # which written pairs are human, which LLM (the sidecar)

    def to_dict(self) -> dict[str, Any]:
        out = {
            _RENAMED.get(f.name, f.name): getattr(self, f.name)
            for f in fields(self)
            if f.name != "provenance"
        }
        out["grades"] = {str(k): v for k, v in sorted(self.grades.items())}
        out["seconds"] = round(self.seconds, 3)
        out["n_written_human"] = len(self.provenance.human) if self.provenance else 0
        out["n_written_llm"] = len(self.provenance.llm) if self.provenance else 0
        return out


_RENAMED = {"n_sent": "n_sent_to_judge"}


async def judge_pool(
    runs: Sequence[Run],
    *,
    depth: int,
    queries: Mapping[str, str],
    docs: Mapping[str, str],
    llm: LLMClient,
    human: Qrels | None = None,
    all_pairs: bool = False,
    concurrency: int = 8,
    prompt: str = "ours",
) -> tuple[Qrels | None, list[PairLabel], JudgingReport]:
    """Pool, label and merge: (qrels to write, the LLM labels, a report). The qrels are the merge with
    the human qrels (human wins) when given, else the LLM labels alone; None when nothing was graded."""
    started = time.perf_counter()
    pooled = pool(runs, depth)
    todo = pairs_to_label(pooled, human, all_pairs=all_pairs)
    labels = await label_pairs(
        todo, queries=queries, docs=docs, llm=llm, concurrency=concurrency, prompt=prompt
    )
    llm_qrels = labels_to_qrels(labels)
    out = merge_qrels(human, llm_qrels) if human is not None else llm_qrels
    n_pooled = sum(len(d) for d in pooled.values())
    known = judged_pairs(human) if human is not None else {}
    n_human = sum(1 for q, ds in pooled.items() for d in ds if (q, d) in known)
    grades: dict[int, int] = {}
    for lab in labels:
        if lab.grade is not None:
            grades[lab.grade] = grades.get(lab.grade, 0) + 1
    failures = [
        {"query_id": lab.query_id, "doc_id": lab.doc_id, "reason": lab.reason}
        for lab in labels
        if lab.grade is None
    ]
    report = JudgingReport(
        n_pooled=n_pooled,
        n_human_judged=n_human,
        n_sent=len(todo),
        n_labelled=len(labels) - len(failures),
        n_failed=len(failures),
        grades=grades,
        failures=failures,
        usage=llm.usage.model_dump(),
        seconds=time.perf_counter() - started,
        provenance=provenance_of(out, human, llm_qrels) if out is not None else None,
    )
    return out, labels, report
