"""Which pairs of a qrels file people judged and which an LLM did: the sidecar `judge-qrels` writes.

`judge-qrels --qrels human.qrels` writes one TREC file where human grades win; nothing in that file says which
grade came from where, and comparing it with the human qrels compares the people with themselves. So next to
FILE.qrels it writes FILE.qrels.provenance.json:

    {"format": "ragmeter-qrels-provenance", "version": 1, "qrels": "FILE.qrels",
     "human": {"q1": ["d1", ...], ...}, "llm": {"q1": ["d7", ...], ...}}

`judges agreement` scores the LLM-origin pairs only and reports the human copies as excluded; a file that looks
merged (it repeats every human grade it shares with the human qrels) and has no sidecar is refused.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.ir import Qrels

FORMAT = "ragmeter-qrels-provenance"
VERSION = 1
Pair = tuple[str, str]


def judged_pairs(qrels: Qrels) -> dict[Pair, int]:
    """(query, doc) -> grade for every judged pair (negative grades mean unjudged and are left out)."""
    return {(q, d): int(g) for q, docs in qrels.to_dict().items() for d, g in docs.items() if g >= 0}


def restrict(qrels: Qrels, query_ids: set[str]) -> Qrels:
    return Qrels.from_dict({q: d for q, d in qrels.to_dict().items() if q in query_ids}, source="<qrels>")


def keep_pairs(qrels: Qrels, pairs: set[Pair]) -> Qrels | None:
    """The qrels' entries whose (query, doc) is in `pairs`; None when none is."""
    kept: dict[str, dict[str, float]] = {}
    for q, docs in qrels.to_dict().items():
        for d, g in docs.items():
            if (q, d) in pairs:
                kept.setdefault(q, {})[d] = g
    return Qrels.from_dict(kept, source="<llm-graded pairs>") if kept else None


def sidecar_path(qrels_path: str | Path) -> Path:
    return Path(f"{qrels_path}.provenance.json")


@dataclass(frozen=True)
class Provenance:
    human: frozenset[Pair]
    llm: frozenset[Pair]

    def to_dict(self, qrels_name: str) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "qrels": qrels_name,
            "human": _grouped(self.human),
            "llm": _grouped(self.llm),
        }


def _grouped(pairs: Iterable[Pair]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for q, d in sorted(pairs):
        out.setdefault(q, []).append(d)
    return out


def provenance_of(written: Qrels, human: Qrels | None, llm: Qrels | None) -> Provenance:
    """Origins of every entry of `written` (the merge of `human` and `llm` where a judged human grade wins)."""
    human_judged = set(judged_pairs(human)) if human is not None else set()
    llm_entries = {(q, d) for q, docs in llm.to_dict().items() for d in docs} if llm is not None else set()
    everything = {(q, d) for q, docs in written.to_dict().items() for d in docs}
    from_llm = {p for p in everything if p in llm_entries and p not in human_judged}
    return Provenance(human=frozenset(everything - from_llm), llm=frozenset(from_llm))


def write_provenance(qrels_path: str | Path, provenance: Provenance) -> Path:
    path = sidecar_path(qrels_path)
    path.write_text(json.dumps(provenance.to_dict(Path(qrels_path).name), indent=1) + "\n", encoding="utf-8")
    return path


def _pairs(value: Any, where: str) -> frozenset[Pair]:
    if not isinstance(value, Mapping) or not all(
        isinstance(docs, list) and all(isinstance(d, str) for d in docs) for docs in value.values()
    ):
        raise ValueError(f"{where}: expected an object of query id -> list of doc ids")
    return frozenset((str(q), d) for q, docs in value.items() for d in docs)


def read_provenance(path: str | Path) -> Provenance:
    """The sidecar at `path`; ValueError naming the file and field when it is not one."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable provenance file ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{path}: field 'format' must be {FORMAT!r}")
    if data.get("version") != VERSION:
        raise ValueError(f"{path}: field 'version' must be {VERSION}, got {data.get('version')!r}")
    return Provenance(
        human=_pairs(data.get("human"), f"{path}: field 'human'"),
        llm=_pairs(data.get("llm"), f"{path}: field 'llm'"),
    )


def copies_human_grades(human: Qrels, llm: Qrels) -> int:
    """How many pairs `llm` shares with `human`, when it repeats the human grade on every one of them (the mark
    of a merged file); 0 when they share none or disagree on any."""
    h, lab = judged_pairs(human), judged_pairs(llm)
    shared = set(h) & set(lab)
    if not shared or any(h[p] != lab[p] for p in shared):
        return 0
    return len(shared)


__all__ = [
    "Provenance",
    "copies_human_grades",
    "judged_pairs",
    "keep_pairs",
    "provenance_of",
    "read_provenance",
    "restrict",
    "sidecar_path",
    "write_provenance",
]
