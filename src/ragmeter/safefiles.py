"""Files the CLI reads and writes: an output path is checked before a run starts and written atomically,
without a `.tmp` left over; an input file is read (gunzipped if need be) with errors that name it.

A leaf like safety.py: imports nothing of ragmeter but errors.py."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

from ragmeter.errors import InputError

# ---------------------------------------------------------------------------------------------- paths


def check_output_path(path: str | Path, *, source: str, create: bool = False) -> Path:
    """Fail now, naming `source` (the flag), if `path` cannot be written as a file: it is a folder, a part
    of its folder is a file, or the nearest existing folder is not writable. Changes nothing on disk
    unless `create` (then the missing folders are made)."""
    p = Path(path).expanduser()
    if p.is_dir():
        raise InputError(f"{p} is a folder: give a file name", source=source)
    existing = p.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(
            f"cannot write {p}: a folder is needed at {existing}, and it is a file", source=source
        )
    if p.exists() and not os.access(p, os.W_OK):
        raise InputError(f"cannot write to {p}: permission denied", source=source)
    _probe(existing, p, source)
    if create:
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(
                f"cannot write {p}: cannot create {p.parent}: {exc.strerror}", source=source
            ) from None
    return p


def _probe(folder: Path, target: Path, source: str) -> None:
    """Make and remove a scratch entry in `folder`: the only check that also holds for root, read-only
    mounts and pseudo file systems (/proc), where permission bits say nothing."""
    import tempfile

    try:
        if folder == target.parent:
            fd, name = tempfile.mkstemp(prefix=".ragmeter-probe-", dir=folder)
            os.close(fd)
            os.unlink(name)
        else:
            os.rmdir(tempfile.mkdtemp(prefix=".ragmeter-probe-", dir=folder))
    except OSError as exc:
        why = (
            f"cannot write in {folder}"
            if folder == target.parent
            else f"{target.parent} does not exist and cannot be made under {folder}"
        )
        raise InputError(f"cannot write {target}: {why}: {exc.strerror}", source=source) from None


def write_text_atomic(path: str | Path, text: str, *, source: str | None = None) -> Path:
    """Write `text` to `path` through a temporary file beside it, replaced into place; an OS error is an
    InputError naming `source` (or the path), and the temporary file never stays behind."""
    p = check_output_path(path, source=source or str(path), create=True)
    tmp = p.with_name(p.name + f".{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(p)
    except OSError as exc:
        raise InputError(f"cannot write {p}: {exc.strerror}", source=source or str(p)) from None
    finally:
        tmp.unlink(missing_ok=True)
    return p


def describe_file_error(exc: OSError | UnicodeError) -> str:
    """One line for a file problem that reached the CLI without being turned into an InputError."""
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text (byte {exc.start}): {exc.reason}"
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror or exc}"
    return str(exc)


def read_bytes(path: str | Path) -> bytes:
    """Read a file, transparently gunzipping it; missing files are an InputError."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", source=str(path)) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a file", source=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=str(path)) from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise InputError(f"corrupt gzip data: {exc}", source=str(path)) from None
    return data
