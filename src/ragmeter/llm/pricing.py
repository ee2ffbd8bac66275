"""A small, overridable price table (USD per million tokens: input, output) for cost estimates.

Prices are list prices as we knew them on PRICES_DATE (table version PRICES_VERSION); they drift. Override
per run with `from_spec(..., prices=)` or with a JSON file named by RAGMETER_LLM_PRICES
({"model-prefix": [input, output], ...}). Which source wins: the three tables are merged key by key, the
file's price replacing the built-in one of the same key and `prices=` replacing both; then a model takes the
price of the key equal to its name, else of the longest key its name starts with. Unknown models cost None,
never 0 (`ragmeter prices` shows the table in use, the file's entries marked).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from functools import lru_cache

# Bump the version (and the date) whenever a price below changes: a run's cost says which table priced it.
PRICES_VERSION = "2025-11.1"
PRICES_DATE = "2025-11-01"

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


# Prompt tokens read from / written to a provider's prompt cache, as multiples of the model's input price
# (matched like PRICES: exact name, else the longest key the name starts with). OpenAI bills cached reads at
# a discount and writes at the plain price; Anthropic bills reads at 0.1x and 5-minute cache writes at 1.25x.
# A model with no entry pays the full input price for both (the cost is then an upper bound, never low).
CACHE_RATES: dict[str, tuple[float, float]] = {
    "gpt-4o": (0.5, 1.0),
    "gpt-4.1": (0.25, 1.0),
    "gpt-5": (0.1, 1.0),
    "o4-mini": (0.25, 1.0),
    "o3-mini": (0.5, 1.0),
    "o3": (0.25, 1.0),
    "claude-": (0.1, 1.25),
    "local:": (0.0, 0.0),
}
FULL_PRICE = (1.0, 1.0)


def cache_rates(model: str) -> tuple[float, float]:
    """(cache read, cache write) price of `model` as multiples of its input price."""
    key = _match(model, CACHE_RATES)
    return FULL_PRICE if key is None else CACHE_RATES[key]


PRICES_ENV = "RAGMETER_LLM_PRICES"


@lru_cache(maxsize=4)
def _file_prices(path: str) -> dict[str, tuple[float, float]]:
    from ragmeter.errors import InputError

    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as exc:
        raise InputError(f"cannot read the prices file: {exc.strerror}", source=path) from None
    except ValueError as exc:
        raise InputError(f"not JSON: {exc}", source=path) from None
    if not isinstance(data, dict):
        raise InputError('expected {"MODEL": [input, output], ...} (USD per million tokens)', source=path)
    out: dict[str, tuple[float, float]] = {}
    for key, value in data.items():
        try:
            pair = (float(value[0]), float(value[1]))
            if len(value) != 2 or not all(math.isfinite(x) and x >= 0 for x in pair):
                raise ValueError
        except (TypeError, ValueError, IndexError, KeyError):
            raise InputError(
                f"field {key!r}: expected [input, output], two prices >= 0 (USD per million tokens)",
                source=path,
            ) from None
        out[str(key)] = pair
    return out


def file_prices() -> dict[str, tuple[float, float]]:
    """The entries of the RAGMETER_LLM_PRICES file ({} when the variable is not set)."""
    env = os.environ.get(PRICES_ENV)
    return _file_prices(env) if env else {}


def _match(model: str, table: Mapping[str, tuple[float, float]]) -> str | None:
    if model in table:
        return model
    matches = [k for k in table if model.startswith(k)]
    return max(matches, key=len) if matches else None


def price_source(
    model: str, overrides: Mapping[str, tuple[float, float]] | None = None
) -> tuple[str, tuple[float, float]] | None:
    """(where the price of `model` comes from: "prices=", the file's path or "built-in", the price), or
    None when no source prices it."""
    sources = [
        (PRICES, "built-in"),
        (file_prices(), os.environ.get(PRICES_ENV, "")),
        (overrides or {}, "prices="),
    ]
    table: dict[str, tuple[tuple[float, float], str]] = {}
    for entries, name in sources:
        table.update({k: (v, name) for k, v in entries.items()})
    key = _match(model, {k: v[0] for k, v in table.items()})
    if key is None:
        return None
    price, name = table[key]
    return name, price


def model_of_ref(spec: str, public: Mapping[str, object] | None = None) -> str | None:
    """The model name a recorded LLM spec calls (the local judge: "local:", priced at 0)."""
    backend, _, rest = spec.partition(":")
    if backend == "local" or (public or {}).get("backend") == "local":
        return "local:"
    model = (public or {}).get("model")
    if isinstance(model, str) and model:
        return model
    name, _, _url = rest.partition("@")
    return name or None


def price_of(
    model: str, overrides: Mapping[str, tuple[float, float]] | None = None
) -> tuple[float, float] | None:
    found = price_source(model, overrides)
    return None if found is None else found[1]


def estimate_cost(
    model: str,
    prompt_tokens: int,
    completion_tokens: int,
    overrides: Mapping[str, tuple[float, float]] | None = None,
    *,
    cache_read_tokens: int = 0,
    cache_write_tokens: int = 0,
) -> float | None:
    """USD of one call: full-price prompt tokens, cache reads and writes at their rates (CACHE_RATES),
    completion tokens; None when no price is known."""
    price = price_of(model, overrides)
    if price is None:
        return None
    read_rate, write_rate = cache_rates(model)
    full = max(0, prompt_tokens - cache_read_tokens - cache_write_tokens)
    prompt_cost = price[0] * (full + cache_read_tokens * read_rate + cache_write_tokens * write_rate)
    return (prompt_cost + completion_tokens * price[1]) / 1_000_000


def price_table() -> dict[str, object]:
    """The table in use: its version and date, the prices file (if any), and every entry with its source
    ("built-in", "file", or "file, overrides built-in" where the file replaces a built-in price)."""
    path = os.environ.get(PRICES_ENV) or None
    from_file = file_prices()
    rows: list[dict[str, object]] = []
    for key in sorted(set(PRICES) | set(from_file)):
        if key in from_file:
            source = "file, overrides built-in" if key in PRICES else "file"
            price = from_file[key]
        else:
            source, price = "built-in", PRICES[key]
        row: dict[str, object] = {"model": key, "input_per_mtok": price[0], "output_per_mtok": price[1]}
        row["source"] = source
        if key in from_file and key in PRICES:
            row["built_in"] = list(PRICES[key])
        rows.append(row)
    return {
        "version": PRICES_VERSION,
        "date": PRICES_DATE,
        "unit": "USD per million tokens",
        "file": path,
        "precedence": "prices= (Python API) > the RAGMETER_LLM_PRICES file > built-in; then the exact model "
        "name, else the longest key it starts with; no match: cost unknown (null), never 0",
        "prices": rows,
    }
