"""citation_accuracy = supported citations / citations. The [n] markers are found here; one call checks
every (sentence, cited source) pair. A citation of a source that does not exist counts as unsupported
without asking the model."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict

import ragmeter.judges.prompts as P
from ragmeter.judges.core import ask, usage_details
from ragmeter.judges.judge import Judge, JudgeInput, layout_values
from ragmeter.judges.parsing import ParseFailure, parse_model
from ragmeter.judges.scales import PROPORTION
from ragmeter.llm.base import LLMClient
from ragmeter.models import MetricResult

_MARKER = r"\[\d+(?:\s*[,;]\s*\d+)*\]"
_LEADING = re.compile(rf"^((?:{_MARKER}\s*)+)(.*)$", re.DOTALL)


def split_cited_sentences(answer: str) -> list[tuple[str, list[int]]]:
    """(sentence without markers, cited source numbers) for each sentence of the answer.

    Markers that open a sentence ("... Paris. [1] It ...") belong to the sentence before.
    """
    # A sentence ends at . ! ? before a space, or at a marker after its full stop ("people.[2] It").
    parts = re.split(r"(?<=[.!?])\s+|(?<=\])\s+(?=[A-Z\"'])", answer.strip())
    sentences: list[str] = []
    for part in parts:
        m = _LEADING.match(part)
        if m and sentences:
            sentences[-1] += " " + m.group(1).strip()
            part = m.group(2)
        if part.strip():
            sentences.append(part.strip())
    out = []
    for s in sentences:
        nums: list[int] = []
        for marker in re.findall(_MARKER, s):
            for n in re.findall(r"\d+", marker):
                if int(n) not in nums:
                    nums.append(int(n))
        clean = " ".join(re.sub(_MARKER, "", s).split())
        clean = re.sub(r"\s+([.,;:!?])", r"\1", clean)
        out.append((clean, nums))
    return out


class CitationVerdict(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str
    reasoning: str = ""
    supported: bool


class CitationReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    citations: list[CitationVerdict]
    uncited_claims: list[str] = []


def _pairs(answer: str, n_sources: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """(citations of existing sources, citations of missing sources, sentences without a citation)."""
    pairs: list[dict[str, Any]] = []
    invalid: list[dict[str, Any]] = []
    uncited: list[str] = []
    for sentence, nums in split_cited_sentences(answer):
        if not nums:
            uncited.append(sentence)
        for n in nums:
            item = {"sentence": sentence, "source": n}
            (pairs if 1 <= n <= n_sources else invalid).append(item)
    return pairs, invalid, uncited


def skeleton(ids: list[str], uncited: bool) -> str:
    """The reply's shape with an entry for every citation id: a small model shown one entry answers one."""
    entries = ", ".join(f'{{"id": "{i}", "reasoning": "<short>", "supported": <true or false>}}' for i in ids)
    listed = '<ids such as "U1", or none>' if uncited else ""
    return f'{{"citations": [{entries}], "uncited_claims": [{listed}]}}'


async def _body(judge: Judge, inp: JudgeInput, llm: LLMClient, flags: list[str]) -> MetricResult:
    pairs, invalid, uncited = _pairs(inp.answer or "", len(inp.contexts))
    if not pairs and not invalid:
        return judge.result(
            error="the answer cites no sources ([1], [2] ...)", details={"uncited_sentences": uncited}
        )
    total = len(pairs) + len(invalid)
    details: dict[str, Any] = {
        "n_citations": total,
        "invalid_citations": invalid,
        "uncited_sentences": uncited,
    }
    if not pairs:
        details.update(citations=[], uncited_claims=None, flags=["every citation names a missing source"])
        return judge.result(0.0, details=details)
    ids = {f"C{i}": p for i, p in enumerate(pairs, 1)}
    uids = {f"U{i}": s for i, s in enumerate(uncited, 1)}

    def parse(text: str) -> tuple[CitationReply, list[str]]:
        parsed = parse_model(CitationReply, text)
        got = {c.id.strip() for c in parsed.citations}
        missing = [i for i in ids if i not in got]
        if missing:
            raise ParseFailure(f"no verdict for citation(s) {', '.join(missing)}")
        return parsed, []

    values = layout_values(
        inp,
        flags,
        citations="\n".join(f'{i}: "{p["sentence"]}" cites [{p["source"]}]' for i, p in ids.items()),
        uncited="\n".join(f'{i}: "{s}"' for i, s in uids.items()) or "(none)",
        skeleton=skeleton(list(ids), bool(uids)),
    )
    reply = await ask(llm, judge.prompt, values, parse, query_id=inp.query_id)
    verdicts = {c.id.strip(): c for c in reply.value.citations}
    checked = [
        {**p, "supported": verdicts[i].supported, "reasoning": verdicts[i].reasoning} for i, p in ids.items()
    ]
    n_supported = sum(1 for c in checked if c["supported"])
    details.update(
        citations=checked,
        n_supported=n_supported,
        uncited_claims=[uids[u.strip()] for u in reply.value.uncited_claims if u.strip() in uids],
        flags=flags + reply.flags,
        **usage_details(reply),
    )
    return judge.result(n_supported / total, details=details)


CITATION_ACCURACY = Judge(
    "citation_accuracy",
    P.CITATION_ACCURACY,
    PROPORTION,
    body=_body,
    description="supported [n] citations / citations; [n] is the n-th context",
)
