"""The scales judges ask for, declared once: what the model is asked to reply, and what value is stored.

How a reply is read against its scale (`ragmeter.judges.parsing.read_reply`):
- the asked field wins; an alias field (`grade` next to `score`) that is out of range, not a number or
  different from it is flagged in details["flags"] and never used;
- a number strictly between 0 and 1 on a scale whose top is above 1 is a reply on the 0-1 scale
  (0.8 where 0-10 was asked). It is never rescaled: the model is asked again, naming the problem,
  and if the second reply is off the scale too the value is null with the reason. 0 and 1 themselves
  are on every scale and accepted as they are;
- a non-integer where an integer was asked is rounded and flagged;
- a number outside the scale is clamped into it and flagged.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scale:
    """A judge's scale. `key` is the reply field it asks for; `value_range` is the range of the stored
    value (a linear map of [lo, hi]); None stores the reply itself."""

    name: str
    lo: float
    hi: float
    key: str = "score"
    aliases: tuple[str, ...] = ()
    integer: bool = False
    value_range: tuple[float, float] | None = None
    detail: str = "score"  # the details field that keeps the reply's number
    asked: bool = True  # False: the value is computed from verdicts, not a number the model gives

    @property
    def range(self) -> tuple[float, float]:
        """The range of the stored value."""
        return self.value_range if self.value_range is not None else (self.lo, self.hi)

    def to_value(self, number: float) -> float:
        if self.value_range is None:
            return number
        vlo, vhi = self.value_range
        return vlo + (number - self.lo) * (vhi - vlo) / (self.hi - self.lo)

    def off_scale(self, number: float) -> str | None:
        """Why `number` is a reply on another scale than this one, or None."""
        if self.hi > 1 and 0 < number < 1:
            return f"reply on the 0-1 scale ({self.key} {number:g}), asked {self.name}"
        return None

    def describe(self) -> dict[str, object]:
        """What users see of the scale (docs, `judge_scales()`)."""
        return {
            "scale": self.name,
            "asked": f"{self.key} {self.lo:g}-{self.hi:g}{' (integer)' if self.integer else ''}"
            if self.asked
            else None,
            "value_range": list(self.range),
        }


# The 0-1 answer judges ask for 0-10 (small models use an integer scale far more reliably than
# decimals) and store score / 10.
SCORE_0_10 = Scale(
    "0-10", 0.0, 10.0, key="score", aliases=("grade", "rating"), value_range=(0.0, 1.0), detail="score_0_10"
)
GRADE_1_10 = Scale("1-10", 1.0, 10.0, key="grade", aliases=("score", "rating"), integer=True, detail="grade")
TREC_0_3 = Scale(
    "0-3",
    0.0,
    3.0,
    key="grade",
    aliases=("score", "final score", "final_score"),
    integer=True,
    detail="grade",
)
PROPORTION = Scale("0-1", 0.0, 1.0, key="", asked=False, detail="")
# Binary verdicts (context_sufficiency, abstained): the model replies 1 or 0 in the judge's own field, and
# the stored value is that label. Another number is rounded (then clamped) into {0, 1} and flagged.
SUFFICIENT_0_1 = Scale(
    "0/1",
    0.0,
    1.0,
    key="sufficient_context",
    aliases=("sufficient context", "sufficient", "label"),
    integer=True,
    detail="label",
)
ABSTAINED_0_1 = Scale(
    "0/1", 0.0, 1.0, key="abstained", aliases=("abstain", "declined", "label"), integer=True, detail="label"
)
