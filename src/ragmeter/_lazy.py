"""Lazy re-exports for package `__init__` modules: a name is imported from its module on first use, so
`import ragmeter` (and `ragmeter eval`) never pay for torch, SQLAlchemy or an LLM SDK. Deprecated locations
forward their old names the same way, with a warning (`moved`)."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def by_module(groups: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """{name: module} from {module: its exported names}, the form a package lists its exports in."""
    return {name: module for module, names in groups.items() for name in names}


def lazy_getattr(package: str, exports: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module-level `__getattr__` resolving `exports` ({name: module}) and caching each in `namespace`."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__


def moved(module: str, name: str, targets: Mapping[str, str]) -> Any:
    """What a deprecated location's `__getattr__` returns: `name` from the module `targets` ({old name: the
    module that holds it now}) gives it, looked up by name, with a DeprecationWarning naming the new place
    (attributed to the code that used the old name). An AttributeError for any other name."""
    target = targets.get(name)
    if target is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warnings.warn(f"{module}.{name} moved to {target}.{name}", DeprecationWarning, stacklevel=3)
    return getattr(importlib.import_module(target), name)
