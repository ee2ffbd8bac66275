"""Framework adapters without any framework: spec parsing, the missing-extra line, lazy imports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ragmeter.errors import InputError, MissingExtraError
from ragmeter.systems.adapters import PREFIXES, from_spec, is_adapter_spec
from ragmeter.systems.adapters._common import answer_text, number_contexts, require
from ragmeter.systems.base import Retrieved


def test_adapter_specs_are_recognised() -> None:
    assert sorted(PREFIXES) == ["haystack", "langchain", "llamaindex"]
    assert is_adapter_spec("langchain:app:retriever") and is_adapter_spec("haystack:app:build")
    assert not is_adapter_spec("app:retriever") and not is_adapter_spec("builtin")
    with pytest.raises(InputError, match="not a framework adapter spec"):
        from_spec("dspy:app:x")
    with pytest.raises(InputError, match="expected module:function"):
        from_spec("llamaindex:no-colon-here")


def test_a_missing_framework_names_its_extra() -> None:
    with pytest.raises(MissingExtraError, match=r"pip install 'ragmeter\[haystack\]'"):
        require("ragmeter_tests_no_such_framework", "haystack", "the Haystack adapter")


def test_contexts_are_numbered_and_answers_read() -> None:
    ctx = [Retrieved("a", 2.0, "first text"), Retrieved("b", 1.0, "second text")]
    assert number_contexts(ctx) == "[1] first text\n\n[2] second text"
    assert answer_text({"answer": "x [1]", "context": []}, source="t") == "x [1]"
    assert answer_text(
        type("Msg", (), {"content": [{"type": "text", "text": "hi"}, " there"]})(), source="t"
    ) == ("hi there")
    with pytest.raises(InputError, match="without 'answer'"):
        answer_text({"reply": "x"}, source="t")


def test_importing_ragmeter_systems_imports_no_framework() -> None:
    code = (
        "import sys, ragmeter, ragmeter.systems, ragmeter.systems.adapters\n"
        "from ragmeter.systems import build_system, from_langchain, from_llamaindex, from_haystack\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('langchain_core', 'llama_index', 'haystack', 'torch', 'openai')]\n"
        "print(bad)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
