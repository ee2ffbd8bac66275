"""The reference of what a run evaluates, made from the live system object, spec string and options a run was
given. It lives in the run layer, not beside the record (`ragmeter.records`), because comparing an object with
a `module:attr` spec imports that target, something a record never does."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragmeter.records import SystemRef, _kind_of, object_ref, reference_ref

__all__ = ["embedding_of", "system_ref"]


def _names_object(spec: str, obj: Any) -> bool:
    """Whether `module:attr` names `obj` itself or its class (a library system such as the demo's)."""
    if _kind_of(spec) != "reference":
        return False
    from ragmeter.errors import InputError
    from ragmeter.systems.external import import_target

    try:
        target = import_target(spec)
    except InputError:
        return False
    return target is obj or (isinstance(target, type) and type(obj) is target)


def system_ref(
    system_in: Any, *, spec: str, mode: str, namespace: str | None, options: Mapping[str, Any]
) -> SystemRef:
    """The reference of what a run evaluates: `system_in` (a spec string, an object, or None = `spec`)."""
    if system_in is None or isinstance(system_in, str):
        ref = reference_ref(system_in or spec, mode=mode, namespace=namespace, options=options)
        if ref.kind == "builtin":
            ref = ref.model_copy(update={"embedding": embedding_of(mode, ref.options)})
        return ref
    if not options and _names_object(spec, system_in):
        return reference_ref(spec, mode=mode, namespace=namespace, options={})
    return object_ref(system_in, mode=mode, namespace=namespace)


def embedding_of(mode: str, options: Mapping[str, Any]) -> dict[str, Any] | None:
    """The embedding space a built-in pipeline's dense index will use (None without a dense index)."""
    from ragmeter.errors import InputError
    from ragmeter.systems.indexes import embedding_space

    if mode in ("bm25", "fulltext") or "dense" in (options.get("disable") or ()):
        return None
    try:
        space = embedding_space(
            options.get("model"),
            options.get("embedding_backend", "torch"),
            options.get("max_seq_length"),
            options.get("embedding_precision"),
        )
    except InputError:
        return None  # refused with its reason when the run is checked
    return space.as_dict()
