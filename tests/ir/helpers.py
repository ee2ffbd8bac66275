"""Name mapping between ragmeter and pytrec_eval measures."""

from __future__ import annotations

import re

import pytrec_eval

from ragmeter.ir import Qrels, Run, evaluate


def trec_name(ours: str) -> str:
    base, _, k = ours.partition("@")
    mapping = {
        "precision": "P_{k}",
        "recall": "recall_{k}",
        "ndcg": "ndcg_cut_{k}",
        "map": "map_cut_{k}",
        "hit": "success_{k}",
    }
    if not k:
        return {
            "mrr": "recip_rank",
            "map": "map",
            "rprec": "Rprec",
            "ndcg": "ndcg",
            "bpref": "bpref",
            "infap": "infAP",
        }[base]
    return mapping[base].format(k=k)


def pytrec_measure_set(names: list[str]) -> set[str]:
    out = set()
    for n in names:
        t = trec_name(n)
        m = re.match(r"^(.*)_(\d+)$", t)
        out.add(f"{m.group(1)}.{m.group(2)}" if m else t)
    return out


def pytrec_per_query(
    qrels: dict, run: dict, names: list[str], level: int = 1, condensed: bool = False
) -> dict[str, dict[str, float]]:
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, pytrec_measure_set(names), relevance_level=level, judged_docs_only_flag=condensed
    )
    raw = evaluator.evaluate(run)
    return {q: {n: vals[trec_name(n)] for n in names} for q, vals in raw.items()}


def ours_per_query(
    qrels: dict, run: dict, names: list[str], level: int = 1, backend: str = "native", condensed: bool = False
):
    res = evaluate(
        Qrels.from_dict(qrels),
        Run.from_dict(run),
        names,
        relevance_level=level,
        missing="ignore",
        no_relevant="zero",
        condensed=condensed,
        backend=backend,  # type: ignore[arg-type]
    )
    return res.per_query
