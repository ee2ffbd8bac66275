"""ragmeter.safety: URL redaction, CSV neutralising, terminal escaping, output paths, index folders."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

import pytest

from ragmeter import safety
from ragmeter.errors import InputError
from ragmeter.models import EvalConfig, EvalRunResult


@pytest.mark.parametrize(
    ("url", "public", "secret"),
    [
        ("http://user:Sup3rSecret@host:8080/v1", "http://***@host:8080/v1", "Sup3rSecret"),
        ("https://TOKEN123456@host/v1", "https://***@host/v1", "TOKEN123456"),
        ("https://h/v1?api_key=KeyValue99&x=1", "https://h/v1?api_key=***&x=1", "KeyValue99"),
        ("https://h/p?sig=abcdef123&Signature=zz9988&X-Amz-Credential=cred4444", None, "abcdef123"),
        ("https://h/cb#access_token=frag77777", "https://h/cb#access_token=***", "frag77777"),
        ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1", None),
    ],
)
def test_redact_url(url: str, public: str | None, secret: str | None) -> None:
    got = safety.redact_url(url)
    if public is not None:
        assert got == public
    if secret is not None:
        assert secret not in got
        assert secret not in safety.mask_secrets(f"error talking to {secret}")


def test_config_stores_public_spec_and_client_gets_real_one() -> None:
    real = "openai-compatible:m@http://u:CfgPassw0rd1@127.0.0.1:9/v1"
    config = EvalConfig(judge_model=real, system="https://u:SysPassw0rd2@rag.local/ask?token=SysTok3n33")
    assert config.judge_model == "openai-compatible:m@http://***@127.0.0.1:9/v1"
    assert safety.reveal(config.judge_model) == real
    dumped = EvalRunResult(config=config).model_dump_json()
    for secret in ("CfgPassw0rd1", "SysPassw0rd2", "SysTok3n33"):
        assert secret not in dumped and secret not in str(config.model_dump())
    from ragmeter.llm import from_spec

    client = from_spec(config.judge_model)
    assert "CfgPassw0rd1" in str(getattr(client, "base_url", ""))  # the request still authenticates
    assert "CfgPassw0rd1" not in str(client.spec_public)


def test_stored_redacted_spec_is_called_without_placeholder() -> None:
    from ragmeter.llm import from_spec

    client = from_spec("openai-compatible:m@http://***@never-seen.example:9/v1?api_key=***")
    assert getattr(client, "base_url", None) == "http://never-seen.example:9/v1"


def test_environment_keys_are_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-EnvCanary-123456")
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "svc-token-abcdef")
    text = safety.json_text({"error": "401 for key sk-EnvCanary-123456 and svc-token-abcdef"})
    assert "sk-EnvCanary-123456" not in text and "svc-token-abcdef" not in text and "***" in text


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("=1+2", "'=1+2"),
        ("+cmd", "'+cmd"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("-0.5", "-0.5"),  # a number we wrote stays a number
        ("+1e-05", "+1e-05"),
        (-0.5, -0.5),
        (3, 3),
        ("plain", "plain"),
        ("", ""),
    ],
)
def test_csv_cell(value: object, expected: object) -> None:
    assert safety.csv_cell(value) == expected
    assert safety.csv_cell(value, raw=True) == value


def test_csv_round_trip_keeps_numbers() -> None:
    buf = io.StringIO()
    csv.writer(buf).writerow(safety.csv_row(['=HYPERLINK("x")', repr(-0.25), -1.5]))
    cells = next(csv.reader(io.StringIO(buf.getvalue())))
    assert cells[0].startswith("'=") and float(cells[1]) == -0.25 and float(cells[2]) == -1.5


def test_printable_and_console() -> None:
    hostile = "a\x1b]0;T\x07\x1b[2J\x9b\u202e\rz [red]x[/red]"
    shown = safety.printable(hostile)
    assert not any((ord(c) < 32 and c not in "\t\n") or 0x7F <= ord(c) <= 0x9F for c in shown)
    assert "\\x1b" in shown and "\\u202e" in shown
    out = io.StringIO()
    console = safety.safe_console(file=out, force_terminal=True, width=200, highlight=False)
    console.print(safety.console_text(hostile))
    console.print("[bold]ours[/bold] " + hostile)
    text = out.getvalue()
    assert "\x1b]0;" not in text and "\x1b[2J" not in text and "\x9b" not in text
    assert "[red]x[/red]" in text  # markup in data is shown, not applied
    assert "\x1b[1m" in text  # our own styling still works


def test_check_output_path(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match=r"--output: .*is a folder"):
        safety.check_output_path(tmp_path / "dir", source="--output")
    with pytest.raises(InputError, match=r"--output: .*it is a file"):
        safety.check_output_path(tmp_path / "file" / "a" / "b.json", source="--output")
    target = tmp_path / "new" / "deeper" / "out.json"
    assert safety.check_output_path(target, source="--output") == target
    assert not (tmp_path / "new").exists()  # checking creates nothing
    safety.write_text_atomic(target, "{}\n", source="--output")
    assert target.read_text() == "{}\n"
    assert [p.name for p in target.parent.iterdir()] == ["out.json"]  # no .tmp left


@pytest.mark.parametrize("name", ["..", ".", "/", "/etc", "../../escape", "a\x00b", "C:\\x", "~", "é/..", ""])
def test_index_folder_stays_inside(tmp_path: Path, name: str) -> None:
    from ragmeter.systems.indexes import folder_name, index_folder

    root = tmp_path / "indexes"
    folder = index_folder(root, name, "bm25-c200-40")
    assert os.path.commonpath([root, os.path.normpath(folder)]) == str(root)
    assert folder.parent.parent == root and "/" not in folder_name(name) and "\x00" not in folder_name(name)
    assert folder_name("scifact") == "scifact"  # plain names keep their folder (no rebuild)
    assert folder_name("a b") != folder_name("a_b")


def test_pipeline_index_inside_folder(tmp_path: Path) -> None:
    pytest.importorskip("bm25s")
    from ragmeter.models import Document
    from ragmeter.systems.pipeline import Pipeline

    root = tmp_path / "sandbox" / "indexes"
    docs = [Document(doc_id=f"d{i}", text=f"paris france capital number {i}") for i in range(5)]
    for name in ("..", "../..", "/tmp/abs"):
        Pipeline(docs, mode="fulltext", collection=name, index_dir=root).build()
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written and all(root in p.parents for p in written)
