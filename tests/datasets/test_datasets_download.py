"""Downloads against a local HTTP server on 127.0.0.1: checksums, truncation, zips, no partial files."""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import zipfile
from pathlib import Path

import pytest
from datasets_testutil import serve_directory, serve_lying_length

from ragmeter.datasets import load_dataset, registry
from ragmeter.datasets.download import DownloadError, download_file, download_zip_members, sha256_file
from ragmeter.errors import InputError


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def test_fetch_from_a_mirror_verifies_every_file(data_dir: Path, tmp_path: Path) -> None:
    with serve_directory(data_dir) as base:
        folder = registry.fetch("scifact", dest_root=tmp_path, base_url=base, progress=False)
    assert folder == tmp_path / "beir_scifact"
    for f in registry.BENCHMARKS["scifact"].files:
        assert sha256_file(folder / f.path) == f.sha256
    assert not [p for p in folder.rglob("*") if p.name.endswith(".part")]
    # The fetched copy loads like the original.
    assert len(load_dataset("scifact", data_dir=tmp_path).queries) == 300


def test_load_dataset_downloads_into_the_cache(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGMETER_DATA_DIR", str(tmp_path / "empty"))
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    with serve_directory(data_dir) as base:
        monkeypatch.setenv("RAGMETER_DATASETS_URL", base)
        ds = load_dataset("hotpotqa")
    assert len(ds.queries) == 500
    cached = tmp_path / "cache" / "datasets" / "hotpotqa" / "hotpotqa_dev_distractor_500.jsonl"
    assert cached.is_file()
    # Found in the cache the next time: no server needed.
    monkeypatch.setenv("RAGMETER_DATASETS_URL", "http://127.0.0.1:9/unreachable")
    assert registry.locate("hotpotqa") == cached.parent
    assert len(load_dataset("hotpotqa").queries) == 500


def test_wrong_checksum_leaves_nothing(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = registry.BENCHMARKS["hotpotqa"]
    bad = dataclasses.replace(bench.files[0], sha256="0" * 64)
    monkeypatch.setitem(registry.BENCHMARKS, "hotpotqa", dataclasses.replace(bench, files=(bad,)))
    with serve_directory(data_dir) as base, pytest.raises(DownloadError, match="checksum mismatch"):
        registry.fetch("hotpotqa", dest_root=tmp_path, base_url=base, progress=False)
    assert _leftovers(tmp_path) == []


def test_truncated_file_is_rejected(data_dir: Path, tmp_path: Path) -> None:
    mirror = tmp_path / "mirror" / "squad"
    mirror.mkdir(parents=True)
    original = (data_dir / "squad" / "dev-v1.1.json").read_bytes()
    (mirror / "dev-v1.1.json").write_bytes(original[: len(original) // 2])
    dest = tmp_path / "dest"
    with serve_directory(tmp_path / "mirror") as base, pytest.raises(DownloadError, match="truncated"):
        registry.fetch("squad", dest_root=dest, base_url=base, progress=False)
    assert _leftovers(dest) == []


def test_connection_closed_early_is_a_truncated_download(tmp_path: Path) -> None:
    body = b"x" * 1000
    with serve_lying_length(body, claimed=5000) as base, pytest.raises(DownloadError, match="truncated"):
        download_file(f"{base}/f", tmp_path / "f", sha256=hashlib.sha256(body).hexdigest(), progress=False)
    assert _leftovers(tmp_path) == []


def test_http_404_and_refused_connection(tmp_path: Path) -> None:
    with serve_directory(tmp_path) as base, pytest.raises(DownloadError, match="HTTP 404"):
        download_file(f"{base}/missing.json", tmp_path / "out" / "m.json", sha256="0" * 64, progress=False)
    with pytest.raises(DownloadError, match=r"127\.0\.0\.1:9"):
        download_file(
            "http://127.0.0.1:9/x", tmp_path / "out" / "x", sha256="0" * 64, progress=False, timeout=5
        )
    assert _leftovers(tmp_path / "out") == []
    with pytest.raises(DownloadError, match="only http"):
        download_file("file:///etc/passwd", tmp_path / "p", sha256="0" * 64)


def test_zip_members_are_extracted_verified_and_renamed(data_dir: Path, tmp_path: Path) -> None:
    src = data_dir / "beir_scifact"
    served = tmp_path / "served"
    served.mkdir()
    with zipfile.ZipFile(served / "scifact.zip", "w") as zf:
        zf.write(src / "queries.jsonl", "scifact/queries.jsonl")
        zf.write(src / "qrels" / "test.tsv", "scifact/qrels/test.tsv")
    files = {f.path: f for f in registry.BENCHMARKS["scifact"].files}
    dest = tmp_path / "dest"
    members = {
        f"scifact/{p}": (dest / p, files[p].sha256, files[p].size)
        for p in ("queries.jsonl", "qrels/test.tsv")
    }
    with serve_directory(served) as base:
        download_zip_members(f"{base}/scifact.zip", members, progress=False)
        assert sha256_file(dest / "qrels" / "test.tsv") == files["qrels/test.tsv"].sha256
        assert _leftovers(dest) == ["queries.jsonl", "test.tsv"]
        # A member with the wrong checksum is not renamed into place; the zip is not left behind.
        shutil.rmtree(dest)
        bad = {"scifact/queries.jsonl": (dest / "queries.jsonl", "f" * 64, None)}
        with pytest.raises(DownloadError, match="checksum mismatch"):
            download_zip_members(f"{base}/scifact.zip", bad, progress=False)
        assert _leftovers(dest) == []
        (served / "broken.zip").write_bytes((served / "scifact.zip").read_bytes()[:100])
        with pytest.raises(DownloadError, match="not a zip"):
            download_zip_members(f"{base}/broken.zip", bad, progress=False)
        assert _leftovers(dest) == []


def test_unknown_benchmark_name(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="unknown dataset 'imagenet'"):
        registry.fetch("imagenet", dest_root=tmp_path)
    assert _leftovers(tmp_path) == []


def test_registry_checksums_match_the_shared_files(data_dir: Path) -> None:
    for bench in registry.BENCHMARKS.values():
        for f in bench.files:
            path = data_dir / bench.folder / f.path
            assert path.stat().st_size == f.size, path
            assert sha256_file(path) == f.sha256, path
