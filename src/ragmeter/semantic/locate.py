"""Where a sentence-transformers model comes from, decided before loading it, so that a missing model
fails in a second with one line instead of a minute of hub retries.

A name is a local folder, or a Hugging Face hub name ("org/name"). A hub name already in the local
Hugging Face cache loads from there without touching the network; one that is not is downloaded only
when the hub answers (HF_HUB_OFFLINE set, or no answer within a few seconds, means it is not)."""

from __future__ import annotations

import os
import threading
import urllib.error
import urllib.request
from pathlib import Path

from ragmeter.errors import RagmeterError

__all__ = ["HUB_PROBE_TIMEOUT_S", "WEIGHT_FILES", "check_local_model", "hub_reachable", "locate_model"]

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
HUB_PROBE_TIMEOUT_S = 3.0
_TRUE = {"1", "true", "yes", "on"}
_FOLDER = "a folder with config.json and model.safetensors (or pytorch_model.bin)"


def _looks_like_path(name: str) -> bool:
    return name.startswith(("/", ".", "~")) or name.count("/") > 1 or "\\" in name


def _check_folder(path: Path, what: str) -> str:
    if not path.is_dir():
        raise RagmeterError(f"{what} {str(path)!r}: no such folder; pass {_FOLDER}")
    missing = [] if (path / "config.json").is_file() else ["config.json"]
    if not any((path / f).is_file() for f in WEIGHT_FILES):
        missing.append(" or ".join(WEIGHT_FILES))
    if missing:
        raise RagmeterError(f"{what} {str(path)!r} lacks {', '.join(missing)}; pass {_FOLDER}")
    return str(path)


def _in_hf_cache(name: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    try:
        return isinstance(try_to_load_from_cache(name, "config.json"), str)
    except Exception:  # a name the hub library rejects (bad repo id) is simply not cached
        return False


def _probe(url: str, timeout: float, answer: list[bool]) -> None:
    request = urllib.request.Request(url, method="HEAD")
    try:
        with urllib.request.urlopen(request, timeout=timeout):
            answer.append(True)
    except urllib.error.HTTPError:
        answer.append(True)
    except (OSError, ValueError):
        answer.append(False)


def hub_reachable(timeout: float = HUB_PROBE_TIMEOUT_S) -> bool:
    """False when HF_HUB_OFFLINE is set or the hub endpoint gives no HTTP answer within `timeout`
    (proxies from the environment are honoured). Any HTTP status, even an error, means reachable.
    The probe runs in a daemon thread: a name lookup that hangs is not covered by urlopen's timeout."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE:
        return False
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    answer: list[bool] = []
    probe = threading.Thread(target=_probe, args=(f"{endpoint}/api/models", timeout, answer), daemon=True)
    probe.start()
    probe.join(timeout)
    return bool(answer and answer[0])


def check_local_model(model: str | Path, *, what: str) -> None:
    """A model given as a folder (a path, or a name that exists on disk) has its files; a hub name is left
    to `locate_model`. Cheap and offline: run before anything is stored."""
    name = str(model)
    path = Path(name).expanduser()
    if isinstance(model, Path) or path.exists() or _looks_like_path(name):
        _check_folder(path, what)


def locate_model(model: str | Path, *, what: str) -> tuple[str, bool]:
    """(name or path to load, local_files_only). Raises one-line RagmeterError when the model is not
    on this machine and cannot be downloaded, saying how to point at local weights."""
    name = str(model)
    path = Path(name).expanduser()
    if isinstance(model, Path) or path.exists() or _looks_like_path(name):
        return _check_folder(path, what), True
    if _in_hf_cache(name):
        return name, True
    if not hub_reachable():
        raise RagmeterError(
            f"{what} {name!r} is not a local folder nor in the Hugging Face cache, and the hub is not "
            f"reachable (offline): download it where there is network and pass the path of {_FOLDER} instead"
        )
    return name, False
