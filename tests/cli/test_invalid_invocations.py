"""An invalid invocation is refused before anything is stored or called: exit 2, one line naming the
flag, file or field, no traceback, and the store's run rows unchanged."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

Cli = Callable[..., tuple[int, str, str]]

RUN = ["run", "--no-progress", "--no-generation"]
EXPERIMENT = "dataset: {dataset}\nk: [5, 10, 20]\nvariants:\n  - {{name: plain, mode: fulltext}}\n"


def _rows(cli: Cli, db: str) -> list[str]:
    code, out, err = cli("runs", "list", "--db", db, "--format", "json")
    assert code == 0, err
    return [r["run_id"] for r in json.loads(out)]


def _files(tmp: Path, dataset: str) -> None:
    (tmp / "mode.yaml").write_text("mode: sparse\n")
    (tmp / "topk.yaml").write_text("retrieval_top_k: [-1, 5]\n")
    (tmp / "queries.jsonl").write_text(
        '{"query_id": "q1", "question": "What is the capital of Italy?", "relevant_doc_ids": ["d-italy"]}\n'
    )
    (tmp / "later.yaml").write_text(EXPERIMENT.format(dataset=dataset) + "  - {name: broken, mode: sparse}\n")
    (tmp / "column.yaml").write_text(EXPERIMENT.format(dataset=dataset) + "columns: [mrr, nosuch@5]\n")


CASES = {
    "bad --judge spec": (
        [*RUN, "-d", "{dataset}", "-s", "cli_fakes:system_a", "--judge", "gpt-4o"],
        "--judge: bad judge spec 'gpt-4o'",
    ),
    "unknown --system module": (
        [*RUN, "-d", "{dataset}", "-s", "no_such_module:retrieve"],
        "--system: no_such_module:retrieve: cannot import module 'no_such_module'",
    ),
    "unknown --system path": (
        [*RUN, "-d", "{dataset}", "-s", "./missing/run.trec"],
        "--system: ./missing/run.trec: not a system",
    ),
    "bad config mode": (
        [*RUN, "-d", "{dataset}", "--config", "mode.yaml"],
        "mode.yaml: field 'mode': unknown mode 'sparse'",
    ),
    "JSONL dataset without corpus": (
        [*RUN, "-d", "queries.jsonl"],
        "--dataset: the built-in system needs a dataset with a corpus",
    ),
    "--fail-under unknown metric": (
        [*RUN, "-d", "{dataset}", "-s", "cli_fakes:system_a", "--fail-under", "nosuch=0.5"],
        "--fail-under: no metric 'nosuch'",
    ),
    "--fail-under metric the run does not compute": (
        [*RUN, "-d", "{dataset}", "-s", "cli_fakes:system_a", "--top-k", "5", "--fail-under", "ndcg@7=0.5"],
        "--fail-under: this run does not compute 'ndcg@7'",
    ),
    "negative cut-off in a config file": (
        [*RUN, "-d", "{dataset}", "-s", "cli_fakes:system_a", "--config", "topk.yaml"],
        "topk.yaml: field 'retrieval_top_k': cut-offs must be integers >= 1, got -1",
    ),
    "unknown --metrics name": (
        [*RUN, "-d", "{dataset}", "-s", "cli_fakes:system_a", "--metrics", "mrr,nosuch"],
        "--metrics: unknown metric 'nosuch'",
    ),
    "unknown --set key": ([*RUN, "-d", "{dataset}", "--set", "nosuch=1"], "--set: unknown setting 'nosuch'"),
    "pipeline option for another system": (
        [*RUN, "-d", "{dataset}", "-s", "cli_fakes:system_a", "--disable", "dense"],
        "--disable: sets an option of the built-in pipeline",
    ),
    "experiment: a later variant invalid": (
        ["experiment", "later.yaml"],
        "later.yaml: field 'variants.1' (broken): unknown mode 'sparse'",
    ),
    "experiment: unknown column": (
        ["experiment", "column.yaml"],
        "column.yaml: field 'columns.1': unknown metric 'nosuch@5'",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_refused_before_anything_is_stored(
    case: str, cli_env: dict[str, str], ragmeter_cli: Cli, tmp_path: Path
) -> None:
    _files(tmp_path, cli_env["dataset"])
    code, _, err = ragmeter_cli(
        "run", *RUN[1:], "-d", cli_env["dataset"], "-s", "cli_fakes:system_a", "--db", cli_env["db"]
    )
    assert code == 0, err
    before = _rows(ragmeter_cli, cli_env["db"])
    assert len(before) == 1

    args, expected = CASES[case]
    code, out, err = ragmeter_cli(*[a.format(**cli_env) for a in args], "--db", cli_env["db"])
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("ragmeter: error: ") and expected in lines[0], lines[0]
    assert _rows(ragmeter_cli, cli_env["db"]) == before
