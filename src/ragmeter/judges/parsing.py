"""Lenient extraction, then strict validation, of what a judge model replies.

Models wrap JSON in code fences, add prose around it, stop mid-object or answer in prose. We strip
fences, take the outermost JSON object, and fall back to a regex for a number; whatever we accept is
then validated strictly (pydantic) by the caller.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ragmeter.judges.scales import Scale

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_NUM = r"(-?\d+(?:\.\d+)?)(?=[^\d.]|\.(?!\d)|$)"


M = TypeVar("M", bound=BaseModel)


class ParseFailure(Exception):
    """The reply cannot be used; the message says why (it becomes the result's error)."""


def strip_fences(text: str) -> str:
    m = _FENCE.search(text)
    if m:
        return m.group(1).strip()
    # An opening fence with no closing one (a truncated reply).
    t = text.strip()
    if t.startswith("```"):
        t = t.split("\n", 1)[1] if "\n" in t else ""
    return t.strip()


def _outermost_object(text: str) -> str | None:
    """The first balanced {...} span, aware of strings and escapes."""
    start = text.find("{")
    while start != -1:
        depth = 0
        in_str = False
        esc = False
        for i in range(start, len(text)):
            ch = text[i]
            if in_str:
                if esc:
                    esc = False
                elif ch == "\\":
                    esc = True
                elif ch == '"':
                    in_str = False
            elif ch == '"':
                in_str = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    return text[start : i + 1]
        start = text.find("{", start + 1)
    return None


def extract_json(text: str) -> dict[str, Any] | None:
    """The reply's JSON object, or None when there is none."""
    body = strip_fences(text)
    candidates = [body]
    span = _outermost_object(body)
    if span is not None:
        candidates.append(span)
    last = body.rfind("}")
    first = body.find("{")
    if 0 <= first < last:
        candidates.append(body[first : last + 1])
    for cand in candidates:
        try:
            value = json.loads(cand)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return None


def find_number(text: str, keys: tuple[str, ...]) -> tuple[float, str] | None:
    """A number from free text or broken JSON: after one of `keys`, then 'N/10', then a lone number.

    A number that ends the text of a JSON-looking reply is refused: it may have been cut (10 -> 1).
    """
    body = strip_fences(text)
    json_like = body.lstrip().startswith("{")
    keyalt = "|".join(re.escape(k) for k in keys)
    patterns = [
        (rf'"?\b(?:{keyalt})\b"?\s*[:=]\s*"?\s*{_NUM}', "after the key"),
        (rf"{_NUM}\s*(?:/|out of)\s*10\b", "as N/10"),
        (rf"\b(?:{keyalt})\b[^\d\n]{{0,40}}?{_NUM}", "near the key"),
    ]
    if json_like:
        # Inside JSON only the field itself counts: prose in "reasoning" may mention other numbers.
        patterns = patterns[:1]
    for pattern, how in patterns:
        for m in re.finditer(pattern, body, flags=re.IGNORECASE):
            if json_like and m.end(1) >= len(body.rstrip()):
                continue
            return float(m.group(1)), how
    if not json_like:
        nums = re.findall(_NUM, body)
        if len(nums) == 1:
            return float(nums[0]), "the only number"
    return None


def as_number(value: Any, field: str) -> float:
    """A JSON value as a finite float; non-numeric (e.g. "ten") raises ParseFailure."""
    if isinstance(value, bool):
        raise ParseFailure(f"{field} is not a number: {value!r}")
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise ParseFailure(f"{field} is not a number: {value!r}") from None
    else:
        raise ParseFailure(f"{field} is not a number: {value!r}")
    if not math.isfinite(number):
        raise ParseFailure(f"{field} is not a finite number: {value!r}")
    return number


def parse_model(model: type[M], text: str) -> M:
    """The reply's JSON object validated against `model`; ParseFailure says what is wrong."""
    if not text.strip():
        raise ParseFailure("empty reply")
    obj = extract_json(text)
    if obj is None:
        raise ParseFailure("no JSON object in the reply")
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise ParseFailure(validation_reason(exc)) from None


def validation_reason(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(x) for x in first.get("loc", ()))
    return f"the JSON reply does not match the schema ({where}: {first.get('msg', 'invalid')})"


def _field_flags(scale: Scale, used: str, number: float, others: list[tuple[str, Any]]) -> list[str]:
    """Flags for alias fields next to the one used: not a number, out of range, or different."""
    flags = []
    for name, raw in others:
        try:
            other = as_number(raw, name)
        except ParseFailure:
            flags.append(f"{name} {raw!r} is not a number (ignored: {used} {number:g} used)")
            continue
        if not scale.lo <= other <= scale.hi:
            flags.append(
                f"{name} {other:g} out of range [{scale.lo:g}, {scale.hi:g}] (ignored: {used} {number:g} used)"
            )
        elif other != number:
            flags.append(f"conflicting fields {used} {number:g} and {name} {other:g} ({used} used)")
    return flags


def read_reply(text: str, scale: Scale) -> tuple[float, dict[str, Any], list[str]]:
    """(number on `scale`, parsed JSON object or {}, flags): the rules in `ragmeter.judges.scales`."""
    if not text.strip():
        raise ParseFailure("empty reply")
    key = scale.key
    obj = extract_json(text) or {}
    fields = {str(k).strip().lower(): v for k, v in obj.items()}
    present = [(k, fields[k]) for k in (key, *scale.aliases) if fields.get(k) is not None]
    flags: list[str] = []
    if present:
        used, raw = present[0]
        number = as_number(raw, used)
        flags += _field_flags(scale, used, number, present[1:])
    else:
        found = find_number(text, (key, *scale.aliases))
        if found is None:
            if obj:
                raise ParseFailure(f"the JSON reply has no {key!r} field")
            raise ParseFailure(f"no JSON object and no {key} in the reply")
        number, how = found
        flags.append(f"{key} taken from free text ({how})")
    off = scale.off_scale(number)
    if off is not None:
        raise ParseFailure(off)
    if scale.integer and number != round(number):
        flags.append(f"{key} {number:g} rounded to an integer")
        number = float(round(number))
    if number < scale.lo or number > scale.hi:
        clamped = min(max(number, scale.lo), scale.hi)
        flags.append(f"{key} {number:g} out of range [{scale.lo:g}, {scale.hi:g}], clamped to {clamped:g}")
        number = clamped
    return number, obj, flags


def read_score(
    text: str, key: str, lo: float, hi: float, *, integer: bool = False, aliases: tuple[str, ...] = ()
) -> tuple[float, dict[str, Any], list[str]]:
    """`read_reply` on an ad-hoc scale: [lo, hi] asked as `key` (`aliases` accepted, flagged if they differ)."""
    return read_reply(text, Scale(f"{lo:g}-{hi:g}", lo, hi, key=key, aliases=aliases, integer=integer))
