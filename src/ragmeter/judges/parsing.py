"""Lenient extraction, then strict validation, of what a judge model replies.

Models wrap JSON in code fences, add prose around it, stop mid-object or answer in prose. We strip
fences, take the outermost JSON object, and fall back to a regex for a number; whatever we accept is
then validated strictly (pydantic) by the caller.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_NUM = r"(-?\d+(?:\.\d+)?)(?=[^\d.]|\.(?!\d)|$)"


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


def read_score(
    text: str, key: str, lo: float, hi: float, *, integer: bool = False, aliases: tuple[str, ...] = ()
) -> tuple[float, dict[str, Any], list[str]]:
    """(score, parsed JSON object or {}, flags): the score field, clamped into [lo, hi] and flagged."""
    if not text.strip():
        raise ParseFailure("empty reply")
    flags: list[str] = []
    obj = extract_json(text)
    keys = (key, *aliases)
    raw: Any = None
    if obj is not None:
        raw = next((obj[k] for k in keys if k in obj), None)
    if raw is not None:
        number = as_number(raw, key)
    else:
        found = find_number(text, keys)
        if found is None:
            if obj is not None:
                raise ParseFailure(f"the JSON reply has no {key!r} field")
            raise ParseFailure(f"no JSON object and no {key} in the reply")
        number, how = found
        flags.append(f"{key} taken from free text ({how})")
        obj = obj or {}
    if integer and number != round(number):
        flags.append(f"{key} {number:g} rounded to an integer")
        number = float(round(number))
    if number < lo or number > hi:
        clamped = min(max(number, lo), hi)
        flags.append(f"{key} {number:g} out of range [{lo:g}, {hi:g}], clamped to {clamped:g}")
        number = clamped
    return number, obj or {}, flags
