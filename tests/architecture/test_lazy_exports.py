"""Lazy re-exports (ragmeter._lazy): every exported name resolves, an unknown one is an AttributeError, and
importing a package loads none of the modules it re-exports from."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from ragmeter._lazy import by_module

PACKAGES = ["ragmeter", "ragmeter.run", "ragmeter.score", "ragmeter.systems", "ragmeter.semantic"]


def test_by_module_lists_each_name_once_under_its_module() -> None:
    assert by_module({"a.b": ("X", "y"), "a.c": ("Z",)}) == {"X": "a.b", "y": "a.b", "Z": "a.c"}


@pytest.mark.parametrize("package", PACKAGES)
def test_every_exported_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"
    with pytest.raises(AttributeError, match="no attribute 'not_exported'"):
        module.not_exported  # noqa: B018


@pytest.mark.parametrize(
    ("package", "not_loaded"),
    [
        ("ragmeter.run", "ragmeter.run.api"),
        ("ragmeter.score", "ragmeter.score.writers"),
        ("ragmeter.semantic", "ragmeter.semantic.similarity"),  # the registry reads semantic/specs.py
    ],
)
def test_importing_the_package_loads_no_reexported_module(package: str, not_loaded: str) -> None:
    code = f"import sys, {package}; print({not_loaded!r} in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
