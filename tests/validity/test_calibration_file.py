"""The escalation calibration file: what calibrate stores, read back; a bad file names the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmeter.errors import InputError
from ragmeter.validity.calibration import CARD_FIELD, calibrate, load_calibration, save_calibration


def _cal() -> object:
    conf = [0.95] * 40 + [0.4] * 20
    agree = [True] * 40 + [False] * 20
    return calibrate(
        conf,
        agree,
        judge="openai-compatible:cheap@http://x/v1",
        metric="answer_correctness",
        confidence="logprob",
        target_agreement=0.9,
        risk=0.1,
        n_failed=2,
        labels="labels.json",
    )


def test_round_trip_and_guarantee(tmp_path: Path) -> None:
    cal = _cal()
    path = save_calibration(cal, tmp_path / "cal.json")  # type: ignore[arg-type]
    back = load_calibration(path)
    assert back == cal
    assert back.threshold is not None and 0.4 < back.threshold <= 0.95
    assert back.coverage == pytest.approx(40 / 60)
    assert back.n_labels == 62 and back.n_failed == 2
    assert ">= 90%" in back.guarantee and ">= 90%" in back.guarantee.split("probability")[1]
    assert back.tests[-1].rejected is False  # the sequence stopped at the first threshold it kept


def test_a_card_that_embeds_it_reads_too(tmp_path: Path) -> None:
    cal = _cal()
    card = tmp_path / "card.json"
    card.write_text(json.dumps({"judge": "x", CARD_FIELD: json.loads(cal.model_dump_json())}))  # type: ignore[attr-defined]
    assert load_calibration(card) == cal


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("{", "not JSON"),
        ('{"judge": "x"}', "field metric"),
        (None, "field risk"),
    ],
)
def test_bad_files_name_the_field(tmp_path: Path, text: str | None, needle: str) -> None:
    path = tmp_path / "bad.json"
    if text is None:
        raw = json.loads(_cal().model_dump_json())  # type: ignore[attr-defined]
        raw["risk"] = 1.5
        text = json.dumps(raw)
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_calibration(path)
    assert needle in str(err.value) and str(path) in str(err.value)
