"""Measure names: parsed once into (kind, cutoff, parameters).

Canonical names are ours (``ndcg@10``); trec_eval's names (``ndcg_cut_10``, ``P_5``, ``recip_rank``,
``map_cut_100``, ``success_1``, ``Rprec``) and common aliases (``p@k``, ``success@k``, ``r@k``) are
accepted too, case-insensitively. For incomplete judgments: ``bpref`` and ``infap`` (trec_eval's ``bpref``
and ``infAP``) and ``judged@k`` (share of the top k that has a judgment, grade >= 0).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragmeter.errors import InputError

# Measure families by code: a family's code is its position here, the order of the native kernel's enum
# (_kernel/measures.c).
FAMILIES = (
    "precision",
    "recall",
    "ndcg",
    "ndcg_exp",
    "mrr",
    "map",
    "hit",
    "rprec",
    "aqwv",
    "bpref",
    "infap",
    "judged",
)
P, RECALL, NDCG, NDCG_EXP, MRR, MAP, HIT, RPREC, AQWV, BPREF, INFAP, JUDGED = range(len(FAMILIES))

DEFAULT_CUTOFFS = (1, 3, 5, 10, 20)
AQWV_BETA = 40.0

_CODES = {family: code for code, family in enumerate(FAMILIES)}
# A cutoff: these families need one, these take one optionally (mrr@10), the rest take none.
_CUTOFF_REQUIRED = {"precision", "recall", "hit", "aqwv", "judged"}
_OPTIONAL_CUTOFF = {"ndcg", "ndcg_exp", "mrr", "map"}
_ALIASES = {
    "p": "precision",
    "r": "recall",
    "success": "hit",
    "recip_rank": "mrr",
    "rr": "mrr",
    "ndcg_cut": "ndcg",
    "map_cut": "map",
    "r-prec": "rprec",
    "r_prec": "rprec",
}
_NAME = re.compile(r"^([a-z_\-]+?)(?:(?:@|_|\.)(\d+))?$")


@dataclass(frozen=True)
class Measure:
    name: str  # canonical
    code: int
    k: int  # 0 = no cutoff
    beta: float = AQWV_BETA
    collection_size: float = 0.0  # AQWV: >0 selects the MATERIAL false-alarm denominator

    @property
    def family(self) -> str:
        return self.name.split("@", 1)[0]


def _check_collection_size(collection_size: int | None) -> None:
    if collection_size is None:
        return
    if isinstance(collection_size, bool) or not isinstance(collection_size, int) or collection_size <= 0:
        raise InputError(
            f"must be a positive number of documents, got {collection_size!r}", source="collection_size"
        )


def parse_measure(text: str, *, collection_size: int | None = None) -> Measure:
    _check_collection_size(collection_size)
    raw = text.strip()
    match = _NAME.match(raw.lower())
    if not match:
        raise InputError(f"unknown measure {text!r}", source="measure")
    base, k_text = match.group(1), match.group(2)
    base = _ALIASES.get(base, base)
    if base not in _CODES:
        raise InputError(
            f"unknown measure {text!r} (known: {', '.join(sorted(_CODES))}, with @k where it applies)",
            source="measure",
        )
    code, needs_k = _CODES[base], base in _CUTOFF_REQUIRED
    k = int(k_text) if k_text is not None else 0
    if k_text is not None and k <= 0:
        raise InputError(f"measure {text!r}: the cutoff must be a positive integer", source="measure")
    if needs_k and k == 0:
        raise InputError(f"measure {text!r} needs a cutoff, e.g. {base}@10", source="measure")
    if not needs_k and k and base not in _OPTIONAL_CUTOFF:
        raise InputError(f"measure {text!r} takes no cutoff", source="measure")
    name = f"{base}@{k}" if k else base
    return Measure(name=name, code=code, k=k, collection_size=float(collection_size or 0))


def parse_measures(
    names: list[str] | tuple[str, ...] | None, *, collection_size: int | None = None
) -> list[Measure]:
    """Parse measure names (None = the default set), dropping repeats while keeping order."""
    _check_collection_size(collection_size)
    if names is None:
        names = default_measures()
    seen: dict[str, Measure] = {}
    for text in names:
        m = parse_measure(text, collection_size=collection_size)
        seen.setdefault(m.name, m)
    if not seen:
        raise InputError("no measure given", source="measure")
    return list(seen.values())


def default_measures(cutoffs: tuple[int, ...] = DEFAULT_CUTOFFS) -> list[str]:
    families = ("recall", "precision", "ndcg", "ndcg_exp", "mrr", "map", "hit", "aqwv")
    return [f"{f}@{k}" for f in families for k in cutoffs] + ["mrr", "map", "rprec"]
