"""A small, overridable price table (USD per million tokens: input, output) for cost estimates.

Prices are list prices as we knew them; they drift. Override per run with `from_spec(..., prices=)`
or with a JSON file named by RAGMETER_LLM_PRICES ({"model-prefix": [input, output], ...}).
A model is matched by the longest table key that its name starts with; unknown models cost None.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from functools import lru_cache

PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-5-nano": (0.05, 0.40),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5": (1.25, 10.00),
    "o4-mini": (1.10, 4.40),
    "o3-mini": (1.10, 4.40),
    "o3": (2.00, 8.00),
    "claude-haiku-4-5": (1.00, 5.00),
    "claude-sonnet-4-5": (3.00, 15.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-opus-4-5": (5.00, 25.00),
    "claude-opus-4-1": (15.00, 75.00),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    # The offline judge runs on your own CPU.
    "local:": (0.0, 0.0),
}


@lru_cache(maxsize=4)
def _file_prices(path: str) -> dict[str, tuple[float, float]]:
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    return {str(k): (float(v[0]), float(v[1])) for k, v in data.items()}


def price_of(
    model: str, overrides: Mapping[str, tuple[float, float]] | None = None
) -> tuple[float, float] | None:
    table = dict(PRICES)
    env = os.environ.get("RAGMETER_LLM_PRICES")
    if env:
        table.update(_file_prices(env))
    if overrides:
        table.update(overrides)
    if model in table:
        return table[model]
    matches = [k for k in table if model.startswith(k)]
    return table[max(matches, key=len)] if matches else None


def estimate_cost(
    model: str,
    prompt_tokens: int,
    completion_tokens: int,
    overrides: Mapping[str, tuple[float, float]] | None = None,
) -> float | None:
    price = price_of(model, overrides)
    if price is None:
        return None
    return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000
