"""Framework adapters: a LangChain retriever/chain, a LlamaIndex retriever/query engine or a Haystack
pipeline as a ragmeter system. Each framework is an optional extra (`ragmeter[langchain]`,
`ragmeter[llamaindex]`, `ragmeter[haystack]`) and is imported only when an adapter is built."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ragmeter._lazy import lazy_getattr
from ragmeter.errors import InputError
from ragmeter.systems.adapters._prefixes import PREFIXES as PREFIXES

__all__ = ["PREFIXES", "from_haystack", "from_langchain", "from_llamaindex", "from_spec"]


_LAZY = {
    "from_langchain": "ragmeter.systems.adapters._langchain",
    "from_llamaindex": "ragmeter.systems.adapters._llamaindex",
    "from_haystack": "ragmeter.systems.adapters._haystack",
}

if TYPE_CHECKING:
    from ragmeter.systems.adapters._haystack import from_haystack
    from ragmeter.systems.adapters._langchain import from_langchain
    from ragmeter.systems.adapters._llamaindex import from_llamaindex


__getattr__ = lazy_getattr(__name__, _LAZY, globals())


def is_adapter_spec(spec: str) -> bool:
    """True for `langchain:...`, `llamaindex:...` and `haystack:...`."""
    prefix, sep, _ = spec.partition(":")
    return bool(sep) and prefix in PREFIXES


def from_spec(spec: str, **options: Any) -> Any:
    """`langchain:module:attr` (also llamaindex:, haystack:) -> the adapter over that object.

    The attribute is the framework object itself, or a function called with no arguments that returns
    it. For LangChain it may also be a mapping `{"retriever": ..., "chain": ...}` or a pair
    `(retriever, chain)`. `options` go to the adapter function (e.g. id_key=, retriever=)."""
    from ragmeter.systems.external import import_target

    prefix, _, target_spec = spec.partition(":")
    if prefix not in PREFIXES:
        raise InputError(
            f"not a framework adapter spec (use {', '.join(p + ':' for p in PREFIXES)})", source=spec
        )
    target = import_target(target_spec)
    if inspect.isfunction(target):
        target = target()
    build = __getattr__(PREFIXES[prefix])
    options.setdefault("name", spec)
    if prefix == "langchain":
        if isinstance(target, Mapping):
            if "retriever" not in target:
                raise InputError("a mapping needs 'retriever' (and optionally 'chain')", source=spec)
            return build(target["retriever"], target.get("chain"), **options)
        if isinstance(target, tuple) and len(target) == 2:
            return build(target[0], target[1], **options)
    try:
        return build(target, **options)
    except TypeError as exc:
        raise InputError(f"bad adapter option: {exc}", source=spec) from None
