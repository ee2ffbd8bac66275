"""cross_encoder_similarity through the real CrossEncoder loading path, on a tiny random BERT built here.

No MS MARCO cross-encoder ships offline, so the weights are random: the test checks plumbing (pair order,
shapes, batching, max over golds, the [0, 1] range), not quality.
"""

from __future__ import annotations

import inspect
import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("sentence_transformers", reason="needs the semantic extra")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import ragmeter.semantic as sem  # noqa: E402
from ragmeter.errors import RagmeterError  # noqa: E402

WORDS = [
    "paris",
    "france",
    "is",
    "in",
    "the",
    "capital",
    "of",
    "city",
    "tower",
    "eiffel",
    "london",
    "river",
    "built",
    "by",
    "gustave",
    "a",
    "an",
    "big",
    "old",
]


def _build(path: Path, num_labels: int) -> Path:
    path.mkdir(parents=True)
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    if "vocab" in inspect.signature(transformers.BertTokenizer.__init__).parameters:  # transformers >= 5
        tokenizer = transformers.BertTokenizer(vocab={w: i for i, w in enumerate(words)})
    else:
        vocab = path.parent / f"vocab-{path.name}.txt"
        vocab.write_text("\n".join(words) + "\n")
        tokenizer = transformers.BertTokenizer(vocab_file=str(vocab))
    assert tokenizer("paris tower")["input_ids"][1:3] == [words.index("paris"), words.index("tower")]
    tokenizer.save_pretrained(str(path))
    config = transformers.BertConfig(
        vocab_size=len(WORDS) + 5,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        num_labels=num_labels,
        initializer_range=0.2,  # 10x the default, so that different pairs get clearly different logits
    )
    torch.manual_seed(1234)
    transformers.BertForSequenceClassification(config).save_pretrained(str(path))
    return path


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build(tmp_path_factory.mktemp("ce") / "tiny-bert-ce", num_labels=1)


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    sem.clear_cache()


def _reference_logit(model_dir: Path, first: str, second: str) -> float:
    """The logit of (first, second) straight from transformers, without sentence-transformers."""
    tok = transformers.AutoTokenizer.from_pretrained(str(model_dir))
    model = transformers.AutoModelForSequenceClassification.from_pretrained(str(model_dir)).eval()
    with torch.no_grad():
        return float(model(**tok(first, second, return_tensors="pt")).logits[0, 0])


PREDS = ["paris is the capital of france", "london", "the eiffel tower was built by gustave", "river city"]
GOLDS = [["paris", "france capital"], ["london"], ["eiffel", "tower built", "gustave eiffel"], "old river"]


def test_scores_pairs_gold_then_answer(tiny: Path) -> None:
    [r] = sem.cross_encoder_similarity_batch(["paris is big"], [["the capital city"]], model=str(tiny))
    expected = _reference_logit(tiny, "the capital city", "paris is big")
    swapped = _reference_logit(tiny, "paris is big", "the capital city")
    assert r.details["logit"] == pytest.approx(expected, abs=1e-4)
    assert abs(expected - swapped) > 1e-3  # the order matters, so the check above can fail
    assert r.value == pytest.approx(1 / (1 + math.exp(-expected)), abs=1e-6)
    assert r.details["model"] == str(tiny)


def test_shapes_range_and_max_over_golds(tiny: Path) -> None:
    out = sem.cross_encoder_similarity_batch(PREDS, GOLDS, model=tiny)
    assert len(out) == len(PREDS)
    for pred, golds, r in zip(PREDS, GOLDS, out, strict=True):
        assert r.name == "cross_encoder_similarity" and r.error is None
        assert r.value is not None and 0.0 <= r.value <= 1.0
        gold_list = [golds] if isinstance(golds, str) else golds
        logits = [_reference_logit(tiny, g, pred) for g in gold_list]
        assert r.details["logit"] == pytest.approx(max(logits), abs=1e-4)
        assert r.details["best_gold"] == max(range(len(logits)), key=logits.__getitem__)
    # random weights still separate the pairs: the scores are not all the same number
    assert len({round(r.details["logit"], 4) for r in out}) > 1


def test_batching_does_not_change_scores_and_is_one_call(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    encoder = sem.load_cross_encoder(tiny)
    assert sem.load_cross_encoder(tiny) is encoder  # cached
    calls: list[int] = []
    real = encoder.predict

    def spy(pairs: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(len(pairs))
        return real(pairs, *args, **kwargs)

    monkeypatch.setattr(encoder, "predict", spy)
    one = sem.cross_encoder_similarity_batch(PREDS, GOLDS, model=tiny, batch_size=1)
    big = sem.cross_encoder_similarity_batch(PREDS, GOLDS, model=tiny, batch_size=64)
    assert calls == [7, 7]  # every (gold, answer) pair of the run in one predict call
    for a, b in zip(one, big, strict=True):
        assert a.value == pytest.approx(b.value, abs=1e-5)


def test_undefined_cases(tiny: Path) -> None:
    out = sem.cross_encoder_similarity_batch(
        [None, "", "paris", "paris"], [["x"], ["x"], [], ["", "paris"]], model=tiny
    )
    assert [r.value is None for r in out] == [True, False, True, False]
    assert out[0].error == "no answer to score"
    assert out[1].value == 0.0
    assert out[2].error == "no gold answer"
    assert out[3].details["best_gold"] == 0  # the blank gold was dropped


def test_multi_label_model_is_refused(tmp_path: Path) -> None:
    three = _build(tmp_path / "nli-like", num_labels=3)
    with pytest.raises(RagmeterError, match="has 3 output labels"):
        sem.cross_encoder_similarity_batch(["a"], ["b"], model=three)


def test_unloadable_model_is_a_clear_error(tmp_path: Path) -> None:
    broken = tmp_path / "not-a-model"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    (broken / "model.safetensors").write_bytes(b"not weights")
    with pytest.raises(RagmeterError, match="could not load cross-encoder"):
        sem.load_cross_encoder(broken)
