"""The cost options of `ragmeter run`: spend caps (`--max-cost-usd`, `--max-judge-cost-usd`) and the
estimate before a run (`--estimate [--pilot N]`). The caps' semantics live in ragmeter.llm.spend, the
estimate's in ragmeter.run.estimate; this module only checks the flags and the prices they need."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import click

from ragmeter.cli.run_options import Option, Params
from ragmeter.errors import InputError

COST_OPTIONS: list[Option] = [
    click.option(
        "--max-cost-usd",
        type=float,
        metavar="USD",
        help="Stop the run, resumable, before an LLM request could take its spend (judge + system) past "
        "USD (docs/cost.md).",
    ),
    click.option(
        "--max-judge-cost-usd",
        type=float,
        metavar="USD",
        help="As --max-cost-usd, for the judge's spend alone.",
    ),
    click.option(
        "--estimate",
        is_flag=True,
        help="Run a seeded pilot (stored as its own run), then print the full run's expected cost, calls, "
        "tokens and time; the full run is not started.",
    ),
    click.option(
        "--pilot", type=int, metavar="N", help="With --estimate: queries in the pilot (default 10)."
    ),
]

DEFAULT_PILOT = 10


def _usd(value: float | None, flag: str) -> float | None:
    if value is None:
        return None
    if not math.isfinite(value) or value < 0:
        raise InputError(f"must be a finite amount >= 0, got {value}", source=flag)
    return value


@dataclass(frozen=True)
class CostOptions:
    """Spend caps (USD; None: none) and the estimate."""

    max_cost_usd: float | None = None
    max_judge_cost_usd: float | None = None
    estimate: bool = False
    pilot: int = DEFAULT_PILOT

    @property
    def capped(self) -> bool:
        return self.max_cost_usd is not None or self.max_judge_cost_usd is not None

    @classmethod
    def from_params(cls, p: Params) -> CostOptions:
        pilot = p.get("pilot")
        if pilot is not None and not p.get("estimate"):
            raise InputError("needs --estimate", source="--pilot")
        if pilot is not None and pilot < 1:
            raise InputError(f"must be at least 1 query, got {pilot}", source="--pilot")
        if p.get("estimate") and p.get("resume"):
            raise InputError("estimates a new run; leave --resume out", source="--estimate")
        return cls(
            max_cost_usd=_usd(p.get("max_cost_usd"), "--max-cost-usd"),
            max_judge_cost_usd=_usd(p.get("max_judge_cost_usd"), "--max-judge-cost-usd"),
            estimate=bool(p.get("estimate")),
            pilot=DEFAULT_PILOT if pilot is None else pilot,
        )

    def run_options(self) -> dict[str, Any]:
        return {"max_cost_usd": self.max_cost_usd, "max_judge_cost_usd": self.max_judge_cost_usd}

    def check_prepared(self, prepared: Any) -> None:
        """Under a cap, every LLM the run calls has a known price, and the queries run here."""
        if not self.capped:
            return
        flag = "--max-cost-usd" if self.max_cost_usd is not None else "--max-judge-cost-usd"
        if prepared.config.executor != "local":
            raise InputError("a spend cap runs on the local executor only", source=flag)
        from ragmeter.llm.pricing import model_of_ref, price_source

        record = prepared.record
        for role, ref in (("judge", record.judge), ("generator", record.generator)):
            if ref is None:
                continue
            model = model_of_ref(ref.spec, ref.public)
            if model is not None and price_source(model) is None:
                raise InputError(
                    f"the {role} model {model!r} has no known price, so its spend cannot be capped: "
                    'give it one in the RAGMETER_LLM_PRICES file ({"MODEL": [input, output]} USD per '
                    "million tokens; see `ragmeter prices`)",
                    source=flag,
                )
