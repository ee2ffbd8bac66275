"""Seams a user trips on: a flag the run cannot honour, a missing model folder, a gate or effect outside its
metric's range, a module that raises at import, a refused bundle or a failed download. Each is one line
naming the flag or file, exit 2, no run row stored and no folder left behind."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

Cli = Callable[..., tuple[int, str, str]]

RUN = ["run", "--no-progress"]
EXPERIMENT = "dataset: {dataset}\nk: [5, 10]\nvariants:\n  - {{name: other, embedding: {model}}}\n"


def _rows(cli: Cli, db: str) -> list[str]:
    code, out, err = cli("runs", "list", "--db", db, "--format", "json")
    assert code == 0, err
    return [r["run_id"] for r in json.loads(out)]


def _one_line(code: int, err: str, expected: str) -> None:
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("ragmeter: error: ") and expected in lines[0], lines[0]


CASES = {
    "judge metric without --judge": (
        [*RUN, "-s", "cli_fakes:system_a", "--metrics", "ndcg@10,answer_correctness"],
        "--metrics: 'answer_correctness' is a judge metric: it needs a judge (--judge MODEL)",
    ),
    "rc_f1 without --judge": (
        [*RUN, "-s", "cli_fakes:system_a", "--metrics", "rc_f1"],
        "--metrics: 'rc_f1' is a judge metric",
    ),
    "answer metric with --no-generation": (
        [*RUN, "-s", "cli_fakes:system_a", "--no-generation", "--metrics", "token_f1"],
        "--metrics: 'token_f1' scores the generated answer, and this run generates none",
    ),
    "missing --embedding folder": (
        [*RUN, "--no-generation", "--embedding", "./no/such/model"],
        "--embedding: embedding model 'no/such/model': no such folder",
    ),
    "a fraction for a percent gate": (
        [
            *RUN,
            "-s",
            "cli_fakes:system_a",
            "--judge",
            "openai:gpt-4o-mini",
            "--fail-under",
            "pass_rate_8=0.9",
        ],
        "--fail-under: pass_rate_8 is a percentage (0-100): 0.9 would gate at 0.9 %; give 90",
    ),
    "a gate outside the metric's range": (
        [*RUN, "-s", "cli_fakes:system_a", "--fail-under", "ndcg@10=1.5"],
        "--fail-under: ndcg@10 lies in 0 to 1: 1.5 is outside it",
    ),
    "a module that raises at import": (
        [*RUN, "-s", "raising_module:retrieve"],
        "--system: raising_module:retrieve: importing module 'raising_module' raised TypeError: "
        "unsupported operand",
    ),
    "experiment: a variant's missing embedding folder": (
        ["experiment", "embedding.yaml"],
        "embedding.yaml: field 'variants.0' (other): embedding model",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_refused_with_one_line_and_nothing_stored(
    case: str, cli_env: dict[str, str], ragmeter_cli: Cli, tmp_path: Path
) -> None:
    (tmp_path / "raising_module.py").write_text("def retrieve(q, k):\n    return []\n\nBROKEN = 1 + 'one'\n")
    model = tmp_path / "no" / "such" / "model"
    (tmp_path / "embedding.yaml").write_text(EXPERIMENT.format(dataset=cli_env["dataset"], model=model))
    args, expected = CASES[case]
    if args[0] == "run":
        args = [*args, "-d", cli_env["dataset"]]
    code, _, err = ragmeter_cli(*args, "--db", cli_env["db"])
    _one_line(code, err, expected)
    assert _rows(ragmeter_cli, cli_env["db"]) == []


def test_a_module_error_names_the_file_and_line(
    cli_env: dict[str, str], ragmeter_cli: Cli, tmp_path: Path
) -> None:
    (tmp_path / "raising_module2.py").write_text("X = 1\n\nraise RuntimeError('no index\\nbuilt')\n")
    code, _, err = ragmeter_cli(
        *RUN, "-d", cli_env["dataset"], "-s", "raising_module2:f", "--db", cli_env["db"]
    )
    _one_line(code, err, "raised RuntimeError: no index built")
    assert f"({tmp_path / 'raising_module2.py'}, line 3)" in err


def test_gate_values_inside_the_range_still_pass(cli_env: dict[str, str], ragmeter_cli: Cli) -> None:
    """The range check refuses only what a gate can never mean: a plain gate in range runs and gates."""
    code, _, err = ragmeter_cli(
        *RUN, "-d", cli_env["dataset"], "-s", "cli_fakes:system_a", "--fail-under", "ndcg@10=1",
        "--db", cli_env["db"],
    )  # fmt: skip
    assert code == 1 and "fail-under: ndcg@10" in err, err


@pytest.mark.parametrize(
    ("mde", "expected"),
    [
        (
            "-0.1",
            "--mde: --mde is the size of the effect to detect, in ndcg@10's units: give a number above 0",
        ),
        ("0", "give a number above 0, not 0"),
        ("5", "--mde: ndcg@10 lies in 0 to 1: an effect of 5 is larger than its whole range"),
    ],
)
def test_plan_refuses_an_effect_that_is_not_one(
    mde: str, expected: str, cli_env: dict[str, str], ragmeter_cli: Cli
) -> None:
    code, _, err = ragmeter_cli(
        *RUN, "-d", cli_env["dataset"], "-s", "cli_fakes:system_a", "--db", cli_env["db"]
    )
    assert code == 0, err
    (run_id,) = _rows(ragmeter_cli, cli_env["db"])
    code, _, err = ragmeter_cli(
        "plan", "--pilot", run_id, "--metric", "ndcg@10", "--mde", mde, "--db", cli_env["db"]
    )
    _one_line(code, err, expected)
    code, out, err = ragmeter_cli(
        "plan", "--pilot", run_id, "--metric", "ndcg@10", "--mde", "0.2", "--db", cli_env["db"]
    )
    assert code == 0 and "queries needed" in out, err


def test_a_refused_bundle_leaves_no_folder(
    cli_env: dict[str, str], ragmeter_cli: Cli, tmp_path: Path
) -> None:
    code, _, err = ragmeter_cli(
        *RUN, "-d", cli_env["dataset"], "-s", "cli_fakes:system_a", "--db", cli_env["db"]
    )
    assert code == 0, err
    bundle = tmp_path / "out" / "bundle"
    code, _, err = ragmeter_cli("view", "--bundle", str(bundle), "--run", "nosuch", "--db", cli_env["db"])
    assert code == 2 and "nosuch" in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()


def test_a_failed_download_leaves_no_folder_in_the_cache(
    ragmeter_cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on: the connection is refused at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cache = tmp_path / "cache"
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(cache))
    monkeypatch.setenv("RAGMETER_DATA_DIR", str(tmp_path / "nodata"))
    code, _, err = ragmeter_cli("datasets", "fetch", "scifact", "--base-url", f"http://127.0.0.1:{port}")
    assert code != 0 and "Traceback" not in err, err
    assert not cache.exists(), sorted(str(p) for p in cache.rglob("*"))
    cache.mkdir()  # a cache that was there stays, without the benchmark's folder
    code, _, err = ragmeter_cli("datasets", "fetch", "scifact", "--base-url", f"http://127.0.0.1:{port}")
    assert code != 0 and cache.is_dir() and list(cache.iterdir()) == [], err


SURROGATE_JSON = (
    '{"name": "s", "queries": [{"query_id": "q1", "question": "What is \\ud800 here?", "relevant_doc_ids": '
    '["d1"]}], "corpus": [{"doc_id": "d1", "text": "Paris"}]}'
)


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("lone.json", SURROGATE_JSON, "queries[0]: field 'question': '\\ud800' is a lone surrogate"),
        (
            "lone.jsonl",
            '{"query_id": "q1", "question": "x", "relevant_doc_ids": ["d1"], "metadata": {"t": ["a", "\\udc80"]}}\n',
            "lone.jsonl:1: field 'metadata.t[1]': '\\udc80' is a lone surrogate",
        ),
        (
            "bytes.jsonl",
            b'{"query_id": "q1", "question": "\xff"}\n',
            "bytes.jsonl:1: not UTF-8 text (byte 0xff",
        ),
    ],
)
def test_unencodable_text_in_a_dataset_is_one_line_in_run_and_validate(
    name: str, content: str | bytes, expected: str, cli_env: dict[str, str], ragmeter_cli: Cli, tmp_path: Path
) -> None:
    path = tmp_path / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    code, out, err = ragmeter_cli("datasets", "validate", str(path))
    assert code == 1 and expected in out and "Traceback" not in out + err, (out, err)
    code, _, err = ragmeter_cli(*RUN, "-d", str(path), "-s", "cli_fakes:system_a", "--db", cli_env["db"])
    _one_line(code, err, expected)
    assert _rows(ragmeter_cli, cli_env["db"]) == []


def test_unencodable_text_in_a_run_file_is_one_line(
    cli_env: dict[str, str], ragmeter_cli: Cli, tmp_path: Path
) -> None:
    run_file = tmp_path / "run.jsonl"
    run_file.write_text('{"query_id": "q-france", "retrieved": [{"doc_id": "d-\\ud801", "score": 1.0}]}\n')
    code, _, err = ragmeter_cli(*RUN, "-d", cli_env["dataset"], "-s", str(run_file), "--db", cli_env["db"])
    _one_line(code, err, "run.jsonl:1: field 'retrieved[0].doc_id': '\\ud801' is a lone surrogate")
    assert _rows(ragmeter_cli, cli_env["db"]) == []


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--judge", "openai-compatible:m@http://127.0.0.1:9", "--collection", "nope"],
            "--collection: no collection 'nope'",
        ),
        (["--judge", "gpt-4o", "--collection", "nope"], "--judge: bad judge spec 'gpt-4o'"),
        (
            [
                "--judge",
                "openai-compatible:m@http://127.0.0.1:9",
                "--collection",
                "nope",
                "--prompt",
                "p.txt",
            ],
            "p.txt: cannot read",
        ),
    ],
)
def test_a_deprecated_flag_given_wrongly_is_one_line(
    args: list[str], expected: str, cli_env: dict[str, str], ragmeter_cli: Cli
) -> None:
    code, _, err = ragmeter_cli("generate", *args, "--db", cli_env["db"])
    _one_line(code, err, expected)
    assert "is deprecated" not in err
