"""The answer judges: factuality, groundedness, relevance, answer_correctness, coherence,
completeness, citation_accuracy. Each returns a MetricResult and never raises."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from ragmeter.judges import prompts as P
from ragmeter.judges.core import JudgeFailure, Reply, ask, guarded, numbered, usage_details
from ragmeter.judges.parsing import ParseFailure, extract_json, read_score
from ragmeter.llm.base import LLMClient, LLMError
from ragmeter.models import MetricResult

Verdict = Literal["SUPPORTED", "NOT_SUPPORTED", "CONTRADICTED"]
_VERDICT_ALIASES = {
    "SUPPORTED": "SUPPORTED",
    "SUPPORTS": "SUPPORTED",
    "NOT_SUPPORTED": "NOT_SUPPORTED",
    "UNSUPPORTED": "NOT_SUPPORTED",
    "NOTSUPPORTED": "NOT_SUPPORTED",
    "CONTRADICTED": "CONTRADICTED",
    "CONTRADICTS": "CONTRADICTED",
    "CONTRADICTORY": "CONTRADICTED",
}


def _validation_reason(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(x) for x in first.get("loc", ()))
    return f"the JSON reply does not match the schema ({where}: {first.get('msg', 'invalid')})"


def _validated(model: type[BaseModel], text: str) -> Any:
    if not text.strip():
        raise ParseFailure("empty reply")
    obj = extract_json(text)
    if obj is None:
        raise ParseFailure("no JSON object in the reply")
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise ParseFailure(_validation_reason(exc)) from None


# --- 0-10 score judges -----------------------------------------------------------------------


class _ScoreExtras(BaseModel):
    model_config = ConfigDict(extra="ignore")

    reasoning: str = ""
    disagreements: list[str] = []
    missing: list[str] = []


def _score_parser(text: str) -> tuple[tuple[float, _ScoreExtras], list[str]]:
    score, obj, flags = read_score(text, "score", 0.0, 10.0, aliases=("grade", "rating"))
    try:
        extras = _ScoreExtras.model_validate(obj)
    except ValidationError as exc:
        raise ParseFailure(_validation_reason(exc)) from None
    return (score, extras), flags


async def _score_judge(
    prompt: P.Prompt,
    values: dict[str, str],
    *,
    llm: LLMClient,
    query_id: str | None,
    flags: list[str],
    lists: Sequence[str] = (),
) -> MetricResult:
    reply: Reply = await ask(llm, prompt, values, _score_parser, query_id=query_id)
    score, extras = reply.value
    details: dict[str, Any] = {"reasoning": extras.reasoning, "score_0_10": score}
    for name in lists:
        details[name] = getattr(extras, name)
    details["flags"] = flags + reply.flags
    details.update(usage_details(reply))
    return MetricResult(name=prompt.name, value=score / 10.0, details=details, version=prompt.version)


def _empty_answer(name: str, prompt: P.Prompt) -> MetricResult:
    return MetricResult(name=name, value=None, error="the answer is empty", version=prompt.version)


async def groundedness(
    question: str,
    answer: str,
    contexts: Sequence[str],
    *,
    llm: LLMClient,
    ground_truth: str | None = None,
    query_id: str | None = None,
) -> MetricResult:
    """0-1: how much of the answer the contexts back."""
    prompt = P.GROUNDEDNESS

    async def body() -> MetricResult:
        if not answer or not answer.strip():
            return _empty_answer(prompt.name, prompt)
        if not contexts:
            return MetricResult(
                name=prompt.name, value=None, error="no contexts to ground in", version=prompt.version
            )
        flags: list[str] = []
        values = {"question": question, "answer": answer, "contexts": numbered(contexts, flags)}
        return await _score_judge(prompt, values, llm=llm, query_id=query_id, flags=flags)

    return await guarded(prompt.name, prompt, body)


async def relevance(
    question: str,
    answer: str,
    contexts: Sequence[str] = (),
    *,
    llm: LLMClient,
    ground_truth: str | None = None,
    query_id: str | None = None,
) -> MetricResult:
    """0-1: how directly the answer addresses the question (contexts are not used)."""
    prompt = P.RELEVANCE

    async def body() -> MetricResult:
        if not answer or not answer.strip():
            return _empty_answer(prompt.name, prompt)
        values = {"question": question, "answer": answer}
        return await _score_judge(prompt, values, llm=llm, query_id=query_id, flags=[])

    return await guarded(prompt.name, prompt, body)


async def answer_correctness(
    question: str,
    answer: str,
    contexts: Sequence[str] = (),
    *,
    llm: LLMClient,
    ground_truth: str | None = None,
    query_id: str | None = None,
) -> MetricResult:
    """0-1: semantic agreement with the ground truth; details list disagreements and missing info."""
    prompt = P.ANSWER_CORRECTNESS

    async def body() -> MetricResult:
        if not ground_truth or not ground_truth.strip():
            return MetricResult(
                name=prompt.name, value=None, error="needs a ground-truth answer", version=prompt.version
            )
        if not answer or not answer.strip():
            return _empty_answer(prompt.name, prompt)
        values = {"question": question, "answer": answer, "ground_truth": ground_truth}
        return await _score_judge(
            prompt, values, llm=llm, query_id=query_id, flags=[], lists=("disagreements", "missing")
        )

    return await guarded(prompt.name, prompt, body)


async def coherence(
    question: str,
    answer: str,
    contexts: Sequence[str] = (),
    *,
    llm: LLMClient,
    ground_truth: str | None = None,
    query_id: str | None = None,
) -> MetricResult:
    """0-1: logical consistency and organisation of the answer."""
    prompt = P.COHERENCE

    async def body() -> MetricResult:
        if not answer or not answer.strip():
            return _empty_answer(prompt.name, prompt)
        values = {"question": question, "answer": answer}
        return await _score_judge(prompt, values, llm=llm, query_id=query_id, flags=[])

    return await guarded(prompt.name, prompt, body)


async def completeness(
    question: str,
    answer: str,
    contexts: Sequence[str] = (),
    *,
    llm: LLMClient,
    ground_truth: str | None = None,
    query_id: str | None = None,
) -> MetricResult:
    """0-1: coverage of every part of the question (and the reference's key points when given)."""
    prompt = P.COMPLETENESS

    async def body() -> MetricResult:
        if not answer or not answer.strip():
            return _empty_answer(prompt.name, prompt)
        reference = f"\nReference answer:\n{ground_truth}\n" if ground_truth else ""
        values = {"question": question, "answer": answer, "reference": reference}
        return await _score_judge(prompt, values, llm=llm, query_id=query_id, flags=[], lists=("missing",))

    return await guarded(prompt.name, prompt, body)


# --- factuality ------------------------------------------------------------------------------


MAX_CLAIMS = 12


def _normalise_verdict(v: Any) -> Any:
    if isinstance(v, str):
        key = re.sub(r"[\s\-]+", "_", v.strip().upper())
        return _VERDICT_ALIASES.get(key, key)
    return v


class _Claims(BaseModel):
    model_config = ConfigDict(extra="ignore")

    claims: list[str]


class _Verdict(BaseModel):
    model_config = ConfigDict(extra="ignore")

    reasoning: str = ""
    verdict: Verdict

    @field_validator("verdict", mode="before")
    @classmethod
    def _normalise(cls, v: Any) -> Any:
        return _normalise_verdict(v)


def _claims_parser(text: str) -> tuple[list[str], list[str]]:
    parsed: _Claims = _validated(_Claims, text)
    claims = [c.strip() for c in parsed.claims if c.strip()]
    if not claims:
        raise ParseFailure("no claims were extracted from a non-empty answer")
    flags = []
    if len(claims) > MAX_CLAIMS:
        flags.append(f"{len(claims)} claims extracted; the first {MAX_CLAIMS} were checked")
        claims = claims[:MAX_CLAIMS]
    return claims, flags


def _verdict_parser(text: str) -> tuple[_Verdict, list[str]]:
    return _validated(_Verdict, text), []


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def _invented(claims: list[str], answer: str) -> tuple[list[str], list[str]]:
    """Split extracted claims into those the answer can state and those it cannot: a claim with a number
    that the answer does not contain was invented by the extractor (small models do this), not taken from
    the answer, so it is not checked. Rephrasing and resolved pronouns are kept: only numbers are tested."""
    numbers = set(_NUMBER.findall(answer))
    kept = [c for c in claims if set(_NUMBER.findall(c)) <= numbers]
    return kept, [c for c in claims if c not in kept]


async def factuality(
    question: str,
    answer: str,
    contexts: Sequence[str],
    *,
    llm: LLMClient,
    ground_truth: str | None = None,
    query_id: str | None = None,
) -> MetricResult:
    """supported claims / claims: one call extracts the answer's claims, then one call per claim
    checks it against the contexts (and the ground truth, when given). Details list each claim
    with its verdict and the model's comparison. If any claim cannot be checked, the value is null."""
    prompt = P.FACTUALITY
    verify = P.FACTUALITY_VERIFY

    async def body() -> MetricResult:
        if not answer or not answer.strip():
            return _empty_answer(prompt.name, prompt)
        flags: list[str] = []
        sources = numbered(contexts, flags)
        if ground_truth:
            sources += f"\n[reference answer] {ground_truth}"
        extracted = await ask(
            llm, prompt, {"question": question, "answer": answer}, _claims_parser, query_id=query_id
        )
        claims, invented = _invented(extracted.value, answer)
        if invented:
            flags.append(f"{len(invented)} extracted claim(s) state numbers the answer does not: not checked")
        if not claims:
            return MetricResult(
                name=prompt.name,
                value=None,
                error="every extracted claim states numbers the answer does not contain",
                details={"invented_claims": invented, "flags": flags},
                version=prompt.version,
            )
        checks = await asyncio.gather(
            *(
                ask(llm, verify, {"contexts": sources, "claim": c}, _verdict_parser, query_id=query_id)
                for c in claims
            ),
            return_exceptions=True,
        )
        replies = [extracted]
        rows: list[dict[str, Any]] = []
        failures: list[str] = []
        for i, (claim, check) in enumerate(zip(claims, checks, strict=True), 1):
            if isinstance(check, JudgeFailure):
                failures.append(f"claim {i}: {check.args[0]}")
                rows.append({"claim": claim, "verdict": None, "reasoning": ""})
            elif isinstance(check, LLMError):
                failures.append(f"claim {i}: LLM call failed: {check.reason}")
                rows.append({"claim": claim, "verdict": None, "reasoning": ""})
            elif isinstance(check, BaseException):
                raise check
            else:
                replies.append(check)
                flags.extend(f"claim {i}: {f}" for f in check.flags)
                rows.append(
                    {"claim": claim, "verdict": check.value.verdict, "reasoning": check.value.reasoning}
                )
        counts = {
            v: sum(r["verdict"] == v for r in rows) for v in ("SUPPORTED", "NOT_SUPPORTED", "CONTRADICTED")
        }
        details: dict[str, Any] = {
            "claims": rows,
            "invented_claims": invented,
            "n_claims": len(claims),
            "n_supported": counts["SUPPORTED"],
            "n_not_supported": counts["NOT_SUPPORTED"],
            "n_contradicted": counts["CONTRADICTED"],
            "flags": flags + extracted.flags,
            "attempts": sum(r.attempts for r in replies),
            "cached": all(r.cached for r in replies),
            "tokens": {
                "prompt": sum(r.prompt_tokens for r in replies),
                "completion": sum(r.completion_tokens for r in replies),
            },
        }
        if failures:
            error = f"{len(failures)} of {len(claims)} claims could not be checked: " + "; ".join(failures)
            return MetricResult(
                name=prompt.name, value=None, error=error, details=details, version=prompt.version
            )
        value = counts["SUPPORTED"] / len(claims)
        return MetricResult(name=prompt.name, value=value, details=details, version=prompt.version)

    return await guarded(prompt.name, prompt, body)


# --- citation accuracy -----------------------------------------------------------------------

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


class _CitationVerdict(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str
    reasoning: str = ""
    supported: bool


class _CitationReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    citations: list[_CitationVerdict]
    uncited_claims: list[str] = []


async def citation_accuracy(
    question: str,
    answer: str,
    contexts: Sequence[str],
    *,
    llm: LLMClient,
    ground_truth: str | None = None,
    query_id: str | None = None,
) -> MetricResult:
    """Fraction of [n] citations whose source n (1-based, in `contexts` order) supports the sentence."""
    prompt = P.CITATION_ACCURACY

    async def body() -> MetricResult:
        if not answer or not answer.strip():
            return _empty_answer(prompt.name, prompt)
        sentences = split_cited_sentences(answer)
        pairs: list[dict[str, Any]] = []
        invalid: list[dict[str, Any]] = []
        uncited: list[str] = []
        for sentence, nums in sentences:
            if not nums:
                uncited.append(sentence)
            for n in nums:
                item = {"sentence": sentence, "source": n}
                (pairs if 1 <= n <= len(contexts) else invalid).append(item)
        if not pairs and not invalid:
            return MetricResult(
                name=prompt.name,
                value=None,
                error="the answer cites no sources ([1], [2] ...)",
                details={"uncited_sentences": uncited},
                version=prompt.version,
            )
        total = len(pairs) + len(invalid)
        details: dict[str, Any] = {
            "n_citations": total,
            "invalid_citations": invalid,
            "uncited_sentences": uncited,
        }
        if not pairs:
            details.update(citations=[], uncited_claims=None, flags=["every citation names a missing source"])
            return MetricResult(name=prompt.name, value=0.0, details=details, version=prompt.version)
        ids = {f"C{i}": p for i, p in enumerate(pairs, 1)}
        uids = {f"U{i}": s for i, s in enumerate(uncited, 1)}

        def parse(text: str) -> tuple[_CitationReply, list[str]]:
            parsed: _CitationReply = _validated(_CitationReply, text)
            got = {c.id.strip() for c in parsed.citations}
            missing = [i for i in ids if i not in got]
            if missing:
                raise ParseFailure(f"no verdict for citation(s) {', '.join(missing)}")
            return parsed, []

        flags: list[str] = []
        values = {
            "contexts": numbered(contexts, flags),
            "citations": "\n".join(f'{i}: "{p["sentence"]}" cites [{p["source"]}]' for i, p in ids.items()),
            "uncited": "\n".join(f'{i}: "{s}"' for i, s in uids.items()) or "(none)",
        }
        reply = await ask(llm, prompt, values, parse, query_id=query_id)
        verdicts = {c.id.strip(): c for c in reply.value.citations}
        checked = [
            {**p, "supported": verdicts[i].supported, "reasoning": verdicts[i].reasoning}
            for i, p in ids.items()
        ]
        n_supported = sum(1 for c in checked if c["supported"])
        details.update(
            citations=checked,
            n_supported=n_supported,
            uncited_claims=[uids[u.strip()] for u in reply.value.uncited_claims if u.strip() in uids],
            flags=flags + reply.flags,
            **usage_details(reply),
        )
        return MetricResult(
            name=prompt.name, value=n_supported / total, details=details, version=prompt.version
        )

    return await guarded(prompt.name, prompt, body)
