"""A metric registered in the --system module (docs/metrics.md) is known to --metrics and --fail-under."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

Cli = Callable[..., tuple[int, str, str]]

MODULE = """
import ragmeter.metrics as rm

if rm.lookup("i19_answer_words") is None:
    rm.register("i19_answer_words", lambda inp: float(len((inp.answer or "").split())),
                range=(0, None), higher_is_better=False, scale="words")

class FiveWords:
    def retrieve(self, question, k):
        return ["d-italy"]

    def answer(self, question, contexts):
        return "an answer of five words"

system = FiveWords()
"""


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    (tmp_path / "i19_user_system.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "i19_user_system", raising=False)
    yield "i19_user_system:system"
    # The module registers its metric in this process's registry: forget it, or every later run in this
    # test worker plans it too (a run resumed from another process's stored plan would then differ).
    import ragmeter.metrics as rm

    if rm.lookup("i19_answer_words") is not None:
        rm.unregister("i19_answer_words")


def test_fail_under_and_metrics_accept_a_metric_of_the_system_module(
    cli_env: dict[str, str], ragmeter_cli: Cli, user_module: str, tmp_path: Path
) -> None:
    out = tmp_path / "r.json"
    args = ["run", "-d", cli_env["dataset"], "-s", user_module, "--no-progress", "--db", cli_env["db"]]
    code, _, err = ragmeter_cli(*args, "--metrics", "mrr,i19_answer_words", "-o", str(out))
    assert code == 0, err
    aggregate = json.loads(out.read_text())["aggregate"]
    assert aggregate["i19_answer_words"]["mean"] == 5.0
    # Gated like a built-in metric, in its own direction (lower is better): 5 words > 3 fails, <= 8 passes.
    code, _, err = ragmeter_cli(*args, "--fail-under", "i19_answer_words=3")
    assert code == 1 and "Traceback" not in err, err
    code, _, err = ragmeter_cli(*args, "--fail-under", "i19_answer_words=8")
    assert code == 0, err
