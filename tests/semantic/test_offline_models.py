"""Models that are not on this machine fail in seconds with one line saying how to point at local weights
(no cross-encoder weights ship on PyPI, and the hub retries for about a minute before its own error);
a hub name already in the local Hugging Face cache loads without the network."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("sentence_transformers", reason="needs the semantic extra")

import ragmeter.semantic as sem
from ragmeter.errors import RagmeterError
from ragmeter.semantic.locate import _in_hf_cache, hub_reachable

HUB_NAME = "cross-encoder/ms-marco-MiniLM-L-6-v2"
LINE = "pass the path of a folder with config.json and model.safetensors (or pytorch_model.bin) instead"


@pytest.fixture(autouse=True)
def _fresh() -> None:
    sem.clear_cache()


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def silent_server() -> Iterator[int]:
    """Accepts TCP connections (the backlog does) and never answers: a hub behind a black hole."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield int(s.getsockname()[1])


def _fails_fast(name: str, limit: float = 5.0) -> str:
    start = time.perf_counter()
    with pytest.raises(RagmeterError) as err:
        sem.load_cross_encoder(name)
    elapsed = time.perf_counter() - start
    assert elapsed < limit, f"took {elapsed:.1f}s"
    message = str(err.value)
    assert "\n" not in message and LINE in message and repr(name) in message
    return message


def test_hub_name_with_hub_offline_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert "not reachable" in _fails_fast("ragmeter-tests/no-such-cross-encoder", limit=1.0)


def test_hub_name_with_hub_refusing_connections(monkeypatch: pytest.MonkeyPatch, closed_port: int) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port}")
    _fails_fast("ragmeter-tests/no-such-cross-encoder")


def test_hub_name_with_hub_never_answering(monkeypatch: pytest.MonkeyPatch, silent_server: int) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{silent_server}")
    start = time.perf_counter()
    assert not hub_reachable(timeout=1.0)
    assert 0.9 < time.perf_counter() - start < 3.0  # waited for the timeout, not longer
    _fails_fast("ragmeter-tests/no-such-cross-encoder")  # the default 3 s probe, then the line


def test_the_real_hub_name_fails_fast_in_a_fresh_process() -> None:
    """The issue's case, in this machine's own environment (nothing set, no network, nothing cached), in a
    fresh interpreter: the clock includes importing ragmeter; torch is never imported."""
    if hub_reachable() or _in_hf_cache(HUB_NAME):
        pytest.skip("this machine reaches the hub or has the model cached: nothing to fail")
    code = (
        "import sys, time\n"
        "t = time.perf_counter()\n"
        "from ragmeter.semantic import load_cross_encoder\n"
        "try:\n"
        f"    load_cross_encoder({HUB_NAME!r})\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, round(time.perf_counter() - t, 3), 'torch' in sys.modules)\n"
        "    print(exc)\n"
    )
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    wall = time.perf_counter() - start
    kind, elapsed, torch_loaded = done.stdout.splitlines()[0].split()
    message = done.stdout.splitlines()[1]
    assert (kind, torch_loaded) == ("RagmeterError", "False"), done.stdout + done.stderr
    assert float(elapsed) < 5.0 and wall < 5.0, (elapsed, wall)
    assert LINE in message and len(done.stdout.splitlines()) == 2


def test_local_folders_are_checked_before_loading(tmp_path: Path) -> None:
    with pytest.raises(RagmeterError, match="no such folder"):
        sem.load_cross_encoder(tmp_path / "missing")
    with pytest.raises(RagmeterError, match="no such folder"):
        sem.load_cross_encoder("./models/missing-reranker")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RagmeterError, match=r"lacks config\.json, model\.safetensors or pytorch_model\.bin"):
        sem.load_cross_encoder(empty)
    with pytest.raises(RagmeterError, match=r"lacks config\.json"):
        sem.load_embedder(empty)


def test_a_cached_hub_name_loads_without_the_network(tmp_path: Path, closed_port: int) -> None:
    """A hub-cache layout (models--org--name/snapshots/REV + refs/main) holding a tiny cross-encoder,
    loaded by name in a fresh process whose hub endpoint refuses connections."""
    from test_cross_encoder import _build

    rev = "0" * 40
    repo = tmp_path / "hub" / "models--ragmeter-tests--tiny-ce"
    _build(repo / "snapshots" / rev, num_labels=1)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(rev)
    code = (
        "import ragmeter.semantic as s\n"
        "m = s.load_cross_encoder('ragmeter-tests/tiny-ce')\n"
        "print('labels', m.num_labels)\n"
        "print(s.cross_encoder_similarity_batch(['paris'], ['paris tower'], model='ragmeter-tests/tiny-ce')[0].value)\n"
    )
    env = {
        **os.environ,
        "HF_HUB_CACHE": str(tmp_path / "hub"),
        "HF_ENDPOINT": f"http://127.0.0.1:{closed_port}",
    }
    env.pop("HF_HUB_OFFLINE", None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert lines[0] == "labels 1" and 0.0 <= float(lines[1]) <= 1.0
