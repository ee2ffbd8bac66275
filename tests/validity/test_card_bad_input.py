"""`judges card` refuses bad input in one line (exit 2, no traceback) before any judge call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from in_process import run_main
from ragmeter.models import EvalDataset, EvalQuery


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code, _, err = run_main(capsys, *args)
    return code, err


@pytest.fixture
def items(tmp_path: Path) -> str:
    path = tmp_path / "items.json"
    data = EvalDataset(
        name="few", queries=[EvalQuery(query_id="a", question="Why?", metadata={"answer": "Because."})]
    )
    path.write_text(data.model_dump_json(), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("extra", "names"),
    [
        (["--perturbations", "padding,shouting"], "--perturbations"),
        (["--metric", "no_such_judge"], "no_such_judge"),
        (["--repeats", "0"], "--repeats"),
        (["--tolerance", "1.5"], "--tolerance"),
        (["--against", "missing-card.json"], "--against"),
        (["--scale", "1-5"], "--scale"),
    ],
)
def test_bad_input_is_one_line(
    capsys: pytest.CaptureFixture[str], items: str, tmp_path: Path, extra: list[str], names: str
) -> None:
    db = str(tmp_path / "store.db")
    # an unreachable judge: any call would fail, so a refusal must come first
    args = ["judges", "card", "--judge", "openai-compatible:x@http://127.0.0.1:9/v1", "-d", items, "--db", db]
    metric = [] if "--metric" in extra else ["--metric", "relevance"]
    code, err = _run(capsys, *args, *metric, *extra)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and names in err and "Traceback" not in err


def test_a_card_file_with_a_bad_field_is_named(
    capsys: pytest.CaptureFixture[str], items: str, tmp_path: Path
) -> None:
    bad = tmp_path / "card.json"
    bad.write_text(json.dumps({"schema": "ragmeter.judge_card/1", "metric": 3}), encoding="utf-8")
    args = ["judges", "card", "--judge", "openai-compatible:x@http://127.0.0.1:9/v1", "-d", items]
    code, err = _run(
        capsys, *args, "--metric", "relevance", "--against", str(bad), "--db", str(tmp_path / "s.db")
    )
    assert code == 2 and "card.json: field " in err and len(err.strip().splitlines()) == 1


def test_no_gradable_item_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "none.json"
    path.write_text(
        EvalDataset(name="none", queries=[EvalQuery(query_id="a", question="Why?")]).model_dump_json()
    )
    args = ["judges", "card", "--judge", "openai-compatible:x@http://127.0.0.1:9/v1", "-d", str(path)]
    code, err = _run(capsys, *args, "--metric", "relevance", "--db", str(tmp_path / "s.db"))
    assert code == 2 and "has an answer" in err
